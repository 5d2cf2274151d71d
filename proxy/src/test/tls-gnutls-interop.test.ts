/**
 * Our TLS 1.3 record layer (native/tls13rec.c, tls13relay.c, continued from OpenSSL's handshake by
 * tlshandover.c) against GnuTLS, an implementation that is neither ours nor OpenSSL: a small GnuTLS program
 * (testkit/gnutls-peer.c, compiled here against the system's libgnutls) is the peer, the addon's own session the
 * other end, in both roles and in each of the three TLS 1.3 suites the addon offers. Each run carries 4 MiB each
 * way at once (sha256-equal at both ends) with KeyUpdates both ways: without update_requested, GnuTLS asking
 * ours, ours asking GnuTLS. Both ends count every KeyUpdate (GnuTLS through a handshake hook, ours in
 * tlsRecordStats), and the counts must agree message for message.
 *
 * GnuTLS 3.7 refuses more than 8 KeyUpdates from its peer within 1000 ms (lib/tls13/key_update.c,
 * KEY_UPDATES_PER_WINDOW: "too many handshake packets"), so ours updates at MMPROXY_TLS_KEY_UPDATE_RECORDS=128 here
 * (before a batch of 32 records that would pass 128 with one key): 2 or 3 in 4 MiB (257 records in the runs seen).
 * GnuTLS's own updates are spaced so ours' cap on unasked KeyUpdates (8, then one per 16 records of data) holds.
 * Requests never cross here: GnuTLS 3.7.9 fails with "An illegal parameter was found" when an update_requested
 * arrives while its own is unanswered (HSK_KEY_UPDATE_ASKED), though RFC 8446 section 4.6.3 allows crossing
 * requests (seen with both sides asking: 2 runs of 6 failed so at GnuTLS, ours took every message).
 * Not gnutls-cli / gnutls-serv: gnutls-serv cannot send a KeyUpdate, and gnutls-cli writes what it receives to
 * stdout one byte per write(2) between its status lines (4 MiB took 35 s at load 18), so a piping harness with a
 * shorter deadline stalls about 1 MB in and kills it, which the relay then reports as a reset.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { loadNative, socketFd, stopReading, type TlsCtx, type TlsHandle, type TlsPhase1, type TlsPhase2 } from '../native';
import { buildGnutlsPeer, startGnutlsPeer, type GnutlsPeer, type GnutlsPeerReport } from '../testkit/gnutls-peer';
import { HANG_GUARD_MS, makePki, sleep, withTimeout, type Pki } from '../testkit/helpers';

const native = loadNative();
const pem = (f: string) => fs.readFileSync(f);
const BYTES = 4 << 20;
const CHUNK = 16384;
/** The GnuTLS peer's own deadline: a hang guard for 4 MiB each way with KeyUpdates (the work a loaded machine slows). */
const DEADLINE_MS = HANG_GUARD_MS;

type Env = Record<string, string | undefined>;
function withEnv<T>(env: Env, f: () => T): T {
  const old: Env = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  const set = (e: Env) => { for (const [k, v] of Object.entries(e)) { if (v === undefined) delete process.env[k]; else process.env[k] = v; } };
  set(env);
  try { return f(); } finally { set(old); }
}

/** GnuTLS's name of the suite's cipher, its priority string (only that suite), OpenSSL's name */
const SUITES = [
  ['AES-128-GCM', 'TLS_AES_128_GCM_SHA256'], ['AES-256-GCM', 'TLS_AES_256_GCM_SHA384'], ['CHACHA20-POLY1305', 'TLS_CHACHA20_POLY1305_SHA256'],
].map(([cipher, openssl]) => ({ cipher, openssl, priority: `NORMAL:-VERS-ALL:+VERS-TLS1.3:-CIPHER-ALL:+${cipher}` }));

