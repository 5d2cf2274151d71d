/**
 * Server-side apply of a synthesized tree to a real API server, stage by stage in the kustomization's rollout
 * order, with what a user's GitOps engine would see: what the server refused, what it pruned or rewrote, and
 * whether a second apply changed anything.
 *
 * A tree is a directory with a kustomization.yaml. Its `resources` are applied in their listed order: a file
 * joins the current stage, a directory with a kustomization of its own is a stage of its own (applied in turn,
 * recursively). A tree with `components` (the kustomize-patch delivery form) is rendered by the real
 * `kubectl kustomize` first. The namespaces the tree uses without creating them are the platform's
 * (`kubevirt`, `openshift-cnv`, ...): they are created first, as an installed platform would have them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import type { Crd } from './real-crds';
import { withEngineRequeue } from './kube-retry';
import type { Identity, RealCluster } from './real-kube';

export type KubeObject = {
  apiVersion: string; kind: string;
  metadata: { name: string; namespace?: string; resourceVersion?: string; [k: string]: unknown };
  [k: string]: unknown;
};
export const FIELD_MANAGER = 'migration-mesh';

/** One stage: the objects of a tree applied together, in order. */
export interface Stage { readonly name: string; readonly objects: KubeObject[] }

const readDocs = (file: string): KubeObject[] => parseAllDocuments(fs.readFileSync(file, 'utf8')).map((d) => d.toJS() as KubeObject).filter(Boolean);

/** The stages of a tree in rollout order (see the header); `render` runs `kubectl kustomize` for trees with components or patches. */
export function stagesOf(dir: string, render: (dir: string) => string, prefix = ''): Stage[] {
  const k = parse(fs.readFileSync(path.join(dir, 'kustomization.yaml'), 'utf8')) as { resources?: string[]; components?: string[]; patches?: unknown[] };
  const name = prefix || path.basename(dir);
  if (k.components?.length || k.patches?.length) return [{ name, objects: parseAllDocuments(render(dir)).map((d) => d.toJS() as KubeObject) }];
  const stages: Stage[] = [];
  let files: KubeObject[] = [];
  for (const r of k.resources ?? []) {
    const p = path.join(dir, r);
    if (fs.statSync(p).isDirectory()) {
      if (files.length) stages.push({ name, objects: files });
      files = [];
      stages.push(...stagesOf(p, render, `${name}/${r}`));
    } else {
      files.push(...readDocs(p));
    }
  }
  if (files.length) stages.push({ name, objects: files });
  return stages;
}

/** Namespaces the objects live in that no object of theirs creates (the platform's). */
export function platformNamespaces(objects: readonly KubeObject[]): string[] {
  const created = new Set(objects.filter((o) => o.kind === 'Namespace').map((o) => o.metadata.name));
  return [...new Set(objects.map((o) => o.metadata.namespace).filter((n): n is string => !!n && !created.has(n)))].sort();
}

/** The CRDs the objects need (by group and kind), from the upstream set. */
export function crdsFor(objects: readonly KubeObject[], crds: readonly Crd[]): Crd[] {
  const want = new Set(objects.map((o) => `${o.apiVersion.split('/')[0]}/${o.kind}`));
  return crds.filter((c) => want.has(`${c.spec.group}/${c.spec.names.kind}`));
}

type Kinds = Map<string, { plural: string; namespaced: boolean }>;
/** Discovery per cluster and group version, as last read. */
const discovery = new WeakMap<RealCluster, Map<string, Kinds>>();

