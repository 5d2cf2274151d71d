/** Never an open relay: every refusal case, caps, timeouts, and a fuzzed live listener. */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayHandle } from '../gateway';
import { RefusalCode, encodeOpen, type OpenHeader } from '../protocol';
import { configFor, startPair } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, sendAndVerify, sleep, silent, startSink, withTimeout, type Pki } from '../testkit/helpers';
import { probe } from '../testkit/probe';

let pki: Pki;
const open = (o: Partial<OpenHeader> = {}) => encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: '10.50.0.9', dstPort: 9185, sourceCluster: 'east', ...o });

async function counter(g: GatewayHandle, name: string, labels: Record<string, string>): Promise<number> {
  const m = await g.registry.getSingleMetric(name)!.get();
  return m.values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((s, v) => s + v.value, 0);
}

// every refusal against both mTLS modes (mtls-splice: the OPENs ask for the spliced payload)
for (const tlsMode of ['mtls', 'mtls-splice'] as const) {
  const openM = (o: Partial<OpenHeader> = {}) => open({ payload: tlsMode === 'mtls-splice' ? 'splice' : 'tls', ...o });
  describe(`terminus refusals (${tlsMode})`, { timeout: 5 * HANG_GUARD_MS }, () => {
    let west: GatewayHandle;
    let port: number;
    const creds = (name: string, ca = pki.ca) => ({ ...pki.certs[name], ca });
    before(async () => {
      pki = makePki('fleet', ['east', 'west', 'north']);
      const cfg = await configFor('west', 'east', 1, tlsMode, pki, {
        localCidrs: ['10.50.0.0/16'], ownAddresses: ['10.50.0.1'],
        peers: [
          { cluster: 'east', cidrs: ['10.40.0.0/16'], gateways: [{ host: '127.0.0.1', port: 1 }] },
          { cluster: 'north', cidrs: ['10.60.0.0/16'], gateways: [{ host: '127.0.0.1', port: 1 }] },
        ],
        limits: { handshakeTimeoutMs: 800, dialTimeoutMs: 300, maxTunnelsPerPeer: 256 },
      });
      west = await startGateway(cfg, { logger: silent });
      port = west.addresses().tunnel.port;
    });
    after(async () => { await west?.close(); });

    it('refuses a certificate from an unknown CA (TLS handshake fails, no reply)', async () => {
      const before = await counter(west, 'mm_proxy_tls_handshake_failures_total', { side: 'terminus' });
      const r = await probe(port, openM(), creds('foreign')); // trusts our CA, presents a foreign-CA certificate
      assert.equal(r.reply, undefined);
      assert.ok(r.closed);
      for (const end = Date.now() + HANG_GUARD_MS; Date.now() < end && await counter(west, 'mm_proxy_tls_handshake_failures_total', { side: 'terminus' }) === before;) await sleep(10);
      assert.ok(await counter(west, 'mm_proxy_tls_handshake_failures_total', { side: 'terminus' }) > before);
    });

    for (const [who, why] of [['stranger', 'fleet CA but not a peer'], ['otherfleet', 'another fleet'], ['nosan', 'no spiffe URI SAN']] as const) {
      it(`refuses an unknown peer: ${why}`, async () => {
        const r = await probe(port, openM(), creds(who));
        assert.equal(r.reply, undefined, 'no header exchange with an unknown peer');
        assert.ok(r.closed);
      });
    }

    it('refuses a header whose source cluster does not match the certificate (spoofing)', async () => {
      const r = await probe(port, openM({ sourceCluster: 'north' }), creds('east'));
      assert.equal(r.reply?.status, RefusalCode.SOURCE_MISMATCH);
      assert.ok(r.closed);
      assert.ok(await counter(west, 'mm_proxy_refusals_total', { reason: 'source_mismatch' }) >= 1);
    });

    it('refuses a destination outside the cluster CIDRs', async () => {
      const r = await probe(port, openM({ dstHost: '198.51.100.10' }), creds('east'));
      assert.equal(r.reply?.status, RefusalCode.DESTINATION_OUTSIDE_CIDR);
      assert.ok(r.closed);
      // a peer's own CIDR is not ours either
      const r2 = await probe(port, openM({ dstHost: '10.60.0.5' }), creds('east'));
      assert.equal(r2.reply?.status, RefusalCode.DESTINATION_OUTSIDE_CIDR);
    });

    for (const dst of ['127.0.0.1', '::1', '169.254.169.254', '0.0.0.0', '10.50.0.1', '224.0.0.1', '::ffff:127.0.0.1', 'fe80::1']) {
      it(`refuses a forbidden destination ${dst} (loopback, metadata, own address, ...)`, async () => {
        const r = await probe(port, openM({ dstHost: dst }), creds('east'));
        assert.equal(r.reply?.status, RefusalCode.DESTINATION_FORBIDDEN);
        assert.ok(r.closed);
      });
    }

    it('closes a connection that never completes the TLS handshake (slowloris)', async () => {
      const r = await probe(port, (s) => { const iv = setInterval(() => s.write(Buffer.from([0x16])), 100); s.on('close', () => clearInterval(iv)); });
      assert.ok(r.closed, 'closed by the gateway');
      // by the configured 800 ms (the 10 s default would outlast the probe's 8 s); slack for a loaded machine
      assert.ok(r.ms < 7000, `closed after ${r.ms} ms`);
    });

    it('closes a slow header after the handshake timeout', async () => {
      const bytes = openM();
      const r = await probe(port, (s) => {
        let i = 0;
        const iv = setInterval(() => { if (i < bytes.length) s.write(bytes.subarray(i, ++i)); }, 150);
        s.on('close', () => clearInterval(iv));
      }, creds('east'));
      assert.ok(r.closed);
      // by the configured 800 ms, not after the whole header trickled in (about 15 s) nor the 10 s default
      assert.ok(r.ms < 7000, `closed after ${r.ms} ms`);
    });

    it('refuses an oversized header', async () => {
      const h = Buffer.from(openM()); h.writeUInt16BE(60_000, 6);
      const r = await probe(port, Buffer.concat([h, Buffer.alloc(10_000)]), creds('east'));
      assert.equal(r.reply?.status, RefusalCode.HEADER_TOO_LARGE);
      assert.ok(r.closed);
    });
  });
}

