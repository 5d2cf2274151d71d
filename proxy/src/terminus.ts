/**
 * Terminus side: the tunnel listener. A peer gateway connects, proves who it is (mTLS), sends OPEN; we check
 * it (admission.ts), dial the destination from our in-cluster address, reply, and relay.
 *
 * Two paths share the checks: plaintext (Node streams, or splice once accepted), and mTLS in the native
 * addon (handshake, header and relay in a pthread; mTLS has no JavaScript path).
 */
import * as net from 'node:net';
import { peerBandwidth, type PeerConfig } from './config';
import { checkOpen, checkProbe, type ProbeVerdict } from './admission';
import { splices, type GatewayContext } from './context';
import { identifyPeer } from './identity';
import { HandshakeAdmission, armLiveness } from './handshake-admission';
import { type TlsHandle, type TlsPhase1, type TlsPhase2, socketFd, stopReading } from './native';
import { PendingConns, type PendingConn } from './pending-conn';
import {
  CONNECTION_ID_BYTES, FRAME_OPEN, FRAME_PROBE, FRAME_TRUST_PUBLISH, FrameReader, ProtocolError, RefusalCode, decodeOpenBody, encodeReply, refusalName,
  type OpenHeader, type ReadResult,
} from './protocol';
import { dialFailureText, refusalText } from './refusal-text';
import { relayNative, relayStreams } from './relay';
import { DIAL_TIMEOUT_CODE, dial, secondsSince } from './sockets';
import type { NativeOn } from './tls-native-session';
import type { Tunnel } from './tunnel-table';

const noop = () => { /* errors are handled where the socket is used */ };
const idString = (b: Buffer) => b.toString('hex');

/** A complete OPEN frame decoded, or the refusal it earns. */
function decodeOpen(r: Exclude<ReadResult, { kind: 'more' }>): { header: OpenHeader } | { code: number; why: string } {
  if (r.kind === 'error') return { code: r.error.code, why: r.error.message };
  try { return { header: decodeOpenBody(r.body) }; } catch (e) {
    return { code: e instanceof ProtocolError ? e.code : RefusalCode.MALFORMED, why: (e as Error).message };
  }
}

/** First frames a terminus reads: OPEN (a tunnel), PUBLISH (the trust exchange, trust/hub.ts) or PROBE (peer-probe.ts). */
const FIRST_FRAMES = [FRAME_OPEN, FRAME_TRUST_PUBLISH, FRAME_PROBE];

/** PUBLISH and PROBE are answered with one REPLY and nothing relayed: their verdict, or undefined for OPEN. */
function answerOnly(ctx: GatewayContext, r: ReadResult, certCluster: string | undefined): ProbeVerdict | undefined {
  if (r.kind !== 'frame') return undefined;
  if (r.type === FRAME_TRUST_PUBLISH) return ctx.trust.onPublish(r.body, certCluster);
  if (r.type === FRAME_PROBE) return checkProbe(ctx, r.body, certCluster);
  return undefined;
}

export class Terminus {
  readonly server: net.Server;
  private readonly pending = new PendingConns();
  private readonly admission = new HandshakeAdmission(() => this.ctx.cfg);

  constructor(private readonly ctx: GatewayContext) {
    this.server = net.createServer({ allowHalfOpen: true, noDelay: true, pauseOnConnect: !!ctx.nativeTls });
    this.server.on('connection', (raw: net.Socket) => this.onConnection(raw));
    this.server.on('error', (e) => ctx.log.error({ err: e.message }, 'tunnel listener error'));
  }

  /** Close the connections still in handshake / header exchange (native sessions are cancelled by their owner). */
  closePending(): void { this.pending.closeAll(); }

  private onConnection(raw: net.Socket): void {
    const { ctx } = this;
    raw.on('error', noop);
    if (ctx.stopping) { ctx.refuse('terminus', 'draining'); raw.destroy(); return; }
    // unauthenticated work: bounded per source and in total, apart from the tunnel pool
    const release = this.admission.admit(raw.remoteAddress);
    if (!release) { ctx.refuse('terminus', 'too_many_handshakes'); raw.destroy(); return; }
    armLiveness(ctx.native, raw, ctx.cfg.limits);
    const p = this.pending.admit(raw, release);
    // the native session enforces handshakeTimeoutMs itself; a JS deadline must not close an fd a thread uses
    if (ctx.nativeTls) { this.onNative(p); return; }
    p.armDeadline(ctx.cfg.limits.handshakeTimeoutMs, () => this.onDeadline(p));
    this.onPlain(p);
  }

