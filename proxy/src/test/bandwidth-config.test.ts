/**
 * The bandwidth budget per peer is enforced or refused, never silently ignored (issue 52 item 3): the runtime
 * config refuses it with tls.mode mtls (payload inside TLS is not budgeted), the gateway refuses it without the
 * native addon (the Node stream relay does not budget), and the addon refuses a budget that is not one.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseProxyConfig } from '../config';
import { startGateway } from '../gateway';
import { loadNative } from '../native';
import { configFor, startPair } from '../testkit/gateways';
import { makePki, sendAndVerify, silent, startSink } from '../testkit/helpers';

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

  it('payload inside TLS never crosses a budget unenforced: the terminus refuses it, the origin does not fall back to it', { timeout: 30_000 }, async () => {
    const pki = makePki('fleet', ['east', 'west']);
    const sink = await startSink();
    const mtls = (c: string) => ({ tls: { mode: 'mtls' as const, caFile: pki.ca, certFile: pki.certs[c].cert, keyFile: pki.certs[c].key } });
    // an mtls origin (payload tls) to an mtls-splice terminus with a budget
    const p1 = await startPair('mtls-splice', pki, () => ({ host: '127.0.0.1', port: sink.port }), {}, {}, { bandwidth: 20_000_000 }, mtls('east'));
    try {
      await assert.rejects(sendAndVerify(p1.cfgA.listen!.intercept!.port, '127.0.0.1', 1000), /ECONNRESET|EPIPE|socket hang up|closed/);
      const refused = (await p1.b.registry.getSingleMetric('mm_proxy_refusals_total')!.get()).values.find((v) => v.labels.reason === 'payload_mode_refused');
      assert.ok(refused && refused.value >= 1, 'counted as payload_mode_refused on the terminus');
    } finally { await p1.close(); }
    // an mtls-splice origin with a budget to an mtls terminus (which refuses the splice payload): no fallback
    const p2 = await startPair('mtls-splice', pki, () => ({ host: '127.0.0.1', port: sink.port }), {}, {}, mtls('west'), { bandwidth: 20_000_000 });
    try {
      await assert.rejects(sendAndVerify(p2.cfgA.listen!.intercept!.port, '127.0.0.1', 1000), /ECONNRESET|EPIPE|socket hang up|closed/);
      // without the budget the same pair falls back to payload inside TLS and carries the bytes
      assert.ok(p2.a.reload({ ...p2.cfgA, bandwidth: undefined }));
      const r = await sendAndVerify(p2.cfgA.listen!.intercept!.port, '127.0.0.1', 1000);
      assert.equal(r.reply, r.sent);
    } finally { await p2.close(); await sink.close(); }
  });
});
