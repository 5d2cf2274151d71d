/**
 * The admin `/probe` (issue 51): on demand, for every configured peer, open a real tunnel connection to each of
 * its gateways, all at once, through the origin's own code (tunnel-handshake.ts: TCP connect, in mTLS the native
 * TLS 1.3 handshake with this gateway's certificate and the exact identity check of the peer), send a PROBE frame
 * instead of OPEN, and read the peer's REPLY (PROTOCOL.md section 9). A probe that passes has passed everything a
 * tunnel's setup passes except the destination: the peer dials nothing and keeps nothing.
 *
 * Bounded so that the admin port cannot make the gateway flood a peer: each gateway's probe ends within
 * PROBE_TIMEOUT_MS; a peer's result is reused for PROBE_CACHE_MS after it completed; and at most one probe per
 * peer is in flight (a request that arrives meanwhile waits for it). Probes made are counted in
 * `mm_proxy_probes_total{peer,result}`; answers from the cache are not probes.
 */
import * as crypto from 'node:crypto';
import type { PeerConfig } from './config';
import type { GatewayContext } from './context';
import { armLiveness } from './handshake-admission';
import { CONNECTION_ID_BYTES, encodeProbe, refusalName } from './protocol';
import { dial, secondsSince } from './sockets';
import { type Refusal, handshakeNative, handshakePlain } from './tunnel-handshake';

/** Longest one gateway's probe may take: connect, handshake, PROBE, REPLY. */
export const PROBE_TIMEOUT_MS = 3000;
/** How long a peer's probe result is answered from the cache after it completed. */
export const PROBE_CACHE_MS = 5000;

/** One gateway of the peer, as probed. */
export interface GatewayProbe {
  /** `host:port` from the peer table. */
  readonly gateway: string;
  readonly ok: boolean;
  /** Time to the REPLY (or to the failure), milliseconds. */
  readonly ms: number;
  /** Why it failed: the connect error, the TLS or identity failure, the peer's refusal, or the timeout. */
  readonly error?: string;
}

/** One peer: `ok` when at least one of its gateways answered (the origin tries the next gateway on failure). */
export interface PeerProbe {
  readonly peer: string;
  readonly ok: boolean;
  /** The slowest of its gateways' probes (they run in parallel), milliseconds. */
  readonly ms: number;
  /** When !ok: each gateway's error, `host:port: error`, joined by `; `. */
  readonly error?: string;
  /** ISO time the probe completed. */
  readonly at: string;
  /** Answered from the cache (a probe completed less than PROBE_CACHE_MS ago). */
  readonly cached: boolean;
  readonly gateways: readonly GatewayProbe[];
}

export interface ProbeReport {
  readonly cluster: string;
  readonly timeoutMs: number;
  readonly cacheMs: number;
  readonly peers: readonly PeerProbe[];
}

/** The metric's `result` of one gateway's failed probe. */
function failureResult(e: Refusal, timedOut: boolean): string {
  if (timedOut) return 'timeout';
  if (e.refusal !== undefined) return refusalName(e.refusal);
  return e.tlsFailure ? 'tls_handshake' : 'unreachable';
}

export class PeerProber {
  private readonly cache = new Map<string, { done: number; result: Omit<PeerProbe, 'cached'> }>();
  private readonly inflight = new Map<string, Promise<Omit<PeerProbe, 'cached'>>>();

  constructor(
    private readonly ctx: GatewayContext,
    private readonly timeoutMs = PROBE_TIMEOUT_MS,
    private readonly cacheMs = PROBE_CACHE_MS,
    private readonly now: () => number = Date.now,
  ) {}

  /** Every configured peer, probed or from the cache. */
  async report(): Promise<ProbeReport> {
    const { cfg } = this.ctx;
    for (const k of [...this.cache.keys()]) if (!cfg.peers.some((p) => p.cluster === k)) this.cache.delete(k);
    const peers = await Promise.all(cfg.peers.map((p) => this.peer(p)));
    return { cluster: cfg.cluster, timeoutMs: this.timeoutMs, cacheMs: this.cacheMs, peers };
  }

  private async peer(p: PeerConfig): Promise<PeerProbe> {
    const hit = this.cache.get(p.cluster);
    if (hit && this.now() - hit.done < this.cacheMs) return { ...hit.result, cached: true };
    let run = this.inflight.get(p.cluster);
    if (!run) {
      run = this.probePeer(p).finally(() => this.inflight.delete(p.cluster));
      this.inflight.set(p.cluster, run);
    }
    return { ...await run, cached: false };
  }

  private async probePeer(p: PeerConfig): Promise<Omit<PeerProbe, 'cached'>> {
    const gateways = await Promise.all(p.gateways.map((gw) => this.probeGateway(p, gw)));
    const ok = gateways.some((g) => g.ok);
    const done = this.now();
    const result = {
      peer: p.cluster, ok, ms: Math.max(...gateways.map((g) => g.ms)),
      ...(ok ? {} : { error: gateways.map((g) => `${g.gateway}: ${g.error}`).join('; ') }),
      at: new Date(done).toISOString(), gateways,
    };
    this.cache.set(p.cluster, { done, result });
    return result;
  }

  /** One gateway: connect, handshake and identity, PROBE, REPLY, within `timeoutMs`; never throws. */
  private async probeGateway(p: PeerConfig, gw: { host: string; port: number }): Promise<GatewayProbe> {
    const { ctx } = this;
    const { cfg } = ctx;
    const gateway = `${gw.host}:${gw.port}`;
    const t0 = process.hrtime.bigint();
    const ms = () => Math.round(secondsSince(t0) * 1000);
    const ac = new AbortController();
    const timer = setTimeout(() => ac.abort(`no answer within ${this.timeoutMs} ms`), this.timeoutMs);
    timer.unref();
    try {
      const raw = await dial(gw.host, gw.port, Math.min(cfg.limits.dialTimeoutMs, this.timeoutMs), undefined, !!ctx.nativeTls);
      if (ac.signal.aborted) { raw.destroy(); throw new Error(String(ac.signal.reason)); }
      armLiveness(ctx.native, raw, cfg.limits);
      const connectionId = crypto.randomBytes(CONNECTION_ID_BYTES);
      const first = encodeProbe({ connectionId, sourceCluster: cfg.cluster });
      const o = ctx.nativeTls
        ? await handshakeNative(ctx, raw, p, first, connectionId, false, ac.signal)
        : await handshakePlain(ctx, raw, first, connectionId, false, ac.signal);
      // answered: end the session (close_notify and FIN in mTLS); nothing follows a PROBE
      if (o.tls) ctx.nativeTls!.continue(o.tls.h, null, -1, 0); else o.raw.destroy();
      ctx.metrics.probes.inc({ peer: p.cluster, result: 'ok' });
      return { gateway, ok: true, ms: ms() };
    } catch (e) {
      const timedOut = ac.signal.aborted;
      ctx.metrics.probes.inc({ peer: p.cluster, result: failureResult(e as Refusal, timedOut) });
      return { gateway, ok: false, ms: ms(), error: timedOut ? String(ac.signal.reason) : (e as Error).message };
    } finally {
      clearTimeout(timer);
    }
  }
}
