/**
 * The origin side of a tunnel connection's first exchange, after the TCP connect: mTLS in the addon's thread
 * (handshake, the peer's identity, the first frame, the REPLY) or, in plaintext mode, the first frame and the
 * REPLY on TCP. The origin (origin.ts) sends OPEN through it; the admin `/probe` (peer-probe.ts) sends PROBE
 * through the very same code, so a probe that passes has passed the data path's handshake and identity checks.
 */
import type * as net from 'node:net';
import { peerIdentityUri, type PeerConfig } from './config';
import type { GatewayContext } from './context';
import { identifyPeer } from './identity';
import { type TlsHandle, stopReading } from './native';
import { FRAME_REPLY, FrameReader, RefusalCode, decodeReplyBody, refusalName } from './protocol';
import type { NativeOn } from './tls-native-session';

/** `refusal`: the peer's REPLY status; `tlsFailure`: the TLS handshake or the peer's identity failed. */
export type Refusal = Error & { refusal?: number; tlsFailure?: boolean };
/** A connection to a peer gateway after an accepting REPLY; `tls` when the native session carries it (mTLS). */
export type Opened = { raw: net.Socket; rest: Buffer; tls?: { h: TlsHandle; on: NativeOn; splice: boolean } };

/** A REPLY frame checked against the first frame we sent: the error to fail with, or undefined when accepted. */
function replyError(body: Buffer, connectionId: Buffer): Refusal | undefined {
  let reply;
  try { reply = decodeReplyBody(body); } catch (e) { return e as Error; }
  if (!reply.connectionId.equals(connectionId)) return new Error('reply for another connection id');
  if (reply.status !== RefusalCode.ACCEPTED) {
    return Object.assign(new Error(`peer refused: ${refusalName(reply.status)} (${reply.reason})`), { refusal: reply.status });
  }
  return undefined;
}

/**
 * Native mTLS: handshake, identity (exactly `peer`'s), `first` and the REPLY run in the addon's thread. `signal`
 * aborting cancels the session (its thread then reports, and this rejects).
 */
export function handshakeNative(
  ctx: GatewayContext, raw: net.Socket, peer: PeerConfig, first: Buffer, connectionId: Buffer, splice: boolean, signal?: AbortSignal,
): Promise<Opened> {
  const { cfg } = ctx;
  const sessions = ctx.nativeTls!;
  return new Promise<Opened>((resolve, reject) => {
    const abort = () => sessions.cancel(h);
    const on: NativeOn = {
      p1: (r) => {
        signal?.removeEventListener('abort', abort);
        const fail = (e: Error, tlsFailure = false) => {
          if (tlsFailure) ctx.metrics.tlsHandshakeFailures.inc({ side: 'origin' });
          on.p2 = () => raw.destroy();
          sessions.cancel(h);
          reject(tlsFailure ? Object.assign(e, { tlsFailure }) : e);
        };
        if (signal?.aborted) return fail(new Error(String(signal.reason ?? 'aborted')));
        if (!r.handshook) return fail(new Error(r.error || 'TLS handshake failed'), true);
        const who = identifyPeer(r.uris, cfg, peer.cluster);
        if ('error' in who) return fail(new Error(who.error), true);
        const fr = new FrameReader(cfg.limits.headerMaxBytes, FRAME_REPLY).push(r.frame);
        if (fr.kind !== 'frame') return fail(fr.kind === 'error' ? fr.error : new Error(r.error || 'peer closed before replying'));
        const err = replyError(fr.body, connectionId);
        if (err) return fail(err);
        resolve({ raw, rest: fr.rest, tls: { h, on, splice } });
      },
      p2: () => raw.destroy(),
    };
    const h = sessions.start(raw, false, first, peerIdentityUri(cfg.fleet, peer.cluster), cfg.limits, on);
    signal?.addEventListener('abort', abort, { once: true });
  });
}

/** Plaintext (mTLS runs in the addon only): send `first`, read REPLY, within the handshake deadline (or until `signal`). */
export function handshakePlain(
  ctx: GatewayContext, raw: net.Socket, first: Buffer, connectionId: Buffer, usePump: boolean, signal?: AbortSignal,
): Promise<Opened> {
  const { cfg } = ctx;
  return new Promise<Opened>((resolve, reject) => {
    let settled = false;
    const abort = () => fail(new Error(String(signal?.reason ?? 'aborted')));
    const fail = (e: Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', abort);
      raw.destroy();
      reject(e);
    };
    const timer = setTimeout(() => fail(new Error('peer handshake timed out')), cfg.limits.handshakeTimeoutMs);
    const reader = new FrameReader(cfg.limits.headerMaxBytes, FRAME_REPLY);
    const onData = (chunk: Buffer) => {
      const r = reader.push(chunk);
      if (r.kind === 'more') return;
      if (usePump) stopReading(raw); else raw.pause();
      raw.off('data', onData);
      if (r.kind === 'error') return fail(r.error);
      const err = replyError(r.body, connectionId);
      if (err) return fail(err);
      settled = true;
      clearTimeout(timer);
      signal?.removeEventListener('abort', abort);
      raw.removeListener('error', fail);
      resolve({ raw, rest: r.rest });
    };
    signal?.addEventListener('abort', abort, { once: true });
    raw.on('error', fail);
    raw.on('close', () => fail(new Error('peer closed the connection during the handshake')));
    raw.on('data', onData);
    raw.write(first);
  });
}
