/**
 * The trust container (`migration-mesh-proxy trust`): the only process of the gateway pod that holds
 * the service-account token. It watches the local `kubevirt-ca`, tells the runtime (local channel) its
 * own current CA and what the bundle holds, and writes the peers' current CAs into
 * `kubevirt-external-ca` whenever one of them is missing from `kubevirt-ca` (virt-operator merges
 * that ConfigMap into `kubevirt-ca`, then empties it).
 *
 * Writes change only the `ca-bundle` key: GET the whole object, add the missing certificates to what
 * `ca-bundle` already holds (expired ones dropped), PUT the same object back (every label, annotation,
 * ownerReference, other data key and binaryData as read) with the resourceVersion read; re-GET at once
 * on 409. Two replicas therefore only ever add. virt-operator sees the ConfigMap only while it carries
 * `app.kubernetes.io/managed-by: virt-operator` and not `kubevirt.io/install-strategy` (its informer's
 * selector): keeping the labels is what makes a write reach `kubevirt-ca`.
 *
 * Every failure is retried on a timer, not on the next event: a failed write with a doubling backoff
 * (BACKOFF_MS up to MAX_BACKOFF_MS, or the server's Retry-After), a 409 at once (5 times, then backoff),
 * a missing ConfigMap (virt-operator creates it) with the same backoff, a failed LIST/WATCH likewise. A
 * WATCH line that is not JSON relists at once. Every API call has a deadline and the watch a liveness
 * bound (kube.ts). A certificate written but dropped again by virt-operator (rotation settings that do
 * not keep peer CAs) is rewritten with a doubling wait and a warning, not in a loop; one lost because
 * the ConfigMap was deleted and recreated (a new uid) is rewritten without that penalty.
 */
import * as net from 'node:net';
import type { Logger } from 'pino';
import { TRUST_MAX_CERTS, refusalName } from '../protocol';
import { AgentRefusal, ToRuntime, ToTrust, onLines, sendLine } from './channel';
import { ApiError, ConfigMapApi, ConfigMapObject, WatchEnd } from './kube';
import { caInfo, CaInfo, checkBundle, derToPem, pemToDer } from './x509';

export const KUBEVIRT_CA = 'kubevirt-ca';
export const KUBEVIRT_EXTERNAL_CA = 'kubevirt-external-ca';
export const CA_BUNDLE_KEY = 'ca-bundle';
/** virt-operator's ConfigMap informer (kubevirt/kubevirt pkg/controller/virtinformers.go OperatorConfigMap()). */
export const OPERATOR_CONFIGMAP_SELECTOR = '!kubevirt.io/install-strategy, app.kubernetes.io/managed-by=virt-operator';

/** First wait after a failed call, doubled per failure up to MAX_BACKOFF_MS (then 80-100% of it, jittered). */
export const BACKOFF_MS = 200;
export const MAX_BACKOFF_MS = 4000;
/** Longest Retry-After honoured (a larger one is cut to this). */
export const MAX_RETRY_AFTER_MS = 60_000;
/** Most certificates the trust container takes from the runtime for one peer (the wire's own bound, TRUST_MAX_CERTS). */
export const AGENT_MAX_CERTS_PER_PEER = TRUST_MAX_CERTS;
/**
 * Largest `kubevirt-external-ca` the trust container writes (the whole object as JSON, other keys included):
 * half of the 1 MiB an object may have in etcd, room for a fleet of over 100 clusters with 2 CAs each.
 */
export const EXTERNAL_CA_MAX_BYTES = 512 * 1024;

export interface TrustAgentOptions {
  readonly api: ConfigMapApi;
  /**
   * The clusters this cluster's gateway config names as peers, read afresh at every check: a bundle the
   * runtime hands over for any other cluster is refused, and a peer that left is never written.
   */
  readonly peers: () => readonly string[];
  readonly socket: string;
  readonly log: Logger;
  /** Re-list `kubevirt-ca` and re-check this often (a missed watch event costs at most this). */
  readonly resyncMs: number;
  /** Least wait between two writes of one missing certificate (doubles while it keeps being dropped). */
  readonly minRewriteMs?: number;
  /** How long stop() waits for a write in flight before cutting it. [2000] */
  readonly stopTimeoutMs?: number;
  readonly now?: () => number;
}

