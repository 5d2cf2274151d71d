/** Test helpers: throwaway PKI (openssl CLI), ports, sink/source endpoints, timeouts. */
import { spawnSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { pino } from 'pino';

export const silent = pino({ level: process.env.TEST_LOG_LEVEL ?? 'silent' });

/**
 * Every directory tmpDir made, removed when the test process exits (node --test runs each file in its own process)
 * and, under jest (the library's suites import this kit), after the importing file's suite: jest ends its workers
 * without their exit handlers, and a kubevirt-real run left its PKI in /tmp every time.
 */
const madeDirs: string[] = [];
const removeMadeDirs = (): void => { for (const d of madeDirs.splice(0)) fs.rmSync(d, { recursive: true, force: true }); };
process.once('exit', removeMadeDirs);
const jestAfterAll = (globalThis as { afterAll?: (fn: () => void) => void }).afterAll;
if (typeof jestAfterAll === 'function') jestAfterAll(removeMadeDirs);

/** A fresh directory under the system's temp directory, removed when this test process exits, even after a failure. */
export function tmpDir(prefix = 'mmproxy-'): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  madeDirs.push(dir);
  return dir;
}

function openssl(args: string[], cwd: string): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}

export interface Pki { dir: string; ca: string; foreignCa: string; certs: Record<string, { cert: string; key: string }> }

/** Fleet CA + gateway certs (URI SAN spiffe://<fleet>/cluster/<name>), a foreign CA and odd certs. */
export function makePki(fleet: string, clusters: string[]): Pki {
  const dir = tmpDir('mmproxy-pki-'); // removed when the test process exits
  const mkCa = (name: string) => openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes',
    '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${name}`,
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], dir);
  mkCa('ca');
  mkCa('foreign-ca');
  const certs: Pki['certs'] = {};
  const issue = (name: string, ca: string, san: string) => {
    openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], dir);
    fs.writeFileSync(path.join(dir, `${name}.ext`), `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n`);
    openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}.key`, '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`], dir);
    certs[name] = { cert: path.join(dir, `${name}.pem`), key: path.join(dir, `${name}.key`) };
  };
  for (const c of clusters) issue(c, 'ca', `URI:spiffe://${fleet}/cluster/${c}`);
  issue('stranger', 'ca', `URI:spiffe://${fleet}/cluster/stranger`); // fleet CA, but not a configured peer
  issue('otherfleet', 'ca', `URI:spiffe://otherfleet/cluster/${clusters[0]}`);
  issue('nosan', 'ca', 'DNS:gateway.example');
  issue('foreign', 'foreign-ca', `URI:spiffe://${fleet}/cluster/${clusters[0]}`); // right name, wrong CA
  return { dir, ca: path.join(dir, 'ca.pem'), foreignCa: path.join(dir, 'foreign-ca.pem'), certs };
}

/**
 * A port to configure a listener on. Not an ephemeral (port 0) pick: between this probe and the real
 * listen, the kernel may hand that ephemeral port to an outgoing connection (seen after the 10,000-
 * connection test: EADDRINUSE). Ports below the local ephemeral range are never auto-assigned, and a
 * port is never handed out twice in one process.
 *
 * Which ports: not 20000-32767, where the library's real-API harness draws its etcd and API server ports
 * (test/support/real-kube.ts) while these files run beside it in `npm test`: a port probed free here was once
 * bound by the other lane before the gateway listened (EADDRINUSE 26800 in CI). And not 15000-15999, the
 * gateway's own default ports. node:test files (the proxy's) take 10000-14999; jest suites of the library that
 * use this kit take 16000-19999.
 */
const handedOut = new Set<number>();
const [PORT_LO, PORT_SPAN] = process.env.JEST_WORKER_ID === undefined ? [10000, 5000] : [16000, 4000];
let nextPort = PORT_LO + (process.pid % 100) * Math.floor(PORT_SPAN / 100);
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let attempts = 0; attempts < PORT_SPAN; attempts++) {
    const p = nextPort;
    nextPort = nextPort + 1 >= PORT_LO + PORT_SPAN ? PORT_LO : nextPort + 1;
    if (handedOut.has(p)) continue;
    const ok = await new Promise<boolean>((resolve) => {
      const s = net.createServer();
      s.once('error', () => resolve(false));
      s.listen(p, host, () => s.close(() => resolve(true)));
    });
    if (ok) { handedOut.add(p); return p; }
  }
  throw new Error(`no free port in ${PORT_LO}-${PORT_LO + PORT_SPAN - 1}`);
}

