/**
 * Native mTLS sessions (OpenSSL exported by Node, driven by the addon): one pthread per tunnel runs the
 * handshake, the first frame exchange and then the relay. Phase 1 reports handshake + first frame to
 * JavaScript, which decides and continues (reply, relay fd) or cancels; phase 2 reports the end.
 */
import type * as net from 'node:net';
import type { ProxyConfig } from './config';
import { TLS_FLAG_SPLICE_CAPABLE, type BudgetHandle, type NativeAddon, type TlsCtx, type TlsHandle, type TlsPhase1, type TlsPhase2, socketFd } from './native';

/** Certificate, key and CA of this gateway (PEM). */
export interface TlsFiles { ca: Buffer; cert: Buffer; key: Buffer }

/** Callbacks of one session: `p1` after handshake + first frame, `p2` when the session is over. */
export type NativeOn = { p1: (r: TlsPhase1) => void; p2?: (r: TlsPhase2) => void };

interface Contexts { server: TlsCtx; client: TlsCtx }

export class NativeTlsSessions {
  private contexts: Contexts;
  /** every session not yet finished (cancelAll() cancels them; their final callback closes the sockets) */
  private readonly live = new Set<TlsHandle>();

  /** `spliceCapable` (tls.mode mtls-splice): sessions may switch to the authenticated splice after the REPLY. */
  constructor(private readonly native: NativeAddon, files: TlsFiles, readonly spliceCapable = false) {
    this.contexts = this.makeContexts(files);
  }

  /** OpenSSL contexts for new certificate files (throws when they are unusable); `useContexts` applies them. */
  makeContexts(f: TlsFiles): Contexts {
    return { server: this.native.tlsContext(f.ca, f.cert, f.key, true), client: this.native.tlsContext(f.ca, f.cert, f.key, false) };
  }

  /** Sessions started from now on use these contexts; running ones keep theirs. */
  useContexts(c: Contexts): void { this.contexts = c; }

  get size(): number { return this.live.size; }

  /** Start a session on `raw` (kept paused: the thread owns its fd); `first` is written right after the handshake. */
  start(raw: net.Socket, isServer: boolean, first: Buffer | null, expectUri: string | null, limits: ProxyConfig['limits'], on: NativeOn): TlsHandle {
    const h: TlsHandle = this.native.tlsStart(isServer ? this.contexts.server : this.contexts.client, socketFd(raw), isServer,
      limits.handshakeTimeoutMs, first, limits.headerMaxBytes, expectUri, (r) => {
        if (r.phase === 1) { on.p1(r); } else { this.live.delete(h); on.p2?.(r); }
      }, this.spliceCapable ? TLS_FLAG_SPLICE_CAPABLE : 0);
    this.live.add(h);
    return h;
  }

  /**
   * After phase 1: send `reply` (if any), then relay with `relayFd` (or end the session when it is -1). `splice`:
   * exchange BIND frames, then splice the payload without TLS (splice-capable sessions only). `budget`: the peer's
   * bandwidth budget for the spliced bytes toward the tunnel (splice only: a TLS relay does not enforce one).
   */
  continue(h: TlsHandle, reply: Buffer | null, relayFd: number, idleMs: number, splice = false, budget: BudgetHandle | null = null): void {
    if (splice && !this.spliceCapable) throw new Error('splice asked of a session that is not splice-capable');
    if (budget && !splice) throw new Error('a bandwidth budget is enforced on spliced sessions only');
    this.native.tlsContinue(h, reply, relayFd, idleMs, splice, budget);
  }

  cancel(h: TlsHandle): void { this.native.tlsCancel(h); }

  /** Cancel every live session; each one's phase-2 callback still runs and closes its sockets. */
  cancelAll(): void { for (const h of [...this.live]) this.native.tlsCancel(h); }
}
