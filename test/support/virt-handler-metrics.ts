/**
 * virt-handler's migration metrics as the pinned KubeVirt module declares them, and their text as virt-handler serves
 * it, for the model endpoint test/support/virt-handler-model.js.
 *
 * The declarations are read at test time from kubevirt.io/kubevirt v1.8.4 (pinned by real/crd-sources/go.mod, fetched
 * into the module cache by test/support/real-crds.ts `moduleDir`, whose answer the caller passes):
 * https://github.com/kubevirt/kubevirt/blob/v1.8.4/pkg/monitoring/metrics/virt-handler/migrationdomainstats/migrationstats_collector.go
 * (each `operatormetrics.NewCounter/NewGauge(operatormetrics.MetricOpts{Name, Help})`, and the label keys of the
 * `vmiLabels` map of `newCR`). Each sample carries its result's timestamp (operatormetrics wraps it with
 * prometheus.NewMetricWithTimestamp). The text is client_golang's (expfmt, text format 0.0.4): `# HELP`, `# TYPE`,
 * labels sorted by name, values as Go's strconv.FormatFloat(v, 'g', -1, 64), a millisecond timestamp.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface DeclaredMetric { readonly variable: string; readonly name: string; readonly help: string; readonly type: 'counter' | 'gauge' }

const COLLECTOR = 'pkg/monitoring/metrics/virt-handler/migrationdomainstats/migrationstats_collector.go';

/** The metrics and label keys migrationstats_collector.go declares, in the module at `kubevirtModule` (real-crds' `moduleDir`). */
export function declaredMigrationMetrics(kubevirtModule: string): { metrics: DeclaredMetric[]; labels: string[] } {
  const src = fs.readFileSync(path.join(kubevirtModule, COLLECTOR), 'utf8');
  const re = /(\w+)\s*=\s*operatormetrics\.New(Counter|Gauge)\(\s*operatormetrics\.MetricOpts\{\s*Name:\s*"([^"]+)",\s*Help:\s*"([^"]*)"/g;
  const metrics = [...src.matchAll(re)].map((m) => ({ variable: m[1], type: m[2].toLowerCase() as 'counter' | 'gauge', name: m[3], help: m[4] }));
  const map = /vmiLabels\s*:=\s*map\[string\]string\{([^}]*)\}/.exec(src)?.[1];
  if (metrics.length === 0 || !map) throw new Error(`${COLLECTOR} of kubevirt.io/kubevirt: no metric declarations or vmiLabels found (the file changed)`);
  return { metrics, labels: [...map.matchAll(/"(\w+)"\s*:/g)].map((m) => m[1]) };
}

/**
 * Go's strconv.FormatFloat(v, 'g', -1, 64), as expfmt writes a value: the shortest digits, in %e form when the
 * decimal exponent is below -4 or at least 6 (formatDigits: "if precision was the shortest possible, use precision 6"),
 * the exponent with a sign and at least two digits (1.073741824e+09).
 */
export function goFloat(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (!Number.isFinite(v)) return v > 0 ? '+Inf' : '-Inf';
  if (v === 0) return '0';
  const [m, e] = v.toExponential().split('e');
  const exp = Number(e);
  if (exp < -4 || exp >= 6) return `${m}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`;
  return String(v);
}

/** One libvirt result of one VMI: its labels, its time, a value per metric name. */
export interface VmiSample {
  readonly namespace: string; readonly name: string; readonly node: string; readonly atMs: number; readonly values: Readonly<Record<string, number>>;
}

/** The exposition of these samples (metric name -> value per VMI), families in declaration order, as client_golang writes them. */
export function migrationMetricsText(declared: ReturnType<typeof declaredMigrationMetrics>, samples: readonly VmiSample[]): string {
  const esc = (s: string) => s.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
  return declared.metrics.map((m) => {
    const lines = samples.filter((s) => s.values[m.name] !== undefined).map((s) => {
      const of = s as unknown as Record<string, string>;
      const labels = [...declared.labels].sort().map((k) => `${k}="${esc(String(of[k]))}"`).join(',');
      return `${m.name}{${labels}} ${goFloat(s.values[m.name])} ${s.atMs}\n`;
    });
    return lines.length ? `# HELP ${m.name} ${m.help}\n# TYPE ${m.name} ${m.type}\n${lines.join('')}` : '';
  }).join('');
}
