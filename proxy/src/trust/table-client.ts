/**
 * The `trust-status` subcommand of migration-mesh-proxy: the runtime's trust table over its admin
 * port, as text. Plain `node:http`, apart from the trust agent (./cli.ts) and its Kubernetes client.
 */
import * as http from 'node:http';
import type { TrustTableView } from './table';

/** GET `<adminUrl>/trust`: the runtime's trust table; rejects on a status other than 200. */
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
