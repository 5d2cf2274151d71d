/**
 * Argo CD's sync engine against a real API server: `mm-argo-sync` (real/argo-bins, our small main over
 * gitops-engine's engine.Sync, the library Argo CD's application controller runs) syncs one Application's rendered
 * manifests once and reports what the engine did as JSON lines. Plus what a test needs to judge it from the API
 * server's side: the manifests rendered as Argo CD's repo server renders a kustomize directory (the real
 * `kubectl kustomize`), and watches that record every write with its etcd revision.
 *
 * Order across kinds comes from the resourceVersion of each watch event: on an etcd-backed API server it is the
 * etcd revision of the write, one counter for every key of the etcd (Kubernetes calls it opaque; the tests use it
 * only to order writes of one server, which is what it is).
 */
import { ChildProcess, execFile, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { freePort, goBinDir, spawnLogged, type RealCluster } from './real-kube';
import type { Crd } from './real-crds';
import { countRetry, goDurationMs } from './kube-retry';

const ROOT = path.resolve(__dirname, '..', '..');

/** One line of mm-argo-sync's output. */
export interface ArgoEvent { readonly event: string; readonly ms: number; readonly [k: string]: unknown }
/** One resource of the engine's sync result (gitops-engine `common.ResourceSyncResult`). */
export interface ArgoResult {
  readonly group: string; readonly kind: string; readonly namespace: string; readonly name: string;
  /** `Synced`, `SyncFailed`, `Pruned`, `PruneSkipped`. */
  readonly status: string;
  /** The operation state the engine holds for it: `Running` (applied, not yet judged), `Succeeded` (healthy), `Failed`. */
  readonly hookPhase: string;
  readonly message: string;
}
export interface ArgoSync {
  readonly events: readonly ArgoEvent[];
  /** The waves the engine applied, in order, with the time (ms from the program's start) each was applied. */
  readonly waves: ReadonlyArray<{ wave: number; ms: number }>;
  readonly results: readonly ArgoResult[];
  /** `Succeeded`, `Failed` (the engine's operation failed) or `Error` (setup). */
  readonly phase: string;
  readonly message: string;
  /** From the program's start to its last line (cluster cache sync included), and the cache sync alone. */
  readonly ms: number;
  readonly cacheMs: number;
  /** The engine's own log (stderr; also kept as mm-argo-sync-N.log in the cluster's directory). */
  readonly log: string;
  /** The failed operations before this one that the application controller's retry requeued (see `argoSync`). */
  readonly requeued: readonly ArgoSync[];
}

export const argoSyncBin = (): string => path.join(goBinDir('argo-bins'), 'mm-argo-sync');

/** Options of one sync: what an Application's spec says. */
export interface ArgoSyncOptions {
  /** The Application's name (tracking annotation). */
  readonly app: string;
  /** `syncOptions: [ServerSideApply=true]`. [false] */
  readonly serverSideApply?: boolean;
  /** `automated.prune`. [false] */
  readonly prune?: boolean;
  /** How long the engine may take. [60000 ms] */
  readonly timeoutMs?: number;
  /** Ends the program early (the promise then rejects). [none] */
  readonly signal?: AbortSignal;
  /** The Application's `syncPolicy.retry`: a failed operation is retried as the application controller retries it. [none] */
  readonly retry?: ArgoRetryStrategy;
}

/** The 30 s the harness gives mm-argo-sync past its own timeout to report (execFile's timeout in argoSyncOnce). */
const REPORT_MS = 30_000;

let runs = 0;
/** Runs one sync of `manifests` (a multi-document YAML file) into `cluster`; resolves whatever the engine reported. */
function argoSyncOnce(cluster: RealCluster, manifests: string, o: ArgoSyncOptions): Promise<ArgoSync> {
  const timeoutMs = o.timeoutMs ?? 60_000;
  const args = ['--kubeconfig', cluster.kubeconfig(), '--manifests', manifests, '--app', o.app, `--timeout=${timeoutMs}ms`,
    `--server-side-apply=${!!o.serverSideApply}`, `--prune=${!!o.prune}`];
  return new Promise((resolve, reject) => {
    execFile(argoSyncBin(), args, { timeout: timeoutMs + REPORT_MS, maxBuffer: 64 * 2 ** 20, signal: o.signal }, (err, stdout, stderr) => {
      fs.writeFileSync(path.join(cluster.dir, `mm-argo-sync-${++runs}.log`), stderr);
      const events = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as ArgoEvent);
      const done = events.find((e) => e.event === 'done');
      if (!done) { reject(new Error(`mm-argo-sync ended without a result (${err?.message ?? 'no error'}):\n${stderr.slice(-3000)}`)); return; }
      resolve({
        events,
        waves: events.filter((e) => e.event === 'wave').map((e) => ({ wave: e.wave as number, ms: e.ms })),
        results: events.filter((e) => e.event === 'result').map((e) => ({ group: '', ...e })) as unknown as ArgoResult[],
        phase: done.phase as string, message: String(done.message ?? ''), ms: done.ms,
        cacheMs: events.find((e) => e.event === 'cache-synced')?.ms ?? -1,
        log: stderr, requeued: [],
      });
    });
  });
}

