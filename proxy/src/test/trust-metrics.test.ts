/**
 * The metrics the alerts (src/gateway/alerts.ts) read, from real gateways and trust containers against
 * the fake API server: `mm_trust_peer_ca_untrusted_seconds` rises while a peer's rotated CA is missing
 * from the local kubevirt-ca and falls to 0 once virt-operator merges it; `mm_trust_write_failures_total`
 * counts the trust container's failed writes (API server gone); `mm_proxy_address_held` says which
 * planned address a pod holds.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { createMetrics } from '../metrics';
import { HANG_GUARD_MS, makePki, sleep } from '../testkit/helpers';
import { simClock, startTrustFleet } from '../testkit/trust-fleet';

const H = 3600_000;

/**
 * A hang guard, not a latency bound: each wait below is for work (TLS publications, API writes, a
 * virt-operator reconcile) that a loaded machine slows; the suite's timeout is the only other bound.
 */
const GUARD_MS = 60_000;

async function until(fn: () => boolean | Promise<boolean>, ms = GUARD_MS): Promise<boolean> {
  const end = Date.now() + ms;
  while (!(await fn())) {
    if (Date.now() > end) return false;
    await sleep(20);
  }
  return true;
}

describe('trust metrics behind the alerts', { timeout: 5 * HANG_GUARD_MS }, () => {
  const clock = simClock();
  let fleet: Awaited<ReturnType<typeof startTrustFleet>>;
  before(async () => {
    fleet = await startTrustFleet(['east', 'west'], makePki('fleet', ['east', 'west']), clock, { durationMs: 168 * H, renewBeforeMs: 96 * H, ageMs: () => 0, repushIntervalMs: 300_000 });
  });
  after(async () => { await fleet?.close(); });

  const value = async (cluster: string, metric: string, labels: Record<string, string> = {}): Promise<number | undefined> => {
    const c = fleet.clusters.find((x) => x.name === cluster)!;
    const m = await c.gw.registry.getSingleMetric(metric)!.get();
    return m.values.find((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x))?.value;
  };

  it('untrusted seconds: 0 once trusted, growing while a rotated peer CA is missing, 0 again after the merge', async () => {
    const [east, west] = fleet.clusters;
    // the state itself, not the gauge: the gauge also reads 0 at the instant east first sees west's bundle
    // untrusted, and waiting on it once let the test stop east's merging before west's first CA was merged
    // (then counted from there: "20 minutes untrusted, got 264000.163", 73 h 20 min)
    const westInEastCa = () => {
      const w = east.gw.trust.table.bundles().find((b) => b.cluster === 'west');
      const local = new Set(east.gw.trust.table.local);
      return !!w && w.certs.some((c) => c.sha256 === west.model.ca.sha256) && w.certs.every((c) => local.has(c.sha256));
    };
    assert.ok(await until(westInEastCa), "east's kubevirt-ca holds every CA of west's bundle");
    assert.equal(await value('east', 'mm_trust_peer_ca_untrusted_seconds', { peer: 'west' }), 0, 'east trusts west');
    east.api.onUpdate = undefined; // east's virt-operator stops merging kubevirt-external-ca
    clock.offset += 73 * H; // past west's rotation point (168h - 96h)
    west.model.reconcile();
    const rotated = west.model.ca.sha256;
    assert.ok(await until(() => east.gw.trust.table.bundles().some((b) => b.certs.some((c) => c.sha256 === rotated))), 'east received the rotated bundle');
    clock.offset += 20 * 60_000;
    const late = await value('east', 'mm_trust_peer_ca_untrusted_seconds', { peer: 'west' });
    assert.ok(late !== undefined && late >= 20 * 60 && late < 21 * 60, `20 minutes untrusted, got ${late}`);
    assert.equal(await value('west', 'mm_trust_peer_ca_untrusted_seconds', { peer: 'east' }), 0, 'west still trusts east');
    east.api.onUpdate = (n) => { if (n === 'kubevirt-external-ca') east.model.reconcileTwice(); };
    east.model.reconcileTwice();
    assert.ok(await until(async () => (await value('east', 'mm_trust_peer_ca_untrusted_seconds', { peer: 'west' })) === 0), 'trusted again after the merge');
  });

  it('write failures: counted while the API server is gone', async () => {
    const [east, west] = fleet.clusters;
    const before0 = (await value('east', 'mm_trust_write_failures_total')) ?? 0;
    assert.equal(before0, 0, 'no failure so far');
    await east.api.close();
    clock.offset += 97 * H; // west rotates again; east must write the new CA and cannot
    west.model.reconcile();
    assert.ok(await until(async () => ((await value('east', 'mm_trust_write_failures_total')) ?? 0) > 0), 'a failed write is counted');
    assert.equal(await value('west', 'mm_trust_write_failures_total'), 0, 'west wrote nothing in vain');
  });
});

describe('mm_proxy_address_held', () => {
  it('1 for an address on this host, 0 for one that is not', async () => {
    const m = createMetrics(undefined, undefined, false, () => ['127.0.0.1', '192.0.2.77']);
    const v = (await m.registry.getSingleMetric('mm_proxy_address_held')!.get()).values;
    assert.deepEqual(Object.fromEntries(v.map((x) => [x.labels.address, x.value])), { '127.0.0.1': 1, '192.0.2.77': 0 });
  });
});
