/**
 * The gateway's alerts (issue 28): a PrometheusRule beside the ServiceMonitor, valid against the vendored
 * prometheus-operator CRD, accepted by `promtool check rules`, and every expression evaluated by
 * `promtool test rules` on recorded series: each alert fires on the failure it names and stays quiet on
 * a healthy mesh. (Annotations are dropped for `promtool test rules`, which compares them too; their
 * templates are checked by `promtool check rules`.)
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as yaml from 'yaml';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { Registry } from 'prom-client';
import { GATEWAY_ALERTS, TRUST_AGENT_ALERTS, gatewayAlertGroups, promDuration } from '../src/gateway/alerts';
import { TrustHub } from '../proxy/lib/trust/hub';
import { baseFleet } from './support/fleets';
import { hasCommand } from './support/netns';
import { describeSchema, validateObject } from './support/schemas';

const rulesOf = (overrides: Parameters<typeof baseFleet>[0]) => {
  const r = synthesizeFleet(baseFleet(overrides));
  return [...r.objects.values()].flat().filter((o) => o.kind === 'PrometheusRule');
};

describe('PrometheusRule beside the ServiceMonitor', () => {
  test('on by default with the ServiceMonitor, one per gateway cluster, every alert of docs/alerts.md', () => {
    const rules = rulesOf({ gateway: { serviceMonitor: true } });
    expect(rules.map((r) => r.metadata.namespace)).toEqual(['migration-mesh', 'migration-mesh']);
    const names = rules[0].spec.groups.flatMap((g: any) => g.rules.map((x: any) => x.alert));
    expect(names).toEqual([...GATEWAY_ALERTS]);
    const doc = fs.readFileSync(path.join(__dirname, '..', 'docs', 'alerts.md'), 'utf8');
    for (const n of GATEWAY_ALERTS) expect({ n, documented: doc.includes(`### ${n}`) }).toEqual({ n, documented: true });
  });

  test('none without a ServiceMonitor; alerts: false opts out; alerts: true without a ServiceMonitor is honoured', () => {
    expect(rulesOf({})).toEqual([]);
    expect(rulesOf({ gateway: { serviceMonitor: true, alerts: false } })).toEqual([]);
    expect(rulesOf({ gateway: { alerts: true } })).toHaveLength(2);
  });

  test('no VIP alert with one replica, no trust alerts without the exchange', () => {
    const [r] = rulesOf({ gateway: { serviceMonitor: true, replicas: 1 }, trust: { enabled: false } });
    expect(r.spec.groups.flatMap((g: any) => g.rules.map((x: any) => x.alert))).toEqual(['MigrationMeshGatewayDown', 'MigrationMeshTunnelRefusalsRising', 'MigrationMeshTunnelResetsRising']);
  });

  test('validates against the vendored prometheus-operator CRD (which rejects a broken rule)', () => {
    expect(describeSchema('monitoring.coreos.com/v1', 'PrometheusRule')).toMatchObject({ flavour: 'crd', origin: expect.stringMatching(/monitoring\.coreos\.com_prometheusrules\.yaml$/) });
    const [r] = rulesOf({ gateway: { serviceMonitor: true } });
    expect(validateObject(r)).toEqual([]);
    const broken = JSON.parse(JSON.stringify(r));
    broken.spec.groups[0].rules[0].for = '5 minutes';
    delete broken.spec.groups[1].rules[0].expr;
    expect(validateObject(broken).join('\n')).toMatch(/for.*pattern[\s\S]*expr/);
  });

  test("a trust agent's rule: its own job, MigrationMeshTrustAgentDown and the trust alerts, each documented, on metrics the runtime serves", () => {
    const r = synthesizeFleet(baseFleet({ datapath: 'direct', gateway: { serviceMonitor: true } }));
    const rules = [...r.objects.values()].flat().filter((o) => o.kind === 'PrometheusRule');
    expect(rules.map((x) => x.metadata.name)).toEqual(['migration-mesh-trust', 'migration-mesh-trust']);
    const alerts = rules[0].spec.groups.flatMap((g: any) => g.rules);
    expect(alerts.map((x: any) => x.alert)).toEqual([...TRUST_AGENT_ALERTS]);
    const doc = fs.readFileSync(path.join(__dirname, '..', 'docs', 'alerts.md'), 'utf8');
    for (const n of TRUST_AGENT_ALERTS) expect({ n, documented: doc.includes(`### ${n}`) }).toEqual({ n, documented: true });
    // every selector names the job of the trust agent's metrics Service, never the gateway's
    const svc = r.objects.get('a')!.find((o) => o.kind === 'Service')!;
    for (const a of alerts) expect(a.expr).toContain(`job="${svc.metadata.name}"`);
    // the mm_trust_* series the rules read are registered by the runtime's trust hub (served on the admin port's /metrics)
    const registry = new Registry();
    new TrustHub({ config: () => ({ cluster: 'a' }) as any, tlsFiles: () => undefined, log: { child: () => ({}) } as any, registry });
    const served = new Set(registry.getMetricsAsArray().map((m) => m.name));
    const read = alerts.flatMap((a: any) => [...a.expr.matchAll(/\b(mm_\w+)\{/g)].map((m: RegExpMatchArray) => m[1]));
    expect(read.length).toBeGreaterThan(0);
    expect(read.filter((n: string) => !served.has(n))).toEqual([]);
    expect(validateObject(rules[0])).toEqual([]);
  });

  test('promDuration', () => {
    expect([0, 59, 60, 900, 3661].map(promDuration)).toEqual(['0s', '59s', '1m', '15m', '1h1m1s']);
  });
});

const skip = hasCommand('promtool') ? undefined : 'promtool missing (Debian package prometheus: node scripts/ensure-system-deps.js as root)';
if (skip) console.warn(`[gateway-alerts] SKIPPED promtool checks: ${skip}`);
(skip ? describe.skip : describe)('promtool', () => {
  const groups = gatewayAlertGroups({ cluster: 'a', namespace: 'migration-mesh', job: 'migration-mesh-gateway-metrics', vip: '10.200.0.9', trust: { repushIntervalSeconds: 300 } });
  let dir: string;
  beforeAll(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-alerts-')); });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const promtool = (...args: string[]) => spawnSync('promtool', args, { cwd: dir, encoding: 'utf8' });

  test('check rules accepts the emitted groups (and refuses a broken expression)', () => {
    const [r] = rulesOf({ gateway: { serviceMonitor: true } });
    fs.writeFileSync(path.join(dir, 'emitted.yaml'), yaml.stringify({ groups: r.spec.groups }));
    const ok = promtool('check', 'rules', 'emitted.yaml');
    expect({ status: ok.status, out: ok.stdout + ok.stderr }).toMatchObject({ status: 0 });
    expect(ok.stdout).toMatch(/SUCCESS: 7 rules found/);
    const bad = JSON.parse(JSON.stringify(r.spec.groups));
    bad[0].rules[0].expr = 'absent(up{job="x"} == )';
    fs.writeFileSync(path.join(dir, 'bad.yaml'), yaml.stringify({ groups: bad }));
    expect(promtool('check', 'rules', 'bad.yaml').status).not.toBe(0);
  });

  const sel = (extra: string) => `{job="migration-mesh-gateway-metrics",namespace="migration-mesh",${extra}}`;
  const L = { mesh_cluster: 'a' };
  const ns = { namespace: 'migration-mesh' };
  /** One promtool test per alert: recorded series, when it must not fire yet, when it must. */
  const cases: { name: string; series: [string, string][]; quiet: string; firing: string; labels: Record<string, string>[] }[] = [
    {
      name: 'MigrationMeshGatewayDown', quiet: '12m', firing: '20m', labels: [{ severity: 'critical', ...L }],
      series: [['up' + sel('pod="gw-0"'), '1x9 0x20'], ['up' + sel('pod="gw-1"'), '1x9 _x20'], ['up{job="other",namespace="migration-mesh"}', '1x30']],
    },
    {
      name: 'MigrationMeshGatewayVipUnheld', quiet: '6m', firing: '12m', labels: [{ severity: 'critical', ...L }],
      series: [['mm_proxy_address_held' + sel('pod="gw-0",address="10.200.0.9"'), '1x5 0x15'], ['mm_proxy_address_held' + sel('pod="gw-1",address="10.200.0.9"'), '0x20'],
        ['mm_proxy_address_held' + sel('pod="gw-0",address="10.200.0.1"'), '1x20']],
    },
    {
      name: 'MigrationMeshTunnelRefusalsRising', quiet: '10m', firing: '25m',
      labels: [{ severity: 'warning', ...L, ...ns, reason: 'destination_not_allowed' }, { severity: 'warning', ...L, ...ns, reason: 'tls_handshake' }],
      series: [['mm_proxy_refusals_total' + sel('pod="gw-0",reason="destination_not_allowed",side="terminus"'), '0x10 0+2x20'],
        ['mm_proxy_refusals_total' + sel('pod="gw-0",reason="peer_limit",side="terminus"'), '0+0.1x30'],
        ['mm_proxy_refusals_total' + sel('pod="gw-1",reason="draining",side="terminus"'), '0+5x30'], // a rollout: not an alert
        ['mm_proxy_tls_handshake_failures_total' + sel('pod="gw-1",side="terminus"'), '0x10 0+3x20']],
    },
    {
      name: 'MigrationMeshTunnelResetsRising', quiet: '5m', firing: '20m', labels: [{ severity: 'warning', ...L, ...ns, peer: 'b' }],
      series: [['mm_proxy_tunnel_resets_total' + sel('pod="gw-0",peer="b",side="origin"'), '0+1x30'], ['mm_proxy_tunnel_resets_total' + sel('pod="gw-0",peer="c",side="origin"'), '0+0.2x30']],
    },
    {
      name: 'MigrationMeshPeerCaUntrusted', quiet: '14m', firing: '20m', labels: [{ severity: 'critical', ...L, ...ns, peer: 'b' }],
      series: [['mm_trust_peer_ca_untrusted_seconds' + sel('pod="gw-0",peer="b"'), '0+60x30'], ['mm_trust_peer_ca_untrusted_seconds' + sel('pod="gw-1",peer="b"'), '0+60x30'],
        ['mm_trust_peer_ca_untrusted_seconds' + sel('pod="gw-0",peer="c"'), '0x30']],
    },
    {
      name: 'MigrationMeshPeerCaExpiring', quiet: '8m', firing: '15m', labels: [{ severity: 'warning', ...L, ...ns, peer: 'b' }],
      series: [['mm_trust_peer_ca_expiring' + sel('pod="gw-0",peer="b"'), '0x5 1x20'], ['mm_trust_peer_ca_expiring' + sel('pod="gw-0",peer="c"'), '0x25']],
    },
    {
      name: 'MigrationMeshTrustWriteFailing', quiet: '12m', firing: '20m', labels: [{ severity: 'critical', ...L, ...ns, pod: 'gw-0' }],
      series: [['mm_trust_write_failures_total' + sel('pod="gw-0"'), '0x5 1+1x30'], ['mm_trust_write_failures_total' + sel('pod="gw-1"'), '0x35']],
    },
  ];

  test('test rules: every alert fires on its failure and not before (recorded series)', () => {
    expect(cases.map((c) => c.name)).toEqual([...GATEWAY_ALERTS]);
    const bare = groups.map((g) => ({ ...g, rules: g.rules.map(({ annotations: _a, ...r }) => r) }));
    fs.writeFileSync(path.join(dir, 'rules.yaml'), yaml.stringify({ groups: bare }));
    const tests = cases.map((c) => ({
      interval: '1m',
      input_series: c.series.map(([series, values]) => ({ series, values })),
      alert_rule_test: [
        { eval_time: c.quiet, alertname: c.name, exp_alerts: [] },
        { eval_time: c.firing, alertname: c.name, exp_alerts: c.labels.map((l) => ({ exp_labels: l })) },
      ],
    }));
    // a healthy gateway pair: every alert quiet
    const healthy = [
      ['up' + sel('pod="gw-0"'), '1x30'], ['up' + sel('pod="gw-1"'), '1x30'],
      ['mm_proxy_address_held' + sel('pod="gw-0",address="10.200.0.9"'), '1x30'], ['mm_proxy_address_held' + sel('pod="gw-1",address="10.200.0.9"'), '0x30'],
      ['mm_proxy_refusals_total' + sel('pod="gw-0",reason="destination_not_allowed",side="terminus"'), '0+0.1x30'],
      ['mm_proxy_tunnel_resets_total' + sel('pod="gw-0",peer="b",side="origin"'), '0+0.1x30'],
      ['mm_trust_peer_ca_untrusted_seconds' + sel('pod="gw-0",peer="b"'), '0x30'],
      ['mm_trust_peer_ca_expiring' + sel('pod="gw-0",peer="b"'), '0x30'],
      ['mm_trust_write_failures_total' + sel('pod="gw-0"'), '0x30'],
    ];
    tests.push({
      interval: '1m',
      input_series: healthy.map(([series, values]) => ({ series, values })),
      alert_rule_test: GATEWAY_ALERTS.map((a) => ({ eval_time: '30m', alertname: a, exp_alerts: [] })),
    });
    fs.writeFileSync(path.join(dir, 'tests.yaml'), yaml.stringify({ rule_files: ['rules.yaml'], evaluation_interval: '1m', tests }));
    const r = promtool('test', 'rules', 'tests.yaml');
    expect({ status: r.status, out: r.stdout + r.stderr }).toEqual({ status: 0, out: expect.stringMatching(/SUCCESS/) });
  });

  test("a trust agent's rules: check rules accepts them; its Down alert and a trust alert fire on its own job's series", () => {
    const job = 'migration-mesh-trust-metrics';
    const agent = gatewayAlertGroups({ cluster: 'd', namespace: 'migration-mesh', job, role: 'trust-agent', trust: { repushIntervalSeconds: 300 } });
    fs.writeFileSync(path.join(dir, 'agent.yaml'), yaml.stringify({ groups: agent }));
    const ok = promtool('check', 'rules', 'agent.yaml');
    expect({ status: ok.status, out: ok.stdout + ok.stderr }).toMatchObject({ status: 0, out: expect.stringMatching(/SUCCESS: 4 rules found/) });
    fs.writeFileSync(path.join(dir, 'agent-rules.yaml'), yaml.stringify({ groups: agent.map((g) => ({ ...g, rules: g.rules.map(({ annotations: _a, ...r }) => r) })) }));
    const at = (extra: string) => `{job="${job}",namespace="migration-mesh",${extra}}`;
    const D = { mesh_cluster: 'd' };
    const t = (series: [string, string][], checks: { eval_time: string; alertname: string; exp_alerts: { exp_labels: Record<string, string> }[] }[]) => ({
      interval: '1m', input_series: series.map(([x, values]) => ({ series: x, values })), alert_rule_test: checks,
    });
    const tests = [
      // both replicas stop answering at minute 10; a gateway's job answering does not count
      t([['up' + at('pod="trust-0"'), '1x9 0x20'], ['up' + at('pod="trust-1"'), '1x9 _x20'], ['up{job="migration-mesh-gateway-metrics",namespace="migration-mesh"}', '1x30']], [
        { eval_time: '15m', alertname: 'MigrationMeshTrustAgentDown', exp_alerts: [] },
        { eval_time: '25m', alertname: 'MigrationMeshTrustAgentDown', exp_alerts: [{ exp_labels: { severity: 'warning', ...D } }] },
      ]),
      t([['mm_trust_write_failures_total' + at('pod="trust-0"'), '0x5 1+1x30'], ['mm_trust_write_failures_total' + at('pod="trust-1"'), '0x35']], [
        { eval_time: '12m', alertname: 'MigrationMeshTrustWriteFailing', exp_alerts: [] },
        { eval_time: '20m', alertname: 'MigrationMeshTrustWriteFailing', exp_alerts: [{ exp_labels: { severity: 'critical', ...D, namespace: 'migration-mesh', pod: 'trust-0' } }] },
      ]),
      // healthy: quiet
      t([['up' + at('pod="trust-0"'), '1x30'], ['mm_trust_peer_ca_untrusted_seconds' + at('pod="trust-0",peer="a"'), '0x30'], ['mm_trust_peer_ca_expiring' + at('pod="trust-0",peer="a"'), '0x30'],
        ['mm_trust_write_failures_total' + at('pod="trust-0"'), '0x30']], TRUST_AGENT_ALERTS.map((a) => ({ eval_time: '30m', alertname: a, exp_alerts: [] }))),
    ];
    fs.writeFileSync(path.join(dir, 'agent-tests.yaml'), yaml.stringify({ rule_files: ['agent-rules.yaml'], evaluation_interval: '1m', tests }));
    const r = promtool('test', 'rules', 'agent-tests.yaml');
    expect({ status: r.status, out: r.stdout + r.stderr }).toEqual({ status: 0, out: expect.stringMatching(/SUCCESS/) });
  });

  test('test rules fails when an alert would not fire (the harness can fail)', () => {
    const wrong = { rule_files: ['rules.yaml'], evaluation_interval: '1m', tests: [{ interval: '1m', input_series: [{ series: 'up' + sel('pod="gw-0"'), values: '1x30' }], alert_rule_test: [{ eval_time: '20m', alertname: 'MigrationMeshGatewayDown', exp_alerts: [{ exp_labels: { severity: 'critical', ...L } }] }] }] };
    fs.writeFileSync(path.join(dir, 'wrong.yaml'), yaml.stringify(wrong));
    expect(promtool('test', 'rules', 'wrong.yaml').status).not.toBe(0);
  });
});
