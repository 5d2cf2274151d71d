/**
 * `migration-mesh inventory` (issue 51 item 2: the live side of an evacuation) against two real kube-apiservers (RBAC
 * on) with KubeVirt's VirtualMachine and VirtualMachineInstance CRDs as virt-operator v1.8.4 generates them and the
 * KubeVirt CR's CRD, run as the built CLI under a user bound only to the ClusterRole docs/migrations.md gives (this
 * test applies that very block). Then `evacuate` plans from what it wrote.
 * What nobody runs here: kubelets and KubeVirt's controllers. Node status, pod phases and VMI status are written
 * through the status subresource as the kubelet and virt-handler would write them; pods are bound by `spec.nodeName`.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse, parseDocument, stringify } from 'yaml';
import { KubeObject, installCrds, serverSideApply } from './support/real-apply';
import { kubevirtWorkloadCrds, upstreamCrds } from './support/real-crds';
import { RealCluster, RealFleet, kubeconfigFile, ensureBuiltCli } from './support/real-kube';

const ROOT = path.resolve(__dirname, '..');
const started = Date.now();
const SCHEDULABLE = { 'kubevirt.io/schedulable': 'true' };
let real: RealFleet;
let east: RealCluster;
let west: RealCluster;
let dir: string;
let fleetFile: string;

/** The drain example's fleet cut to two clusters: east drains to west. */
function writeFleet(file: string): void {
  const doc = parse(fs.readFileSync(path.join(ROOT, 'examples', 'evacuate', 'drain.fleet.yaml'), 'utf8'));
  doc.spec.clusters = [{ name: 'east', nodes: 2 }, { name: 'west', nodes: 2 }];
  doc.spec.forklift.hub = { cluster: 'west', namespace: 'openshift-mtv' };
  delete doc.spec.forklift.providers.south;
  fs.writeFileSync(file, stringify(doc));
}

function cli(args: string[]): Promise<{ code: number; out: string; err: string }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [path.join(ROOT, 'lib', 'cli', 'cli.js'), ...args]);
    let out = '';
    let err = '';
    p.stdout.on('data', (c) => { out += c; });
    p.stderr.on('data', (c) => { err += c; });
    p.on('close', (code) => resolve({ code: code ?? -1, out, err }));
  });
}

/** The ClusterRole docs/migrations.md gives for the inventory's reader, as written there. */
function docsClusterRole(): KubeObject {
  const md = fs.readFileSync(path.join(ROOT, 'docs', 'migrations.md'), 'utf8');
  const block = /```yaml\n# migration-mesh-inventory-reader\n([\s\S]*?)```/.exec(md);
  if (!block) throw new Error('docs/migrations.md has no migration-mesh-inventory-reader block');
  return parseDocument(block[1]).toJS() as KubeObject;
}

