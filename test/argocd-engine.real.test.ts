/**
 * Argo CD's own code runs our GitOps wiring: its sync engine runs our sync waves, its ApplicationSet controller
 * expands our ApplicationSet.
 *
 * gitops-engine, at the version Argo CD v3.2.12 ships, syncs one cluster of examples/gitops.fleet.yaml (synthesized
 * by the library, rendered by the real `kubectl kustomize` as Argo CD's repo server renders a kustomize directory)
 * into a real API server with kube-controller-manager, kube-scheduler and kwok nodes (test/support/real-nodes.ts), so
 * our gateway Deployments become Available as on a cluster. real/argo-bins/cmd/mm-argo-sync drives the operation step
 * by step as Argo CD's application controller does (its 2 s pause between waves, its built-in Lua health checks),
 * with the options our ApplicationSet's template gives every Application (ServerSideApply=true, automated prune).
 * No cert-manager runs: the test writes the gateway Certificate's Ready condition, as cert-manager would once issued.
 * Checks, from the API server's side (watches; order by etcd revision):
 *   - the waves are applied in our order, every object of wave n written before any of wave n+1; the gateway
 *     Deployments (wave 3) only once the Certificate (wave 2) is Ready; the NAD KubeVirt names (wave 4) only once
 *     every gateway Deployment is Available;
 *   - every object is server-side applied by Argo CD's field manager and keeps our annotations;
 *   - a second sync writes nothing;
 *   - a new synth with one gateway replica fewer, and the KubeVirt file gone: that Deployment alone is pruned, the
 *     KubeVirt CR stays (our Prune=false);
 *   - the prune guard (issue 50): a synth of examples/vm-networks.fleet.yaml that drops both networks: the engine
 *     skips pruning their CUDN, NNCP and the moved-VM and served-namespace guards (PruneSkipped) and prunes copies of
 *     them without the `Prune=false` sync option (the control: pruning ran);
 *   - on a second cluster without nodes at first, the engine holds wave 4 while the gateway Deployments are not
 *     Available, goes on once nodes arrive, and fails at the wave-4 NAD the server refuses: waves 0-3 are applied, the
 *     KubeVirt CR of wave 5 is never written, and the engine names the refused object and the server's reason;
 *   - Argo CD v3.2.12's own ApplicationSet controller (real/argo-bins), on a third API server with Argo CD's CRDs,
 *     project and cluster Secrets, expands our ApplicationSet into one Application per cluster with its directory, its
 *     API server and our sync policy (the one the engine ran with).
 * Measured here (2 shared cores, binaries cached): the suite 40-55 s; a sync of the tree 12-15 s, 10 s of which are
 * Argo CD's pauses between waves (a sync that changes nothing takes as long); the ApplicationSet controller's three
 * Applications 0.6-2 s after its start.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseAllDocuments, parse } from 'yaml';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { CLUSTER_LABEL } from '../src/base/names';
import { ARGOCD_WAVE_ANNOTATION, GITOPS_DIR } from '../src/delivery/gitops';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { DropCase, PruneGuard, vmnetDropCase } from './support/prune-guard';
import { createNamespaces, crdsFor, installCrds, objectKey, objectPath, platformNamespaces, serverSideApply, type KubeObject } from './support/real-apply';
import {
  argoCdCrds, argoSync, argoSyncBoundMs, renderKustomize, startApplicationSetController, type ArgoRetryStrategy, type ArgoSync,
} from './support/real-argo';
import { ServerWatch } from './support/real-watch';
import { upstreamCrds } from './support/real-crds';
import { RealFleet, readyBoundMs, type RealCluster } from './support/real-kube';
import type { ChildProcess } from 'node:child_process';
import { RealNodes } from './support/real-nodes';
import { sizeOf, untilQuiet } from './support/work-bound';

const EXAMPLE = path.resolve(__dirname, '..', 'examples', 'gitops.fleet.yaml');
const CLUSTER = 'east';

const synth = synthesizeFleet(loadFleetFile(EXAMPLE), { ledger: loadLedgerFile(ledgerPathFor(EXAMPLE)) });
const appSet = parse([...synth.files].find(([p]) => p.startsWith(`${GITOPS_DIR}/argocd/ApplicationSet.`))![1]);
/** What our ApplicationSet's template gives the Application of CLUSTER. */
const APP = {
  app: String(appSet.spec.template.metadata.name).replace('{{.cluster}}', CLUSTER),
  serverSideApply: appSet.spec.template.spec.syncPolicy.syncOptions.includes('ServerSideApply=true'),
  prune: !!appSet.spec.template.spec.syncPolicy.automated?.prune,
  /** `syncPolicy.retry`: a failed sync is retried as the application controller retries it (test/support/real-argo.ts). */
  retry: appSet.spec.template.spec.syncPolicy.retry as ArgoRetryStrategy,
};
/**
 * How long a test may wait for `syncs` syncs of the tree: each the engine's own bound and, once, Argo CD's retry
 * (`argoSyncBoundMs`), plus `extraMs` of the test's own work. A sync is bounded by the engine's timeout, not by how
 * fast a quiet machine runs it.
 */