/** What the trust container knows about `kubevirt-external-ca` (logged, sent to the runtime's /trust and metrics). */
export type ExternalCaState = 'ok' | 'missing' | 'invisible-to-virt-operator' | 'api-error';

const parseBundle = (pem: string | undefined): CaInfo[] => pemToDer(pem ?? '').flatMap((d) => { try { return [caInfo(d)]; } catch { return []; } });

/** Does virt-operator's informer see an object with these labels? */
export function operatorSees(labels: Record<string, string> | undefined): boolean {
  return labels?.['app.kubernetes.io/managed-by'] === 'virt-operator' && !(labels && 'kubevirt.io/install-strategy' in labels);
}

export function backoffMs(failures: number, err?: unknown): number {
  const ra = err instanceof ApiError ? err.retryAfterMs : undefined;
  if (ra !== undefined) return Math.min(Math.max(ra, BACKOFF_MS), MAX_RETRY_AFTER_MS);
  const b = Math.min(BACKOFF_MS * 2 ** Math.max(0, failures - 1), MAX_BACKOFF_MS);
  return Math.round(b * (0.8 + 0.2 * Math.random()));
}

export class TrustAgent {
  private sock?: net.Socket;
  private local: CaInfo[] = [];
  private own?: string;
  private readonly peers = new Map<string, CaInfo[]>();
  private readonly rewrite = new Map<string, { waitMs: number; after: number; writes: number; uid?: string }>();
  private stopWatch?: () => void;
  private resync?: NodeJS.Timeout;
  private stopped = false;
  private writing: Promise<void> = Promise.resolve();
  private writeTimer?: NodeJS.Timeout;
  private writeFailures = 0;
  private watching?: Promise<void>;
  private wake?: () => void;
  private relistNow = false;
  private externalState?: ExternalCaState;
  /** Counters for tests and the status line. */
  readonly stats = { writes: 0, conflicts: 0, relists: 0, gone: 0, writeErrors: 0, listErrors: 0, decodeErrors: 0, stalls: 0, missing: 0 };
  /** Bundles refused by the re-check, by reason (AgentRefusal: stable names). */
  readonly refusals = new Map<AgentRefusal, number>();

  constructor(private readonly o: TrustAgentOptions) {}

  private now(): number { return (this.o.now ?? Date.now)(); }

  async start(): Promise<void> {
    this.connect();
    const first = new Promise<void>((r) => { this.firstList = r; });
    this.watching = this.watchLoop();
    await first;
    this.resync = setInterval(() => { this.relistNow = true; this.stopWatch?.(); this.wake?.(); }, this.o.resyncMs);
    this.resync.unref();
  }

  private firstList?: () => void;

