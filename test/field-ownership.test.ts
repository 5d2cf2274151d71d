/**
 * Merge with what the cluster already has (issue #12). KubeVirt's `featureGates` and
 * `customizeComponents.patches` are atomic lists, and the HCO jsonpatch annotation is one value: our
 * objects own them whole, so the fleet declares what else the cluster needs (`kubevirt.existing`) and
 * the output carries the union. Proved with the real `kubectl kustomize` on a realistic base, and with a
 * model of server-side apply field ownership (test/support/ssa-model.ts), which test/field-ownership.real.test.ts
 * shows agrees with a real kube-apiserver on each of these cases.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as YAML from 'yaml';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { FleetValidationError } from '../src/base/errors';
import { FleetDocument } from '../src/fleet/schema';
import { baseFleet, mutate } from './support/fleets';
import { validateObject } from './support/schemas';
import { SsaObject, leaves } from './support/ssa-model';
import { BASE_KUBEVIRT, CLUSTER_GATES, declaringFleet, HANDLER_PATCH, kvOf, VIRT_API_PATCH } from './support/field-ownership-cases';


describe('kubevirt.existing: the union in all three delivery forms', () => {
  test('partial KubeVirt (server-side apply): the cluster\'s gates and patches, then ours; per-cluster lists joined, duplicates once', () => {
    const r = synthesizeFleet(declaringFleet('kubevirt-cr'));
    const a = kvOf(r.objects.get('a')!);
    expect(a.spec.configuration.developerConfiguration.featureGates).toEqual([...CLUSTER_GATES, 'DecentralizedLiveMigration']);
    expect(a.spec.customizeComponents.patches.map((p: any) => p.resourceName)).toEqual(['virt-api', 'virt-handler', 'virt-synchronization-controller']);
    const b = kvOf(r.objects.get('b')!);
    expect(b.spec.configuration.developerConfiguration.featureGates).toEqual(['Snapshot', 'HotplugVolumes', 'DecentralizedLiveMigration']);
    expect(b.spec.customizeComponents.patches.map((p: any) => p.resourceName)).toEqual(['virt-api', 'virt-synchronization-controller']);
    for (const o of [a, b]) expect(validateObject(o)).toEqual([]);
  });

  test('a declared patch equal to ours and a declared gate equal to ours appear once', () => {
    const first = kvOf(synthesizeFleet(declaringFleet('kubevirt-cr')).objects.get('b')!);
    const ours = first.spec.customizeComponents.patches.at(-1);
    const doc = mutate(declaringFleet('kubevirt-cr'), (d) => {
      d.spec.kubevirt.existing.customizeComponentsPatches.push(ours);
      d.spec.kubevirt.existing.featureGates.push('DecentralizedLiveMigration');
    });
    const b = kvOf(synthesizeFleet(doc).objects.get('b')!);
    expect(b.spec.customizeComponents.patches.filter((p: any) => p.resourceName === 'virt-synchronization-controller')).toHaveLength(1);
    expect(b.spec.configuration.developerConfiguration.featureGates.filter((g: string) => g === 'DecentralizedLiveMigration')).toHaveLength(1);
  });

  test('nothing declared: output unchanged (only our gate and our patch)', () => {
    const kv = kvOf(synthesizeFleet(mutate(baseFleet(), (d) => { d.spec.syncControllers = { placement: 'workers' }; })).objects.get('a')!);
    expect(kv.spec.configuration.developerConfiguration.featureGates).toEqual(['DecentralizedLiveMigration']);
    expect(kv.spec.customizeComponents.patches).toHaveLength(1);
  });

  test('HCO: the annotation keeps the operations it already had, first; declared patches ride it too, declared gates (already in the list) are not appended again', () => {
    const existingOp = { op: 'add', path: '/spec/configuration/migrations/utilityVolumesTimeout', value: 300 };
    const doc = mutate(declaringFleet('hco'), (d) => { d.spec.kubevirt.existing.kubevirtJsonPatch = [existingOp]; });
    const hco = kvOf(synthesizeFleet(doc).objects.get('a')!);
    const ops = JSON.parse(hco.metadata.annotations['kubevirt.kubevirt.io/jsonpatch']);
    expect(ops[0]).toEqual(existingOp);
    const gates = ops.filter((o: any) => o.path === '/spec/configuration/developerConfiguration/featureGates/-').map((o: any) => o.value);
    // the declared gates are in the KubeVirt HCO builds already: a "/-" for them would list them twice
    expect(gates).toEqual(['DecentralizedLiveMigration']);
    const patches = ops.find((o: any) => o.path === '/spec/customizeComponents/patches').value;
    expect(patches.map((p: any) => p.resourceName)).toEqual(['virt-api', 'virt-handler', 'virt-synchronization-controller']);
    expect(validateObject(hco)).toEqual([]);
  });

  test('refused: a jsonpatch for a cluster not delivered through HCO, a patch that is not JSON (all at once)', () => {
    const doc = mutate(declaringFleet('kubevirt-cr'), (d) => {
      d.spec.kubevirt.existing.kubevirtJsonPatch = [{ op: 'add', path: '/spec/x', value: 1 }];
      d.spec.clusters[1].kubevirt = { existing: { customizeComponentsPatches: [{ ...VIRT_API_PATCH, patch: '{not json' }] } };
    });
    let err: FleetValidationError | undefined;
    try { synthesizeFleet(doc); } catch (e) { err = e as FleetValidationError; }
    expect(err).toBeInstanceOf(FleetValidationError);
    const paths = err!.problems.map((p) => p.path);
    expect(paths).toEqual(expect.arrayContaining(['spec.kubevirt.existing.kubevirtJsonPatch', 'spec.clusters[1].kubevirt.existing.customizeComponentsPatches[0].patch']));
  });
});

const hasKubectl = spawnSync('kubectl', ['version', '--client'], { encoding: 'utf8' }).status === 0;

describe('kustomize-patch: `kubectl kustomize` on a realistic base', () => {
  let tmp: string;
  beforeEach(() => { tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-kustomize-')); });
  afterEach(() => fs.rmSync(tmp, { recursive: true, force: true }));

  /** Write the cluster's component and an overlay over BASE_KUBEVIRT; return the built KubeVirt. */
  function build(doc: FleetDocument, cluster: string): any {
    const r = synthesizeFleet(doc);
    for (const [rel, text] of r.files) {
      if (!rel.startsWith(`${cluster}/components/`)) continue;
      fs.mkdirSync(path.dirname(path.join(tmp, rel)), { recursive: true });
      fs.writeFileSync(path.join(tmp, rel), text);
    }
    fs.mkdirSync(path.join(tmp, 'base'));
    fs.writeFileSync(path.join(tmp, 'base', 'kubevirt.yaml'), YAML.stringify(BASE_KUBEVIRT));
    fs.writeFileSync(path.join(tmp, 'base', 'kustomization.yaml'), YAML.stringify({ resources: ['kubevirt.yaml'] }));
    fs.writeFileSync(path.join(tmp, 'kustomization.yaml'), YAML.stringify({ resources: ['base'], components: [`${cluster}/components/kubevirt`] }));
    const out = spawnSync('kubectl', ['kustomize', tmp], { encoding: 'utf8' });
    expect(out.stderr).toBe('');
    expect(out.status).toBe(0);
    return YAML.parse(out.stdout);
  }

  (hasKubectl ? test : test.skip)('the lists are replaced whole: undeclared gates and patches are gone (what the docs warn about)', () => {
    const kv = build(mutate(baseFleet(), (d) => { d.spec.kubevirt = { configDelivery: 'kustomize-patch' }; d.spec.syncControllers = { placement: 'workers' }; }), 'a');
    expect(kv.spec.configuration.developerConfiguration.featureGates).toEqual(['DecentralizedLiveMigration']);
    expect(kv.spec.customizeComponents.patches.map((p: any) => p.resourceName)).toEqual(['virt-synchronization-controller']);
    // fields we do not set are untouched
    expect(kv.spec.imagePullPolicy).toBe('IfNotPresent');
    expect(kv.spec.configuration.evictionStrategy).toBe('LiveMigrate');
  });

  (hasKubectl ? test : test.skip)('declared in the fleet: every gate and patch of the base survives, ours added, other fields untouched', () => {
    const kv = build(declaringFleet('kustomize-patch'), 'a');
    expect(kv.spec.configuration.developerConfiguration.featureGates).toEqual([...CLUSTER_GATES, 'DecentralizedLiveMigration']);
    expect(kv.spec.customizeComponents.patches).toEqual([VIRT_API_PATCH, HANDLER_PATCH, expect.objectContaining({ resourceName: 'virt-synchronization-controller' })]);
    expect(kv.spec.configuration.migrations.parallelMigrationsPerCluster).toBe(10);
    expect(kv.spec.configuration.migrations.network).toBe('lm-migration');
    expect(kv.spec).toMatchObject({ imagePullPolicy: 'IfNotPresent', workloadUpdateStrategy: { workloadUpdateMethods: ['LiveMigrate'] }, certificateRotateStrategy: {} });
    expect(validateObject(kv)).toEqual([]);
  });
});