/**
 * How long a test waits for work that a loaded machine slows (a process starting, TLS handshakes, API calls,
 * thousands of connections) before it calls the work hung: a hang guard, never a latency judgment. At load 20-30
 * on 2 cores a child process took over 15 s to reach its first API call and a p99 tunnel 5 s. A bound that is
 * what a test judges (a configured timeout against the default, a product goal) is written out where it is
 * judged, with why it holds under load.
 */
export const HANG_GUARD_MS = 120_000;

export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise<T>((_, reject) => { t = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms); }),
  ]);
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Sink: hashes everything received; after the client's FIN (half-close) writes "<sha256> <bytes>" and ends. */
export async function startSink(host = '127.0.0.1'): Promise<{ server: net.Server; port: number; close(): Promise<void>; sockets: Set<net.Socket> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => undefined);
    const h = crypto.createHash('sha256');
    let n = 0;
    s.on('data', (d) => { h.update(d); n += d.length; });
    s.on('end', () => s.end(`${h.digest('hex')} ${n}`));
  });
  await new Promise<void>((r) => server.listen(0, host, () => r()));
  return {
    server, sockets, port: (server.address() as net.AddressInfo).port,
    close: () => new Promise<void>((r) => { for (const s of sockets) s.destroy(); server.close(() => r()); }),
  };
}

/**
 * Source: connects, sends `total` bytes of pseudo-random data (hashing them), half-closes, and resolves with
 * the local hash and the sink's reply (which can only arrive if half-close crossed the whole chain).
 */
export function sendAndVerify(port: number, host: string, total: number, chunk = 1 << 20): Promise<{ sent: string; reply: string; ms: number }> {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    // a few distinct blocks in a fixed rotation: a reordering bug changes the hash (blocks are never mutated,
    // the socket may still hold them)
    const blocks = [0, 1, 2].map(() => crypto.randomBytes(Math.min(chunk, Math.max(total, 1))));
    let i = 0;
    const h = crypto.createHash('sha256');
    let sent = 0;
    let reply = '';
    const s = net.connect({ port, host, allowHalfOpen: true });
    s.on('error', reject);
    s.on('data', (d) => { reply += d; });
    s.on('end', () => { s.end(); resolve({ sent: `${h.digest('hex')} ${sent}`, reply, ms: Date.now() - t0 }); });
    const pump = () => {
      while (sent < total) {
        const block = blocks[i++ % blocks.length];
        const b = total - sent >= block.length ? block : block.subarray(0, total - sent);
        h.update(b);
        sent += b.length;
        if (!s.write(b)) { s.once('drain', pump); return; }
      }
      s.end();
    };
    s.on('connect', pump);
  });
}

export function openFds(): number { return fs.readdirSync('/proc/self/fd').length; }

/**
 * How many short connections the leak checks open (chain.test.ts, splice-binding.test.ts): 3,000 by
 * default, MM_SOAK_CONNECTIONS to soak longer (they ran 10,000 each until the suite had to fit in 10
 * minutes: about 150 s of the proxy lane). The checks allow at most 2 (5) descriptors more after than
 * before, and every tunnel, socket and TLS session must be gone, so a leak of one per 1,000 connections
 * or more still fails them; rarer leaks need the soak.
 */
export function shortConnections(fallback = 3_000): number {
  const n = Number(process.env.MM_SOAK_CONNECTIONS ?? fallback);
  return Number.isInteger(n) && n > 0 ? n : fallback;
}

/**
 * The bulk transfer of chain.test.ts, in bytes: 256 MiB per variant by default, MM_BULK_MIB to carry more
 * (it was 1 GiB each: ~37 s of the suite's 10 minutes for four in-process variants). 256 MiB is still 4,000
 * times a socket's buffers, so flow control, the native relays' hand-over and half-close are all exercised;
 * gateways.netns.test.ts keeps carrying 1 GiB through the mTLS gateways across namespaces.
 */
export function bulkBytes(fallbackMiB = 256): number {
  const n = Number(process.env.MM_BULK_MIB ?? fallbackMiB);
  return (Number.isInteger(n) && n > 0 ? n : fallbackMiB) * 1024 * 1024;
}

/** Polls `ok` every 20 ms: resolves with the ms it took to hold, or -1 once `ms` passed without. */
export async function waitUntil(ok: () => boolean, ms: number): Promise<number> {
  const t0 = Date.now();
  while (!ok()) {
    if (Date.now() - t0 > ms) return -1;
    await sleep(20);
  }
  return Date.now() - t0;
}