/**
 * An Application's `syncPolicy.retry` (Argo CD's RetryStrategy, pkg/apis/application/v1alpha1/types.go). Our
 * ApplicationSet's template gives every Application `{ limit: 5, backoff: { duration: '10s', factor: 2,
 * maxDuration: '5m' } }` (src/delivery/gitops.ts).
 */
export interface ArgoRetryStrategy {
  readonly limit: number;
  readonly backoff?: { readonly duration?: string; readonly factor?: number; readonly maxDuration?: string };
}

/** Argo CD's parseStringToDuration: an integer is seconds, anything else a Go duration (`10s`, `1m30s`, `500ms`). */
export function argoDurationMs(s: string): number {
  return /^[+-]?\d+$/.test(s) ? Number(s) * 1000 : goDurationMs(s);
}

/**
 * How long Argo CD v3.2.12's application controller waits before the retry after `retryCount` earlier ones
 * (RetryStrategy.NextRetryAt, https://github.com/argoproj/argo-cd/blob/v3.2.12/pkg/apis/application/v1alpha1/types.go):
 * `duration * factor^retryCount`, at most `maxDuration`; defaults 5s, 2 and 3m (application_defaults.go).
 */
export function argoRetryWaitMs(r: ArgoRetryStrategy, retryCount: number): number {
  const duration = argoDurationMs(r.backoff?.duration || '5s');
  const max = argoDurationMs(r.backoff?.maxDuration || '3m');
  const wait = duration * (r.backoff?.factor ?? 2) ** retryCount;
  return max > 0 ? Math.min(max, wait) : wait;
}

/** The server's or the connection's "not now" (as `transient` in kube-retry.ts: 5xx, 429, no answer), in client-go's and kubectl's words. */
const SERVER_NOT_NOW = /the server is currently unable to handle the request|Timeout: request did not complete|the server was unable to return a response in the time allotted|too many requests|context deadline exceeded|i\/o timeout|connection refused|connection reset|TLS handshake timeout|http2: client connection lost|unexpected EOF|etcdserver: (request timed out|leader changed)|Internal error occurred/i;
/**
 * The API server (its discovery, its OpenAPI document, kubectl's REST mapping from them) does not know a kind, or its
 * group version, yet: kubectl's words, and gitops-engine's when its discovery lacks the kind (`Kind.group "" not
 * found`, pkg/utils/kube/kube.go ServerResourceForGroupVersionKind; the operation then ends "one or more
 * synchronization tasks are not valid").
 */
const KIND_NOT_KNOWN = /the server could not find the requested resource|no matches for kind|ensure CRDs are installed first|^[A-Z]\w*(\.[\w.-]+)? "" not found$/i;

