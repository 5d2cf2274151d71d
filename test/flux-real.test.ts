/**
 * Flux applies the example GitOps fleet for real. Flux's own kustomize-controller and source-controller
 * (test/support/real-flux.ts) run on a hub API server and apply, through `spec.kubeConfig.secretRef`, to three
 * more real API servers: east, west and north of examples/gitops.fleet.yaml, each with kube-controller-manager,
 * kube-scheduler and kwok nodes (test/support/real-nodes.ts) so the gateway Deployments get Ready pods and the
 * gateway stage's `wait: true` means something. The clusters are separate API servers (on one etcd), not
 * namespaces of one: every cluster's tree uses the same namespaces and names.
 *
 * The committed tree (dist/gitops) reaches Flux as Flux users ship it without Git: pushed as an OCI artifact
 * (repository layout kept, so every `spec.path` is as generated) and pulled by an OCIRepository. Our
 * `_gitops/flux` Kustomizations are applied as generated, with one change: `sourceRef.kind` GitRepository ->
 * OCIRepository (the name `infra` stays). Intervals stay as generated (10m); a push is followed by a reconcile
 * request on the OCIRepository (`flux reconcile source oci`); kustomize-controller runs with
 * `--requeue-dependency=2s` (Flux's default 30s would add up to 30 s per stage, see docs/gitops.md).
 *
 * Checks: every stage of every cluster Ready; Flux's inventory of each stage is our stage's objects; on each
 * cluster the objects appear in stage order (creation resourceVersions from watches on the server), and the
 * network stage's first object appears only after every gateway Deployment is available; a second reconcile
 * writes nothing; a new synth's push prunes exactly what the synth removed; a stage the server refuses stops
 * the stages after it on that cluster, leaves the stage before it applied at the new revision, and no other
 * cluster is held back. Times from push to all-Ready are printed.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { createNamespaces, crdsFor, installCrds, objectKey, objectPath, platformNamespaces, serverSideApply, stagesOf, type KubeObject, type Stage } from './support/real-apply';
import { upstreamCrds } from './support/real-crds';
import { FLUX_NAMESPACE, RealFlux, ServerWatch } from './support/real-flux';
import { RealFleet, type RealCluster } from './support/real-kube';
import { RealNodes } from './support/real-nodes';
import { runCli } from './support/fleets';

const ROOT = path.resolve(__dirname, '..');
const FLEET = 'gitops';
const CLUSTERS = ['east', 'west', 'north'];
const KS_API = '/apis/kustomize.toolkit.fluxcd.io/v1';
const FLUX_NAME_LABEL = 'kustomize.toolkit.fluxcd.io/name';

interface Ks {
  metadata: { name: string; generation: number };
  spec: Record<string, any>;
  status?: {
    observedGeneration?: number; lastAppliedRevision?: string; lastAttemptedRevision?: string; lastHandledReconcileAt?: string;
    conditions?: Array<{ type: string; status: string; reason: string; message: string }>; inventory?: { entries: Array<{ id: string }> };
  };
}

let fleet: RealFleet;
let hub: RealCluster;
let flux: RealFlux;
const nodes: RealNodes[] = [];
const watches = new Map<string, ServerWatch>();
let work: string;
const times: string[] = [];

/** A copy of a synthesized fleet tree laid out as the user's repository: `<repo>/dist/gitops/...`. */
function repoOf(tree: string, name: string): string {
  const repo = path.join(work, name);
  fs.cpSync(tree, path.join(repo, 'dist', FLEET), { recursive: true });
  return repo;
}

/** A cluster's stages in rollout order, named by stage ('gateway', 'network', 'kubevirt'), from a repository. */
function stages(repo: string, cluster: string): Stage[] {
  const target = fleet.cluster(cluster);
  return stagesOf(path.join(repo, 'dist', FLEET, cluster), (d) => target.kubectl(['kustomize', d]))
    .map((s) => ({ ...s, name: s.name.replace(/^.*\/\d+-/, '') }));
}

/** Our generated Flux Kustomizations, the source adapted to the OCIRepository: the one change. */
function generatedKustomizations(repo: string): KubeObject[] {
  const dir = path.join(repo, 'dist', FLEET, '_gitops', 'flux');
  return fs.readdirSync(dir).filter((f) => f.startsWith('Kustomization.')).sort().map((f) => {
    const k = parse(fs.readFileSync(path.join(dir, f), 'utf8')) as KubeObject & { spec: { sourceRef: { kind: string } } };
    expect(k.spec.sourceRef).toEqual({ kind: 'GitRepository', name: 'infra' });
    return { ...k, spec: { ...k.spec, sourceRef: { ...k.spec.sourceRef, kind: 'OCIRepository' } } };
  });
}

