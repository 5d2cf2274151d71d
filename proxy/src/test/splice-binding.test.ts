/**
 * Authenticated splice at the native layer (tlsrelay.c + splice.c), without the gateway around it: the BIND
 * exchange that ties the raw data path to the completed mutual-TLS session, and its refusals. The adversary is a
 * fleet member (it holds a fleet certificate and completes the handshake) speaking the protocol with Node's tls,
 * which also proves the exporter values interoperate with another TLS stack.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { after, before, beforeEach, describe, it } from 'node:test';
import { TLS_FLAG_SPLICE_CAPABLE, loadNative, socketFd, stopReading, type TlsCtx, type TlsPhase1, type TlsPhase2 } from '../native';
import {
  BIND_LABEL_ORIGIN, BIND_LABEL_TERMINUS, FRAME_OPEN, FRAME_REPLY, FrameReader, RefusalCode, bindContext, encodeBind,
  encodeOpen, encodeReply,
} from '../protocol';
import { HANG_GUARD_MS, makePki, openFds, shortConnections, sleep, withTimeout, type Pki } from '../testkit/helpers';

const native = loadNative();
let pki: Pki;
let ctxS: TlsCtx;
let ctxC: TlsCtx;
const pem = (f: string) => fs.readFileSync(f);

before(() => {
  pki = makePki('fleet', ['east', 'west']);
  ctxS = native.tlsContext(pem(pki.ca), pem(pki.certs.west.cert), pem(pki.certs.west.key), true);
  ctxC = native.tlsContext(pem(pki.ca), pem(pki.certs.east.cert), pem(pki.certs.east.key), false);
});

/** A destination that records what it receives and how its connection ended. */
/**
 * The echo/sink destination: what its connections received and how each ended. `idle()` waits (bounded) until
 * every connection it accepted has closed, then clears the record: a test that counts connections starts from
 * none, whatever the one before left still ending (an earlier session's reset that arrived after the counters
 * were cleared by hand failed five tests in a row in a loaded CI run).
 */
