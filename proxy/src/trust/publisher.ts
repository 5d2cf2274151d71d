/**
 * Send one PUBLISH to one peer gateway and read its REPLY, over the same port and with the same mTLS
 * identity check as a tunnel: the server certificate must chain to the fleet CA and name exactly the
 * peer cluster, checked before the bundle is sent.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import { FRAME_REPLY, FrameReader, decodeReplyBody } from '../protocol';
import { peerIdentityUri, parsePeerIdentityUri } from '../config';

export interface PublishTarget {
  readonly host: string;
  readonly port: number;
  readonly cluster: string;
}

export interface PublishContext {
  readonly fleet: string;
  /** TLS material (mtls) or undefined (plaintext). */
  readonly tls?: { ca: Buffer; cert: Buffer; key: Buffer };
  readonly timeoutMs: number;
  readonly headerMaxBytes: number;
}

export interface PublishResult { readonly status: number; readonly reason: string }

function uriOf(cert: tls.PeerCertificate | undefined): string[] {
  return (cert?.subjectaltname ?? '').split(/,\s*/).filter((s) => s.startsWith('URI:')).map((s) => s.slice(4));
}

function connect(ctx: PublishContext, t: PublishTarget): net.Socket {
  if (!ctx.tls) return net.connect({ host: t.host, port: t.port });
  return tls.connect({
    host: t.host, port: t.port, ...ctx.tls, minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3', rejectUnauthorized: true,
    checkServerIdentity: (_h, cert) => {
      const ids = uriOf(cert).map(parsePeerIdentityUri).filter((x) => x && x.fleet === ctx.fleet);
      if (ids.length !== 1 || ids[0]!.cluster !== t.cluster) {
        return new Error(`peer gateway presented ${uriOf(cert).join(' ') || 'no URI SAN'}, expected ${peerIdentityUri(ctx.fleet, t.cluster)}`);
      }
      return undefined;
    },
  });
}

export function publishOnce(ctx: PublishContext, t: PublishTarget, frame: Buffer): Promise<PublishResult> {
  return new Promise((resolve, reject) => {
    const sock = connect(ctx, t);
    const reader = new FrameReader(ctx.headerMaxBytes, FRAME_REPLY);
    let settled = false;
    const end = (e?: Error, r?: PublishResult) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      if (e) reject(e); else resolve(r!);
    };
    const timer = setTimeout(() => end(new Error(`no reply from ${t.cluster} ${t.host}:${t.port} within ${ctx.timeoutMs} ms`)), ctx.timeoutMs);
    sock.once(ctx.tls ? 'secureConnect' : 'connect', () => sock.write(frame));
    sock.on('data', (chunk: Buffer) => {
      const r = reader.push(chunk);
      if (r.kind === 'more') return;
      if (r.kind === 'error') return end(r.error);
      try {
        const reply = decodeReplyBody(r.body);
        end(undefined, { status: reply.status, reason: reply.reason });
      } catch (e) { end(e as Error); }
    });
    sock.on('error', (e) => end(e));
    sock.on('close', () => end(new Error(`connection to ${t.cluster} ${t.host}:${t.port} closed before a reply`)));
  });
}
