/**
 * Real Kubernetes control planes for the tests: one etcd and one kube-apiserver per simulated cluster (each its
 * own etcd prefix, serving certificate, ServiceAccount signing key and RBAC), built from the Go module proxy by
 * scripts/ensure-go-bins.js (real/kube-bins). No model: server-side apply, field managers, CRD schemas with CEL,
 * admission and the RBAC authorizer are Kubernetes' own code.
 *
 * Identities: `admin` is a client certificate in `system:masters`; `identity(user, groups)` issues a client
 * certificate (CN = user, O = groups) that meets real RBAC; `serviceAccountToken` asks the API server for a
 * bound token through TokenRequest, as the kubelet does for a pod.
 *
 * Ports: etcd and the API servers listen on 127.0.0.1 at ports drawn from 20000-32767, below the kernel's
 * ephemeral range, so no test that binds port 0 can take them; a port found taken is drawn again. Every wait is
 * bounded; `stop()` kills every process and removes every file, and a process exit kills what is left.
 * The binaries are required: when they cannot be built the harness throws (the lane fails, it never skips).
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import type * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';

import { retrySummary, withClientGoRetry } from './kube-retry';

const ROOT = path.resolve(__dirname, '..', '..');

// Every suite on real API servers prints its retries at its end (none, or each one with its reason), so a slow
// server is seen in the log, not hidden by the retries that rode it out (test/support/kube-retry.ts).
if (typeof afterAll === 'function') afterAll(() => { console.log(retrySummary()); });
const binDirs = new Map<string, string>();

/**
 * How long a request may go without a byte back before it fails (`request`'s default; a test passes its own where
 * a timeout is what it checks). A hang bound only: a CRD's server-side apply went unanswered for 30 s in a
 * fresh-clone CI run with two CPU hogs and two real-API suites side by side (each with its API servers, etcd and
 * controllers) on the two cores, and that is load, not a defect.
 */
const REQUEST_IDLE_MS = 90_000;

/**
 * How long a kept-alive connection may sit unused before `request` closes it. Shorter than kube-apiserver's own idle
 * timeout (90 s, k8s.io/apiserver secure_serving.go): a connection the server closes at the moment a request is
 * written on it fails that request with "socket hang up" (a fresh-clone CI run under two CPU hogs, in
 * kubevirt-real's status test). Closing it first on this side leaves the server nothing to race with.
 */
export const KEEP_ALIVE_IDLE_MS = 15_000;

/** The bin directory of a wrapper module under real/ (a directory with a bins.json; scripts/ensure-go-bins.js builds it once; cached). */
export function goBinDir(module: string): string {
  let dir = binDirs.get(module);
  if (!dir) {
    dir = execFileSync(process.execPath, [path.join(ROOT, 'scripts', 'ensure-go-bins.js'), '--print-dir', module],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], timeout: 3_600_000 }).trim();
    binDirs.set(module, dir);
  }
  return dir;
}

/** The directory holding etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl. */
export const kubeBinDir = () => goBinDir('kube-bins');

const openssl = (args: string[], cwd: string) => execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });

/** A CA that signs the serving certificates and the client certificates of every control plane in a fleet. */
class Pki {
  private serial = 1;
  constructor(readonly dir: string) {
    openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt',
      '-days', '2', '-subj', '/CN=migration-mesh-test-ca'], dir);
  }

  get caFile(): string { return path.join(this.dir, 'ca.crt'); }

  /** A leaf signed by the CA: `name.crt` and `name.key`; subject CN and O (groups), SANs for a server. */
  issue(name: string, cn: string, groups: string[] = [], sans?: string): { cert: string; key: string } {
    const subj = `/CN=${cn}${groups.map((g) => `/O=${g}`).join('')}`;
    openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subj], this.dir);
    const ext = path.join(this.dir, `${name}.ext`);
    fs.writeFileSync(ext, sans ? `subjectAltName=${sans}\nextendedKeyUsage=serverAuth\n` : 'extendedKeyUsage=clientAuth\n');
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-set_serial', String(this.serial++),
      '-days', '2', '-extfile', ext, '-out', `${name}.crt`], this.dir);
    return { cert: path.join(this.dir, `${name}.crt`), key: path.join(this.dir, `${name}.key`) };
  }
}

