/**
 * The runtime's side of the trust exchange. It holds no Kubernetes credentials: it learns the local
 * bundle from its trust container over the local channel, publishes it to every peer gateway (on each
 * change, then every `repushIntervalMs`, retrying failures with backoff), judges PUBLISH frames that
 * arrive on the tunnel port, hands accepted peer bundles to the trust container, and serves the table.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import type { Logger } from 'pino';
import { Counter, Gauge, Registry } from 'prom-client';
import { ProxyConfig } from '../config';
import { CONNECTION_ID_BYTES, RefusalCode, decodeTrustPublishBody, encodeTrustPublish, refusalName, ProtocolError } from '../protocol';
import { AGENT_REFUSALS, ToRuntime, ToTrust, onLines, sendLine } from './channel';
import { PublishContext, publishOnce } from './publisher';
import { TrustTable } from './table';
import { caInfo, derToPem, pemToDer } from './x509';

export interface TrustHubOptions {
  readonly config: () => ProxyConfig;
  readonly tlsFiles: () => { ca: Buffer; cert: Buffer; key: Buffer } | undefined;
  readonly log: Logger;
  readonly registry: Registry;
  /** Clock for certificate validity and the table. @default Date.now */
  readonly now?: () => number;
}

function hubMetrics(registry: Registry) {
  return {
    published: new Counter({
      name: 'mm_trust_publish_total', help: 'PUBLISH frames sent to peer gateways, by peer and reply status.', labelNames: ['peer', 'result'], registers: [registry],
    }),
    received: new Counter({
      name: 'mm_trust_received_total', help: 'PUBLISH frames received, by claimed peer and verdict.', labelNames: ['peer', 'result'], registers: [registry],
    }),
    notAfter: new Gauge({
      name: 'mm_trust_peer_ca_not_after_seconds', help: 'Earliest NotAfter of the CA bundle last accepted from each peer (unix seconds).',
      labelNames: ['peer'], registers: [registry],
    }),
    expiring: new Gauge({
      name: 'mm_trust_peer_ca_expiring', help: '1 when a peer CA expires before the next publication expected from that peer.', labelNames: ['peer'], registers: [registry],
    }),
    externalCa: new Gauge({
      name: 'mm_trust_external_ca_state', help: 'What the trust container last found kubevirt-external-ca to be: 1 for the current state (ok, missing, invisible-to-virt-operator, api-error), 0 for the others.',
      labelNames: ['state'], registers: [registry],
    }),
    lastWrite: new Gauge({
      name: 'mm_trust_last_write_timestamp_seconds', help: 'When the trust container last wrote kubevirt-external-ca (unix seconds).', registers: [registry],
    }),
    agentRefusals: new Counter({
      name: 'mm_trust_agent_refusals_total',
      help: 'Bundles the trust container refused on its own re-check before writing kubevirt-external-ca (a peer not configured, not a self-signed CA valid now, too many certificates, another member\'s CA, the ConfigMap over its size cap), by reason.',
      labelNames: ['reason'], registers: [registry],
    }),
    writeFailures: new Counter({
      name: 'mm_trust_write_failures_total', help: 'Failed attempts of the trust container to write kubevirt-external-ca (API errors, the ConfigMap missing, endless conflicts).',
      registers: [registry],
    }),
  };
}

export class TrustHub {
  readonly table: TrustTable;
  private server?: net.Server;
  private readonly clients = new Set<net.Socket>();
  private readonly metrics: ReturnType<typeof hubMetrics>;
  private repushTimer?: NodeJS.Timeout;
  private readonly retryTimers = new Map<string, NodeJS.Timeout>();
  private readonly warned = new Set<string>();
  private closed = false;

  constructor(private readonly o: TrustHubOptions) {
    this.table = new TrustTable(o.config().cluster, () => o.config().trust?.repushIntervalMs ?? 300_000);
    this.metrics = hubMetrics(o.registry);
    const untrusted = new Gauge({
      name: 'mm_trust_peer_ca_untrusted_seconds',
      help: 'Seconds since the runtime first saw the CA bundle accepted from this peer not wholly in the local kubevirt-ca, without it being wholly there since '
        + '(noted when a bundle is accepted, the trust container reports the local kubevirt-ca, or a peer leaves the fleet; not at scrape time). '
        + '0 while trusted, and at the instant it is first seen untrusted.',
      labelNames: ['peer'], registers: [o.registry],
      collect: () => {
        this.noteUntrusted();
        untrusted.reset();
        const now = this.now();
        for (const b of this.table.bundles()) untrusted.set({ peer: b.cluster }, Math.max(0, (now - (this.untrustedSince.get(b.cluster) ?? now)) / 1000));
      },
    });
  }

  /** Per peer, when its bundle was first seen not wholly in the local kubevirt-ca (cleared once it is, or the peer leaves). */
  private readonly untrustedSince = new Map<string, number>();

