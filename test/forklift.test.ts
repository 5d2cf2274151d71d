import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { FleetValidationError } from '../src/base/errors';
import { FleetDocument } from '../src/fleet/schema';
import { loadFleetFile, loadLedgerFile, ledgerPathFor, parseFleetText } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { loadMovesFile, movesPathFor, parseMovesText } from '../src/forklift/moves';
import { planForklift } from '../src/forklift/plan';
import { ClusterFacts } from '../src/forklift/model';
import { featureGatesOf } from '../src/forklift/gates';
import { objectName } from '../src/forklift/names';
import { FORKLIFT_STAGES } from '../src/forklift/delivery';
import { validateObject } from './support/schemas';
import { baseFleet, mutate } from './support/fleets';

const root = path.join(__dirname, '..');
const metroFile = path.join(root, 'examples', 'metro-moves.fleet.yaml');
const metro = (): ReturnType<typeof synthesizeFleet> => {
  const doc = loadFleetFile(metroFile);
  return synthesizeFleet(doc, { ledger: loadLedgerFile(ledgerPathFor(metroFile)), moves: loadMovesFile(movesPathFor(metroFile), doc.metadata.name) });
};
const objectsOf = (r: ReturnType<typeof synthesizeFleet>): any[] => r.forklift.objects as any[];
const find = (r: ReturnType<typeof synthesizeFleet>, kind: string, name: string): any => objectsOf(r).find((o) => o.kind === kind && o.metadata.name === name);

/** A three-cluster fleet with a hub that is a member (a), providers for b and c, and the given moves. */
function fleet(forklift: Record<string, unknown> = {}, moves: unknown[] = [{ vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1' }], spec: Partial<FleetDocument['spec']> = {}): FleetDocument {
  return mutate(baseFleet({ clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3 }, { name: 'c', nodes: 3 }], ...spec }), (d) => {
    d.spec.forklift = {
      hub: { cluster: 'a', namespace: 'openshift-mtv' },
      providers: { b: { url: 'https://api.b.example:6443', secret: 'b-provider' }, c: { url: 'https://api.c.example:6443', secret: 'c-provider' } },
      storage: [{ source: 'ceph-rbd', storageClass: 'ceph-rbd' }],
      moves,
      ...forklift,
    };
  });
}

/** Synthesize and return the problems (every one, with its code), or [] when it succeeds. */
function refusal(doc: unknown): { code?: string; path: string; message: string; fix?: string }[] {
  try {
    synthesizeFleet(doc as FleetDocument);
    return [];
  } catch (e) {
    if (e instanceof FleetValidationError) return [...e.problems];
    throw e;
  }
}
const codes = (doc: unknown): string[] => refusal(doc).map((p) => p.code ?? p.path);

