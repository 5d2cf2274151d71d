/**
 * Test helpers for byte-exact tunnels: a destination that echoes, a client that checks the echo, the kernel's view
 * of a socket's end, and a forwarder that tampers with whole TLS records (replay, drop, reorder, cut).
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';

/** Destination that echoes every byte back and ends after the client's FIN. */
export async function startEcho(): Promise<{ port: number; close(): Promise<void> }> {
  const socks = new Set<net.Socket>();
  const server = net.createServer({ allowHalfOpen: true }, (s) => {
    socks.add(s);
    s.on('close', () => socks.delete(s));
    s.on('error', () => undefined);
    s.pipe(s);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () => new Promise<void>((r) => { for (const s of socks) s.destroy(); server.close(() => r()); }),
  };
}

/** Client: writes `total` random bytes while reading the echo; resolves with both hashes once the echo ends. */
export function echoRoundTrip(port: number, total: number): Promise<{ sent: string; got: string }> {
  return new Promise((resolve, reject) => {
    const block = crypto.randomBytes(1 << 20);
    const hs = crypto.createHash('sha256');
    const hg = crypto.createHash('sha256');
    let sent = 0, got = 0;
    const c = net.connect({ port, host: '127.0.0.1', allowHalfOpen: true });
    c.on('error', reject);
    c.on('data', (d) => { hg.update(d); got += d.length; });
    c.on('end', () => { c.end(); resolve({ sent: `${hs.digest('hex')} ${sent}`, got: `${hg.digest('hex')} ${got}` }); });
    const pump = () => {
      while (sent < total) {
        const b = block.subarray(0, Math.min(block.length, total - sent));
        hs.update(b);
        sent += b.length;
        if (!c.write(b)) { c.once('drain', pump); return; }
      }
      c.end();
    };
    c.on('connect', pump);
  });
}

/** The kernel's TCP state (hex, as in /proc/net/tcp) of the IPv4 loopback socket local:remote, or undefined when it
 * is no longer there (a socket that received an RST is closed and unhashed at once). */
export function tcpState(localPort: number, remotePort: number): string | undefined {
  const hex = (p: number) => `0100007F:${p.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1] === hex(localPort) && f[2] === hex(remotePort)) return f[3];
  }
  return undefined;
}


/** What the record forwarder does to the first whole TLS record after `afterBytes` (origin -> terminus). */
export type RecordAttack = 'flip' | 'replay' | 'drop' | 'swap' | 'cut-inside' | 'forge';

/**
 * TCP forwarder between two gateways that reads the origin -> terminus stream as TLS records (5-byte headers, from
 * the first byte of the connection: handshake and application records are framed alike) and, at the first record
 * boundary past `afterBytes`, attacks: flips one byte in a record (flip), sends a record twice (replay), leaves one out (drop), sends two in the
 * other order (swap), sends half a record and then a FIN (cut-inside), or sends a record of random bytes with a
 * valid header (forge). Every other byte passes unchanged; an error on one leg resets the other.
 */
/** what the forwarder sends in place of record `r` (replay, drop, flip, forge; swap and cut are in the forwarder) */
function attacked(r: Buffer, attack: RecordAttack): Buffer[] {
  const copy = Buffer.from(r);
  if (attack === 'flip') copy[copy.length >> 1] ^= 0x5a;
  if (attack === 'forge') crypto.randomFillSync(copy, 5);
  return attack === 'replay' ? [r, r] : attack === 'drop' ? [] : [copy];
}

export async function startRecordMangler(toPort: number, afterBytes: number, attack: RecordAttack):
  Promise<{ port: number; attacked: () => boolean; close(): Promise<void> }> {
  const socks = new Set<net.Socket>();
  let done = false;
  const server = net.createServer((a) => {
    const b = net.connect(toPort, '127.0.0.1');
    for (const s of [a, b]) { socks.add(s); s.on('close', () => socks.delete(s)); }
    let buf = Buffer.alloc(0), passed = 0;
    let held: Buffer | undefined; // swap: the first record, sent after the second
    const recordAt = (): Buffer | undefined => {
      if (buf.length < 5) return undefined;
      const len = 5 + buf.readUInt16BE(3);
      if (buf.length < len) return undefined;
      const r = buf.subarray(0, len);
      buf = buf.subarray(len);
      return r;
    };
    a.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (let r = recordAt(); r; r = recordAt()) {
        passed += r.length;
        if (done || passed < afterBytes) {
          b.write(r);
          if (held) { b.write(held); held = undefined; } // swap: the held record goes after the next one
          continue;
        }
        done = true;
        if (attack === 'cut-inside') { b.end(r.subarray(0, r.length >> 1)); a.removeAllListeners('data'); return; }
        if (attack === 'swap') { held = r; continue; }
        for (const out of attacked(r, attack)) b.write(out);
      }
    });
    b.on('data', (d: Buffer) => a.write(d));
    a.on('end', () => b.end());
    b.on('end', () => a.end());
    a.on('error', () => b.resetAndDestroy());
    b.on('error', () => a.resetAndDestroy());
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    attacked: () => done,
    close: () => new Promise<void>((r) => { for (const s of socks) s.destroy(); server.close(() => r()); }),
  };
}