/**
 * A free port on 127.0.0.1 below the ephemeral range (see the header), checked by binding it. The real-API lane runs
 * two suites at a time (scripts/run-tests.js): each jest worker draws from its own half of the range, so two
 * suites can never both find the same port free and race to bind it.
 */
export async function freePort(): Promise<number> {
  const worker = Number(process.env.JEST_WORKER_ID ?? '1');
  const [lo, size] = worker % 2 === 1 ? [20000, 6384] : [26384, 6384];
  for (let i = 0; i < 50; i++) {
    const port = lo + Math.floor(Math.random() * size);
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.createServer().once('error', () => resolve(false)).listen(port, '127.0.0.1', () => s.close(() => resolve(true)));
    });
    if (ok) return port;
  }
  throw new Error(`no free port in ${lo}-${lo + size - 1} on 127.0.0.1 after 50 draws`);
}

const live = new Set<ChildProcess>();
process.once('exit', () => { for (const p of live) p.kill('SIGKILL'); });

/** Starts a binary with its output appended to a log file; the process is killed when the test process exits. */
export function spawnLogged(bin: string, args: string[], log: string, env: NodeJS.ProcessEnv = process.env): ChildProcess {
  const fd = fs.openSync(log, 'a');
  const child = spawn(bin, args, { stdio: ['ignore', fd, fd], env });
  fs.closeSync(fd);
  live.add(child);
  child.once('exit', () => live.delete(child));
  return child;
}

const tail = (file: string, lines = 25) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').trim().split('\n').slice(-lines).join('\n') : '(no log)');

/** Polls `probe` every 100 ms until it resolves true, the process exits, or `ms` pass; the error names what and shows the log. */
async function waitFor(what: string, probe: () => Promise<boolean>, proc: ChildProcess, log: string, ms: number): Promise<void> {
  const deadline = Date.now() + ms;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) throw new Error(`${what} exited (${proc.exitCode ?? proc.signalCode}) before it was ready:\n${tail(log)}`);
    if (await probe().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${what} was not ready after ${ms} ms:\n${tail(log)}`);
}

/** One GET over TLS with a client certificate (or a bearer token); resolves status and body. */
export function httpsGet(url: string, ca: string, auth: { cert?: string; key?: string; token?: string }, timeoutMs = 5000)
  : Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = https.get(url, {
      ca: fs.readFileSync(ca), cert: auth.cert && fs.readFileSync(auth.cert), key: auth.key && fs.readFileSync(auth.key),
      headers: auth.token ? { authorization: `Bearer ${auth.token}` } : {}, timeout: timeoutMs,
    }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c) => { body += c; }).on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.once('timeout', () => req.destroy(new Error(`GET ${url}: no answer in ${timeoutMs} ms`))).once('error', reject);
  });
}

/** etcd 3.6, one for the whole fleet (each API server has its own prefix), data on tmpfs when there is one. */
class Etcd {
  private constructor(readonly url: string, private readonly proc: ChildProcess) {}

  static async start(dir: string, bin: string): Promise<Etcd> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const [client, peer] = [await freePort(), await freePort()];
      const log = path.join(dir, `etcd-${attempt}.log`);
      const url = `http://127.0.0.1:${client}`;
      const proc = spawnLogged(bin, ['--data-dir', path.join(dir, `etcd-data-${attempt}`), '--listen-client-urls', url, '--advertise-client-urls', url,
        '--listen-peer-urls', `http://127.0.0.1:${peer}`, '--initial-advertise-peer-urls', `http://127.0.0.1:${peer}`,
        '--initial-cluster', `default=http://127.0.0.1:${peer}`, '--unsafe-no-fsync', '--quota-backend-bytes', String(2 ** 31), '--log-level', 'warn'], log);
      try {
        await waitFor('etcd', () => plainGet(`${url}/health`), proc, log, 30_000);
        return new Etcd(url, proc);
      } catch (e) {
        proc.kill('SIGKILL');
        if (!/address already in use/.test(tail(log))) throw e;
      }
    }
    throw new Error('etcd: three pairs of ports were taken');
  }

  stop(): Promise<void> { return stopProcess(this.proc); }
}

function plainGet(url: string): Promise<boolean> {
  return fetch(url, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok);
}

async function stopProcess(proc: ChildProcess, graceMs = 5000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return;
  const exited = new Promise<void>((r) => proc.once('exit', () => r()));
  proc.kill('SIGTERM');
  const timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
  await exited;
  clearTimeout(timer);
}