/**
 * Is a sync that did not succeed one the application controller's retry can cure, and why? Argo CD retries every
 * Failed or Error operation up to `limit` times (controller/appcontroller.go processRequestedAppOperation); the
 * harness retries only those whose next try can end otherwise, so a refusal fails the test at once instead of
 * after the same refusal `limit` times more:
 *  - every object that failed failed for the server's or the connection's "not now" (`SERVER_NOT_NOW`), or because
 *    the engine's view of the server did not know its kind (`KIND_NOT_KNOWN`) while the server serves that kind
 *    now (`served`: right after a CRD is installed, discovery and the OpenAPI document the dry run validates with
 *    catch up a moment after the CRD is Established; a kind the server does not serve is a CRD never installed);
 *  - or no object failed and the operation's own message is a "not now" (an Error in setup: the cluster cache).
 * Anything else (a refusal: invalid, forbidden, a field conflict; the engine's own timeout) is not requeued.
 */
export function curableSyncFailure(s: ArgoSync, served: (group: string, kind: string) => boolean): string | undefined {
  if (s.phase === 'Succeeded') return undefined;
  const failed = s.results.filter((r) => r.status === 'SyncFailed');
  if (!failed.length) return SERVER_NOT_NOW.test(s.message) ? `${s.phase}: ${s.message}` : undefined;
  const why = failed.map((r) => {
    const curable = SERVER_NOT_NOW.test(r.message) || (KIND_NOT_KNOWN.test(r.message) && served(r.group, r.kind));
    return curable ? `${r.kind}/${r.name}: ${r.message}` : undefined;
  });
  return why.every((w) => w !== undefined) ? `${s.phase}: ${s.message}; ${why.join('; ')}` : undefined;
}

/** The kinds `cluster` serves now in each of `groups` (`''` is the core group), as `group/Kind`, from its discovery. */
async function servedKinds(cluster: RealCluster, groups: readonly string[]): Promise<Set<string>> {
  const out = new Set<string>();
  for (const g of new Set(groups)) {
    const versions: string[] = g === '' ? ['/api/v1']
      : ((await cluster.request('GET', `/apis/${g}`)).json?.versions ?? []).map((v: { groupVersion: string }) => `/apis/${v.groupVersion}`);
    for (const v of versions) {
      for (const r of (await cluster.request('GET', v)).json?.resources ?? []) out.add(`${g}/${r.kind}`);
    }
  }
  return out;
}

/** Sleeps `ms`, or rejects once `signal` aborts. */
function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) { reject(new Error('aborted')); return; }
    const t = setTimeout(() => { signal?.removeEventListener('abort', stop); resolve(); }, ms);
    const stop = () => { clearTimeout(t); reject(new Error('aborted')); };
    signal?.addEventListener('abort', stop, { once: true });
  });
}

/**
 * The application controller's retry of a sync operation (Argo CD v3.2.12 controller/appcontroller.go
 * processRequestedAppOperation): `once` runs one operation; one that failed is run again as a new operation (the
 * controller drops the failed one's results before the retry) after `argoRetryWaitMs` (times `scale`, 1 but in
 * unit tests), at most `retry.limit` times; only a failure a retry can cure (`curableSyncFailure`, against the
 * kinds `served` says the server serves now) is requeued. Every requeue is counted in the suite's retry summary
 * (kube-retry.ts); the failed operations are kept in the result's `requeued`.
 */
export async function requeueArgoSync(what: string, once: () => Promise<ArgoSync>, served: (groups: readonly string[]) => Promise<ReadonlySet<string>>,
  retry: ArgoRetryStrategy | undefined, o: { signal?: AbortSignal; scale?: number } = {}): Promise<ArgoSync> {
  const requeued: ArgoSync[] = [];
  for (;;) {
    const s = await once();
    if (s.phase === 'Succeeded' || !retry || requeued.length >= retry.limit) return { ...s, requeued };
    const kinds = await served(s.results.filter((r) => r.status === 'SyncFailed').map((r) => r.group));
    const why = curableSyncFailure(s, (g, k) => kinds.has(`${g}/${k}`));
    if (!why) return { ...s, requeued };
    const waitMs = argoRetryWaitMs(retry, requeued.length) * (o.scale ?? 1);
    countRetry({ layer: 'engine', what, reason: why.slice(0, 400), waitMs });
    requeued.push(s);
    await pause(waitMs, o.signal);
  }
}