async function discover(cluster: RealCluster, apiVersion: string): Promise<Kinds> {
  const r = await cluster.request('GET', apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`);
  if (r.status === 404) return new Map();
  if (r.status !== 200) throw new Error(`discovery of ${apiVersion}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  const list = r.json.resources as Array<{ name: string; kind: string; namespaced: boolean }>;
  return new Map(list.filter((x) => !x.name.includes('/')).map((x) => [x.kind, { plural: x.name, namespaced: x.namespaced }]));
}

/**
 * Where the API serves a kind: its plural and whether it is namespaced. Discovery is cached per cluster and group
 * version, and read again on a miss, as kubectl does: a CRD is Established a moment before discovery lists it, and a
 * group version cached before one of its CRDs was installed lacks that kind. A kind still missing after
 * DISCOVERY_WAIT_MS of this lookup (each object's own window, so the bound grows with the work) is an error, a
 * refusal (status 404: its CRD is not installed), which an engine's requeue does not cure.
 */
const DISCOVERY_WAIT_MS = 30_000;
async function resourceOf(cluster: RealCluster, apiVersion: string, kind: string): Promise<{ plural: string; namespaced: boolean }> {
  let byGv = discovery.get(cluster);
  if (!byGv) discovery.set(cluster, (byGv = new Map()));
  const deadline = Date.now() + DISCOVERY_WAIT_MS;
  for (let fresh = false; ; fresh = true) {
    if (fresh || !byGv.has(apiVersion)) byGv.set(apiVersion, await discover(cluster, apiVersion));
    const hit = byGv.get(apiVersion)!.get(kind);
    if (hit) return hit;
    if (Date.now() > deadline) throw Object.assign(new Error(`the API server serves no ${kind} in ${apiVersion} after ${DISCOVERY_WAIT_MS / 1000} s (is its CRD installed?)`), { status: 404 });
    if (fresh) await new Promise((r) => setTimeout(r, 100));
  }
}

/** The path of one object. */
export async function objectPath(cluster: RealCluster, o: KubeObject): Promise<string> {
  const { plural, namespaced } = await resourceOf(cluster, o.apiVersion, o.kind);
  const base = o.apiVersion.includes('/') ? `/apis/${o.apiVersion}` : `/api/${o.apiVersion}`;
  return `${base}${namespaced ? `/namespaces/${o.metadata.namespace ?? 'default'}` : ''}/${plural}/${o.metadata.name}`;
}

/**
 * Server-side apply of one object, as `kubectl apply --server-side` sends it (strict field validation), made as a
 * GitOps engine makes it: a failure of the server's (5xx, 429) or of the connection is requeued with backoff,
 * bounded in count and time; a refusal (another 4xx) is the answer at once (`withEngineRequeue`,
 * test/support/kube-retry.ts). The objects before it in its stage stay applied, so requeueing this one is what the
 * engine's next sync of the stage changes. Resolves the server's copy; rejects with an Error naming the object, the
 * HTTP status and the server's reason.
 */
export async function serverSideApply(cluster: RealCluster, o: KubeObject, manager = FIELD_MANAGER, opts: { force?: boolean; as?: Identity } = {})
  : Promise<KubeObject> {
  const query = `?fieldManager=${encodeURIComponent(manager)}&fieldValidation=Strict${opts.force ? '&force=true' : ''}`;
  return withEngineRequeue(`apply ${objectKey(o)} on ${cluster.name}`, async () => {
    const r = await cluster.request('PATCH', `${await objectPath(cluster, o)}${query}`, o, { contentType: 'application/apply-patch+yaml', as: opts.as });
    if (r.status !== 200 && r.status !== 201) throw Object.assign(new Error(`apply ${objectKey(o)}: HTTP ${r.status}: ${r.json?.message ?? r.text.slice(0, 500)}`), { status: r.status });
    return r.json as KubeObject;
  });
}

/**
 * How long one CRD may take to be Established once the ones before it are: each CRD has its own window, so the
 * bound grows with the number installed (it was 60 s for all of them together, whatever their number).
 */
const ESTABLISHED_WAIT_MS = 30_000;

/** Installs CRDs and waits until each is Established (ESTABLISHED_WAIT_MS for each, in turn). */
export async function installCrds(cluster: RealCluster, crds: readonly Crd[]): Promise<void> {
  await Promise.all(crds.map((c) => serverSideApply(cluster, c as unknown as KubeObject, 'crd-installer')));
  for (const c of crds) {
    const deadline = Date.now() + ESTABLISHED_WAIT_MS;
    for (;;) {
      const r = await cluster.request('GET', `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${c.metadata.name}`);
      const conditions = (r.json?.status?.conditions ?? []) as Array<{ type: string; status: string }>;
      if (conditions.some((x) => x.type === 'Established' && x.status === 'True')) break;
      if (Date.now() > deadline) throw new Error(`CRD ${c.metadata.name} not Established ${ESTABLISHED_WAIT_MS / 1000} s after the CRDs before it were`);
      await new Promise((res) => setTimeout(res, 50));
    }
  }
}

/** Creates namespaces as the platform would have them (admin, its own field manager). */
export async function createNamespaces(cluster: RealCluster, names: readonly string[]): Promise<void> {
  await Promise.all(names.map((n) => serverSideApply(cluster, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } }, 'platform-installer')));
}

/** Server-side applies one stage, object after object in order, and returns what the server holds. */
export async function applyStage(cluster: RealCluster, stage: Stage, manager = FIELD_MANAGER): Promise<KubeObject[]> {
  const out: KubeObject[] = [];
  for (const o of stage.objects) out.push(await serverSideApply(cluster, o, manager));
  return out;
}

export interface FieldDifference { readonly object: string; readonly path: string; readonly applied: unknown; readonly live: unknown }

const isObj = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);
const isZero = (x: unknown) => x === 0 || x === false || x === '' || (Array.isArray(x) && !x.length) || (isObj(x) && !Object.keys(x).length);

/**
 * Where `live` does not hold what was applied: a field missing (pruned) or with another value (rewritten).
 * Fields the server added (defaults, status, managedFields) are not differences; lists must match element by
 * element (an element may carry added defaults). A zero value (0, false, '', [], {}) that the server does not
 * write back is not a difference either: built-in types are Go structs whose zero fields are `omitempty`, so the
 * server holds exactly that value and omits it from JSON (a field the server really prunes is never a zero
 * value here: pruning drops fields whatever their value, and strict field validation refuses them first).
 */
export function appliedButNotLive(applied: unknown, live: unknown, at = ''): Array<{ path: string; applied: unknown; live: unknown }> {
  if (live === undefined && isZero(applied)) return [];
  if (isObj(applied)) {
    if (!isObj(live)) return [{ path: at || '.', applied, live }];
    return Object.entries(applied).flatMap(([k, v]) => appliedButNotLive(v, live[k], `${at}.${k}`));
  }
  if (Array.isArray(applied)) {
    if (!Array.isArray(live) || live.length !== applied.length) return [{ path: at, applied, live }];
    return applied.flatMap((v, i) => appliedButNotLive(v, live[i], `${at}[${i}]`));
  }
  return applied === live ? [] : [{ path: at, applied, live }];
}

export const objectKey = (o: KubeObject) => `${o.kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`;

/** Differences between each applied object and the server's copy of it (matched by kind, namespace and name). */
export function differences(applied: readonly KubeObject[], live: readonly KubeObject[]): FieldDifference[] {
  const byKey = new Map(live.map((o) => [objectKey(o), o]));
  return applied.flatMap((a) => {
    const l = byKey.get(objectKey(a));
    if (!l) return [{ object: objectKey(a), path: '.', applied: 'object', live: undefined }];
    return appliedButNotLive(a, l).map((d) => ({ object: objectKey(a), ...d }));
  });
}
