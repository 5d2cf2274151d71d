/** The `trust` (trust container) and `trust-status` subcommands of migration-mesh-proxy. */
import * as http from 'node:http';
import * as k8s from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ProxyConfig } from '../config';
import { TrustAgent } from './agent';
import { kubeConfigMaps } from './kube';
import { TrustTableView } from './table';

/**
 * Run the trust container until SIGTERM/SIGINT. In the pod the token comes from the projected volume
 * (in-cluster config). Shutdown is bounded: a write in flight gets `stopTimeoutMs` (2 s), then every
 * call is cut; the process then exits 0, well inside the pod's termination grace period (30 s).
 */
export async function runTrustAgent(cfg: ProxyConfig, namespace: string, log: Logger, kubeconfig?: string): Promise<void> {
  if (!cfg.trust) throw new Error('the gateway config has no trust section: nothing to do');
  const kc = new k8s.KubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig); else kc.loadFromCluster();
  const agent = new TrustAgent({ api: kubeConfigMaps(kc, namespace), socket: cfg.trust.socket, log, resyncMs: cfg.trust.repushIntervalMs });
  await agent.start();
  log.info({ namespace, socket: cfg.trust.socket }, 'trust container running');
  await new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      log.info({ sig }, 'stopping');
      void agent.stop().then(resolve, resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}

export function fetchTrustTable(adminUrl: string): Promise<TrustTableView> {
  return new Promise((resolve, reject) => {
    http.get(`${adminUrl.replace(/\/$/, '')}/trust`, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => {
        if (res.statusCode !== 200) { reject(new Error(`${adminUrl}/trust: HTTP ${res.statusCode} ${body.trim()}`)); return; }
        try { resolve(JSON.parse(body) as TrustTableView); } catch (e) { reject(e); }
      });
    }).on('error', reject);
  });
}

/** The trust table as text: one line per peer. */
export function formatTrustTable(t: TrustTableView): string {
  const short = (s: string) => s.slice(0, 16);
  const lines = [
    `cluster ${t.cluster}: own CA ${t.own.certs.map((c) => `${short(c.sha256)} (notAfter ${c.notAfter})`).join(', ') || '(not known yet)'}`,
    `last write of kubevirt-external-ca: ${t.lastWrite ? `${t.lastWrite.at} (${t.lastWrite.fingerprints.length} certificates)` : 'never'}${t.externalCa && t.externalCa.state !== 'ok' ? ` (kubevirt-external-ca: ${t.externalCa.state} since ${t.externalCa.at})` : ''}`,
    ['PEER', 'LAST RECEIVED', 'CA SHA-256', 'NOT AFTER', 'IN kubevirt-ca', 'WARNING'].join('\t'),
  ];
  for (const p of t.peers) {
    lines.push([p.cluster, p.lastReceived ?? '-', p.certs.map((c) => short(c.sha256)).join(',') || '-', p.certs.map((c) => c.notAfter).join(',') || '-',
      p.trustedLocally ? 'yes' : 'NO', p.warning ?? p.lastRefusal?.reason ?? ''].join('\t'));
  }
  return `${lines.join('\n')}\n`;
}