  private onDeadline(p: PendingConn): void {
    this.ctx.refuse('terminus', 'handshake_timeout');
    this.ctx.log.info({ from: p.raw.remoteAddress }, 'refused: handshake/header timeout');
    p.settle();
    p.raw.destroy();
  }

  // ------------------------------------------------------------------ plaintext (Node streams, or splice once accepted)

  /** Read OPEN from the TCP connection (no certificate: plaintext mode), check it, accept or refuse. */
  private onPlain(p: PendingConn): void {
    const { ctx } = this;
    const { raw } = p;
    const usePump = splices(ctx);
    const reader = new FrameReader(ctx.cfg.limits.headerMaxBytes, FIRST_FRAMES);
    let connectionId: Buffer = Buffer.alloc(CONNECTION_ID_BYTES);
    let decided = false;
    const refuseWith = (code: number, why: string, extra: object = {}) => {
      if (decided) return;
      decided = true;
      p.settle();
      this.refused(code, why, { conn: idString(connectionId), from: raw.remoteAddress, ...extra });
      raw.removeAllListeners('data');
      raw.pause();
      if (!raw.destroyed && raw.writable) {
        // plaintext: no one is authenticated, so the peer reads a fixed text per code (refusal-text.ts); `why` is logged
        raw.end(encodeReply({ status: code, connectionId, reason: refusalText(code, why, false) }));
        // always close: do not wait for the peer to cooperate
        setTimeout(() => raw.destroy(), 1000).unref();
      } else { raw.destroy(); }
    };
    const onData = (chunk: Buffer) => {
      const r = reader.push(chunk);
      if (r.kind === 'more') return;
      if (usePump) stopReading(raw); else raw.pause();
      raw.off('data', onData);
      const only = answerOnly(ctx, r, undefined);
      if (only) {
        connectionId = only.connectionId;
        if (only.status !== RefusalCode.ACCEPTED) return refuseWith(only.status, only.reason);
        decided = true;
        p.settle();
        raw.end(encodeReply({ status: RefusalCode.ACCEPTED, connectionId, reason: '' }));
        setTimeout(() => raw.destroy(), 1000).unref();
        return;
      }
      const open = decodeOpen(r);
      if ('code' in open) return refuseWith(open.code, open.why);
      connectionId = open.header.connectionId;
      if (open.header.payload === 'splice') return refuseWith(RefusalCode.PAYLOAD_MODE_REFUSED, `payload splice needs tls.mode mtls-splice (this terminus: ${ctx.cfg.tls.mode})`);
      const v = checkOpen(ctx, open.header, undefined);
      if ('code' in v) return refuseWith(v.code, v.why, { dst: `${open.header.dstHost}:${open.header.dstPort}` });
      decided = true;
      p.settle();
      this.acceptPlain(raw, open.header, v.peer, r.kind === 'frame' && r.rest.length ? r.rest : null);
    };
    raw.on('data', onData);
    raw.on('error', () => { if (!decided) { decided = true; p.settle(); } raw.destroy(); });
    raw.on('end', () => { if (!decided) refuseWith(RefusalCode.MALFORMED, 'connection closed before a complete header'); });
  }

  /** Accepted so far: dial the destination from our in-cluster address, reply, relay. */
  private acceptPlain(raw: net.Socket, h: OpenHeader, peer: PeerConfig, rest: Buffer | null): void {
    const { ctx } = this;
    const usePump = splices(ctx);
    const id = idString(h.connectionId);
    const dstText = `${h.dstHost}:${h.dstPort}`;
    const t = ctx.table.track(id, peer.cluster, 'terminus', [raw], false);
    this.dialDestination(h).then((dstSock) => {
      t.sockets.push(dstSock);
      dstSock.on('error', noop);
      if (t.finished || raw.destroyed) { t.finish('destroy'); return; }
      raw.write(encodeReply({ status: RefusalCode.ACCEPTED, connectionId: h.connectionId, reason: '' }), (err) => {
        if (err || t.finished) { t.finish('reset'); return; }
        ctx.table.markEstablished(t);
        ctx.log.info({ conn: id, peer: peer.cluster, dst: dstText, data: usePump ? 'splice' : 'stream' }, 'tunnel accepted');
        if (usePump) relayNative(ctx.native!, ctx.log, ctx.cfg.limits.idleTimeoutMs, t, raw, dstSock, rest, null, ctx.budgets.for(t.peer));
        else relayStreams(ctx.log, t, raw, dstSock, rest, null);
      });
    }, (e: NodeJS.ErrnoException) => {
      const code = this.dialFailed(e, id, peer, dstText);
      if (!raw.destroyed) raw.end(encodeReply({ status: code, connectionId: h.connectionId, reason: dialFailureText(e, code) }));
      setTimeout(() => t.finish('destroy'), 1000).unref();
    });
  }

