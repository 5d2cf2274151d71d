/**
 * What an endpoint sent just before its reset reaches the other end, as on a direct connection (issue 52: the
 * concurrency bench's open probes through mTLS got no byte, 1-4 of 13 at N >= 4). The probe's server, iperf3 3.12
 * when busy, answers a new connection with `accept(2); write(fd, "\377", 1); close(fd)` (strace, 2026-12-03): it
 * never reads the client's cookie, so when the cookie has arrived the close is an RST right behind the byte, and the
 * relay sees both in one wake-up. security-resets.test.ts ("bytes before a reset") closes a turn of Node's event loop
 * after the write: there the relay thread usually reads the byte before the RST lands, here it cannot.
 *
 *  - a destination that answers and resets in one go: the terminus' relay must read the byte it took the error
 *    with, every mode; each round is made directly too, as the reference;
 *  - a stand-in terminus that resets the tunnel's TCP connection right behind its answer records: the origin's relay
 *    must open and deliver the records it took the error with (reference: a TLS client reaching the stand-in directly);
 *  - the bench's own case: busy tunnels through the same pair, and the probes among them.
 *
 *  - a destination whose answer a bandwidth budget held in the terminus when its reset came: the spliced relay moves
 *    the rest on at once, more than the next socket can send at once, and must let the kernel send it before its
 *    own reset (a close with SO_LINGER {1, 0} discards what is queued and not sent), in both splice relays.
 *
 * Both record layers (ours, tls13relay.c; OpenSSL's, tlsopenssl.c, MMPROXY_TLS_RECORDS=openssl) are run.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { before, describe, it } from 'node:test';
import { startGateway, type StartGatewayOptions } from '../gateway';
import { loadNative } from '../native';
import { FRAME_OPEN, FRAME_REPLY, FrameReader, RefusalCode, decodeOpenBody, decodeReplyBody, encodeOpen, encodeReply } from '../protocol';
import { configFor, startPair, type Pair, type TlsMode } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, silent, sleep, withTimeout, type Pki } from '../testkit/helpers';

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });

type Variant = [name: string, mode: TlsMode, records: 'own' | 'openssl', opts: StartGatewayOptions];
const VARIANTS: Variant[] = [
  ['mtls, our records', 'mtls', 'own', {}], ['mtls, OpenSSL records', 'mtls', 'openssl', {}],
  ['mtls-splice', 'mtls-splice', 'own', {}], ['plaintext, splice', 'plaintext', 'own', {}], ['plaintext, Node streams', 'plaintext', 'own', { dataPath: 'js' }],
];
const ROUNDS = 100;

/** Run `fn` with MMPROXY_TLS_RECORDS as `records` asks (read when a gateway makes its TLS contexts), restored after. */
async function withRecords<T>(records: 'own' | 'openssl', fn: () => Promise<T>): Promise<T> {
  const old = process.env.MMPROXY_TLS_RECORDS;
  if (records === 'openssl') process.env.MMPROXY_TLS_RECORDS = 'openssl'; else delete process.env.MMPROXY_TLS_RECORDS;
  try { return await fn(); } finally { if (old === undefined) delete process.env.MMPROXY_TLS_RECORDS; else process.env.MMPROXY_TLS_RECORDS = old; }
}

/** A server that answers as busy iperf3 does: one byte and a close with the client's bytes unread, back to back, 5-25 ms after the accept. */
async function busyServer(): Promise<{ port: number; close(): void }> {
  const srv = net.createServer({ pauseOnConnect: true }, (s) => {
    s.on('error', () => undefined);
    setTimeout(() => { s.write(Buffer.from([0xff])); s.destroy(); }, 5 + crypto.randomInt(0, 20));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as net.AddressInfo).port, close: () => srv.close() };
}

/** One probe: connect, send `cookie`, collect what comes back until the end; the bytes (possibly none). */
function probe(port: number, cookie: Buffer = Buffer.alloc(37, 1)): Promise<Buffer> {
  return withTimeout(new Promise<Buffer>((resolve) => {
    const got: Buffer[] = [];
    const c = net.connect(port, '127.0.0.1');
    c.on('connect', () => c.write(cookie));
    c.on('data', (d) => got.push(d));
    c.on('error', () => undefined);
    c.on('close', () => resolve(Buffer.concat(got)));
  }), HANG_GUARD_MS, 'probe');
}