  private connect(): void {
    if (this.stopped) return;
    const s = net.connect(this.o.socket);
    s.on('connect', () => {
      this.sock = s;
      this.announce(true);
      if (this.externalState) this.send({ type: 'external-ca', state: this.externalState, at: this.now() });
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

  /**
   * The runtime faces the network and runs the C record layer: whatever it hands over is checked again
   * before it can reach kubevirt-external-ca (issue 49): a configured peer, 1..AGENT_MAX_CERTS_PER_PEER
   * certificates, each a self-signed CA valid now (x509.ts checkBundle, the runtime's own rule), none
   * another peer's or the local cluster's own. A refused bundle leaves that peer's previous one in place.
   */
  private onPeer(m: ToTrust): void {
    if (m?.type !== 'peer') return;
    const v = this.recheck(m);
    if ('reason' in v) {
      this.refuse(v.reason, v.why, typeof m.cluster === 'string' ? m.cluster : undefined);
      if (v.reason === 'unknown_peer' && typeof m.cluster === 'string') this.peers.delete(m.cluster);
      return;
    }
    this.peers.set(m.cluster, v.certs);
    this.schedule();
  }

  private recheck(m: ToTrust): { certs: CaInfo[] } | { reason: AgentRefusal; why: string } {
    if (typeof m.cluster !== 'string' || !Array.isArray(m.certs) || !m.certs.every((c) => typeof c === 'string')) {
      return { reason: 'malformed', why: 'not a peer bundle (cluster and certs)' };
    }
    if (!this.o.peers().includes(m.cluster)) return { reason: 'unknown_peer', why: `'${m.cluster}' is not a peer in the gateway config` };
    const ders = m.certs.flatMap((c) => pemToDer(c));
    if (ders.length > AGENT_MAX_CERTS_PER_PEER) return { reason: 'trust_count', why: `${ders.length} certificates (at most ${AGENT_MAX_CERTS_PER_PEER} per peer)` };
    const v = checkBundle(ders, this.now());
    if (!v.ok) return { reason: refusalName(v.code) as AgentRefusal, why: v.why };
    const own = this.local[0]?.sha256;
    for (const c of v.certs) {
      if (c.sha256 === own) return { reason: 'trust_not_self', why: `${c.subject} is this cluster's own CA` };
      for (const [other, b] of this.peers) {
        if (other !== m.cluster && b.some((x) => x.sha256 === c.sha256)) return { reason: 'trust_not_self', why: `${c.subject} is the CA of '${other}'` };
      }
    }
    return { certs: v.certs };
  }

  /** Log and count a refusal, and tell the runtime (`mm_trust_agent_refusals_total`: the trust container has no metrics of its own). */
  private refuse(reason: AgentRefusal, why: string, cluster?: string): void {
    this.refusals.set(reason, (this.refusals.get(reason) ?? 0) + 1);
    this.o.log.warn({ peer: cluster, reason, why }, 'trust container refused a bundle from the runtime');
    this.send({ type: 'refused', reason, at: this.now() });
  }

  private onLocal(data: Record<string, string> | undefined): void {
    this.local = parseBundle(data?.[CA_BUNDLE_KEY]);
    this.announce();
    this.schedule();
  }

  /** Sleep `ms`, cut short by stop() or a resync. */
  private pause(ms: number): Promise<void> {
    return new Promise((r) => {
      if (this.stopped) { r(); return; }
      const t = setTimeout(() => { this.wake = undefined; r(); }, ms);
      t.unref();
      this.wake = () => { clearTimeout(t); this.wake = undefined; r(); };
    });
  }

  /** Ask for a LIST and a new WATCH now (also what the periodic resync does). */
  relist(): void { this.relistNow = true; this.stopWatch?.(); this.wake?.(); }

  /**
   * LIST, then WATCH from the list's resourceVersion; re-WATCH from the last resourceVersion seen when
   * the server ends a watch (its timeoutSeconds); relist after a 410, a line that is not JSON, a stalled
   * or failed watch, or a resync. Failures wait backoffMs() (or Retry-After). Ends when stopped.
   */
  private async watchLoop(): Promise<void> {
    let rv: string | undefined;
    let failures = 0;
    while (!this.stopped) {
      if (rv === undefined || this.relistNow) {
        this.relistNow = false;
        this.stats.relists++;
        try {
          const l = await this.o.api.list(KUBEVIRT_CA);
          if (this.stopped) return;
          failures = 0;
          this.onLocal(l.item?.data);
          rv = l.resourceVersion;
        } catch (e) {
          rv = undefined;
          this.stats.listErrors++;
          const wait = backoffMs(++failures, e);
          this.o.log.warn({ err: String(e), retryInMs: wait }, 'listing kubevirt-ca failed; retrying');
          await this.pause(wait);
          continue;
        } finally { this.firstList?.(); this.firstList = undefined; }
      }
      const started = Date.now();
      let last = rv;
      const end = await new Promise<WatchEnd & { relist?: boolean }>((resolve) => {
        let relist = false;
        this.stopWatch = this.o.api.watch(KUBEVIRT_CA, rv!, (e) => {
          if (relist) return;
          if (e.type === 'ERROR') {
            if (e.object.code === 410) this.stats.gone++;
            this.o.log.info({ code: e.object.code, message: e.object.message }, 'watch of kubevirt-ca ended by the server; relisting');
            relist = true;
            this.stopWatch?.();
            return;
          }
          if (e.object.metadata?.resourceVersion) last = e.object.metadata.resourceVersion;
          if (e.type === 'BOOKMARK') return;
          this.onLocal(e.type === 'DELETED' ? undefined : e.object.data);
        }, (end) => resolve({ ...end, relist }));
      });
      this.stopWatch = undefined;
      if (this.stopped) return;
      rv = last;
      if (end.relist || end.reason === 'aborted') { rv = undefined; continue; }
      if (end.reason === 'decode') {
        this.stats.decodeErrors++;
        this.o.log.warn({ err: String(end.err) }, 'a watch event of kubevirt-ca could not be decoded (its change is lost); relisting at once');
        rv = undefined;
        continue;
      }
      if (end.reason === 'closed' && Date.now() - started >= 1000) { failures = 0; continue; }
      // stalled, failed, or closed at once: relist after a backoff
      if (end.reason === 'stalled') this.stats.stalls++;
      rv = undefined;
      const wait = backoffMs(++failures, end.err);
      this.o.log.warn({ reason: end.reason, err: end.err && String(end.err), retryInMs: wait }, 'watch of kubevirt-ca failed; relisting');
      await this.pause(wait);
    }
  }

  /** Peer CAs (valid now, of peers still configured) that the local kubevirt-ca lacks. */
  private missing(): CaInfo[] {
    const have = new Set(this.local.map((c) => c.sha256));
    const now = this.now();
    const configured = new Set(this.o.peers());
    const out = new Map<string, CaInfo>();
    for (const [cluster, b] of this.peers) {
      if (!configured.has(cluster)) continue;
      for (const c of b) {
        if (have.has(c.sha256) || c.notBefore > now || c.notAfter <= now) continue;
        out.set(c.sha256, c);
      }
    }
    return [...out.values()];
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.writeTimer);
    this.writeTimer = undefined;
    this.writing = this.writing.then(() => this.writeMissing()).then((retryAt) => {
      this.writeFailures = 0;
      if (retryAt !== undefined) this.retryIn(Math.max(0, retryAt - this.now()));
    }, (e: unknown) => {
      if (this.stopped) return;
      this.stats.writeErrors++;
      const wait = backoffMs(++this.writeFailures, e);
      this.setExternal('api-error', { err: String(e) });
      this.o.log.warn({ err: String(e), retryInMs: wait }, 'writing kubevirt-external-ca failed; retrying');
      this.writeFailed(String(e));
      this.retryIn(wait);
    });
  }

  private retryIn(ms: number): void {
    if (this.stopped) return;
    clearTimeout(this.writeTimer);
    this.writeTimer = setTimeout(() => this.schedule(), ms);
    this.writeTimer.unref();
  }

  /** Tell the runtime (`mm_trust_write_failures_total`): the trust container has no metrics of its own. */
  private writeFailed(reason: string): void {
    this.send({ type: 'write-failed', at: this.now(), reason });
  }

  private setExternal(state: ExternalCaState, detail: Record<string, unknown> = {}): void {
    if (state === this.externalState) return;
    this.externalState = state;
    if (state === 'missing') {
      this.o.log.warn(detail, 'kubevirt-external-ca does not exist: virt-operator creates it at its next reconcile (labels app.kubernetes.io/managed-by=virt-operator and its other operator labels, data ca-bundle: ""); not creating it bare (without those labels virt-operator would never read it); retrying');
    } else if (state === 'invisible-to-virt-operator') {
      this.o.log.warn(detail, `kubevirt-external-ca lacks the labels virt-operator's informer selects (${OPERATOR_CONFIGMAP_SELECTOR}): virt-operator cannot read it, so nothing written there reaches kubevirt-ca. Restore its labels (deleting it lets virt-operator recreate it)`);
    } else if (state === 'ok') {
      this.o.log.info('kubevirt-external-ca is readable and visible to virt-operator');
    }
    this.send({ type: 'external-ca', state, at: this.now() });
  }

  /**
   * One pass: returns when to look again (a deferred rewrite or a missing ConfigMap), or undefined;
   * throws on an API failure (the caller retries with backoff).
   */
  private async writeMissing(): Promise<number | undefined> {
    const all = this.missing();
    if (all.length === 0 || this.stopped) return undefined;
    for (let attempt = 0; attempt < 5; attempt++) {
      const cur = await this.o.api.get(KUBEVIRT_EXTERNAL_CA);
      if (this.stopped) return undefined;
      const now = this.now();
      if (!cur) {
        this.stats.missing++;
        this.setExternal('missing');
        this.writeFailed('kubevirt-external-ca does not exist');
        return now + backoffMs(Math.min(this.stats.missing, 6));
      }
      this.setExternal(operatorSees(cur.metadata.labels) ? 'ok' : 'invisible-to-virt-operator', { labels: cur.metadata.labels ?? {} });
      // a certificate written before into this same object and dropped again waits; a new object (uid) does not
      const uid = cur.metadata.uid;
      const wait = all.filter((c) => { const r = this.rewrite.get(c.sha256); return r && now < r.after && r.uid === uid; });
      const nextCheck = wait.length ? Math.min(...wait.map((c) => this.rewrite.get(c.sha256)!.after)) : undefined;
      const miss = await this.stillMissing(all.filter((c) => !wait.includes(c)));
      if (this.stopped) return undefined;
      if (miss.length === 0) return nextCheck;
      const had = parseBundle(cur.data?.[CA_BUNDLE_KEY]);
      const keep = had.filter((c) => c.notAfter > now);
      const next = [...keep, ...miss.filter((m) => !keep.some((k) => k.sha256 === m.sha256))];
      if (next.length === keep.length && keep.length === had.length) return nextCheck;
      const body: ConfigMapObject = { ...cur, data: { ...(cur.data ?? {}), [CA_BUNDLE_KEY]: next.map((c) => derToPem(c.der)).join('') } };
      const size = Buffer.byteLength(JSON.stringify(body));
      if (size > EXTERNAL_CA_MAX_BYTES) {
        this.refuse('configmap_too_large', `kubevirt-external-ca would be ${size} bytes (at most ${EXTERNAL_CA_MAX_BYTES}); not written`);
        this.writeFailed(`kubevirt-external-ca would exceed ${EXTERNAL_CA_MAX_BYTES} bytes`);
        return nextCheck;
      }
      const r = await this.o.api.replace(body);
      if (r === 'conflict') { this.stats.conflicts++; continue; }
      if (r === 'gone') { this.stats.missing++; continue; }
      this.stats.writes++;
      this.noteWritten(miss, next, uid);
      return Math.min(nextCheck ?? Infinity, ...miss.map((c) => this.rewrite.get(c.sha256)!.after));
    }
    throw new Error('kubevirt-external-ca kept changing under us (5 conflicts in a row)');
  }

  /**
   * The watch's view of kubevirt-ca can lag behind virt-operator, which merges kubevirt-external-ca into
   * kubevirt-ca and then empties it in one reconcile: a pass that reads the emptied ConfigMap before the
   * watch brings the merged kubevirt-ca would write the CA again. So a write is decided on a fresh read.
   */
  private async stillMissing(miss: CaInfo[]): Promise<CaInfo[]> {
    if (miss.length === 0) return miss;
    const have = new Set(parseBundle((await this.o.api.get(KUBEVIRT_CA))?.data?.[CA_BUNDLE_KEY]).map((c) => c.sha256));
    return miss.filter((c) => !have.has(c.sha256));
  }

  /** Resolves when the write passes queued so far have ended (tests await it instead of sleeping). */
  idle(): Promise<void> { return this.writing; }

  private noteWritten(miss: CaInfo[], next: CaInfo[], uid: string | undefined): void {
    const now = this.now();
    const min = this.o.minRewriteMs ?? 5000;
    for (const c of miss) {
      const r = this.rewrite.get(c.sha256);
      const again = r && r.uid === uid;
      const writes = again ? r.writes + 1 : 1;
      const waitMs = again ? Math.min(r.waitMs * 2, this.o.resyncMs) : min;
      this.rewrite.set(c.sha256, { waitMs, after: now + waitMs, writes, uid });
      if (writes > 2) this.o.log.warn({ sha256: c.sha256, subject: c.subject, writes }, 'peer CA written again: virt-operator keeps dropping it (is ca.renewBefore at least half of ca.duration on this cluster?)');
    }
    this.send({ type: 'written', at: now, fingerprints: next.map((c) => c.sha256) });
  }

  /** Stop: cut the watch and any call in flight after at most `stopTimeoutMs`; never hangs on the API. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.resync);
    clearTimeout(this.writeTimer);
    this.stopWatch?.();
    this.wake?.();
    this.sock?.destroy();
    let t: NodeJS.Timeout | undefined;
    const bound = new Promise<'late'>((r) => { t = setTimeout(() => r('late'), this.o.stopTimeoutMs ?? 2000); t.unref(); });
    const late = await Promise.race([Promise.all([this.writing, this.watching]).then(() => 'done' as const), bound]);
    if (late === 'late') {
      this.o.api.abortAll();
      await Promise.race([Promise.all([this.writing, this.watching]), new Promise((r) => setTimeout(r, 500).unref())]);
    }
    clearTimeout(t);
  }
}