  private noteUntrusted(): void {
    const local = new Set(this.table.local);
    const now = this.now();
    const peers = new Set<string>();
    for (const b of this.table.bundles()) {
      peers.add(b.cluster);
      if (b.certs.every((c) => local.has(c.sha256))) this.untrustedSince.delete(b.cluster);
      else if (!this.untrustedSince.has(b.cluster)) this.untrustedSince.set(b.cluster, now);
    }
    for (const p of [...this.untrustedSince.keys()]) if (!peers.has(p)) this.untrustedSince.delete(p);
  }

  private now(): number { return (this.o.now ?? Date.now)(); }
  /** The clock the table is judged by. */
  clock(): number { return this.now(); }

  get enabled(): boolean { return !!this.o.config().trust; }

  async start(): Promise<void> {
    const t = this.o.config().trust;
    if (!t) return;
    try { fs.unlinkSync(t.socket); } catch { /* not there */ }
    this.server = net.createServer((s) => this.onClient(s));
    await new Promise<void>((res, rej) => { this.server!.once('error', rej); this.server!.listen({ path: t.socket }, () => res()); }); // a path, only ever a unix socket
    fs.chmodSync(t.socket, 0o600);
    this.repushTimer = setInterval(() => this.publishAll('periodic'), t.repushIntervalMs);
    this.repushTimer.unref();
    this.o.log.info({ socket: t.socket, repushIntervalMs: t.repushIntervalMs }, 'trust channel listening');
  }

  private onClient(s: net.Socket): void {
    this.clients.add(s);
    s.on('close', () => this.clients.delete(s));
    s.on('error', () => s.destroy());
    for (const b of this.table.bundles()) sendLine(s, this.peerMessage(b.cluster));
    onLines<ToRuntime>(s, (m) => this.onLocal(m));
  }

  private onLocal(m: ToRuntime): void {
    const now = this.now();
    if (m.type === 'own' && Array.isArray(m.certs)) {
      const certs = m.certs.flatMap(pemToDer).map(caInfo);
      const same = certs.map((c) => c.sha256).join() === this.table.own.certs.map((c) => c.sha256).join();
      this.table.own = { certs, sequence: BigInt(Math.max(0, Math.floor(Number(m.sequence) || now))) };
      if (!same) this.publishAll('change');
    } else if (m.type === 'written') {
      this.table.lastWrite = { at: m.at, fingerprints: m.fingerprints };
      this.metrics.lastWrite.set(m.at / 1000);
    } else if (m.type === 'external-ca') {
      this.table.externalCa = { state: m.state, at: m.at };
      for (const st of ['ok', 'missing', 'invisible-to-virt-operator', 'api-error']) this.metrics.externalCa.set({ state: st }, st === m.state ? 1 : 0);
    } else if (m.type === 'local') {
      this.table.local = m.fingerprints;
    } else if (m.type === 'write-failed') {
      this.metrics.writeFailures.inc();
    } else if (m.type === 'refused' && (AGENT_REFUSALS as readonly string[]).includes(m.reason)) {
      this.metrics.agentRefusals.inc({ reason: m.reason });
    }
    this.noteUntrusted();
  }

  private peerMessage(cluster: string): ToTrust {
    const b = this.table.bundles().find((x) => x.cluster === cluster)!;
    return { type: 'peer', cluster, certs: b.certs.map((c) => derToPem(c.der)), sequence: Number(b.sequence), receivedAt: b.receivedAt };
  }

  /**
   * A PUBLISH frame arrived on the tunnel port from a connection whose verified certificate names
   * `certCluster`; undefined: no verified identity (a plaintext tunnel port), refused as
   * TRUST_UNAUTHENTICATED before anything in the body is believed (the claimed cluster is not even a
   * metric label).
   */
  onPublish(body: Buffer, certCluster: string | undefined): { status: number; reason: string; connectionId: Buffer } {
    const cfg = this.o.config();
    let p;
    try { p = decodeTrustPublishBody(body); } catch (e) {
      const code = e instanceof ProtocolError ? e.code : RefusalCode.MALFORMED;
      this.metrics.received.inc({ peer: certCluster ?? 'unauthenticated', result: refusalName(code) });
      return { status: code, reason: (e as Error).message, connectionId: Buffer.alloc(CONNECTION_ID_BYTES) };
    }
    if (!cfg.trust) return { status: RefusalCode.TRUST_DISABLED, reason: 'this gateway does not exchange trust', connectionId: p.connectionId };
    if (certCluster === undefined) {
      this.metrics.received.inc({ peer: 'unauthenticated', result: refusalName(RefusalCode.TRUST_UNAUTHENTICATED) });
      this.o.log.warn({ claimed: p.cluster, reason: refusalName(RefusalCode.TRUST_UNAUTHENTICATED) }, 'trust bundle refused: no verified peer certificate (the trust exchange needs tls mtls)');
      return { status: RefusalCode.TRUST_UNAUTHENTICATED, reason: 'a trust bundle is accepted only over mutual TLS, from a verified peer certificate', connectionId: p.connectionId };
    }
    const v = this.table.judge(p, certCluster, (c) => cfg.peers.some((x) => x.cluster === c), this.now());
    const who = certCluster;
    this.metrics.received.inc({ peer: who, result: v.ok ? 'accepted' : refusalName(v.code) });
    if (!v.ok) {
      this.o.log.warn({ peer: who, claimed: p.cluster, reason: refusalName(v.code), why: v.why }, 'trust bundle refused');
      return { status: v.code, reason: v.why, connectionId: p.connectionId };
    }
    this.metrics.notAfter.set({ peer: who }, Math.min(...v.certs.map((c) => c.notAfter)) / 1000);
    if (v.changed) this.o.log.info({ peer: who, certs: v.certs.map((c) => ({ sha256: c.sha256, notAfter: new Date(c.notAfter).toISOString() })) }, 'trust bundle accepted');
    for (const s of this.clients) sendLine(s, this.peerMessage(who));
    this.noteUntrusted();
    this.checkExpiry();
    return { status: RefusalCode.ACCEPTED, reason: '', connectionId: p.connectionId };
  }

