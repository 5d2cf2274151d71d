/**
 * The bandwidth budget per peer is enforced or refused, never silently ignored (issue 52 item 3): the runtime
 * config refuses it with tls.mode mtls (payload inside TLS is not budgeted), the gateway refuses it without the
 * native addon (the Node stream relay does not budget), and the addon refuses a budget that is not one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseProxyConfig, peerBandwidth } from '../config';
import { PeerBudgets } from '../peer-budgets';
import { startGateway } from '../gateway';
import { loadNative } from '../native';
import { configFor, startPair } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, sendAndVerify, silent, startSink } from '../testkit/helpers';

describe('bandwidth budget: enforced or refused', () => {
  it('the runtime config refuses it with tls.mode mtls, naming the field and the fix; takes it with mtls-splice and plaintext', async () => {
    const pki = makePki('fleet', ['east', 'west']);
    const mtls = await configFor('east', 'west', 1, 'mtls', pki, { bandwidth: 20_000_000 });
    assert.throws(() => parseProxyConfig(mtls), /bandwidth: a budget per peer is enforced on plaintext and spliced tunnels only[\s\S]*set tls\.mode mtls-splice, or remove bandwidth/);
    assert.equal(parseProxyConfig(await configFor('east', 'west', 1, 'mtls-splice', pki, { bandwidth: 20_000_000 })).bandwidth, 20_000_000);
    assert.equal(parseProxyConfig(await configFor('east', 'west', 1, 'plaintext', pki, { bandwidth: 20_000_000 })).bandwidth, 20_000_000);
    assert.equal(parseProxyConfig(await configFor('east', 'west', 1, 'plaintext', pki)).bandwidth, undefined);
    assert.throws(() => parseProxyConfig({ ...mtls, tls: { mode: 'plaintext' }, bandwidth: 0 }), /bandwidth/);
  });

  it('a peer\'s own bandwidth overrides the top-level one for that peer only, and is refused with tls.mode mtls like it', async () => {
    const pki = makePki('fleet', ['east', 'west', 'north']);
    const base = await configFor('east', 'west', 1, 'plaintext', pki);
    const north = { cluster: 'north', cidrs: ['10.3.0.0/24'], gateways: [{ host: '192.168.51.2', port: 15443 }] };
    const both = parseProxyConfig({ ...base, bandwidth: 20_000_000, peers: [...base.peers!, { ...north, bandwidth: 12_000_000 }] });
    assert.deepEqual(['west', 'north', 'south'].map((p) => peerBandwidth(both, p)), [20_000_000, 12_000_000, 20_000_000]);
    // no top-level budget: only the peer that has its own is budgeted
    const own = parseProxyConfig({ ...base, peers: [...base.peers!, { ...north, bandwidth: 12_000_000 }] });
    assert.deepEqual(['west', 'north'].map((p) => peerBandwidth(own, p)), [undefined, 12_000_000]);
    const mtls = await configFor('east', 'west', 1, 'mtls', pki);
    assert.throws(() => parseProxyConfig({ ...mtls, peers: [...mtls.peers!, { ...north, bandwidth: 12_000_000 }] }),
      /peers\[1\]\.bandwidth: a budget per peer is enforced on plaintext and spliced tunnels only[\s\S]*set tls\.mode mtls-splice/);
    assert.throws(() => parseProxyConfig({ ...base, peers: [{ ...north, bandwidth: 0 }] }), /peers\[0\]\.bandwidth/);
    // a gateway on the Node stream relay refuses a peer's own budget as it refuses the top-level one
    await assert.rejects(startGateway(own, { logger: silent, dataPath: 'js' }), /needs the native addon[\s\S]*\(dataPath is js\)/);
  });

  it('the native budgets follow each peer\'s rate, and a reload that takes a peer\'s budget away stops reporting it', () => {
    const n = loadNative();
    const peer = (cluster: string, bandwidth?: number) => ({ cluster, cidrs: ['10.9.0.0/24'], gateways: [{ host: '192.168.50.9', port: 15443 }], ...(bandwidth ? { bandwidth } : {}) });
    const cfgOf = (peers: object[], bandwidth?: number) => parseProxyConfig({
      version: 1, fleet: 'fleet', cluster: 'east', listen: { intercept: { host: '127.0.0.1', port: 1 }, tunnel: { host: '127.0.0.1', port: 2 }, admin: { host: '127.0.0.1', port: 3 } },
      localCidrs: ['10.1.0.0/24'], peers, tls: { mode: 'plaintext' }, ...(bandwidth ? { bandwidth } : {}),
    });
    let cfg = cfgOf([peer('west'), peer('north', 12_000_000)], 20_000_000);
    const budgets = new PeerBudgets(n, () => cfg);
    const west = budgets.for('west'), north = budgets.for('north');
    assert.ok(west && north && west !== north);
    assert.equal(budgets.for('north'), north, 'one budget per peer, shared by its tunnels');
    assert.deepEqual(budgets.snapshot().map((b) => [b.peer, b.rate]), [['west', 20_000_000], ['north', 12_000_000]]);
    cfg = cfgOf([peer('west'), peer('north', 12_000_000)]); // the top-level budget removed: north keeps its own
    assert.equal(budgets.for('west'), null);
    assert.deepEqual(budgets.snapshot().map((b) => [b.peer, b.rate]), [['north', 12_000_000]]);
    cfg = cfgOf([peer('west'), peer('north', 30_000_000)]); // a new rate: a new budget for new tunnels
    assert.notEqual(budgets.for('north'), north);
    assert.deepEqual(budgets.snapshot().map((b) => [b.peer, b.rate]), [['north', 30_000_000]]);
  });

  it('a gateway on the Node stream relay (dataPath js) refuses to start with a budget', async () => {
    const cfg = parseProxyConfig(await configFor('east', 'west', 1, 'plaintext', undefined, { bandwidth: 20_000_000 }));
    await assert.rejects(startGateway(cfg, { logger: silent, dataPath: 'js' }), /bandwidth \(a budget per peer\) needs the native addon: only its splice relay enforces it \(dataPath is js\)/);
  });

  it('the addon: budgetCreate refuses a rate below 1 byte/s; startPump and tlsContinue refuse a budget that is not one', () => {
    const n = loadNative();
    assert.throws(() => n.budgetCreate(0), /budgetCreate\(bytesPerSecond\)/);
    const b = n.budgetCreate(1_000_000);
    assert.equal(n.budgetSent(b), 0);
    assert.throws(() => n.budgetSent({} as never), /budgetSent\(handle\)/);
    assert.throws(() => n.startPump(0, 1, null, null, 0, () => undefined, {} as never), /budgets must be budgetCreate\(\) handles or null/);
  });

  it('payload inside TLS never crosses a budget unenforced: the terminus refuses it, the origin does not fall back to it', { timeout: 5 * HANG_GUARD_MS }, async (t) => {
    const pki = makePki('fleet', ['east', 'west']);
    const sink = await startSink();
    t.after(() => sink.close()); // also when an assertion fails: an open sink would keep the run from ending
    const mtls = (c: string) => ({ tls: { mode: 'mtls' as const, caFile: pki.ca, certFile: pki.certs[c].cert, keyFile: pki.certs[c].key } });
    // an mtls origin (payload tls) to an mtls-splice terminus with a budget
    const p1 = await startPair('mtls-splice', pki, () => ({ host: '127.0.0.1', port: sink.port }), {}, {}, { bandwidth: 20_000_000 }, mtls('east'));
    try {
      await assert.rejects(sendAndVerify(p1.cfgA.listen!.intercept!.port, '127.0.0.1', 1000), /ECONNRESET|EPIPE|socket hang up|closed/);
      const refused = (await p1.b.registry.getSingleMetric('mm_proxy_refusals_total')!.get()).values.find((v) => v.labels.reason === 'payload_mode_refused');
      assert.ok(refused && refused.value >= 1, 'counted as payload_mode_refused on the terminus');
    } finally { await p1.close(); }
    // the same with the terminus' budget toward east on east's peer entry only (as the library writes a pair's own)
    const ownPeers = (await configFor('west', 'east', 1, 'mtls-splice', pki)).peers!.map((p) => ({ ...p, bandwidth: 20_000_000 }));
    const p3 = await startPair('mtls-splice', pki, () => ({ host: '127.0.0.1', port: sink.port }), {}, {}, {}, mtls('east'));
    try {
      assert.ok(p3.b.reload({ ...p3.cfgB, peers: p3.cfgB.peers!.map((p, i) => ({ ...p, bandwidth: ownPeers[i].bandwidth })) }));
      await assert.rejects(sendAndVerify(p3.cfgA.listen!.intercept!.port, '127.0.0.1', 1000), /ECONNRESET|EPIPE|socket hang up|closed/);
      const refused = (await p3.b.registry.getSingleMetric('mm_proxy_refusals_total')!.get()).values.find((v) => v.labels.reason === 'payload_mode_refused');
      assert.ok(refused && refused.value >= 1, 'a peer\'s own budget: counted as payload_mode_refused on the terminus');
    } finally { await p3.close(); }
    // an mtls-splice origin with a budget to an mtls terminus (which refuses the splice payload): no fallback
    const p2 = await startPair('mtls-splice', pki, () => ({ host: '127.0.0.1', port: sink.port }), {}, {}, mtls('west'), { bandwidth: 20_000_000 });
    try {
      await assert.rejects(sendAndVerify(p2.cfgA.listen!.intercept!.port, '127.0.0.1', 1000), /ECONNRESET|EPIPE|socket hang up|closed/);
      // without the budget the same pair falls back to payload inside TLS and carries the bytes
      assert.ok(p2.a.reload({ ...p2.cfgA, bandwidth: undefined }));
      const r = await sendAndVerify(p2.cfgA.listen!.intercept!.port, '127.0.0.1', 1000);
      assert.equal(r.reply, r.sent);
    } finally { await p2.close(); }
  });
});
