/**
 * Issue 14, item 5: a forced end is a reset on both sides, every time. A cut-off stream must never look
 * complete: the drain timeout, and a peer gateway that dies (its kernel sends a FIN or an RST, never a TLS
 * close_notify), end the in-cluster connections with RST, never with FIN. How an end is judged (endOf):
 * by the kernel's answer, not by Node's 'end' event alone, which calls some resets a FIN (see dying-peers.ts).
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as net from 'node:net';
import { before, describe, it } from 'node:test';
import { startGateway, type StartGatewayOptions } from '../gateway';
import { chatter, chattyServer, dyingOrigin, dyingTerminus, endOf, type Death, type End } from '../testkit/dying-peers';
import { configFor, startPair, type TlsMode } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, silent, sleep, withTimeout, type Pki } from '../testkit/helpers';

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });

const variants: [string, TlsMode, StartGatewayOptions][] = [
  ['mtls, native relay', 'mtls', {}], ['mtls-splice, native splice', 'mtls-splice', {}], ['plaintext, splice', 'plaintext', {}], ['plaintext, Node streams', 'plaintext', { dataPath: 'js' }],
];

describe('drain timeout cuts transfers with resets on both sides', { timeout: 5 * HANG_GUARD_MS }, () => {
  for (const [name, mode, o] of variants) {
    for (const who of ['terminus', 'origin'] as const) {
      it(`${name}: ${who} drain times out -> client and destination both see a reset`, async () => {
        const server = await chattyServer();
        const pair = await startPair(mode, pki, () => ({ host: '127.0.0.1', port: server.port }), o, o);
        try {
          const c = net.connect({ port: pair.cfgA.listen!.intercept!.port, host: '127.0.0.1', allowHalfOpen: true });
          const clientEnd = endOf(c);
          chatter(c);
          for (const end = Date.now() + HANG_GUARD_MS; Date.now() < end && server.ends.length === 0;) await sleep(10);
          assert.equal(server.ends.length, 1, 'the tunnel is up');
          await sleep(100);
          await (who === 'terminus' ? pair.b : pair.a).drain(200);
          const [ce, se] = await withTimeout(Promise.all([clientEnd, server.ends[0]]), HANG_GUARD_MS, 'ends');
          assert.deepEqual({ client: ce, destination: se }, { client: 'RST', destination: 'RST' });
        } finally { await pair.close(); server.close(); }
      });
    }
  }
});

/** `n` chattering connections to `port`, 10 at a time, each ended by `end(c)` 20-50 ms after it connects. */
async function peersThatEnd(port: number, n: number, end: (c: net.Socket) => void): Promise<void> {
  for (let done = 0; done < n; done += 10) {
    await withTimeout(Promise.all(Array.from({ length: 10 }, () => new Promise<void>((resolve) => {
      const c = net.connect(port, '127.0.0.1');
      c.on('error', () => resolve());
      chatter(c);
      c.on('connect', () => setTimeout(() => { end(c); resolve(); }, 20 + crypto.randomInt(0, 30)));
    }))), HANG_GUARD_MS, 'peers');
  }
}

/** How many of `ends` there are of each kind, once `count` of them exist (bounded waits, no sleeps in the verdict). */
async function tallyOf(ends: Promise<End>[], count: number): Promise<Record<string, number>> {
  for (const end = Date.now() + HANG_GUARD_MS; Date.now() < end && ends.length < count;) await sleep(10);
  const tally: Record<string, number> = {};
  for (const e of await withTimeout(Promise.all(ends), HANG_GUARD_MS, 'ends')) tally[e] = (tally[e] ?? 0) + 1;
  return tally;
}

// The judge first: Node's 'end' alone calls about one in ten of these resets a FIN (libuv's POLLHUP
// short-circuit); endOf must say RST for every one, and FIN where there was one.
describe('endOf tells a reset from a FIN as the kernel saw it', { timeout: 5 * HANG_GUARD_MS }, () => {
  it('200 resets with bytes in flight are RST, every time; 50 FINs are FIN', async () => {
    const server = await chattyServer();
    try {
      await peersThatEnd(server.port, 200, (c) => c.resetAndDestroy());
      assert.deepEqual(await tallyOf(server.ends, 200), { RST: 200 });
      const fins = server.ends.length;
      await peersThatEnd(server.port, 50, (c) => { c.end(); setTimeout(() => c.destroy(), 200); });
      const tally = await tallyOf(server.ends, fins + 50);
      delete tally.RST;
      assert.deepEqual(Object.keys(tally).filter((k) => !k.startsWith('FIN')), [], JSON.stringify(tally));
      assert.equal(Object.values(tally).reduce((a, b) => a + b, 0), 50, JSON.stringify(tally));
    } finally { server.close(); }
  });
});

