/**
 * docs/field-ownership.md on a real API server: the cases test/field-ownership.test.ts proves with the SSA model
 * (test/support/ssa-model.ts), run step by step on the model and on a real kube-apiserver (KubeVirt's own CRD,
 * HCO's whole CRD), and compared at every step: the conflicts an apply meets (field by field), what the object
 * then holds, and which fields each manager owns. The model stays for its speed in the many-case tests; this file
 * is where it is shown to agree with the real server on every case it serves.
 *
 * Beyond the model: a KubeVirt CR written first by an operator's Update (not an apply, as `kubectl create` or an
 * operator's client writes it) and the HyperConverged with the defaults its CRD adds; our apply meets no conflict
 * on a field we do not set, and the feature gates end as the documented union.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { FleetDocument } from '../src/fleet/schema';
import { BASE_KUBEVIRT, CLUSTER_GATES, declaringFleet, HANDLER_PATCH, kvOf, VIRT_API_PATCH } from './support/field-ownership-cases';
import { baseFleet, mutate } from './support/fleets';
import { installCrds, objectPath, serverSideApply, type KubeObject } from './support/real-apply';
import { upstreamCrds } from './support/real-crds';
import { RealFleet, type RealCluster } from './support/real-kube';
import { SsaObject } from './support/ssa-model';

const ADMIN = 'cluster-admin';
const GITOPS = 'migration-mesh';
let real: RealFleet;
let c: RealCluster;
let n = 0;
/** The real server's conflicts at the last step (the model's are the same, or the step failed). */
let lastConflicts: string[] = [];

beforeAll(async () => {
  real = await RealFleet.start(['owners']);
  c = real.cluster('owners');
  const want = new Set(['kubevirts.kubevirt.io', 'hyperconvergeds.hco.kubevirt.io']);
  await installCrds(c, upstreamCrds().map((x) => x.crd).filter((x) => want.has(x.metadata.name)));
}, 120_000);
afterAll(async () => { await real?.stop(); });

/** A fresh namespace per case, so each case starts from nothing. */
async function freshNamespace(): Promise<string> {
  const ns = `case-${++n}`;
  await serverSideApply(c, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, 'platform-installer');
  return ns;
}

/** One apply on the real server: the conflicting fields ('.spec.x' as the server names them), or the object. */
async function realApply(manager: string, obj: KubeObject, force = false): Promise<{ conflicts: string[]; live?: any }> {
  try {
    return { conflicts: [], live: await serverSideApply(c, obj, manager, { force }) };
  } catch (e) {
    if ((e as { status?: number }).status !== 409) throw e;
    const r = await c.request('PATCH', `${await objectPath(c, obj)}?fieldManager=${manager}&fieldValidation=Strict`, obj, { contentType: 'application/apply-patch+yaml' });
    return { conflicts: (r.json.details.causes as Array<{ field: string }>).map((x) => x.field).sort() };
  }
}

/** The model's conflict fields in the server's notation. */
const asServer = (fields: string[]) => fields.map((f) => `.${(JSON.parse(f) as string[]).join('.')}`).sort();

/** Leaf fields a manager owns (managedFields, FieldsV1), in the model's dotted notation, under `spec` and `metadata.annotations`. */
function ownedBy(live: any, manager: string): string[] {
  const out: string[] = [];
  const walk = (node: Record<string, any>, at: string[]) => {
    const keys = Object.keys(node).filter((k) => k.startsWith('f:'));
    if (!keys.length && at.length) out.push(at.join('.'));
    for (const k of keys) walk(node[k], [...at, k.slice(2)]);
  };
  for (const m of (live.metadata.managedFields ?? []) as Array<{ manager: string; fieldsV1: Record<string, any> }>) {
    if (m.manager === manager) walk(m.fieldsV1, []);
  }
  return out.filter((f) => f.startsWith('spec.') || f.startsWith('metadata.annotations.')).sort();
}

/** The same step on the model and on the server: conflicts must be the same, and so must the owned fields afterwards. */
async function step(model: SsaObject, manager: string, obj: KubeObject, force = false): Promise<any> {
  const config = { metadata: obj.metadata.annotations ? { annotations: obj.metadata.annotations } : {}, spec: obj.spec };
  const expected = asServer(model.apply(manager, config as never, { force }).map((x) => x.field));
  const got = await realApply(manager, obj, force);
  expect(got.conflicts).toEqual(force ? [] : expected);
  lastConflicts = got.conflicts;
  const live = got.live ?? (await c.request('GET', await objectPath(c, obj))).json;
  for (const m of [ADMIN, GITOPS]) {
    const modelOwned = model.owned(m).filter((f) => f.startsWith('spec.') || f.startsWith('metadata.annotations.')).sort();
    expect([m, ownedBy(live, m)]).toEqual([m, modelOwned]);
  }
  return live;
}

const oursFor = (doc: FleetDocument, ns: string): KubeObject => {
  const o = kvOf(synthesizeFleet(doc).objects.get('a')!);
  const annotations = o.metadata.annotations ? { annotations: o.metadata.annotations } : {};
  return { apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.metadata.name, namespace: ns, ...annotations }, spec: o.spec };
};

