/**
 * Flux's own controllers against a real API server: kustomize-controller and source-controller v1.9.6 and
 * distribution's registry (the one in source-controller's module graph), built from the Go module proxy by
 * scripts/ensure-go-bins.js (real/flux-bins), run out of cluster as Flux's
 * https://github.com/fluxcd/kustomize-controller/blob/v1.9.6/DEVELOPMENT.md runs them
 * (`SOURCE_CONTROLLER_LOCALHOST` points kustomize-controller at source-controller's artifact server).
 *
 * A tree reaches Flux as Flux users ship it without a Git server: pushed as an OCI artifact to the local
 * registry by real/flux-bins/cmd/mm-oci-push (Flux's own OCI library, what `flux push artifact` does) and pulled by
 * an `OCIRepository` with `spec.insecure` (plain HTTP on loopback). Flux's CRDs come from the same modules' config/crd/bases in the Go
 * module cache, read at test time (nothing of theirs is committed).
 *
 * Every process logs into the hub cluster's directory; `stop()` ends them all.
 */
import { ChildProcess, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { freePort } from '../../proxy/src/testkit/helpers';
import { createNamespaces, installCrds, serverSideApply, type KubeObject } from './real-apply';
import type { Crd } from './real-crds';
import { goBinDir, spawnLogged, type Identity, type RealCluster } from './real-kube';
import { sizeOf, untilQuiet } from './work-bound';
import { countRetry, goDurationMs } from './kube-retry';

const ROOT = path.resolve(__dirname, '..', '..');
/** Where kustomize-controller, source-controller, registry and mm-oci-push are. */
export const fluxBinDir = () => goBinDir('flux-bins');
/** The namespace Flux runs in and holds its objects in (its installs' default, and our generated Kustomizations'). */
export const FLUX_NAMESPACE = 'flux-system';
/** Flux's "reconcile now" annotation, what `flux reconcile` sets; status.lastHandledReconcileAt echoes it. */
export const REQUESTED_AT = 'reconcile.fluxcd.io/requestedAt';

/** Every CRD of Flux's two controllers (both watch all their kinds: a missing one stops them), from the module cache. */
export function fluxCrds(): Crd[] {
  const env = { ...process.env, PATH: `${process.env.PATH}:/usr/local/go/bin`, GOTOOLCHAIN: 'local', GOFLAGS: '-mod=mod' };
  return ['github.com/fluxcd/kustomize-controller', 'github.com/fluxcd/source-controller'].flatMap((mod) => {
    const dir = execFileSync('go', ['list', '-m', '-f', '{{.Dir}}', mod], { cwd: path.join(ROOT, 'real', 'flux-bins'), encoding: 'utf8', env }).trim();
    const bases = path.join(dir, 'config', 'crd', 'bases');
    return fs.readdirSync(bases).filter((f) => f.endsWith('.yaml')).sort()
      .flatMap((f) => parseAllDocuments(fs.readFileSync(path.join(bases, f), 'utf8')).map((d) => d.toJS() as Crd));
  });
}

const b64 = (s: string | Buffer) => Buffer.from(s).toString('base64');

/**
 * A kubeconfig for `cluster` with everything inline (no file paths): what a Cluster API `<cluster>-kubeconfig`
 * Secret holds under `value`, the key kustomize-controller reads for `spec.kubeConfig.secretRef`.
 */
export function inlineKubeconfig(cluster: RealCluster, who: Identity = cluster.admin): string {
  const user = 'token' in who ? { token: who.token }
    : { 'client-certificate-data': b64(fs.readFileSync(who.cert)), 'client-key-data': b64(fs.readFileSync(who.key)) };
  return JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': cluster.name,
    clusters: [{ name: cluster.name, cluster: { server: cluster.url, 'certificate-authority-data': b64(fs.readFileSync(cluster.caFile)) } }],
    users: [{ name: who.user, user }], contexts: [{ name: cluster.name, context: { cluster: cluster.name, user: who.user } }],
  });
}

/**
 * Polls `probe` every 250 ms until it resolves a value; fails at once when one of `procs` has exited, when nothing
 * was written to any of `logs` for `ms` (the controllers log every reconcile and every requeue: silence is a stall),
 * and after 2 * `ms` even while they write (untilQuiet in work-bound.ts: the bound is the work's, not a quiet
 * machine's). Errors show the tail of each log.
 */