// A dying peer gateway, mid-stream, both directions busy: its kernel ends the tunnel's TCP connection with a
// FIN (nothing unread) or an RST, never with close_notify. With mTLS both are a cut stream: the in-cluster
// end must see an RST. In plaintext a FIN is a clean end by design, so there the peer dies with an RST.
const ROUNDS: [string, TlsMode, StartGatewayOptions, Death[], number][] = [
  ['mtls, native relay', 'mtls', {}, ['fin', 'rst'], 300],
  ['plaintext, splice', 'plaintext', {}, ['rst'], 150],
  ['plaintext, Node streams', 'plaintext', { dataPath: 'js' }, ['rst'], 150],
];

describe('a dying peer gateway is a reset, every time', { timeout: 5 * HANG_GUARD_MS }, () => {
  for (const [name, mode, opts, deaths, rounds] of ROUNDS) {
    const tlsPki = () => (mode === 'plaintext' ? undefined : pki);
    it(`${name}, origin side: ${rounds} far-end deaths mid-stream (${deaths.join(' or ')}) -> ${rounds} RSTs at the client, 0 FINs`, async () => {
      let k = 0;
      const far = await dyingTerminus(tlsPki(), () => deaths[k++ % deaths.length]);
      const cfg = await configFor('east', 'west', far.port, mode, tlsPki());
      const east = await startGateway(cfg, { logger: silent, ...opts, originalDestination: () => ({ host: '127.0.0.1', port: 9 }) });
      const ends: Promise<End>[] = [];
      try {
        for (let done = 0; done < rounds; done += 10) {
          const batch = Array.from({ length: 10 }, () => {
            const c = net.connect({ port: cfg.listen!.intercept!.port, host: '127.0.0.1', allowHalfOpen: true });
            chatter(c);
            return endOf(c);
          });
          ends.push(...batch);
          await withTimeout(Promise.all(batch), HANG_GUARD_MS, 'batch');
        }
        assert.deepEqual(await tallyOf(ends, rounds), { RST: rounds });
      } finally { await east.close(); far.close(); }
    });
    it(`${name}, terminus side: ${rounds} origin deaths mid-stream (${deaths.join(' or ')}) -> ${rounds} RSTs at the destination, 0 FINs`, async () => {
      const server = await chattyServer();
      const cfg = await configFor('west', 'east', 1, mode, tlsPki());
      const west = await startGateway(cfg, { logger: silent, ...opts, unsafeAllowLoopbackDestinations: true });
      try {
        for (let done = 0; done < rounds; done += 10) {
          await withTimeout(Promise.all(Array.from({ length: 10 }, (_, i) =>
            dyingOrigin(tlsPki(), cfg.listen!.tunnel!.port, server.port, deaths[(done + i) % deaths.length]))), HANG_GUARD_MS, 'batch');
        }
        assert.deepEqual(await tallyOf(server.ends, rounds), { RST: rounds });
      } finally { await west.close(); server.close(); }
    });
  }
});

/**
 * What a destination sent just before its reset reaches the client, as it does on a direct connection: iperf3's
 * "busy" answer (one byte, then a close with the client's cookie unread, which is an RST). The splice relay used to
 * drop that byte when it and the RST came in one poll wake-up (it took the socket's error first): 1 round in 20-60
 * (2026-12-02, found by the concurrency bench's open-time probe). Each round is made directly too, as the reference.
 */
describe('bytes before a reset', { timeout: 5 * HANG_GUARD_MS }, () => {
  const rounds = 100;
  /** One round: connect, send a cookie, what comes back before the end. */
  const round = (port: number) => withTimeout(new Promise<boolean>((resolve) => {
    const c = net.connect(port, '127.0.0.1');
    c.on('connect', () => c.write(Buffer.alloc(37, 1)));
    c.on('data', () => { c.destroy(); resolve(true); });
    c.on('error', () => resolve(false));
    c.on('close', () => resolve(false));
  }), HANG_GUARD_MS, 'round');
  for (const [name, mode, o] of variants) {
    it(`${name}: ${rounds} x a byte then RST from the destination -> the client gets the byte, as it does directly`, async () => {
      const server = net.createServer((s) => { s.on('error', () => {}); s.pause(); setTimeout(() => s.write(Buffer.from([0xfe]), () => s.destroy()), 30); });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as net.AddressInfo).port;
      const pair = await startPair(mode, pki, () => ({ host: '127.0.0.1', port }), o, o);
      let through = 0;
      let direct = 0;
      try {
        for (let i = 0; i < rounds; i++) {
          if (await round(pair.cfgA.listen!.intercept!.port)) through++;
          if (await round(port)) direct++;
        }
        assert.equal(direct, rounds, 'the reference: directly, the byte always arrives');
        assert.equal(through, rounds);
      } finally { await pair.close(); server.close(); }
    });
  }
});