const syncsBoundMs = (syncs: number, extraMs = 0, o: Parameters<typeof argoSyncBoundMs>[0] = APP) => syncs * argoSyncBoundMs(o) + extraMs;
/** Cluster b's sync: it waits for nodes the test starts late. */
const B_SYNC = { ...APP, timeoutMs: 240_000 };

const wave = (o: KubeObject) => Number((o.metadata.annotations as Record<string, string>)[ARGOCD_WAVE_ANNOTATION]);

let dir: string;
let fleet: RealFleet;
const nodes: RealNodes[] = [];
/** The prune-guard case (issue 50): its CRDs go in with cluster a's platform. */
let vmnet: DropCase;

/** The cluster's directory of the synthesized tree, written out, rendered by the real kustomize; its objects. */
function renderedTree(cluster: RealCluster, edit?: (objects: KubeObject[]) => void, files: ReadonlyMap<string, string> = synth.files)
  : { file: string; objects: KubeObject[] } {
  const tree = fs.mkdtempSync(path.join(dir, 'tree-'));
  for (const [p, text] of files) {
    if (!p.startsWith(`${CLUSTER}/`)) continue;
    fs.mkdirSync(path.dirname(path.join(tree, p)), { recursive: true });
    fs.writeFileSync(path.join(tree, p), text);
  }
  const file = renderKustomize(cluster, path.join(tree, CLUSTER), path.join(tree, 'rendered.yaml'));
  const objects = parseAllDocuments(fs.readFileSync(file, 'utf8')).map((d) => d.toJS() as KubeObject);
  if (edit) {
    edit(objects);
    fs.writeFileSync(file, objects.map((o) => JSON.stringify(o)).join('\n---\n'));
  }
  return { file, objects };
}

/** kube-controller-manager, kube-scheduler and two kwok nodes; `i` picks the pod CIDR. */
async function platformNodes(cluster: RealCluster, i: number): Promise<void> {
  nodes.push(await RealNodes.start(cluster, { count: 2, podCidr: `127.1.${40 + i}.0/24` }));
}

/** A cluster as the platform has it before Argo CD syncs: CRDs, platform namespaces, and nodes when asked. */
async function platform(cluster: RealCluster, objects: KubeObject[], o: { nodes?: number; crdsAlsoFor?: readonly KubeObject[] } = {}): Promise<void> {
  await installCrds(cluster, crdsFor([...objects, ...(o.crdsAlsoFor ?? [])], upstreamCrds().map((c) => c.crd)));
  await createNamespaces(cluster, platformNamespaces(objects));
  if (o.nodes !== undefined) await platformNodes(cluster, o.nodes);
}

/** The etcd revision at which each object of `objects` was created (from the watch). */
function creations(watch: ServerWatch, objects: readonly KubeObject[]): Map<string, number> {
  const want = new Set(objects.map(objectKey));
  return new Map(watch.events.filter((w) => w.type === 'ADDED' && want.has(w.key)).map((w) => [w.key, w.rv]));
}

/** The first revision at which a Deployment was Available with every replica updated (what the engine calls healthy). */
function availableAt(watch: ServerWatch, d: KubeObject): number | undefined {
  return watch.events.find((w) => w.kind === 'Deployment' && w.key === objectKey(d) && (w.object.status?.observedGeneration ?? 0) >= (w.object.metadata.generation as number)
    && w.object.status?.updatedReplicas === w.object.spec.replicas && w.object.status?.availableReplicas === w.object.spec.replicas)?.rv;
}

/**
 * cert-manager's visible part for Argo CD: once the gateway's Certificate exists, `holdMs` later, its Ready condition
 * (what Argo CD's Lua health check for cert-manager.io/Certificate reads). No cert-manager runs here: the test writes
 * the condition cert-manager would write after issuing. Resolves the time it was written.
 */
