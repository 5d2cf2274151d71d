/**
 * Issue 51 item 3: cross-cluster moves that finish. `spec.migrationPolicy.crossCluster.bandwidth` states what the
 * path between two clusters gives migrations; each move that names its VM's labels gets a MigrationPolicy on its
 * target whose bandwidth per migration and completion timeout follow from it, and validate warns about the moves
 * that get no such policy and cannot copy their memory once within the timeout they get (HCO's default is 20 s per
 * GiB since HCO PR #4426), and about VMs whose CPU limit turns multifd off.
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { FleetDocument } from '../src/fleet/schema';
import { movesFleet, mutate, synthProblemsOf } from './support/fleets';
import { validateObject } from './support/schemas';

type Obj = Record<string, any>;
const mv = (vm: string, from: string, to: string, extra: Record<string, unknown> = {}) => ({ vm, namespace: 'vms', from, to, batch: 'w1', ...extra });
const DB1 = { 'app': 'db', 'example.org/vm': 'db1' };

function fleet(moves: unknown[], mp: Record<string, unknown> | undefined, edit: (d: any) => void = () => undefined): FleetDocument {
  return movesFleet(moves, (d) => {
    d.spec.kubevirt = { version: '1.9.0' };
    if (mp) d.spec.migrationPolicy = mp;
    edit(d);
  });
}
const synth = (doc: FleetDocument) => synthesizeFleet(doc, { render: false });
const policiesOf = (r: ReturnType<typeof synth>, c: string): Obj[] => (r.objects.get(c) as Obj[]).filter((o) => o.kind === 'MigrationPolicy');
const warningsOf = (doc: FleetDocument) => synth(doc).forklift.warnings.filter((w) => /cross-cluster|cannot-finish|multifd/.test(w.code));
const kubevirtMigrations = (r: ReturnType<typeof synth>, c: string): Obj =>
  (r.objects.get(c) as Obj[]).find((o) => o.kind === 'KubeVirt')!.spec.configuration.migrations;

describe('the cross-cluster MigrationPolicy of a move', () => {
  test('a 1 Gbit/s path shared by KubeVirt\'s 5 parallel migrations: 24414Ki per migration, the timeout stays at KubeVirt\'s 150', () => {
    const r = synth(fleet([mv('db1', 'b', 'a', { vmiLabels: DB1 })], { crossCluster: { bandwidth: '125M' } }));
    const onA = policiesOf(r, 'a');
    expect(onA.map((p) => p.metadata.name)).toEqual(['migration-mesh-test-move.vms.db1']);
    expect(onA[0].spec).toEqual({
      selectors: { namespaceSelector: { 'kubernetes.io/metadata.name': 'vms' }, virtualMachineInstanceSelector: DB1 },
      // 125e6 / 5 = 25,000,000 B/s, down to whole KiB; 3 GiB at that rate is 129 s, below KubeVirt's own 150
      allowAutoConverge: true, allowPostCopy: false, bandwidthPerMigration: '24414Ki', completionTimeoutPerGiB: 150,
    });
    expect(validateObject(onA[0])).toEqual([]);
    expect(policiesOf(r, 'b')).toEqual([]); // on the target only: its virt-controller picks the policy
    expect(kubevirtMigrations(r, 'a')).not.toHaveProperty('crossCluster'); // not a KubeVirt CR field
  });

  test('a slow path: the timeout grows to three copies of a GiB at the bandwidth one migration gets; the fleet\'s parallelism divides the path', () => {
    const doc = fleet([mv('db1', 'b', 'a', { vmiLabels: DB1 })], { parallelMigrationsPerCluster: 2, crossCluster: { bandwidth: '10M', allowPostCopy: true, allowAutoConverge: false } });
    const [p] = policiesOf(synth(doc), 'a');
    // 10e6 / 2 = 5,000,000 B/s -> 4882Ki = 4,999,168 B/s; 3 * 2^30 / 4,999,168 = 644.4 -> 645
    expect(p.spec).toMatchObject({ bandwidthPerMigration: '4882Ki', completionTimeoutPerGiB: 645, allowPostCopy: true, allowAutoConverge: false });
  });

  test('a fleet timeout above the derived one is kept', () => {
    const [p] = policiesOf(synth(fleet([mv('db1', 'b', 'a', { vmiLabels: DB1 })], { completionTimeoutPerGiB: 900, crossCluster: { bandwidth: '125M' } })), 'a');
    expect(p.spec.completionTimeoutPerGiB).toBe(900);
  });

  test('the fleet\'s compression rides in the move\'s policy: KubeVirt applies only the best-ranked policy, so without it the VM would lose zstd', () => {
    const r = synth(fleet([mv('db1', 'b', 'a', { vmiLabels: DB1 }), mv('db2', 'b', 'a', { vmiLabels: { app: 'db2' }, compression: 'none' })], { compression: 'zstd', crossCluster: { bandwidth: '125M' } }));
    const byName = new Map(policiesOf(r, 'a').map((p) => [p.metadata.name, p.spec]));
    expect(byName.get('migration-mesh-test-compression')).toEqual({ selectors: {}, experimental: { compression: 'zstd' } });
    expect(byName.get('migration-mesh-test-move.vms.db1')).toMatchObject({ experimental: { compression: 'zstd' }, bandwidthPerMigration: '24414Ki' });
    expect(byName.get('migration-mesh-test-move.vms.db2')).toMatchObject({ experimental: { compression: 'none' }, bandwidthPerMigration: '24414Ki' });
  });

  test('without crossCluster, a move with labels and no compression gets no policy (as before)', () => {
    expect(policiesOf(synth(fleet([mv('db1', 'b', 'a', { vmiLabels: DB1 })], undefined)), 'a')).toEqual([]);
  });

  test('two moves whose label sets nest and whose policies would carry different compression are refused', () => {
    const p = synthProblemsOf(fleet([
      mv('db1', 'b', 'a', { vmiLabels: { app: 'db' } }),
      mv('db2', 'b', 'a', { vmiLabels: { app: 'db', tier: 'x' }, compression: 'zstd' }),
    ], { crossCluster: { bandwidth: '125M' } }));
    expect(p.map((x) => `${x.code} ${x.path}`)).toEqual(['forklift/compression-conflict spec.forklift.moves[1].vmiLabels']);
    expect(p[0].message).toContain('(zstd here, none asked there)');
  });
});

describe('validate: moves that cannot finish, and multifd off', () => {
  const hco = (d: any) => { d.spec.kubevirt = { version: '1.9.0', configDelivery: 'hco', namespace: 'openshift-cnv' }; };

  test('HCO\'s 20 s per GiB over a 100 Mbit/s path: a move without labels cannot finish, and the warning gives the numbers and the fix', () => {
    const w = warningsOf(fleet([mv('db1', 'b', 'a', { memory: '16Gi' })], { crossCluster: { bandwidth: '12500k' } }, hco));
    expect(w.map((x) => `${x.code} ${x.path}`)).toEqual(['forklift/move-cannot-finish spec.forklift.moves[0].vmiLabels']);
    // 12.5e6 / 5 = 2.5e6 B/s -> 2441Ki = 2,499,584 B/s: 430 s to copy a GiB once; 16 GiB: 320 s allowed, 6874 s needed
    expect(w[0].message).toContain('a aborts a migration after 20 s per GiB of memory, and at 20 Mbit/s a migration (5 sharing 100 Mbit/s) needs at least 430 s to copy one GiB once (16Gi: 320 s allowed, at least 6874 s needed)');
    expect(w[0].fix).toContain('add vmiLabels');
    expect(w[0].fix).toContain('completionTimeoutPerGiB to at least 1290');
  });

  test('the same move with labels gets the policy and no warning; under KubeVirt\'s 150 it is only told it gets the cluster\'s own settings', () => {
    expect(warningsOf(fleet([mv('db1', 'b', 'a', { vmiLabels: DB1, memory: '16Gi' })], { crossCluster: { bandwidth: '12500k' } }, hco))).toEqual([]);
    const w = warningsOf(fleet([mv('db1', 'b', 'a')], { crossCluster: { bandwidth: '125M' } }));
    expect(w.map((x) => x.code)).toEqual(['forklift/cross-cluster-unselected']);
  });

  test('the fleet\'s own bandwidthPerMigration caps what a move without labels gets', () => {
    const w = warningsOf(fleet([mv('db1', 'b', 'a')], { bandwidthPerMigration: '4Mi', crossCluster: { bandwidth: '125M' } }));
    // 4 MiB/s: 256 s per GiB > 150
    expect(w.map((x) => x.code)).toEqual(['forklift/move-cannot-finish']);
    expect(w[0].message).toContain('needs at least 256 s to copy one GiB once');
  });

  test('a Harvester target gets no policy: warned on the move\'s target', () => {
    const doc = mutate(fleet([mv('db1', 'b', 'a', { vmiLabels: DB1 })], { crossCluster: { bandwidth: '125M' } }), (d) => {
      d.spec.datapath = 'direct';
      d.spec.clusters[0].harvester = { clusterNetwork: 'migration' };
      d.spec.forklift.providers.b.externalFeatureGates = true;
      d.spec.forklift.hub.cluster = 'hub';
      d.spec.forklift.providers.a = { url: 'https://api.a.example:6443', secret: 'a-provider', externalFeatureGates: true };
    });
    expect(policiesOf(synth(doc), 'a')).toEqual([]);
    expect(warningsOf(doc).map((x) => `${x.code} ${x.path}`)).toEqual(['forklift/cross-cluster-unselected spec.forklift.moves[0].to']);
  });

  test('a VM with a CPU limit: multifd is off, said on the move', () => {
    const w = warningsOf(fleet([mv('db1', 'b', 'a', { cpuLimit: '4' })], undefined));
    expect(w.map((x) => `${x.code} ${x.path}`)).toEqual(['forklift/move-multifd-off spec.forklift.moves[0].cpuLimit']);
    expect(w[0].message).toContain('multifd');
  });

  test('bad quantities are refused by the schema with the field path', () => {
    const p = synthProblemsOf(fleet([mv('db1', 'b', 'a', { memory: 'lots', cpuLimit: 'four' })], { crossCluster: { bandwidth: 'fast' } }));
    expect(p.map((x) => x.path).sort()).toEqual(['spec.forklift.moves[0].cpuLimit', 'spec.forklift.moves[0].memory', 'spec.migrationPolicy.crossCluster.bandwidth']);
  });
});
