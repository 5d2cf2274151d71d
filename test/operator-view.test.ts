/**
 * `spec.operatorView` (issue 28): the read-only ClusterRole `migration-mesh status` needs and the
 * gateway's Grafana dashboard, both opt-in. The dashboard's every expression names only metrics a
 * running gateway really exports (its /metrics), and promtool parses each; the ClusterRole covers every
 * kind of the cluster's output and the runtime reads, and both validate against the Kubernetes schemas.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import * as yaml from 'yaml';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { startGateway, type GatewayHandle } from '../proxy/src/gateway';
import { configFor } from '../proxy/src/testkit/gateways';
import { silent } from '../proxy/src/testkit/helpers';
import { gatewayDashboard } from '../src/gateway/dashboard';
import { pluralOf } from '../src/report/status-role';
import { baseFleet, mutate, problemsOf } from './support/fleets';
import { hasCommand } from './support/netns';
import { validateObject } from './support/schemas';

const objectsOf = (overrides: Parameters<typeof baseFleet>[0]) => synthesizeFleet(baseFleet(overrides)).objects;
const dashboardOf = (o: any) => JSON.parse(o.data['gateway.json']);
const exprs = (d: any): string[] => d.panels.flatMap((p: any) => p.targets.map((t: any) => t.expr));

describe('operatorView: opt-in objects', () => {
  test('off by default: no ClusterRole, no dashboard', () => {
    const all = [...objectsOf({}).values()].flat();
    expect(all.filter((o) => o.kind === 'ClusterRole' || o.metadata?.name === 'migration-mesh-gateway-dashboard')).toEqual([]);
  });

  test('a refused operatorView field is reported with the plan\'s problems (planning never reads it)', () => {
    const ps = problemsOf(mutate(baseFleet(), (d) => {
      d.spec.operatorView = { dashboard: 'yes', dashboardNamespace: 'Monitoring' };
      d.spec.crossClusterNetwork.addresses.pool = ['192.168.50.10-192.168.50.12'];
    }));
    expect(ps.map((p) => [p.code, p.path]).sort()).toEqual([
      ['pool-too-small', 'spec.crossClusterNetwork.addresses.pool'], ['schema-invalid', 'spec.operatorView.dashboard'], ['schema-invalid', 'spec.operatorView.dashboardNamespace'],
    ]);
  });

  test('the ClusterRole: get on every kind of the cluster output, list pods and VMs, get pods/proxy; valid', () => {
    const objs = objectsOf({ operatorView: { statusClusterRole: true } });
    const a = objs.get('a')!;
    const role = a.find((o) => o.kind === 'ClusterRole');
    expect(role.metadata.name).toBe('migration-mesh-status');
    expect(validateObject(role)).toEqual([]);
    const can = (group: string, resource: string, verb: string) => role.rules
      .some((r: any) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes(verb));
    for (const o of a) {
      const group = o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : '';
      expect({ kind: o.kind, get: can(group, pluralOf(o.kind), 'get') }).toEqual({ kind: o.kind, get: true });
    }
    expect(can('', 'pods', 'list') && can('', 'pods/proxy', 'get') && can('kubevirt.io', 'virtualmachines', 'list') && can('storage.k8s.io', 'storageclasses', 'get')).toBe(true);
    expect(role.rules.flatMap((r: any) => r.verbs).filter((v: string) => !['get', 'list'].includes(v))).toEqual([]); // read-only
    expect(can('apps', 'deployments', 'get') && can('k8s.cni.cncf.io', 'network-attachment-definitions', 'get') && can('kubevirt.io', 'kubevirts', 'get')).toBe(true);
  });

  test('the dashboard: a ConfigMap for the Grafana sidecar per gateway cluster, with the panels the issue asks for; valid', () => {
    const objs = objectsOf({ operatorView: { dashboard: true, dashboardNamespace: 'monitoring' } });
    const cms = [...objs.values()].flat().filter((o) => o.metadata?.name === 'migration-mesh-gateway-dashboard');
    expect(cms.map((c) => [c.metadata.namespace, c.metadata.labels.grafana_dashboard])).toEqual([['monitoring', '1'], ['monitoring', '1']]);
    for (const c of cms) expect(validateObject(c)).toEqual([]);
    const d = dashboardOf(cms[0]);
    expect(d.uid).toBe('migration-mesh-a');
    expect(d.panels.map((p: any) => p.title)).toEqual([
      'Tunnels open per peer', 'Bytes per peer', 'Tunnel resets per peer', 'Refusals by reason', 'VIP holder (10.200.0.3)',
      'Peer CA untrusted for', 'Peer CA lifetime left', 'Since the last kubevirt-external-ca write',
    ]);
    expect(exprs(d).every((e) => e.includes('job="migration-mesh-gateway-metrics",namespace="migration-mesh"'))).toBe(true);
  });
});

describe('every dashboard expression against a running gateway', () => {
  let g: GatewayHandle;
  let dir: string;
  beforeAll(async () => {
    g = await startGateway(await configFor('east', 'west', 15443, 'plaintext', undefined, { ownAddresses: ['10.200.0.3'] }), { logger: silent });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-dash-'));
  });
  afterAll(async () => { await g.close(); fs.rmSync(dir, { recursive: true, force: true }); });

  const d = gatewayDashboard({ cluster: 'east', namespace: 'migration-mesh', job: 'migration-mesh-gateway-metrics', vip: '10.200.0.3', trust: true });

  test('names only metrics the gateway exports on /metrics', async () => {
    const body = await new Promise<string>((resolve, reject) => {
      http.get({ host: '127.0.0.1', port: g.addresses().admin.port, path: '/metrics' }, (res) => {
        let b = '';
        res.on('data', (c) => { b += c; });
        res.on('end', () => resolve(b));
      }).on('error', reject);
    });
    const exported = new Set([...body.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1]));
    const used = [...new Set(exprs(d).flatMap((e) => [...e.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)\{/g)].map((m) => m[1])))].sort();
    expect(used).toEqual([
      'mm_proxy_active_tunnels', 'mm_proxy_address_held', 'mm_proxy_refusals_total', 'mm_proxy_tls_handshake_failures_total', 'mm_proxy_tunnel_bytes_total',
      'mm_proxy_tunnel_resets_total', 'mm_trust_last_write_timestamp_seconds', 'mm_trust_peer_ca_not_after_seconds', 'mm_trust_peer_ca_untrusted_seconds',
    ]);
    expect(used.filter((m) => !exported.has(m))).toEqual([]);
    // the check can fail: a name the gateway does not export is caught
    expect(exported.has('mm_proxy_tunnels_open')).toBe(false);
  });

  (hasCommand('promtool') ? test : test.skip)('promtool parses every expression (as recording rules)', () => {
    const rules = exprs(d).map((expr, i) => ({ record: `mm:dashboard_${i}`, expr }));
    fs.writeFileSync(path.join(dir, 'dash.yaml'), yaml.stringify({ groups: [{ name: 'dashboard', rules }] }));
    const r = spawnSync('promtool', ['check', 'rules', 'dash.yaml'], { cwd: dir, encoding: 'utf8' });
    expect({ status: r.status, out: r.stdout + r.stderr }).toMatchObject({ status: 0 });
    expect(r.stdout).toContain(`SUCCESS: ${rules.length} rules found`);
  });
});