async function kustomizations(): Promise<Ks[]> {
  const r = await hub.request('GET', `${KS_API}/namespaces/${FLUX_NAMESPACE}/kustomizations`);
  if (r.status !== 200) throw new Error(`list Kustomizations: HTTP ${r.status}`);
  return r.json.items as Ks[];
}

const ready = (k: Ks) => k.status?.conditions?.find((c) => c.type === 'Ready');
const isReadyAt = (k: Ks, digest: string) => ready(k)?.status === 'True' && k.status?.observedGeneration === k.metadata.generation
  && !!k.status?.lastAppliedRevision?.endsWith(digest);

/** Waits until `done` holds for every Kustomization; records when each first did (ms since `t0`). */
async function untilEvery(what: string, done: (k: Ks) => boolean, t0: number, ms = 120_000): Promise<Map<string, number>> {
  const at = new Map<string, number>();
  await flux.until(what, ms, async () => {
    const all = await kustomizations();
    for (const k of all) if (done(k) && !at.has(k.metadata.name)) at.set(k.metadata.name, Date.now() - t0);
    return all.length === CLUSTERS.length * 3 && all.every(done) ? true : undefined;
  }).catch(async (e) => {
    const state = (await kustomizations()).map((k) => `${k.metadata.name}: ${ready(k)?.reason} ${ready(k)?.message?.slice(0, 300)}`);
    throw new Error(`${(e as Error).message}\n${state.join('\n')}`);
  });
  return at;
}

/** Pushes a repository and asks the OCIRepository to pull it now; resolves the digest and when the push began. */
async function push(repo: string, revision: string): Promise<{ digest: string; t0: number }> {
  const t0 = Date.now();
  const digest = flux.push(repo, FLEET, 'latest', revision);
  await flux.requestReconcile(`/apis/source.toolkit.fluxcd.io/v1/namespaces/${FLUX_NAMESPACE}/ocirepositories/infra`);
  return { digest, t0 };
}

/** resourceVersion and uid of every object of a cluster's stages, read from the server (absent: undefined). */
async function live(cluster: string, objects: readonly KubeObject[]): Promise<Map<string, { rv: string; uid: string; object: KubeObject } | undefined>> {
  const target = fleet.cluster(cluster);
  const out = new Map<string, { rv: string; uid: string; object: KubeObject } | undefined>();
  for (const o of objects) {
    const r = await target.request('GET', await objectPath(target, o));
    out.set(objectKey(o), r.status === 200 ? { rv: r.json.metadata.resourceVersion, uid: r.json.metadata.uid, object: r.json } : undefined);
  }
  return out;
}

beforeAll(async () => {
  fleet = await RealFleet.start(['hub', ...CLUSTERS]);
  hub = fleet.cluster('hub');
  work = fs.mkdtempSync(path.join(fleet.dir, 'flux-'));
  const first = repoOf(path.join(ROOT, 'dist', FLEET), 'repo-v1');
  const crds = upstreamCrds().map((c) => c.crd);
  await Promise.all(CLUSTERS.map(async (name, i) => {
    const target = fleet.cluster(name);
    // two nodes: a gateway's replicas must land on different nodes (required pod anti-affinity)
    nodes.push(await RealNodes.start(target, { count: 2, podCidr: `127.1.${40 + i}.0/24` }));
    const all = stages(first, name).flatMap((s) => s.objects);
    await installCrds(target, crdsFor(all, crds));
    await createNamespaces(target, platformNamespaces(all));
    watches.set(name, await ServerWatch.start(target, all, FLUX_NAME_LABEL));
  }));
  flux = await RealFlux.start(hub, { requeueDependency: '2s' });
  for (const name of CLUSTERS) await flux.kubeconfigSecret(`${name}-kubeconfig`, fleet.cluster(name));
}, 300_000);

afterAll(async () => {
  if (times.length) console.log(`Flux on real API servers (${CLUSTERS.length} clusters):\n  ${times.join('\n  ')}`);
  for (const w of watches.values()) w.stop();
  await flux?.stop();
  await Promise.all(nodes.map((n) => n.stop()));
  await fleet?.stop();
}, 60_000);

let v1: string;
let digest1: string;

