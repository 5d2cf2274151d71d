/**
 * Terminus side: the tunnel listener. A peer gateway connects, proves who it is (mTLS), sends OPEN; we check
 * it (admission.ts), dial the destination from our in-cluster address, reply, and relay.
 *
 * Three paths share the checks: plaintext (Node streams, or splice once accepted), mTLS in Node's tls
 * server (stream relay), and mTLS in the native addon (handshake, header and relay in a pthread).
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import type { PeerConfig } from './config';
import { checkOpen } from './admission';
import { splices, type GatewayContext } from './context';
import { TLS_SECURITY_CIPHERS, identifyPeer } from './identity';
import { HandshakeAdmission, armLiveness } from './handshake-admission';
import { type TlsHandle, type TlsPhase1, type TlsPhase2, socketFd, stopReading } from './native';
import { PendingConns, type PendingConn } from './pending-conn';
import {
  CONNECTION_ID_BYTES, FRAME_OPEN, FRAME_TRUST_PUBLISH, FrameReader, ProtocolError, RefusalCode, decodeOpenBody, encodeReply, refusalName,
  type OpenHeader, type ReadResult,
} from './protocol';
import { relayNative, relayStreams } from './relay';
import { DIAL_TIMEOUT_CODE, dial, secondsSince } from './sockets';
import type { NativeOn, TlsFiles } from './tls-native-session';
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

/** First frames a terminus reads: OPEN (a tunnel) or PUBLISH (the trust exchange, trust/hub.ts). */
const FIRST_FRAMES = [FRAME_OPEN, FRAME_TRUST_PUBLISH];

