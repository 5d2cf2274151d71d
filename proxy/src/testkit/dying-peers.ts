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
/** How a socket ended: 'RST' (ECONNRESET, or EPIPE on a write), 'FIN' (a clean end), or another error. */
export function endOf(s: net.Socket): Promise<End> {
  return new Promise((resolve) => {
    const seen: string[] = [];
    s.on('error', (e: NodeJS.ErrnoException) => seen.push(e.code === 'ECONNRESET' || e.code === 'EPIPE' ? 'RST' : e.code ?? e.message));
    s.on('end', () => seen.push('FIN'));
    // the first event decides (a FIN before an RST is a cut stream that looked complete for a while)
    s.on('close', () => resolve(seen.join('+') || 'closed'));
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

/**
 * A stand-in peer gateway that dies: it completes TLS and the header exchange like a real one, carries
 * bytes, then its TCP connection ends without close_notify (a killed process: the kernel sends FIN when
 * nothing was unread, RST otherwise).
 */
export async function dyingTerminus(pki: Pki, how: () => 'fin' | 'rst'): Promise<{ port: number; close(): void }> {
  const f = (n: string) => fs.readFileSync(n);
  const srv = net.createServer((raw) => {
    raw.on('error', () => undefined);
    const ts = new tls.TLSSocket(raw, { isServer: true, requestCert: true, rejectUnauthorized: true, ca: f(pki.ca), cert: f(pki.certs.west.cert), key: f(pki.certs.west.key), minVersion: 'TLSv1.3' });
    ts.on('error', () => undefined);
    const reader = new FrameReader(4096, FRAME_OPEN);
    ts.on('data', (d: Buffer) => {
      const r = reader.push(d);
      if (r.kind !== 'frame') return;
      ts.removeAllListeners('data');
      ts.on('data', () => undefined);
      ts.write(encodeReply({ status: RefusalCode.ACCEPTED, connectionId: decodeOpenBody(r.body).connectionId, reason: '' }));
      chatter(ts);
      setTimeout(() => { if (how() === 'rst') raw.resetAndDestroy(); else raw.destroy(); }, 20 + crypto.randomInt(0, 30));
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as net.AddressInfo).port, close: () => srv.close() };
}

/** A stand-in origin gateway (east's certificate) that opens a tunnel, carries bytes, then dies. */
export function dyingOrigin(pki: Pki, port: number, dstPort: number, how: 'fin' | 'rst'): Promise<void> {
  return new Promise((resolve) => {
    const f = (n: string) => fs.readFileSync(n);
    const raw = net.connect(port, '127.0.0.1');
    raw.on('error', () => resolve());
    const ts = tls.connect({ socket: raw, ca: f(pki.ca), cert: f(pki.certs.east.cert), key: f(pki.certs.east.key), minVersion: 'TLSv1.3', checkServerIdentity: () => undefined });
    ts.on('error', () => resolve());
    ts.on('secureConnect', () => ts.write(encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: '127.0.0.1', dstPort, sourceCluster: 'east' })));
    const reader = new FrameReader(4096, FRAME_REPLY);
    ts.on('data', (d: Buffer) => {
      const r = reader.push(d);
      if (r.kind !== 'frame') return;
      ts.removeAllListeners('data');
      assert.equal(decodeReplyBody(r.body).status, RefusalCode.ACCEPTED);
      chatter(ts);
      setTimeout(() => { if (how === 'rst') raw.resetAndDestroy(); else raw.destroy(); resolve(); }, 20 + crypto.randomInt(0, 30));
    });
  });
}