test('the committed tree, pushed: every stage of every cluster Ready, objects created stage by stage, the network stage only after the gateways are available', async () => {
  v1 = path.join(work, 'repo-v1');
  // the management cluster's wiring first (source and our Kustomizations, nothing to pull yet), then the push
  await flux.ociRepository('infra', FLEET, 'latest');
  for (const k of generatedKustomizations(v1)) await serverSideApply(hub, k, 'kubectl');
  const { digest, t0 } = await push(v1, 'main@sha1:1111111111111111111111111111111111111111');
  digest1 = digest;
  const at = await untilEvery('every Kustomization Ready at the pushed revision', (k) => isReadyAt(k, digest), t0);
  times.push(`push -> all ${at.size} stages Ready: ${(Math.max(...at.values()) / 1000).toFixed(1)} s (${[...at].map(([n, ms]) => `${n.slice(FLEET.length + 1)} ${(ms / 1000).toFixed(1)}`).join(', ')})`);

  const ks = new Map((await kustomizations()).map((k) => [k.metadata.name, k]));
  for (const cluster of CLUSTERS) {
    const created = watches.get(cluster)!.created();
    const byStage = stages(v1, cluster);
    expect(byStage.map((s) => s.name)).toEqual(['gateway', 'network', 'kubevirt']);
    for (const s of byStage) {
      const name = `${FLEET}-${cluster}-${s.name}`;
      // Flux's inventory of the stage is exactly our stage's objects (ids: namespace_name_group_Kind)
      const ids = s.objects.map((o) => `${o.metadata.namespace ?? ''}_${o.metadata.name}_${o.apiVersion.includes('/') ? o.apiVersion.split('/')[0] : ''}_${o.kind}`);
      expect(ks.get(name)!.status!.inventory!.entries.map((e) => e.id).sort()).toEqual(ids.sort());
      // every object appeared on the server, labelled with the Kustomization of its stage
      const seen = watches.get(cluster)!.events.filter((e) => e.type === 'ADDED');
      const labelOf = (key: string) => (seen.find((e) => e.key === key)?.object.metadata.labels as Record<string, string> | undefined)?.[FLUX_NAME_LABEL];
      for (const o of s.objects) expect({ o: objectKey(o), by: labelOf(objectKey(o)) }).toEqual({ o: objectKey(o), by: name });
      // and applied server-side, by kustomize-controller's field manager
      type Entry = { manager: string; operation: string };
      const managers = (key: string) => ((seen.find((e) => e.key === key)?.object.metadata.managedFields ?? []) as Entry[]).map((m) => `${m.manager}/${m.operation}`);
      for (const o of s.objects) expect(managers(objectKey(o))).toContain('kustomize-controller/Apply');
    }
    // creation order follows the stages: the last object of a stage is created before the first of the next
    const rvs = byStage.map((s) => s.objects.map((o) => created.get(objectKey(o))!));
    const first = (i: number) => rvs[i].reduce((a, b) => (a < b ? a : b));
    const last = (i: number) => rvs[i].reduce((a, b) => (a > b ? a : b));
    for (let i = 1; i < rvs.length; i++) {
      const stage = byStage[i].name;
      expect({ cluster, stage, createdAfterThePreviousStage: first(i) > last(i - 1) }).toEqual({ cluster, stage, createdAfterThePreviousStage: true });
    }
    // `wait: true` on the gateway stage: each gateway Deployment was available before the network stage began
    const gateways = byStage[0].objects.filter((o) => o.kind === 'Deployment');
    expect(gateways.length).toBeGreaterThan(0);
    for (const d of gateways) {
      const available = watches.get(cluster)!.events.find((e) => e.key === objectKey(d) && availableNow(e.object));
      expect({ deployment: objectKey(d), availableBeforeNetwork: !!available && available.rv < first(1) })
        .toEqual({ deployment: objectKey(d), availableBeforeNetwork: true });
    }
  }
}, 180_000);

function availableNow(d: KubeObject): boolean {
  const spec = d.spec as { replicas?: number };
  const status = (d.status ?? {}) as { availableReplicas?: number; updatedReplicas?: number; observedGeneration?: number };
  const want = spec.replicas ?? 1;
  const generation = Number((d.metadata as { generation?: number }).generation ?? 0);
  return status.availableReplicas === want && status.updatedReplicas === want && (status.observedGeneration ?? 0) >= generation;
}

