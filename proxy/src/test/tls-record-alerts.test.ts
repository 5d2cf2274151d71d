/**
 * Our TLS 1.3 record layer (native/tls13rec.c, tls13relay.c) against records crafted on the wire under the session's
 * real keys: a native terminus session, Node's tls as the peer, and a TCP hop in between that knows the peer's traffic
 * secrets (Node's keylog event) and injects records sealed at the exact next sequence number. What RFC 8446 asks of
 * the receiver: KeyUpdate with a bad request byte -> illegal_parameter, with a wrong length -> decode_error (s.4.6.3,
 * s.6), a KeyUpdate split over two records is legal (s.5.1), a padded inner plaintext over 2^14 + 1 bytes is a
 * record_overflow (s.5.4); and what we cap: records without data in a row, KeyUpdates a peer sends unasked.
 * Also: MMPROXY_TLS_KEY_UPDATE_RECORDS is bounded by the AES-GCM limit (s.5.5).
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { after, before, describe, it } from 'node:test';
import { loadNative, socketFd, stopReading, type TlsCtx, type TlsPhase2 } from '../native';
import { HANG_GUARD_MS, makePki, sleep, withTimeout, type Pki } from '../testkit/helpers';

const native = loadNative();
const pem = (f: string) => fs.readFileSync(f);

/** HKDF-Expand-Label with an empty context, one hash block (SHA-256: every output here fits) */
function expandLabel(secret: Buffer, label: string, len: number): Buffer {
  const full = Buffer.from(`tls13 ${label}`);
  const info = Buffer.concat([Buffer.from([len >> 8, len & 0xff, full.length]), full, Buffer.from([0, 1])]);
  return crypto.createHmac('sha256', secret).update(info).digest().subarray(0, len);
}

/** One direction of TLS_AES_128_GCM_SHA256 records: seal and open at the running sequence number. */
class Dir {
  key!: Buffer; iv!: Buffer; seq = 0n;
  constructor(private secret: Buffer) { this.load(); }
  private load() { this.key = expandLabel(this.secret, 'key', 16); this.iv = expandLabel(this.secret, 'iv', 12); this.seq = 0n; }
  update() { this.secret = expandLabel(this.secret, 'traffic upd', 32); this.load(); }
  private nonce() {
    const n = Buffer.from(this.iv); const s = Buffer.alloc(8); s.writeBigUInt64BE(this.seq);
    for (let i = 0; i < 8; i++) n[4 + i] ^= s[i];
    return n;
  }
  seal(type: number, content: Buffer, padding = 0): Buffer {
    const inner = Buffer.concat([content, Buffer.from([type]), Buffer.alloc(padding)]);
    const hdr = Buffer.from([23, 3, 3, (inner.length + 16) >> 8, (inner.length + 16) & 0xff]);
    const c = crypto.createCipheriv('aes-128-gcm', this.key, this.nonce());
    c.setAAD(hdr);
    const body = Buffer.concat([c.update(inner), c.final(), c.getAuthTag()]);
    this.seq++;
    return Buffer.concat([hdr, body]);
  }
  /** the inner type and content, or undefined when the record does not open under this key */
  open(rec: Buffer): { type: number; content: Buffer } | undefined {
    try {
      const d = crypto.createDecipheriv('aes-128-gcm', this.key, this.nonce());
      d.setAAD(rec.subarray(0, 5));
      d.setAuthTag(rec.subarray(rec.length - 16));
      let p = Buffer.concat([d.update(rec.subarray(5, rec.length - 16)), d.final()]);
      this.seq++;
      let m = p.length;
      while (m > 0 && p[m - 1] === 0) m--;
      p = p.subarray(0, m);
      return { type: p[m - 1], content: p.subarray(0, m - 1) };
    } catch { return undefined; }
  }
}