  // ------------------------------------------------------------------ native mTLS

  /** The addon's thread does handshake + OPEN; JS decides; the thread replies and relays. */
  private onNative(p: PendingConn): void {
    p.handOver(); // owned by the native session now: close() cancels it through the session set
    let tunnel: Tunnel | undefined;
    const on: NativeOn = {
      p1: (r) => { p.settle(); tunnel = this.nativeOpen(p.raw, h, r); },
      p2: (r) => this.nativeEnd(p.raw, tunnel, r),
    };
    const h = this.ctx.nativeTls!.start(p.raw, true, null, null, this.ctx.cfg.limits, on);
  }

  /** Phase 1 of a native session: identity, OPEN, checks; the tunnel when accepted so far. */
  private nativeOpen(raw: net.Socket, h: TlsHandle, r: TlsPhase1): Tunnel | undefined {
    const { ctx } = this;
    const sessions = ctx.nativeTls!;
    const from = raw.remoteAddress;
    const drop = (reason: string, why: string, tlsFailure: boolean): undefined => {
      if (tlsFailure) ctx.metrics.tlsHandshakeFailures.inc({ side: 'terminus' });
      ctx.refuse('terminus', reason);
      ctx.log.info({ from, reason, why }, 'refused');
      sessions.cancel(h);
      return undefined;
    };
    const refuseWith = (connectionId: Buffer, code: number, why: string, extra: object = {}): undefined => {
      this.refused(code, why, { conn: idString(connectionId), from, ...extra });
      // the certificate named a configured peer: its operator may read the whole reason
      sessions.continue(h, encodeReply({ status: code, connectionId, reason: refusalText(code, why, true) }), -1, 0);
      return undefined;
    };
    if (!r.handshook) return drop(/timed out/.test(r.error) ? 'handshake_timeout' : 'tls_handshake', r.error, true);
    const who = identifyPeer(r.uris, ctx.cfg);
    if ('error' in who) return drop('unknown_peer_certificate', who.error, true);
    const fr = new FrameReader(ctx.cfg.limits.headerMaxBytes, FIRST_FRAMES).push(r.frame);
    if (fr.kind === 'more') {
      if (/timed out/.test(r.error)) return drop('handshake_timeout', r.error, false);
      return drop(refusalName(RefusalCode.MALFORMED), 'connection closed before a complete header', false);
    }
    const only = answerOnly(ctx, fr, who.cluster);
    if (only) {
      if (only.status !== RefusalCode.ACCEPTED) return refuseWith(only.connectionId, only.status, only.reason);
      sessions.continue(h, encodeReply({ status: RefusalCode.ACCEPTED, connectionId: only.connectionId, reason: '' }), -1, 0);
      return undefined;
    }
    const open = decodeOpen(fr);
    if ('code' in open) return refuseWith(Buffer.alloc(CONNECTION_ID_BYTES), open.code, open.why);
    const hd = open.header;
    if (hd.payload === 'splice' && !sessions.spliceCapable) {
      return refuseWith(hd.connectionId, RefusalCode.PAYLOAD_MODE_REFUSED, `payload splice needs tls.mode mtls-splice (this terminus: ${ctx.cfg.tls.mode})`);
    }
    if (hd.payload !== 'splice' && peerBandwidth(ctx.cfg, who.cluster) !== undefined) {
      // the budget is enforced on spliced payloads only: never relay past it unenforced
      return refuseWith(hd.connectionId, RefusalCode.PAYLOAD_MODE_REFUSED, 'this gateway enforces a bandwidth budget toward this peer, on spliced payloads only: set tls.mode mtls-splice on the origin');
    }
    const v = checkOpen(ctx, hd, who.cluster);
    if ('code' in v) return refuseWith(hd.connectionId, v.code, v.why, { dst: `${hd.dstHost}:${hd.dstPort}` });
    return this.acceptNative(raw, h, hd, v.peer);
  }

