/**
 * Issue #29 item 3, per move: a move's `compression` is one MigrationPolicy on the move's TARGET cluster
 * selecting `kubernetes.io/metadata.name: <target namespace>` and the VMI labels the user names
 * (docs/compression.md has the KubeVirt code: only the target's virt-controller matches a policy in a
 * decentralized migration, and the sync controller copies the result to the source VMI).
 *
 * `rank` below is a model of KubeVirt's policy ranking, written from
 * pkg/virt-controller/watch/migration/migrationpolicy.go at v1.9.0 (@79d34c17, same on main @d923fdb8):
 * `countMatchingLabels` :84-122 (nil selectors: no match :88-90; every selector label must be present
 * with its value :92-103; the VMI selector is counted only when the VMI has labels :109-111, and so is the
 * namespace selector, whose guard reads the VMI's labels too :113-115), the score order :20-33 (total,
 * then VMI labels), `matchPolicy` :44-80 (best score, ties to the lexicographically first name).
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { FleetDocument } from '../src/fleet/schema';
import { migrationPolicyVerdict } from '../src/kubevirt/admission';
import { parseKubevirtVersion } from '../src/kubevirt/versions';
import { movesReport, renderMoves } from '../src/forklift/report';
import { movePolicyName } from '../src/forklift/compression';
import { movesFleet, mutate, synthProblemsOf } from './support/fleets';
import { validateObject } from './support/schemas';

type Obj = Record<string, any>;
type Labels = Record<string, string> | undefined;

// ---- the ranking model (migrationpolicy.go v1.9.0, lines in the header) ----
interface Score { vmi: number; ns: number }
function countMatchingLabels(spec: Obj, vmiLabels: Labels, nsLabels: Labels): Score | undefined {
  const sel = spec.selectors;
  if (sel === undefined || sel === null) return undefined; // :88-90
  let matches = true;
  const count = (policy: Record<string, string>, labels: Labels): number => { // :92-103
    let n = 0;
    for (const [k, v] of Object.entries(policy)) {
      if (labels?.[k] === v) {n++;}
      else { matches = false; return n; }
    }
    return n;
  };
  let vmi = 0;
  let ns = 0;
  if (sel.virtualMachineInstanceSelector && vmiLabels) vmi = count(sel.virtualMachineInstanceSelector, vmiLabels); // :109-111
  if (matches && sel.namespaceSelector && vmiLabels) ns = count(sel.namespaceSelector, nsLabels); // :113-115 (sic: vmiLabels)
  return matches ? { vmi, ns } : undefined;
}
const greater = (a: Score, b: Score): boolean => (a.vmi + a.ns === b.vmi + b.ns ? a.vmi > b.vmi : a.vmi + a.ns > b.vmi + b.ns); // :20-29
const equal = (a: Score, b: Score): boolean => a.vmi === b.vmi && a.ns === b.ns;
/** The policy KubeVirt applies to a VMI, or undefined (matchPolicy :44-80). */
function rank(policies: readonly Obj[], vmiLabels: Labels, namespace: string): Obj | undefined {
  const nsLabels = { 'kubernetes.io/metadata.name': namespace };
  let best: Score = { vmi: 0, ns: 0 };
  let matching: Obj[] = [];
  for (const p of policies) {
    const s = countMatchingLabels(p.spec, vmiLabels, nsLabels);
    if (!s || (!equal(s, best) && !greater(s, best))) continue; // :51 lessThan
    if (greater(s, best)) { best = s; matching = [p]; } else {matching.push(p);}
  }
  return [...matching].sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))[0]; // :67-79
}
const compressionFor = (policies: readonly Obj[], vmiLabels: Labels, namespace: string): string | undefined =>
  rank(policies, vmiLabels, namespace)?.spec.experimental?.compression;

// ---- fleets ----
const mv = (vm: string, from: string, to: string, extra: Record<string, unknown> = {}) => ({ vm, namespace: 'vms', from, to, batch: 'w1', ...extra });
const DB1 = { 'app': 'db', 'example.org/vm': 'db1' };

