/**
 * Every tree in dist/ server-side applied to a real kube-apiserver (RBAC on, upstream CRDs with their CEL rules
 * installed), stage by stage in the kustomization's rollout order, as a GitOps engine would: each cluster
 * directory of every example fleet, the kustomize-patch form rendered by the real `kubectl kustomize` over
 * KubeVirt's own install CR, and the hub trees (`_forklift/`, `_gitops/argocd`, `_gitops/flux`).
 * Checks: the server refuses nothing; every object read back holds every field as applied (nothing pruned or
 * rewritten); a second apply changes nothing (every resourceVersion stays); a tree that creates primary-VM-network
 * Namespaces leaves the moved-VM guard (policy + binding over exactly those namespaces) and a pin-addresses Role in
 * each on the server, any other tree none of them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import {
  applyStage, createNamespaces, crdsFor, differences, FieldDifference, installCrds, KubeObject, objectKey, objectPath, platformNamespaces, Stage, stagesOf,
} from './support/real-apply';
import { Crd, fluxCrdCopies, kubevirtCrdWith, moduleDir, upstreamCrds } from './support/real-crds';
import { readyBoundMs, RealCluster, RealFleet } from './support/real-kube';
import { upstreamSchemaFile } from './support/schemas';
import { suiteTmpDir } from './support/tmp';

const DIST = path.resolve(__dirname, '..', 'dist');
const fleets = fs.readdirSync(DIST, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();

/** The trees of one fleet's output: [name, directory]. */
function treesOf(fleet: string): Array<[string, string]> {
  const dir = path.join(DIST, fleet);
  const trees: Array<[string, string]> = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true }).filter((x) => x.isDirectory()).sort((a, b) => a.name.localeCompare(b.name))) {
    if (e.name === '_gitops') {
      for (const g of fs.readdirSync(path.join(dir, e.name)).sort()) trees.push([`_gitops-${g}`, path.join(dir, e.name, g)]);
    } else if (fs.existsSync(path.join(dir, e.name, 'kustomization.yaml'))) {
      trees.push([e.name, path.join(dir, e.name)]);
    }
  }
  return trees;
}

/** The objects a tree's files hold (its YAML documents with a kind, kustomizations aside): the work its test waits on. */
function objectsIn(dir: string): number {
  let n = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) n += objectsIn(p);
    else if (/\.ya?ml$/.test(e.name) && e.name !== 'kustomization.yaml') n += (fs.readFileSync(p, 'utf8').match(/^kind: /gm) ?? []).length;
  }
  return n;
}

/**
 * Time bounds from the work, not from a quiet machine (issue 53 item 5): a tree's test applies each object three
 * times (the first apply and two reapplies) and installs its CRDs; an API server's readiness is shared between the
 * servers started side by side on two cores. A retried apply (test/support/kube-retry.ts) fits within these.
 */
const treeTimeoutMs = (dir: string) => 120_000 + 6_000 * objectsIn(dir);

/** A KubeVirt CR with the native datapath's fields is for a build that serves the proposed schema (KubeVirt PR #17922). */
function crdsServing(objects: readonly KubeObject[], all: Crd[]): Crd[] {
  const native = objects.some((o) => o.kind === 'KubeVirt' && JSON.stringify(o).includes('decentralizedLiveMigrationDatapath'));
  if (!native) return all;
  const proposed = kubevirtCrdWith(upstreamSchemaFile('kubevirt/proposed/kubevirt.schema.pr17922.yaml'));
  return all.map((c) => (c.metadata.name === proposed.metadata.name ? proposed : c));
}

/** KubeVirt's own install CR (manifests/generated/kubevirt-cr.yaml.in) in a namespace, as virt-operator's install leaves it. */
function installedKubevirtCr(namespace: string): string {
  const text = fs.readFileSync(path.join(moduleDir('kubevirt.io/kubevirt'), 'manifests', 'generated', 'kubevirt-cr.yaml.in'), 'utf8');
  return text.replace('{{.Namespace}}', namespace).replace(/\{\{if \.FeatureGates\}\}[\s\S]*?\{\{else\}\}( \[\])\{\{end\}\}/, '$1')
    .replace(/\{\{if \.Hypervisor\}\}[\s\S]*?\{\{end\}\}/, '').replace(/\{\{if \.InfraReplicas\}\}[\s\S]*?\{\{end\}\}/, '')
    .replace(/\{\{\.ImagePullPolicy\}\}/g, 'IfNotPresent');
}