/** Options of a fleet of real control planes. */
export interface RealFleetOptions {
  /** Extra kube-apiserver flags, e.g. `--disable-admission-plugins=...` for virt-operator. [none] */
  readonly apiserverFlags?: readonly string[];
  /** How long each API server may take to become ready. [readyBoundMs(the fleet's server count)] */
  readonly readyTimeoutMs?: number;
}

/**
 * How long an API server of a fleet of `servers` may take to become ready: the servers start side by side and share
 * two cores, so the bound grows with their number (90 s for one, as it was for any number; issue 53 item 5).
 */
export const readyBoundMs = (servers: number) => 60_000 + 30_000 * Math.max(1, servers);

export type Identity = { readonly user: string; readonly cert: string; readonly key: string } | { readonly user: string; readonly token: string };

/** One simulated cluster: a real kube-apiserver with RBAC on, reachable at `url`. */
export class RealCluster {
  private proc!: ChildProcess;
  url = '';
  readonly dir: string;
  readonly admin: Identity;
  private readonly log: string;

  constructor(readonly name: string, private readonly fleet: RealFleet) {
    this.dir = path.join(fleet.dir, name);
    fs.mkdirSync(this.dir, { recursive: true });
    this.log = path.join(this.dir, 'kube-apiserver.log');
    const c = fleet.pki.issue(`${name}-admin`, 'mm-admin', ['system:masters']);
    this.admin = { user: 'mm-admin', ...c };
    openssl(['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', 'sa.key'], this.dir);
    openssl(['pkey', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], this.dir);
  }

  get caFile(): string { return this.fleet.pki.caFile; }

  /** Where etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kubectl are. */
  get binDir(): string { return this.fleet.bin; }