async function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>, logs: readonly string[], procs: readonly ChildProcess[]): Promise<T> {
  const tails = () => logs.filter((l) => fs.existsSync(l)).map((l) => `\n--- ${path.basename(l)}\n${fs.readFileSync(l, 'utf8').trim().split('\n').slice(-15).join('\n')}`).join('');
  const dead = () => {
    const p = procs.find((x) => x.exitCode !== null || x.signalCode !== null);
    return p && `${p.spawnfile} exited (${p.exitCode ?? p.signalCode})`;
  };
  return untilQuiet(what, probe, { quietMs: ms, capMs: 2 * ms, progress: () => sizeOf(logs), dead }).catch((e: Error) => {
    throw new Error(`${e.message}${tails()}`);
  });
}

/** What `countFluxRetry` reads of a Kustomization. */
export interface KustomizationState {
  readonly metadata: { readonly name: string };
  readonly spec: { readonly interval?: string; readonly retryInterval?: string };
  readonly status?: {
    readonly lastAttemptedRevision?: string;
    readonly conditions?: ReadonlyArray<{ type: string; status: string; reason: string; message: string; lastTransitionTime?: string }>;
  };
}
const failedAttempts = new Set<string>();
/**
 * Counts a Kustomization's failed reconcile, once each, in the suite's retry summary (kube-retry.ts): Flux's own
 * requeue, which the harness only watches. kustomize-controller v1.9.6 requeues a failed reconcile after
 * `spec.retryInterval`, or `spec.interval` when none is set (internal/controller/kustomization_controller.go,
 * api/v1 GetRetryInterval). A stage waiting for its dependency (DependencyNotReady) or still at work is no failure.
 */
export function countFluxRetry(k: KustomizationState): void {
  const ready = k.status?.conditions?.find((c) => c.type === 'Ready');
  if (ready?.status !== 'False' || ready.reason === 'DependencyNotReady' || ready.reason === 'Progressing') return;
  const key = `${k.metadata.name} ${k.status?.lastAttemptedRevision} ${ready.lastTransitionTime} ${ready.reason} ${ready.message}`;
  if (failedAttempts.has(key)) return;
  failedAttempts.add(key);
  const every = k.spec.retryInterval ?? k.spec.interval;
  countRetry({ layer: 'engine', what: `Flux Kustomization ${k.metadata.name}`, reason: `${ready.reason}: ${ready.message}`.slice(0, 300), waitMs: every ? goDurationMs(every) : 0 });
}

const httpOk = (url: string) => fetch(url, { signal: AbortSignal.timeout(2000) }).then((r) => (r.ok ? true : undefined));

/** Options of a Flux install. */
export interface FluxOptions {
  /**
   * kustomize-controller's `--requeue-dependency`: how soon a Kustomization whose `dependsOn` is not Ready looks
   * again. Nothing watches a dependency's readiness, so each stage of a chain starts up to this long after the one
   * before it is Ready. [Flux's default, 30s]
   */
  readonly requeueDependency?: string;
}

/** The registry and Flux's two controllers, out of cluster, on a hub (management) cluster. */
export class RealFlux {
  private readonly procs: ChildProcess[] = [];
  /** `127.0.0.1:PORT` of the OCI registry (plain HTTP). */
  registry = '';
  readonly logs: string[];

  private constructor(readonly hub: RealCluster, private readonly dir: string) {
    this.logs = ['registry', 'source-controller', 'kustomize-controller'].map((n) => path.join(dir, `${n}.log`));
  }

