/**
 * The admin `/probe` (issue 51, peer-probe.ts; PROTOCOL.md section 9): a real tunnel handshake to each peer
 * gateway, a PROBE instead of OPEN, the peer's REPLY. What it answers (per peer: ok, ms, error, the gateways),
 * that the admin port cannot make the gateway flood a peer (a result reused for 5 s, one probe per peer in
 * flight, each bounded by 3 s), a peer that never answers, a peer whose certificate is wrong, what the peer
 * accepts (no more than from a tunnel: its certificate checked, the body's cluster that certificate's, nothing
 * dialed), and that only GET and HEAD are answered. Loopback, in-process gateways (native OpenSSL data path).
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayHandle } from '../gateway';
import { PROBE_CACHE_MS, PROBE_TIMEOUT_MS } from '../peer-probe';
import { RefusalCode, encodeProbe } from '../protocol';
import { configFor, startPair, type Pair } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, silent, sleep, type Pki } from '../testkit/helpers';
import { probe } from '../testkit/probe';

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });

function request(port: number, p: string, method = 'GET'): Promise<{ code: number; body: string; ms: number }> {
  const t0 = Date.now();
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body, ms: Date.now() - t0 }));
    });
    req.on('error', reject);
    req.end();
  });
}
const getProbe = async (gw: GatewayHandle) => {
  const r = await request(gw.addresses().admin.port, '/probe');
  assert.equal(r.code, 200, r.body);
  return { ...JSON.parse(r.body), ms: r.ms };
};
/** One sample of a counter, 0 when it has none. */
async function sample(gw: GatewayHandle, name: string, labels: Record<string, string>): Promise<number> {
  const m = await gw.registry.getSingleMetric(name)?.get();
  const v = m?.values.find((x) => Object.entries(labels).every(([k, want]) => x.labels[k] === want));
  return v?.value ?? 0;
}

describe('/probe between two mTLS gateways', { timeout: 5 * HANG_GUARD_MS }, () => {
  let pair: Pair;
  before(async () => { pair = await startPair('mtls', pki, () => ({ host: '127.0.0.1', port: 9 })); });
  after(async () => { await pair?.close(); });

  it('answers per peer: ok, time, the gateway probed; the peer answered one PROBE and opened no tunnel', async () => {
    const r = await getProbe(pair.a);
    assert.equal(r.cluster, 'east');
    assert.equal(r.timeoutMs, PROBE_TIMEOUT_MS);
    assert.equal(r.cacheMs, PROBE_CACHE_MS);
    assert.equal(r.peers.length, 1);
    const [p] = r.peers;
    assert.deepEqual({ peer: p.peer, ok: p.ok, cached: p.cached, error: p.error }, { peer: 'west', ok: true, cached: false, error: undefined });
    assert.deepEqual(p.gateways.map((g: { gateway: string; ok: boolean }) => [g.gateway, g.ok]), [[`127.0.0.1:${pair.cfgB.listen!.tunnel!.port}`, true]]);
    assert.ok(p.ms >= 0 && p.ms < PROBE_TIMEOUT_MS, `ms ${p.ms}`);
    assert.equal(await sample(pair.a, 'mm_proxy_probes_total', { peer: 'west', result: 'ok' }), 1);
    assert.equal(await sample(pair.b, 'mm_proxy_probes_answered_total', { peer: 'east', result: 'accepted' }), 1);
    // nothing but the answer: no tunnel on either side, no refusal, no handshake failure
    assert.equal(pair.b.activeTunnels() + pair.a.activeTunnels(), 0);
    const west = JSON.parse((await request(pair.b.addresses().admin.port, '/status')).body);
    assert.deepEqual(west.lastErrors, []);
    assert.deepEqual(west.peers.east.tunnels, { origin: 0, terminus: 0 });
    assert.equal(await sample(pair.b, 'mm_proxy_tls_handshake_failures_total', { side: 'terminus' }), 0);
  });

  it('reuses a result for 5 s and runs one probe per peer at a time: requests never make more probes', async () => {
    const before = await sample(pair.a, 'mm_proxy_probes_total', { peer: 'west', result: 'ok' });
    const first = await getProbe(pair.a);
    // a burst inside the cache window: all from the cache, no probe
    const burst = await Promise.all(Array.from({ length: 20 }, () => getProbe(pair.a)));
    for (const b of burst) assert.deepEqual([b.peers[0].cached, b.peers[0].at], [true, first.peers[0].at]);
    const made = await sample(pair.a, 'mm_proxy_probes_total', { peer: 'west', result: 'ok' }) - before;
    assert.ok(made <= 1, `${made} probes for 21 requests`);
    await sleep(PROBE_CACHE_MS + 100);
    // expired: 10 requests at once share one new probe
    const again = await Promise.all(Array.from({ length: 10 }, () => getProbe(pair.a)));
    assert.equal(new Set(again.map((x) => x.peers[0].at)).size, 1);
    assert.ok(again.every((x) => x.peers[0].ok && !x.peers[0].cached));
    assert.notEqual(again[0].peers[0].at, first.peers[0].at);
    assert.equal(await sample(pair.a, 'mm_proxy_probes_total', { peer: 'west', result: 'ok' }) - before, made + 1);
  });

  it('answers GET and HEAD only: other methods get 405 and make no probe', async () => {
    const port = pair.a.addresses().admin.port;
    const count = () => sample(pair.a, 'mm_proxy_probes_total', { peer: 'west', result: 'ok' });
    await sleep(PROBE_CACHE_MS + 100); // nothing cached: a probe would be counted
    const n = await count();
    for (const m of ['POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS']) assert.equal((await request(port, '/probe', m)).code, 405, m);
    assert.equal(await count(), n);
    const head = await request(port, '/probe', 'HEAD');
    assert.deepEqual([head.code, head.body], [200, '']);
    assert.equal(await count(), n + 1);
  });
});

