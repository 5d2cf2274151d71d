/**
 * Issue 51 items 4 and 5 on real kube-apiservers (RBAC on): `watch-moves` follows three moves q -> p of one
 * Forklift Plan (the hub is p) while the test drives the objects through the states a move goes through
 * (Migration status.vms, the source and target VirtualMachineInstanceMigrations' status subresource), and
 * `cleanup-move` removes exactly the failed move's leftovers on p. CRDs: Forklift's Plan and Migration
 * (test/fixtures/upstream/forklift), KubeVirt's VM and VMI as virt-operator v1.8.4 generates them, the VMIM
 * from KubeVirt's schema (test/fixtures/upstream/kubevirt). Nobody runs Forklift's or KubeVirt's controllers
 * here: the test writes the statuses they write. No CDI: DataVolumes are not served, PVCs stand for the disks.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { stringify } from 'yaml';
import { KubeObject } from './support/real-apply';
import { CliChild, cliChild, create, moveClusters, setStatus, until, vmim } from './support/move-watch';
import { RealCluster, RealFleet } from './support/real-kube';
import { baseFleet, runCli } from './support/fleets';
import { generatedObjects } from '../cli/generated-objects';

const ROOT = path.resolve(__dirname, '..');
let real: RealFleet;
let p: RealCluster;
let q: RealCluster;
let dir: string;
let fleetFile: string;
let kc: string;
let plan: KubeObject;
let migrationUid: string;

function cli(args: string[]): CliChild {
  return cliChild([...args, fleetFile], kc, path.join(dir, 'dist'));
}

beforeAll(async () => {
  if (!fs.existsSync(path.join(ROOT, 'lib', 'cli', 'watch-moves.js'))) execFileSync('npx', ['tsc', '-p', '.'], { cwd: ROOT, stdio: 'inherit' });
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-move-watch-'));
  fleetFile = path.join(dir, 'mv.fleet.yaml');
  fs.writeFileSync(fleetFile, stringify(baseFleet({
    clusters: [{ name: 'p', nodes: 3 }, { name: 'q', nodes: 3 }],
    forklift: {
      hub: { cluster: 'p', namespace: 'mtv' },
      providers: { q: { url: 'https://api.q.example:6443', secret: 'q-provider' } },
      networks: [{ name: 'vlan100', namespace: 'vms' }],
      storage: [{ source: 'ceph-rbd', storageClass: 'ceph-rbd' }],
      moves: ['db1', 'web1', 'app1'].map((vm) => ({ vm, namespace: 'vms', from: 'q', to: 'p', batch: 'w1' })),
    },
  } as any, 'mv')));
  expect(runCli(['synth', fleetFile, '--out', path.join(dir, 'dist'), '--no-svg']).code).toBe(0);
  ({ real, p, q } = await moveClusters({ p: ['mtv', 'vms'], q: ['vms'] }));
  const clusters = [p, q];
  kc = path.join(dir, 'kubeconfig');
  fs.writeFileSync(kc, JSON.stringify({ apiVersion: 'v1', kind: 'Config', 'current-context': 'p',
    clusters: clusters.map((c) => ({ name: c.name, cluster: { server: c.url, 'certificate-authority': c.caFile } })),
    users: clusters.map((c) => ({ name: c.name, user: 'token' in c.admin ? { token: c.admin.token } : { 'client-certificate': c.admin.cert, 'client-key': c.admin.key } })),
    contexts: clusters.map((c) => ({ name: c.name, context: { cluster: c.name, user: c.name } })) }));
  const generated = generatedObjects(path.join(dir, 'dist', 'mv', '_forklift')).find((o) => o.kind === 'Plan')!;
  plan = await create(p, generated as unknown as KubeObject);
}, 600_000);

afterAll(async () => {
  await real?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

test('nothing moves: the bounded wait ends with exit 4 and each move still pending', async () => {
  const w = cli(['watch-moves', '--timeout', '2', '--output', 'json']);
  const r = await w.result;
  expect(r.code).toBe(4);
  const last = new Map(r.out.trim().split('\n').map((l) => JSON.parse(l)).map((j) => [j.vm, j.state]));
  expect(Object.fromEntries(last)).toEqual({ 'vms/db1': 'pending', 'vms/web1': 'pending', 'vms/app1': 'pending' });
}, 60_000);

test('the watch reports each state the objects go through and ends 3 (one failed), printing its cleanup', async () => {
  const w = cli(['watch-moves', '--timeout', '120', '--output', 'json']);
  let buf = '';
  w.stdout!.on('data', (x) => { buf += x; });
  const phaseSeen = (vm: string, state: string, phase?: string) => buf.split('\n').filter(Boolean).map((l) => JSON.parse(l))
    .some((j) => j.vm === vm && j.state === state && (!phase || j.phase === phase));
  await until('pending lines', () => phaseSeen('vms/db1', 'pending'));
  const mig = await create(p, { apiVersion: 'forklift.konveyor.io/v1beta1', kind: 'Migration', metadata: { name: 'w1-1', namespace: 'mtv' }, spec: { plan: { name: plan.metadata.name, namespace: 'mtv' } } } as KubeObject,
    { vms: ['db1', 'web1', 'app1'].map((name) => ({ name, namespace: 'vms', phase: 'StartMigration', pipeline: [{ name: 'Initialize', phase: 'Completed', progress: { completed: 1, total: 1 } }, { name: 'Migrate', phase: 'Running', progress: { completed: 0, total: 1 } }] })) });
  await until('Migration phase', () => phaseSeen('vms/web1', 'running', 'StartMigration'));
  const src: Record<string, KubeObject> = {};
  const dst: Record<string, KubeObject> = {};
  for (const vm of ['db1', 'web1', 'app1']) {
    src[vm] = await create(q, vmim(`${vm}-out`, vm, 'vms'), { phase: 'Running', migrationState: { startTimestamp: new Date().toISOString(), mode: 'PreCopy' } });
    dst[vm] = await create(p, vmim(`${vm}-in`, vm, 'vms'), { phase: 'Synchronizing' });
  }
  await until('VMIM Running', () => ['db1', 'web1', 'app1'].every((vm) => phaseSeen(`vms/${vm}`, 'running', 'Running')));
  for (const vm of ['db1', 'app1']) {
    await setStatus(q, src[vm], { phase: 'Succeeded', migrationState: { completed: true, endTimestamp: new Date().toISOString() } });
    await setStatus(p, dst[vm], { phase: 'Succeeded' });
  }
  await until('db1 completed', () => phaseSeen('vms/db1', 'completed'));
  expect(phaseSeen('vms/web1', 'completed')).toBe(false);
  await setStatus(p, dst.web1, { phase: 'Failed', migrationState: { failed: true, failureReason: 'receiver pod unschedulable' } });
  const r = await w.result;
  expect(r.code).toBe(3);
  const final = buf.trim().split('\n').map((l) => JSON.parse(l)).filter((j) => j.vm === 'vms/web1').pop();
  expect(final).toMatchObject({ state: 'failed', reason: 'receiver pod unschedulable', tunnel: { path: 'q->p' } });
  expect(r.err).toContain(`migration-mesh cleanup-move ${fleetFile} --move vms/web1`);
  migrationUid = mig.metadata.uid as string;
}, 180_000);

test('cleanup-move: dry run lists, --apply deletes exactly the failed move\'s objects; decoys stay', async () => {
  const marks = { plan: plan.metadata.uid as string, migration: migrationUid };
  await create(q, { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', metadata: { name: 'web1', namespace: 'vms' }, spec: { runStrategy: 'Always', template: { spec: { domain: { devices: {} } } } } } as KubeObject, { printableStatus: 'Running' });
  const vm = await create(p, { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', metadata: { name: 'web1', namespace: 'vms', labels: marks }, spec: { runStrategy: 'Always', template: { spec: { domain: { devices: {} } } } } } as KubeObject);
  const owner = (o: KubeObject) => [{ apiVersion: o.apiVersion, kind: o.kind, name: o.metadata.name, uid: o.metadata.uid as string }];
  const vmi = await create(p, { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachineInstance', metadata: { name: 'web1', namespace: 'vms', ownerReferences: owner(vm) }, spec: { domain: { devices: {} } } } as KubeObject);
  const pod = (name: string, meta: Record<string, unknown>) => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: 'vms', ...meta }, spec: { containers: [{ name: 'compute', image: 'x' }] } } as KubeObject);
  const pvc = (name: string, labels?: Record<string, string>) => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'vms', ...(labels ? { labels } : {}) }, spec: { accessModes: ['ReadWriteMany'], resources: { requests: { storage: '1Gi' } } } } as KubeObject);
  await create(p, pod('virt-launcher-web1-abcde', { ownerReferences: owner(vmi) }));
  await create(p, pvc('web1-disk0', marks));
  // decoys: same-named without the marks, another VM of the same Plan, another plan's
  await create(p, pvc('web1-scratch'));
  await create(p, pvc('db1-disk0', marks));
  await create(p, pvc('web1-disk9', { plan: 'another-plan-uid', migration: 'x' }));
  await create(p, pod('virt-launcher-web1-hand', {}));
  const names = async () => {
    // a PVC keeps kubernetes.io/pvc-protection until kube-controller-manager (not run here) lifts it: deleted = deletionTimestamp set
    const list = async (u: string) => ((await p.request('GET', u)).json.items as KubeObject[])
      .filter((o) => !(o.metadata as { deletionTimestamp?: string }).deletionTimestamp).map((o) => o.metadata.name);
    return { pvcs: await list('/api/v1/namespaces/vms/persistentvolumeclaims'), pods: await list('/api/v1/namespaces/vms/pods'),
      vms: await list('/apis/kubevirt.io/v1/namespaces/vms/virtualmachines'), vmis: await list('/apis/kubevirt.io/v1/namespaces/vms/virtualmachineinstances') };
  };
  const before = await names();
  const dry = await cli(['cleanup-move', '--move', 'vms/web1']).result;
  expect(dry.code).toBe(0);
  expect(dry.out.split('\n').filter((l) => l.startsWith('would delete'))).toEqual([
    'would delete VirtualMachine vms/web1', 'would delete VirtualMachineInstance vms/web1', 'would delete PersistentVolumeClaim vms/web1-disk0', 'would delete Pod vms/virt-launcher-web1-abcde']);
  expect(dry.out).toContain('kept PersistentVolumeClaim vms/web1-scratch: no Forklift plan/migration labels');
  expect(dry.out).toContain('kept PersistentVolumeClaim vms/web1-disk9: labelled for another plan');
  expect(await names()).toEqual(before);
  const applied = await cli(['cleanup-move', '--move', 'vms/web1', '--apply']).result;
  expect(applied.code).toBe(0);
  const after = await names();
  expect(after.vms).toEqual([]);
  expect(after.vmis).toEqual([]);
  expect(after.pvcs.sort()).toEqual(['db1-disk0', 'web1-disk9', 'web1-scratch']);
  expect(after.pods).toEqual(['virt-launcher-web1-hand']);
  // the source VM stopped: refused, nothing deleted
  await create(p, pvc('web1-disk1', marks));
  await setStatus(q, { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', metadata: { name: 'web1', namespace: 'vms' } } as KubeObject, { printableStatus: 'Stopped' });
  const stopped = await cli(['cleanup-move', '--move', 'vms/web1', '--apply']).result;
  expect(stopped.code).toBe(1);
  expect(stopped.out).toContain('refused: source VM vms/web1 is Stopped, not Running');
  expect((await names()).pvcs).toContain('web1-disk1');
}, 120_000);
