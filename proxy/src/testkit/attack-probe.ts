#!/usr/bin/env node
/**
 * The attacker's hands for the vantage-point matrix (test/attack-matrix.netns.test.ts): a long-lived process
 * inside one network namespace (`ip netns exec NS node attack-probe.js`) that reads one JSON request a line on
 * stdin and answers one JSON line on stdout, so a cell costs a connection attempt, not a process start.
 *
 * Every attempt is bounded by its `timeoutMs` and says what it measured (`how`):
 *   - `flowed`: the bytes sent came back as the sink's "<sha256> <bytes>" (end to end, intact),
 *   - `ECONNREFUSED` (RST to the SYN), `EHOSTUNREACH`/`ENETUNREACH` (ICMP or no route), `timeout-connect`
 *     (no answer to the SYN within the bound): no connection was ever made,
 *   - `reset`/`closed`/`timeout-open`: connected, then reset, closed or left hanging without the bytes flowing,
 *   - `tls-failed:<code>`: the TLS handshake did not complete,
 *   - `reply:<name>`: the gateway answered a tunnel frame with a REPLY of that status,
 *   - `http:<status>`: an HTTP answer.
 *
 * `attack-probe.js [HOST:PORT...]` also runs a sink on each HOST:PORT (hash what arrives, reply "<sha256> <bytes>" on
 * the client's FIN), so a namespace's attacker and its destinations are one process.
 *
 * Requests: {id, op: 'tcp', host, port, src, bytes, timeoutMs}
 *           {id, op: 'http', host, port, src, path, timeoutMs, body?}   (body: the answer's text too)
 *           {id, op: 'tunnel', host, port, src, timeoutMs, creds?: {ca, cert, key}, send: 'open' | 'publish' | 'garbage',
 *            dstHost?, dstPort?, claim?, bundle?, bytes?}   (TLS when creds, else the frame in the clear; bundle: the
 *            PEM file whose first certificate a PUBLISH carries)
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as readline from 'node:readline';
import * as tls from 'node:tls';
import { FRAME_REPLY, FrameReader, decodeReplyBody, encodeOpen, encodeTrustPublish, refusalName } from '../protocol';

interface Req {
  id: number; op: 'tcp' | 'http' | 'tunnel'; host: string; port: number; src?: string; timeoutMs: number;
  bytes?: number; path?: string; body?: boolean; creds?: { ca: string; cert: string; key: string };
  send?: 'open' | 'publish' | 'garbage'; dstHost?: string; dstPort?: number; claim?: string; bundle?: string;
}
interface Res { how: string; connected: boolean; ms: number; body?: string }

const NO_CONNECTION = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL']);
/**
 * How an error ends an attempt. ECONNRESET before Node's 'connect' still means the handshake completed: the
 * SYN was answered by a SYN-ACK and the server reset the connection before libuv reported the connect (an
 * RST answering the SYN is ECONNREFUSED), so it counts as connected.
 */
function errorHow(e: NodeJS.ErrnoException, connected: boolean): { how: string; connected: boolean } {
  if (!connected && NO_CONNECTION.has(e.code ?? '')) return { how: e.code!, connected: false };
  if (connected || e.code === 'ECONNRESET' || e.code === 'EPIPE') return { how: 'reset', connected: true };
  return { how: e.code ?? e.message, connected };
}

/** Sends `bytes` on an open stream, half-closes, and resolves 'flowed' when the sink's digest of them comes back. */
function exchange(s: net.Socket, bytes: number, settle: (how: string) => void): void {
  const body = crypto.randomBytes(bytes);
  const want = `${crypto.createHash('sha256').update(body).digest('hex')} ${bytes}`;
  let reply = '';
  s.on('data', (d: Buffer) => { reply += d.toString('latin1'); });
  s.on('end', () => settle(reply === want ? 'flowed' : reply ? 'garbled' : 'closed'));
  s.end(body);
}

function tcp(r: Req, done: (x: Res) => void): void {
  const t0 = Date.now();
  let connected = false;
  let settled = false;
  const s = net.connect({ host: r.host, port: r.port, localAddress: r.src, allowHalfOpen: true });
  const settle = (how: string) => { if (settled) return; settled = true; clearTimeout(timer); s.destroy(); done({ how, connected, ms: Date.now() - t0 }); };
  const timer = setTimeout(() => settle(connected ? 'timeout-open' : 'timeout-connect'), r.timeoutMs);
  s.on('connect', () => { connected = true; exchange(s, r.bytes ?? 4096, settle); });
  s.on('error', (e: NodeJS.ErrnoException) => { const x = errorHow(e, connected); connected = x.connected; settle(x.how); });
  s.on('close', () => settle(connected ? 'closed' : 'closed-before-connect'));
}

