/**
 * What a gateway refuses to trust, on the tunnel port with real mTLS: a non-member, a member speaking
 * for another cluster or relaying another member's CA, a certificate that is not a CA, an expired one,
 * an oversized bundle, a stale sequence. And the API contract of the trust container against the fake
 * API server: two replicas never fight (409 then retry), a 410 on the watch and an API server restart
 * are survived, and a CA virt-operator keeps dropping is not rewritten in a loop.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayHandle } from '../gateway';
import { CONNECTION_ID_BYTES, encodeTrustPublish, refusalName } from '../protocol';
import { publishOnce, type PublishContext } from '../trust/publisher';
import { configFor } from '../testkit/gateways';
import { makeCert } from '../testkit/ca-certs';
import { HANG_GUARD_MS, makePki, silent, sleep, tmpDir, waitUntil, type Pki } from '../testkit/helpers';
import { FakeKubeApi } from '../testkit/fake-kube';
import { startAgent, simClock, type SimCluster } from '../testkit/trust-fleet';
import { VirtOperatorModel } from '../testkit/virt-operator-model';
import * as fs from 'node:fs';
import { EventEmitter } from 'node:events';

const H = 3600_000;

describe('trust refusals on the tunnel port (mTLS)', { timeout: 5 * HANG_GUARD_MS }, () => {
  let pki: Pki;
  let west: GatewayHandle;
  let dir: string;
  const ctx = (name: string): PublishContext => ({
    fleet: 'fleet', timeoutMs: 3000, headerMaxBytes: 4096,
    tls: { ca: fs.readFileSync(pki.ca), cert: fs.readFileSync(pki.certs[name].cert), key: fs.readFileSync(pki.certs[name].key) },
  });
  const send = async (as: string, cluster: string, certs: Buffer[], sequence = BigInt(Date.now())) => {
    const frame = encodeTrustPublish({ connectionId: crypto.randomBytes(CONNECTION_ID_BYTES), cluster, sequence, certs });
    const r = await publishOnce(ctx(as), { cluster: 'west', host: '127.0.0.1', port: west.addresses().tunnel.port }, frame);
    return refusalName(r.status);
  };
  const ca = (cn: string, from = Date.now() - H, to = Date.now() + 100 * H) => makeCert(cn, from, to).der;

  before(async () => {
    pki = makePki('fleet', ['east', 'west', 'north']);
    dir = tmpDir('mm-trust-ref-');
    const cfg = await configFor('west', 'east', 1, 'mtls', pki, {
      peers: [
        { cluster: 'east', cidrs: ['10.40.0.0/16'], gateways: [{ host: '127.0.0.1', port: 1 }] },
        { cluster: 'north', cidrs: ['10.60.0.0/16'], gateways: [{ host: '127.0.0.1', port: 1 }] },
      ],
      trust: { socket: path.join(dir, 'trust.sock'), repushIntervalMs: 60_000, retryMs: 1000 },
    });
    west = await startGateway(cfg, { logger: silent });
  });
  after(async () => { await west?.close(); fs.rmSync(dir, { recursive: true, force: true }); });

  it('accepts a member publishing its own CA, and shows it in the table', async () => {
    const der = ca('kubevirt.io@east');
    assert.equal(await send('east', 'east', [der]), 'accepted');
    const row = west.trust.table.toJSON().peers.find((p) => p.cluster === 'east')!;
    assert.equal(row.certs[0].sha256, crypto.createHash('sha256').update(der).digest('hex'));
  });

  it('refuses a non-member: a fleet certificate naming a cluster that is not a peer is dropped in the handshake', async () => {
    await assert.rejects(send('stranger', 'stranger', [ca('kubevirt.io@stranger')]));
    assert.equal(west.trust.table.toJSON().peers.some((p) => p.cluster === 'stranger'), false);
  });

  it('refuses a member publishing for another cluster, and a member relaying another member\'s CA', async () => {
    assert.equal(await send('east', 'north', [ca('kubevirt.io@north')]), 'trust_not_self');
    const northCa = ca('kubevirt.io@north');
    assert.equal(await send('north', 'north', [northCa]), 'accepted');
    assert.equal(await send('east', 'east', [northCa]), 'trust_not_self');
  });

  it('refuses a certificate that is not a CA, an expired CA, a not-yet-valid CA', async () => {
    const now = Date.now();
    assert.equal(await send('east', 'east', [makeCert('leaf', now - H, now + H, { ca: false }).der]), 'trust_not_ca');
    assert.equal(await send('east', 'east', [ca('old', now - 10 * H, now - H)]), 'trust_not_valid');
    assert.equal(await send('east', 'east', [ca('future', now + H, now + 10 * H)]), 'trust_not_valid');
  });

  it('refuses an oversized bundle by the tunnel header cap, and a stale sequence', async () => {
    const pad = (n: string) => makeCert(n, Date.now() - H, Date.now() + H, { padBytes: 1500 }).der;
    assert.equal(await send('east', 'east', [pad('a'), pad('b'), pad('c')]), 'header_too_large');
    assert.equal(await send('east', 'east', [ca('kubevirt.io@east2')], 1n), 'trust_stale');
  });

  it('counts every verdict in mm_trust_received_total', async () => {
    const m = await west.registry.getSingleMetric('mm_trust_received_total')!.get();
    const results = new Set(m.values.map((v) => v.labels.result));
    for (const r of ['accepted', 'trust_not_self', 'trust_not_ca', 'trust_not_valid', 'trust_stale']) assert.ok(results.has(r), r);
  });
});

describe('trust container against the API contract', { timeout: 5 * HANG_GUARD_MS }, () => {
  const clock = simClock();
  let api: FakeKubeApi;
  let cluster: SimCluster;
  let dir: string;
  let server: import('node:net').Server;
  let peerCa: ReturnType<typeof makeCert>;
  const sockets: import('node:net').Socket[] = [];
  /** What the agents told the stand-in runtime, in order (`local` fingerprints, `written`, ...). */
  const heard: { from: import('node:net').Socket; m: { type: string; fingerprints?: string[] } }[] = [];
  const heardEvent = new EventEmitter();
  /** Resolves once `ok()` holds, re-checked on each line the agents send (an event, not a timer). */
  /** Waits for `ok` under a hang guard (not a goal: trust-api-faults holds the 10 s goals), then fails naming `what`. */
  const poll = async (ok: () => boolean, what: string) => assert.ok(await waitUntil(ok, HANG_GUARD_MS) >= 0, `${what} within ${HANG_GUARD_MS} ms`);
  const until = (ok: () => boolean) => new Promise<void>((r) => {
    if (ok()) { r(); return; }
    const on = () => { if (ok()) { heardEvent.off('line', on); r(); } };
    heardEvent.on('line', on);
  });

  before(async () => {
    dir = tmpDir('mm-trust-api-');
    api = new FakeKubeApi('kubevirt');
    await api.listen();
    const model = new VirtOperatorModel(api, 'east', 168 * H, 96 * H, clock.now);
    model.install(H);
    // a stand-in runtime on the local channel: it hands the agents one peer bundle
    const net = await import('node:net');
    const socket = path.join(dir, 'trust.sock');
    peerCa = makeCert('kubevirt.io@west', Date.now() - H, Date.now() + 100 * H);
    server = net.createServer((s) => {
      sockets.push(s);
      s.write(`${JSON.stringify({ type: 'peer', cluster: 'west', certs: [peerCa.pem], sequence: 1, receivedAt: Date.now() })}\n`);
      let buf = '';
      s.on('data', (c) => {
        buf += c;
        for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) { heard.push({ from: s, m: JSON.parse(buf.slice(0, i)) }); buf = buf.slice(i + 1); heardEvent.emit('line'); }
      });
    });
    await new Promise<void>((r) => server.listen(socket, () => r()));
    cluster = { name: 'east', api, model, gw: undefined as never, agents: [], socket };
  });
  after(async () => {
    for (const a of cluster.agents) await a.stop();
    for (const s of sockets) s.destroy();
    await new Promise<void>((r) => server.close(() => r()));
    await api.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('two replicas write the same peer CA without fighting (optimistic concurrency, 409 retried)', async () => {
    const sha = crypto.createHash('sha256').update(peerCa.der).digest('hex');
    const line = peerCa.pem.split('\n')[1];
    // hold virt-operator back (both replicas see the CA missing); the first write of the CA is the event awaited
    const written = new Promise<void>((r) => { api.onUpdate = (name, _prev, next) => { if (name === 'kubevirt-external-ca' && (next.data['ca-bundle'] ?? '').includes(line)) r(); }; });
    cluster.agents.push(await startAgent(cluster, clock, ['west']), await startAgent(cluster, clock, ['west']));
    await written;
    api.onUpdate = undefined;
    // both replicas connected to the runtime (so both hold the peer bundle) and their write passes ended
    await until(() => new Set(heard.map((h) => h.from)).size >= 2);
    await Promise.all(cluster.agents.map((a) => a.idle()));
    const ext = api.get('kubevirt-external-ca')!.data['ca-bundle'];
    assert.equal(ext.split('BEGIN CERTIFICATE').length - 1, 1, 'the CA is written once, not once per replica');
    const writes = cluster.agents.reduce((n, a) => n + a.stats.writes, 0);
    assert.ok(writes >= 1 && writes <= 2, `${writes} writes`);
    // virt-operator now merges it and empties kubevirt-external-ca; nothing is written again
    const puts = api.counts.put;
    cluster.model.hook(); // virt-operator's informer again
    cluster.model.reconcileTwice();
    assert.ok(cluster.model.trusts(sha));
    // a pass right now (no rewrite wait left), before any watch event can arrive: each replica's view of
    // kubevirt-ca still lacks the CA and kubevirt-external-ca is empty; it must not write it again
    clock.offset += 3000;
    for (const a of cluster.agents) (a as unknown as { schedule(): void }).schedule();
    await Promise.all(cluster.agents.map((a) => a.idle()));
    assert.equal(api.counts.put, puts, 'no write on a stale view of kubevirt-ca');
    // each replica's watch brings the merged kubevirt-ca (it tells the runtime), then its passes end
    await until(() => sockets.every((s) => heard.some((h) => h.from === s && h.m.type === 'local' && h.m.fingerprints?.includes(sha))));
    for (const a of cluster.agents) (a as unknown as { schedule(): void }).schedule(); // a rewrite timer's pass, now
    await Promise.all(cluster.agents.map((a) => a.idle()));
    assert.equal(api.counts.put, puts, 'no write while kubevirt-ca holds the peer CA');
  });

  it('survives a 410 Gone on the watch and an API server restart, and still sees the local CA rotate', async () => {
    const a = cluster.agents[0];
    const relists0 = a.stats.relists;
    const watches0 = api.liveWatches;
    assert.ok(watches0 >= 1, 'the agents watch kubevirt-ca');
    api.expireWatches();
    await poll(() => a.stats.gone >= 1 && a.stats.relists >= relists0 + 1 && api.liveWatches >= watches0, 'the 410 seen and a new watch open');
    assert.equal(a.stats.gone, 1, 'the agent saw the 410 once');
    assert.equal(a.stats.relists, relists0 + 1, 'and relisted once, then watched again');
    // the new watch has run for more than a second when the API server restarts: a client re-WATCHes from its
    // last resourceVersion then (client-go does the same), it need not relist. Either way it must watch again.
    await sleep(1100);
    const watches = api.counts.watch;
    await api.restart();
    assert.equal(api.liveWatches, 0, 'the restart cut every watch');
    await poll(() => api.liveWatches >= watches0, 'every agent watching the restarted server');
    assert.ok(api.counts.watch >= watches + watches0, 'new WATCHes reached the restarted server');
    clock.offset += 80 * H; // past the rotation deadline
    cluster.model.reconcile();
    const rotated = cluster.model.ca.sha256;
    const seen = () => a['local'][0]?.sha256 === rotated;
    const end2 = Date.now() + HANG_GUARD_MS;
    while (!seen() && Date.now() < end2) await sleep(20);
    assert.ok(seen(), 'the agent sees the rotated CA through the new watch');
  });
});