/**
 * How long `argoSync` with `o` may take: the engine's own bound for each run (its timeout, and the time to report),
 * and for each of the first `requeues` retries (at most the policy's limit) the controller's backoff and one more
 * run. What a test waits for a sync is bounded by that, the work's bound, not by how fast a quiet machine syncs.
 */
export function argoSyncBoundMs(o: Pick<ArgoSyncOptions, 'timeoutMs' | 'retry'>, requeues = 1): number {
  const run = (o.timeoutMs ?? 60_000) + REPORT_MS;
  let ms = run;
  for (let n = 0; o.retry && n < Math.min(requeues, o.retry.limit); n++) ms += argoRetryWaitMs(o.retry, n) + run;
  return ms;
}

/**
 * Runs one sync operation of `manifests` into `cluster` and resolves what the engine reported; with `o.retry` (the
 * Application's `syncPolicy.retry`) a failed one is retried as the application controller retries it
 * (`requeueArgoSync`).
 */
export function argoSync(cluster: RealCluster, manifests: string, o: ArgoSyncOptions): Promise<ArgoSync> {
  return requeueArgoSync(`Argo CD sync of ${o.app} on ${cluster.name}`, () => argoSyncOnce(cluster, manifests, o),
    (groups) => servedKinds(cluster, groups), o.retry, { signal: o.signal });
}

/** A kustomize directory rendered as Argo CD's repo server renders it (`kustomize build`, here the real kubectl's), written to `out`. */
export function renderKustomize(cluster: RealCluster, dir: string, out: string): string {
  fs.writeFileSync(out, cluster.kubectl(['kustomize', dir]));
  return out;
}

/** Argo CD v3.2.12's CRDs (Application, ApplicationSet, AppProject), from the module real/argo-bins builds the controller from. */
export function argoCdCrds(): Crd[] {
  const dir = execFileSync('go', ['list', '-m', '-f', '{{.Dir}}', 'github.com/argoproj/argo-cd/v3'], {
    cwd: path.join(ROOT, 'real', 'argo-bins'), encoding: 'utf8', env: { ...process.env, PATH: `${process.env.PATH}:/usr/local/go/bin`, GOFLAGS: '-mod=mod' },
  }).trim();
  return ['application-crd.yaml', 'applicationset-crd.yaml', 'appproject-crd.yaml']
    .flatMap((f) => parseAllDocuments(fs.readFileSync(path.join(dir, 'manifests', 'crds', f), 'utf8')).map((d) => d.toJS() as Crd));
}

/**
 * Argo CD's own ApplicationSet controller (real/argo-bins), out of cluster, for the ApplicationSets in `namespace`
 * (Argo CD's namespace: its settings, projects and cluster Secrets live there). Metrics and probes off; its webhook
 * server and the repo server address on loopback ports (a list generator never calls the repo server). Its
 * controller-runtime client reads KUBECONFIG, not the --kubeconfig flag, so both are given. Log:
 * argocd-applicationset-controller.log in the cluster's directory. Kill it when done.
 */
export async function startApplicationSetController(cluster: RealCluster, namespace: string): Promise<ChildProcess> {
  return spawnLogged(path.join(goBinDir('argo-bins'), 'argocd-applicationset-controller'), [
    '--kubeconfig', cluster.kubeconfig(), '--namespace', namespace, '--metrics-addr', '0', '--probe-addr', '0',
    '--webhook-addr', `127.0.0.1:${await freePort()}`, '--argocd-repo-server', `127.0.0.1:${await freePort()}`, '--logformat', 'text',
  ], path.join(cluster.dir, 'argocd-applicationset-controller.log'), { ...process.env, KUBECONFIG: cluster.kubeconfig() });
}