interface Mode {
  /** the addon's KeyUpdate settings (read when its TLS context is made) */
  env: Env;
  /** GnuTLS: a KeyUpdate every `kuEvery` bytes, asking for ours when `kuRequest`; `hold`: its last chunk waits */
  peer: { kuEvery: number; kuRequest: boolean; hold: boolean };
  /** our plaintext side's last chunk waits until all of GnuTLS' data has arrived (so ours answers a late request) */
  appHold: boolean;
  check(r: GnutlsPeerReport, ours: { in: number; out: number }): void;
}
const BASE_ENV: Env = {
  MMPROXY_TLS_RECORDS: undefined, MMPROXY_TLS_CIPHERSUITES: undefined, MMPROXY_TLS_TEST_TICKETS: undefined, MMPROXY_TLS_TEST_EARLY_KEY_UPDATE: undefined,
};
const MODES: Record<string, Mode> = {
  'KeyUpdates both ways, none asking for the other\'s': {
    env: { ...BASE_ENV, MMPROXY_TLS_KEY_UPDATE_RECORDS: '128', MMPROXY_TLS_KEY_UPDATE_REQUEST: undefined },
    peer: { kuEvery: 256 << 10, kuRequest: false, hold: false }, appHold: false,
    check(r, ours) {
      assert.equal(r.kuInitiated, 15, 'GnuTLS updated after each 256 KiB but the last');
      assert.equal(r.kuSentRequested + r.kuReceivedRequested, 0, 'no update_requested either way');
      assert.ok(ours.out >= 2 && ours.out <= 8, `ours updated every 128 records: ${ours.out}`);
    },
  },
  'GnuTLS asks for ours (update_requested): answered': {
    env: { ...BASE_ENV, MMPROXY_TLS_KEY_UPDATE_RECORDS: undefined, MMPROXY_TLS_KEY_UPDATE_REQUEST: undefined },
    peer: { kuEvery: 1 << 20, kuRequest: true, hold: false }, appHold: true,
    check(r, ours) {
      assert.equal(r.kuInitiated, 3, 'GnuTLS asked after each MiB but the last');
      assert.equal(r.kuSentRequested, 3, 'each asking for ours');
      // ours sends none of its own at the default 2^24 records: each one is an answer, one per request or fewer
      // (requests that arrive before ours sends its next record are answered once, RFC 8446 section 4.6.3)
      assert.ok(ours.out >= 1 && ours.out <= 3, `ours answered: ${ours.out}`);
      assert.equal(r.kuReceivedRequested, 0, 'an answer does not ask again');
    },
  },
  'ours asks for GnuTLS\' (update_requested): answered': {
    env: { ...BASE_ENV, MMPROXY_TLS_KEY_UPDATE_RECORDS: '128', MMPROXY_TLS_KEY_UPDATE_REQUEST: '1' },
    peer: { kuEvery: 0, kuRequest: false, hold: true }, appHold: false,
    check(r, ours) {
      assert.ok(ours.out >= 2 && ours.out <= 8, `ours updated every 128 records: ${ours.out}`);
      assert.equal(r.kuReceivedRequested, ours.out, 'each asking for GnuTLS\'');
      assert.equal(r.kuInitiated, 0, 'GnuTLS started none');
      assert.ok(r.kuSent >= 1 && r.kuSent <= ours.out, `GnuTLS answered: ${r.kuSent}`);
      assert.equal(r.kuSentRequested, 0, 'an answer does not ask again');
    },
  },
};

const stats = () => { const [own, openssl, oIn, oOut, tIn, tOut] = native.tlsRecordStats(); return { own, openssl, oIn, oOut, tIn, tOut }; };

/** Our plaintext side: sends `data` (the last chunk after all has arrived when `hold`), half-closes, hashes what arrives until the end. */
function appSide(sock: net.Socket, data: Buffer, hold: boolean) {
  return new Promise<{ received: number; sha256: string }>((resolve, reject) => {
    const h = crypto.createHash('sha256');
    let received = 0, lastSent = false;
    const sendLast = () => { if (!lastSent) { lastSent = true; sock.end(data.subarray(data.length - CHUNK)); } };
    sock.on('data', (d: Buffer) => { h.update(d); received += d.length; if (hold && received >= data.length) sendLast(); });
    sock.on('end', () => resolve({ received, sha256: h.digest('hex') }));
    sock.on('error', reject);
    sock.write(data.subarray(0, data.length - CHUNK));
    if (!hold) sendLast();
  });
}

