/**
 * `migration-mesh status --moves`: the readiness checks of a move (src/report/readiness.ts, cli/readiness.ts) against
 * two real kube-apiservers (RBAC on; test/support/real-kube.ts), run as the built CLI under a user bound only to the
 * ClusterRole synth writes (`spec.operatorView.statusClusterRole`, src/report/status-role.ts). Installed: KubeVirt's
 * KubeVirt CRD and its VirtualMachine / VirtualMachineInstance CRDs as virt-operator v1.8.4 generates them
 * (real/kubevirt-bins mm-kubevirt-crds), Forklift's CRDs on the hub, the generated KubeVirt CRs with
 * `status.observedKubeVirtVersion` as virt-operator reports it.
 * Nodes are Node objects created through the API with `status.allocatable` written through `nodes/status` and the
 * labels KubeVirt v1.8.4's node labeller writes (cpu-model, cpu-feature, machine-type, kubevirt.io/schedulable), Ready,
 * and the API server's not-ready taint lifted as the node lifecycle controller does:
 * no kwok (it would only fake kubelets; what readiness reads is the Node and the pods' requests), and the pod that
 * uses a node's capacity is bound to it by spec.nodeName (no scheduler). No gateway runs here, so the network check
 * only warns that it could not probe (its pass and refusal on real gateway runtimes: test/readiness-network.netns.test.ts).
 *   - phase 1: db1 passes storage, compute, version and capacity; web1 is refused by storage (RWO PVC) and compute
 *     (a nodeSelector no node matches); app1 by capacity (more memory than any node has free) and storage
 *     (CSIStorageCapacity without room for its disk);
 *     hm1 (host-model, its VMI on a source node labelled host-model-cpu Skylake-Server) by compute (no target node
 *     labelled cpu-model-migration for it);
 *   - phase 2: p-node-0 labelled for hm1's host model (hm1 passes compute); the target's KubeVirt reports an older
 *     version without the gate, the target namespace gets a ResourceQuota and a LimitRange: db1 is refused by version
 *     and capacity;
 *   - phase 3: the API server refuses two invalid LimitRanges and stores a valid one defaulted (Container: min 10m,
 *     max 4 CPUs; Pod: max 8484Mi): KubeVirt's guest-console-log container (5m) is under the Container min for db1
 *     and hm1, db1's pod sum (compute plus the console's 35M) over the Pod max (src/report/launcher-limits.ts).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { generatedObjects } from '../cli/generated-objects';
import { KubeObject, installCrds, serverSideApply } from './support/real-apply';
import { kubevirtWorkloadCrds, upstreamCrds } from './support/real-crds';
import { RealCluster, RealFleet } from './support/real-kube';
import { runCli } from './support/fleets';
import { readinessFleet, statusMoves } from './support/status-moves';
import { launcherContainers } from '../src/report/launcher-limits';
import { memoryOverhead } from '../src/report/readiness';
import { Resources, VmNeeds } from '../src/report/readiness-facts';

const ROOT = path.resolve(__dirname, '..');
const started = Date.now();
let real: RealFleet;
let p: RealCluster;
let q: RealCluster;
let dir: string;
let fleetFile: string;
let kc: string;

const LABELS = { 'kubevirt.io/schedulable': 'true', 'cpu-model.node.kubevirt.io/Cascadelake-Server': 'true', 'cpu-feature.node.kubevirt.io/avx512f': 'true',
  'machine-type.node.kubevirt.io/pc-q35-rhel9.6.0': 'true', 'topology.kubernetes.io/zone': 'a' };

function vm(name: string, memory: string, claim: string, nodeSelector: Record<string, string> = {}): KubeObject {
  return {
    apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', metadata: { name, namespace: 'vms' },
    spec: { runStrategy: 'Always', template: { spec: {
      nodeSelector,
      domain: { cpu: { model: 'Cascadelake-Server', cores: 2, features: [{ name: 'avx512f', policy: 'require' }] }, machine: { type: 'pc-q35-rhel9.6.0' },
        resources: { requests: { cpu: '2', memory } }, devices: { disks: [{ name: 'root', disk: { bus: 'virtio' } }] } },
      volumes: [{ name: 'root', persistentVolumeClaim: { claimName: claim } }],
    } } },
  } as unknown as KubeObject;
}
const pvc = (name: string, size: string, mode: string): KubeObject => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'vms' },
  spec: { storageClassName: 'ceph-rbd', accessModes: [mode], volumeMode: 'Block', resources: { requests: { storage: size } } } } as unknown as KubeObject);

async function ok(c: RealCluster, method: string, url: string, body: unknown): Promise<any> {
  const r = await c.request(method, url, body);
  if (r.status >= 300) throw new Error(`${c.name} ${method} ${url}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  return r.json;
}

/** The generated KubeVirt CR, with the version virt-operator reports (status written through /status when the CRD has it). */
async function kubevirt(c: RealCluster, version: string, edit: (o: any) => void = () => undefined): Promise<void> {
  const kv = structuredClone(generatedObjects(path.join(dir, 'dist', 'rd', c.name)).find((o) => o.kind === 'KubeVirt')) as any;
  edit(kv);
  const url = `/apis/kubevirt.io/v1/namespaces/${kv.metadata.namespace}/kubevirts/${kv.metadata.name}`;
  const cur = await c.request('GET', url);
  if (cur.status === 200) kv.metadata.resourceVersion = cur.json.metadata.resourceVersion;
  const live = cur.status === 200 ? await ok(c, 'PUT', url, kv) : await ok(c, 'POST', url.slice(0, url.lastIndexOf('/')), kv);
  await ok(c, 'PUT', `${url}/status`, { ...live, status: { observedKubeVirtVersion: version, phase: 'Deployed' } });
}