function serverTlsOptions(files: TlsFiles): tls.TlsOptions {
  return { ...files, ciphers: TLS_SECURITY_CIPHERS, minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3', requestCert: true, rejectUnauthorized: true };
}

export class Terminus {
  readonly server: net.Server;
  /** The listener is Node's tls server (mTLS without the native addon). */
  private readonly jsTls: boolean;
  private readonly pending = new PendingConns();
  private readonly admission = new HandshakeAdmission(() => this.ctx.cfg);

  constructor(private readonly ctx: GatewayContext) {
    const { cfg } = ctx;
    this.jsTls = cfg.tls.mode === 'mtls' && !ctx.nativeTls;
    if (this.jsTls) {
      const srv = tls.createServer({
        ...serverTlsOptions(ctx.tlsFiles!), allowHalfOpen: true, handshakeTimeout: cfg.limits.handshakeTimeoutMs, pauseOnConnect: false,
      });
      srv.on('connection', (raw: net.Socket) => this.onConnection(raw));
      srv.on('secureConnection', (ts: tls.TLSSocket) => this.onSecureConnection(ts));
      srv.on('tlsClientError', (e: Error, ts: tls.TLSSocket) => this.onTlsClientError(e, ts));
      this.server = srv;
    } else {
      this.server = net.createServer({ allowHalfOpen: true, noDelay: true, pauseOnConnect: !!ctx.nativeTls });
      this.server.on('connection', (raw: net.Socket) => this.onConnection(raw));
    }
    this.server.on('error', (e) => ctx.log.error({ err: e.message }, 'tunnel listener error'));
  }

  /** New certificate files (reload): Node's tls server uses them for new handshakes. */
  setSecureContext(files: TlsFiles): void {
    if (this.jsTls) (this.server as tls.Server).setSecureContext({ ...files, ciphers: TLS_SECURITY_CIPHERS, minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' });
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
    const p = this.pending.admit(raw, this.jsTls, release);
    // the native session enforces handshakeTimeoutMs itself; a JS deadline must not close an fd a thread uses
    if (ctx.nativeTls) { this.onNative(p); return; }
    p.armDeadline(ctx.cfg.limits.handshakeTimeoutMs, () => this.onDeadline(p));
    if (!this.jsTls) this.onStream(p, raw, undefined);
  }

  private onDeadline(p: PendingConn): void {
    this.ctx.refuse('terminus', 'handshake_timeout');
    if (this.jsTls && !p.secure) this.ctx.metrics.tlsHandshakeFailures.inc({ side: 'terminus' });
    this.ctx.log.info({ from: p.raw.remoteAddress }, 'refused: handshake/header timeout');
    p.settle();
    p.raw.destroy();
  }

  // ------------------------------------------------------------------ Node's tls server

  private onSecureConnection(ts: tls.TLSSocket): void {
    const { ctx } = this;
    const p = this.pending.find(ts);
    if (!p) { ts.destroy(); return; } // its TCP connection is already gone
    p.secure = true;
    const reject = (reason: string) => {
      ctx.metrics.tlsHandshakeFailures.inc({ side: 'terminus' });
      ctx.refuse('terminus', reason);
      p.settle(); ts.destroy(); p.raw.destroy();
    };
    if (!ts.authorized) { reject('tls_unauthorized'); return; }
    const who = identifyPeer(ts.getPeerCertificate(), ctx.cfg);
    if ('error' in who) {
      ctx.log.info({ from: p.raw.remoteAddress, why: who.error }, 'refused peer certificate');
      reject('unknown_peer_certificate');
      return;
    }
    this.onStream(p, ts, who.cluster);
  }

  private onTlsClientError(e: Error, ts: tls.TLSSocket): void {
    const { ctx } = this;
    ctx.metrics.tlsHandshakeFailures.inc({ side: 'terminus' });
    ctx.refuse('terminus', 'tls_handshake');
    const p = this.pending.find(ts);
    ctx.log.info({ from: p?.raw.remoteAddress ?? ts.remoteAddress, err: e.message }, 'TLS handshake failed');
    if (p) { p.settle(); p.raw.destroy(); }
    ts.destroy();
  }

  // ------------------------------------------------------------------ stream paths (plaintext, Node's tls)

  /** Read OPEN from `stream` (the raw socket, or the TLS socket over it), check it, accept or refuse. */
  private onStream(p: PendingConn, stream: net.Socket, certCluster: string | undefined): void {
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
      this.refused(code, why, { conn: idString(connectionId), from: raw.remoteAddress, peer: certCluster, ...extra });
      stream.removeAllListeners('data');
      stream.pause();
      if (!stream.destroyed && stream.writable) {
        stream.end(encodeReply({ status: code, connectionId, reason: why }));
        // always close: do not wait for the peer to cooperate
        setTimeout(() => { stream.destroy(); raw.destroy(); }, 1000).unref();
      } else { stream.destroy(); raw.destroy(); }
    };
    const onData = (chunk: Buffer) => {
      const r = reader.push(chunk);
      if (r.kind === 'more') return;
      if (usePump) stopReading(raw); else stream.pause();
      stream.off('data', onData);
      if (r.kind === 'frame' && r.type === FRAME_TRUST_PUBLISH) {
        const v = ctx.trust.onPublish(r.body, certCluster);
        connectionId = v.connectionId;
        if (v.status !== RefusalCode.ACCEPTED) return refuseWith(v.status, v.reason);
        decided = true;
        p.settle();
        stream.end(encodeReply({ status: RefusalCode.ACCEPTED, connectionId, reason: '' }));
        setTimeout(() => { stream.destroy(); raw.destroy(); }, 1000).unref();
        return;
      }
      const open = decodeOpen(r);
      if ('code' in open) return refuseWith(open.code, open.why);
      connectionId = open.header.connectionId;
      if (open.header.payload === 'splice') return refuseWith(RefusalCode.PAYLOAD_MODE_REFUSED, `payload splice needs tls.mode mtls-splice (this terminus: ${ctx.cfg.tls.mode})`);
      const v = checkOpen(ctx, open.header, certCluster);
      if ('code' in v) return refuseWith(v.code, v.why, { dst: `${open.header.dstHost}:${open.header.dstPort}` });
      decided = true;
      p.settle();
      this.acceptStream(raw, stream, open.header, v.peer, r.kind === 'frame' && r.rest.length ? r.rest : null);
    };
    stream.on('data', onData);
    stream.on('error', () => { if (!decided) { decided = true; p.settle(); } stream.destroy(); raw.destroy(); });
    stream.on('end', () => { if (!decided) refuseWith(RefusalCode.MALFORMED, 'connection closed before a complete header'); });
  }

  /** Accepted so far: dial the destination from our in-cluster address, reply, relay. */
  private acceptStream(raw: net.Socket, stream: net.Socket, h: OpenHeader, peer: PeerConfig, rest: Buffer | null): void {
    const { ctx } = this;
    const usePump = splices(ctx);
    const id = idString(h.connectionId);
    const dstText = `${h.dstHost}:${h.dstPort}`;
    const t = ctx.table.track(id, peer.cluster, 'terminus', [raw], false);
    if (stream !== raw) t.sockets.push(stream);
    this.dialDestination(h).then((dstSock) => {
      t.sockets.push(dstSock);
      dstSock.on('error', noop);
      if (t.finished || stream.destroyed) { t.finish('destroy'); return; }
      stream.write(encodeReply({ status: RefusalCode.ACCEPTED, connectionId: h.connectionId, reason: '' }), (err) => {
        if (err || t.finished) { t.finish('reset'); return; }
        ctx.table.markEstablished(t);
        ctx.log.info({ conn: id, peer: peer.cluster, dst: dstText, data: usePump ? 'splice' : 'stream' }, 'tunnel accepted');
        if (usePump) relayNative(ctx.native!, ctx.log, ctx.cfg.limits.idleTimeoutMs, t, raw, dstSock, rest, null);
        else relayStreams(ctx.log, t, { a: stream, b: dstSock, rawA: raw, rawB: dstSock }, rest, null);
      });
    }, (e: NodeJS.ErrnoException) => {
      const code = this.dialFailed(e, id, peer, dstText);
      if (!stream.destroyed) stream.end(encodeReply({ status: code, connectionId: h.connectionId, reason: e.code ?? e.message }));
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
      sessions.continue(h, encodeReply({ status: code, connectionId, reason: why }), -1, 0);
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
    if (fr.kind === 'frame' && fr.type === FRAME_TRUST_PUBLISH) {
      const v = ctx.trust.onPublish(fr.body, who.cluster);
      if (v.status !== RefusalCode.ACCEPTED) return refuseWith(v.connectionId, v.status, v.reason);
      sessions.continue(h, encodeReply({ status: RefusalCode.ACCEPTED, connectionId: v.connectionId, reason: '' }), -1, 0);
      return undefined;
    }
    const open = decodeOpen(fr);
    if ('code' in open) return refuseWith(Buffer.alloc(CONNECTION_ID_BYTES), open.code, open.why);
    const hd = open.header;
    if (hd.payload === 'splice' && !sessions.spliceCapable) {
      return refuseWith(hd.connectionId, RefusalCode.PAYLOAD_MODE_REFUSED, `payload splice needs tls.mode mtls-splice (this terminus: ${ctx.cfg.tls.mode})`);
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
      sessions.continue(h, reply, socketFd(dstSock), ctx.cfg.limits.idleTimeoutMs, splice);
    }, (e: NodeJS.ErrnoException) => {
      const code = this.dialFailed(e, id, peer, dstText);
      sessions.continue(h, encodeReply({ status: code, connectionId: hd.connectionId, reason: e.code ?? e.message }), -1, 0);
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
