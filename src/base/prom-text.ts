/**
 * A strict parser of the Prometheus text exposition format, version 0.0.4 (what client_golang's promhttp and
 * prom-client serve by default): https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format.
 * Lines are `# HELP name text`, `# TYPE name type`, other `#` comments, blank lines, and samples
 * `name{label="value",...} value [timestamp_ms]`. Label values escape `\\`, `\"` and `\n`; values are Go floats
 * (`1.073741824e+09`, `NaN`, `+Inf`, `-Inf`, read as Prometheus reads them). Anything else is refused with its line
 * number: a proxy's error page or a half-read body must not become numbers. Pure.
 */

export interface PromSample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
  /** Milliseconds since the epoch, when the exporter gave one (virt-handler's migration metrics do). */
  readonly timestampMs?: number;
}

export interface PromText {
  readonly samples: readonly PromSample[];
  /** `# TYPE` per metric family: counter, gauge, histogram, summary, untyped. */
  readonly types: ReadonlyMap<string, string>;
}

const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);
const FLOAT = /^[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/**
 * A sample value as Prometheus reads it (Go's strconv.ParseFloat): decimal floats, and NaN and Inf/Infinity in any
 * case: prom-client writes a NaN gauge as `Nan` (the gateway runtime's event-loop lag before its first measurement).
 */
function parseValue(s: string): number | undefined {
  if (/^nan$/i.test(s)) return NaN;
  const inf = /^([+-]?)inf(inity)?$/i.exec(s);
  if (inf) return inf[1] === '-' ? -Infinity : Infinity;
  return FLOAT.test(s) ? Number(s) : undefined;
}

/** The labels of `{...}` starting at `s[0] === '{'`: the labels and the rest of the line after `}`. */
function parseLabels(s: string, fail: (why: string) => never): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1;
  const skipSpace = () => { while (s[i] === ' ' || s[i] === '\t') i++; };
  for (;;) {
    skipSpace();
    if (s[i] === '}') return { labels, rest: s.slice(i + 1) };
    const name = LABEL.exec(s.slice(i))?.[0];
    if (!name) fail(`a label name expected at column ${i + 1}`);
    i += name.length;
    skipSpace();
    if (s[i] !== '=' || s[i + 1] !== '"') fail(`label ${name}: '="' expected`);
    i += 2;
    let v = '';
    for (; s[i] !== '"'; i++) {
      if (i >= s.length) fail(`label ${name}: the value is not closed`);
      if (s[i] !== '\\') { v += s[i]; continue; }
      const e = s[++i];
      if (e === 'n') v += '\n'; else if (e === '\\' || e === '"') v += e; else fail(`label ${name}: unknown escape \\${e ?? ''}`);
    }
    if (name in labels) fail(`label ${name} given twice`);
    labels[name] = v;
    i++;
    skipSpace();
    if (s[i] === ',') i++; else if (s[i] !== '}') fail(`label ${name}: ',' or '}' expected`);
  }
}

function parseComment(line: string, types: Map<string, string>, fail: (why: string) => never): void {
  const m = /^#\s+(HELP|TYPE)\s+(\S+)(?:\s+(.*))?$/.exec(line);
  if (!m) return; // any other comment
  if (!NAME.test(m[2]) || NAME.exec(m[2])![0] !== m[2]) fail(`${m[1]}: bad metric name ${m[2]}`);
  if (m[1] === 'HELP') return;
  const t = (m[3] ?? '').trim();
  if (!TYPES.has(t)) fail(`TYPE ${m[2]}: unknown type '${t}'`);
  if (types.has(m[2])) fail(`TYPE ${m[2]} given twice`);
  types.set(m[2], t);
}

function parseSample(line: string, fail: (why: string) => never): PromSample {
  const name = NAME.exec(line)?.[0];
  if (!name) fail('a metric name expected');
  let rest = line.slice(name.length);
  let labels: Record<string, string> = {};
  if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest, fail));
  const fields = rest.trim().split(/[ \t]+/);
  if (!/^[ \t]/.test(rest) || fields.length < 1 || fields.length > 2) fail(`${name}: 'value [timestamp]' expected after the name and labels`);
  const value = parseValue(fields[0]);
  if (value === undefined) fail(`${name}: '${fields[0]}' is not a number`);
  if (fields.length === 1) return { name, labels, value };
  if (!/^-?\d+$/.test(fields[1])) fail(`${name}: timestamp '${fields[1]}' is not integer milliseconds`);
  return { name, labels, value, timestampMs: Number(fields[1]) };
}

/** Parse one exposition; throws `line N: why` on the first line that is not the format. */
export function parsePromText(text: string): PromText {
  const samples: PromSample[] = [];
  const types = new Map<string, string>();
  const lines = text.split('\n');
  lines.forEach((raw, n) => {
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    const fail = (why: string): never => { throw new Error(`line ${n + 1}: ${why}`); };
    if (line.trim() === '') return;
    if (line.startsWith('#')) parseComment(line, types, fail);
    else samples.push(parseSample(line, fail));
  });
  return { samples, types };
}

/** The samples of `name` whose labels include every pair of `match`. */
export function samplesOf(t: PromText, name: string, match: Readonly<Record<string, string>> = {}): PromSample[] {
  return t.samples.filter((s) => s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v));
}