describe('/probe of a peer that fails', { timeout: 5 * HANG_GUARD_MS }, () => {
  const gws: GatewayHandle[] = [];
  const servers: net.Server[] = [];
  after(async () => {
    for (const g of gws) await g.close();
    for (const s of servers) { s.close(); }
  });

  it('a peer that accepts TCP and never answers: not ok, within the probe\'s bound, one connection for a burst', async () => {
    const held: net.Socket[] = [];
    const mute = net.createServer((s) => { held.push(s); s.on('error', () => undefined); });
    servers.push(mute);
    await new Promise<void>((r) => mute.listen(0, '127.0.0.1', () => r()));
    const port = (mute.address() as net.AddressInfo).port;
    // the default handshake deadline (10 s): the probe's own bound ends it
    const east = await startGateway(await configFor('east', 'west', port, 'mtls', pki, { limits: { handshakeTimeoutMs: 10_000, dialTimeoutMs: 2000 } }), { logger: silent });
    gws.push(east);
    const burst = await Promise.all(Array.from({ length: 5 }, () => getProbe(east)));
    for (const r of burst) {
      const [p] = r.peers;
      assert.equal(p.ok, false);
      assert.match(p.error, new RegExp(`^127\\.0\\.0\\.1:${port}: no answer within ${PROBE_TIMEOUT_MS} ms$`));
      assert.ok(p.ms >= PROBE_TIMEOUT_MS - 50, `ms ${p.ms}`);
      // the error names the probe's own bound as what ended it; the answer came before east's handshake deadline
      // (10 s) could have (a fixed 3 s of slack over the probe's bound was the window once: a loaded machine's share)
      assert.ok(r.ms < 10_000, `answered after ${r.ms} ms`);
    }
    assert.equal(held.length, 1, 'one probe in flight per peer');
    assert.equal(await sample(east, 'mm_proxy_probes_total', { peer: 'west', result: 'timeout' }), 1);
    for (const s of held) s.destroy();
  });

  // the peer gateway's certificate: the fleet CA's, naming another cluster; or another CA's (both refused by the prober)
  const wrong = [
    { what: 'fleet CA, another cluster\'s name: the identity check refuses it', cert: 'stranger', ca: () => pki.ca, error: /peer certificate does not name exactly spiffe:\/\/fleet\/cluster\/west$/ },
    { what: 'another CA: the handshake fails', cert: 'foreign', ca: () => pki.foreignCa, error: /./ },
  ];
  for (const w of wrong) {
    it(`a peer gateway with a wrong certificate (${w.what}): not ok, and no PROBE reached it`, async () => {
      const west = await startGateway(await configFor('west', 'east', 1, 'mtls', pki, {
        tls: { mode: 'mtls', caFile: w.ca(), certFile: pki.certs[w.cert].cert, keyFile: pki.certs[w.cert].key },
      }), { logger: silent });
      gws.push(west);
      const east = await startGateway(await configFor('east', 'west', west.addresses().tunnel.port, 'mtls', pki), { logger: silent });
      gws.push(east);
      const [p] = (await getProbe(east)).peers;
      assert.equal(p.ok, false);
      assert.match(p.error, w.error);
      assert.equal(await sample(east, 'mm_proxy_probes_total', { peer: 'west', result: 'tls_handshake' }), 1);
      assert.equal(await sample(west, 'mm_proxy_probes_answered_total', {}), 0);
    });
  }

  it('nothing listening: not ok at once (connection refused)', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const east = await startGateway(await configFor('east', 'west', port, 'mtls', pki), { logger: silent });
    gws.push(east);
    const [p] = (await getProbe(east)).peers;
    assert.equal(p.ok, false);
    assert.match(p.error, /ECONNREFUSED/);
    assert.ok(p.ms < PROBE_TIMEOUT_MS, `ms ${p.ms}`);
    assert.equal(await sample(east, 'mm_proxy_probes_total', { peer: 'west', result: 'unreachable' }), 1);
  });
});