  /** Warn (log once per CA, metric) when a peer CA expires before its next expected publication. */
  checkExpiry(now: number = this.now()): void {
    const exp = this.table.expiring(now);
    for (const p of this.o.config().peers) this.metrics.expiring.set({ peer: p.cluster }, exp.some((e) => e.cluster === p.cluster) ? 1 : 0);
    for (const e of exp) {
      const key = `${e.cluster}/${e.cert.sha256}`;
      if (this.warned.has(key)) continue;
      this.warned.add(key);
      this.o.log.warn({ peer: e.cluster, sha256: e.cert.sha256, notAfter: new Date(e.cert.notAfter).toISOString() }, 'peer CA expires before its next expected publication');
    }
  }

  /** Publish the own bundle to every replica of every peer. */
  publishAll(why: string): void {
    const cfg = this.o.config();
    if (this.closed || !cfg.trust || this.table.own.certs.length === 0) return;
    if (!this.o.tlsFiles()) {
      // every peer refuses a PUBLISH without a verified certificate (TRUST_UNAUTHENTICATED): say so once, send nothing
      if (!this.warned.has('plaintext')) this.o.log.error('the trust exchange needs tls mode mtls or mtls-splice; this gateway is plaintext, so it publishes nothing and refuses every PUBLISH');
      this.warned.add('plaintext');
      return;
    }
    this.table.retain((c) => cfg.peers.some((p) => p.cluster === c));
    this.noteUntrusted(); // a peer that left is forgotten now: if it comes back, it counts from its return
    this.checkExpiry();
    for (const peer of cfg.peers) for (const gw of peer.gateways) this.publishTo(peer.cluster, gw.host, gw.port, why, cfg.trust.retryMs);
  }

  private publishTo(cluster: string, host: string, port: number, why: string, backoffMs: number): void {
    const cfg = this.o.config();
    const key = `${cluster}/${host}:${port}`;
    clearTimeout(this.retryTimers.get(key));
    this.retryTimers.delete(key);
    const ctx: PublishContext = {
      fleet: cfg.fleet, tls: this.o.tlsFiles(), timeoutMs: cfg.limits.handshakeTimeoutMs, headerMaxBytes: cfg.limits.headerMaxBytes,
    };
    const frame = encodeTrustPublish({
      connectionId: crypto.randomBytes(CONNECTION_ID_BYTES), cluster: cfg.cluster,
      sequence: this.table.own.sequence ?? 0n, certs: this.table.own.certs.map((c) => c.der),
    });
    publishOnce(ctx, { cluster, host, port }, frame).then((r) => {
      const status = refusalName(r.status);
      this.table.published.set(key, { at: this.now(), status });
      this.metrics.published.inc({ peer: cluster, result: status });
      if (r.status !== RefusalCode.ACCEPTED) this.o.log.warn({ peer: cluster, gateway: `${host}:${port}`, status, reason: r.reason, why }, 'trust bundle refused by peer');
    }, (e: Error) => {
      this.table.published.set(key, { at: this.now(), status: 'unreachable' });
      this.metrics.published.inc({ peer: cluster, result: 'unreachable' });
      if (this.closed) return;
      const next = Math.min(backoffMs * 2, this.o.config().trust?.repushIntervalMs ?? backoffMs);
      this.o.log.debug({ peer: cluster, gateway: `${host}:${port}`, err: e.message, retryInMs: backoffMs }, 'trust publication failed');
      const t = setTimeout(() => this.publishTo(cluster, host, port, 'retry', next), backoffMs);
      t.unref();
      this.retryTimers.set(key, t);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.repushTimer);
    for (const t of this.retryTimers.values()) clearTimeout(t);
    for (const s of this.clients) s.destroy();
    if (this.server) await new Promise<void>((r) => this.server!.close(() => r()));
  }
}