  /** Starts (or restarts, keeping its data) the API server; resolves when /readyz answers ok. */
  async start(): Promise<void> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = this.url ? Number(new URL(this.url).port) : await freePort();
      const proc = spawnLogged(path.join(this.fleet.bin, 'kube-apiserver'), this.flags(port), this.log);
      try {
        await waitFor(`kube-apiserver of ${this.name}`, async () => (await httpsGet(`https://127.0.0.1:${port}/readyz`, this.caFile, this.admin as never)).status === 200,
          proc, this.log, this.fleet.options.readyTimeoutMs ?? readyBoundMs(this.fleet.clusters.size));
        this.proc = proc;
        this.url = `https://127.0.0.1:${port}`;
        return;
      } catch (e) {
        proc.kill('SIGKILL');
        if (this.url || !/address already in use/.test(tail(this.log))) throw e;
      }
    }
    throw new Error(`kube-apiserver of ${this.name}: three ports were taken`);
  }

  private flags(port: number): string[] {
    const serving = this.fleet.pki.issue(`${this.name}-serving`, 'kube-apiserver', [], 'IP:127.0.0.1,DNS:localhost');
    return [
      `--etcd-servers=${this.fleet.etcd.url}`, `--etcd-prefix=/mm/${this.name}`,
      '--bind-address=127.0.0.1', `--secure-port=${port}`, '--advertise-address=127.0.0.1', '--endpoint-reconciler-type=none',
      `--tls-cert-file=${serving.cert}`, `--tls-private-key-file=${serving.key}`, `--client-ca-file=${this.caFile}`,
      '--authorization-mode=RBAC', '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
      `--service-account-key-file=${path.join(this.dir, 'sa.pub')}`, `--service-account-signing-key-file=${path.join(this.dir, 'sa.key')}`,
      '--service-cluster-ip-range=10.0.0.0/24', '--disable-admission-plugins=ServiceAccount', '--enable-priority-and-fairness=false', '--allow-privileged=true',
      '--profiling=false', `--cert-dir=${this.dir}`,
      ...(this.fleet.options.apiserverFlags ?? []),
    ];
  }

  /** SIGKILL, as a crash: the data stays in etcd for `start()`. */
  kill(): void {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
    this.proc.kill('SIGKILL');
  }

  async stop(): Promise<void> {
    for (const a of this.agents.values()) a.destroy();
    this.agents.clear();
    if (this.proc) await stopProcess(this.proc);
  }

  /** A client certificate for `user` in `groups` (never system:masters unless asked): real RBAC decides. */
  identity(user: string, groups: string[] = []): Identity {
    return { user, ...this.fleet.pki.issue(`${this.name}-${user.replace(/[^\w.-]/g, '_')}`, user, groups) };
  }

  /** A kubeconfig file for `who` (admin by default), written once. */
  kubeconfig(who: Identity = this.admin): string {
    const file = path.join(this.dir, `kubeconfig-${who.user.replace(/[^\w.-]/g, '_')}`);
    const user = 'token' in who ? { token: who.token } : { 'client-certificate': who.cert, 'client-key': who.key };
    fs.writeFileSync(file, JSON.stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': this.name,
      clusters: [{ name: this.name, cluster: { server: this.url, 'certificate-authority': this.caFile } }],
      users: [{ name: who.user, user }], contexts: [{ name: this.name, context: { cluster: this.name, user: who.user } }],
    }));
    return file;
  }

  private readonly agents = new Map<string, https.Agent>();

  /** One API request as `who` (admin by default) over a kept-alive TLS connection; the body is JSON (or the text given). */
  request(method: string, urlPath: string, body?: unknown, opts: { as?: Identity; contentType?: string; timeoutMs?: number } = {})
    : Promise<{ status: number; json: any; text: string; headers: http.IncomingHttpHeaders }> {
    const who = opts.as ?? this.admin;
    let agent = this.agents.get(who.user);
    if (!agent) {
      agent = new https.Agent({
        keepAlive: true, timeout: KEEP_ALIVE_IDLE_MS, ca: fs.readFileSync(this.caFile),
        ...('token' in who ? {} : { cert: fs.readFileSync(who.cert), key: fs.readFileSync(who.key) }),
      });
      this.agents.set(who.user, agent);
    }
    const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body);
    const headers: Record<string, string> = { accept: 'application/json', ...('token' in who ? { authorization: `Bearer ${who.token}` } : {}) };
    if (data !== undefined) headers['content-type'] = opts.contentType ?? 'application/json';
    const once = (): Promise<{ status: number; json: any; text: string; headers: http.IncomingHttpHeaders }> => new Promise((resolve, reject) => {
      let answered = false;
      const req = https.request(`${this.url}${urlPath}`, { method, agent, headers, timeout: opts.timeoutMs ?? REQUEST_IDLE_MS }, (res) => {
        answered = true;
        let text = '';
        res.setEncoding('utf8').on('data', (c) => { text += c; }).on('end', () => {
          let json: unknown;
          try { json = JSON.parse(text); } catch { json = undefined; }
          resolve({ status: res.statusCode ?? 0, json, text, headers: res.headers });
        });
      });
      req.once('timeout', () => req.destroy(new Error(`${method} ${urlPath}: no answer in ${opts.timeoutMs ?? REQUEST_IDLE_MS} ms`)));
      req.once('error', (e: NodeJS.ErrnoException) => reject(Object.assign(new Error(`${method} ${urlPath}: ${e.message}${req.reusedSocket ? ' (on a kept-alive connection)' : ''}`),
        { code: e.code, replayable: req.reusedSocket && !answered && e.code === 'ECONNRESET' })));
      req.end(data);
    });
    // HTTP/1.1 keep-alive's own race: the server may close a kept-alive connection just as a request goes out on it,
    // and the request fails before any answer (ECONNRESET, "socket hang up"). Node's documentation says to send such
    // a request again (http.ClientRequest.reusedSocket); Go's transport does so for requests it may replay. So do we,
    // once, for the methods a replay cannot change the outcome of: reads, PUT, DELETE and server-side apply.
    const replayable = ['GET', 'HEAD', 'PUT', 'DELETE'].includes(method) || (method === 'PATCH' && headers['content-type'] === 'application/apply-patch+yaml');
    const sent = () => once().catch((e: Error & { replayable?: boolean }) => (replayable && e.replayable ? once() : Promise.reject(e)));
    // and a 429 or 5xx with Retry-After is sent again after it, as client-go does (test/support/kube-retry.ts)
    return withClientGoRetry(`${method} ${urlPath} on ${this.name}`, sent);
  }

  /** The connections `request` holds open to this server for `who` (admin by default), in use or kept alive. */
  openConnections(who: Identity = this.admin): number {
    const agent = this.agents.get(who.user);
    const count = (m: NodeJS.ReadOnlyDict<unknown[]> | undefined) => Object.values(m ?? {}).reduce((n, l) => n + (l?.length ?? 0), 0);
    return agent ? count(agent.sockets) + count(agent.freeSockets) : 0;
  }

  /** Runs the real kubectl against this cluster; resolves stdout, rejects with stderr. */
  kubectl(args: string[], opts: { as?: Identity; input?: string; timeoutMs?: number } = {}): string {
    const cacheDir = path.join(this.dir, 'kubectl-cache');
    return execFileSync(path.join(this.fleet.bin, 'kubectl'), ['--kubeconfig', this.kubeconfig(opts.as), '--cache-dir', cacheDir, ...args],
      { encoding: 'utf8', input: opts.input, stdio: ['pipe', 'pipe', 'pipe'], timeout: opts.timeoutMs ?? 60_000, maxBuffer: 256 * 2 ** 20 });
  }

  /** A ServiceAccount token from TokenRequest (audience: the API server), as the kubelet mounts it. */
  serviceAccountToken(namespace: string, name: string, seconds = 3600): string {
    return this.kubectl(['create', 'token', name, '-n', namespace, `--duration=${seconds}s`]).trim();
  }

  /** A pod's service-account directory (token, ca.crt, namespace), as the kubelet projects it. */
  serviceAccountDir(namespace: string, name: string): string {
    const dir = path.join(this.dir, 'sa', namespace, name);
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, 'token'), this.serviceAccountToken(namespace, name));
    fs.copyFileSync(this.caFile, path.join(dir, 'ca.crt'));
    fs.writeFileSync(path.join(dir, 'namespace'), namespace);
    return dir;
  }
}