describe('own TLS 1.3 records interoperate with GnuTLS: both roles, every suite, KeyUpdates both ways, 4 MiB each way', { timeout: 600_000 }, () => {
  let pki: Pki;
  const leftovers = new Set<() => void>();
  before(() => {
    pki = makePki('fleet', ['east', 'west']);
    buildGnutlsPeer(); // fails the suite here, saying what is missing, when libgnutls or its headers are not installed
  });
  after(() => { for (const f of leftovers) f(); });

  /** the plaintext leg: `relay` goes to the addon (Node never reads it), `app` is ours to write and read */
  async function plainPair() {
    let relay!: net.Socket;
    const srv = net.createServer({ pauseOnConnect: true }, (s) => { relay = s; s.on('error', () => undefined); });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const app = net.connect({ port: (srv.address() as net.AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true });
    await new Promise<void>((r, j) => { app.once('connect', () => r()); app.once('error', j); });
    while (!relay) await sleep(1);
    stopReading(relay);
    srv.close();
    return { relay, app };
  }

  /** The addon's session on `raw` in `role`; after phase 1 it relays to `relay`. Resolves with phase 2. */
  function addonSession(ctx: TlsCtx, raw: net.Socket, role: 'server' | 'client', relay: net.Socket, peerUri: string) {
    let h!: TlsHandle;
    let p1: TlsPhase1 | undefined;
    let ended = false;
    const p2 = new Promise<TlsPhase2>((resolve) => {
      h = native.tlsStart(ctx, socketFd(raw), role === 'server', 5000, role === 'client' ? Buffer.from('OPENOPEN') : null, 4096,
        role === 'client' ? peerUri : null, (x) => {
          if (x.phase === 2) { ended = true; resolve(x); return; }
          p1 = x;
          const fine = x.ok && x.uris.includes(peerUri) && x.frame.toString() === (role === 'server' ? 'OPENOPEN' : 'REPLYREP');
          native.tlsContinue(h, fine && role === 'server' ? Buffer.from('REPLYREP') : null, fine ? socketFd(relay) : -1, 0, false);
        });
    });
    return { p2, phase1: () => p1, cancel: () => { if (!ended) native.tlsCancel(h); } };
  }

  async function run(role: 'server' | 'client', suite: (typeof SUITES)[number], mode: Mode) {
    const [me, them] = role === 'server' ? ['west', 'east'] as const : ['east', 'west'] as const;
    const ctx = withEnv(mode.env, () => native.tlsContext(pem(pki.ca), pem(pki.certs[me].cert), pem(pki.certs[me].key), role === 'server'));
    const s0 = stats();
    const sockets: net.Socket[] = [];
    let peer: GnutlsPeer | undefined, server: net.Server | undefined, session: ReturnType<typeof addonSession> | undefined;
    const cleanup = async () => {
      peer?.kill();
      if (session) { session.cancel(); await withTimeout(session.p2, 10_000, 'the addon session ends after a cancel').catch(() => undefined); }
      for (const s of sockets) s.destroy();
      server?.close();
    };
    leftovers.add(() => { peer?.kill(); for (const s of sockets) s.destroy(); server?.close(); });
    try {
      const { relay, app } = await plainPair();
      sockets.push(relay, app);
      const peerOpts = {
        ca: pki.ca, cert: pki.certs[them].cert, key: pki.certs[them].key, priority: suite.priority, bytes: BYTES, deadlineMs: DEADLINE_MS, ...mode.peer,
      };
      const peerUri = `spiffe://fleet/cluster/${them}`;
      if (role === 'server') {
        const accepted = new Promise<net.Socket>((r) => { server = net.createServer({ pauseOnConnect: true }, (s) => { s.on('error', () => undefined); r(s); }); });
        await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
        peer = startGnutlsPeer({ role: 'client', port: (server!.address() as net.AddressInfo).port, ...peerOpts });
        const raw = await withTimeout(accepted, 10_000, 'GnuTLS connects');
        sockets.push(raw);
        session = addonSession(ctx, raw, role, relay, peerUri);
      } else {
        peer = startGnutlsPeer({ role: 'server', ...peerOpts });
        const raw = net.connect({ port: await withTimeout(peer.port, 10_000, 'GnuTLS listens'), host: '127.0.0.1' });
        raw.on('error', () => undefined);
        sockets.push(raw);
        await new Promise<void>((r, j) => { raw.once('connect', () => r()); raw.once('error', j); });
        stopReading(raw);
        session = addonSession(ctx, raw, role, relay, peerUri);
      }
      const data = crypto.randomBytes(BYTES);
      const [report, mine, end] = await withTimeout(Promise.all([peer.done, appSide(app, data, mode.appHold), session.p2]), DEADLINE_MS + 10_000,
        'GnuTLS, our plaintext side and the addon session all end');
      const p1 = session.phase1()!;
      assert.ok(p1.ok, `handshake and header frames (${p1.error})`);
      assert.equal(end.reason, 'eof', `the addon session ends cleanly (${end.error})`);
      const s = stats();
      assert.equal(s.own - s0.own, 1, 'the addon relayed on its own records');
      assert.equal(s.openssl - s0.openssl, 0, 'not on OpenSSL\'s');
      assert.equal(report.cipher, suite.cipher, 'the suite asked for');
      assert.equal(report.received, BYTES, 'GnuTLS received every byte');
      assert.equal(report.receivedSha256, crypto.createHash('sha256').update(data).digest('hex'), 'GnuTLS received what ours sent');
      assert.deepEqual(mine, { received: BYTES, sha256: report.sentSha256 }, 'ours received what GnuTLS sent');
      const ours = role === 'server' ? { in: s.tIn - s0.tIn, out: s.tOut - s0.tOut } : { in: s.oIn - s0.oIn, out: s.oOut - s0.oOut };
      assert.equal(ours.in, report.kuSent, 'ours received every KeyUpdate GnuTLS sent');
      assert.equal(report.kuReceived, ours.out, 'GnuTLS received every KeyUpdate ours sent');
      mode.check(report, ours);
      return { report, ours };
    } finally { await cleanup(); }
  }

  for (const role of ['server', 'client'] as const) {
    for (const suite of SUITES) {
      for (const [name, mode] of Object.entries(MODES)) {
        it(`ours as TLS ${role}, ${suite.openssl}: ${name}`, { timeout: DEADLINE_MS + 20_000 }, async (t) => {
          const { report: r, ours } = await run(role, suite, mode);
          t.diagnostic(`records: ours sent ${r.recordsReceived} with data; KeyUpdates: ours sent ${ours.out} (GnuTLS received ${r.kuReceived}, ${r.kuReceivedRequested} asking), `
            + `GnuTLS sent ${r.kuSent} (${r.kuInitiated} its own, ${r.kuSentRequested} asking; ours received ${ours.in})`);
        });
      }
    }
  }
});