describe('plaintext terminus: unknown source cluster, fuzzing, caps', { timeout: 5 * HANG_GUARD_MS }, () => {
  let west: GatewayHandle;
  let port: number;
  let sink: Awaited<ReturnType<typeof startSink>>;
  before(async () => {
    sink = await startSink();
    const cfg = await configFor('west', 'east', 1, 'plaintext', undefined, { limits: { handshakeTimeoutMs: 500, maxTunnelsPerPeer: 2, headerMaxBytes: 128 } });
    west = await startGateway(cfg, { logger: silent, unsafeAllowLoopbackDestinations: true });
    port = west.addresses().tunnel.port;
  });
  after(async () => { await west?.close(); await sink?.close(); });

  it('refuses a source cluster that is not a peer', async () => {
    const r = await probe(port, open({ sourceCluster: 'stranger', dstHost: '127.0.0.1', dstPort: sink.port }));
    assert.equal(r.reply?.status, RefusalCode.UNKNOWN_PEER);
  });

  it('survives random bytes, truncated and slow headers: always closes, keeps serving', async () => {
    const cases: (Buffer | ((s: net.Socket) => void))[] = [];
    for (let i = 0; i < 150; i++) cases.push(crypto.randomBytes(crypto.randomInt(1, 2000)));
    for (let i = 0; i < 50; i++) { const g = open({ dstHost: '127.0.0.1', dstPort: sink.port }); cases.push(g.subarray(0, crypto.randomInt(1, g.length))); }
    for (let i = 0; i < 50; i++) {
      const g = Buffer.from(open());
      g[crypto.randomInt(0, g.length)] ^= 0xff;
      cases.push(Buffer.concat([g, crypto.randomBytes(crypto.randomInt(0, 64))]));
    }
    cases.push((s) => { const iv = setInterval(() => s.write(Buffer.from('M')), 50); s.on('close', () => clearInterval(iv)); });
    const heap0 = process.memoryUsage().rss;
    const results = await Promise.all(cases.map((c) => probe(port, c, undefined, 5000)));
    for (const [i, r] of results.entries()) assert.ok(r.closed, `case ${i} was closed by the gateway (took ${r.ms} ms)`);
    assert.ok(process.memoryUsage().rss - heap0 < 200 * 1024 * 1024);
    // still healthy
    const ok = await probe(port, open({ dstHost: '127.0.0.1', dstPort: sink.port }));
    assert.equal(ok.reply?.status, RefusalCode.ACCEPTED);
  });

  it('enforces the per-peer tunnel cap', async () => {
    const holders: net.Socket[] = [];
    // the previous test's last tunnel may still be closing: it counts against the cap until it is gone
    for (const end = Date.now() + HANG_GUARD_MS; Date.now() < end && west.activeTunnels() > 0;) await sleep(10);
    assert.equal(west.activeTunnels(), 0, 'no tunnel left over from the previous test (a leak would stay)');
    try {
      for (let i = 0; i < 2; i++) {
        const s = net.connect(port, '127.0.0.1');
        s.on('error', () => undefined);
        s.write(open({ dstHost: '127.0.0.1', dstPort: sink.port }));
        holders.push(s);
      }
      for (const end = Date.now() + HANG_GUARD_MS; Date.now() < end && west.activeTunnels() < 2;) await sleep(10); // a hang guard
      assert.equal(west.activeTunnels(), 2, "both holders must be established before the probe");
      const r = await probe(port, open({ dstHost: '127.0.0.1', dstPort: sink.port }));
      assert.equal(r.reply?.status, RefusalCode.PEER_LIMIT);
    } finally { holders.forEach((s) => s.destroy()); }
  });
});