/** Several real clusters on one etcd. Always `stop()` it (afterAll), also when a test failed. */
export class RealFleet {
  readonly pki: Pki;
  readonly bin: string;
  etcd!: Etcd;
  readonly clusters = new Map<string, RealCluster>();

  private constructor(readonly dir: string, readonly options: RealFleetOptions) {
    this.bin = kubeBinDir();
    this.pki = new Pki(dir);
  }

  static async start(names: readonly string[], options: RealFleetOptions = {}): Promise<RealFleet> {
    const base = fs.existsSync('/dev/shm') ? '/dev/shm' : os.tmpdir();
    const fleet = new RealFleet(fs.mkdtempSync(path.join(base, 'mm-kube-')), options);
    try {
      fleet.etcd = await Etcd.start(fleet.dir, path.join(fleet.bin, 'etcd'));
      for (const n of names) fleet.clusters.set(n, new RealCluster(n, fleet));
      await Promise.all([...fleet.clusters.values()].map((c) => c.start()));
      return fleet;
    } catch (e) {
      await fleet.stop();
      throw e;
    }
  }

  cluster(name: string): RealCluster {
    const c = this.clusters.get(name);
    if (!c) throw new Error(`no cluster ${name} in this fleet (${[...this.clusters.keys()].join(', ')})`);
    return c;
  }

  async stop(): Promise<void> {
    await Promise.all([...this.clusters.values()].map((c) => c.stop().catch(() => undefined)));
    await this.etcd?.stop().catch(() => undefined);
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Writes a kubeconfig with one context per cluster (named as the cluster) for `who[cluster]` on each; returns `file`. */
export function kubeconfigFile(file: string, clusters: readonly RealCluster[], who: Readonly<Record<string, Identity>>): string {
  const user = (c: RealCluster) => { const w = who[c.name]; return 'token' in w ? { token: w.token } : { 'client-certificate': w.cert, 'client-key': w.key }; };
  fs.writeFileSync(file, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': clusters[0].name,
    clusters: clusters.map((c) => ({ name: c.name, cluster: { server: c.url, 'certificate-authority': c.caFile } })),
    users: clusters.map((c) => ({ name: `${c.name}-user`, user: user(c) })),
    contexts: clusters.map((c) => ({ name: c.name, context: { cluster: c.name, user: `${c.name}-user` } })),
  }));
  return file;
}

/** Builds lib/ (tsc) when `lib/cli/<module>.js` is missing or older than `cli/<module>.ts`: a suite run without `npm run build` first. */
export function ensureBuiltCli(module: string): void {
  const root = path.resolve(__dirname, '..', '..');
  const js = path.join(root, 'lib', 'cli', `${module}.js`);
  if (!fs.existsSync(js) || fs.statSync(js).mtimeMs < fs.statSync(path.join(root, 'cli', `${module}.ts`)).mtimeMs) {
    execFileSync('npx', ['tsc', '-p', '.'], { cwd: root, stdio: 'inherit' });
  }
}