/** Splits a byte stream into TLS records. */
function recordSplitter(onRecord: (r: Buffer) => void) {
  let buf = Buffer.alloc(0);
  return (d: Buffer) => {
    buf = Buffer.concat([buf, d]);
    while (buf.length >= 5 && buf.length >= 5 + buf.readUInt16BE(3)) {
      const n = 5 + buf.readUInt16BE(3);
      onRecord(buf.subarray(0, n));
      buf = buf.subarray(n);
    }
  };
}

interface Lab {
  /** inject records sealed with the peer's (client's) current key, after what the peer itself sent */
  inject(make: (c: Dir) => Buffer[]): void;
  /** records the terminus sent under its application keys, opened */
  fromTerminus: { type: number; content: Buffer }[];
  /** bytes the terminus delivered to its plaintext side */
  delivered(): string;
  /** the terminus session's phase 2 report */
  end: Promise<TlsPhase2>;
  close(): void;
}

describe('own TLS 1.3 records: RFC 8446 alerts and limits on crafted records', { timeout: 5 * HANG_GUARD_MS }, () => {
  let pki: Pki;
  let ctxS: TlsCtx;
  const cleanups: (() => void)[] = [];
  before(() => {
    pki = makePki('fleet', ['east', 'west']);
    delete process.env.MMPROXY_TLS_RECORDS; delete process.env.MMPROXY_TLS_KEY_UPDATE_RECORDS;
    ctxS = native.tlsContext(pem(pki.ca), pem(pki.certs.west.cert), pem(pki.certs.west.key), true);
  });
  after(() => { for (const c of cleanups) c(); });

  /** terminus session <- hop <- Node tls peer; resolves once 'hello' has gone through our records both ways */
  async function lab(): Promise<Lab> {
    let plainGot = Buffer.alloc(0);
    let endResolve!: (x: TlsPhase2) => void;
    const end = new Promise<TlsPhase2>((r) => { endResolve = r; });
    const plainSrv = net.createServer((s) => { s.on('data', (b) => { plainGot = Buffer.concat([plainGot, b]); }); s.on('error', () => undefined); });
    await new Promise<void>((r) => plainSrv.listen(0, '127.0.0.1', () => r()));
    const keep: net.Socket[] = [];
    cleanups.push(() => { plainSrv.close(); plainSrv.unref(); });
    const term = net.createServer({ pauseOnConnect: true }, (raw) => {
      raw.on('error', () => undefined);
      keep.push(raw);
      const h = native.tlsStart(ctxS, socketFd(raw), true, 5000, null, 4096, null, (x) => {
        if (x.phase === 1) {
          const p = net.connect({ port: (plainSrv.address() as net.AddressInfo).port, host: '127.0.0.1' });
          p.on('error', () => undefined);
          p.once('connect', () => { stopReading(p); keep.push(p); native.tlsContinue(h, Buffer.from('REPLY!!!'), socketFd(p), 0, false); });
        } else {endResolve(x);}
      });
    });
    await new Promise<void>((r) => term.listen(0, '127.0.0.1', () => r()));
    const secrets: Record<string, Buffer> = {};
    let s2c: Dir | undefined;
    let s2cStarted = false;
    const fromTerminus: { type: number; content: Buffer }[] = [];
    let up!: net.Socket;
    const hop = net.createServer((down) => {
      down.on('error', () => undefined);
      up = net.connect({ port: (term.address() as net.AddressInfo).port, host: '127.0.0.1' });
      up.on('error', () => undefined);
      down.on('data', (d) => up.write(d));
      up.on('data', recordSplitter((rec) => {
        if (rec[0] === 23 && secrets.SERVER_TRAFFIC_SECRET_0) {
          s2c ??= new Dir(secrets.SERVER_TRAFFIC_SECRET_0);
          const seq = s2c.seq;
          const o = s2c.open(rec);
          if (o) { s2cStarted = true; fromTerminus.push(o); } else if (s2cStarted) {assert.fail(`terminus record ${seq} does not open`);}
        }
        down.write(rec);
      }));
      cleanups.push(() => { down.destroy(); up.destroy(); });
    });
    await new Promise<void>((r) => hop.listen(0, '127.0.0.1', () => r()));
    const t = tls.connect({ port: (hop.address() as net.AddressInfo).port, host: '127.0.0.1', ca: pem(pki.ca), cert: pem(pki.certs.east.cert),
      key: pem(pki.certs.east.key), checkServerIdentity: () => undefined, minVersion: 'TLSv1.3', ciphers: 'TLS_AES_128_GCM_SHA256' });
    t.on('error', () => undefined);
    t.on('keylog', (line: Buffer) => { const [k, , v] = line.toString().trim().split(' '); secrets[k] = Buffer.from(v, 'hex'); });
    let clientGot = '';
    t.on('data', (d) => { clientGot += d.toString(); });
    await new Promise<void>((r) => t.once('secureConnect', () => r()));
    t.write('HEADER!!'); // the header frame (8 bytes, not MMTP: phase 1 takes it as is): client record 0
    await withTimeout((async () => { while (!clientGot.includes('REPLY!!!')) await sleep(5); })(), HANG_GUARD_MS, 'REPLY');
    t.write('hello'); // client record 1, opened by our records
    await withTimeout((async () => { while (!plainGot.toString().includes('hello')) await sleep(5); })(), HANG_GUARD_MS, 'hello delivered');
    const c2s = new Dir(secrets.CLIENT_TRAFFIC_SECRET_0);
    c2s.seq = 2n;
    const dir = c2s;
    cleanups.push(() => { t.destroy(); for (const s of keep) s.destroy(); for (const x of [term, hop]) { x.close(); x.unref(); } });
    return {
      inject: (make) => { for (const r of make(dir)) up.write(r); },
      fromTerminus,
      delivered: () => plainGot.toString(),
      end,
      close: () => t.destroy(),
    };
  }

  const KU = (req: number) => Buffer.from([24, 0, 0, 1, req]);
  /** the terminus ends with a reset, having sent exactly this fatal alert */
  async function fatal(l: Lab, alert: number, what: string) {
    const e = await withTimeout(l.end, 5000, `${what}: the session ends`);
    assert.equal(e.reason, 'reset', `${what}: a reset (${e.error})`);
    await sleep(50);
    const alerts = l.fromTerminus.filter((r) => r.type === 21);
    assert.deepEqual(alerts.map((a) => [...a.content]), [[2, alert]], `${what}: one fatal alert ${alert} (got ${JSON.stringify(alerts)}; ${e.error})`);
  }

  it('a KeyUpdate whose request byte is not 0 or 1: illegal_parameter (47)', async () => {
    const l = await lab();
    l.inject((c) => [c.seal(22, KU(2))]);
    await fatal(l, 47, 'request byte 2');
  });

  it('a KeyUpdate whose body is not one byte: decode_error (50)', async () => {
    const l = await lab();
    l.inject((c) => [c.seal(22, Buffer.from([24, 0, 0, 2, 0, 0]))]);
    await fatal(l, 50, 'body of 2 bytes');
  });

  it('a KeyUpdate split over two records is taken, and data under the next key is delivered', async () => {
    const l = await lab();
    l.inject((c) => { const a = c.seal(22, Buffer.from([24, 0, 0])); const b = c.seal(22, Buffer.from([1, 0])); c.update(); return [a, b, c.seal(23, Buffer.from('after-split-ku'))]; });
    await withTimeout((async () => { while (!l.delivered().includes('after-split-ku')) await sleep(5); })(), HANG_GUARD_MS, 'data after the split KeyUpdate');
    assert.deepEqual(l.fromTerminus.filter((r) => r.type === 21), [], 'no alert');
    l.close();
  });

  it('a padded inner plaintext of 2^14 + 2 bytes: record_overflow (22), even when its content is 1 byte', async () => {
    const l = await lab();
    l.inject((c) => [c.seal(23, Buffer.from('x'), 16384)]); // 1 + type byte + 16384 zeros = 2^14 + 2
    await fatal(l, 22, 'padded to 2^14 + 2');
  });

  it('padded to exactly 2^14 + 1 bytes is still a record', async () => {
    const l = await lab();
    l.inject((c) => [c.seal(23, Buffer.from('y'), 16383)]);
    await withTimeout((async () => { while (!l.delivered().endsWith('y')) await sleep(5); })(), HANG_GUARD_MS, 'the padded record delivered');
    l.close();
  });

  it('33 empty records in a row: unexpected_message (10); 32 with data after them are fine', async () => {
    const ok = await lab();
    ok.inject((c) => [...Array.from({ length: 32 }, () => c.seal(23, Buffer.alloc(0))), c.seal(23, Buffer.from('data'))]);
    await withTimeout((async () => { while (!ok.delivered().endsWith('data')) await sleep(5); })(), HANG_GUARD_MS, 'data after 32 empty records');
    ok.close();
    const l = await lab();
    l.inject((c) => Array.from({ length: 33 }, () => c.seal(23, Buffer.alloc(0))));
    await fatal(l, 10, '33 empty records');
  });

  it('KeyUpdates a peer sends unasked are capped by the data it sends: the 9th without data is unexpected_message (10)', async () => {
    const l = await lab();
    l.inject((c) => Array.from({ length: 9 }, () => { const r = c.seal(22, KU(0)); c.update(); return r; }));
    await fatal(l, 10, '9 KeyUpdates without data');
    const m = await lab();
    m.inject((c) => {
      const out: Buffer[] = [];
      for (let i = 0; i < 12; i++) {
        for (let k = 0; k < 16; k++) out.push(c.seal(23, Buffer.from(`d${i}`)));
        out.push(c.seal(22, KU(0)));
        c.update();
      }
      return [...out, c.seal(23, Buffer.from('end'))];
    });
    await withTimeout((async () => { while (!m.delivered().endsWith('end')) await sleep(5); })(), HANG_GUARD_MS, '12 KeyUpdates, each after 16 records of data');
    m.close();
  });

  it('MMPROXY_TLS_KEY_UPDATE_RECORDS above the AES-GCM limit (2^24.5 records), 0 or not a number is refused', () => {
    const old = process.env.MMPROXY_TLS_KEY_UPDATE_RECORDS;
    const mk = (v: string) => {
      process.env.MMPROXY_TLS_KEY_UPDATE_RECORDS = v;
      return native.tlsContext(pem(pki.ca), pem(pki.certs.west.cert), pem(pki.certs.west.key), true);
    };
    try {
      for (const bad of ['23726567', '18446744073709551615', '0', '-1', 'lots', '64x', ''])
        {assert.throws(() => mk(bad), /MMPROXY_TLS_KEY_UPDATE_RECORDS must be a whole number from 1 to 23726566/, `refused: "${bad}"`);}
      for (const good of ['23726566', '64', '1']) assert.ok(mk(good), `taken: ${good}`);
    } finally { if (old === undefined) delete process.env.MMPROXY_TLS_KEY_UPDATE_RECORDS; else process.env.MMPROXY_TLS_KEY_UPDATE_RECORDS = old; }
  });
});

