/**
 * Our own TLS 1.3 record layer (native/tls13rec.c, tls13relay.c), which relays every mTLS tunnel once OpenSSL has
 * done the handshake and the header frames: that it is what relays; that it interoperates both ways with OpenSSL's
 * record layer (an older gateway, or MMPROXY_TLS_RECORDS=openssl); KeyUpdate sent, received and answered, by ours
 * and by OpenSSL; and that records flipped, replayed, dropped, reordered, forged or cut on the wire end in a reset
 * at both ends, never in a clean end.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayHandle } from '../gateway';
import { loadNative } from '../native';
import { configFor } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, silent, sleep, withTimeout, type Pki } from '../testkit/helpers';
import { echoRoundTrip, startEcho, startRecordMangler, tcpState, type RecordAttack } from '../testkit/echo';

const native = loadNative();
let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });

type Env = Record<string, string | undefined>;
/** Run `f` with these environment variables (a gateway reads its record settings when it makes its TLS contexts). */
async function withEnv<T>(env: Env, f: () => Promise<T>): Promise<T> {
  const old: Env = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const set = (e: Env) => { for (const [k, v] of Object.entries(e)) { if (v === undefined) delete process.env[k]; else process.env[k] = v; } };
  set(env);
  try { return await f(); } finally { set(old); }
}

/** Gateway A (east, origin) -> [tunnel, maybe through `via`] -> gateway B (west, terminus) -> dst. */
async function chain(dstPort: number, envA: Env, envB: Env, via?: (tunnelPort: number) => Promise<{ port: number }>) {
  const cfgB = await configFor('west', 'east', 1, 'mtls', pki);
  const b: GatewayHandle = await withEnv(envB, () => startGateway(cfgB, { logger: silent, unsafeAllowLoopbackDestinations: true }));
  const hop = via ? await via(cfgB.listen!.tunnel!.port) : { port: cfgB.listen!.tunnel!.port };
  const cfgA = await configFor('east', 'west', hop.port, 'mtls', pki);
  const a: GatewayHandle = await withEnv(envA, () =>
    startGateway(cfgA, { logger: silent, originalDestination: () => ({ host: '127.0.0.1', port: dstPort }) }));
  return { entry: cfgA.listen!.intercept!.port, close: async () => { await a.close(); await b.close(); } };
}

/** sessions on our records / OpenSSL's; KeyUpdates received and sent by the origin (o) and the terminus (t) */
const stats = () => { const [own, openssl, oIn, oOut, tIn, tOut] = native.tlsRecordStats(); return { own, openssl, oIn, oOut, tIn, tOut }; };
type Stats = ReturnType<typeof stats>;
const since = (s0: Stats): Stats => {
  const s = stats();
  return { own: s.own - s0.own, openssl: s.openssl - s0.openssl, oIn: s.oIn - s0.oIn, oOut: s.oOut - s0.oOut, tIn: s.tIn - s0.tIn, tOut: s.tOut - s0.tOut };
};
const NO_KU = { oIn: 0, oOut: 0, tIn: 0, tOut: 0 };
/** the sessions' threads have ended (their counts are in) */
const settled = () => withTimeout((async () => { while (native.tlsLive() > 0) await sleep(10); })(), HANG_GUARD_MS, 'TLS sessions ended');

const OPENSSL: Env = { MMPROXY_TLS_RECORDS: 'openssl', MMPROXY_TLS_KEY_UPDATE_RECORDS: undefined, MMPROXY_TLS_KEY_UPDATE_REQUEST: undefined, MMPROXY_TLS_TEST_TICKETS: undefined, MMPROXY_TLS_TEST_EARLY_KEY_UPDATE: undefined };
const OWN: Env = {
  MMPROXY_TLS_RECORDS: undefined, MMPROXY_TLS_KEY_UPDATE_RECORDS: undefined, MMPROXY_TLS_KEY_UPDATE_REQUEST: undefined,
  MMPROXY_TLS_TEST_TICKETS: undefined, MMPROXY_TLS_TEST_EARLY_KEY_UPDATE: undefined,
};
const OWN_KU64: Env = { ...OWN, MMPROXY_TLS_KEY_UPDATE_RECORDS: '64' };

