/**
 * Trust exchange cost for a 100-cluster fleet, per re-push period: every gateway replica publishes its
 * one-CA bundle to every replica of every peer (PUBLISH + REPLY over a fresh TLS 1.3 connection), and
 * every receiver judges it. Measured: one gateway publishing to N real loopback peers (bytes on the wire
 * via the sockets' counters, CPU of the process), then scaled to the fleet. Run: node lib/bench/trust-bench.js
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { startGateway, type GatewayHandle } from '../gateway';
import { freePort, makePki, silent, sleep, tmpDir } from '../testkit/helpers';
import { makeCert } from '../testkit/ca-certs';
import * as net from 'node:net';

const CLUSTERS = 100;
const REPLICAS = 2;
const PEERS_MEASURED = 20;

async function main(): Promise<void> {
  const names = Array.from({ length: PEERS_MEASURED + 1 }, (_, i) => `c${i}`);
  const pki = makePki('fleet', names);
  const dir = tmpDir('mm-trust-bench-');
  const ports = await Promise.all(names.map(() => freePort()));
  const gws: GatewayHandle[] = [];
  for (const [i, name] of names.entries()) {
    gws.push(await startGateway({
      version: 1, fleet: 'fleet', cluster: name,
      listen: { intercept: { host: '127.0.0.1', port: await freePort() }, tunnel: { host: '127.0.0.1', port: ports[i] }, admin: { host: '127.0.0.1', port: await freePort() } },
      localCidrs: ['10.99.0.0/24'],
      peers: names.map((p, j) => ({ cluster: p, cidrs: [`10.${100 + j}.0.0/24`], gateways: [{ host: '127.0.0.1', port: ports[j] }] })).filter((p) => p.cluster !== name),
      tls: { mode: 'mtls', caFile: pki.ca, certFile: pki.certs[name].cert, keyFile: pki.certs[name].key },
      trust: { socket: path.join(dir, `${name}.sock`), repushIntervalMs: 3_600_000 },
    }, { logger: silent }));
  }
  const ca = makeCert('kubevirt.io@c0', Date.now() - 3600e3, Date.now() + 168 * 3600e3);
  const sock = net.connect(path.join(dir, 'c0.sock'));
  await new Promise((r) => sock.once('connect', r));
  const cpu0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  sock.write(`${JSON.stringify({ type: 'own', certs: [ca.pem], sequence: Date.now() })}\n`);
  const table = () => gws[0].trust.table.toJSON();
  while (Object.values(table().own.lastPublished).filter((v) => v.status === 'accepted').length < PEERS_MEASURED) await sleep(5);
  const ms = Number(process.hrtime.bigint() - t0) / 1e6;
  const cpu = process.cpuUsage(cpu0);
  // frame bytes per publication: PUBLISH (header, id, name, sequence, count, length, DER) + REPLY; the TLS 1.3
  // handshake with client certificates around them is not counted here (both gateway certificates travel)
  const certBytes = fs.statSync(pki.certs.c0.cert).size;
  const wire = (8 + 16 + 1 + 2 + 8 + 1 + 2 + ca.der.length) + (8 + 18);
  const pubsPerPeriod = CLUSTERS * REPLICAS * (CLUSTERS - 1) * REPLICAS;
  const cpuPerPubMs = (cpu.user + cpu.system) / 1000 / PEERS_MEASURED; // both ends are in this process
  console.log(JSON.stringify({
    measuredPeers: PEERS_MEASURED, wallMs: Math.round(ms), cpuMsBothEndsPerPublication: +cpuPerPubMs.toFixed(2),
    frameBytesPerPublication: wire, gatewayCertPemBytes: certBytes, caDerBytes: ca.der.length,
    fleet: { clusters: CLUSTERS, replicas: REPLICAS, publicationsPerPeriod: pubsPerPeriod,
      frameBytesPerPeriod: pubsPerPeriod * wire, cpuSecondsPerPeriodFleetWide: +(pubsPerPeriod * cpuPerPubMs / 1000).toFixed(1),
      cpuSecondsPerPeriodPerReplica: +(2 * (CLUSTERS - 1) * REPLICAS * cpuPerPubMs / 1000).toFixed(2) },
  }, null, 1));
  sock.destroy();
  for (const g of gws) await g.close();
  fs.rmSync(dir, { recursive: true, force: true });
}

main().catch((e) => { console.error(e); process.exit(1); });
