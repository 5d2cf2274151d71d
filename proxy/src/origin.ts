/**
 * Origin side: the intercept listener. An in-cluster client's connection to a peer cluster's address is
 * redirected here; we check that the client is in this cluster's migration network (`client_not_local`
 * otherwise), find the peer, open a tunnel to one of its gateways (TLS, OPEN, REPLY), and relay.
 */
import * as crypto from 'node:crypto';
import * as net from 'node:net';
import { peerBandwidth, type PeerConfig } from './config';
import { splices, type GatewayContext } from './context';
import { armLiveness } from './handshake-admission';
import { type TlsHandle, socketFd, stopReading } from './native';
import { normalizeAddress } from './policy';
import { CONNECTION_ID_BYTES, RefusalCode, encodeOpen, refusalName, type OpenHeader } from './protocol';
import { relayNative, relayStreams } from './relay';
import { dial, resetOrDestroy, secondsSince } from './sockets';
import type { NativeOn } from './tls-native-session';
import type { Tunnel } from './tunnel-table';
import { type Opened, type Refusal, handshakeNative, handshakePlain } from './tunnel-handshake';

export type Destination = { host: string; port: number };

const noop = () => { /* handled by the relay, or the socket is just closed */ };

export class Origin {
  readonly server: net.Server;
  /** round robin over a peer's gateways */
  private rr = 0;

  constructor(private readonly ctx: GatewayContext, private readonly lookup?: (sock: net.Socket) => Destination | undefined) {
    this.server = net.createServer({ allowHalfOpen: true, pauseOnConnect: true, noDelay: true }, (c) => this.onIntercept(c));
    this.server.on('error', (e) => ctx.log.error({ err: e.message }, 'intercept listener error'));
  }

  /** Where the client meant to go: SO_ORIGINAL_DST from the addon, else the local address (TPROXY semantics). */
  private originalDestination(sock: net.Socket): Destination | undefined {
    if (this.lookup) return this.lookup(sock);
    if (this.ctx.native) {
      const d = this.ctx.native.getOriginalDst(socketFd(sock));
      if (d) return { host: d.address, port: d.port };
    }
    // TPROXY (or no NAT): the local address is the original destination
    if (sock.localAddress && sock.localPort) return { host: normalizeAddress(sock.localAddress), port: sock.localPort };
    return undefined;
  }

  /** The destination and the peer whose CIDRs hold it, or undefined when the connection is refused (and closed). */
  private route(client: net.Socket): { dst: Destination; peer: PeerConfig } | undefined {
    const { ctx } = this;
    if (ctx.stopping) { ctx.refuse('origin', 'draining'); client.destroy(); return undefined; }
    // never an open relay (issue 49): only the handlers' network may be tunnelled, whatever brought the client here
    const from = normalizeAddress(client.remoteAddress ?? '');
    if (!ctx.policy.isLocalClient(from)) {
      ctx.refuse('origin', 'client_not_local');
      ctx.log.warn({ reason: 'client_not_local', client: from, port: client.remotePort, localCidrs: ctx.cfg.localCidrs },
        "refused: the client is not in this cluster's migration network");
      resetOrDestroy(client);
      return undefined;
    }
    let dst: Destination | undefined;
    try { dst = this.originalDestination(client); } catch (e) { ctx.log.warn({ err: (e as Error).message }, 'original destination lookup failed'); }
    const peer = dst ? ctx.policy.peerFor(dst.host) : undefined;
    if (!dst || !peer) {
      ctx.refuse('origin', 'no_route');
      ctx.log.info({ dst, from: client.remoteAddress }, 'refused: destination is not in any peer CIDR');
      resetOrDestroy(client);
      return undefined;
    }
    const cap = ctx.table.capCheck(peer.cluster, ctx.cfg.limits);
    if (cap) {
      ctx.refuse('origin', refusalName(cap));
      resetOrDestroy(client);
      return undefined;
    }
    return { dst, peer };
  }

  private onIntercept(client: net.Socket): void {
    const { ctx } = this;
    client.on('error', noop);
    const route = this.route(client);
    if (!route) return;
    const { dst, peer } = route;
    const connectionId = crypto.randomBytes(CONNECTION_ID_BYTES);
    const id = connectionId.toString('hex');
    const usePump = splices(ctx);
    const t = ctx.table.track(id, peer.cluster, 'origin', [client], true);
    client.once('close', () => { if (!t.established) t.finish('destroy'); });
    ctx.log.debug({ conn: id, peer: peer.cluster, dst, from: client.remoteAddress }, 'intercepted');
    const header: OpenHeader = { connectionId, dstHost: dst.host, dstPort: dst.port, sourceCluster: ctx.cfg.cluster, payload: ctx.nativeTls?.spliceCapable ? 'splice' : 'tls' };
    this.openTunnel(peer, header, usePump).then((o) => this.onOpened(t, client, o, dst, usePump), (e: Refusal) => {
      ctx.refuse('origin', e.refusal !== undefined ? `peer_${refusalName(e.refusal)}` : 'peer_unreachable');
      ctx.log.info({ conn: id, peer: peer.cluster, dst, err: e.message }, 'tunnel refused');
      t.finish('reset');
    });
  }