interface Dest { port: number; got: Buffer[]; ends: string[]; conns: number; idle(): Promise<void>; close(): Promise<void> }
async function startDest(echo = false): Promise<Dest> {
  const d: Dest = { port: 0, got: [], ends: [], conns: 0, idle: async () => undefined, close: async () => undefined };
  const socks = new Set<net.Socket>();
  const srv = net.createServer({ allowHalfOpen: true }, (s) => {
    d.conns++;
    socks.add(s);
    s.on('data', (b) => { d.got.push(b); if (echo) s.write(b); });
    s.on('end', () => { d.ends.push('fin'); s.end(); });
    s.on('error', (e: NodeJS.ErrnoException) => d.ends.push(e.code ?? 'error'));
    s.on('close', () => socks.delete(s));
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  d.port = (srv.address() as net.AddressInfo).port;
  d.close = () => new Promise<void>((r) => { for (const s of socks) s.destroy(); srv.close(() => r()); });
  d.idle = async () => {
    await withTimeout((async () => { while (socks.size > 0) await sleep(10); })(), HANG_GUARD_MS, `the destination's ${socks.size} connection(s) closing`);
    d.got.length = 0; d.ends.length = 0; d.conns = 0;
  };
  return d;
}

/** A connected socket; `native`: Node never reads it (a native thread will own its descriptor). */
const connected = (port: number, native = false) => new Promise<net.Socket>((resolve, reject) => {
  const s = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  s.once('connect', () => { if (native) stopReading(s); resolve(s); });
  s.once('error', reject);
});

/**
 * A native terminus in miniature: every connection is handshaken (splice-capable), OPEN is accepted without
 * policy (that is admission.ts' job, tested elsewhere), the destination is dialed and the session continues in
 * splice mode. `results` receives each session's phase-1 and phase-2 reports.
 */
async function startTerminus(dest: Dest) {
  const results: { p1?: TlsPhase1; p2?: TlsPhase2 }[] = [];
  const srv = net.createServer({ pauseOnConnect: true, allowHalfOpen: true }, (raw) => {
    raw.on('error', () => undefined);
    const r: { p1?: TlsPhase1; p2?: TlsPhase2 } = {};
    results.push(r);
    let dst: net.Socket | undefined;
    const h = native.tlsStart(ctxS, socketFd(raw), true, 3000, null, 4096, null, (x) => {
      if (x.phase === 1) {
        r.p1 = x;
        if (!x.ok || x.frame[5] !== FRAME_OPEN) { native.tlsContinue(h, null, -1, 0, false); return; }
        const id = x.frame.subarray(8, 24);
        void connected(dest.port, true).then((s) => {
          dst = s;
          s.on('error', () => undefined);
          native.tlsContinue(h, encodeReply({ status: RefusalCode.ACCEPTED, connectionId: id, reason: '' }), socketFd(s), 0, true);
        });
      } else { if (process.env.DEBUG_SPLICE) console.log('terminus', x); r.p2 = x; raw.destroy(); dst?.destroy(); }
    }, TLS_FLAG_SPLICE_CAPABLE);
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  return { port: (srv.address() as net.AddressInfo).port, results, close: () => new Promise<void>((r) => srv.close(() => r())) };
}

const OPEN = (payload: 'tls' | 'splice' = 'splice') =>
  encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: '10.0.0.1', dstPort: 443, sourceCluster: 'east', payload });

/**
 * A fleet member speaking the protocol by hand (Node's tls): OPEN, then REPLY and the terminus' BIND, which it
 * verifies with its own exporter; then `act` decides what it sends in place of its BIND.
 */
interface Adversary { tls: tls.TLSSocket; raw: net.Socket; open: Buffer; reply: Buffer; theirBind: Buffer; bindOk: boolean; closed: Promise<string> }
function adversary(port: number, cert = pki.certs.east): Promise<Adversary> {
  return new Promise((resolve, reject) => {
    const raw = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    const closed = new Promise<string>((r) => { raw.on('error', (e: NodeJS.ErrnoException) => r(e.code ?? e.message)); raw.on('close', () => r('closed')); });
    const t = tls.connect({ socket: raw, ca: pem(pki.ca), cert: pem(cert.cert), key: pem(cert.key), checkServerIdentity: () => undefined, minVersion: 'TLSv1.3' });
    t.on('error', () => undefined);
    const open = OPEN();
    let buf = Buffer.alloc(0);
    t.on('secureConnect', () => t.write(open));
    t.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const rr = new FrameReader(4096, FRAME_REPLY).push(buf);
      if (rr.kind !== 'frame' || rr.rest.length < 40) return;
      t.removeAllListeners('data');
      t.pause();
      const reply = buf.subarray(0, buf.length - rr.rest.length);
      const theirBind = rr.rest.subarray(0, 40);
      const want = encodeBind(t.exportKeyingMaterial(32, BIND_LABEL_TERMINUS, bindContext(open, reply)));
      resolve({ tls: t, raw, open, reply, theirBind, bindOk: theirBind.equals(want), closed });
    });
    setTimeout(() => reject(new Error('adversary: no REPLY + BIND within 5 s')), 5000).unref();
  });
}
const ownBind = (a: Adversary) => encodeBind(a.tls.exportKeyingMaterial(32, BIND_LABEL_ORIGIN, bindContext(a.open, a.reply)));
const received = (d: Dest) => Buffer.concat(d.got).length;

