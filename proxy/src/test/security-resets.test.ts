/**
 * Issue 14, item 5: a forced end is a reset on both sides, every time. A cut-off stream must never look
 * complete: the drain timeout, and a peer gateway that dies (its kernel sends a FIN or an RST, never a TLS
 * close_notify), end the in-cluster connections with RST, never with FIN.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { startGateway, type StartGatewayOptions } from '../gateway';
import { FRAME_OPEN, FRAME_REPLY, FrameReader, RefusalCode, decodeOpenBody, decodeReplyBody, encodeOpen, encodeReply } from '../protocol';
import { configFor, startPair } from '../testkit/gateways';
import { makePki, silent, sleep, withTimeout, type Pki } from '../testkit/helpers';

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });

type End = 'RST' | 'FIN' | string;
/** How a socket ended: 'RST' (ECONNRESET, or EPIPE on a write), 'FIN' (a clean end), or another error. */
function endOf(s: net.Socket): Promise<End> {
  return new Promise((resolve) => {
    const seen: string[] = [];
    s.on('error', (e: NodeJS.ErrnoException) => seen.push(e.code === 'ECONNRESET' || e.code === 'EPIPE' ? 'RST' : e.code ?? e.message));
    s.on('end', () => seen.push('FIN'));
    // the first event decides (a FIN before an RST is a cut stream that looked complete for a while)
    s.on('close', () => resolve(seen.join('+') || 'closed'));
  });
}

/** Both directions busy: `s` writes 16 KiB every 5 ms and reads everything. */
function chatter(s: net.Socket): void {
  const block = crypto.randomBytes(16 * 1024);
  const iv = setInterval(() => { if (s.writable && s.writableLength < 1 << 20) s.write(block); }, 5);
  s.on('data', () => undefined);
  s.on('close', () => clearInterval(iv));
}

/** A destination that chatters back and reports how its connection ended. */
async function chattyServer(): Promise<{ port: number; ends: Promise<End>[]; close(): void }> {
  const ends: Promise<End>[] = [];
  const socks = new Set<net.Socket>();
  const srv = net.createServer({ allowHalfOpen: true }, (s) => { socks.add(s); ends.push(endOf(s)); chatter(s); });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as net.AddressInfo).port, ends, close: () => { for (const s of socks) s.destroy(); srv.close(); } };
}

const variants: [string, 'mtls' | 'plaintext', StartGatewayOptions][] = [
  ['mtls, native relay', 'mtls', {}], ['plaintext, splice', 'plaintext', {}], ['plaintext, Node streams', 'plaintext', { dataPath: 'js' }],
];

describe('drain timeout cuts transfers with resets on both sides', { timeout: 120_000 }, () => {
  for (const [name, mode, o] of variants) {
    for (const who of ['terminus', 'origin'] as const) {
      it(`${name}: ${who} drain times out -> client and destination both see a reset`, async () => {
        const server = await chattyServer();
        const pair = await startPair(mode, pki, () => ({ host: '127.0.0.1', port: server.port }), o, o);
        try {
          const c = net.connect({ port: pair.cfgA.listen!.intercept!.port, host: '127.0.0.1', allowHalfOpen: true });
          const clientEnd = endOf(c);
          chatter(c);
          for (let k = 0; k < 500 && server.ends.length === 0; k++) await sleep(10);
          assert.equal(server.ends.length, 1, 'the tunnel is up');
          await sleep(100);
          await (who === 'terminus' ? pair.b : pair.a).drain(200);
          const [ce, se] = await withTimeout(Promise.all([clientEnd, server.ends[0]]), 10_000, 'ends');
          assert.deepEqual({ client: ce, destination: se }, { client: 'RST', destination: 'RST' });
        } finally { await pair.close(); server.close(); }
      });
    }
  }
});

/**
 * A stand-in peer gateway that dies: it completes TLS and the header exchange like a real one, carries
 * bytes, then its TCP connection ends without close_notify (a killed process: the kernel sends FIN when
 * nothing was unread, RST otherwise).
 */
async function dyingTerminus(how: () => 'fin' | 'rst'): Promise<{ port: number; close(): void }> {
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
function dyingOrigin(port: number, dstPort: number, how: 'fin' | 'rst'): Promise<void> {
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

const ROUNDS = 300;

for (const dataPath of ['auto'] as const) {
  describe('a dying peer gateway is a reset, every time (native relay)', { timeout: 240_000 }, () => {
    let server: Awaited<ReturnType<typeof chattyServer>>;
    before(async () => { server = await chattyServer(); });
    after(() => server?.close());

    it(`origin side: ${ROUNDS} far-end deaths mid-stream (FIN or RST without close_notify) -> 0 FINs at the client`, async () => {
      let k = 0;
      const far = await dyingTerminus(() => (k++ % 2 ? 'rst' : 'fin'));
      const cfg = await configFor('east', 'west', far.port, 'mtls', pki);
      const east = await startGateway(cfg, { logger: silent, dataPath, originalDestination: () => ({ host: '127.0.0.1', port: 9 }) });
      const tally: Record<string, number> = {};
      try {
        for (let done = 0; done < ROUNDS; done += 10) {
          const batch = Array.from({ length: 10 }, () => {
            const c = net.connect({ port: cfg.listen!.intercept!.port, host: '127.0.0.1', allowHalfOpen: true });
            chatter(c);
            return endOf(c);
          });
          for (const e of await withTimeout(Promise.all(batch), 20_000, 'batch')) tally[e] = (tally[e] ?? 0) + 1;
        }
      } finally { await east.close(); far.close(); }
      assert.deepEqual(tally, { RST: ROUNDS }, JSON.stringify(tally));
    });

    it(`terminus side: ${ROUNDS} origin deaths mid-stream -> 0 FINs at the destination`, async () => {
      const cfg = await configFor('west', 'east', 1, 'mtls', pki);
      const west = await startGateway(cfg, { logger: silent, dataPath, unsafeAllowLoopbackDestinations: true });
      const first = server.ends.length;
      try {
        for (let done = 0; done < ROUNDS; done += 10) {
          await withTimeout(Promise.all(Array.from({ length: 10 }, (_, i) => dyingOrigin(cfg.listen!.tunnel!.port, server.port, (done + i) % 2 ? 'rst' : 'fin'))), 20_000, 'batch');
        }
        for (let w = 0; w < 1000 && server.ends.length < first + ROUNDS; w++) await sleep(10);
        const ends = await withTimeout(Promise.all(server.ends.slice(first)), 20_000, 'destination ends');
        const tally: Record<string, number> = {};
        for (const e of ends) tally[e] = (tally[e] ?? 0) + 1;
        assert.deepEqual(tally, { RST: ROUNDS }, JSON.stringify(tally));
      } finally { await west.close(); }
    });
  });
}