/** A user's kustomization: KubeVirt's install CR as the base, our component on top (the kustomize-patch form). */
function userKustomization(tree: string, component: string, namespace: string): string {
  const dir = suiteTmpDir('mm-user-kustomization-');
  fs.writeFileSync(path.join(dir, 'kubevirt-cr.yaml'), installedKubevirtCr(namespace));
  fs.writeFileSync(path.join(dir, 'kustomization.yaml'), `apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - kubevirt-cr.yaml\ncomponents:\n  - ${path.relative(dir, path.join(tree, component))}\n`);
  return dir;
}

interface Outcome { stages: number; objects: number; differences: string[]; changedOnReapply: string[]; defaultsPersisted: string[]; guard: Guard }

/** The moved-VM guard and pin-addresses Roles (issue 40 item 4): what the tree's primary-network Namespaces call for, and what the server holds. */
interface Guard { want: string[]; held: string[] }

const GUARD = 'migration-mesh-moved-vm-halted';
const PIN_ROLE = 'migration-mesh-pin-addresses';

async function guardOf(cluster: RealCluster, objects: readonly KubeObject[]): Promise<Guard> {
  const served = objects.filter((o) => o.kind === 'Namespace' && (o.metadata.labels as Record<string, string> | undefined)?.['k8s.ovn.org/primary-user-defined-network'] !== undefined)
    .map((o) => o.metadata.name).sort();
  const want = served.length ? [`ValidatingAdmissionPolicy ${GUARD}`, `ValidatingAdmissionPolicyBinding ${GUARD} -> ${GUARD} in ${served.join(',')}`, ...served.map((ns) => `Role ${ns}/${PIN_ROLE}`)] : [];
  const held: string[] = [];
  const api = '/apis/admissionregistration.k8s.io/v1';
  const policy = await cluster.request('GET', `${api}/validatingadmissionpolicies/${GUARD}`);
  if (policy.status === 200) held.push(`ValidatingAdmissionPolicy ${GUARD}`);
  const binding = await cluster.request('GET', `${api}/validatingadmissionpolicybindings/${GUARD}`);
  if (binding.status === 200) {
    const values = (binding.json.spec.matchResources.namespaceSelector.matchExpressions as Array<{ values: string[] }>).flatMap((e) => e.values);
    held.push(`ValidatingAdmissionPolicyBinding ${GUARD} -> ${binding.json.spec.policyName} in ${values.join(',')}`);
  }
  const roles = await cluster.request('GET', `/apis/rbac.authorization.k8s.io/v1/roles?fieldSelector=metadata.name%3D${PIN_ROLE}`);
  held.push(...(roles.json.items as KubeObject[]).map((r) => `Role ${r.metadata.namespace}/${r.metadata.name}`).sort());
  return { want, held };
}

type Versions = Map<string, { rv: string; body: string }>;
/** What an object holds apart from its resourceVersion and the times in managedFields. */
const content = (o: KubeObject) => JSON.stringify({ ...o, metadata: { ...o.metadata, resourceVersion: undefined, managedFields: undefined } });

async function applyAll(cluster: RealCluster, stages: readonly Stage[]): Promise<Versions> {
  const out: Versions = new Map();
  for (const stage of stages) for (const o of await applyStage(cluster, stage)) out.set(`${stage.name}: ${objectKey(o)}`, { rv: String(o.metadata.resourceVersion), body: content(o) });
  return out;
}

/**
 * A second apply may write once without changing anything: defaults a CRD declares are applied when an object is
 * read from etcd and persisted on the next write (Kubernetes docs, "Defaulting" of CustomResourceDefinitions: "An
 * update request via the API is required to persist those defaults back into etcd"), e.g. Flux's
 * Kustomization `status.observedGeneration: -1`. Such a write must leave the object as it was; a third apply must
 * not write at all.
 */
async function reapply(cluster: RealCluster, stages: readonly Stage[], first: Versions)
  : Promise<Pick<Outcome, 'changedOnReapply' | 'defaultsPersisted'>> {
  const second = await applyAll(cluster, stages);
  const third = await applyAll(cluster, stages);
  const changed: string[] = [];
  const persisted: string[] = [];
  for (const [key, v1] of first) {
    const [v2, v3] = [second.get(key), third.get(key)];
    if (!v2 || !v3) changed.push(`${key}: missing on reapply`);
    else if (v2.body !== v1.body) changed.push(`${key}: changed by the second apply`);
    else if (v3.rv !== v2.rv) changed.push(`${key}: written again by the third apply (${v2.rv} -> ${v3.rv})`);
    else if (v2.rv !== v1.rv) persisted.push(key);
  }
  return { changedOnReapply: changed, defaultsPersisted: persisted };
}