describe('own TLS 1.3 records: relaying, interoperation, KeyUpdate', { timeout: 5 * HANG_GUARD_MS }, () => {
  let echo: Awaited<ReturnType<typeof startEcho>>;
  before(async () => { echo = await startEcho(); });
  after(async () => { await echo?.close(); });

  async function roundTrip(envA: Env, envB: Env, bytes: number): Promise<Stats> {
    const s0 = stats();
    const c = await chain(echo.port, envA, envB);
    try {
      const r = await withTimeout(echoRoundTrip(c.entry, bytes), HANG_GUARD_MS, 'echo round trip');
      assert.equal(r.got, r.sent, 'the echo equals what was sent (sha256 and length)');
      assert.ok(r.sent.endsWith(` ${bytes}`));
    } finally { await c.close(); }
    await settled();
    return since(s0);
  }

  it('both gateways relay on their own records by default (64 MiB echoed, sha256-equal)', async () => {
    const d = await roundTrip(OWN, OWN, 64 << 20);
    assert.deepEqual(d, { own: 2, openssl: 0, ...NO_KU });
  });

  it('a terminus that sends session tickets: both ends still count records from their own Finished (no nonce reuse)', async () => {
    const TICKETS: Env = { ...OWN, MMPROXY_TLS_TEST_TICKETS: '2' };
    assert.deepEqual(await roundTrip(OWN, TICKETS, 4 << 20), { own: 2, openssl: 0, ...NO_KU }, 'both on our records');
    assert.deepEqual(await roundTrip(OPENSSL, TICKETS, 4 << 20), { own: 1, openssl: 1, ...NO_KU }, 'origin on OpenSSL records');
  });

  it('an origin that sends a KeyUpdate (update_requested) right after its Finished: OpenSSL takes it in the header phase, ours continues at the next key', async () => {
    const EARLY: Env = { ...OWN, MMPROXY_TLS_TEST_EARLY_KEY_UPDATE: '1' };
    assert.deepEqual(await roundTrip(EARLY, OWN, 4 << 20), { own: 2, openssl: 0, ...NO_KU }, 'both on our records');
    assert.deepEqual(await roundTrip(EARLY, OPENSSL, 4 << 20), { own: 1, openssl: 1, ...NO_KU }, 'terminus on OpenSSL records');
    assert.deepEqual(await roundTrip(EARLY, { ...OWN, MMPROXY_TLS_TEST_TICKETS: '2' }, 4 << 20), { own: 2, openssl: 0, ...NO_KU }, 'and tickets');
  });

  it('interoperates with OpenSSL\'s record layer, each side in turn', async () => {
    assert.deepEqual(await roundTrip(OPENSSL, OWN, 32 << 20), { own: 1, openssl: 1, ...NO_KU }, 'origin on OpenSSL records');
    assert.deepEqual(await roundTrip(OWN, OPENSSL, 32 << 20), { own: 1, openssl: 1, ...NO_KU }, 'terminus on OpenSSL records');
  });

  it('KeyUpdate every 64 records: OpenSSL\'s record layer takes ours, each side in turn', async () => {
    const a = await roundTrip(OWN_KU64, OPENSSL, 32 << 20); // 2048 records each way: an update every 48 records
    assert.ok(a.oOut >= 30, `origin's KeyUpdates: ${a.oOut}`);
    assert.deepEqual({ ...a, oOut: 0 }, { own: 1, openssl: 1, ...NO_KU }, 'none asked of OpenSSL, none from it');
    const b = await roundTrip(OPENSSL, OWN_KU64, 32 << 20);
    assert.ok(b.tOut >= 30, `terminus' KeyUpdates: ${b.tOut}`);
    assert.deepEqual({ ...b, tOut: 0 }, { own: 1, openssl: 1, ...NO_KU }, 'none asked of OpenSSL, none from it');
  });

  it('KeyUpdate between gateways on our records: every update received; update_requested answered', async () => {
    const plain = await roundTrip(OWN_KU64, OWN, 32 << 20);
    assert.ok(plain.oOut >= 30, `origin's KeyUpdates: ${plain.oOut}`);
    assert.deepEqual(plain, { own: 2, openssl: 0, oIn: 0, oOut: plain.oOut, tIn: plain.oOut, tOut: 0 }, 'each received; none answered');
    const asked = await roundTrip({ ...OWN_KU64, MMPROXY_TLS_KEY_UPDATE_REQUEST: '1' }, OWN, 32 << 20);
    assert.ok(asked.oOut >= 30, `origin's KeyUpdates: ${asked.oOut}`);
    assert.equal(asked.tIn, asked.oOut, 'the terminus received each');
    // requests that arrive before the terminus' next record are answered once (RFC 8446 section 4.6.3)
    assert.ok(asked.tOut >= 1 && asked.tOut <= asked.oOut, `the terminus answered: ${asked.tOut}`);
    assert.equal(asked.oIn, asked.tOut, 'the origin received each answer');
  });
});

