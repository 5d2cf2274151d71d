/**
 * The GnuTLS peer of the interop test (gnutls-peer.c next to this file's source): compiled once per test process
 * against the system's libgnutls (Debian: libgnutls28-dev, which scripts/ensure-system-deps.js installs), run as
 * a child process with a deadline of its own and a kill at the caller's.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { HANG_GUARD_MS, tmpDir } from './helpers';

/** What the peer reports when it has sent, received and closed: bytes and sha256 each way, KeyUpdates seen. */
export interface GnutlsPeerReport {
  cipher: string;
  sent: number; sentSha256: string; received: number; receivedSha256: string;
  /** data records received (gnutls_record_recv returns the data of one record per call, here into 16 KiB) */
  recordsReceived: number;
  /** KeyUpdates the peer started (gnutls_session_key_update), and all it sent (answers included) */
  kuInitiated: number; kuSent: number; kuSentRequested: number;
  kuReceived: number; kuReceivedRequested: number;
}

export interface GnutlsPeerOptions {
  role: 'client' | 'server';
  /** client: the port to connect to (127.0.0.1); server: ignored (it listens on a port of its own) */
  port?: number;
  ca: string; cert: string; key: string;
  /** GnuTLS priority string (which suites it offers or accepts) */
  priority: string;
  /** bytes to send, and to expect */
  bytes: number;
  /** a KeyUpdate after every this many bytes sent (0: none), with update_requested when `kuRequest` */
  kuEvery: number; kuRequest: boolean;
  /** the last 16 KiB wait until `bytes` have arrived (so a KeyUpdate the other side asks for is answered) */
  hold: boolean;
  deadlineMs: number;
}

const SOURCE = path.resolve(__dirname, '..', '..', 'src', 'testkit', 'gnutls-peer.c');
/**
 * The compiler and the peer are not under test: a sanitizer runtime preloaded for the addon (LD_PRELOAD, see the
 * README's record-layer checks) stays out of them: under it the peer hung in the test (waiting on a futex, nothing written).
 */
const ENV = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LD_PRELOAD'));
let built: string | undefined;

/** Compile the peer (once per process); throws, saying what is missing, when it cannot be built. */
export function buildGnutlsPeer(): string {
  if (built) return built;
  const pc = spawnSync('pkg-config', ['--cflags', '--libs', 'gnutls'], { encoding: 'utf8', env: ENV });
  if (pc.error || pc.status !== 0) {
    throw new Error('the GnuTLS interop test needs libgnutls and its headers (pkg-config gnutls failed: '
      + `${pc.error?.message ?? pc.stderr.trim()}); run scripts/ensure-system-deps.js as root, or apt-get install libgnutls28-dev pkg-config`);
  }
  const out = path.join(tmpDir('mmproxy-gnutls-'), 'gnutls-peer');
  const cc = spawnSync('cc', ['-O2', '-Wall', '-Wextra', '-Werror', '-o', out, SOURCE, ...pc.stdout.trim().split(/\s+/)],
    { encoding: 'utf8', timeout: HANG_GUARD_MS, env: ENV });
  if (cc.error || cc.status !== 0) throw new Error(`compiling ${SOURCE} failed: ${cc.error?.message ?? cc.stderr}`);
  process.once('exit', () => fs.rmSync(path.dirname(out), { recursive: true, force: true }));
  built = out;
  return out;
}

export interface GnutlsPeer {
  /** the port the server listens on (a client: the port it was given) */
  port: Promise<number>;
  /** the report, or a rejection with the peer's stderr (exit status, deadline, kill) */
  done: Promise<GnutlsPeerReport>;
  kill(): void;
}

/** Start the peer; it is killed at `deadlineMs` + 5 s if it has not ended by itself. */
export function startGnutlsPeer(o: GnutlsPeerOptions): GnutlsPeer {
  const args = [o.role, String(o.port ?? 0), o.ca, o.cert, o.key, o.priority, String(o.bytes), String(o.kuEvery),
    o.kuRequest ? '1' : '0', o.hold ? '1' : '0', String(o.deadlineMs)];
  const child: ChildProcess = spawn(buildGnutlsPeer(), args, { stdio: ['ignore', 'pipe', 'pipe'], timeout: o.deadlineMs + 5000, killSignal: 'SIGKILL', env: ENV });
  let out = '', err = '';
  let portResolve!: (p: number) => void, portReject!: (e: Error) => void;
  const port = new Promise<number>((res, rej) => { portResolve = res; portReject = rej; });
  if (o.role === 'client') portResolve(o.port!);
  child.stdout!.on('data', (d: Buffer) => {
    out += d.toString();
    const m = /^PORT (\d+)$/m.exec(out);
    if (m) portResolve(Number(m[1]));
  });
  child.stderr!.on('data', (d: Buffer) => { err += d.toString(); });
  const done = new Promise<GnutlsPeerReport>((resolve, reject) => {
    child.on('error', (e) => { portReject(e); reject(e); });
    child.on('close', (code, signal) => {
      const fail = new Error(`gnutls peer (${o.role}) ended with ${signal ?? `status ${code}`}: ${err.trim() || '(no message)'}`);
      portReject(fail);
      const line = out.split('\n').find((l) => l.startsWith('{'));
      if (code !== 0 || !line) { reject(fail); return; }
      resolve(JSON.parse(line) as GnutlsPeerReport);
    });
  });
  port.catch(() => undefined);
  return { port, done, kill: () => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); } };
}