const status = () => statusMoves(fleetFile, path.join(dir, 'dist'), kc);
/** The readiness problems of one move: `severity code` of those a check names. */
const limitRefusals = (s: any, vmName: string): string[] => s.moves.find((m: any) => m.vm === `vms/${vmName}`).problems
  .filter((x: any) => x.code === 'status/ready-limit-range').map((x: any) => x.message);
const checks = (s: any, vmName: string) => (s.moves.find((m: any) => m.vm === `vms/${vmName}`)?.problems ?? [])
  .filter((x: any) => x.check).map((x: any) => `${x.severity ?? 'error'} ${x.code}`);

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'lib', 'cli', 'readiness.js'))
    || fs.statSync(path.join(ROOT, 'lib', 'cli', 'readiness.js')).mtimeMs < fs.statSync(path.join(ROOT, 'cli', 'readiness.ts')).mtimeMs) {
    execFileSync('npx', ['tsc', '-p', '.'], { cwd: ROOT, stdio: 'inherit' });
  }
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-readiness-'));
  fleetFile = path.join(dir, 'rd.fleet.yaml');
  fs.writeFileSync(fleetFile, stringify(readinessFleet(['db1', 'web1', 'app1', 'hm1'], 'rd')));
  const r = runCli(['synth', fleetFile, '--out', path.join(dir, 'dist'), '--no-svg']);
  if (r.code !== 0) throw new Error(r.err);
  real = await RealFleet.start(['p', 'q']);
  [p, q] = [real.cluster('p'), real.cluster('q')];
  const kvCrds = upstreamCrds().filter((c) => c.crd.metadata.name === 'kubevirts.kubevirt.io').map((c) => c.crd);
  const forklift = upstreamCrds().filter((c) => c.crd.metadata.name.endsWith('.forklift.konveyor.io')).map((c) => c.crd);
  const crds = [...kvCrds, ...kubevirtWorkloadCrds()];
  await installCrds(p, [...crds, ...forklift] as never);
  await installCrds(q, crds as never);
  for (const c of [p, q]) {
    for (const ns of ['vms', 'kubevirt', 'mtv']) await serverSideApply(c, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } as KubeObject, 'platform-installer');
    for (let i = 0; (await c.request('GET', '/apis/kubevirt.io/v1/kubevirts')).status !== 200; i++) {
      if (i > 300) throw new Error(`${c.name}: kubevirts not served after 60 s`);
      await new Promise((res) => setTimeout(res, 200));
    }
    // the ClusterRole synth wrote for the cluster, bound to the user status runs as
    const role = generatedObjects(path.join(dir, 'dist', 'rd', c.name)).find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'migration-mesh-status');
    if (!role) throw new Error(`no migration-mesh-status ClusterRole in ${c.name}'s tree`);
    await serverSideApply(c, role as unknown as KubeObject, 'platform-installer');
    await serverSideApply(c, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'readiness-viewer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'migration-mesh-status' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'readiness-viewer' }] } as KubeObject, 'platform-installer');
    await kubevirt(c, 'v1.8.4');
  }
  // the source: three VMs and their PVCs (web1's is ReadWriteOnce; app1's larger than the target's segments)
  await serverSideApply(q, pvc('db1-root', '20Gi', 'ReadWriteMany'), 'user');
  await serverSideApply(q, pvc('web1-root', '20Gi', 'ReadWriteOnce'), 'user');
  await serverSideApply(q, pvc('app1-root', '80Gi', 'ReadWriteMany'), 'user');
  await serverSideApply(q, vm('db1', '8Gi', 'db1-root'), 'user');
  await serverSideApply(q, vm('web1', '8Gi', 'web1-root', { 'topology.kubernetes.io/zone': 'nowhere' }), 'user');
  await serverSideApply(q, vm('app1', '200Gi', 'app1-root'), 'user');
  // hm1: a host-model VM running on q-node-0, which KubeVirt's node labeller labelled with its host model
  await serverSideApply(q, pvc('hm1-root', '10Gi', 'ReadWriteMany'), 'user');
  const hm = vm('hm1', '4Gi', 'hm1-root') as any;
  hm.spec.template.spec.domain.cpu = { model: 'host-model', cores: 1 };
  delete hm.spec.template.spec.domain.machine;
  await serverSideApply(q, hm, 'user');
  const qNode = await ok(q, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'q-node-0', labels: {
    'kubevirt.io/schedulable': 'true', 'host-model-cpu.node.kubevirt.io/Skylake-Server': 'true', 'host-model-required-features.node.kubevirt.io/mpx': 'true' } } });
  expect(qNode.metadata.name).toBe('q-node-0');
  // the VMI CRD virt-operator generates has no status subresource: virt-handler writes status with the object
  const vmi = await ok(q, 'POST', '/apis/kubevirt.io/v1/namespaces/vms/virtualmachineinstances', { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachineInstance',
    metadata: { name: 'hm1', namespace: 'vms' }, spec: { domain: { cpu: { model: 'host-model' }, devices: {}, memory: { guest: '4Gi' } } },
    status: { phase: 'Running', nodeName: 'q-node-0' } });
  expect(vmi.status.nodeName).toBe('q-node-0');
  // the target: the storage class with a segment of 60Gi, a labelled node with 64Gi, a cordoned one, a pod using 16Gi
  await serverSideApply(p, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'ceph-rbd' }, provisioner: 'rbd.csi.ceph.com' } as KubeObject, 'platform-installer');
  await serverSideApply(p, { apiVersion: 'storage.k8s.io/v1', kind: 'CSIStorageCapacity', metadata: { name: 'rbd-a', namespace: 'kube-system' }, storageClassName: 'ceph-rbd',
    capacity: '500Gi', maximumVolumeSize: '60Gi' } as unknown as KubeObject, 'csi-provisioner');
  for (const [name, extra] of [['p-node-0', {}], ['p-node-1', { unschedulable: true }]] as const) {
    const node = await ok(p, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name, labels: { ...LABELS, 'kubernetes.io/hostname': name } }, spec: extra });
    const now = new Date().toISOString();
    const st = await ok(p, 'PUT', `/api/v1/nodes/${name}/status`, { ...node, status: { allocatable: { cpu: '16', memory: '64Gi', pods: '110' }, capacity: { cpu: '16', memory: '64Gi', pods: '110' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: now, lastTransitionTime: now }] } });
    // the API server's TaintNodesByCondition taints a new node not-ready:NoSchedule (the first run here refused every
    // VM for it); the node lifecycle controller lifts it once the node is Ready, as done here
    expect(st.spec.taints).toEqual([{ key: 'node.kubernetes.io/not-ready', effect: 'NoSchedule' }]);
    await ok(p, 'PUT', `/api/v1/nodes/${name}`, { ...st, spec: { ...st.spec, taints: [] } });
  }
  await ok(p, 'POST', '/api/v1/namespaces/vms/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'busy', namespace: 'vms' },
    spec: { nodeName: 'p-node-0', containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10', resources: { requests: { cpu: '4', memory: '16Gi' } } }] } });
  const id = p.identity('readiness-viewer');
  kc = path.join(dir, 'viewer.kubeconfig');
  fs.writeFileSync(kc, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'p',
    clusters: [p, q].map((c) => ({ name: c.name, cluster: { server: c.url, 'certificate-authority': c.caFile } })),
    users: [{ name: 'readiness-viewer', user: 'token' in id ? { token: id.token } : { 'client-certificate': id.cert, 'client-key': id.key } }],
    contexts: [p, q].map((c) => ({ name: c.name, context: { cluster: c.name, user: 'readiness-viewer' } })),
  }));
}, 300_000);