async function pairFor([, mode, records, o]: Variant, dstPort: () => number): Promise<Pair> {
  return withRecords(records, () => startPair(mode, pki, () => ({ host: '127.0.0.1', port: dstPort() }), o, o));
}

describe('a destination that answers and resets in one go (busy iperf3)', { timeout: 5 * HANG_GUARD_MS }, () => {
  for (const v of VARIANTS) {
    it(`${v[0]}: ${ROUNDS} x one byte + RST back to back -> the client gets the byte, as it does directly`, async () => {
      const server = await busyServer();
      const pair = await pairFor(v, () => server.port);
      const tally = { through: 0, direct: 0 };
      try {
        for (let i = 0; i < ROUNDS; i++) {
          if ((await probe(pair.cfgA.listen!.intercept!.port)).equals(Buffer.from([0xff]))) tally.through++;
          if ((await probe(server.port)).equals(Buffer.from([0xff]))) tally.direct++;
        }
        assert.deepEqual(tally, { through: ROUNDS, direct: ROUNDS });
      } finally { await pair.close(); server.close(); }
    });
  }
});

/**
 * A stand-in terminus (west's certificate): TLS, OPEN, an accepting REPLY; on the first payload bytes it writes
 * `answer` and resets its TCP connection at once (the records and the RST back to back).
 */
async function resettingTerminus(answer: Buffer): Promise<{ port: number; close(): void }> {
  const f = (n: string) => fs.readFileSync(n);
  const srv = net.createServer((raw) => {
    raw.on('error', () => undefined);
    const s = new tls.TLSSocket(raw, { isServer: true, requestCert: true, rejectUnauthorized: true, ca: f(pki.ca), cert: f(pki.certs.west.cert), key: f(pki.certs.west.key), minVersion: 'TLSv1.3' });
    s.on('error', () => undefined);
    const reader = new FrameReader(4096, FRAME_OPEN);
    let replied = false;
    s.on('data', (d: Buffer) => {
      if (replied) { s.removeAllListeners('data'); s.write(answer); raw.resetAndDestroy(); return; }
      const r = reader.push(d);
      if (r.kind !== 'frame') return;
      replied = true;
      s.write(encodeReply({ status: RefusalCode.ACCEPTED, connectionId: decodeOpenBody(r.body).connectionId, reason: '' }));
      if (r.rest.length) { s.write(answer); raw.resetAndDestroy(); }
    });
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as net.AddressInfo).port, close: () => srv.close() };
}

/** The reference: an origin of our protocol in Node's TLS, straight to the stand-in; the payload it got after the REPLY. */
function directOrigin(port: number): Promise<Buffer> {
  const f = (n: string) => fs.readFileSync(n);
  return withTimeout(new Promise<Buffer>((resolve) => {
    const s = tls.connect({ port, host: '127.0.0.1', ca: f(pki.ca), cert: f(pki.certs.east.cert), key: f(pki.certs.east.key), minVersion: 'TLSv1.3', checkServerIdentity: () => undefined });
    const reader = new FrameReader(4096, FRAME_REPLY);
    const got: Buffer[] = [];
    let open = false;
    s.on('secureConnect', () => s.write(encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: '127.0.0.1', dstPort: 9, sourceCluster: 'east' })));
    s.on('data', (d: Buffer) => {
      if (open) { got.push(d); return; }
      const r = reader.push(d);
      if (r.kind !== 'frame') return;
      assert.equal(decodeReplyBody(r.body).status, RefusalCode.ACCEPTED);
      open = true;
      got.push(r.rest);
      s.write(Buffer.alloc(37, 1));
    });
    s.on('error', () => undefined);
    s.on('close', () => resolve(Buffer.concat(got)));
  }), HANG_GUARD_MS, 'direct origin');
}