  /** Installs Flux's CRDs and its namespace on the hub, starts the registry and both controllers, waits until each answers. */
  static async start(hub: RealCluster, opts: FluxOptions = {}): Promise<RealFlux> {
    const bin = fluxBinDir();
    const dir = path.join(hub.dir, 'flux');
    fs.mkdirSync(dir, { recursive: true });
    const f = new RealFlux(hub, dir);
    try {
      await installCrds(hub, fluxCrds());
      await createNamespaces(hub, [FLUX_NAMESPACE]);
      const [reg, storage, scHealth, kcHealth] = [await freePort(), await freePort(), await freePort(), await freePort()];
      f.registry = `127.0.0.1:${reg}`;
      fs.mkdirSync(path.join(dir, 'storage'));
      const cfg = path.join(dir, 'registry.yaml');
      fs.writeFileSync(cfg, JSON.stringify({
        version: 0.1, log: { level: 'warn' }, http: { addr: f.registry },
        storage: { filesystem: { rootdirectory: path.join(dir, 'registry-data') }, delete: { enabled: true } },
      }));
      // distribution v3 exports OpenTelemetry traces unless told not to
      f.procs.push(spawnLogged(path.join(bin, 'registry'), ['serve', cfg], f.logs[0], { ...process.env, OTEL_TRACES_EXPORTER: 'none' }));
      const env = { ...process.env, KUBECONFIG: hub.kubeconfig(), RUNTIME_NAMESPACE: FLUX_NAMESPACE };
      const common = ['--enable-leader-election=false', '--metrics-addr=0', '--log-level=info'];
      f.procs.push(spawnLogged(path.join(bin, 'source-controller'), [...common, `--health-addr=127.0.0.1:${scHealth}`,
        `--storage-path=${path.join(dir, 'storage')}`, `--storage-addr=127.0.0.1:${storage}`, `--storage-adv-addr=127.0.0.1:${storage}`], f.logs[1], env));
      f.procs.push(spawnLogged(path.join(bin, 'kustomize-controller'), [...common, `--health-addr=127.0.0.1:${kcHealth}`,
        `--requeue-dependency=${opts.requeueDependency ?? '30s'}`], f.logs[2], { ...env, SOURCE_CONTROLLER_LOCALHOST: `127.0.0.1:${storage}` }));
      await until('the registry', 30_000, () => httpOk(`http://${f.registry}/v2/`), f.logs, f.procs);
      await until('source-controller', 60_000, () => httpOk(`http://127.0.0.1:${scHealth}/readyz`), f.logs, f.procs);
      await until('kustomize-controller', 60_000, () => httpOk(`http://127.0.0.1:${kcHealth}/readyz`), f.logs, f.procs);
      return f;
    } catch (e) {
      await f.stop();
      throw e;
    }
  }

  /**
   * Pushes `dir` (laid out as the user's repository) to `oci://REGISTRY/REPO:TAG` as a Flux artifact; resolves the
   * digest (`sha256:...`), which the OCIRepository reports as the revision `TAG@sha256:...`.
   */
  push(dir: string, repo: string, tag: string, revision: string): string {
    const out = execFileSync(path.join(fluxBinDir(), 'mm-oci-push'), ['-insecure', '-source', 'https://git.example.com/platform/infra.git',
      '-revision', revision, dir, `oci://${this.registry}/${repo}:${tag}`], { encoding: 'utf8', timeout: 60_000 }).trim();
    const m = /@(sha256:[0-9a-f]{64})$/.exec(out);
    if (!m) throw new Error(`mm-oci-push printed no digest: ${out}`);
    return m[1];
  }

  /** The OCIRepository `name` in flux-system that pulls `REGISTRY/REPO:TAG` over plain HTTP. */
  async ociRepository(name: string, repo: string, tag: string, interval = '10m'): Promise<KubeObject> {
    return serverSideApply(this.hub, {
      apiVersion: 'source.toolkit.fluxcd.io/v1', kind: 'OCIRepository', metadata: { name, namespace: FLUX_NAMESPACE },
      spec: { interval, url: `oci://${this.registry}/${repo}`, ref: { tag }, insecure: true },
    }, 'flux-client');
  }

  /** The Secret `name` in flux-system holding an inline kubeconfig of `target` under `value`, for `spec.kubeConfig.secretRef`. */
  async kubeconfigSecret(name: string, target: RealCluster): Promise<void> {
    await serverSideApply(this.hub, {
      apiVersion: 'v1', kind: 'Secret', metadata: { name, namespace: FLUX_NAMESPACE }, type: 'Opaque', data: { value: b64(inlineKubeconfig(target)) },
    }, 'flux-client');
  }

  /** Asks Flux to reconcile an object now, as `flux reconcile` does; resolves the token set. */
  async requestReconcile(apiPath: string): Promise<string> {
    const token = new Date().toISOString();
    const r = await this.hub.request('PATCH', apiPath, { metadata: { annotations: { [REQUESTED_AT]: token } } }, { contentType: 'application/merge-patch+json' });
    if (r.status !== 200) throw new Error(`annotate ${apiPath}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
    return token;
  }

  /**
   * Polls `probe` until it resolves; fails when a Flux process exited, its logs were silent for `ms`, or after
   * 2 * `ms` (`until` above); the error shows each Flux log's tail.
   */
  until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
    return until(what, ms, probe, this.logs, this.procs);
  }

  async stop(): Promise<void> {
    await Promise.all(this.procs.map((p) => new Promise<void>((resolve) => {
      if (p.exitCode !== null || p.signalCode !== null) { resolve(); return; }
      p.once('exit', () => resolve());
      p.kill('SIGKILL');
    })));
  }
}