describe('the metro example: the right providers, maps and VMs per plan', () => {
  const r = metro();

  test('one Provider per remote cluster, by Secret name, none for the hub (Forklift\'s own host provider)', () => {
    const providers = objectsOf(r).filter((o) => o.kind === 'Provider');
    expect(providers.map((p) => [p.metadata.name, p.spec.type, p.spec.url, p.spec.secret])).toEqual([
      ['edge', 'openshift', 'https://api.edge.metro.example:6443', { name: 'edge-provider', namespace: 'openshift-mtv' }],
      ['west', 'openshift', 'https://api.west.metro.example:6443', { name: 'west-provider', namespace: 'openshift-mtv' }],
    ]);
    expect(JSON.stringify(objectsOf(r))).not.toMatch(/token/i);
    expect(find(r, 'ForkliftController', 'forklift-controller').spec).toEqual({ feature_ocp_live_migration: 'true' });
  });

  test('maps per ordered pair: pod to pod, each VM network to its counterpart, storage as mapped', () => {
    expect(objectsOf(r).filter((o) => o.kind === 'NetworkMap').map((o) => o.metadata.name)).toEqual(['east-to-edge', 'west-to-east']);
    const eastEdge = find(r, 'NetworkMap', 'east-to-edge').spec;
    expect(eastEdge.provider).toEqual({ source: { name: 'host', namespace: 'openshift-mtv' }, destination: { name: 'edge', namespace: 'openshift-mtv' } });
    expect(eastEdge.map).toEqual([
      { source: { type: 'pod' }, destination: { type: 'pod' } },
      { source: { name: 'db-net', namespace: 'vms' }, destination: { type: 'multus', name: 'db-net-edge', namespace: 'vms' } },
      { source: { name: 'vlan100', namespace: 'vms' }, destination: { type: 'multus', name: 'vlan100', namespace: 'vms' } },
    ]);
    const westEast = find(r, 'NetworkMap', 'west-to-east').spec;
    expect(westEast.map.map((m: any) => `${m.source.name ?? m.source.type}>${m.destination.name ?? m.destination.type}`)).toEqual(['pod>pod', 'db-net>db-net', 'vlan100>vlan100']);
    const storage = find(r, 'StorageMap', 'west-to-east').spec;
    expect(storage.provider.destination.name).toBe('host');
    expect(storage.map.map((m: any) => [m.source.name, m.destination.storageClass])).toEqual([['ceph-rbd', 'ceph-rbd'], ['local-lvm', 'ceph-rbd']]);
    // the west -> east override does not leak into east -> edge
    expect(find(r, 'StorageMap', 'east-to-edge').spec.map.map((m: any) => m.source.name)).toEqual(['ceph-rbd']);
  });

  test('one live Plan per batch and pair, with its VMs; a Migration only where the moves say start', () => {
    const plans = objectsOf(r).filter((o) => o.kind === 'Plan');
    const rows = plans.map((p) => [p.metadata.name, p.spec.type, p.spec.provider.source.name, p.spec.provider.destination.name,
      p.spec.targetNamespace, p.spec.vms]);
    expect(rows).toEqual([
      ['wave-1-west-to-east', 'live', 'west', 'host', 'vms', [{ name: 'db1', namespace: 'vms' }, { name: 'web1', namespace: 'vms' }]],
      ['wave-2-east-to-edge', 'live', 'host', 'edge', 'edge-vms', [{ name: 'cache1', namespace: 'vms' }]],
    ]);
    expect(plans[0].spec.map).toEqual({ network: { name: 'west-to-east', namespace: 'openshift-mtv' }, storage: { name: 'west-to-east', namespace: 'openshift-mtv' } });
    const migrations = objectsOf(r).filter((o) => o.kind === 'Migration');
    expect(migrations.map((m) => [m.metadata.name, m.spec.plan.name])).toEqual([['wave-1-west-to-east-run-1', 'wave-1-west-to-east']]);
  });

  test('rollout order: providers, maps, plans, migrations (kustomizations, Argo waves, Flux dependsOn)', () => {
    const kinds = objectsOf(r).map((o) => o.kind);
    expect(kinds).toEqual(['Provider', 'Provider', 'ForkliftController', 'NetworkMap', 'StorageMap', 'NetworkMap', 'StorageMap', 'Plan', 'Plan', 'Migration']);
    const waves = objectsOf(r).map((o) => Number(o.metadata.annotations['argocd.argoproj.io/sync-wave']));
    expect(waves).toEqual([...waves].sort((a, b) => a - b));
    expect(YAML.parse(r.files.get('_forklift/kustomization.yaml')!).resources).toEqual(FORKLIFT_STAGES.map((s) => s.dir));
    const flux = [...r.files.keys()].filter((f) => f.startsWith('_gitops/flux/') && f.includes('forklift')).map((f) => YAML.parse(r.files.get(f)!));
    const chain = Object.fromEntries(flux.map((k) => [k.metadata.name, k.spec.dependsOn?.[0]?.name]));
    expect(chain).toEqual({
      'metro-forklift-providers': undefined, 'metro-forklift-maps': 'metro-forklift-providers',
      'metro-forklift-plans': 'metro-forklift-maps', 'metro-forklift-migrations': 'metro-forklift-plans',
    });
    const app = YAML.parse(r.files.get('_gitops/argocd/Application.argocd.metro-forklift.yaml')!);
    expect([app.spec.source.path, app.spec.destination]).toEqual(['dist/metro/_forklift', { name: 'east' }]);
  });

  test('a Migration and the ForkliftController are never pruned or deleted from Git (a run in progress, the operator\'s CR)', () => {
    for (const o of objectsOf(r).filter((x) => ['Migration', 'ForkliftController'].includes(x.kind))) {
      expect(o.metadata.annotations['argocd.argoproj.io/sync-options']).toBe('Prune=false,Delete=false');
      expect(o.metadata.annotations['kustomize.toolkit.fluxcd.io/prune']).toBe('disabled');
    }
    expect(find(r, 'Plan', 'wave-1-west-to-east').metadata.annotations['argocd.argoproj.io/sync-options']).toBeUndefined();
  });

  test('drift helpers list exactly the VMs leaving each source cluster', () => {
    const west = YAML.parse(r.files.get('_forklift/drift/west/kustomization.yaml')!);
    expect(west.kind).toBe('Component');
    expect(west.patches.map((p: any) => `${p.target.namespace}/${p.target.name}`)).toEqual(['vms/db1', 'vms/web1']);
    expect(YAML.parse(west.patches[0].patch).metadata.annotations).toEqual({ 'kustomize.toolkit.fluxcd.io/reconcile': 'disabled' });
    const argo = JSON.parse(r.files.get('_forklift/drift/west/argocd-ignore-differences.json')!);
    expect(argo.map((x: any) => [x.kind, x.name, x.jsonPointers])).toEqual([
      ['VirtualMachine', 'db1', ['/spec/runStrategy', '/spec/running']], ['VirtualMachine', 'web1', ['/spec/runStrategy', '/spec/running']],
    ]);
    expect(r.files.has('_forklift/drift/edge/kustomization.yaml')).toBe(false); // nothing leaves edge
  });

  test('trust is managed by default between gateway clusters (no spec.trust): no trust warning; web1 and cache1 name no vmiLabels, so they are told they get their target\'s own migration settings (issue 51)', () => {
    expect(r.forklift.warnings.map((w) => `${w.code} ${w.path}`)).toEqual([
      'forklift/cross-cluster-unselected metro-moves.moves.yaml: moves[1].vmiLabels',
      'forklift/cross-cluster-unselected metro-moves.moves.yaml: moves[2].vmiLabels',
    ]);
  });
});