describe('a terminus that resets the tunnel right behind its answer', { timeout: 5 * HANG_GUARD_MS }, () => {
  for (const records of ['own', 'openssl'] as const) {
    it(`mtls, ${records === 'own' ? 'our' : "OpenSSL's"} records: ${ROUNDS} x 4 KiB + RST on the tunnel -> the client gets the 4 KiB, as a direct origin does`, async () => {
      const answer = crypto.randomBytes(4096);
      const far = await resettingTerminus(answer);
      const cfg = await configFor('east', 'west', far.port, 'mtls', pki);
      const east = await withRecords(records, () => startGateway(cfg, { logger: silent, originalDestination: () => ({ host: '127.0.0.1', port: 9 }) }));
      const tally = { through: 0, direct: 0 };
      try {
        for (let i = 0; i < ROUNDS; i++) {
          if ((await probe(cfg.listen!.intercept!.port)).equals(answer)) tally.through++;
          if ((await directOrigin(far.port)).equals(answer)) tally.direct++;
        }
        assert.deepEqual(tally, { through: ROUNDS, direct: ROUNDS });
      } finally { await east.close(); far.close(); }
    });
  }
});

describe('the concurrency bench\'s case: probes among busy mTLS tunnels', { timeout: 5 * HANG_GUARD_MS }, () => {
  it('4 bulk streams through the pair, 40 probes to a busy-iperf3-like server among them -> every probe gets its byte', async () => {
    const server = await busyServer();
    const sink = net.createServer((s) => { s.on('error', () => undefined); s.resume(); });
    await new Promise<void>((r) => sink.listen(0, '127.0.0.1', () => r()));
    let dst = (sink.address() as net.AddressInfo).port;
    const pair = await startPair('mtls', pki, () => ({ host: '127.0.0.1', port: dst }));
    const port = pair.cfgA.listen!.intercept!.port;
    const block = Buffer.alloc(1 << 20, 7);
    const bulk = Array.from({ length: 4 }, () => {
      const c = net.connect(port, '127.0.0.1');
      c.on('error', () => undefined);
      const pump = () => { while (!c.destroyed && c.write(block)); if (!c.destroyed) c.once('drain', pump); };
      c.on('connect', pump);
      return c;
    });
    let answered = 0;
    try {
      await sleep(300);
      dst = server.port; // the bulk streams are connected: every new tunnel goes to the busy server
      for (let i = 0; i < 40; i++) if ((await probe(port)).equals(Buffer.from([0xff]))) answered++;
      assert.ok(bulk.every((c) => c.bytesWritten > 0), 'the bulk streams carried data while the probes ran');
      assert.equal(answered, 40);
    } finally { for (const c of bulk) c.destroy(); await pair.close(); server.close(); sink.close(); }
  });
});

/**
 * A destination that writes `answer` unasked, waits `holdMs` after its kernel took it (time for a direct client to
 * read it all), then resets with the client's bytes unread.
 */
async function answerThenReset(answer: Buffer, holdMs: number): Promise<{ port: number; close(): void }> {
  const srv = net.createServer({ pauseOnConnect: true }, (s) => {
    s.on('error', () => undefined);
    s.write(answer, () => setTimeout(() => s.resetAndDestroy(), holdMs));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as net.AddressInfo).port, close: () => srv.close() };
}

describe('an answer a budget held when the destination reset: the splice relay sends it all before its reset', { timeout: 300_000 }, () => {
  const BUDGET = 200_000; // bytes/s toward east, in west (the terminus): the answer's direction
  const answer = crypto.randomBytes(512 * 1024);
  const rounds = 8;
  for (const [name, mode] of [['plaintext', 'plaintext'], ['mtls-splice', 'mtls-splice']] as const) {
    for (const relay of ['pool', 'thread'] as const) {
      it(`${name}, ${relay} relay: ${rounds} x 512 KiB then RST, ~0.15 s of it under a ${BUDGET / 1000} kB/s budget -> the client gets all 512 KiB, as it does directly`, async () => {
        const native = loadNative();
        const was = native.relayMode().mode;
        native.relayMode(relay);
        const server = await answerThenReset(answer, 150);
        const pair = await startPair(mode, pki, () => ({ host: '127.0.0.1', port: server.port }), {}, {}, { bandwidth: BUDGET });
        const got = { through: [] as number[], direct: [] as number[] };
        try {
          for (let i = 0; i < rounds; i++) {
            const t = await probe(pair.cfgA.listen!.intercept!.port);
            got.through.push(t.equals(answer) ? answer.length : t.length);
            const d = await probe(server.port);
            got.direct.push(d.equals(answer) ? answer.length : d.length);
          }
          assert.deepEqual(got, { through: Array(rounds).fill(answer.length), direct: Array(rounds).fill(answer.length) });
        } finally { await pair.close(); server.close(); native.relayMode(was); }
      });
    }
  }
});
