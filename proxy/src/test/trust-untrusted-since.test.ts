/**
 * When `mm_trust_peer_ca_untrusted_seconds` starts counting: the runtime's trust hub notes a peer's bundle
 * untrusted when its table changes (a bundle accepted, the local kubevirt-ca reported, a peer forgotten),
 * so the count never depends on when somebody scrapes. The real TrustHub on a simulated clock, with
 * PUBLISH bodies built by the real encoder and judged by the real table; no scrape happens between the
 * steps unless a step says so.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { Registry } from 'prom-client';
import { parseConfigText } from '../config-file';
import type { ProxyConfig } from '../config';
import { FRAME_TRUST_PUBLISH, FrameReader, encodeTrustPublish } from '../protocol';
import { makeCert, type TestCert } from '../testkit/ca-certs';
import { makePki, silent, type Pki } from '../testkit/helpers';
import { TrustHub } from '../trust/hub';

const H = 3600_000;
const sha = (c: TestCert) => crypto.createHash('sha256').update(c.der).digest('hex');

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west', 'south']); });

/** East's config; `withWest: false` is the same fleet after west left it. Peers' gateways are unreachable ports. */
function eastConfig(withWest: boolean): ProxyConfig {
  const peer = (cluster: string, j: number) => ({ cluster, cidrs: [`10.${100 + j}.0.0/24`], gateways: [{ host: '127.0.0.1', port: 1 }] });
  return parseConfigText(JSON.stringify({
    version: 1, fleet: 'fleet', cluster: 'east',
    listen: { intercept: { host: '127.0.0.1', port: 15001 }, tunnel: { host: '127.0.0.1', port: 15002 }, admin: { host: '127.0.0.1', port: 15090 } },
    localCidrs: ['10.99.0.0/24'],
    peers: withWest ? [peer('west', 0), peer('south', 1)] : [peer('south', 1)],
    tls: { mode: 'mtls', caFile: pki.ca, certFile: pki.certs.east.cert, keyFile: pki.certs.east.key },
    trust: { socket: '/nonexistent/trust.sock', repushIntervalMs: 300_000, retryMs: 200 },
  }));
}

function rig() {
  const clock = { t: Date.now() };
  let cfg = eastConfig(true);
  const registry = new Registry();
  const tls = { ca: fs.readFileSync(pki.ca), cert: fs.readFileSync(pki.certs.east.cert), key: fs.readFileSync(pki.certs.east.key) };
  const hub = new TrustHub({ config: () => cfg, tlsFiles: () => tls, log: silent, registry, now: () => clock.t });
  let seq = 0n;
  // the trust container hands the runtime east's own bundle (east publishes only once it has one)
  (hub as unknown as { onLocal(m: unknown): void }).onLocal({ type: 'own', certs: [makeCert('kubevirt.io@east', Date.now() - H, Date.now() + 200 * H).pem], sequence: clock.t });
  return {
    clock, hub,
    setConfig(withWest: boolean) { cfg = eastConfig(withWest); },
    /** West publishes `certs` now; the hub's verdict. */
    publish(certs: TestCert[]) {
      seq += 1n;
      const frame = encodeTrustPublish({ connectionId: crypto.randomBytes(16), cluster: 'west', sequence: BigInt(clock.t) + seq, certs: certs.map((c) => c.der) });
      const r = new FrameReader(65536, [FRAME_TRUST_PUBLISH]).push(frame);
      assert.ok(r.kind === 'frame');
      return hub.onPublish(r.body, 'west');
    },
    /** The trust container reports the local kubevirt-ca's fingerprints. */
    local(fingerprints: string[]) { (hub as unknown as { onLocal(m: unknown): void }).onLocal({ type: 'local', fingerprints }); },
    async untrusted(): Promise<number | undefined> {
      const m = await registry.getSingleMetric('mm_trust_peer_ca_untrusted_seconds')!.get();
      return m.values.find((v) => v.labels.peer === 'west')?.value;
    },
  };
}

describe('mm_trust_peer_ca_untrusted_seconds counts from the table change, not from a scrape', () => {
  const hubs: TrustHub[] = [];
  after(async () => { for (const h of hubs) await h.close(); });
  const west1 = makeCert('kubevirt.io@west-1', Date.now() - H, Date.now() + 200 * H);
  const west2 = makeCert('kubevirt.io@west-2', Date.now() - H, Date.now() + 200 * H);

  it('a bundle received untrusted and first scraped 2 h later reads 2 h; trusted reads 0; a rotation counts from its receipt', async () => {
    const r = rig();
    hubs.push(r.hub);
    assert.equal(r.publish([west1]).status, 0, 'accepted');
    // at the instant of receipt the gauge reads 0 although west is untrusted: 0 alone never says "trusted"
    // (trust-metrics.test.ts therefore waits on the local kubevirt-ca itself)
    assert.equal(await r.untrusted(), 0);
    assert.equal(r.hub.table.toJSON(r.clock.t).peers[0].trustedLocally, false);
    r.clock.t += 2 * H;
    assert.equal(await r.untrusted(), 2 * 3600, 'counted from the receipt, though nobody scraped then');
    r.local([sha(west1)]);
    r.clock.t += 60_000;
    assert.equal(await r.untrusted(), 0, 'trusted');
    assert.equal(r.publish([west2, west1]).status, 0, 'the rotated bundle accepted');
    r.clock.t += 10 * 60_000;
    assert.equal(await r.untrusted(), 600, 'untrusted from the rotated bundle\'s receipt');
    r.local([sha(west1), sha(west2)]);
    assert.equal(await r.untrusted(), 0, 'trusted again once the local kubevirt-ca holds both');
  });

  it('a peer that left the fleet and came back 5 h later counts from its return, not from before it left', async () => {
    const r = rig();
    hubs.push(r.hub);
    assert.equal(r.publish([west1]).status, 0);
    r.clock.t += H;
    r.setConfig(false);
    r.hub.publishAll('config'); // forgets west's bundle (table.retain)
    r.clock.t += 5 * H;
    r.setConfig(true);
    assert.equal(r.publish([west1]).status, 0, 'accepted again');
    r.clock.t += 60_000;
    assert.equal(await r.untrusted(), 60, 'untrusted for the minute since it came back');
  });
});