describe('authenticated splice: binding to the mutual-TLS session (native)', { timeout: 5 * HANG_GUARD_MS }, () => {
  let dest: Dest;
  let term: Awaited<ReturnType<typeof startTerminus>>;
  before(async () => { dest = await startDest(); term = await startTerminus(dest); });
  after(async () => { await term?.close(); await dest?.close(); });
  // each test counts the destination's connections from none, even after one that failed half-way
  beforeEach(async () => { await dest.idle(); });

  const last = () => term.results.length - 1;
  const refused = async (a: Adversary, what: string, idx: number) => {
    const how = await withTimeout(a.closed, 5000, `${what}: terminus ends the connection`);
    const r = term.results[idx];
    await withTimeout((async () => { while (!r.p2) await sleep(10); })(), HANG_GUARD_MS, 'phase 2');
    assert.equal(r.p2!.reason, 'error', `${what}: ${JSON.stringify(r.p2)}`);
    assert.match(r.p2!.error, /^binding: /);
    assert.match(how, /ECONNRESET|closed/);
    await withTimeout((async () => { while (dest.ends.length < dest.conns) await sleep(10); })(), HANG_GUARD_MS, 'destination end');
    assert.equal(received(dest), 0, `${what}: not one byte reached the destination`);
    assert.ok(dest.ends.length === dest.conns && dest.ends.every((e) => e === 'ECONNRESET'), `${what}: destination connection reset (${dest.ends})`);
  };

  it('the exporter value of the terminus is the one Node computes for the same session; the right BIND opens the raw path', async () => {
    const a = await adversary(term.port);
    assert.ok(a.bindOk, 'terminus BIND = exporter(EXPORTER-mmtp-bind-terminus, OPEN || REPLY)');
    const payload = crypto.randomBytes(100_000);
    // the BIND record and the raw bytes leave back to back: the switch happens at exactly that byte
    a.tls.write(ownBind(a), () => { a.raw.write(payload); a.raw.end(); });
    await withTimeout((async () => { while (received(dest) < payload.length || !dest.ends.includes('fin')) await sleep(10); })(), HANG_GUARD_MS, 'payload');
    assert.ok(Buffer.concat(dest.got).equals(payload), 'destination got exactly the raw bytes, nothing of the TLS records');
    a.raw.destroy();
  });

  it('refuses a guessed binding', async () => {
    const a = await adversary(term.port);
    const ia = last();
    a.tls.write(encodeBind(crypto.randomBytes(32)), () => a.raw.write('payload'));
    await refused(a, 'guessed', ia);
  });

  it('refuses a replayed binding (the right value of an earlier session)', async () => {
    const first = await adversary(term.port);
    const old = ownBind(first);
    first.raw.destroy();
    await withTimeout((async () => { while (!term.results[last()].p2) await sleep(10); })(), HANG_GUARD_MS, 'first session ends');
    await dest.idle();
    const a = await adversary(term.port);
    const ia = last();
    a.tls.write(old, () => a.raw.write('payload'));
    await refused(a, 'replayed', ia);
  });

  it('refuses a binding of another live session (same member, two sessions)', async () => {
    const a = await adversary(term.port);
    const ia = last();
    const b = await adversary(term.port);
    a.tls.write(ownBind(b), () => { a.raw.write('payload'); b.raw.destroy(); });
    await refused(a, 'other session', ia);
  });

  it('refuses the terminus-labelled value echoed back, and raw bytes in place of a BIND', async () => {
    const a = await adversary(term.port);
    a.tls.write(a.theirBind, () => a.raw.write('payload'));
    await refused(a, 'echoed', last());
    await dest.idle();
    const b = await adversary(term.port);
    b.raw.write(Buffer.concat([ownBind(b), Buffer.from('raw before any TLS record')]).subarray(0, 30));
    await refused(b, 'raw bytes instead of a BIND record', last());
  });

  it('refuses data inside TLS after the BIND (the switch point must be exact)', async () => {
    const a = await adversary(term.port);
    a.tls.write(Buffer.concat([ownBind(a), Buffer.from('smuggled in the same record')]), () => undefined);
    await refused(a, 'data after BIND in the same record', last());
  });

  it('a data path without a handshake: OPEN and BIND in the clear never dial', async () => {
    const before = term.results.length;
    const s = await connected(term.port);
    const closed = new Promise<void>((r) => { s.on('end', () => r()); s.on('close', () => r()); s.on('error', () => undefined); });
    s.write(Buffer.concat([OPEN(), encodeBind(crypto.randomBytes(32)), Buffer.from('payload')]));
    await withTimeout(closed, 5000, 'cleartext attempt closed');
    await withTimeout((async () => { while (!term.results[before]?.p1) await sleep(10); })(), HANG_GUARD_MS, 'phase 1');
    assert.equal(term.results[before].p1!.ok, false);
    assert.match(term.results[before].p1!.error, /TLS handshake/);
    assert.equal(dest.conns, 0, 'no destination dialed');
  });
});

