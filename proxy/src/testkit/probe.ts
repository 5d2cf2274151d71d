/** A hand-rolled tunnel client for the security tests: TLS (optional) + raw bytes, then read the reply. */
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { FRAME_REPLY, FrameReader, decodeReplyBody, type ReplyHeader } from '../protocol';

export interface ProbeResult { reply?: ReplyHeader; closed: boolean; error?: string; ms: number }

export function probe(port: number, payload: Buffer | ((s: net.Socket) => void), creds?: { cert: string; key: string; ca: string },
  timeoutMs = 8000): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const t0 = Date.now();
    let done = false;
    const reader = new FrameReader(65_543, FRAME_REPLY);
    let reply: ReplyHeader | undefined;
    let error: string | undefined;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true; clearTimeout(timer); s.destroy();
      resolve({ reply, closed, error, ms: Date.now() - t0 });
    };
    // SECLEVEL=0: this attacker's client must be able to offer what the gateway is tested to refuse (an RSA-1024 key:
    // OpenSSL 3.5 under Node 24 refuses to load it at its default level, before a byte is sent)
    const s: net.Socket = creds
      ? tls.connect({
        port, host: '127.0.0.1', ca: fs.readFileSync(creds.ca), cert: fs.readFileSync(creds.cert), key: fs.readFileSync(creds.key),
        checkServerIdentity: () => undefined, minVersion: 'TLSv1.3', ciphers: 'DEFAULT:@SECLEVEL=0',
      })
      : net.connect(port, '127.0.0.1');
    const timer = setTimeout(() => finish(false), timeoutMs);
    s.on(creds ? 'secureConnect' : 'connect', () => { if (typeof payload === 'function') payload(s); else s.write(payload); });
    s.on('data', (d: Buffer) => {
      const r = reader.push(d);
      if (r.kind === 'frame') { try { reply = decodeReplyBody(r.body); } catch (e) { error = (e as Error).message; } }
    });
    s.on('error', (e: NodeJS.ErrnoException) => { error = e.code ?? e.message; });
    s.on('close', () => finish(true));
  });
}