async function certManagerIssues(cluster: RealCluster, watch: ServerWatch, cert: KubeObject, holdMs: number): Promise<number> {
  for (const t0 = Date.now(); !watch.events.some((w) => w.type === 'ADDED' && w.key === objectKey(cert)); await sleep(100)) {
    if (abort.signal.aborted) throw new Error('the suite ended before the Certificate was created');
    // the engine writes it in wave 2 of a sync it runs for at most its own bound (cluster b's, the longer)
    if (Date.now() - t0 > argoSyncBoundMs(B_SYNC)) throw new Error(`the Certificate was not created within ${argoSyncBoundMs(B_SYNC) / 1000} s (the engine's log: ${path.join(cluster.dir, 'mm-argo-sync-*.log')})`);
  }
  await sleep(holdMs);
  const ready = { status: { conditions: [{ type: 'Ready', status: 'True', reason: 'Ready', message: 'Certificate is up to date and has not expired', lastTransitionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') }] } };
  const r = await cluster.request('PATCH', `${await objectPath(cluster, cert)}/status`, ready, { contentType: 'application/merge-patch+json' });
  if (r.status !== 200) throw new Error(`Certificate status: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  return Date.now();
}

/**
 * Waits (at most as the `expect` after it would see) for the garbage collector to finish a foreground deletion,
 * while cluster a's server is seen writing (its watch events): 20 s of no write, 60 s at most (work-bound.ts).
 */
/**
 * kube-controller-manager's garbage collector re-reads discovery every 30 s (a constant in its source:
 * https://github.com/kubernetes/kubernetes/blob/v1.35.8/cmd/kube-controller-manager/app/core.go, `syncPeriod`): an
 * object of a CRD installed after it started waits up to that long, with nothing moving, before its foreground
 * deletion begins. The suite installs every CRD before the controller starts (beforeAll); the quiet bound still
 * covers one such period, so a late CRD costs time, never a false failure.
 */
const GC_DISCOVERY_PERIOD_MS = 30_000;
const GC_WAIT_CAP_MS = 2 * GC_DISCOVERY_PERIOD_MS + 60_000;
const untilGarbageCollected = (done: () => Promise<boolean>) =>
  untilQuiet('the foreground deletion', async () => ((await done()) ? true : undefined),
    { quietMs: GC_DISCOVERY_PERIOD_MS + 20_000, capMs: GC_WAIT_CAP_MS, progress: () => a.watch.events.length, everyMs: 100 })
    .catch(() => undefined);

const timings: string[] = [];
const timed = (what: string, s: ArgoSync) => timings.push(`${what}: ${s.ms} ms (cluster cache ${s.cacheMs} ms; waves applied at ${s.waves.map((w) => `${w.wave}@${w.ms}`).join(' ')} ms)${
  s.requeued.length ? `, after ${s.requeued.length} failed operation(s) Argo CD's retry requeued: ${s.requeued.map((r) => r.message).join('; ')}` : ''}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Cluster a: the tree as synthesized, nodes from the start. Cluster b: the wave-4 NAD broken, no nodes until the test starts them. */
const a = {} as { cluster: RealCluster; tree: { file: string; objects: KubeObject[] }; watch: ServerWatch; sync: Promise<ArgoSync>; issued: Promise<number> };
const b = {} as typeof a & { plain: KubeObject[] };
/** Ends syncs still running when the suite ends (a test that failed early, or a run of some tests only). */
const abort = new AbortController();

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-argo-'));
  fleet = await RealFleet.start(['argo-a', 'argo-b', 'argo-hub']);
  a.cluster = fleet.cluster('argo-a');
  b.cluster = fleet.cluster('argo-b');
  a.tree = renderedTree(a.cluster);
  b.plain = renderedTree(b.cluster).objects;
  // the NAD KubeVirt names (wave 4) with a config the CRD's schema refuses (an object where a string is required)
  b.tree = renderedTree(b.cluster, (objs) => {
    (objs.find((o) => wave(o) === 4 && o.kind === 'NetworkAttachmentDefinition') as any).spec.config = { cniVersion: '0.3.1' };
  });
  // cluster a's CRDs include the prune-guard case's (NNCP, CUDN): installed before its kube-controller-manager
  // starts, the garbage collector knows them from its first discovery (GC_DISCOVERY_PERIOD_MS)
  vmnet = vmnetDropCase(PRUNE_GUARD);
  await Promise.all([platform(a.cluster, a.tree.objects, { nodes: 0, crdsAlsoFor: [...vmnet.before, ...vmnet.after] }), platform(b.cluster, b.plain)]);
  [a.watch, b.watch] = await Promise.all([ServerWatch.start(a.cluster, a.tree.objects), ServerWatch.start(b.cluster, b.plain)]);
  // both syncs run from here on; each test awaits its own
  a.sync = argoSync(a.cluster, a.tree.file, { ...APP, signal: abort.signal });
  b.sync = argoSync(b.cluster, b.tree.file, { ...B_SYNC, signal: abort.signal });
  const cert = a.tree.objects.find((o) => o.kind === 'Certificate')!;
  a.issued = certManagerIssues(a.cluster, a.watch, cert, 6_000);
  b.issued = certManagerIssues(b.cluster, b.watch, cert, 0);
  a.sync.then((s) => timed('first sync', s), () => undefined);
  b.sync.then((s) => timed('sync with a refused wave-4 object (nodes started late)', s), () => undefined);
}, readyBoundMs(3) + 90_000); // three API servers started side by side (each bounded by readyBoundMs), then the platform's objects and nodes

afterAll(async () => {
  a.watch?.stop();
  b.watch?.stop();
  abort.abort();
  await Promise.allSettled([a.sync, b.sync, a.issued, b.issued]);
  await Promise.all(nodes.map((n) => n.stop()));
  await fleet?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  if (timings.length) console.log(`gitops-engine sync times:\n  ${timings.join('\n  ')}`);
  // a watch the server expired and the recorder replaced by a LIST (test/support/real-watch.ts): rare, worth seeing
  const relists = [...(a.watch?.relists ?? []), ...(b.watch?.relists ?? [])];
  if (relists.length) console.log(`watches relisted:\n  ${relists.join('\n  ')}`);
}, 60_000);

describe('gitops-engine syncs one cluster of examples/gitops.fleet.yaml', () => {
  test('the sync succeeds, wave by wave in our order, each wave after the one before', async () => {
    const first = await a.sync;
    const { tree, watch } = a;
    expect({ phase: first.phase, message: first.message }).toEqual({ phase: 'Succeeded', message: 'successfully synced (all tasks run)' });
    const ours = [...new Set(tree.objects.map(wave))].sort((x, y) => x - y);
    expect(ours).toEqual([0, 1, 2, 3, 4, 5]);
    // the engine's own account: each wave applied once, in our order, every object synced; every object of waves
    // 0-4 judged healthy; the last wave (KubeVirt) only applied: the operation ends once the last wave is applied
    expect(first.waves.map((w) => w.wave)).toEqual(ours);
    expect(first.results.filter((r) => r.status !== 'Synced')).toEqual([]);
    const running = first.results.filter((r) => r.hookPhase !== 'Succeeded').map((r) => `${r.kind} ${r.hookPhase}`);
    expect(running).toEqual(tree.objects.filter((o) => wave(o) === 5).map((o) => `${o.kind} Running`));
    // (the engine reports a cluster-scoped object under the Application's destination namespace: compare kind and name)
    expect(first.results.map((r) => `${r.kind}/${r.name}`).sort()).toEqual(tree.objects.map((o) => `${o.kind}/${o.metadata.name}`).sort());

    // the server's account: every object of wave n created before any object of wave n+1
    const created = creations(watch, tree.objects);
    expect([...created.keys()].sort()).toEqual(tree.objects.map(objectKey).sort());
    const span = (n: number) => tree.objects.filter((o) => wave(o) === n).map((o) => created.get(objectKey(o))!);
    for (const n of ours.slice(1)) expect(Math.min(...span(n))).toBeGreaterThan(Math.max(...span(n - 1)));
    // wave 3 holds the gateway Deployments; they were Available before wave 4 (the NAD KubeVirt names) was written
    const deployments = tree.objects.filter((o) => o.kind === 'Deployment');
    expect(deployments.length).toBe(2);
    for (const d of deployments) expect(Math.min(...span(4))).toBeGreaterThan(availableAt(watch, d) ?? Infinity);
  }, syncsBoundMs(1));

  test('wave 3 (the gateway Deployments) waits for the gateway Certificate to be Ready, as Argo CD\'s cert-manager health check says', async () => {
    const first = await a.sync;
    const issuedAt = await a.issued;
    const cert = a.tree.objects.find((o) => o.kind === 'Certificate')!;
    expect(wave(cert)).toBe(2);
    expect(first.events.filter((e) => e.event === 'state').map((e) => e.message)).toContain(`waiting for healthy state of cert-manager.io/Certificate/${cert.metadata.name}`);
    const wave3 = a.watch.events.filter((w) => w.type === 'ADDED' && a.tree.objects.some((o) => wave(o) === 3 && objectKey(o) === w.key));
    expect(wave3.length).toBe(a.tree.objects.filter((o) => wave(o) === 3).length);
    for (const w of wave3) expect(w.at).toBeGreaterThan(issuedAt);
  }, syncsBoundMs(1));

  test('every object is server-side applied by Argo CD\'s field manager and carries our sync wave', async () => {
    await a.sync;
    for (const o of a.tree.objects) {
      const live = (await a.cluster.request('GET', await objectPath(a.cluster, o))).json as KubeObject;
      const managers = (live.metadata.managedFields as Array<{ manager: string; operation: string }>).filter((m) => m.operation === 'Apply').map((m) => m.manager);
      expect({ object: objectKey(o), managers }).toEqual({ object: objectKey(o), managers: ['argocd-controller'] });
      expect((live.metadata.annotations as Record<string, string>)[ARGOCD_WAVE_ANNOTATION]).toBe(String(wave(o)));
    }
  }, syncsBoundMs(1, 30_000));

  test('a second sync writes nothing', async () => {
    await a.sync;
    const before = a.watch.events.length;
    const second = await argoSync(a.cluster, a.tree.file, APP);
    timed('second sync', second);
    expect({ phase: second.phase, message: second.message }).toEqual({ phase: 'Succeeded', message: 'successfully synced (all tasks run)' });
    const want = new Set(a.tree.objects.map(objectKey));
    expect(a.watch.events.slice(before).filter((w) => want.has(w.key)).map((w) => `${w.type} ${w.key}`)).toEqual([]);
  }, syncsBoundMs(2));

  test('a new synth with one gateway replica fewer, and the KubeVirt file gone: the engine prunes that Deployment only and keeps the KubeVirt CR (Prune=false)', async () => {
    await a.sync;
    const doc = loadFleetFile(EXAMPLE);
    const east = doc.spec.clusters.find((c) => c.name === CLUSTER)!;
    east.gateway = { ...east.gateway, replicas: 1 };
    const files = synthesizeFleet(doc, { ledger: loadLedgerFile(ledgerPathFor(EXAMPLE)) }).files;
    const next = renderedTree(a.cluster, (objs) => { objs.splice(objs.findIndex((o) => o.kind === 'KubeVirt'), 1); }, files);
    const gone = a.tree.objects.filter((o) => !next.objects.some((n) => objectKey(n) === objectKey(o))).map(objectKey).sort();
    const kubevirt = a.tree.objects.find((o) => o.kind === 'KubeVirt')!;
    const removedDeployment = gone.filter((k) => k.startsWith('Deployment/'));
    expect(removedDeployment).toHaveLength(1);
    expect(gone).toEqual([...removedDeployment, objectKey(kubevirt)].sort());

    const before = a.watch.events.length;
    const s = await argoSync(a.cluster, next.file, APP);
    timed('sync of a new synth with pruning', s);
    expect({ phase: s.phase, message: s.message }).toEqual({ phase: 'Succeeded', message: 'successfully synced (all tasks run)' });
    const by = (status: string) => s.results.filter((r) => r.status === status).map((r) => `${r.kind}/${r.namespace}/${r.name}`);
    expect(by('Pruned')).toEqual(removedDeployment);
    expect(by('PruneSkipped')).toEqual([objectKey(kubevirt)]);
    // the server: exactly that Deployment deleted (foreground deletion: the garbage collector removes it once its
    // ReplicaSet and pods are gone, after the operation has ended), the KubeVirt CR still there
    const tracked = new Set(a.tree.objects.map(objectKey));
    const deleting = () => [...new Set(a.watch.events.slice(before).filter((w) => tracked.has(w.key) && (w.type === 'DELETED' || w.object.metadata.deletionTimestamp)).map((w) => w.key))];
    expect(deleting()).toEqual(removedDeployment);
    await untilGarbageCollected(async () => a.watch.events.slice(before).some((w) => w.type === 'DELETED' && w.key === removedDeployment[0]));
    expect(a.watch.events.slice(before).filter((w) => w.type === 'DELETED' && tracked.has(w.key)).map((w) => w.key)).toEqual(removedDeployment);
    expect((await a.cluster.request('GET', await objectPath(a.cluster, kubevirt))).status).toBe(200);
  }, syncsBoundMs(2, GC_WAIT_CAP_MS)); // two syncs and the deletion (untilGarbageCollected)

  test('the prune guard holds (issue 50): a synth that drops the VM networks leaves their CUDN and guards on the cluster (PruneSkipped); the same objects without the guard are pruned', async () => {
    await a.sync;
    // the fleet drops both networks, with the explicit opt-in a removal needs
    const { before, after, dropped, kinds, controls } = vmnet;
    expect(kinds).toEqual(expect.arrayContaining(['ClusterUserDefinedNetwork/blue']));
    expect(kinds.some((k) => /^ValidatingAdmissionPolicy\/.*moved/.test(k))).toBe(true);
    expect(kinds.some((k) => /^ValidatingAdmissionPolicy\/.*served/.test(k))).toBe(true);
    expect(kinds.some((k) => k.startsWith('NodeNetworkConfigurationPolicy/'))).toBe(true);
    const file = (name: string, objects: readonly KubeObject[]) => {
      const f = path.join(dir, `${name}.yaml`);
      fs.writeFileSync(f, objects.map((o) => JSON.stringify(o)).join('\n---\n'));
      return f;
    };
    // an Application of its own (the gateway one's objects are not in these manifests)
    const app = { ...APP, app: `${APP.app}-vmnet` };
    const first = await argoSync(a.cluster, file('vmnet-v1', [...before, ...controls]), app);
    timed('vmnet: sync of the guarded objects and their unguarded copies', first);
    expect({ phase: first.phase, message: first.message }).toEqual({ phase: 'Succeeded', message: 'successfully synced (all tasks run)' });
    const s = await argoSync(a.cluster, file('vmnet-v2', after), app);
    timed('vmnet: sync of the synth without the networks', s);
    expect({ phase: s.phase, message: s.message }).toEqual({ phase: 'Succeeded', message: 'successfully synced (all tasks run)' });
    const by = (status: string) => s.results.filter((r) => r.status === status).map((r) => `${r.kind}/${r.name}`).sort();
    expect(by('PruneSkipped')).toEqual(dropped.map((o) => `${o.kind}/${o.metadata.name}`).sort());
    expect(by('Pruned')).toEqual(controls.map((o) => `${o.kind}/${o.metadata.name}`).sort());
    // what the server holds of an object: gone, or how far its deletion got (a failure says which)
    const left = async (o: KubeObject) => {
      const r = await a.cluster.request('GET', await objectPath(a.cluster, o));
      const m = (r.json?.metadata ?? {}) as { deletionTimestamp?: string; finalizers?: string[] };
      return r.status === 404 ? { o: objectKey(o), status: 404 }
        : { o: objectKey(o), status: r.status, deletionTimestamp: m.deletionTimestamp ?? 'none', finalizers: m.finalizers ?? [] };
    };
    // the server: the guarded objects stay; their unguarded copies (the control: pruning ran) are deleted
    for (const o of dropped) expect({ o: objectKey(o), status: (await left(o)).status }).toEqual({ o: objectKey(o), status: 200 });
    const t0 = Date.now();
    for (const o of controls) {
      await untilGarbageCollected(async () => (await left(o)).status === 404);
      expect(await left(o)).toEqual({ o: objectKey(o), status: 404 });
    }
    timings.push(`vmnet: the ${controls.length} unguarded copies gone ${Date.now() - t0} ms after the sync that pruned them ended`);
  }, syncsBoundMs(3, GC_WAIT_CAP_MS + 30_000)); // three syncs (a.sync too), the deletions (the GC takes them together) and the GETs
});

describe('a cluster whose Deployments cannot become healthy yet, and a wave-4 object the server refuses', () => {
  const HOLD_MS = 6_000;

  test('the engine holds wave 4 until the gateway Deployments are Available, then fails at the refused object; wave 5 is never written', async () => {
    const { tree, watch } = b;
    const deployments = tree.objects.filter((o) => o.kind === 'Deployment').map(objectKey);
    const created = () => creations(watch, b.plain);
    // waves 0-2 take the engine what they take (bounded by its own timeout): wait while its sync runs
    let ended: ArgoSync | undefined;
    b.sync.then((r) => { ended = r; }, () => undefined);
    for (const t0 = Date.now(); !deployments.every((d) => created().has(d)); await sleep(100)) {
      if (ended) throw new Error(`the engine ended before wave 3 was applied (${ended.phase}: ${ended.message}); its log: ${path.join(b.cluster.dir, 'mm-argo-sync-*.log')}`);
      if (Date.now() - t0 > argoSyncBoundMs(B_SYNC)) throw new Error(`wave 3 not applied after ${argoSyncBoundMs(B_SYNC) / 1000} s; the engine's log: ${path.join(b.cluster.dir, 'mm-argo-sync-*.log')}`);
    }
    // no node runs the gateway's pods: the engine must not go on to wave 4 (its pause between waves is 2 s)
    const wave3At = Math.max(...watch.events.filter((w) => deployments.includes(w.key) && w.type === 'ADDED').map((w) => w.at));
    await sleep(Math.max(0, wave3At + HOLD_MS - Date.now()));
    const waves4and5 = tree.objects.filter((o) => wave(o) >= 4);
    expect(waves4and5.map(objectKey).filter((k) => created().has(k))).toEqual([]);
    // nodes arrive: the Deployments become Available, the engine applies wave 4, which the server refuses
    const nodesAt = Date.now();
    await platformNodes(b.cluster, 1);
    const s = await b.sync;
    expect({ phase: s.phase, message: s.message }).toEqual({ phase: 'Failed', message: expect.stringMatching(/^one or more objects failed to apply/) });
    expect(s.events.filter((e) => e.event === 'state').map((e) => String(e.message))).toContainEqual(expect.stringMatching(/^waiting for healthy state of apps\/Deployment\//));
    expect(s.waves.map((w) => w.wave)).toEqual([0, 1, 2, 3]);
    const refused = s.results.filter((r) => r.status === 'SyncFailed');
    // a refusal is the answer: Argo CD's retry would meet it again, the harness does not requeue it
    expect(s.requeued.filter((r) => r.results.some((x) => /spec\.config/.test(x.message))).map((r) => r.message)).toEqual([]);
    const nad = tree.objects.find((o) => wave(o) === 4)!;
    expect(refused.map((r) => `${r.kind}/${r.namespace}/${r.name}`)).toEqual([objectKey(nad)]);
    expect(refused[0].message).toMatch(/spec\.config: expected string/);
    expect(s.message).toMatch(/^one or more objects failed to apply/);
    // what the server holds: waves 0-3 all applied, Available after the nodes came; nothing of waves 4 and 5
    expect(tree.objects.filter((o) => wave(o) <= 3).map(objectKey).filter((k) => !created().has(k))).toEqual([]);
    for (const d of tree.objects.filter((o) => o.kind === 'Deployment')) {
      const at = watch.events.find((w) => w.rv === availableAt(watch, d));
      expect(at?.at).toBeGreaterThan(nodesAt);
    }
    expect(waves4and5.map(objectKey).filter((k) => created().has(k))).toEqual([]);
  }, syncsBoundMs(1, 0, B_SYNC));
});

describe('Argo CD\'s ApplicationSet controller expands our ApplicationSet', () => {
  const ARGOCD = 'argocd';
  let controller: ChildProcess | undefined;
  /** How long the controller may go without a log line or a new Application before the test gives up (0.6-2 s on a quiet machine). */
  const APPSET_QUIET_MS = 60_000;
  afterAll(() => { controller?.kill('SIGKILL'); });

  test('one Application per cluster, each with its directory, its API server and the sync policy the engine ran with', async () => {
    const hub = fleet.cluster('argo-hub');
    // the example, its clusters' API servers being three real ones (nothing dials the example's addresses)
    const servers: Record<string, string> = { east: a.cluster.url, west: b.cluster.url, north: hub.url };
    const doc = loadFleetFile(EXAMPLE);
    doc.spec.gitops!.argocd!.clusterServers = servers;
    const files = synthesizeFleet(doc, { ledger: loadLedgerFile(ledgerPathFor(EXAMPLE)) }).files;
    const ours = parse([...files].find(([p]) => p.startsWith(`${GITOPS_DIR}/argocd/ApplicationSet.`))![1]) as KubeObject & { spec: any };
    expect(ours.metadata.namespace).toBe(ARGOCD);

    // Argo CD as installed: its CRDs (v3.2.12), settings, the project our template names, one cluster Secret per cluster
    await installCrds(hub, argoCdCrds());
    await createNamespaces(hub, [ARGOCD]);
    const partOf = { 'app.kubernetes.io/part-of': 'argocd' };
    await serverSideApply(hub, { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'argocd-cm', namespace: ARGOCD, labels: partOf } }, 'argocd-install');
    await serverSideApply(hub, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'argocd-secret', namespace: ARGOCD, labels: partOf } }, 'argocd-install');
    await serverSideApply(hub, {
      apiVersion: 'argoproj.io/v1alpha1', kind: 'AppProject', metadata: { name: ours.spec.template.spec.project, namespace: ARGOCD },
      spec: { sourceRepos: ['*'], destinations: [{ server: '*', namespace: '*' }], clusterResourceWhitelist: [{ group: '*', kind: '*' }] },
    } as KubeObject, 'argocd-install');
    for (const [name, server] of Object.entries(servers)) {
      await serverSideApply(hub, {
        apiVersion: 'v1', kind: 'Secret', metadata: { name: `cluster-${name}`, namespace: ARGOCD, labels: { 'argocd.argoproj.io/secret-type': 'cluster' } },
        stringData: { name, server, config: '{"tlsClientConfig":{"insecure":false}}' },
      } as KubeObject, 'argocd-install');
    }
    await serverSideApply(hub, ours);
    const t0 = Date.now();
    controller = await startApplicationSetController(hub, ARGOCD);

    let apps: any[] = [];
    // the controller starts, syncs its informers and expands the set: wait while its log grows (work-bound.ts)
    const log = path.join(hub.dir, 'argocd-applicationset-controller.log');
    await untilQuiet('three Applications', async () => {
      apps = (await hub.request('GET', `/apis/argoproj.io/v1alpha1/namespaces/${ARGOCD}/applications`)).json?.items ?? [];
      return apps.length >= 3 || controller!.exitCode !== null ? true : undefined;
    }, { quietMs: APPSET_QUIET_MS, capMs: 2 * APPSET_QUIET_MS, progress: () => `${sizeOf([log])} ${apps.length}`, everyMs: 200 }).catch(() => undefined);
    timings.push(`ApplicationSet controller: ${apps.length} Applications ${Date.now() - t0} ms after its start`);
    if (apps.length < 3) {
      const status = (await hub.request('GET', `/apis/argoproj.io/v1alpha1/namespaces/${ARGOCD}/applicationsets/${ours.metadata.name}`)).json?.status;
      const tail = fs.readFileSync(log, 'utf8').split('\n').slice(-30).join('\n');
      throw new Error(`the controller made ${apps.length} Applications (exit code ${controller.exitCode}); ApplicationSet status ${JSON.stringify(status)}; its log:\n${tail}`);
    }
    const expected = Object.keys(servers).sort().map((c) => ({
      name: `${doc.metadata.name}-${c}`,
      cluster: c,
      project: ours.spec.template.spec.project,
      source: { repoURL: doc.spec.gitops!.repoURL, targetRevision: doc.spec.gitops!.targetRevision, path: `${doc.spec.gitops!.path}/${c}` },
      destination: { server: servers[c] },
      syncPolicy: ours.spec.template.spec.syncPolicy,
      owner: `ApplicationSet/${ours.metadata.name}`,
    }));
    expect(apps.map((x) => ({
      name: x.metadata.name,
      cluster: x.metadata.labels?.[CLUSTER_LABEL],
      project: x.spec.project,
      source: x.spec.source,
      destination: x.spec.destination,
      syncPolicy: x.spec.syncPolicy,
      owner: (x.metadata.ownerReferences ?? []).map((r: any) => `${r.kind}/${r.name}`).join(','),
    })).sort((x, y) => x.name.localeCompare(y.name))).toEqual(expected);
    // the Application the engine synced above is this one, with these options
    const east = apps.find((x) => x.metadata.name === APP.app)!;
    expect(east.spec.syncPolicy.syncOptions.includes('ServerSideApply=true')).toBe(APP.serverSideApply);
    expect(!!east.spec.syncPolicy.automated?.prune).toBe(APP.prune);
  }, 2 * APPSET_QUIET_MS + 60_000); // the controller's bound, and the installs before it
});

/** Argo CD's own prune guard: the sync option `Prune=false` makes the engine skip an object that left the source. */
const ARGOCD_SYNC_OPTIONS = 'argocd.argoproj.io/sync-options';
const PRUNE_GUARD: PruneGuard = { annotation: ARGOCD_SYNC_OPTIONS, holds: (v) => /(^|,)Prune=false(,|$)/.test(v ?? '') };

