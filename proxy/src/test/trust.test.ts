/**
 * Cross-cluster trust: three simulated clusters (fake API server + virt-operator's CA model each), real
 * gateways over mTLS on loopback, real trust containers (client-node). CAs rotate many times in
 * simulated time; we measure how much of the time every cluster's current CA is in every peer's
 * kubevirt-ca, against the baseline (upstream defaults, one-shot copy); then the refusals, and the
 * API contract (409 between two replicas, 410 on an expired watch, an API server restart).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeKubeApi } from '../testkit/fake-kube';
import { HANG_GUARD_MS, makePki, sleep, type Pki } from '../testkit/helpers';
import { allTrusted, simClock, startTrustFleet } from '../testkit/trust-fleet';
import { VirtOperatorModel } from '../testkit/virt-operator-model';

const H = 3600_000;
const NAMES = ['east', 'north', 'west'];
/** Our emitted defaults (src/trust/plan.ts) and KubeVirt's upstream defaults. */
const OURS = { durationMs: 168 * H, renewBeforeMs: 96 * H };
const UPSTREAM = { durationMs: 168 * H, renewBeforeMs: 33.6 * H };
/** Initial CA ages, so the clusters rotate at different moments. */
const AGES = [0, 3.3 * H, 7.9 * H];
const DAYS = 30;
const STEP = H;

async function until(fn: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) return false;
    await sleep(10);
  }
  return true;
}

/** Baseline without gateways: the model only, a one-shot copy of every peer's kubevirt-ca at t=0. */
function baseline(rot: { durationMs: number; renewBeforeMs: number }): number {
  const clock = simClock();
  const t0 = Date.now();
  clock.now = () => t0 + clock.offset;
  const cs = NAMES.map((n, i) => { const api = new FakeKubeApi('kubevirt'); const m = new VirtOperatorModel(api, n, rot.durationMs, rot.renewBeforeMs, clock.now); m.install(AGES[i]); return { api, model: m }; });
  for (const c of cs) {
    const peers = cs.filter((x) => x !== c).map((x) => x.api.get('kubevirt-ca')!.data['ca-bundle']).join('');
    c.api.put('kubevirt-external-ca', { 'ca-bundle': peers });
    c.model.reconcileTwice();
  }
  let ok = 0;
  const steps = (DAYS * 24 * H) / STEP;
  for (let s = 0; s < steps; s++) {
    clock.offset += STEP;
    for (const c of cs) c.model.reconcile();
    if (allTrusted(cs)) ok++;
  }
  return ok / steps;
}

describe('trust exchange across three clusters (simulated weeks, real gateways)', { timeout: 600_000 }, () => {
  let pki: Pki;
  let fleet: Awaited<ReturnType<typeof startTrustFleet>>;
  const clock = simClock();
  before(async () => {
    pki = makePki('fleet', NAMES);
    fleet = await startTrustFleet(NAMES, pki, clock, { ...OURS, ageMs: (i) => AGES[i] });
  });
  after(async () => { await fleet?.close(); });

  it('every current CA is trusted by every peer >= 99.9% of the time; each rotation is trusted everywhere within 10 s', async () => {
    const cs = fleet.clusters;
    // the first exchange is work (every gateway's TLS publications, every trust container's writes): a hang guard
    assert.ok(await until(() => allTrusted(cs), HANG_GUARD_MS), 'initial exchange did not converge');
    const latencies: number[] = [];
    let untrusted = 0;
    const total = DAYS * 24 * H;
    for (let t = 0; t < total; t += STEP) {
      clock.offset += STEP;
      const before = cs.map((c) => c.model.rotations);
      for (const c of cs) c.model.reconcile();
      const rotated = cs.some((c, i) => c.model.rotations !== before[i]);
      const start = Date.now();
      const ok = await until(() => allTrusted(cs), rotated ? 15_000 : 2000);
      if (rotated && ok) latencies.push(Date.now() - start);
      untrusted += ok ? (rotated ? Date.now() - start : 0) : STEP;
    }
    const fraction = 1 - untrusted / total;
    const rotations = cs.reduce((n, c) => n + c.model.rotations, 0);
    const base = baseline(UPSTREAM);
    const baseOurs = baseline(OURS);
    latencies.sort((a, b) => a - b);
    const p = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
    console.log(`[trust] ${DAYS} simulated days, ${NAMES.length} clusters, ${rotations} CA rotations\n` +
      `[trust] every current CA trusted by every peer: ${(fraction * 100).toFixed(4)}% with the gateways' exchange and our settings (CA 168h/96h)\n` +
      `[trust] baseline, upstream defaults (168h/33.6h) + one-shot copy: ${(base * 100).toFixed(1)}%; our settings + one-shot copy: ${(baseOurs * 100).toFixed(1)}%\n` +
      `[trust] rotation -> trusted at every peer: median ${p(0.5)} ms, p95 ${p(0.95)} ms, max ${latencies[latencies.length - 1]} ms (real time)`);
    assert.ok(rotations >= 20, `only ${rotations} rotations`);
    assert.equal(latencies.length, rotations, 'a rotation was not trusted everywhere within 15 s');
    assert.ok(fraction >= 0.999, `trusted ${fraction}`);
    assert.ok(latencies[latencies.length - 1] <= 10_000);
    assert.ok(base < 0.5, `baseline ${base}`);
  });

  it('the /trust table shows each peer, its fingerprints and NotAfter, and the last write', async () => {
    const c = fleet.clusters[0];
    const t = c.gw.trust.table.toJSON(clock.now());
    assert.deepEqual(t.peers.map((p) => p.cluster), ['north', 'west']);
    for (const p of t.peers) {
      assert.equal(p.certs.length, 1);
      assert.match(p.certs[0].sha256, /^[0-9a-f]{64}$/);
      assert.equal(p.trustedLocally, true);
      const peer = fleet.clusters.find((x) => x.name === p.cluster)!;
      assert.equal(p.certs[0].sha256, peer.model.ca.sha256);
      assert.equal(Date.parse(p.certs[0].notAfter), peer.model.ca.na);
    }
    assert.ok(t.lastWrite && t.lastWrite.fingerprints.length >= 1);
  });
});
