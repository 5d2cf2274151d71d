/**
 * tls.mode mtls-splice at the gateway level: mode negotiation between termini and origins of different modes,
 * header fuzzing inside TLS, and a wrong binding counted and refused by a real terminus. (Chain integrity,
 * resets, peer death, leaks: chain.test.ts; refusals: security.test.ts; both parametrized over the mode.)
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { before, describe, it } from 'node:test';
import { startGateway, type GatewayHandle } from '../gateway';
import { FRAME_REPLY, FrameReader, RefusalCode, encodeBind, encodeOpen, type OpenHeader } from '../protocol';
import { configFor, startPair } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, sendAndVerify, silent, sleep, startSink, withTimeout, type Pki } from '../testkit/helpers';
import { probe } from '../testkit/probe';

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });
const open = (o: Partial<OpenHeader> = {}) => encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: '127.0.0.1', dstPort: 9, sourceCluster: 'east', ...o });
const creds = () => ({ ...pki.certs.east, ca: pki.ca });

async function counter(g: GatewayHandle, name: string, labels: Record<string, string>): Promise<number> {
  const m = await g.registry.getSingleMetric(name)!.get();
  return m.values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((s, v) => s + v.value, 0);
}

describe('payload mode negotiation', { timeout: 5 * HANG_GUARD_MS }, () => {
  it('an mtls terminus refuses a splice OPEN with PAYLOAD_MODE_REFUSED; so does a plaintext one', async () => {
    for (const mode of ['mtls', 'plaintext'] as const) {
      const g = await startGateway(await configFor('west', 'east', 1, mode, pki), { logger: silent, unsafeAllowLoopbackDestinations: true });
      try {
        const r = await probe(g.addresses().tunnel.port, open({ payload: 'splice' }), mode === 'mtls' ? creds() : undefined);
        assert.equal(r.reply?.status, RefusalCode.PAYLOAD_MODE_REFUSED, `${mode}: ${JSON.stringify(r)}`);
        assert.ok(r.closed);
        assert.equal(await counter(g, 'mm_proxy_refusals_total', { reason: 'payload_mode_refused' }), 1);
      } finally { await g.close(); }
    }
  });

  it('an unknown payload mode value is refused', async () => {
    const g = await startGateway(await configFor('west', 'east', 1, 'mtls-splice', pki), { logger: silent, unsafeAllowLoopbackDestinations: true });
    try {
      const bad = open();
      const body = Buffer.concat([bad.subarray(8), Buffer.from([1, 1, 7])]);
      const frame = Buffer.concat([bad.subarray(0, 6), Buffer.from([body.length >> 8, body.length & 255]), body]);
      const r = await probe(g.addresses().tunnel.port, frame, creds());
      assert.equal(r.reply?.status, RefusalCode.PAYLOAD_MODE_REFUSED);
    } finally { await g.close(); }
  });

  it('an mtls origin through an mtls-splice terminus: the tunnel stays inside TLS and carries the bytes (mixed fleet)', async () => {
    const sink = await startSink();
    const b = await startGateway(await configFor('west', 'east', 1, 'mtls-splice', pki), { logger: silent, unsafeAllowLoopbackDestinations: true });
    const cfgA = await configFor('east', 'west', b.addresses().tunnel.port, 'mtls', pki);
    const a = await startGateway(cfgA, { logger: silent, originalDestination: () => ({ host: '127.0.0.1', port: sink.port }) });
    try {
      const r = await withTimeout(sendAndVerify(cfgA.listen!.intercept!.port, '127.0.0.1', 4 << 20), HANG_GUARD_MS, '4 MiB');
      assert.equal(r.reply, r.sent);
    } finally { await a.close(); await b.close(); await sink.close(); }
  });

  it('an mtls-splice origin through an mtls terminus: refused once, then the same tunnel inside TLS (never weaker)', async () => {
    const sink = await startSink();
    const b = await startGateway(await configFor('west', 'east', 1, 'mtls', pki), { logger: silent, unsafeAllowLoopbackDestinations: true });
    const cfgA = await configFor('east', 'west', b.addresses().tunnel.port, 'mtls-splice', pki);
    const a = await startGateway(cfgA, { logger: silent, originalDestination: () => ({ host: '127.0.0.1', port: sink.port }) });
    try {
      const r = await withTimeout(sendAndVerify(cfgA.listen!.intercept!.port, '127.0.0.1', 4 << 20), HANG_GUARD_MS, '4 MiB');
      assert.equal(r.reply, r.sent);
      assert.equal(await counter(b, 'mm_proxy_refusals_total', { reason: 'payload_mode_refused' }), 1, 'the splice OPEN was refused');
      assert.equal(await counter(a, 'mm_proxy_refusals_total', {}), 0, 'the origin did not refuse the client');
    } finally { await a.close(); await b.close(); await sink.close(); }
  });
});

describe('mtls-splice terminus under hostile fleet members', { timeout: 5 * HANG_GUARD_MS }, () => {
  it('survives random, truncated and oversized headers inside TLS: always closes, keeps serving', async () => {
    const sink = await startSink();
    const pair = await startPair('mtls-splice', pki, () => ({ host: '127.0.0.1', port: sink.port }), {}, {}, { limits: { handshakeTimeoutMs: 600, headerMaxBytes: 256 } });
    const port = pair.b.addresses().tunnel.port;
    try {
      const rnd = (n: number) => crypto.randomBytes(n);
      const cases: Buffer[] = [];
      for (let i = 0; i < 60; i++) {
        const good = open({ payload: 'splice' });
        cases.push(rnd(1 + (i % 40)));                                   // random bytes
        cases.push(good.subarray(0, 1 + (i % (good.length - 1))));       // truncated
        const flip = Buffer.from(good); flip[i % flip.length] ^= 1 + (i % 255); cases.push(flip); // one byte flipped
      }
      cases.push(Buffer.concat([Buffer.from('MMTP\x01\x01'), Buffer.from([0xff, 0xff]), rnd(300)])); // oversized
      for (let i = 0; i < cases.length; i += 30) {
        const rs = await Promise.all(cases.slice(i, i + 30).map((c) => probe(port, c, creds(), 5000)));
        for (const [k, r] of rs.entries()) assert.ok(r.closed, `case ${i + k} was closed by the gateway (${r.ms} ms)`);
      }
      await sleep(100);
      assert.equal(pair.b.activeTunnels(), 0);
      const ok = await withTimeout(sendAndVerify(pair.cfgA.listen!.intercept!.port, '127.0.0.1', 1 << 20), HANG_GUARD_MS, 'still serving');
      assert.equal(ok.reply, ok.sent);
    } finally { await pair.close(); await sink.close(); }
  });

  it('a wrong BIND from a fleet member: counted as binding_mismatch, destination reset before any byte', async () => {
    let gotBytes = 0;
    let dstEnds = 0;
    const dst = net.createServer((s) => { s.on('data', (d) => { gotBytes += d.length; }); s.on('error', () => { dstEnds++; }); s.on('close', () => { dstEnds++; }); });
    await new Promise<void>((r) => dst.listen(0, '127.0.0.1', () => r()));
    const g = await startGateway(await configFor('west', 'east', 1, 'mtls-splice', pki), { logger: silent, unsafeAllowLoopbackDestinations: true });
    try {
      const port = g.addresses().tunnel.port;
      const done = await withTimeout(new Promise<string>((resolve) => {
        const t = tls.connect({ port, host: '127.0.0.1', ca: fs.readFileSync(pki.ca), cert: fs.readFileSync(pki.certs.east.cert), key: fs.readFileSync(pki.certs.east.key), checkServerIdentity: () => undefined, minVersion: 'TLSv1.3' });
        let buf = Buffer.alloc(0);
        t.on('secureConnect', () => t.write(open({ payload: 'splice', dstPort: (dst.address() as net.AddressInfo).port })));
        t.on('data', (d: Buffer) => {
          buf = Buffer.concat([buf, d]);
          const r = new FrameReader(4096, FRAME_REPLY).push(buf);
          if (r.kind === 'frame' && r.rest.length >= 40) { t.write(encodeBind(crypto.randomBytes(32))); }
        });
        t.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
        t.on('close', () => resolve('closed'));
      }), HANG_GUARD_MS, 'adversary');
      assert.match(done, /ECONNRESET|closed/);
      for (const end = Date.now() + HANG_GUARD_MS; Date.now() < end && await counter(g, 'mm_proxy_refusals_total', { reason: 'binding_mismatch' }) === 0;) await sleep(10);
      assert.equal(await counter(g, 'mm_proxy_refusals_total', { reason: 'binding_mismatch' }), 1);
      for (const end = Date.now() + HANG_GUARD_MS; Date.now() < end && dstEnds === 0;) await sleep(10);
      assert.ok(dstEnds > 0, 'destination connection ended');
      assert.equal(gotBytes, 0);
      assert.equal(g.activeTunnels(), 0);
    } finally { await g.close(); dst.close(); }
  });
});
