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

const ROOT = path.resolve(__dirname, '..', '..');

/** One line of mm-argo-sync's output. */
export interface ArgoEvent { readonly event: string; readonly ms: number; readonly [k: string]: unknown }
/** One resource of the engine's sync result (gitops-engine `common.ResourceSyncResult`). */
export interface ArgoResult {
  readonly kind: string; readonly namespace: string; readonly name: string;
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
}

let runs = 0;
/** Runs one sync of `manifests` (a multi-document YAML file) into `cluster`; resolves whatever the engine reported. */
export function argoSync(cluster: RealCluster, manifests: string, o: ArgoSyncOptions): Promise<ArgoSync> {
  const timeoutMs = o.timeoutMs ?? 60_000;
  const args = ['--kubeconfig', cluster.kubeconfig(), '--manifests', manifests, '--app', o.app, `--timeout=${timeoutMs}ms`,
    `--server-side-apply=${!!o.serverSideApply}`, `--prune=${!!o.prune}`];
  return new Promise((resolve, reject) => {
    execFile(argoSyncBin(), args, { timeout: timeoutMs + 30_000, maxBuffer: 64 * 2 ** 20, signal: o.signal }, (err, stdout, stderr) => {
      fs.writeFileSync(path.join(cluster.dir, `mm-argo-sync-${++runs}.log`), stderr);
      const events = stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as ArgoEvent);
      const done = events.find((e) => e.event === 'done');
      if (!done) { reject(new Error(`mm-argo-sync ended without a result (${err?.message ?? 'no error'}):\n${stderr.slice(-3000)}`)); return; }
      resolve({
        events,
        waves: events.filter((e) => e.event === 'wave').map((e) => ({ wave: e.wave as number, ms: e.ms })),
        results: events.filter((e) => e.event === 'result') as unknown as ArgoResult[],
        phase: done.phase as string, message: String(done.message ?? ''), ms: done.ms,
        cacheMs: events.find((e) => e.event === 'cache-synced')?.ms ?? -1,
        log: stderr,
      });
    });
  });
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
