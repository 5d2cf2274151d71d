/**
 * The trust container re-checks every bundle the runtime hands it before anything reaches
 * kubevirt-external-ca (issue 49 item 3): the runtime faces the network and runs the C record layer, so
 * a runtime that lies (here a stand-in on the local channel) must not be able to make KubeVirt trust a
 * CA. Refused, each with its stable reason (logged, counted, told to the runtime for
 * mm_trust_agent_refusals_total): a cluster that is not a configured peer, a leaf, a CA that is not
 * self-signed, an expired or not-yet-valid CA, more than AGENT_MAX_CERTS_PER_PEER certificates, another
 * peer's CA, this cluster's own CA, and a write that would make the ConfigMap larger than
 * EXTERNAL_CA_MAX_BYTES. The fake API server holds the two ConfigMaps with no virt-operator model, so
 * what the trust container wrote stays to be read.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { makeCert, type TestCert } from '../testkit/ca-certs';
import { FakeKubeApi } from '../testkit/fake-kube';
import { HANG_GUARD_MS, silent, tmpDir, waitUntil } from '../testkit/helpers';
import { kubeConfigFor } from '../testkit/trust-fleet';
import { MANAGED } from '../testkit/virt-operator-model';
import { AGENT_MAX_CERTS_PER_PEER, EXTERNAL_CA_MAX_BYTES, TrustAgent } from '../trust/agent';
import { kubeConfigMaps } from '../trust/kube';

const H = 3600_000;
const ca = (cn: string, o: Parameters<typeof makeCert>[3] = {}) => makeCert(cn, Date.now() - H, Date.now() + 100 * H, o);

interface Rig {
  api: FakeKubeApi; agent: TrustAgent; heard: { type: string; reason?: string }[];
  send(cluster: string, certs: (TestCert | string)[]): void;
  bundle(): string;
  close(): Promise<void>;
}

async function rig(local: TestCert, external: Record<string, string> = { 'ca-bundle': '' }, peers = ['west', 'north']): Promise<Rig> {
  const dir = tmpDir('mm-trust-recheck-');
  const api = new FakeKubeApi('kubevirt');
  await api.listen();
  api.create('kubevirt-ca', { 'ca-bundle': local.pem }, { ...MANAGED });
  api.create('kubevirt-external-ca', external, { ...MANAGED });
  const conns = new Set<net.Socket>();
  const heard: { type: string; reason?: string }[] = [];
  const socket = path.join(dir, 'trust.sock');
  const server = net.createServer((s) => {
    conns.add(s);
    s.on('error', () => s.destroy());
    let buf = '';
    s.on('data', (c) => { buf += c; for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) { heard.push(JSON.parse(buf.slice(0, i))); buf = buf.slice(i + 1); } });
  });
  await new Promise<void>((r) => server.listen(socket, () => r()));
  const agent = new TrustAgent({ api: kubeConfigMaps(kubeConfigFor(api.port), 'kubevirt'), socket, log: silent, resyncMs: 300_000, peers: () => peers });
  await agent.start();
  assert.ok(await waitUntil(() => conns.size === 1, HANG_GUARD_MS) >= 0, 'the trust container connected');
  return {
    api, agent, heard,
    send(cluster, certs) {
      const line = `${JSON.stringify({ type: 'peer', cluster, certs: certs.map((c) => (typeof c === 'string' ? c : c.pem)), sequence: Date.now(), receivedAt: Date.now() })}\n`;
      for (const s of conns) s.write(line);
    },
    bundle: () => api.get('kubevirt-external-ca')?.data?.['ca-bundle'] ?? '',
    async close() {
      await agent.stop();
      for (const s of conns) s.destroy();
      await new Promise<void>((r) => server.close(() => r()));
      await api.close();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

const refusals = (r: Rig) => r.heard.filter((m) => m.type === 'refused').map((m) => m.reason);

describe('the trust container re-checks what the runtime hands it', { timeout: 5 * HANG_GUARD_MS }, () => {
  it('refuses every bundle a lying runtime could send, and writes only the genuine one', async () => {
    const local = ca('kubevirt.io@east');
    const r = await rig(local);
    try {
      const stranger = ca('kubevirt.io@stranger');
      const north = ca('kubevirt.io@north');
      const now = Date.now();
      const bad: [string, (TestCert | string)[], string][] = [
        ['stranger', [stranger], 'unknown_peer'],
        ['east', [ca('kubevirt.io@east2')], 'unknown_peer'], // this cluster itself is no peer
        ['west', [ca('leaf', { ca: false })], 'trust_not_ca'],
        ['west', [ca('kubevirt.io@west-issued', { issuer: 'someone-else' })], 'trust_not_ca'],
        ['west', [makeCert('old', now - 10 * H, now - H)], 'trust_not_valid'],
        ['west', [makeCert('future', now + H, now + 10 * H)], 'trust_not_valid'],
        ['west', Array.from({ length: AGENT_MAX_CERTS_PER_PEER + 1 }, (_, i) => ca(`many-${i}`)), 'trust_count'],
        ['west', [], 'trust_count'],
        ['west', ['-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n'], 'trust_not_valid'],
        ['west', [local], 'trust_not_self'],
      ];
      for (const [cluster, certs] of bad) r.send(cluster, certs);
      assert.ok(await waitUntil(() => refusals(r).length >= bad.length, HANG_GUARD_MS) >= 0, `refusals heard: ${refusals(r).join(',')}`);
      assert.deepEqual(refusals(r), bad.map((b) => b[2]));
      // north publishes its CA; west relaying it is refused; west's own is written
      r.send('north', [north]);
      assert.ok(await waitUntil(() => r.bundle().includes(north.pem.split('\n')[1]), HANG_GUARD_MS) >= 0, 'north written');
      r.send('west', [north]);
      const west = ca('kubevirt.io@west');
      r.send('west', [west]);
      assert.ok(await waitUntil(() => r.bundle().includes(west.pem.split('\n')[1]), HANG_GUARD_MS) >= 0, 'west written');
      assert.equal(refusals(r).at(-1), 'trust_not_self');
      const written = r.bundle();
      for (const [, certs] of bad) for (const c of certs) if (typeof c !== 'string') assert.equal(written.includes(c.pem.split('\n')[1]), false, `${c.cn} never written`);
      assert.equal(r.agent.refusals.get('unknown_peer'), 2);
      assert.equal(r.agent.refusals.get('trust_not_self'), 2);
    } finally { await r.close(); }
  });

  it('a peer that leaves the gateway config is no longer written', async () => {
    const peers = ['west'];
    const r = await rig(ca('kubevirt.io@east'), { 'ca-bundle': '' }, peers);
    try {
      peers.length = 0; // the ConfigMap reloaded without west
      const west = ca('kubevirt.io@west');
      r.send('west', [west]);
      assert.ok(await waitUntil(() => refusals(r).includes('unknown_peer'), HANG_GUARD_MS) >= 0);
      assert.equal(r.bundle(), '');
      assert.equal(r.agent.stats.writes, 0);
    } finally { await r.close(); }
  });

  it('does not write kubevirt-external-ca past EXTERNAL_CA_MAX_BYTES', async () => {
    const big = 'x'.repeat(EXTERNAL_CA_MAX_BYTES);
    const r = await rig(ca('kubevirt.io@east'), { 'ca-bundle': '', 'someone-elses-key': big });
    try {
      r.send('west', [ca('kubevirt.io@west')]);
      assert.ok(await waitUntil(() => refusals(r).includes('configmap_too_large'), HANG_GUARD_MS) >= 0, `heard ${JSON.stringify(r.heard.map((m) => m.type))}`);
      assert.equal(r.bundle(), '');
      assert.equal(r.agent.stats.writes, 0);
      assert.ok(r.heard.some((m) => m.type === 'write-failed'), 'the runtime counts a failed write');
    } finally { await r.close(); }
  });
});