describe('traffic secrets are wiped when each session is past them, on every path, without garbage collection', { timeout: 5 * HANG_GUARD_MS }, () => {
  const held: unknown[] = []; // every handle stays referenced: nothing here may rely on V8 collecting it
  let pki: Pki;
  before(() => { pki = makePki('fleet', ['east', 'west']); });
  after(() => {
    for (const x of held) {
      if (x instanceof net.Socket) {x.destroy();}
      else if (x instanceof net.Server) { x.close(); x.unref(); }
    }
  });
  const ctx = (who: 'east' | 'west', server: boolean, records?: string) => {
    const old = process.env.MMPROXY_TLS_RECORDS;
    if (records) process.env.MMPROXY_TLS_RECORDS = records; else delete process.env.MMPROXY_TLS_RECORDS;
    try { return native.tlsContext(pem(pki.ca), pem(pki.certs[who].cert), pem(pki.certs[who].key), server); } finally {
      if (old === undefined) delete process.env.MMPROXY_TLS_RECORDS; else process.env.MMPROXY_TLS_RECORDS = old;
    }
  };
  /** a plaintext socket whose far end sends 'x' and closes */
  const plain = async () => {
    const srv = net.createServer((s) => { s.on('error', () => undefined); s.end('x'); });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const c = net.connect({ port: (srv.address() as net.AddressInfo).port, host: '127.0.0.1', allowHalfOpen: true });
    c.on('error', () => undefined);
    await new Promise<void>((r) => c.once('connect', () => r()));
    stopReading(c);
    held.push(c, srv);
    return c;
  };
  /** origin and terminus sessions; `mode` says how the terminus continues; resolves with both phase 2 reports */
  async function run(records: string | undefined, mode: 'relay' | 'refuse', expect: string | null = null) {
    const cS = ctx('west', true, records), cC = ctx('east', false, records);
    let heldAtPhase1 = Infinity; // the fewest sessions holding secrets seen from a phase 1 callback
    const ends: Promise<TlsPhase2>[] = [];
    let p1s = 0;
    void p1s;
    const bothP1 = () => { p1s++; heldAtPhase1 = Math.min(heldAtPhase1, native.tlsSecretsHeld()); };
    const srv = net.createServer({ pauseOnConnect: true }, (raw) => {
      raw.on('error', () => undefined);
      held.push(raw);
      ends.push(new Promise((done) => {
        const h = native.tlsStart(cS, socketFd(raw), true, 3000, null, 4096, null, (x) => {
          if (x.phase === 2) { done(x); return; }
          bothP1();
          if (mode === 'refuse' || !x.ok) native.tlsContinue(h, null, -1, 0, false);
          else void plain().then((p) => native.tlsContinue(h, Buffer.from('REPLYREP'), socketFd(p), 0, false));
        });
        held.push(h);
      }));
    });
    await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
    const raw = net.connect({ port: (srv.address() as net.AddressInfo).port, host: '127.0.0.1' });
    raw.on('error', () => undefined);
    await new Promise<void>((r) => raw.once('connect', () => r()));
    stopReading(raw);
    held.push(raw, srv, cS, cC);
    ends.push(new Promise((done) => {
      const h = native.tlsStart(cC, socketFd(raw), false, 3000, Buffer.from('OPENOPEN'), 4096, expect, (x) => {
        if (x.phase === 2) { done(x); return; }
        bothP1();
        if (!x.ok) native.tlsContinue(h, null, -1, 0, false);
        else void plain().then((p) => native.tlsContinue(h, null, socketFd(p), 0, false));
      });
      held.push(h);
    }));
    while (ends.length < 2) await sleep(5);
    const r = await withTimeout(Promise.all(ends), HANG_GUARD_MS, 'both sessions end');
    return { r, heldAtPhase1 };
  }

  for (const [name, records, mode, expect] of [
    ['our own records', undefined, 'relay', null], ['OpenSSL\'s records', 'openssl', 'relay', null],
    ['a refusal', undefined, 'refuse', null], ['an origin that refuses the terminus\' identity', undefined, 'refuse', 'spiffe://fleet/cluster/nobody'],
  ] as const) {
    it(`${name}: secrets held while the handshake is done, none once both sessions have ended`, async () => {
      const { r, heldAtPhase1 } = await run(records, mode, expect);
      assert.ok(heldAtPhase1 >= 1 && heldAtPhase1 < Infinity, `a session holds its secrets when its phase 1 reports (${heldAtPhase1})`);
      assert.equal(native.tlsSecretsHeld(), 0, `no secrets left (ends: ${r.map((x) => x.reason).join(', ')})`);
    });
  }
});