describe('origin side', { timeout: 5 * HANG_GUARD_MS }, () => {
  before(() => { pki ??= makePki('fleet', ['east', 'west', 'north']); });

  it('refuses a peer gateway whose certificate names another cluster, and resets the client', async () => {
    const sink = await startSink();
    // "west" runs with north's certificate: east must not talk to it
    const pair = await startPair('mtls', pki, () => ({ host: '127.0.0.1', port: sink.port }), {}, {}, {});
    const impostor = await startGateway({ ...(await configFor('west', 'east', 1, 'mtls', pki)), tls: { mode: 'mtls', caFile: pki.ca, certFile: pki.certs.north.cert, keyFile: pki.certs.north.key } }, { logger: silent, unsafeAllowLoopbackDestinations: true });
    await pair.close();
    const { startGateway: sg } = await import('../gateway');
    const east = await sg({ ...pair.cfgA, peers: [{ cluster: 'west', cidrs: ['127.0.0.0/8'], gateways: [{ host: '127.0.0.1', port: impostor.addresses().tunnel.port }] }] },
      { logger: silent, originalDestination: () => ({ host: '127.0.0.1', port: sink.port }) });
    try {
      const res = await withTimeout(sendAndVerify(east.addresses().intercept.port, '127.0.0.1', 1000).then(() => 'carried', (e) => String(e.code ?? e)), HANG_GUARD_MS, 'client');
      assert.match(res, /ECONNRESET|EPIPE/);
      assert.ok(await counter(east, 'mm_proxy_tls_handshake_failures_total', { side: 'origin' }) >= 1);
      assert.ok(await counter(east, 'mm_proxy_refusals_total', { reason: 'peer_unreachable', side: 'origin' }) >= 1);
    } finally { await east.close(); await impostor.close(); await sink.close(); }
  });

  it('refuses (resets) an intercepted connection whose destination is in no peer CIDR', async () => {
    const cfg = await configFor('east', 'west', 1, 'plaintext', undefined);
    const east = await startGateway(cfg, { logger: silent, originalDestination: () => ({ host: '203.0.113.1', port: 80 }) });
    try {
      const res = await withTimeout(sendAndVerify(east.addresses().intercept.port, '127.0.0.1', 10).then(() => 'carried', (e) => String(e.code ?? e)), HANG_GUARD_MS, 'client');
      assert.match(res, /ECONNRESET|EPIPE/);
      assert.equal(await counter(east, 'mm_proxy_refusals_total', { reason: 'no_route' }), 1);
    } finally { await east.close(); }
  });
});