test('a second reconcile of every stage writes nothing: every resourceVersion stays', async () => {
  const before = new Map<string, Awaited<ReturnType<typeof live>>>();
  for (const c of CLUSTERS) before.set(c, await live(c, stages(v1, c).flatMap((s) => s.objects)));
  const tokens = new Map<string, string>();
  for (const k of await kustomizations()) tokens.set(k.metadata.name, await flux.requestReconcile(`${KS_API}/namespaces/${FLUX_NAMESPACE}/kustomizations/${k.metadata.name}`));
  const t0 = Date.now();
  const at = await untilEvery('every Kustomization reconciled again', (k) => k.status?.lastHandledReconcileAt === tokens.get(k.metadata.name) && isReadyAt(k, digest1), t0);
  times.push(`second reconcile of all stages: ${(Math.max(...at.values()) / 1000).toFixed(1)} s`);
  for (const c of CLUSTERS) {
    const after = await live(c, stages(v1, c).flatMap((s) => s.objects));
    const changed = [...after].filter(([key, v]) => v?.rv !== before.get(c)!.get(key)?.rv).map(([key, v]) => `${c} ${key}: ${before.get(c)!.get(key)?.rv} -> ${v?.rv}`);
    expect(changed).toEqual([]);
  }
}, 180_000);

let v2: string;
let digest2: string;

test('a new synth that drops a gateway replica: its push prunes exactly what the synth removed', async () => {
  // the example fleet with east's gateway at one replica, synthesized with the example's ledger
  const src = path.join(work, 'fleet-v2');
  fs.mkdirSync(src);
  const doc = parse(fs.readFileSync(path.join(ROOT, 'examples', 'gitops.fleet.yaml'), 'utf8'));
  doc.spec.clusters.find((c: { name: string }) => c.name === 'east').gateway = { replicas: 1 };
  fs.writeFileSync(path.join(src, 'gitops.fleet.yaml'), stringify(doc));
  fs.copyFileSync(path.join(ROOT, 'examples', 'gitops.ledger.yaml'), path.join(src, 'gitops.ledger.yaml'));
  const synth = runCli(['synth', path.join(src, 'gitops.fleet.yaml'), '--out', path.join(src, 'dist'), '--no-svg']);
  expect(synth.err).toBe('');
  expect(synth.code).toBe(0);
  v2 = repoOf(path.join(src, 'dist', FLEET), 'repo-v2');

  const keys = (repo: string, c: string) => new Set(stages(repo, c).flatMap((s) => s.objects.map(objectKey)));
  const removed = new Map(CLUSTERS.map((c) => [c, [...keys(v1, c)].filter((k) => !keys(v2, c).has(k)).sort()]));
  expect(Object.fromEntries(removed)).toEqual({ east: ['Deployment/migration-mesh/migration-mesh-gateway-1'], west: [], north: [] });
  const mark = new Map(CLUSTERS.map((c) => [c, watches.get(c)!.events.length]));

  const { digest, t0 } = await push(v2, 'main@sha1:2222222222222222222222222222222222222222');
  digest2 = digest;
  const at = await untilEvery('every Kustomization Ready at the new synth', (k) => isReadyAt(k, digest), t0);
  times.push(`push of a new synth -> all Ready: ${(Math.max(...at.values()) / 1000).toFixed(1)} s`);
  for (const c of CLUSTERS) {
    const deleted = watches.get(c)!.events.slice(mark.get(c)).filter((e) => e.type === 'DELETED').map((e) => e.key).sort();
    expect({ cluster: c, deleted }).toEqual({ cluster: c, deleted: removed.get(c) });
    const now = await live(c, stages(v2, c).flatMap((s) => s.objects));
    expect([...now].filter(([, v]) => !v).map(([k]) => k)).toEqual([]);
  }
}, 180_000);