describe('schema validation against the vendored Forklift CRDs', () => {
  const r = metro();

  test('every emitted Forklift object validates (unknown fields included)', () => {
    const errors = objectsOf(r).flatMap((o) => validateObject(o).map((e) => `${o.kind}/${o.metadata.name}: ${e}`));
    expect(errors).toEqual([]);
    expect(objectsOf(r).length).toBe(10);
  });

  test('the check bites: an unknown field, a wrong enum and a missing required field are refused', () => {
    const plan = JSON.parse(JSON.stringify(find(r, 'Plan', 'wave-1-west-to-east')));
    plan.spec.type = 'teleport';
    plan.spec.liveness = true;
    expect(validateObject(plan).join('\n')).toMatch(/spec.type: must be equal to one of the allowed values/);
    expect(validateObject(plan).join('\n')).toMatch(/liveness/);
    const provider = JSON.parse(JSON.stringify(objectsOf(r).find((o) => o.kind === 'Provider')));
    delete provider.spec.secret;
    expect(validateObject(provider).join('\n')).toMatch(/secret/);
  });
});

describe('refusals: one per check, with a stable code, a path and a fix', () => {
  test('the two clusters must be in one migration group (datapath)', () => {
    const doc = fleet({}, undefined, { clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3, datapath: 'direct' }, { name: 'c', nodes: 3 }] });
    const p = refusal(doc);
    expect(p.map((x) => x.code)).toEqual(['forklift/not-reachable']);
    expect(p[0].path).toBe('spec.clusters[0].datapath');
    expect(p[0].message).toContain('b (direct) and a (gateway)');
    expect(p[0].fix).toContain('gateway: a, c; direct: b');
  });

  test('DecentralizedLiveMigration must be listed in the generated configuration of both clusters', () => {
    const facts: ClusterFacts[] = [
      { name: 'a', index: 0, datapath: 'gateway', featureGates: ['DecentralizedLiveMigration'], meshNads: [] },
      { name: 'b', index: 1, datapath: 'gateway', featureGates: [], meshNads: [] },
      { name: 'c', index: 2, datapath: 'gateway', featureGates: ['DecentralizedLiveMigration'], meshNads: [] },
    ];
    const r = planForklift(fleet(), facts);
    expect(r.problems.map((x) => [x.code, x.path])).toEqual([['forklift/feature-gate', 'spec.clusters[1]']]);
    expect(r.problems[0].fix).toContain('externalFeatureGates: true');
    const declared = planForklift(fleet({ providers: { b: { url: 'https://api.b.example:6443', secret: 'b', externalFeatureGates: true } } }), facts);
    expect(declared.problems).toEqual([]);
  });

  test('the gate check reads the generated objects: a Harvester cluster lists no gate, HCO lists it through the jsonpatch', () => {
    const hv = loadFleetFile(path.join(root, 'examples', 'harvester.fleet.yaml'));
    const hvr = synthesizeFleet(hv, { ledger: loadLedgerFile(ledgerPathFor(path.join(root, 'examples', 'harvester.fleet.yaml'))) });
    const [first] = hvr.objects.keys();
    expect(featureGatesOf(hvr.objects.get(first)!)).toEqual([]);
    const hco = loadFleetFile(path.join(root, 'examples', 'hco.fleet.yaml'));
    const hcor = synthesizeFleet(hco, { ledger: loadLedgerFile(ledgerPathFor(path.join(root, 'examples', 'hco.fleet.yaml'))) });
    const [c] = hcor.objects.keys();
    expect(hcor.objects.get(c)!.some((o) => o.kind === 'HyperConverged')).toBe(true);
    expect(featureGatesOf(hcor.objects.get(c)!)).toContain('DecentralizedLiveMigration');
    // end to end: moving to a Harvester cluster is refused for the gate
    const names = hv.spec.clusters.map((x) => x.name);
    const withMoves = mutate(hv, (d) => {
      d.spec.forklift = {
        hub: { cluster: names[0], namespace: 'openshift-mtv' },
        providers: { [names[1]]: { url: 'https://api.x.example:6443', secret: 'x' } },
        storage: [{ source: 'longhorn', storageClass: 'longhorn' }],
        moves: [{ vm: 'db1', namespace: 'vms', from: names[1], to: names[0], batch: 'w1' }],
      };
    });
    expect(codes(withMoves)).toContain('forklift/feature-gate');
  });

  test('trust exchange turned off for a pair is refused; absent it is managed between gateway clusters, a warning otherwise', () => {
    const facts: ClusterFacts[] = ['a', 'b', 'c'].map((n, i) => ({ name: n, index: i, datapath: 'gateway', featureGates: ['DecentralizedLiveMigration'], meshNads: [] }));
    const off = mutate(fleet(), (d) => { d.spec.trust = { exchange: false }; });
    expect(planForklift(off, facts).problems.map((x) => x.code)).toEqual(['forklift/trust-disabled']);
    const on = mutate(fleet(), (d) => { d.spec.trust = {}; });
    expect(planForklift(on, facts)).toMatchObject({ problems: [], warnings: [] });
    expect(planForklift(mutate(fleet(), (d) => { d.spec.trust = { enabled: false }; }), facts).problems.map((x) => x.code)).toEqual(['forklift/trust-disabled']);
    expect(planForklift(fleet(), facts)).toMatchObject({ problems: [], warnings: [] });
    const noTls = mutate(fleet(), (d) => { d.spec.migrationPolicy = { disableTLS: true }; });
    // the sync channel is mutual TLS even with disableTLS: trust stays managed by default
    expect(planForklift(noTls, facts)).toMatchObject({ problems: [], warnings: [] });
    const direct = facts.map((f) => ({ ...f, datapath: 'direct' as const }));
    // issue #30: direct (and native, Harvester) clusters exchange through their trust agents: managed too
    expect(planForklift(fleet(), direct)).toMatchObject({ problems: [], warnings: [] });
    expect(planForklift(off, direct).problems.map((x) => x.code)).toEqual(['forklift/trust-disabled']);
  });

  test('every mapped network must be declared or exist in the fleet; the migration networks are not VM networks', () => {
    const unknown = fleet({ networks: [{ name: 'vlan1', namespace: 'vms' }], networkMaps: [{ from: 'b', to: 'a', source: 'vms/vlan1', destination: 'vms/nowhere' }] });
    const p = refusal(unknown);
    expect(p.map((x) => [x.code, x.path])).toEqual([['forklift/network-unknown', 'spec.forklift.networkMaps[0].destination']]);
    const mesh = fleet({ networkMaps: [{ from: 'b', to: 'a', source: 'kubevirt/lm-migration', destination: 'pod' }] });
    expect(codes(mesh)).toEqual(['forklift/mesh-network']);
  });

  test('a network on the source with no counterpart is a warning (Forklift would refuse a VM using it)', () => {
    const doc = fleet({ networks: [{ name: 'only-b', namespace: 'vms', clusters: ['b'] }] });
    const r = synthesizeFleet(doc);
    expect(r.forklift.warnings.map((w) => w.code)).toContain('forklift/network-unmapped');
    expect((r.forklift.objects as any[]).find((o) => o.kind === 'NetworkMap').spec.map).toEqual([{ source: { type: 'pod' }, destination: { type: 'pod' } }]);
  });

  test('no VM moved twice in one batch, no two VMs landing on one name', () => {
    const twice = fleet({}, [
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1' },
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'c', batch: 'w1' },
    ]);
    const p = refusal(twice);
    expect(p.map((x) => [x.code, x.path])).toEqual([['forklift/moved-twice', 'spec.forklift.moves[1]']]);
    const collide = fleet({}, [
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1' },
      { vm: 'db1', namespace: 'vms', from: 'c', to: 'a', batch: 'w1' },
    ]);
    expect(codes(collide)).toEqual(['forklift/target-collision']);
    const laterBatch = fleet({}, [
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1' },
      { vm: 'db1', namespace: 'vms', from: 'a', to: 'b', batch: 'w2' },
    ]);
    expect(refusal(laterBatch)).toEqual([]);
  });

  test('moves Forklift/KubeVirt would fail (issue #23): a swap of same-named VMs in one batch; one VM in two started batches', () => {
    const swap = fleet({}, [
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1' },
      { vm: 'db1', namespace: 'vms', from: 'a', to: 'b', batch: 'w1' },
    ]);
    expect(refusal(swap).map((x) => [x.code, x.path])).toEqual([['forklift/swap', 'spec.forklift.moves[1]']]);
    const bothStarted = fleet({}, [
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1', start: true },
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'c', batch: 'w2', start: true },
    ]);
    const [p] = refusal(bothStarted);
    expect([p.code, p.path]).toEqual(['forklift/started-twice', 'spec.forklift.moves[1]']);
    expect(p.message).toMatch(/two migrations of one VM would run at once/);
    const chained = fleet({}, [
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1', start: true },
      { vm: 'db1', namespace: 'vms', from: 'a', to: 'c', batch: 'w2', start: true },
    ]);
    expect(codes(chained)).toEqual(['forklift/started-twice']);
    // started one after the other (the second not started yet) is the way to do it
    const staged = fleet({}, [
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1', start: true },
      { vm: 'db1', namespace: 'vms', from: 'a', to: 'c', batch: 'w2' },
    ]);
    expect(refusal(staged)).toEqual([]);
  });

  test('names within limits: VM, namespaces and batches are DNS-1123 labels; generated names stay at 63', () => {
    const long = fleet({}, [{ vm: 'x'.repeat(64), namespace: 'vms', from: 'b', to: 'a', batch: 'w1' }]);
    expect(refusal(long).map((x) => x.path)).toEqual(['spec.forklift.moves[0].vm']);
    const upper = fleet({}, [{ vm: 'db1', namespace: 'VMs', from: 'b', to: 'a', batch: 'Wave 1' }]);
    expect(refusal(upper).map((x) => x.path).sort()).toEqual(['spec.forklift.moves[0].batch', 'spec.forklift.moves[0].namespace']);
    const name = objectName('b'.repeat(40), 'c'.repeat(40), 'to', 'a'.repeat(40));
    expect(name.length).toBe(63);
    expect(name).toMatch(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    expect(objectName('b'.repeat(40), 'c'.repeat(40), 'to', 'a'.repeat(40))).toBe(name);
    expect(objectName('b'.repeat(40), 'c'.repeat(40), 'to', 'd'.repeat(40))).not.toBe(name);
  });

  test('providers: every cluster a move uses has one; none for a member hub; no unknown clusters', () => {
    expect(codes(fleet({ providers: { c: { url: 'https://api.c.example:6443', secret: 'c' } } }))).toEqual(['forklift/no-provider']);
    const hub = fleet({ providers: { a: { url: 'https://api.a.example:6443', secret: 'a' }, b: { url: 'https://api.b.example:6443', secret: 'b' } } });
    expect(codes(hub)).toEqual(['forklift/hub-provider']);
    const nonMember = fleet({ hub: { cluster: 'mgmt', namespace: 'openshift-mtv' }, providers: { a: { url: 'https://api.a.example:6443', secret: 'a' }, b: { url: 'https://api.b.example:6443', secret: 'b' } } });
    const r = synthesizeFleet(nonMember);
    expect((r.forklift.objects as any[]).find((o) => o.kind === 'Plan').spec.provider).toEqual({ source: { name: 'b', namespace: 'openshift-mtv' }, destination: { name: 'a', namespace: 'openshift-mtv' } });
    expect(codes(fleet({}, [{ vm: 'db1', namespace: 'vms', from: 'zz', to: 'a', batch: 'w1' }]))).toEqual(['forklift/unknown-cluster']);
    expect(codes(fleet({}, [{ vm: 'db1', namespace: 'vms', from: 'a', to: 'a', batch: 'w1' }]))).toEqual(['forklift/same-cluster']);
  });

  test('storage: every pair with moves needs a mapping; one entry per class and scope', () => {
    expect(codes(fleet({ storage: [] }))).toEqual(['forklift/storage-missing']);
    expect(codes(fleet({ storage: [{ source: 'x', storageClass: 'y' }, { source: 'x', storageClass: 'z' }] }))).toEqual(['forklift/storage-duplicate']);
  });

  test('start: moves of one Plan agree; live migration turned off on the controller is refused', () => {
    const mixed = fleet({}, [
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1', start: true },
      { vm: 'db2', namespace: 'vms', from: 'b', to: 'a', batch: 'w1' },
    ]);
    expect(codes(mixed)).toEqual(['forklift/start-mismatch']);
    expect(codes(fleet({ controller: { liveMigration: false } }))).toEqual(['forklift/live-disabled']);
  });

  test('every problem at once, nothing written', () => {
    const bad = fleet({ storage: [], providers: {} }, [
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1' },
      { vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1' },
    ]);
    expect(codes(bad).sort()).toEqual(['forklift/moved-twice', 'forklift/no-provider', 'forklift/storage-missing']);
    try { synthesizeFleet(bad); } catch (e) { expect((e as Error).message).toMatch(/\[forklift\/no-provider\] spec\.forklift\.providers: has no entry for b/); }
  });

  test('moves in the fleet and in a moves file at once are refused; a moves file for another fleet too', () => {
    const file = parseMovesText('apiVersion: migrationmesh.dev/v1alpha1\nkind: Moves\nmetadata: {name: test}\nmoves: []\n', 'test.moves.yaml', 'test');
    expect(planForklift(fleet(), [], file).problems.map((x) => x.code)).toContain('forklift/moves-twice');
    expect(() => parseMovesText('apiVersion: migrationmesh.dev/v1alpha1\nkind: Moves\nmetadata: {name: other}\nmoves: []\n', 'x.moves.yaml', 'test')).toThrow(/not the fleet 'test'/);
    expect(() => parseMovesText('apiVersion: migrationmesh.dev/v1alpha1\nkind: Moves\nmetadata: {name: test}\nmoves: [{vm: db1}]\n', 'x.moves.yaml', 'test')).toThrow(/moves\[0\]\.namespace/);
  });
});

