/**
 * Send one PUBLISH to one peer gateway and read its REPLY, over the same port and with the same mTLS
 * identity check as a tunnel (identity.ts identifyPeer, the one function every TLS path uses: exactly one
 * canonical URI SAN read from the certificate's DER, a strong key): the server certificate must chain to
 * the fleet CA and name exactly the peer cluster, checked before the bundle is sent.
 */
import * as net from 'node:net';
import * as tls from 'node:tls';
import { FRAME_REPLY, FrameReader, decodeReplyBody } from '../protocol';
import { identifyPeer } from '../identity';

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

function connect(ctx: PublishContext, t: PublishTarget): net.Socket {
  if (!ctx.tls) return net.connect({ host: t.host, port: t.port });
  return tls.connect({
    host: t.host, port: t.port, ...ctx.tls, minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3', rejectUnauthorized: true,
    checkServerIdentity: (_h, cert) => {
      const who = identifyPeer(cert, { fleet: ctx.fleet, peers: [] }, t.cluster);
      return 'error' in who ? new Error(`peer gateway ${t.cluster} ${t.host}:${t.port} refused: ${who.error}`) : undefined;
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
