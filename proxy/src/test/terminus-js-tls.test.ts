/**
 * The terminus on Node's tls server (dataPath 'js'): the refusal paths that the default (native TLS) suite
 * does not reach. Each connection's handshake state must be found again from the TLS socket (certificate
 * refusals, timeouts, slots released), and the identity and OPEN checks are the same as on the native path.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayHandle } from '../gateway';
import { RefusalCode, encodeOpen, type OpenHeader } from '../protocol';
import { configFor } from '../testkit/gateways';
import { makePki, sleep, silent, startSink, type Pki } from '../testkit/helpers';
import { probe } from '../testkit/probe';

let pki: Pki;

async function counter(g: GatewayHandle, name: string, labels: Record<string, string>): Promise<number> {
  const m = await g.registry.getSingleMetric(name)!.get();
  return m.values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((s, v) => s + v.value, 0);
}

/** Wait (bounded) until `read` differs from `from`; its last value. */
async function changed(read: () => Promise<number>, from: number): Promise<number> {
  let v = await read();
  for (let k = 0; k < 300 && v === from; k++) { await sleep(10); v = await read(); }
  return v;
}

describe('terminus on Node\'s tls server (dataPath js)', { timeout: 60_000 }, () => {
  let west: GatewayHandle;
  let port: number;
  let sink: Awaited<ReturnType<typeof startSink>>;
  const creds = (name: string) => ({ ...pki.certs[name], ca: pki.ca });
  const open = (o: Partial<OpenHeader> = {}) =>
    encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: '127.0.0.1', dstPort: sink.port, sourceCluster: 'east', ...o });
  const tlsFailures = () => counter(west, 'mm_proxy_tls_handshake_failures_total', { side: 'terminus' });
  const refusals = (reason: string) => counter(west, 'mm_proxy_refusals_total', { side: 'terminus', reason });

  before(async () => {
    pki = makePki('fleet', ['east', 'west', 'north']);
    sink = await startSink();
    const cfg = await configFor('west', 'east', 1, 'mtls', pki, {
      peers: [
        { cluster: 'east', cidrs: ['10.40.0.0/16'], gateways: [{ host: '127.0.0.1', port: 1 }] },
        { cluster: 'north', cidrs: ['10.60.0.0/16'], gateways: [{ host: '127.0.0.1', port: 1 }] },
      ],
      limits: { handshakeTimeoutMs: 800, dialTimeoutMs: 300, maxTunnelsTotal: 4 },
    });
    west = await startGateway(cfg, { logger: silent, dataPath: 'js', unsafeAllowLoopbackDestinations: true });
    port = west.addresses().tunnel.port;
    assert.equal(west.nativeDataPath, false);
  });
  after(async () => { await west?.close(); await sink?.close(); });

  it('accepts a peer\'s OPEN and replies ACCEPTED', async () => {
    const r = await probe(port, open(), creds('east'), 2000);
    assert.equal(r.reply?.status, RefusalCode.ACCEPTED);
  });

  it('refuses a fleet certificate that names no peer: no reply, counted as a TLS failure', async () => {
    const [f0, u0] = [await tlsFailures(), await refusals('unknown_peer_certificate')];
    const r = await probe(port, open(), creds('stranger'));
    assert.equal(r.reply, undefined);
    assert.ok(r.closed);
    assert.equal(await changed(() => refusals('unknown_peer_certificate'), u0), u0 + 1);
    assert.equal(await tlsFailures(), f0 + 1);
  });

  it('refuses a certificate from another CA', async () => {
    const f0 = await tlsFailures();
    const r = await probe(port, open(), { ...pki.certs.foreign, ca: pki.ca });
    assert.equal(r.reply, undefined);
    assert.ok(r.closed);
    assert.ok(await changed(tlsFailures, f0) > f0);
  });

  it('refuses a header whose source is not the certificate\'s cluster, and a forbidden destination', async () => {
    const r = await probe(port, open({ sourceCluster: 'north' }), creds('east'));
    assert.equal(r.reply?.status, RefusalCode.SOURCE_MISMATCH);
    const r2 = await probe(port, open({ dstHost: '169.254.169.254' }), creds('east'));
    assert.equal(r2.reply?.status, RefusalCode.DESTINATION_FORBIDDEN);
  });

  it('a client that never starts the handshake is cut at the deadline and counted as a TLS failure', async () => {
    const f0 = await tlsFailures();
    const r = await probe(port, () => undefined);
    assert.ok(r.closed);
    assert.ok(r.ms < 3000, `closed after ${r.ms} ms`);
    assert.ok(await changed(tlsFailures, f0) > f0);
  });

  it('a slow header after a good handshake is cut at the deadline, and is not a TLS failure', async () => {
    const [f0, t0] = [await tlsFailures(), await refusals('handshake_timeout')];
    const bytes = open();
    const r = await probe(port, (s) => {
      let i = 0;
      const iv = setInterval(() => { if (i < bytes.length) s.write(bytes.subarray(i, ++i)); }, 150);
      s.on('close', () => clearInterval(iv));
    }, creds('east'));
    assert.ok(r.closed);
    assert.ok(r.ms < 3000, `closed after ${r.ms} ms`);
    assert.equal(await changed(() => refusals('handshake_timeout'), t0), t0 + 1);
    await sleep(100);
    assert.equal(await tlsFailures(), f0);
  });

  it('releases every handshake slot: more refused handshakes than the cap, then a tunnel still opens', async () => {
    for (let i = 0; i < 6; i++) assert.equal((await probe(port, open(), creds('stranger'))).reply, undefined);
    assert.equal((await probe(port, open(), creds('east'), 2000)).reply?.status, RefusalCode.ACCEPTED);
    assert.equal(await refusals('too_many_handshakes'), 0);
  });
});
