/**
 * Peers that die mid-stream, and endpoints that report how their connection ended (issue 14 item 5): used
 * by security-resets.test.ts and `npm run adversarial`.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { FRAME_OPEN, FRAME_REPLY, FrameReader, RefusalCode, decodeOpenBody, decodeReplyBody, encodeOpen, encodeReply } from '../protocol';
import type { Pki } from './helpers';

export type End = 'RST' | 'FIN' | string;

/** What an error on a socket says about its end: ECONNRESET = reset while ESTABLISHED (no FIN came first); EPIPE = a
 * reset after a FIN (the kernel reports a reset in CLOSE_WAIT as EPIPE). */
const kernelSays = (e: NodeJS.ErrnoException) => (e.code === 'ECONNRESET' ? 'RST' : e.code === 'EPIPE' ? 'FIN+RST' : e.code ?? e.message);

/**
 * How a socket ended, as its kernel saw it: 'RST' (reset, no FIN before it), 'FIN' (a FIN), 'FIN+RST' (a FIN,
 * then a reset: a cut stream that looked complete for a while), or another error code. The socket must allow
 * half-open connections (else Node answers a FIN with its own end() and the probe below cannot run).
 *
 * Node's 'end' alone does not prove a FIN. When a reset arrives behind data still queued, libuv reads the data
 * and, seeing POLLHUP after a short read, reports EOF without reading the pending error (uv__stream_io's POLLHUP
 * short-circuit): about one socket in ten of a chattering connection that the peer resets with no FIN at all
 * (plain Node against a raw RST, no gateway involved). So on 'end' an empty write asks the kernel, with no timing
 * involved: ECONNRESET = the EOF was that reset; EPIPE = a FIN came first, then a reset; success = a real FIN.
 */
export function endOf(s: net.Socket): Promise<End> {
  if (!s.allowHalfOpen) throw new Error('endOf needs a socket with allowHalfOpen: true');
  return new Promise((resolve) => {
    const seen: string[] = [];
    let eof = false; // 'end' seen, the kernel not asked yet
    let errored = false; // the first error decides; the same error reported again by other writes is not news
    const onError = (e: NodeJS.ErrnoException) => {
      if (errored) return;
      errored = true;
      eof = false;
      seen.push(kernelSays(e));
    };
    const settleEof = () => { if (eof) { eof = false; seen.push('FIN'); } };
    s.on('error', onError);
    s.on('end', () => {
      if (!s.writable) { seen.push('FIN'); return; } // cannot ask: count it as a FIN (never as a reset)
      eof = true;
      s.write(Buffer.alloc(0), (e) => { if (e) onError(e); else settleEof(); });
    });
    s.on('close', () => { settleEof(); resolve(seen.join('+') || 'closed'); });
  });
}

/** Both directions busy: `s` writes 16 KiB every 5 ms and reads everything. */
export function chatter(s: net.Socket): void {
  const block = crypto.randomBytes(16 * 1024);
  const iv = setInterval(() => { if (s.writable && s.writableLength < 1 << 20) s.write(block); }, 5);
  s.on('data', () => undefined);
  s.on('close', () => clearInterval(iv));
}

/** A destination that chatters back and reports how its connection ended. */
export async function chattyServer(): Promise<{ port: number; ends: Promise<End>[]; close(): void }> {
  const ends: Promise<End>[] = [];
  const socks = new Set<net.Socket>();
  const srv = net.createServer({ allowHalfOpen: true }, (s) => { socks.add(s); ends.push(endOf(s)); chatter(s); });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as net.AddressInfo).port, ends, close: () => { for (const s of socks) s.destroy(); srv.close(); } };
}

/** How a stand-in peer dies: 'rst' = its TCP connection is reset; 'fin' = closed (a FIN, or an RST when bytes were unread). */
export type Death = 'fin' | 'rst';

function die(raw: net.Socket, how: Death): void {
  if (how === 'rst') raw.resetAndDestroy(); else raw.destroy();
}

/**
 * A stand-in peer gateway that dies: it completes TLS (with `pki`; plaintext without) and the header exchange
 * like a real one, carries bytes, then its TCP connection ends without close_notify (a killed process: the
 * kernel sends FIN when nothing was unread, RST otherwise).
 */