test('undeclared: both meet conflicts on exactly the two atomic lists; forced, both drop the cluster\'s gates and patches', async () => {
  const ns = await freshNamespace();
  const model = new SsaObject();
  await step(model, ADMIN, { ...structuredClone(BASE_KUBEVIRT), metadata: { name: 'kubevirt', namespace: ns } });
  const ours = oursFor(mutate(baseFleet(), (d) => { d.spec.syncControllers = { placement: 'workers' }; }), ns);
  await step(model, GITOPS, ours);
  expect(lastConflicts).toEqual(['.spec.configuration.developerConfiguration.featureGates', '.spec.customizeComponents.patches']);
  const live = await step(model, GITOPS, ours, true);
  expect(live.spec.configuration.developerConfiguration.featureGates).toEqual(['DecentralizedLiveMigration']);
  expect(live.spec).toEqual(model.live.spec);
}, 60_000);

test('declared: forced apply keeps every gate and patch of the cluster on both; re-apply is conflict-free; the same owners', async () => {
  const ns = await freshNamespace();
  const model = new SsaObject();
  await step(model, ADMIN, { ...structuredClone(BASE_KUBEVIRT), metadata: { name: 'kubevirt', namespace: ns } });
  const ours = oursFor(declaringFleet('kubevirt-cr'), ns);
  const live = await step(model, GITOPS, ours, true);
  expect(live.spec.configuration.developerConfiguration.featureGates).toEqual(expect.arrayContaining([...CLUSTER_GATES, 'DecentralizedLiveMigration']));
  expect(live.spec.customizeComponents.patches).toEqual(expect.arrayContaining([VIRT_API_PATCH, HANDLER_PATCH]));
  expect(live.spec).toEqual(model.live.spec);
  await step(model, GITOPS, ours);
  expect(lastConflicts).toEqual([]);
  expect(ownedBy(live, GITOPS)).toContain('spec.configuration.developerConfiguration.featureGates');
  expect(ownedBy(live, ADMIN)).toEqual(expect.arrayContaining(['spec.imagePullPolicy', 'spec.configuration.migrations.parallelMigrationsPerCluster']));
  const docs = fs.readFileSync(path.join(__dirname, '..', 'docs', 'field-ownership.md'), 'utf8');
  for (const f of ownedBy(live, GITOPS)) expect(docs).toContain(`\`${f}\``);
}, 60_000);

test('written first by an operator\'s Update (not an apply): our declared apply meets no conflict outside the two lists, gates end as the union', async () => {
  const ns = await freshNamespace();
  const base = { ...structuredClone(BASE_KUBEVIRT), metadata: { name: 'kubevirt', namespace: ns } };
  const created = await c.request('POST', `/apis/kubevirt.io/v1/namespaces/${ns}/kubevirts?fieldManager=virt-operator-install`, base);
  expect(created.status).toBe(201);
  const ours = oursFor(declaringFleet('kubevirt-cr'), ns);
  const first = await realApply(GITOPS, ours);
  expect(first.conflicts).toEqual(['.spec.configuration.developerConfiguration.featureGates', '.spec.customizeComponents.patches']);
  const live = (await realApply(GITOPS, ours, true)).live;
  expect(live.spec.configuration.developerConfiguration.featureGates).toEqual([...CLUSTER_GATES, 'DecentralizedLiveMigration']);
  expect(live.spec.imagePullPolicy).toBe('IfNotPresent');
  expect(ownedBy(live, 'virt-operator-install')).toEqual(expect.arrayContaining(['spec.imagePullPolicy', 'spec.configuration.evictionStrategy']));
}, 60_000);

test('HCO: our annotation key is one field on both; without declaring, the existing operations are lost; declared, kept', async () => {
  const existingOp = { op: 'add', path: '/spec/configuration/migrations/utilityVolumesTimeout', value: 300 };
  const run = async (doc: FleetDocument) => {
    const ns = await freshNamespace();
    const model = new SsaObject();
    const user = { apiVersion: 'hco.kubevirt.io/v1beta1', kind: 'HyperConverged', metadata: { name: 'kubevirt-hyperconverged', namespace: ns,
      annotations: { 'kubevirt.kubevirt.io/jsonpatch': JSON.stringify([existingOp]), 'example.com/owner': 'platform' } }, spec: {} };
    await step(model, ADMIN, user);
    const live = await step(model, GITOPS, oursFor(doc, ns), true);
    expect(live.metadata.annotations['example.com/owner']).toBe('platform');
    expect(live.metadata.annotations).toEqual(model.live.metadata && (model.live.metadata as any).annotations);
    return JSON.parse(live.metadata.annotations['kubevirt.kubevirt.io/jsonpatch']);
  };
  expect(await run(mutate(baseFleet(), (d) => { d.spec.kubevirt = { configDelivery: 'hco' }; }))).not.toContainEqual(existingOp);
  expect((await run(mutate(declaringFleet('hco'), (d) => { d.spec.kubevirt.existing!.kubevirtJsonPatch = [existingOp]; })))[0]).toEqual(existingOp);
}, 60_000);