/** Writes `status` as its owner does: through the status subresource, or (`whole`: KubeVirt's VMI CRD has none) the object. */
async function status(c: RealCluster, p: string, body: unknown, whole = false): Promise<void> {
  const r = await c.request('PATCH', whole ? p : `${p}/status`, body, { contentType: 'application/merge-patch+json' });
  if (r.status !== 200) throw new Error(`status of ${p} on ${c.name}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
}

async function node(c: RealCluster, name: string, o: { cpu: string; memory: string; cordoned?: boolean; labels?: Record<string, string> }): Promise<void> {
  await serverSideApply(c, { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { 'kubevirt.io/schedulable': 'true', ...o.labels } }, spec: o.cordoned ? { unschedulable: true } : {} } as KubeObject, 'kubelet');
  await status(c, `/api/v1/nodes/${name}`, { status: { allocatable: { cpu: o.cpu, memory: o.memory, pods: '110' }, capacity: { cpu: o.cpu, memory: o.memory, pods: '110' },
    conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ok', lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString() }] } });
  // the API server taints a new node not-ready (TaintNodesByCondition); the node lifecycle controller lifts it once Ready
  const r = await c.request('PATCH', `/api/v1/nodes/${name}`, { spec: { taints: null } }, { contentType: 'application/merge-patch+json' });
  if (r.status !== 200) throw new Error(`untaint ${name}: HTTP ${r.status}`);
}

async function pod(c: RealCluster, name: string, nodeName: string, cpu: string, memory: string, phase = 'Running'): Promise<void> {
  await serverSideApply(c, { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'default' },
    spec: { nodeName, containers: [{ name: 'c', image: 'registry.example/app:1', resources: { requests: { cpu, memory } } }] } } as KubeObject, 'user');
  await status(c, `/api/v1/namespaces/default/pods/${name}`, { status: { phase } });
}

async function vm(c: RealCluster, name: string, o: { memory: string; cores?: number; claim?: string; node?: string }): Promise<void> {
  const domain = { cpu: { cores: o.cores ?? 1 }, memory: { guest: o.memory }, devices: {} };
  await serverSideApply(c, { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', metadata: { name, namespace: 'vms' }, spec: {
    runStrategy: o.node ? 'Always' : 'Halted',
    template: { metadata: { labels: { app: name } }, spec: { domain,
      networks: [{ name: 'default', pod: {} }, { name: 'v', multus: { networkName: 'vlan100' } }],
      volumes: o.claim ? [{ name: 'root', persistentVolumeClaim: { claimName: o.claim } }] : [] } },
  } } as KubeObject, 'user');
  if (!o.node) return;
  await serverSideApply(c, { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachineInstance', metadata: { name, namespace: 'vms' }, spec: { domain } } as KubeObject, 'virt-controller');
  await status(c, `/apis/kubevirt.io/v1/namespaces/vms/virtualmachineinstances/${name}`, { status: { phase: 'Running', nodeName: o.node } }, true);
}

beforeAll(async () => {
  ensureBuiltCli('inventory');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-inventory-'));
  fleetFile = path.join(dir, 'drain.fleet.yaml');
  writeFleet(fleetFile);
  real = await RealFleet.start(['east', 'west']);
  [east, west] = [real.cluster('east'), real.cluster('west')];
  const crds = [...kubevirtWorkloadCrds(), ...upstreamCrds().filter((c) => c.crd.metadata.name === 'kubevirts.kubevirt.io').map((c) => c.crd)];
  await Promise.all([east, west].map(async (c) => {
    await installCrds(c, crds as unknown as Parameters<typeof installCrds>[1]);
    await serverSideApply(c, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'vms' } } as KubeObject, 'platform-installer');
    await serverSideApply(c, docsClusterRole(), 'platform-installer');
    await serverSideApply(c, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'planner' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'migration-mesh-inventory-reader' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'planner' }] } as KubeObject, 'platform-installer');
    for (let i = 0; (await c.request('GET', '/apis/kubevirt.io/v1/virtualmachineinstances')).status !== 200; i++) {
      if (i > 300) throw new Error(`${c.name}: VMIs not served after 60 s`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }));
  await node(east, 'east-a', { cpu: '16', memory: '64Gi' });
  await node(east, 'east-b', { cpu: '16', memory: '64Gi' });
  await node(west, 'west-a', { cpu: '32', memory: '128Gi', labels: { 'cpu-model.node.kubevirt.io/Skylake-Server': 'true' } });
  await node(west, 'west-b', { cpu: '64', memory: '512Gi', cordoned: true });
  await pod(west, 'busy', 'west-a', '20', '100Gi');
  await pod(west, 'done', 'west-a', '30', '120Gi', 'Succeeded'); // ended: counts for nothing
  await pod(east, 'launcher-db1', 'east-a', '1', '9Gi');
  await serverSideApply(east, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'db1-root', namespace: 'vms' },
    spec: { storageClassName: 'ceph-rbd', accessModes: ['ReadWriteMany'], volumeMode: 'Block', resources: { requests: { storage: '20Gi' } } } } as KubeObject, 'user');
  await vm(east, 'db1', { memory: '8Gi', cores: 4, claim: 'db1-root', node: 'east-a' });
  await vm(east, 'web1', { memory: '2Gi', node: 'east-b' });
  await vm(east, 'cold1', { memory: '1Gi' });
}, 240_000);

afterAll(async () => {
  await real?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  console.log(`inventory-real: ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

test('reads, as the documented ClusterRole allows, what runs where; evacuate plans from the file it wrote', async () => {
  const kc = kubeconfigFile(path.join(dir, 'planner.kubeconfig'), [east, west], { east: east.identity('planner'), west: west.identity('planner') });
  const out = path.join(dir, 'drain.inventory.yaml');
  const r = await cli(['inventory', fleetFile, '--cluster', 'east', '--kubeconfig', kc, '--out', out, '--timeout', '60']);
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  expect(r.out).toContain('skipped east vms/cold1: it is not running');
  const inv = parse(fs.readFileSync(out, 'utf8'));
  expect(inv.clusters.east).toEqual({
    nodes: [
      { name: 'east-a', allocatable: { cpu: '16', memory: '64Gi' }, requested: { cpu: '1', memory: '9Gi' }, labels: SCHEDULABLE },
      { name: 'east-b', allocatable: { cpu: '16', memory: '64Gi' }, labels: SCHEDULABLE },
    ],
    vms: [
      { name: 'db1', namespace: 'vms', node: 'east-a', cpu: '400m', memory: '8Gi', vcpus: 4, storageClasses: ['ceph-rbd'], networks: ['vms/vlan100'], vmiLabels: { app: 'db1' } },
      { name: 'web1', namespace: 'vms', node: 'east-b', cpu: '100m', memory: '2Gi', networks: ['vms/vlan100'], vmiLabels: { app: 'web1' } },
    ],
  });
  expect(inv.clusters.west).toEqual({ nodes: [
    { name: 'west-a', allocatable: { cpu: '32', memory: '128Gi' }, requested: { cpu: '20', memory: '100Gi' }, labels: { 'cpu-model.node.kubevirt.io/Skylake-Server': 'true', ...SCHEDULABLE } },
    { name: 'west-b', allocatable: { cpu: '64', memory: '512Gi' }, labels: SCHEDULABLE, schedulable: false },
  ] });
  // the plan goes to west-a (west-b is cordoned), both VMs in one wave
  const moves = path.join(dir, 'drain.moves.yaml');
  const e = await cli(['evacuate', fleetFile, '--cluster', 'east', '--inventory', out, '--out', moves]);
  expect(e.err).toBe('');
  expect(e.code).toBe(0);
  expect(e.out).toContain('vms/db1 (8Gi) east-a -> west/west-a');
  expect(e.out).toContain('vms/web1 (2Gi) east-b -> west/west-a');
}, 120_000);

test('a user without the ClusterRole is refused with the role to bind, and nothing is written', async () => {
  const kc = kubeconfigFile(path.join(dir, 'nobody.kubeconfig'), [east, west], { east: east.identity('planner'), west: west.identity('nobody') });
  const out = path.join(dir, 'refused.inventory.yaml');
  const r = await cli(['inventory', fleetFile, '--kubeconfig', kc, '--out', out, '--timeout', '60']);
  expect(r.code).toBe(1);
  expect(r.err).toContain('forklift/inventory-read');
  expect(r.err).toMatch(/cluster west \(context west\): .*forbidden|cluster west \(context west\): .*403/i);
  expect(r.err).toContain('ClusterRole in docs/migrations.md');
  expect(r.err).not.toContain('cluster east');
  expect(fs.existsSync(out)).toBe(false);
}, 120_000);

test('a cluster that does not answer in time fails the whole read: nothing is written', async () => {
  const kc = kubeconfigFile(path.join(dir, 'dead.kubeconfig'), [east, west], { east: east.identity('planner'), west: west.identity('planner') });
  const cfg = JSON.parse(fs.readFileSync(kc, 'utf8'));
  // a listener that accepts and never answers: the read must end at --timeout, not hang
  const net = await import('node:net');
  const held: import('node:net').Socket[] = [];
  const silent = net.createServer((s) => { held.push(s); }).listen(0, '127.0.0.1');
  await new Promise((r) => silent.once('listening', r));
  try {
    cfg.clusters[1].cluster.server = `https://127.0.0.1:${(silent.address() as import('node:net').AddressInfo).port}`;
    fs.writeFileSync(kc, JSON.stringify(cfg));
    const out = path.join(dir, 'dead.inventory.yaml');
    const t0 = Date.now();
    const r = await cli(['inventory', fleetFile, '--kubeconfig', kc, '--out', out, '--timeout', '3']);
    expect(r.code).toBe(1);
    expect(r.err).toContain('cluster west (context west): no full answer within 3 s');
    expect(Date.now() - t0).toBeLessThan(30_000);
    expect(fs.existsSync(out)).toBe(false);
  } finally {
    for (const s of held) s.destroy();
    silent.close();
  }
}, 60_000);