async function applyTree(cluster: RealCluster, tree: string, crds: Crd[]): Promise<Outcome> {
  const render = (d: string) => cluster.kubectl(['kustomize', d]);
  const stages = stagesOf(tree, render);
  const componentDirs = fs.existsSync(path.join(tree, 'components')) ? fs.readdirSync(path.join(tree, 'components')) : [];
  for (const c of componentDirs) {
    const ns = (parse(fs.readFileSync(path.join(tree, 'components', c, 'kustomization.yaml'), 'utf8')).patches?.[0]?.target?.namespace) as string;
    stages.push(...stagesOf(userKustomization(tree, path.join('components', c), ns), render, `components/${c}`));
  }
  const all = stages.flatMap((s) => s.objects);
  await installCrds(cluster, crdsFor(all, crdsServing(all, crds)));
  await createNamespaces(cluster, platformNamespaces(all));
  const diffs: string[] = [];
  const first: Versions = new Map();
  for (const stage of stages) {
    const live = await applyStage(cluster, stage);
    const said = (d: FieldDifference) => `${stage.name}: ${d.object} ${d.path}: applied ${JSON.stringify(d.applied)}, server holds ${JSON.stringify(d.live)}`;
    diffs.push(...differences(stage.objects, live).map(said));
    for (const o of live) first.set(`${stage.name}: ${objectKey(o)}`, { rv: String(o.metadata.resourceVersion), body: content(o) });
  }
  applied.set(cluster, [...(applied.get(cluster) ?? []), ...all]);
  return { stages: stages.length, objects: all.length, differences: diffs, ...(await reapply(cluster, stages, first)), guard: await guardOf(cluster, all) };
}

/** What each server holds from the trees applied to it, so the next fleet finds it as it was. */
const applied = new Map<RealCluster, KubeObject[]>();

/**
 * Deletes what the trees applied, newest first, and waits until it is gone. Namespaces stay (without
 * kube-controller-manager a deleted namespace stays Terminating): the next fleet's Namespace objects are applied
 * over them, so its check reads back its own labels; nothing else of the previous fleet remains.
 */
async function clear(cluster: RealCluster): Promise<void> {
  for (const o of (applied.get(cluster) ?? []).filter((x) => x.kind !== 'Namespace').reverse()) {
    const p = await objectPath(cluster, o);
    const r = await cluster.request('DELETE', p);
    if (r.status !== 200 && r.status !== 404) throw new Error(`DELETE ${objectKey(o)}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  }
  applied.delete(cluster);
}

let crds: Crd[];
let real: RealFleet;
/** One API server per tree of the largest fleet; each fleet's trees take servers 0, 1, ... and leave them cleared. */
const servers = Math.max(...fleets.map((f) => treesOf(f).length));
beforeAll(async () => {
  crds = upstreamCrds().map((c) => c.crd);
  real = await RealFleet.start(Array.from({ length: servers }, (_, i) => `s${i}`));
}, readyBoundMs(servers) + 60_000);
afterAll(async () => { await real?.stop(); });

test('the Flux CRDs the unit lane validates against (test/fixtures/upstream/flux) are byte for byte those of the Flux modules whose controllers this lane runs', () => {
  const copies = fluxCrdCopies();
  expect(copies.length).toBe(3);
  for (const [name, committed, pinned] of copies) expect({ name, same: committed === pinned }).toEqual({ name, same: true });
});

describe.each(fleets)('dist/%s on real API servers', (fleet) => {
  const trees = treesOf(fleet);
  afterAll(async () => { await Promise.all(trees.map((_, i) => clear(real.cluster(`s${i}`)))); }, 30_000 + 2_000 * trees.reduce((n, [, dir]) => n + objectsIn(dir), 0));

  trees.forEach(([name, dir], i) => test(`${name}: applied in rollout order, nothing refused, pruned or rewritten; a second apply changes nothing`, async () => {
    const out = await applyTree(real.cluster(`s${i}`), dir, crds);
    expect(out.objects).toBeGreaterThan(0);
    expect(out.differences).toEqual([]);
    expect(out.changedOnReapply).toEqual([]);
    // only Flux's Kustomizations have read-time defaults (status.observedGeneration) among what we emit
    expect(out.defaultsPersisted.filter((k) => !/ Kustomization\//.test(k))).toEqual([]);
    // a tree that creates primary-network Namespaces brings the moved-VM guard bound to exactly them and a pin-addresses Role in each; any other, none
    expect(out.guard.held).toEqual(out.guard.want);
  }, treeTimeoutMs(dir)));
});
