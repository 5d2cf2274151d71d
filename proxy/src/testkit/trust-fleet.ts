/**
 * Test support: N simulated clusters on loopback, each with a fake API server, virt-operator's CA model,
 * a real gateway (mTLS tunnel port, trust exchange on) and a real trust container (client-node against
 * the fake API server), all sharing one simulated clock (real time plus jumps).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { startGateway, type GatewayHandle } from '../gateway';
import type { ProxyConfigInput } from '../config';
import { TrustAgent } from '../trust/agent';
import { kubeConfigMaps } from '../trust/kube';
import { FakeKubeApi } from './fake-kube';
import { freePort, silent, tmpDir, type Pki } from './helpers';
import { VirtOperatorModel } from './virt-operator-model';

export interface SimClock { offset: number; now(): number }
export const simClock = (): SimClock => { const c: SimClock = { offset: 0, now: () => Date.now() + c.offset }; return c; };

export interface SimCluster { name: string; api: FakeKubeApi; model: VirtOperatorModel; gw: GatewayHandle; agents: TrustAgent[]; socket: string }

export function kubeConfigFor(port: number): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'fake', server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'trust', token: 'test' }],
    contexts: [{ name: 'fake', cluster: 'fake', user: 'trust' }],
    currentContext: 'fake',
  });
  return kc;
}

export interface FleetOptions { durationMs: number; renewBeforeMs: number; ageMs: (i: number) => number; repushIntervalMs?: number }

export interface TrustFleet { clusters: SimCluster[]; dir: string; close(): Promise<void> }

export async function startTrustFleet(names: string[], pki: Pki, clock: SimClock, o: FleetOptions): Promise<TrustFleet> {
  const dir = tmpDir('mm-trust-');
  const ports = await Promise.all(names.map(() => freePort()));
  const clusters: SimCluster[] = [];
  const close = async () => {
    for (const c of clusters) { for (const a of c.agents) await a.stop(); await c.gw.close(); await c.api.close(); }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  try {
    for (const [i, name] of names.entries()) {
      const api = new FakeKubeApi('kubevirt');
      await api.listen();
      const model = new VirtOperatorModel(api, name, o.durationMs, o.renewBeforeMs, clock.now);
      model.install(o.ageMs(i));
      const socket = path.join(dir, `${name}.sock`);
      const cfg: ProxyConfigInput = {
        version: 1, fleet: 'fleet', cluster: name,
        listen: { intercept: { host: '127.0.0.1', port: await freePort() }, tunnel: { host: '127.0.0.1', port: ports[i] }, admin: { host: '127.0.0.1', port: await freePort() } },
        localCidrs: ['10.99.0.0/24'],
        peers: names.map((p, j) => ({ cluster: p, cidrs: [`10.${100 + j}.0.0/24`], gateways: [{ host: '127.0.0.1', port: ports[j] }] })).filter((p) => p.cluster !== name),
        tls: { mode: 'mtls', caFile: pki.ca, certFile: pki.certs[name].cert, keyFile: pki.certs[name].key },
        // no `limits`: the product's defaults (10 s handshake, 5 s dial); a loaded machine tripped a 2 s one
        trust: { socket, repushIntervalMs: o.repushIntervalMs ?? 300_000, retryMs: 200 },
      };
      const gw = await startGateway(cfg, { logger: silent, trustClock: clock.now });
      clusters.push({ name, api, model, gw, agents: [], socket });
    }
    for (const c of clusters) c.agents.push(await startAgent(c, clock, names.filter((n) => n !== c.name)));
  } catch (e) { await close(); throw e; }
  return { clusters, dir, close };
}

/** A trust container for `c`; `peers`: the clusters its gateway config names (the re-check's peer table). */
export async function startAgent(c: SimCluster, clock: SimClock, peers: readonly string[]): Promise<TrustAgent> {
  const a = new TrustAgent({
    api: kubeConfigMaps(kubeConfigFor(c.api.port), 'kubevirt'), socket: c.socket, log: silent, resyncMs: 300_000, minRewriteMs: 2000, now: clock.now, peers: () => peers,
  });
  await a.start();
  return a;
}

/** Every cluster's current CA is in every other cluster's kubevirt-ca. */
export function allTrusted(clusters: { model: VirtOperatorModel }[]): boolean {
  return clusters.every((x) => clusters.every((y) => x === y || y.model.trusts(x.model.ca.sha256)));
}