describe('a fleet without spec.forklift is unchanged', () => {
  test('no _forklift files, no Forklift wiring', () => {
    const r = synthesizeFleet(baseFleet());
    expect([...r.files.keys()].filter((f) => f.includes('forklift'))).toEqual([]);
    expect(r.forklift.plan).toBeUndefined();
  });

  test('the fleet schema accepts spec.forklift written as YAML', () => {
    const text = fs.readFileSync(metroFile, 'utf8');
    expect(parseFleetText(text).spec.forklift?.hub).toEqual({ cluster: 'east', namespace: 'openshift-mtv' });
  });
});

test('the Forklift planning layer imports nothing from cdk8s', () => {
  const dir = path.join(root, 'src', 'forklift');
  for (const f of fs.readdirSync(dir)) {
    expect(`${f}: ${fs.readFileSync(path.join(dir, f), 'utf8')}`).not.toMatch(/from '(cdk8s|constructs)'|\.\.\/\.\.\/constructs|from '\.\.\/synth'/);
  }
});

describe('plan and diff show the moves', () => {
  const { main } = require('../cli/cli');
  const run = (argv: string[]): { code: number; out: string } => {
    let out = '';
    const code = main(argv, (s: string) => { out += s; }, (s: string) => { out += s; });
    return { code, out };
  };

  test('plan lists each VM with its batch, clusters, Plan and whether a Migration starts it', () => {
    const { code, out } = run(['plan', metroFile]);
    expect(code).toBe(0);
    expect(out).toMatch(/moves: 3 VMs, 2 started by a Migration; Forklift hub east \(fleet member, host provider\)/);
    expect(out).toMatch(/wave-2\s+vms\/cache1\s+east\s+edge\s+edge-vms\s+wave-2-east-to-edge\s+planned only/);
    const json = JSON.parse(run(['plan', metroFile, '--output', 'json']).out);
    expect(json.forklift.moves.map((m: any) => m.vm)).toEqual(['db1', 'web1', 'cache1']);
  });

  test('diff against the committed dist/ names the run a merge would start', () => {
    const dir = fs.mkdtempSync(path.join(require('os').tmpdir(), 'fk-diff-'));
    try {
      for (const f of ['metro-moves.fleet.yaml', 'metro-moves.ledger.yaml']) fs.copyFileSync(path.join(root, 'examples', f), path.join(dir, f));
      const moves = fs.readFileSync(path.join(root, 'examples', 'metro-moves.moves.yaml'), 'utf8').replace('batch: wave-2}', 'batch: wave-2, start: true}');
      fs.writeFileSync(path.join(dir, 'metro-moves.moves.yaml'), moves);
      const { code, out } = run(['diff', path.join(dir, 'metro-moves.fleet.yaml'), '--out', path.join(root, 'dist')]);
      expect(code).toBe(1);
      expect(out).toContain('run starts on merge: wave-2-east-to-edge-run-1 (plan wave-2-east-to-edge)');
      expect(out).toMatch(/changing the Forklift hub: .*1 run starts on merge/);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
