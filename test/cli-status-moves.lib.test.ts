/**
 * `migration-mesh status` beyond drift and trust, against the contract fake API servers
 * (test/support/status-clusters.ts: real gateway runtimes behind the fake's pod proxy):
 * - the gateways' own view and the KubeVirt pods: a VIP no pod holds, a virt-handler off the migration
 *   network, a gateway pod whose admin the pod proxy cannot reach (503), a refusal as a pod's last error;
 * - `--moves`: each VM of the generated Forklift Plans, with a MAC conflict, a taken name, a ready one,
 *   then a missing target namespace and storage class.
 */
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import * as yaml from 'yaml';
import { execFileSync } from 'child_process';
import { generatedObjects } from '../cli/generated-objects';
import { makeCert } from '../proxy/src/testkit/ca-certs';
import { baseFleet, runCli } from './support/fleets';
import { FakeCluster, kubeconfig, linkGateways, runStatus, startCluster } from './support/status-clusters';

const H = 3600_000;
const ROOT = path.join(__dirname, '..');

const vm = (name: string, namespace: string, mac: string) => ({
  apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', metadata: { name, namespace },
  spec: { template: { spec: { domain: { devices: { interfaces: [{ name: 'default', masquerade: {}, macAddress: mac }] } } } } },
});
const ns = (name: string) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });

describe('migration-mesh status: gateway runtime, KubeVirt pods, --moves', () => {
  let dir: string;
  let file: string;
  const fakes: FakeCluster[] = [];
  const ca = { p: makeCert('kubevirt.io@p', Date.now() - H, Date.now() + 100 * H), q: makeCert('kubevirt.io@q', Date.now() - H, Date.now() + 100 * H) };
  const objs = (c: string) => generatedObjects(path.join(dir, 'dist', 'mv', c));
  beforeAll(() => {
    if (!fs.existsSync(path.join(ROOT, 'lib', 'cli', 'status-moves.js'))) execFileSync('npx', ['tsc', '-p', '.'], { cwd: ROOT, stdio: 'inherit' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-status-moves-'));
    file = path.join(dir, 'mv.fleet.yaml');
    fs.writeFileSync(file, yaml.stringify(baseFleet({
      clusters: [{ name: 'p', nodes: 3 }, { name: 'q', nodes: 3 }],
      forklift: {
        hub: { cluster: 'p', namespace: 'mtv' },
        providers: { q: { url: 'https://api.q.example:6443', secret: 'q-provider' } },
        networks: [{ name: 'vlan100', namespace: 'vms' }],
        storage: [{ source: 'ceph-rbd', storageClass: 'ceph-rbd' }],
        moves: [
          { vm: 'db1', namespace: 'vms', from: 'q', to: 'p', batch: 'w1' },
          { vm: 'web1', namespace: 'vms', from: 'q', to: 'p', batch: 'w1' },
          { vm: 'app1', namespace: 'vms', from: 'q', to: 'p', batch: 'w1' },
        ],
      },
    } as any, 'mv')));
    const r = runCli(['synth', file, '--out', path.join(dir, 'dist'), '--no-svg']);
    expect(r.code).toBe(0);
  });
  afterAll(async () => {
    for (const f of fakes) await f.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('VIP unheld, a handler off the migration network, an admin the pod proxy cannot reach, the last refusal', async () => {
    const p = await startCluster(objs('p'), ca.p, [ca.q]);
    const q = await startCluster(objs('q'), ca.q, [ca.p], { vipUnheld: true, detachedHandler: 'virt-handler-9fz7q' });
    fakes.push(p, q);
    await q.gateways[1].close(); // the pod is there and Ready, its admin port refuses
    // a connection p's gateway-0 refuses: its source (loopback) is not in p's migration network (issue 49): client_not_local
    const c = net.connect({ host: '127.0.0.1', port: p.gateways[0].addresses().intercept.port });
    c.on('error', () => undefined);
    await new Promise<void>((r) => c.once('close', () => r()));
    const kc = path.join(dir, 'kubeconfig-runtime');
    kubeconfig(kc, { p: `http://127.0.0.1:${p.api.port}`, q: `http://127.0.0.1:${q.api.port}` });
    const map = path.join(dir, 'contexts.yaml');
    fs.writeFileSync(map, 'p: ctx-p\nq: ctx-q\n');
    const r = await runStatus([file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc, '--context-map', map, '--timeout', '30']);
    expect(r.err).toBe('');
    expect(r.code).toBe(1);
    const lines = r.out.split('\n');
    expect(lines.find((l) => l.startsWith('q (context'))).toContain('gateway 2/2 ready, VIP 10.200.1.3 on no pod;');
    expect(lines.find((l) => l.startsWith('q (context'))).toContain('on kubevirt/lm-migration: virt-handler 1/2, sync controller 1/1;');
    expect(lines.filter((l) => /^ {2}(error|warning) \[/.test(l))).toEqual([
      '  error [status/vip-unheld] q: no gateway pod holds the VIP 10.200.1.3',
      '  warning [status/gateway-admin-unreachable] q: gateway pod migration-mesh-gateway-1-7d9f8-q1 admin /status not readable through the pod proxy: '
        + 'error trying to reach service: dial tcp 10.128.1.2:15090: connect: connection refused',
      '  error [status/not-attached] q: virt-handler virt-handler-9fz7q is not on the migration network kubevirt/lm-migration',
    ]);
    expect(lines.find((l) => l.startsWith('  gateway migration-mesh-gateway-0-7d9f8-q0: ready; tunnels open: q 0; last error '))).toMatch(/last error \S+Z origin client_not_local$/);
    expect(lines).toContain('  p -> q: [status/vip-unheld] q: no gateway pod holds the VIP 10.200.1.3');
    expect(lines).toContain('0/2 pairs ready to migrate');
    expect(q.api.proxied.map((x) => `${x.target} ${x.code}`).sort()).toEqual([
      'migration-mesh/migration-mesh-gateway-0-7d9f8-q0:15090/status 200', 'migration-mesh/migration-mesh-gateway-1-7d9f8-q1:15090/status 503',
    ]);
    for (const f of [p, q]) await f.close();
    fakes.length = 0;
  }, 120_000);

  test('pods that cannot be listed (403) are a warning each, not an unreachable cluster; the pairs stay ready', async () => {
    const p = await startCluster(objs('p'), ca.p, [ca.q]);
    const q = await startCluster(objs('q'), ca.q, [ca.p]);
    q.api.forbidList.add('pods');
    const kc = path.join(dir, 'kubeconfig-forbidden');
    kubeconfig(kc, { p: `http://127.0.0.1:${p.api.port}`, q: `http://127.0.0.1:${q.api.port}` });
    const map = path.join(dir, 'contexts.yaml');
    fs.writeFileSync(map, 'p: ctx-p\nq: ctx-q\n');
    const r = await runStatus([file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc, '--context-map', map]);
    await p.close();
    await q.close();
    const lines = r.out.split('\n');
    expect(lines.filter((l) => /^ {2}(error|warning) \[/.test(l))).toEqual([
      '  warning [status/pods-unreadable] q: gateway pods not listed: pods is forbidden: User "viewer" cannot list resource "pods" in API group "" in the namespace "migration-mesh"',
      '  warning [status/pods-unreadable] q: virt-handler and sync controller pods not listed: pods is forbidden: User "viewer" cannot list resource "pods" in API group "" in the namespace "kubevirt"',
    ]);
    expect(lines).toContain('2/2 pairs ready to migrate');
    expect(r.code).toBe(0);
  }, 120_000);

  test('--moves: MAC conflict, name taken, one ready; then the target namespace and storage class gone', async () => {
    const target = [ns('vms'), { apiVersion: 'k8s.cni.cncf.io/v1', kind: 'NetworkAttachmentDefinition', metadata: { name: 'vlan100', namespace: 'vms' }, spec: { config: '{}' } },
      { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'ceph-rbd' }, provisioner: 'rbd.csi.ceph.com' },
      vm('web1', 'vms', '02:00:00:00:00:09'), vm('other', 'tenant', '02:00:00:00:00:01')];
    const source = [ns('vms'), vm('db1', 'vms', '02:00:00:00:00:01'), vm('web1', 'vms', '02:00:00:00:00:02'), vm('app1', 'vms', '02:00:00:00:00:03')];
    const p = await startCluster(objs('p'), ca.p, [ca.q], { extra: target });
    const q = await startCluster(objs('q'), ca.q, [ca.p], { extra: source });
    fakes.push(p, q);
    // the gateways reach each other (loopback): their /probe passes, the network check with it
    linkGateways({ p, q });
    const kc = path.join(dir, 'kubeconfig-moves');
    kubeconfig(kc, { p: `http://127.0.0.1:${p.api.port}`, q: `http://127.0.0.1:${q.api.port}` });
    const map = path.join(dir, 'contexts.yaml');
    fs.writeFileSync(map, 'p: ctx-p\nq: ctx-q\n');
    const args = [file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc, '--context-map', map, '--moves'];
    const r = await runStatus(args);
    expect(r.err).toBe('');
    const all = r.out.slice(r.out.indexOf('moves:\n')).split('\n');
    // the readiness checks this fake cannot serve (no Nodes, quotas, CSIStorageCapacity) are warnings only (their
    // refusals: test/readiness.test.ts, test/readiness.real.test.ts): each move keeps its verdict
    const warned = all.filter((l) => l.startsWith('    warning ['));
    expect([...new Set(warned.map((l) => /\[([^\]]+)\]/.exec(l)![1]))]).toEqual(['status/ready-unread']);
    const moves = all.filter((l) => !l.startsWith('    warning [')).join('\n');
    expect(moves).toBe([
      'moves:',
      '  vms/app1 q -> p (plan mtv/w1-q-to-p): ready',
      '  vms/db1 q -> p (plan mtv/w1-q-to-p): NOT ready',
      '    [status/move-mac-conflict] MAC 02:00:00:00:00:01 of vms/db1 is already used by VM tenant/other in p',
      '  vms/web1 q -> p (plan mtv/w1-q-to-p): NOT ready',
      '    [status/move-name-taken] a VM vms/web1 already exists in p',
      '',
      '2/2 pairs ready to migrate; 1/3 moves ready',
      '',
    ].join('\n'));
    expect(r.code).toBe(1);

    p.api.unseed('v1', 'Namespace', 'vms');
    p.api.unseed('storage.k8s.io/v1', 'StorageClass', 'ceph-rbd');
    const j = await runStatus([...args, '--output', 'json']);
    const s = JSON.parse(j.out);
    const app1 = s.moves.find((m: any) => m.vm === 'vms/app1');
    expect(app1.ready).toBe(false);
    expect(app1.problems.filter((x: any) => x.severity !== 'warning')).toEqual([
      { code: 'status/move-namespace-missing', message: 'target namespace vms not in p' },
      { code: 'status/move-storage-missing', message: 'storage class ceph-rbd (StorageMap destination) not in p' },
    ]);
    expect(s.ready).toBe(false);
  }, 120_000);
});