// ---------------------------------------------------------------------------------------------------
describe('server-side apply ownership (model of structured-merge-diff for atomic lists)', () => {
  const ADMIN = 'cluster-admin';
  const GITOPS = 'migration-mesh';

  function liveCluster(): SsaObject {
    const o = new SsaObject();
    expect(o.apply(ADMIN, JSON.parse(JSON.stringify(BASE_KUBEVIRT)))).toEqual([]);
    return o;
  }

  test('the model: an atomic list is one field; a differing value owned by another manager conflicts; force takes it over', () => {
    const o = new SsaObject();
    o.apply('x', { spec: { l: ['a', 'b'], s: 1 } });
    expect(o.apply('y', { spec: { l: ['c'] } }).map((c) => c.field)).toEqual(['["spec","l"]']);
    expect(o.live).toEqual({ spec: { l: ['a', 'b'], s: 1 } });
    o.apply('y', { spec: { l: ['c'] } }, { force: true });
    expect(o.live).toEqual({ spec: { l: ['c'], s: 1 } });
    expect(o.owned('x')).toEqual(['spec.s']);
    expect(o.owned('y')).toEqual(['spec.l']);
    // equal value: shared, no conflict; dropping a shared field keeps it
    o.apply('x', { spec: { l: ['c'], s: 1 } });
    expect(o.apply('y', {})).toEqual([]);
    expect(o.live).toEqual({ spec: { l: ['c'], s: 1 } });
    // dropping a field only you own removes it
    o.apply('x', { spec: { s: 1 } });
    expect(o.live).toEqual({ spec: { s: 1 } });
  });

  test('undeclared: our apply conflicts on exactly the two atomic lists, and forced (as a GitOps controller converges) it drops the cluster\'s gates and patches', () => {
    const ours = kvOf(synthesizeFleet(mutate(baseFleet(), (d) => { d.spec.syncControllers = { placement: 'workers' }; })).objects.get('a')!);
    const o = liveCluster();
    const conflicts = o.apply(GITOPS, { spec: ours.spec });
    expect(conflicts.map((c) => c.field).sort()).toEqual([
      '["spec","configuration","developerConfiguration","featureGates"]', '["spec","customizeComponents","patches"]',
    ]);
    o.apply(GITOPS, { spec: ours.spec }, { force: true });
    expect(o.live.spec).toMatchObject({ configuration: { developerConfiguration: { featureGates: ['DecentralizedLiveMigration'] } } });
  });

  test('declared: forced apply keeps every gate and patch of the cluster; re-apply is conflict-free; our fields are exactly the documented ones', () => {
    const ours = kvOf(synthesizeFleet(declaringFleet('kubevirt-cr')).objects.get('a')!);
    const o = liveCluster();
    o.apply(GITOPS, { spec: ours.spec }, { force: true });
    const live = o.live.spec as any;
    expect(live.configuration.developerConfiguration.featureGates).toEqual(expect.arrayContaining([...CLUSTER_GATES, 'DecentralizedLiveMigration']));
    expect(live.customizeComponents.patches).toEqual(expect.arrayContaining([VIRT_API_PATCH, HANDLER_PATCH]));
    expect(live.configuration.migrations.parallelMigrationsPerCluster).toBe(10);
    expect(live.imagePullPolicy).toBe('IfNotPresent');
    expect(o.apply(GITOPS, { spec: ours.spec })).toEqual([]);
    // the admin keeps what we do not set; we own the two lists whole
    expect(o.owned(ADMIN)).toEqual(expect.arrayContaining(['spec.imagePullPolicy', 'spec.configuration.migrations.parallelMigrationsPerCluster']));
    expect(o.owned(ADMIN)).not.toContain('spec.configuration.developerConfiguration.featureGates');
    const docs = fs.readFileSync(path.join(__dirname, '..', 'docs', 'field-ownership.md'), 'utf8');
    for (const f of o.owned(GITOPS)) expect(docs).toContain(`\`${f}\``);
  });

  test('HCO: our annotation key is one field; without declaring, the existing operations are lost; declared, they are kept', () => {
    const existingOp = { op: 'add', path: '/spec/configuration/migrations/utilityVolumesTimeout', value: 300 };
    const userHco = { metadata: { annotations: { 'kubevirt.kubevirt.io/jsonpatch': JSON.stringify([existingOp]), 'example.com/owner': 'platform' } } };
    const run = (doc: FleetDocument) => {
      const o = new SsaObject();
      o.apply(ADMIN, JSON.parse(JSON.stringify(userHco)));
      const ours = kvOf(synthesizeFleet(doc).objects.get('a')!);
      o.apply(GITOPS, { metadata: { annotations: ours.metadata.annotations }, spec: ours.spec }, { force: true });
      expect((o.live.metadata as any).annotations['example.com/owner']).toBe('platform');
      expect(o.owned(GITOPS)).toContain('metadata.annotations.kubevirt.kubevirt.io/jsonpatch');
      return JSON.parse((o.live.metadata as any).annotations['kubevirt.kubevirt.io/jsonpatch']);
    };
    expect(run(mutate(baseFleet(), (d) => { d.spec.kubevirt = { configDelivery: 'hco' }; }))).not.toContainEqual(existingOp);
    expect(run(mutate(declaringFleet('hco'), (d) => { d.spec.kubevirt.existing.kubevirtJsonPatch = [existingOp]; }))[0]).toEqual(existingOp);
  });

  test('leaves(): lists and scalars are leaves, empty objects too', () => {
    expect([...leaves({ a: { b: [1], c: {} }, d: 'x' }).keys()]).toEqual(['["a","b"]', '["a","c"]', '["d"]']);
  });
});