function fleet(moves: unknown[], opts: { version?: string; fleetCompression?: string; versions?: Record<string, string> } = {}): FleetDocument {
  return movesFleet(moves, (d) => {
    d.spec.kubevirt = { version: opts.version ?? '1.9.0' };
    if (opts.fleetCompression) d.spec.migrationPolicy = { compression: opts.fleetCompression };
    for (const c of d.spec.clusters) if (opts.versions?.[c.name]) c.kubevirt = { version: opts.versions[c.name] };
  });
}
const problems = synthProblemsOf;
const policiesOf = (r: ReturnType<typeof synthesizeFleet>, c: string): Obj[] => (r.objects.get(c) as Obj[]).filter((o) => o.kind === 'MigrationPolicy');
// virt-controller labels the target VMI before it matches (migration.go:1241-1244): never nil at match time
const atHandoff = (l: Record<string, string>) => ({ ...l, 'kubevirt.io/migrationTargetNodeName': 'node-1' });

describe('compression per move: one MigrationPolicy on the target cluster', () => {
  test('a move with compression and vmiLabels: the policy is in the target chart only, selects the target namespace and the labels, validates', () => {
    const r = synthesizeFleet(fleet([mv('db1', 'b', 'a', { compression: 'zstd', vmiLabels: DB1, targetNamespace: 'prod' })]));
    expect(policiesOf(r, 'b')).toEqual([]); // the source: its virt-controller matches no policy for a decentralized source
    expect(policiesOf(r, 'c')).toEqual([]);
    const [p, ...more] = policiesOf(r, 'a');
    expect(more).toEqual([]);
    expect(p.metadata).toEqual({ name: 'migration-mesh-test-move.prod.db1', labels: expect.any(Object) });
    expect(p.metadata.namespace).toBeUndefined();
    expect(p.spec).toEqual({
      selectors: { namespaceSelector: { 'kubernetes.io/metadata.name': 'prod' }, virtualMachineInstanceSelector: { 'app': 'db', 'example.org/vm': 'db1' } },
      experimental: { compression: 'zstd' },
    });
    expect(validateObject(p)).toEqual([]);
    expect(migrationPolicyVerdict({}, p.spec, parseKubevirtVersion('1.9.0')!, [])).toEqual([]);
  });

  test('ranking model: the move\'s policy beats the fleet-wide one for that VMI only; none per move leaves that VM uncompressed under a zstd fleet', () => {
    const r = synthesizeFleet(fleet([mv('db1', 'b', 'a', { compression: 'none', vmiLabels: DB1 })], { fleetCompression: 'zstd' }));
    const onA = policiesOf(r, 'a');
    expect(onA.map((p) => p.metadata.name)).toEqual(['migration-mesh-test-compression', 'migration-mesh-test-move.vms.db1']);
    // the moved VMI, as it is matched on the target (labels plus the hand-off label)
    expect(rank(onA, atHandoff(DB1), 'vms')!.metadata.name).toBe('migration-mesh-test-move.vms.db1');
    expect(compressionFor(onA, atHandoff(DB1), 'vms')).toBe('none');
    // other VMIs of that namespace lacking a label, and the same labels in another namespace: the fleet's zstd
    expect(compressionFor(onA, atHandoff({ app: 'db', 'example.org/vm': 'db2' }), 'vms')).toBe('zstd');
    expect(compressionFor(onA, atHandoff({ app: 'db' }), 'vms')).toBe('zstd');
    expect(compressionFor(onA, atHandoff({}), 'vms')).toBe('zstd');
    expect(compressionFor(onA, atHandoff(DB1), 'other')).toBe('zstd');
    // the source cluster has only the fleet-wide policy (it does not decide a cross-cluster migration)
    expect(policiesOf(r, 'b').map((p) => p.metadata.name)).toEqual(['migration-mesh-test-compression']);
    // a VMI with no labels at all (never at hand-off): the guards skip both selectors, the move's policy
    // ties at 0 and the name decides: ours sorts after the fleet-wide one, its prefix
    expect(rank(onA, undefined, 'vms')!.metadata.name).toBe('migration-mesh-test-compression');
    // the model can tell: named before the fleet-wide one, the move's policy would win that tie
    const renamed = onA.map((p) => (p.spec.selectors.virtualMachineInstanceSelector ? { ...p, metadata: { name: 'a-first' } } : p));
    expect(rank(renamed, undefined, 'vms')!.metadata.name).toBe('a-first');
  });

  test('without a fleet-wide policy, only the move\'s VMI gets compression; the other VMIs match no policy', () => {
    const r = synthesizeFleet(fleet([mv('db1', 'b', 'a', { compression: 'zstd', vmiLabels: DB1 }), mv('web1', 'c', 'a', { compression: 'zstd', vmiLabels: { app: 'web' } })]));
    const onA = policiesOf(r, 'a');
    expect(onA.map((p) => p.metadata.name)).toEqual(['migration-mesh-test-move.vms.db1', 'migration-mesh-test-move.vms.web1']);
    expect(compressionFor(onA, atHandoff(DB1), 'vms')).toBe('zstd');
    expect(compressionFor(onA, atHandoff({ app: 'web', tier: 'x' }), 'vms')).toBe('zstd');
    expect(rank(onA, atHandoff({ app: 'cache' }), 'vms')).toBeUndefined();
    for (const p of onA) expect(validateObject(p)).toEqual([]);
  });

  test('the longest names stay one DNS subdomain within 253 characters and apart from each other', () => {
    const l63 = (c: string) => c.repeat(63);
    const name = movePolicyName(l63('f'), l63('n'), l63('v'));
    expect(name.length).toBeLessThanOrEqual(253);
    expect(name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
    expect(movePolicyName('p', 'a-b', 'c')).not.toBe(movePolicyName('p', 'a', 'b-c'));
  });

  test('plan: the moves table shows each VM\'s compression and the policy that sets it', () => {
    const r = synthesizeFleet(fleet([mv('db1', 'b', 'a', { compression: 'none', vmiLabels: DB1 }), mv('web1', 'b', 'a')], { fleetCompression: 'zstd' }));
    const report = movesReport(r.forklift.plan!, r.forklift.warnings);
    expect(report.moves.map((m) => [m.vm, m.compression])).toEqual([
      ['db1', { value: 'none', policy: 'migration-mesh-test-move.vms.db1' }],
      ['web1', { value: 'zstd', policy: 'migration-mesh-test-compression' }],
    ]);
    const text = renderMoves(report);
    expect(text).toContain('COMPRESSION');
    expect(text).toMatch(/vms\/db1 .* none \(policy migration-mesh-test-move\.vms\.db1 on a\)/);
    // no compression anywhere: the table reads as before
    const plain = synthesizeFleet(fleet([mv('db1', 'b', 'a')]));
    expect(renderMoves(movesReport(plain.forklift.plan!))).not.toContain('COMPRESSION');
  });
});

describe('compression per move: refusals, all at once with codes and paths', () => {
  test('no labels, an old source, an old target, nested labels with other compression, one VM twice with other labels', () => {
    const p = problems(fleet([
      mv('db1', 'b', 'a', { compression: 'zstd' }), // [0] nothing to select by
      mv('web1', 'c', 'a', { compression: 'zstd', vmiLabels: { app: 'web' } }), // [1] source c is 1.8
      mv('app1', 'a', 'c', { compression: 'zstd', vmiLabels: { app: 'app' } }), // [2] target c is 1.8
      mv('db2', 'b', 'a', { compression: 'zstd', vmiLabels: { app: 'db' } }), // [3]
      mv('db3', 'b', 'a', { compression: 'none', vmiLabels: { app: 'db', tier: 'gold' }, batch: 'w2' }), // [4] holds [3]'s labels
      mv('db2', 'b', 'a', { compression: 'zstd', vmiLabels: { app: 'db', x: 'y' }, batch: 'w3' }), // [5] db2 again, other labels
    ], { versions: { c: '1.8' } }));
    expect(p.map((x) => `${x.code} ${x.path}`)).toEqual([
      'forklift/compression-no-selector spec.forklift.moves[0].vmiLabels',
      'forklift/compression-unsupported spec.forklift.moves[1].compression',
      'forklift/compression-unsupported spec.forklift.moves[2].compression',
      'forklift/compression-conflict spec.forklift.moves[4].vmiLabels',
      'forklift/compression-conflict spec.forklift.moves[5].vmiLabels',
    ]);
    expect(p[0].message).toContain('none naming the VM');
    expect(p[0].fix).toContain('vmiLabels');
    expect(p[1].message).toContain('source cluster c runs KubeVirt 1.8');
    expect(p[2].message).toContain('target cluster c runs KubeVirt 1.8');
    expect(p[1].message).toContain('1.9');
    expect(p[3].message).toContain('spec.forklift.moves[3] (vms/db2)');
    expect(p[3].message).toContain('none here, zstd there');
    expect(p[4].message).toContain('as spec.forklift.moves[3] does');
  });

  test('no conflict: nested labels with the same compression, disjoint label sets, other namespaces or clusters, one VM twice alike', () => {
    expect(problems(fleet([
      mv('db2', 'b', 'a', { compression: 'zstd', vmiLabels: { app: 'db' } }),
      mv('db3', 'b', 'a', { compression: 'zstd', vmiLabels: { app: 'db', tier: 'gold' }, batch: 'w2' }),
      mv('web1', 'b', 'a', { compression: 'none', vmiLabels: { app: 'web' } }),
      mv('db4', 'b', 'a', { compression: 'none', vmiLabels: { app: 'db' }, targetNamespace: 'other' }),
      mv('db5', 'a', 'c', { compression: 'none', vmiLabels: { app: 'db' } }),
      mv('db2', 'c', 'a', { compression: 'zstd', vmiLabels: { app: 'db' }, batch: 'w3' }),
    ]))).toEqual([]);
  });

  test('a Harvester target: refused, we emit no MigrationPolicy there', () => {
    const doc = mutate(fleet([mv('db1', 'b', 'a', { compression: 'zstd', vmiLabels: DB1 })]), (d) => {
      d.spec.datapath = 'direct';
      d.spec.clusters[0].harvester = { clusterNetwork: 'migration' };
      d.spec.forklift.providers.b.externalFeatureGates = true;
      d.spec.forklift.hub.cluster = 'hub';
      d.spec.forklift.providers.a = { url: 'https://api.a.example:6443', secret: 'a-provider', externalFeatureGates: true };
    });
    const p = problems(doc);
    expect(p.map((x) => `${x.code} ${x.path}`)).toContain('forklift/compression-harvester spec.forklift.moves[0].compression');
    expect(p.find((x) => x.code === 'forklift/compression-harvester')!.message).toContain('emit no MigrationPolicy on Harvester');
  });

  test('the fleet\'s zstd and a move into a Harvester cluster without its own compression: warned (it migrates uncompressed), nothing refused', () => {
    const harvesterTarget = (moves: unknown[], fleetCompression?: string) => mutate(fleet(moves, { fleetCompression }), (d) => {
      d.spec.datapath = 'direct';
      d.spec.clusters[0].harvester = { clusterNetwork: 'migration' };
      d.spec.forklift.providers.b.externalFeatureGates = true;
      d.spec.forklift.hub.cluster = 'hub';
      d.spec.forklift.providers.a = { url: 'https://api.a.example:6443', secret: 'a-provider', externalFeatureGates: true };
    });
    const warned = (doc: unknown) => synthesizeFleet(doc as FleetDocument, { render: false }).forklift.warnings
      .filter((w) => w.code === 'forklift/compression-uncovered').map((w) => w.path);
    // moves[0] b -> a (Harvester): uncompressed; moves[1] a -> b: b has the fleet's policy
    const doc = harvesterTarget([mv('db1', 'b', 'a'), mv('web1', 'a', 'b', { batch: 'w2' })], 'zstd');
    expect(problems(doc)).toEqual([]);
    expect(warned(doc)).toEqual(['spec.forklift.moves[0].to']);
    expect(synthesizeFleet(doc, { render: false }).forklift.warnings.find((w) => w.code === 'forklift/compression-uncovered')!.message)
      .toContain('vms/db1 moves into the Harvester cluster a uncompressed');
    expect(warned(harvesterTarget([mv('db1', 'b', 'a')]))).toEqual([]); // no fleet compression: nothing lost
    expect(warned(harvesterTarget([mv('db1', 'b', 'a')], 'none'))).toEqual([]);
  });

  test('vmiLabels are Kubernetes labels: a bad key, a bad value, a label KubeVirt sets per node, each at its path', () => {
    const p = problems(fleet([
      mv('db1', 'b', 'a', { compression: 'zstd', vmiLabels: { 'Bad_Prefix/x': 'a' } }),
      mv('db2', 'b', 'a', { compression: 'zstd', vmiLabels: { app: 'x'.repeat(64) } }),
      mv('db3', 'b', 'a', { compression: 'zstd', vmiLabels: { 'kubevirt.io/nodeName': 'n1' } }),
    ]));
    expect(p.map((x) => `${x.code} ${x.path}`)).toEqual([
      'schema-invalid spec.forklift.moves[0].vmiLabels.Bad_Prefix/x',
      'schema-invalid spec.forklift.moves[1].vmiLabels.app',
      'schema-invalid spec.forklift.moves[2].vmiLabels.kubevirt.io/nodeName',
    ]);
    expect(p[2].message).toContain('sets on the VMI itself');
  });
});