  /** The peer accepted: relay between the client and the tunnel. */
  private onOpened(t: Tunnel, client: net.Socket, o: Opened, dst: Destination, usePump: boolean): void {
    const { ctx } = this;
    if (t.finished || client.destroyed) {
      if (o.tls) { ctx.nativeTls!.cancel(o.tls.h); } else { o.raw.destroy(); }
      t.finish('destroy');
      return;
    }
    t.sockets.push(o.raw);
    ctx.table.markEstablished(t);
    const data = o.tls ? (o.tls.splice ? 'native-splice' : 'native-tls') : usePump ? 'splice' : 'stream';
    ctx.log.info({ conn: t.id, peer: t.peer, dst: `${dst.host}:${dst.port}`, from: client.remoteAddress, data }, 'tunnel open');
    const rest = o.rest.length ? o.rest : null;
    if (o.tls) this.handOverNative(t, client, o.tls);
    else if (usePump) relayNative(ctx.native!, ctx.log, ctx.cfg.limits.idleTimeoutMs, t, client, o.raw, null, rest, ctx.budgets.for(t.peer));
    else relayStreams(ctx.log, t, client, o.raw, null, rest);
  }

  /** Native mTLS: the session's thread relays between the client's fd and the TLS tunnel. */
  private handOverNative(t: Tunnel, client: net.Socket, nt: { h: TlsHandle; on: NativeOn; splice: boolean }): void {
    const { ctx } = this;
    t.tlsRelay = nt.h;
    nt.on.p2 = (r) => {
      t.bytes = [r.plainToTls, r.tlsToPlain];
      if (r.error.startsWith('binding:')) ctx.refuse('origin', 'binding_mismatch');
      if (r.reason !== 'eof') ctx.log.info({ conn: t.id, reason: r.reason, side: r.side, errno: r.errno, err: r.error || undefined }, 'relay ended');
      // a reset or error on one side (a dead peer: EOF without close_notify) resets the other, explicitly
      t.finish(r.reason === 'eof' ? 'destroy' : 'reset'); // only a clean end is not a reset
    };
    const early = stopReading(client);
    if (early) { ctx.log.warn({ conn: t.id }, 'unexpected bytes buffered before hand-over'); t.finish('reset'); return; }
    ctx.nativeTls!.continue(nt.h, null, socketFd(client), ctx.cfg.limits.idleTimeoutMs, nt.splice, nt.splice ? ctx.budgets.for(t.peer) : null);
  }

  /**
   * openTunnelOnce; a terminus that does not splice (tls.mode mtls, during a change of mode) answers a splice OPEN
   * with PAYLOAD_MODE_REFUSED: then once more with the payload inside TLS (stronger, never weaker).
   */
  private async openTunnel(peer: PeerConfig, header: OpenHeader, usePump: boolean): Promise<Opened> {
    try { return await this.openTunnelOnce(peer, header, usePump); } catch (e) {
      if ((e as Refusal).refusal !== RefusalCode.PAYLOAD_MODE_REFUSED || header.payload !== 'splice') throw e;
      // a budget is enforced on spliced payloads only: never fall back to a relay that would not hold it
      if (peerBandwidth(this.ctx.cfg, peer.cluster) !== undefined) { this.ctx.log.warn({ peer: peer.cluster }, 'peer gateway does not splice and this gateway has a bandwidth budget toward it: tunnel refused'); throw e; }
      this.ctx.log.info({ peer: peer.cluster }, 'peer gateway does not splice: payload inside TLS');
      return this.openTunnelOnce(peer, { ...header, payload: 'tls' }, usePump);
    }
  }

  /** Connect to one of the peer's gateways (round robin, next on failure), run mTLS (native) or not (plaintext), send OPEN, await REPLY. */
  private async openTunnelOnce(peer: PeerConfig, header: OpenHeader, usePump: boolean): Promise<Opened> {
    const { ctx } = this;
    const started = process.hrtime.bigint();
    const order = peer.gateways.map((_, i) => peer.gateways[(i + this.rr) % peer.gateways.length]);
    this.rr++;
    let lastErr: Error = new Error('no gateways');
    for (const gw of order) {
      if (ctx.closed) break;
      let raw: net.Socket;
      try {
        raw = await dial(gw.host, gw.port, ctx.cfg.limits.dialTimeoutMs, undefined, !!ctx.nativeTls);
        armLiveness(ctx.native, raw, ctx.cfg.limits); // a vanished peer is found in seconds
      } catch (e) { lastErr = e as Error; continue; }
      try {
        const first = encodeOpen(header);
        const r = ctx.nativeTls
          ? await handshakeNative(ctx, raw, peer, first, header.connectionId, header.payload === 'splice')
          : await handshakePlain(ctx, raw, first, header.connectionId, usePump);
        ctx.metrics.dialLatency.observe({ target: 'peer' }, secondsSince(started));
        return r;
      } catch (e) {
        if (!ctx.nativeTls) raw.destroy(); // a native session closes its socket when its thread is done
        if ((e as Refusal).refusal !== undefined) throw e; // a definitive answer: do not retry elsewhere
        lastErr = e as Error;
      }
    }
    throw lastErr;
  }
}