afterAll(async () => {
  await real?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  console.log(`readiness-real: ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

test('phase 1: db1 passes; web1 refused by storage and compute, app1 by capacity and storage; every read allowed', async () => {
  const r = await status();
  expect(r.err).toBe('');
  expect(r.code).toBe(1);
  // no gateway runs here: the network check cannot probe (a warning); every other read the ClusterRole allowed
  const db1 = r.json.moves.find((m: any) => m.vm === 'vms/db1');
  expect(checks(r.json, 'db1')).toEqual(['warning status/ready-tunnel-unknown']);
  expect(checks(r.json, 'web1')).toEqual([...checks(r.json, 'db1'), 'error status/ready-access-mode', 'error status/ready-no-node']);
  expect(checks(r.json, 'app1')).toEqual([...checks(r.json, 'db1'), 'error status/ready-storage-capacity', 'error status/ready-no-room']);
  const web1 = r.json.moves.find((m: any) => m.vm === 'vms/web1');
  expect(web1.problems.find((x: any) => x.code === 'status/ready-no-node').message)
    .toBe('no schedulable node of p can run vms/web1 (p-node-0: nodeSelector topology.kubernetes.io/zone=nowhere not matched; p-node-1: cordoned)');
  // hm1 needs a target node labelled for its source host model (cpu-model-migration) and its required feature
  expect(checks(r.json, 'hm1')).toEqual([...checks(r.json, 'db1'), 'error status/ready-no-node']);
  expect(r.json.moves.find((m: any) => m.vm === 'vms/hm1').problems.find((x: any) => x.code === 'status/ready-no-node').message)
    .toBe('no schedulable node of p can run vms/hm1 (p-node-0: no label cpu-model-migration.node.kubevirt.io/Skylake-Server=true; p-node-1: cordoned)');
  const app1 = r.json.moves.find((m: any) => m.vm === 'vms/app1');
  expect(app1.problems.find((x: any) => x.code === 'status/ready-no-room').message).toMatch(/^no node of p that can run vms\/app1 has 2000m CPU, \d+Mi memory .*p-node-0: 12000m, 49152Mi free\)$/);
  expect(db1.card).toEqual({ from: 'q', to: 'p', source: expect.objectContaining({ version: 'v1.8.4', gate: true }),
    target: expect.objectContaining({ version: 'v1.8.4', gate: true }), update: [] });
}, 120_000);

test('phase 2: an older target KubeVirt without the gate, a quota and a LimitRange refuse db1 (version, capacity)', async () => {
  await kubevirt(p, 'v1.7.3', (kv) => {
    const gates: string[] = kv.spec.configuration.developerConfiguration.featureGates;
    kv.spec.configuration.developerConfiguration.featureGates = gates.filter((g) => g !== 'DecentralizedLiveMigration');
  });
  // the node labeller found p-node-0 can take Skylake-Server host-model guests with mpx
  const n0 = await ok(p, 'GET', '/api/v1/nodes/p-node-0', undefined);
  n0.metadata.labels = { ...n0.metadata.labels, 'cpu-model-migration.node.kubevirt.io/Skylake-Server': 'true', 'cpu-feature.node.kubevirt.io/mpx': 'true' };
  await ok(p, 'PUT', '/api/v1/nodes/p-node-0', n0);
  await serverSideApply(p, { apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'rq', namespace: 'vms' }, spec: { hard: { 'requests.memory': '20Gi', pods: '10' } } } as unknown as KubeObject, 'admin');
  const rq = await ok(p, 'GET', '/api/v1/namespaces/vms/resourcequotas/rq', undefined);
  // what the quota controller would write: the busy pod's 16Gi used
  await ok(p, 'PUT', '/api/v1/namespaces/vms/resourcequotas/rq/status', { ...rq, status: { hard: { 'requests.memory': '20Gi', pods: '10' }, used: { 'requests.memory': '16Gi', pods: '1' } } });
  await serverSideApply(p, { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'lr', namespace: 'vms' },
    spec: { limits: [{ type: 'Container', max: { cpu: '1' } }] } } as unknown as KubeObject, 'admin');
  const r = await status();
  expect(r.err).toBe('');
  expect(r.code).toBe(1);
  // the compute container's 2 CPUs: above the limit the item's max gives it as its default, and above the max
  const cpuRefusals = ['error status/ready-limit-range', 'error status/ready-limit-range'];
  expect(checks(r.json, 'db1')).toEqual(['warning status/ready-tunnel-unknown',
    'error status/ready-kubevirt-older', 'error status/ready-gate-off', 'error status/ready-quota', ...cpuRefusals]);
  // hm1 now has a node (no compute refusal); its 4Gi with KubeVirt's overhead exceed the quota's 4Gi left, its 2 CPUs the LimitRange
  expect(checks(r.json, 'hm1')).toEqual(['warning status/ready-tunnel-unknown',
    'error status/ready-kubevirt-older', 'error status/ready-gate-off', 'error status/ready-quota', ...cpuRefusals]);
  expect(limitRefusals(r.json, 'db1')).toEqual([
    'LimitRange vms/lr on p (spec.limits[0], type Container) refuses the virt-launcher pod of vms/db1: container compute: its cpu request 2000m is above the limit 1000m the LimitRange\'s default gives it (the pod is invalid)',
    'LimitRange vms/lr on p (spec.limits[0], type Container) refuses the virt-launcher pod of vms/db1: container compute: maximum cpu usage per Container is 1000m, but request is 2000m',
  ]);
  const db1 = r.json.moves.find((m: any) => m.vm === 'vms/db1');
  expect(db1.card.update).toEqual(['p']);
  expect(db1.problems.find((x: any) => x.code === 'status/ready-kubevirt-older').fix).toBe('update p\'s KubeVirt to v1.8.4 or later before moving');
}, 120_000);

test('phase 3: a LimitRange per type, as the API server validates and stores it: KubeVirt\'s console container under a Container min, the pod\'s sum over a Pod max', async () => {
  // the API server refuses what LimitRanger could not apply: defaults on a Pod item, a min above the max
  const post = (spec: unknown) => p.request('POST', '/api/v1/namespaces/vms/limitranges', { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'bad', namespace: 'vms' }, spec });
  const pod = await post({ limits: [{ type: 'Pod', default: { cpu: '1' } }] });
  expect([pod.status, pod.text]).toEqual([422, expect.stringContaining('may not be specified when `type` is \'Pod\'')]);
  const minMax = await post({ limits: [{ type: 'Container', min: { cpu: '2' }, max: { cpu: '1' } }] });
  expect([minMax.status, minMax.text]).toEqual([422, expect.stringContaining('min value 2 is greater than max value 1')]);
  await ok(p, 'DELETE', '/api/v1/namespaces/vms/limitranges/lr', undefined);
  // Container: at least 10m CPU, at most 4 CPUs; Pod: at most db1's compute container alone (8Gi + 292Mi overhead)
  await serverSideApply(p, { apiVersion: 'v1', kind: 'LimitRange', metadata: { name: 'lr', namespace: 'vms' },
    spec: { limits: [{ type: 'Container', min: { cpu: '10m' }, max: { cpu: '4' } }, { type: 'Pod', max: { memory: '8484Mi' } }] } } as unknown as KubeObject, 'admin');
  // stored defaulted (SetDefaults_LimitRangeItem): the default limit from max, the default request from it
  const stored = await ok(p, 'GET', '/api/v1/namespaces/vms/limitranges/lr', undefined);
  expect(stored.spec.limits[0]).toEqual({ type: 'Container', min: { cpu: '10m' }, max: { cpu: '4' }, default: { cpu: '4' }, defaultRequest: { cpu: '4' } });
  const r = await status();
  expect(r.err).toBe('');
  const low = 'LimitRange vms/lr on p (spec.limits[0], type Container) refuses the virt-launcher pod of VM: container guest-console-log: minimum cpu usage per Container is 10m, but request is 5m';
  expect(limitRefusals(r.json, 'db1')).toEqual([low.replace('VM', 'vms/db1'),
    `LimitRange vms/lr on p (spec.limits[1], type Pod) refuses the virt-launcher pod of vms/db1: the pod: maximum memory usage per Pod is 8484Mi, but request is ${8484 * 2 ** 20 + 35_000_000}`]);
  // hm1's 4Gi fits the Pod max; its console container is KubeVirt's all the same
  expect(limitRefusals(r.json, 'hm1')).toEqual([low.replace('VM', 'vms/hm1')]);
  // the model against the real LimitRanger: db1's virt-launcher pod as launcher-limits.ts models it, created in p's
  // namespace (phase 2's quota removed: only the LimitRange judges it), is refused by the API server for exactly the
  // two reasons the check gave
  await ok(p, 'DELETE', '/api/v1/namespaces/vms/resourcequotas/rq', undefined);
  const db1 = { requests: { cpuMilli: 2000, memoryBytes: 8 * 2 ** 30 }, vcpus: 2, graphics: true };
  const containers = launcherContainers({ limits: {} } as VmNeeds, { found: true, featureGates: [] },
    { cpuMilli: 2000, memoryBytes: 8 * 2 ** 30 + memoryOverhead(db1) }, memoryOverhead(db1));
  const res = (x: Partial<Resources>) => ({ ...(x.cpuMilli !== undefined ? { cpu: `${x.cpuMilli}m` } : {}), ...(x.memoryBytes !== undefined ? { memory: String(x.memoryBytes) } : {}) });
  const spec = (c: typeof containers[number]) => ({ name: c.name, image: 'registry.k8s.io/pause:3.10', resources: { requests: res(c.requests), limits: res(c.limits) },
    ...(c.sidecar ? { restartPolicy: 'Always' } : {}) });
  const created = await p.request('POST', '/api/v1/namespaces/vms/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'virt-launcher-db1-x', namespace: 'vms' },
    spec: { containers: containers.filter((c) => !c.sidecar).map(spec), initContainers: containers.filter((c) => c.sidecar).map(spec) } });
  expect(created.status).toBe(403);
  expect(created.text).toContain('minimum cpu usage per Container is 10m, but request is 5m');
  expect(created.text).toContain(`maximum memory usage per Pod is 8484Mi, but request is ${8484 * 2 ** 20 + 35_000_000}`);
}, 120_000);