describe('own TLS 1.3 records: tampering on the wire', { timeout: 5 * HANG_GUARD_MS }, () => {
  /** How the destination's connection ended: a reset, or (never acceptable here) a FIN. */
  async function startSinkJudge() {
    const ends: string[] = [];
    const socks = new Set<net.Socket>();
    const dst = net.createServer({ allowHalfOpen: true }, (s) => {
      socks.add(s);
      s.on('data', () => undefined);
      // libuv reports an RST that arrives behind queued data as an end of stream, so an 'end' is judged by the
      // kernel: after a FIN the socket is in CLOSE_WAIT, after an RST it is gone.
      const [local, remote] = [s.localPort!, s.remotePort!];
      s.on('end', () => ends.push(tcpState(local, remote) === undefined ? 'end after RST' : 'end (FIN)'));
      s.on('error', (e: NodeJS.ErrnoException) => ends.push(e.code ?? e.message));
    });
    await new Promise<void>((r) => dst.listen(0, '127.0.0.1', () => r()));
    const close = () => new Promise<void>((r) => { for (const s of socks) s.destroy(); dst.close(() => r()); });
    return { port: (dst.address() as net.AddressInfo).port, ends, close };
  }

  /** a client that streams until its connection ends; resolves with how it ended */
  const streamUntilEnd = (port: number) => new Promise<string>((resolve) => {
    const c = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const buf = crypto.randomBytes(1 << 16);
    c.on('connect', () => {
      const iv = setInterval(() => { if (!c.destroyed && c.writableLength < (1 << 22)) c.write(buf); }, 1);
      c.on('close', () => clearInterval(iv));
    });
    c.on('end', () => resolve('end'));
    c.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });

  const attacks: RecordAttack[] = ['flip', 'replay', 'drop', 'swap', 'forge', 'cut-inside'];
  for (const attack of attacks) {
    it(`a record ${attack === 'cut-inside' ? 'cut in the middle (then FIN)' : attack === 'flip' ? 'with one byte flipped' : `${attack}${attack.endsWith('e') ? 'd' : attack === 'swap' ? 'ped' : attack === 'drop' ? 'ped' : 'ed'}`} mid-stream resets client and destination`, { timeout: 5 * HANG_GUARD_MS }, async () => {
      const sink = await startSinkJudge();
      let mangler: Awaited<ReturnType<typeof startRecordMangler>> | undefined;
      const s0 = stats();
      const c = await chain(sink.port, OWN, OWN, async (p) => (mangler = await startRecordMangler(p, 1 << 20, attack)));
      try {
        const client = await withTimeout(streamUntilEnd(c.entry), HANG_GUARD_MS, 'client end after the attack');
        assert.ok(mangler!.attacked(), 'the forwarder attacked a record');
        assert.match(client, /ECONNRESET|EPIPE/, 'the client sees a reset');
        const t0 = Date.now();
        while (sink.ends.length === 0 && Date.now() - t0 < 5000) await sleep(20);
        assert.equal(sink.ends.length, 1, `one end at the destination: ${sink.ends.join(', ')}`);
        assert.match(sink.ends[0], /^(ECONNRESET|end after RST)$/, 'the destination sees a reset, not a FIN');
      } finally { await c.close(); await mangler?.close(); await sink.close(); }
      await settled();
      assert.equal(since(s0).own, 2, 'both ends relayed on our own records');
    });
  }
});