describe('authenticated splice: native origin and terminus', { timeout: 900_000 }, () => {
  let dest: Dest;
  let term: Awaited<ReturnType<typeof startTerminus>>;
  before(async () => { dest = await startDest(true); term = await startTerminus(dest); });
  after(async () => { await term?.close(); await dest?.close(); });

  /** client <-> (native origin) == splice tunnel == (native terminus) <-> echo destination */
  async function originSession(client: net.Socket, expect = 'spiffe://fleet/cluster/west', port = term.port) {
    const up = await connected(port, true);
    up.on('error', () => undefined);
    stopReading(client);
    return new Promise<TlsPhase2>((resolve) => {
      const h = native.tlsStart(ctxC, socketFd(up), false, 3000, OPEN(), 4096, expect, (x) => {
        if (x.phase === 1) {
          if (!x.ok || x.frame[5] !== FRAME_REPLY || x.frame[8] !== 0) native.tlsContinue(h, null, -1, 0, false);
          else native.tlsContinue(h, null, socketFd(client), 0, true);
        } else { if (process.env.DEBUG_SPLICE) console.log('origin', x); up.destroy(); client.destroy(); resolve(x); }
      }, TLS_FLAG_SPLICE_CAPABLE);
    });
  }

  async function socketPair() {
    const srv = net.createServer({ allowHalfOpen: true, pauseOnConnect: true });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const accepted = new Promise<net.Socket>((r) => srv.once('connection', r));
    const user = await connected((srv.address() as net.AddressInfo).port);
    const inner = await accepted;
    srv.close();
    return { user, inner };
  }

  it('echoes 8 MiB both ways through the spliced tunnel with equal sha256, then half-closes cleanly', async () => {
    const { user, inner } = await socketPair();
    const done = originSession(inner);
    const data = crypto.randomBytes(8 << 20);
    const back: Buffer[] = [];
    const ended = new Promise<void>((r) => { user.on('data', (b) => back.push(b)); user.on('end', () => r()); });
    user.end(data);
    await withTimeout(ended, 20_000, 'echo');
    const sha = (b: Buffer) => crypto.createHash('sha256').update(b).digest('hex');
    assert.equal(sha(Buffer.concat(back)), sha(data));
    const p2 = await withTimeout(done, 5000, 'origin phase 2');
    assert.equal(p2.reason, 'eof', JSON.stringify(p2));
    assert.equal(p2.plainToTls, data.length);
    assert.equal(p2.tlsToPlain, data.length);
    const t = term.results[term.results.length - 1];
    await withTimeout((async () => { while (!t.p2) await sleep(10); })(), HANG_GUARD_MS, 'terminus phase 2');
    assert.equal(t.p2!.reason, 'eof');
    user.destroy();
  });

  it('the origin refuses a terminus whose BIND is not this session\'s (fake terminus, fleet certificate)', async () => {
    const fake = tls.createServer({ ca: pem(pki.ca), cert: pem(pki.certs.west.cert), key: pem(pki.certs.west.key), requestCert: true, minVersion: 'TLSv1.3' }, (s) => {
      s.on('error', () => undefined);
      s.once('data', (open: Buffer) => {
        const reply = encodeReply({ status: 0, connectionId: open.subarray(8, 24), reason: '' });
        s.write(Buffer.concat([reply, encodeBind(crypto.randomBytes(32))]));
      });
    });
    await new Promise<void>((r) => fake.listen(0, '127.0.0.1', () => r()));
    try {
      const { user, inner } = await socketPair();
      const got: Buffer[] = [];
      user.on('data', (b) => got.push(b));
      const userEnd = new Promise<string>((r) => { user.on('error', (e: NodeJS.ErrnoException) => r(e.code ?? e.message)); user.on('close', () => r('closed')); });
      const p2 = await withTimeout(originSession(inner, 'spiffe://fleet/cluster/west', (fake.address() as net.AddressInfo).port), HANG_GUARD_MS, 'origin');
      assert.equal(p2.reason, 'error');
      assert.match(p2.error, /^binding: /);
      assert.equal(p2.plainToTls + p2.tlsToPlain, 0);
      assert.match(await withTimeout(userEnd, 5000, 'client end'), /ECONNRESET|closed/);
      assert.equal(Buffer.concat(got).length, 0, 'the client saw no byte of the unbound path');
    } finally { fake.close(); }
  });

  const n = shortConnections();
  it(`${n.toLocaleString('en')} short spliced connections leave no descriptor and no TLS session behind`, { timeout: 840_000 }, async () => {
    const fd0 = openFds();
    const t0 = Date.now();
    for (let i = 0; i < n; i += 50) {
      await Promise.all(Array.from({ length: 50 }, async () => {
        const { user, inner } = await socketPair();
        const done = originSession(inner);
        const back: Buffer[] = [];
        let failed: string | undefined;
        const ended = new Promise<void>((r) => { user.on('data', (b) => back.push(b)); user.on('end', () => r()); user.on('error', (e: NodeJS.ErrnoException) => { failed = e.code ?? e.message; r(); }); });
        user.end('ping');
        await withTimeout(ended, 20_000, 'short connection');
        // the error, if any, and the origin session's own account in the message: a CI run under load once saw ''
        // here and nothing said why
        const p2 = await withTimeout(done, 20_000, 'origin phase 2');
        assert.equal(Buffer.concat(back).toString(), 'ping', `short connection: ${failed ?? 'ended without the echo'}; the origin session: ${JSON.stringify(p2)}`);
        user.destroy();
      }));
    }
    await withTimeout((async () => { while (native.tlsLive() > 0) await sleep(20); })(), HANG_GUARD_MS, 'sessions freed');
    await sleep(200);
    const fd1 = openFds();
    console.log(`# ${n} spliced connections in ${Date.now() - t0} ms; descriptors ${fd0} -> ${fd1}`);
    assert.ok(fd1 - fd0 <= 5, `descriptors: ${fd0} before, ${fd1} after`);
  });
});
