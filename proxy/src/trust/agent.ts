/**
 * The trust container (`migration-mesh-proxy trust`): the only process of the gateway pod that holds
 * the service-account token. It watches the local `kubevirt-ca`, tells the runtime (local channel) its
 * own current CA and what the bundle holds, and writes the peers' current CAs into
 * `kubevirt-external-ca` whenever one of them is missing from `kubevirt-ca` (virt-operator merges
 * that ConfigMap into `kubevirt-ca`, then empties it).
 *
 * Writes are idempotent and never fight: GET, add the missing certificates to what the ConfigMap
 * already holds (expired ones dropped), PUT with the resourceVersion read, re-read on 409. Two replicas
 * therefore only ever add. A certificate written but dropped again (rotation settings that do not keep
 * peer CAs) is retried with a doubling wait and a warning, not in a loop against virt-operator.
 */
import * as net from 'node:net';
import type { Logger } from 'pino';
import { ToRuntime, ToTrust, onLines, sendLine } from './channel';
import { ConfigMapApi, WatchEvent } from './kube';
import { caInfo, CaInfo, derToPem, pemToDer } from './x509';

export const KUBEVIRT_CA = 'kubevirt-ca';
export const KUBEVIRT_EXTERNAL_CA = 'kubevirt-external-ca';
export const CA_BUNDLE_KEY = 'ca-bundle';

export interface TrustAgentOptions {
  readonly api: ConfigMapApi;
  readonly socket: string;
  readonly log: Logger;
  /** Re-list `kubevirt-ca` and re-check this often (a missed watch event costs at most this). */
  readonly resyncMs: number;
  /** Least wait between two writes of one missing certificate (doubles while it keeps being dropped). */
  readonly minRewriteMs?: number;
  readonly now?: () => number;
}

const parseBundle = (pem: string | undefined): CaInfo[] => pemToDer(pem ?? '').flatMap((d) => { try { return [caInfo(d)]; } catch { return []; } });

export class TrustAgent {
  private sock?: net.Socket;
  private local: CaInfo[] = [];
  private own?: string;
  private readonly peers = new Map<string, CaInfo[]>();
  private readonly rewrite = new Map<string, { waitMs: number; after: number; writes: number }>();
  private stopWatch?: () => void;
  private resync?: NodeJS.Timeout;
  private stopped = false;
  private writing: Promise<void> = Promise.resolve();
  /** Counters for tests and the status line. */
  readonly stats = { writes: 0, conflicts: 0, relists: 0, gone: 0 };

  constructor(private readonly o: TrustAgentOptions) {}

  private now(): number { return (this.o.now ?? Date.now)(); }

  async start(): Promise<void> {
    this.connect();
    await this.relist();
    this.resync = setInterval(() => { void this.relist(); }, this.o.resyncMs);
    this.resync.unref();
  }

  private connect(): void {
    if (this.stopped) return;
    const s = net.connect(this.o.socket);
    s.on('connect', () => {
      this.sock = s;
      this.announce(true);
    });
    onLines<ToTrust>(s, (m) => this.onPeer(m));
    s.on('error', () => s.destroy());
    s.on('close', () => {
      if (this.sock === s) this.sock = undefined;
      if (!this.stopped) setTimeout(() => this.connect(), 500).unref();
    });
  }

  private send(m: ToRuntime): void { if (this.sock) sendLine(this.sock, m); }

  /** Tell the runtime the own current CA (first certificate of kubevirt-ca) and the local fingerprints. */
  private announce(force = false): void {
    const first = this.local[0];
    const mine = first && ![...this.peers.values()].some((b) => b.some((c) => c.sha256 === first.sha256)) ? first : undefined;
    if (mine && (force || mine.sha256 !== this.own)) {
      this.own = mine.sha256;
      this.send({ type: 'own', certs: [derToPem(mine.der)], sequence: this.now() });
    }
    this.send({ type: 'local', fingerprints: this.local.map((c) => c.sha256), at: this.now() });
  }

  private onPeer(m: ToTrust): void {
    if (m.type !== 'peer') return;
    this.peers.set(m.cluster, parseBundle(m.certs.join('')));
    this.schedule();
  }

  private onLocal(data: Record<string, string> | undefined): void {
    this.local = parseBundle(data?.[CA_BUNDLE_KEY]);
    this.announce();
    this.schedule();
  }

