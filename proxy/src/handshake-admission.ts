/**
 * Admission of unauthenticated work on the tunnel listener (issue 14): connections still in TLS handshake
 * or header exchange are bounded per source address and in total, apart from the tunnel pool. Configured
 * peer gateway addresses have their own budget (`maxTunnelsPerPeer` each), so a flood from elsewhere can
 * never take the slots peers need; a flood from one address gets at most `maxHandshakesPerSource`.
 */
import type * as net from 'node:net';
import type { NativeAddon } from './native';
import { socketFd } from './native';
import { normalizeAddress } from './policy';
import type { ProxyConfig } from './config';

export class HandshakeAdmission {
  private readonly perSource = new Map<string, number>();
  private strangers = 0;

  constructor(private readonly config: () => ProxyConfig) {}

  /** Unauthenticated connections in progress (all sources). */
  pending(): number { let n = 0; for (const v of this.perSource.values()) n += v; return n; }

  /** A release function when `source` may start a handshake now, else undefined (refuse the connection). */
  admit(source: string | undefined): (() => void) | undefined {
    const cfg = this.config();
    const key = normalizeAddress(source ?? '');
    const peer = cfg.peers.some((p) => p.gateways.some((g) => normalizeAddress(g.host) === key));
    const n = this.perSource.get(key) ?? 0;
    if (peer ? n >= cfg.limits.maxTunnelsPerPeer : n >= cfg.limits.maxHandshakesPerSource || this.strangers >= cfg.limits.maxHandshakesTotal) return undefined;
    this.perSource.set(key, n + 1);
    if (!peer) this.strangers++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const m = (this.perSource.get(key) ?? 1) - 1;
      if (m <= 0) this.perSource.delete(key); else this.perSource.set(key, m);
      if (!peer) this.strangers--;
    };
  }
}

/** Dead-peer detection on a tunnel socket (keepalive + TCP_USER_TIMEOUT from `limits`). */
export function armLiveness(native: NativeAddon | undefined, sock: net.Socket, limits: ProxyConfig['limits']): void {
  if (native?.setTcpLiveness) {
    native.setTcpLiveness(socketFd(sock), limits.keepaliveIdleMs, limits.keepaliveIntervalMs, limits.keepaliveProbes, limits.userTimeoutMs);
  } else {sock.setKeepAlive(true, limits.keepaliveIdleMs);}
}