function httpGet(r: Req, done: (x: Res) => void): void {
  const t0 = Date.now();
  let connected = false;
  let settled = false;
  let body = '';
  const settle = (how: string) => {
    if (settled) return;
    settled = true; clearTimeout(timer); req.destroy();
    done({ how, connected, ms: Date.now() - t0, ...(r.body ? { body } : {}) });
  };
  const req = http.get({ host: r.host, port: r.port, path: r.path, localAddress: r.src, agent: false }, (res) => {
    res.on('data', (d: Buffer) => { if (r.body) body += d; });
    res.on('end', () => settle(`http:${res.statusCode}`));
  });
  req.on('socket', (s) => s.on('connect', () => { connected = true; }));
  const timer = setTimeout(() => settle(connected ? 'timeout-open' : 'timeout-connect'), r.timeoutMs);
  req.on('error', (e: NodeJS.ErrnoException) => { const x = errorHow(e, connected); connected = x.connected; settle(x.how); });
}

/** The first frame a tunnel client sends: OPEN, PUBLISH (a fresh self-signed CA would be needed to pass; any DER does for the checks before) or junk. */
function firstFrame(r: Req): Buffer {
  const connectionId = crypto.randomBytes(16);
  if (r.send === 'open') return encodeOpen({ connectionId, dstHost: r.dstHost!, dstPort: r.dstPort!, sourceCluster: r.claim! });
  if (r.send === 'publish') {
    const pem = fs.readFileSync(r.bundle!, 'utf8');
    const der = Buffer.from(pem.replace(/-----[^-]+-----|\s/g, ''), 'base64');
    return encodeTrustPublish({ connectionId, cluster: r.claim!, sequence: BigInt(Date.now()), certs: [der] });
  }
  return Buffer.from('GET / HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(4));
}

function tunnel(r: Req, done: (x: Res) => void): void {
  const t0 = Date.now();
  let connected = false;
  let settled = false;
  let secure = false;
  const c = r.creds;
  const raw = net.connect({ host: r.host, port: r.port, localAddress: r.src });
  const s: net.Socket = c
    ? tls.connect({ socket: raw, ca: fs.readFileSync(c.ca), cert: fs.readFileSync(c.cert), key: fs.readFileSync(c.key), checkServerIdentity: () => undefined, minVersion: 'TLSv1.3' })
    : raw;
  const settle = (how: string) => {
    if (settled) return;
    settled = true; clearTimeout(timer); s.destroy(); raw.destroy();
    done({ how, connected, ms: Date.now() - t0 });
  };
  const timer = setTimeout(() => settle(connected ? 'timeout-open' : 'timeout-connect'), r.timeoutMs);
  const first = firstFrame(r);
  raw.on('connect', () => { connected = true; if (!c) s.write(first); });
  if (c) raw.on('error', (e: NodeJS.ErrnoException) => { const x = errorHow(e, connected); if (!x.connected) settle(x.how); });
  const reader = new FrameReader(65_543, FRAME_REPLY);
  const onData = (d: Buffer) => {
    const f = reader.push(d);
    if (f.kind !== 'frame') return;
    const reply = decodeReplyBody(f.body);
    if (reply.status !== 0 || r.send !== 'open') { settle(`reply:${refusalName(reply.status)}`); return; }
    s.off('data', onData);
    exchange(s, r.bytes ?? 4096, settle);
  };
  s.on('secureConnect', () => { secure = true; s.write(first); });
  s.on('data', onData);
  s.on('error', (e: NodeJS.ErrnoException) => {
    const x = errorHow(e, connected);
    connected = x.connected;
    if (!connected) settle(x.how);
    else if (c && !secure) settle(`tls-failed:${e.code ?? e.message}`);
    else settle('reset');
  });
  s.on('close', () => settle(c && !secure ? 'tls-failed:closed' : connected ? 'closed' : 'closed-before-connect'));
}

/** Arguments `HOST:PORT` (the last colon splits): also a sink there, as testkit/tool.ts's (the digest of what arrives, on FIN). */
for (const a of process.argv.slice(2)) {
  const i = a.lastIndexOf(':');
  net.createServer({ allowHalfOpen: true }, (s) => {
    const h = crypto.createHash('sha256');
    let n = 0;
    s.on('error', () => undefined);
    s.on('data', (d: Buffer) => { h.update(d); n += d.length; });
    s.on('end', () => s.end(`${h.digest('hex')} ${n}`));
  }).listen(Number(a.slice(i + 1)), a.slice(0, i));
}

const ops = { tcp, http: httpGet, tunnel } as const;
const rl = readline.createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const r = JSON.parse(line) as Req;
  const answer = (x: Res) => process.stdout.write(`${JSON.stringify({ id: r.id, ...x })}\n`);
  try { ops[r.op](r, answer); } catch (e) { answer({ how: `probe-error:${(e as Error).message}`, connected: false, ms: 0 }); }
});
rl.on('close', () => process.exit(0));
setImmediate(() => process.stdout.write('probe ready\n')); // after the sinks' listen calls