test('a stage the server refuses stops the stages after it on that cluster; the stage before it is applied, other clusters go on', async () => {
  // the next commit: every object of west marked, and west's routed NAD made invalid (spec.config must be a string)
  const v3 = repoOf(path.join(v2, 'dist', FLEET), 'repo-v3');
  const MARK = 'test.example/commit';
  const westDir = path.join(v3, 'dist', FLEET, 'west');
  for (const stageDir of fs.readdirSync(westDir).filter((d) => /^\d+-/.test(d))) {
    for (const f of fs.readdirSync(path.join(westDir, stageDir)).filter((x) => x !== 'kustomization.yaml')) {
      const file = path.join(westDir, stageDir, f);
      const o = parse(fs.readFileSync(file, 'utf8')) as KubeObject & { spec?: { config?: unknown } };
      o.metadata.annotations = { ...(o.metadata.annotations as object), [MARK]: '3' };
      if (o.kind === 'NetworkAttachmentDefinition' && stageDir === '20-network') o.spec = { ...o.spec, config: { cniVersion: '0.3.1' } };
      fs.writeFileSync(file, stringify(o));
    }
  }
  const west = stages(v2, 'west');
  const before = await live('west', west.flatMap((s) => s.objects));
  const { digest, t0 } = await push(v3, 'main@sha1:3333333333333333333333333333333333333333');
  const name = (s: string) => `${FLEET}-west-${s}`;
  const settled = (k: Ks) => (k.metadata.name === name('network')
    ? ready(k)?.status === 'False' && !!k.status?.lastAttemptedRevision?.endsWith(digest)
    : k.metadata.name === name('kubevirt') ? ready(k)?.reason === 'DependencyNotReady' && !!ready(k)?.message.includes(name('network'))
      : isReadyAt(k, digest));
  const at = await untilEvery('west refused at its network stage, everything else Ready', settled, t0);
  times.push(`push with west's network stage refused -> settled: ${(Math.max(...at.values()) / 1000).toFixed(1)} s`);
  // the kubevirt stage keeps waiting: two more dependency checks (2 s apart) and it still has not applied
  await new Promise((r) => setTimeout(r, 5000));

  const ks = new Map((await kustomizations()).map((k) => [k.metadata.name, k]));
  const network = ks.get(name('network'))!;
  // Flux names what the server refused, and keeps the last good revision as applied
  expect(ready(network)!.message).toMatch(/NetworkAttachmentDefinition\/kubevirt\/lm-migration/);
  expect(ready(network)!.message).toMatch(/spec\.config/);
  expect(network.status!.lastAppliedRevision).toMatch(new RegExp(`${digest2}$`));
  times.push(`west's network stage: ${ready(network)!.reason}: ${ready(network)!.message.slice(0, 400)}`);
  const kubevirt = ks.get(name('kubevirt'))!;
  expect(ready(kubevirt)!.reason).toBe('DependencyNotReady');
  expect(kubevirt.status!.lastAppliedRevision).toMatch(new RegExp(`${digest2}$`));

  const after = await live('west', west.flatMap((s) => s.objects));
  const marked = (key: string) => (after.get(key)!.object.metadata.annotations as Record<string, string> | undefined)?.[MARK];
  for (const s of west) {
    for (const o of s.objects) {
      const key = objectKey(o);
      // the gateway stage is at the new commit; the refused stage and the one after it are untouched
      if (s.name === 'gateway') expect({ key, mark: marked(key) }).toEqual({ key, mark: '3' });
      else expect({ key, rv: after.get(key)!.rv, mark: marked(key) }).toEqual({ key, rv: before.get(key)!.rv, mark: undefined });
    }
  }

  // the fix is the next push: every stage Ready again
  const fixed = await push(v2, 'main@sha1:4444444444444444444444444444444444444444');
  const back = await untilEvery('every Kustomization Ready after the fix', (k) => isReadyAt(k, fixed.digest), fixed.t0);
  times.push(`push of the fix -> all Ready: ${(Math.max(...back.values()) / 1000).toFixed(1)} s`);
}, 240_000);

test('a cluster that leaves the fleet loses its Kustomizations, not its objects: the KubeVirt CR and the NAD it names stay', async () => {
  // the parent sync of _gitops/flux prunes a removed cluster's Kustomizations; here they are deleted directly
  const west = stages(v2, 'west').flatMap((s) => s.objects);
  const before = await live('west', west);
  for (const s of ['gateway', 'network', 'kubevirt']) {
    const r = await hub.request('DELETE', `${KS_API}/namespaces/${FLUX_NAMESPACE}/kustomizations/${FLEET}-west-${s}`);
    expect(r.status).toBe(200);
  }
  await flux.until('west\'s Kustomizations gone (kustomize-controller\'s finalizer done)', 60_000,
    async () => ((await kustomizations()).some((k) => k.metadata.name.startsWith(`${FLEET}-west-`)) ? undefined : true));
  const after = await live('west', west);
  // as Argo CD's preserveResourcesOnDeletion: every object stays, the same object (uid) as before
  const gone = [...after].filter(([key, v]) => v?.uid !== before.get(key)?.uid).map(([key]) => key);
  expect(gone).toEqual([]);
}, 120_000);