describe('what the peer accepts: a PROBE is judged as a tunnel is, and dials nothing', { timeout: 5 * HANG_GUARD_MS }, () => {
  let west: GatewayHandle;
  const creds = (c: string) => ({ cert: pki.certs[c].cert, key: pki.certs[c].key, ca: pki.ca });
  const frame = (sourceCluster: string) => encodeProbe({ connectionId: crypto.randomBytes(16), sourceCluster });
  before(async () => { west = await startGateway(await configFor('west', 'east', 1, 'mtls', pki, { limits: { handshakeTimeoutMs: 1500 } }), { logger: silent }); });
  after(async () => { await west?.close(); });

  it('from a configured peer\'s certificate: accepted', async () => {
    const r = await probe(west.addresses().tunnel.port, frame('east'), creds('east'));
    assert.equal(r.reply?.status, RefusalCode.ACCEPTED);
    assert.equal(west.activeTunnels(), 0);
  });

  it('the body naming another cluster than the certificate: SOURCE_MISMATCH', async () => {
    const r = await probe(west.addresses().tunnel.port, frame('north'), creds('east'));
    assert.equal(r.reply?.status, RefusalCode.SOURCE_MISMATCH);
    assert.equal(await sample(west, 'mm_proxy_probes_answered_total', { peer: 'east', result: 'source_mismatch' }), 1);
  });

  it('a fleet certificate of a cluster that is not a peer: dropped without a reply, as a tunnel is', async () => {
    const r = await probe(west.addresses().tunnel.port, frame('stranger'), creds('stranger'));
    assert.equal(r.reply, undefined);
    assert.equal(await sample(west, 'mm_proxy_refusals_total', { reason: 'unknown_peer_certificate', side: 'terminus' }), 1);
  });

  it('no certificate on an mTLS port: no reply', async () => {
    const r = await probe(west.addresses().tunnel.port, frame('east'));
    assert.equal(r.reply, undefined);
  });
});

describe('/probe in plaintext mode', { timeout: 5 * HANG_GUARD_MS }, () => {
  let pair: Pair;
  before(async () => { pair = await startPair('plaintext', undefined, () => ({ host: '127.0.0.1', port: 9 })); });
  after(async () => { await pair?.close(); });

  it('probes over TCP: PROBE and REPLY, and the peer checks the claimed cluster is a peer', async () => {
    const [p] = (await getProbe(pair.a)).peers;
    assert.deepEqual([p.peer, p.ok], ['west', true]);
    const r = await probe(pair.cfgB.listen!.tunnel!.port, encodeProbe({ connectionId: crypto.randomBytes(16), sourceCluster: 'north' }));
    assert.equal(r.reply?.status, RefusalCode.UNKNOWN_PEER);
  });
});