  /** LIST, then WATCH from the list's resourceVersion; a 410 or a closed stream relists. */
  async relist(): Promise<void> {
    if (this.stopped) return;
    this.stats.relists++;
    this.stopWatch?.();
    this.stopWatch = undefined;
    let rv: string;
    try {
      const l = await this.o.api.list(KUBEVIRT_CA);
      this.onLocal(l.item?.data);
      rv = l.resourceVersion;
    } catch (e) {
      this.o.log.warn({ err: String(e) }, 'listing kubevirt-ca failed; retrying');
      setTimeout(() => { void this.relist(); }, 1000).unref();
      return;
    }
    try {
      this.stopWatch = await this.o.api.watch(KUBEVIRT_CA, rv, (e) => this.onWatch(e), () => {
        if (!this.stopped) setTimeout(() => { void this.relist(); }, 200).unref();
      });
    } catch (e) {
      this.o.log.warn({ err: String(e) }, 'watching kubevirt-ca failed; relisting');
      setTimeout(() => { void this.relist(); }, 1000).unref();
    }
  }

  private onWatch(e: WatchEvent): void {
    if (e.type === 'ERROR') {
      if (e.object.code === 410) this.stats.gone++;
      this.o.log.info({ code: e.object.code, message: e.object.message }, 'watch of kubevirt-ca ended; relisting');
      void this.relist();
      return;
    }
    if (e.type === 'BOOKMARK') return;
    this.onLocal(e.type === 'DELETED' ? undefined : e.object.data);
  }

  /** Peer CAs (valid now) that the local kubevirt-ca lacks and whose rewrite wait has passed. */
  private missing(): CaInfo[] {
    const have = new Set(this.local.map((c) => c.sha256));
    const now = this.now();
    const out = new Map<string, CaInfo>();
    for (const b of this.peers.values()) {
      for (const c of b) {
        if (have.has(c.sha256) || c.notBefore > now || c.notAfter <= now) continue;
        const r = this.rewrite.get(c.sha256);
        if (r && now < r.after) continue;
        out.set(c.sha256, c);
      }
    }
    return [...out.values()];
  }

  private schedule(): void {
    this.writing = this.writing.then(() => this.writeMissing()).catch((e) => {
      this.o.log.warn({ err: String(e) }, 'writing kubevirt-external-ca failed; will retry');
      this.writeFailed(String(e));
    });
  }

  private async writeMissing(): Promise<void> {
    const miss = this.missing();
    if (miss.length === 0 || this.stopped) return;
    for (let attempt = 0; attempt < 5; attempt++) {
      const cur = await this.o.api.get(KUBEVIRT_EXTERNAL_CA);
      if (!cur) { this.o.log.warn('kubevirt-external-ca does not exist (virt-operator creates it); waiting'); this.writeFailed('kubevirt-external-ca does not exist'); return; }
      const now = this.now();
      const keep = parseBundle(cur.data[CA_BUNDLE_KEY]).filter((c) => c.notAfter > now);
      const next = [...keep, ...miss.filter((m) => !keep.some((k) => k.sha256 === m.sha256))];
      if (next.length === keep.length && keep.length === parseBundle(cur.data[CA_BUNDLE_KEY]).length) return;
      const r = await this.o.api.replace(KUBEVIRT_EXTERNAL_CA, { ...cur.data, [CA_BUNDLE_KEY]: next.map((c) => derToPem(c.der)).join('') }, cur.resourceVersion);
      if (r === 'conflict') { this.stats.conflicts++; continue; }
      this.stats.writes++;
      this.noteWritten(miss, next);
      return;
    }
    this.o.log.warn('kubevirt-external-ca kept changing under us (5 conflicts); will retry');
    this.writeFailed('5 conflicts in a row');
  }

  /** Tell the runtime (`mm_trust_write_failures_total`): the trust container has no metrics of its own. */
  private writeFailed(reason: string): void {
    this.send({ type: 'write-failed', at: this.now(), reason });
  }

  private noteWritten(miss: CaInfo[], next: CaInfo[]): void {
    const now = this.now();
    const min = this.o.minRewriteMs ?? 5000;
    for (const c of miss) {
      const r = this.rewrite.get(c.sha256);
      const writes = (r?.writes ?? 0) + 1;
      const waitMs = r ? Math.min(r.waitMs * 2, this.o.resyncMs) : min;
      this.rewrite.set(c.sha256, { waitMs, after: now + waitMs, writes });
      if (writes > 2) this.o.log.warn({ sha256: c.sha256, subject: c.subject, writes }, 'peer CA written again: virt-operator keeps dropping it (is ca.renewBefore at least half of ca.duration on this cluster?)');
    }
    this.send({ type: 'written', at: now, fingerprints: next.map((c) => c.sha256) });
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.resync);
    this.stopWatch?.();
    this.sock?.destroy();
    await this.writing;
  }
}
