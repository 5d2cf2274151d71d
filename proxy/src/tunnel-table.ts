/**
 * The tunnel table: every tunnel this gateway holds (both sides), the per-peer counts the caps read, the
 * byte counters the metrics read, and how a tunnel finishes (once: metrics, sockets closed, drain woken).
 */
import * as net from 'node:net';
import type { Logger } from 'pino';
import type { ProxyConfig } from './config';
import type { GatewayMetrics } from './metrics';
import type { NativeAddon, PumpHandle, TlsHandle } from './native';
import { RefusalCode } from './protocol';
import { nowMs } from './sockets';

export type Side = 'origin' | 'terminus';
/** 'reset': close the plain TCP legs with a RST; 'destroy': close them; 'normal': both directions ended. */
export type FinishHow = 'normal' | 'reset' | 'destroy';

export class Tunnel {
  readonly startedAt = nowMs();
  lastActivity = nowMs();
  /** splice relay (both legs plaintext) */
  pump?: PumpHandle;
  /** native TLS relay: tlsStats = [tlsToPlain (rx), plainToTls (tx)] */
  tlsRelay?: TlsHandle;
  /** [tx (towards the peer), rx (from the peer)] */
  bytes: [number, number] = [0, 0];
  reported: [number, number] = [0, 0];
  established = false;
  finished = false;

  constructor(
    readonly id: string,
    readonly peer: string,
    readonly side: Side,
    readonly sockets: net.Socket[],
    /** pump fd order: does aToB mean tx? */
    readonly aToBIsTx: boolean,
    private readonly table: TunnelTable,
  ) {}

  /** Finish the tunnel (idempotent). */
  finish(how: FinishHow): void { this.table.finish(this, how); }
}

export class TunnelTable {
  private readonly tunnels = new Set<Tunnel>();
  private readonly perPeer = new Map<string, number>();
  private drainWaiters: (() => void)[] = [];

  constructor(private readonly metrics: GatewayMetrics, private readonly log: Logger, private readonly native: NativeAddon | undefined) {}
  /** Called for each established tunnel that ends in a reset (the admin `/status` keeps the last ones). */
  onReset?: (peer: string, side: Side) => void;

  get size(): number { return this.tunnels.size; }
  all(): Tunnel[] { return [...this.tunnels]; }

  /** The cap a new tunnel to/from `peer` would exceed (a refusal code), or 0. */
  capCheck(peer: string, limits: ProxyConfig['limits']): number {
    if (this.tunnels.size >= limits.maxTunnelsTotal) return RefusalCode.TOTAL_LIMIT;
    if ((this.perPeer.get(peer) ?? 0) >= limits.maxTunnelsPerPeer) return RefusalCode.PEER_LIMIT;
    return 0;
  }

  /** Register a tunnel (counts toward caps from now on). */
  track(id: string, peer: string, side: Side, sockets: net.Socket[], aToBIsTx: boolean): Tunnel {
    const t = new Tunnel(id, peer, side, sockets, aToBIsTx, this);
    this.tunnels.add(t);
    this.countPeer(peer, 1);
    return t;
  }

  /** The tunnel carries data from now on (gauges, totals and the duration histogram count it). */
  markEstablished(t: Tunnel): void {
    t.established = true;
    this.metrics.activeTunnels.inc({ peer: t.peer, side: t.side });
    this.metrics.tunnelsTotal.inc({ peer: t.peer, side: t.side });
  }

  finish(t: Tunnel, how: FinishHow): void {
    if (t.finished) return;
    this.flushBytes(t);
    t.finished = true;
    this.tunnels.delete(t);
    this.countPeer(t.peer, -1);
    if (t.established) {
      this.metrics.activeTunnels.dec({ peer: t.peer, side: t.side });
      this.metrics.tunnelDuration.observe({ peer: t.peer, side: t.side }, (nowMs() - t.startedAt) / 1000);
      if (how === 'reset') { this.metrics.tunnelResets.inc({ peer: t.peer, side: t.side }); this.onReset?.(t.peer, t.side); }
    }
    for (const s of t.sockets) {
      if (how === 'reset' && !s.destroyed && s instanceof net.Socket) {
        try { s.resetAndDestroy(); continue; } catch { /* fall through */ }
      }
      s.destroy();
    }
    this.log.info({ conn: t.id, peer: t.peer, side: t.side, how, txBytes: t.bytes[0], rxBytes: t.bytes[1], ms: nowMs() - t.startedAt }, 'tunnel closed');
    if (this.tunnels.size === 0 && this.drainWaiters.length) {
      const w = this.drainWaiters;
      this.drainWaiters = [];
      w.forEach((f) => f());
    }
  }

  /** Add the bytes a tunnel carried since the last flush to the byte counters. */
  flushBytes(t: Tunnel): void {
    if (t.pump && this.native && !t.finished) {
      const [ab, ba] = this.native.pumpStats(t.pump);
      t.bytes = t.aToBIsTx ? [ab, ba] : [ba, ab];
    }
    if (t.tlsRelay && this.native && !t.finished) {
      const [rx, tx] = this.native.tlsStats(t.tlsRelay);
      t.bytes = [tx, rx];
    }
    const dtx = t.bytes[0] - t.reported[0], drx = t.bytes[1] - t.reported[1];
    if (dtx > 0) this.metrics.bytes.inc({ peer: t.peer, direction: 'tx' }, dtx);
    if (drx > 0) this.metrics.bytes.inc({ peer: t.peer, direction: 'rx' }, drx);
    t.reported = [t.bytes[0], t.bytes[1]];
  }

  flushAll(): void { for (const t of this.tunnels) this.flushBytes(t); }

  /** Resolves when the table is empty, or after `timeoutMs`. */
  whenEmpty(timeoutMs: number): Promise<void> {
    if (this.tunnels.size === 0) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, timeoutMs);
      this.drainWaiters.push(() => { clearTimeout(timer); resolve(); });
    });
  }

  /** JS relays: finish the tunnels idle for longer than `idleMs` (the native relays time themselves). */
  sweepIdle(idleMs: number): void {
    const now = nowMs();
    for (const t of this.tunnels) {
      if (t.established && !t.pump && !t.tlsRelay && now - t.lastActivity > idleMs) {
        this.log.info({ conn: t.id }, 'idle timeout');
        t.finish('reset'); // a forced end is a reset, never a FIN
      }
    }
  }

  private countPeer(peer: string, delta: number): void {
    const n = (this.perPeer.get(peer) ?? 0) + delta;
    if (n <= 0) this.perPeer.delete(peer); else this.perPeer.set(peer, n);
  }
}