  private acceptNative(raw: net.Socket, h: TlsHandle, hd: OpenHeader, peer: PeerConfig): Tunnel {
    const { ctx } = this;
    const sessions = ctx.nativeTls!;
    const id = idString(hd.connectionId);
    const dstText = `${hd.dstHost}:${hd.dstPort}`;
    const t = ctx.table.track(id, peer.cluster, 'terminus', [raw], false);
    this.dialDestination(hd).then((dstSock) => {
      t.sockets.push(dstSock);
      dstSock.on('error', noop); // the native relay reports
      if (t.finished || ctx.closed) { sessions.cancel(h); return; }
      ctx.table.markEstablished(t);
      t.tlsRelay = h;
      const splice = hd.payload === 'splice';
      ctx.log.info({ conn: id, peer: peer.cluster, dst: dstText, data: splice ? 'native-splice' : 'native-tls' }, 'tunnel accepted');
      const reply = encodeReply({ status: RefusalCode.ACCEPTED, connectionId: hd.connectionId, reason: '' });
      sessions.continue(h, reply, socketFd(dstSock), ctx.cfg.limits.idleTimeoutMs, splice, splice ? ctx.budgets.for(peer.cluster) : null);
    }, (e: NodeJS.ErrnoException) => {
      const code = this.dialFailed(e, id, peer, dstText);
      sessions.continue(h, encodeReply({ status: code, connectionId: hd.connectionId, reason: dialFailureText(e, code) }), -1, 0);
    });
    return t;
  }

  /** Phase 2 of a native session: it is over. */
  private nativeEnd(raw: net.Socket, tunnel: Tunnel | undefined, r: TlsPhase2): void {
    if (!tunnel) { raw.destroy(); return; }
    tunnel.bytes = [r.plainToTls, r.tlsToPlain];
    if (r.error.startsWith('binding:')) { this.ctx.refuse('terminus', 'binding_mismatch'); this.ctx.log.info({ conn: tunnel.id, err: r.error }, 'refused: data path not bound to this session'); }
    if (tunnel.established && r.reason !== 'eof') {
      this.ctx.log.info({ conn: tunnel.id, reason: r.reason, side: r.side, errno: r.errno, err: r.error || undefined }, 'relay ended');
    }
    tunnel.finish(r.reason === 'eof' ? 'destroy' : 'reset'); // only a clean end is not a reset
  }

  // ------------------------------------------------------------------ shared

  /** Dial the destination of an accepted OPEN (paused: a native relay may take its fd). */
  private dialDestination(h: OpenHeader): Promise<net.Socket> {
    const { cfg, metrics } = this.ctx;
    const t0 = process.hrtime.bigint();
    const from = cfg.dialFrom && net.isIP(cfg.dialFrom) === net.isIP(h.dstHost) ? cfg.dialFrom : undefined;
    return dial(h.dstHost, h.dstPort, cfg.limits.dialTimeoutMs, from, true).then((s) => {
      metrics.dialLatency.observe({ target: 'destination' }, secondsSince(t0));
      return s;
    });
  }

  /** Count and log a failed destination dial; the refusal code to reply with. */
  private dialFailed(e: NodeJS.ErrnoException, id: string, peer: PeerConfig, dst: string): number {
    const code = e.code === DIAL_TIMEOUT_CODE ? RefusalCode.DIAL_TIMEOUT : RefusalCode.DIAL_FAILED;
    this.ctx.refuse('terminus', refusalName(code));
    this.ctx.log.info({ conn: id, peer: peer.cluster, dst, err: e.code ?? e.message }, 'destination dial failed');
    return code;
  }

  /** Count and log a refused OPEN. */
  private refused(code: number, why: string, fields: object): void {
    this.ctx.refuse('terminus', refusalName(code));
    this.ctx.log.info({ ...fields, reason: refusalName(code), why }, 'refused');
  }
}