export async function dyingTerminus(pki: Pki | undefined, how: () => Death): Promise<{ port: number; close(): void }> {
  const f = (n: string) => fs.readFileSync(n);
  const srv = net.createServer((raw) => {
    raw.on('error', () => undefined);
    const s = pki ? new tls.TLSSocket(raw, { isServer: true, requestCert: true, rejectUnauthorized: true, ca: f(pki.ca), cert: f(pki.certs.west.cert), key: f(pki.certs.west.key), minVersion: 'TLSv1.3' }) : raw;
    s.on('error', () => undefined);
    const reader = new FrameReader(4096, FRAME_OPEN);
    s.on('data', (d: Buffer) => {
      const r = reader.push(d);
      if (r.kind !== 'frame') return;
      s.removeAllListeners('data');
      s.on('data', () => undefined);
      s.write(encodeReply({ status: RefusalCode.ACCEPTED, connectionId: decodeOpenBody(r.body).connectionId, reason: '' }));
      chatter(s);
      setTimeout(() => die(raw, how()), 20 + crypto.randomInt(0, 30));
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as net.AddressInfo).port, close: () => srv.close() };
}

/** A stand-in origin gateway (east's certificate with `pki`; plaintext without) that opens a tunnel, carries bytes, then dies. */
export function dyingOrigin(pki: Pki | undefined, port: number, dstPort: number, how: Death): Promise<void> {
  return new Promise((resolve) => {
    const f = (n: string) => fs.readFileSync(n);
    const raw = net.connect(port, '127.0.0.1');
    raw.on('error', () => resolve());
    const s = pki ? tls.connect({ socket: raw, ca: f(pki.ca), cert: f(pki.certs.east.cert), key: f(pki.certs.east.key), minVersion: 'TLSv1.3', checkServerIdentity: () => undefined }) : raw;
    s.on('error', () => resolve());
    const open = () => s.write(encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: '127.0.0.1', dstPort, sourceCluster: 'east' }));
    if (pki) s.on('secureConnect', open); else open();
    const reader = new FrameReader(4096, FRAME_REPLY);
    s.on('data', (d: Buffer) => {
      const r = reader.push(d);
      if (r.kind !== 'frame') return;
      s.removeAllListeners('data');
      assert.equal(decodeReplyBody(r.body).status, RefusalCode.ACCEPTED);
      chatter(s);
      setTimeout(() => { die(raw, how); resolve(); }, 20 + crypto.randomInt(0, 30));
    });
  });
}

/**
 * A TCP link between two real gateways (bytes pass through untouched: the mTLS handshake, OPEN, REPLY and the
 * BIND exchange are the gateways' own) that plays a gateway's death once the payload flows: when at least
 * `afterBytes` crossed each way (far more than a handshake and the BIND frames, so the raw phase has begun), and
 * 0-30 ms later, the dead side's connection ends with `how()` (as its kernel would) and the survivor's with an RST.
 * `dies`: 'west' = the terminus dies (east's tunnel ends first), 'east' = the origin dies.
 */
export async function dyingLink(toPort: number, dies: 'east' | 'west', how: () => Death, afterBytes = 64 * 1024): Promise<{ port: number; close(): void }> {
  const socks = new Set<net.Socket>();
  const srv = net.createServer((fromEast) => {
    const toWest = net.connect(toPort, '127.0.0.1');
    const pair = [fromEast, toWest];
    const moved = [0, 0];
    let dying = false;
    for (const [i, s] of pair.entries()) {
      socks.add(s);
      s.on('error', () => undefined);
      s.on('close', () => { socks.delete(s); pair[1 - i].destroy(); });
      s.on('data', (d: Buffer) => {
        moved[i] += d.length;
        if (!pair[1 - i].write(d)) { s.pause(); pair[1 - i].once('drain', () => s.resume()); }
        if (dying || moved[0] < afterBytes || moved[1] < afterBytes) return;
        dying = true;
        const [dead, survivor] = dies === 'west' ? [fromEast, toWest] : [toWest, fromEast];
        setTimeout(() => { die(dead, how()); survivor.resetAndDestroy(); }, crypto.randomInt(0, 30));
      });
    }
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as net.AddressInfo).port, close: () => { for (const s of socks) s.destroy(); srv.close(); } };
}
