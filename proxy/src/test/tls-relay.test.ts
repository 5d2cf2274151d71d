/**
 * The native mTLS relay (tlsrelay.c over the buffer BIO of relaybio.c): both directions at full speed at once,
 * and a tunnel whose TLS records are tampered with on the wire, which must end as a reset at both ends and never
 * as a clean end.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startGateway } from '../gateway';
import { configFor, startPair } from '../testkit/gateways';
import { makePki, silent, withTimeout, type Pki } from '../testkit/helpers';

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });

/** Destination that echoes every byte back and ends after the client's FIN. */
async function startEcho(): Promise<{ port: number; close(): Promise<void> }> {
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
function echoRoundTrip(port: number, total: number): Promise<{ sent: string; got: string }> {
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

/**
 * TCP forwarder standing between the two gateways: passes the first `clean` bytes from `from` to `to` as they
 * are, then flips one byte; every other byte is passed unchanged. An error on one leg resets the other.
 */
async function startTamperer(toPort: number, clean: number): Promise<{ port: number; tampered: () => boolean; close(): Promise<void> }> {
  const socks = new Set<net.Socket>();
  let done = false;
  const server = net.createServer((a) => {
    const b = net.connect(toPort, '127.0.0.1');
    for (const s of [a, b]) { socks.add(s); s.on('close', () => socks.delete(s)); }
    let n = 0;
    a.on('data', (d: Buffer) => {
      if (!done && n + d.length > clean) { d = Buffer.from(d); d[clean - n] ^= 0x5a; done = true; }
      n += d.length;
      b.write(d);
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
    tampered: () => done,
    close: () => new Promise<void>((r) => { for (const s of socks) s.destroy(); server.close(() => r()); }),
  };
}

/** The kernel's TCP state (hex, as in /proc/net/tcp) of the IPv4 loopback socket local:remote, or undefined when it
 * is no longer there (a socket that received an RST is closed and unhashed at once). */
function tcpState(localPort: number, remotePort: number): string | undefined {
  const hex = (p: number) => `0100007F:${p.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of fs.readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f[1] === hex(localPort) && f[2] === hex(remotePort)) return f[3];
  }
  return undefined;
}

describe('native mTLS relay', { timeout: 120_000 }, () => {
  let echo: Awaited<ReturnType<typeof startEcho>>;
  after(async () => { await echo?.close(); });

  it('carries 64 MiB both ways at once (an echo), sha256-equal, and half-close', { timeout: 60_000 }, async () => {
    echo = await startEcho();
    const pair = await startPair('mtls', pki, () => ({ host: '127.0.0.1', port: echo.port }));
    try {
      const r = await withTimeout(echoRoundTrip(pair.cfgA.listen!.intercept!.port, 64 << 20), 50_000, 'echo 64 MiB');
      assert.equal(r.got, r.sent, 'the echo equals what was sent');
      assert.ok(r.sent.endsWith(` ${64 << 20}`));
    } finally { await pair.close(); }
  });

  it('a TLS record altered on the wire mid-stream resets both ends (never a clean end)', { timeout: 30_000 }, async () => {
    const ends: string[] = [];
    const dst = net.createServer({ allowHalfOpen: true }, (s) => {
      s.on('data', () => undefined);
      // libuv reports an RST that arrives while data is still queued as an end of stream ('end': it sees POLLHUP
      // after a short read and does not read on to the error). So an 'end' is judged by the kernel: after a FIN the
      // socket is in CLOSE_WAIT (08), after an RST it is gone.
      const [local, remote] = [s.localPort!, s.remotePort!]; // a reset socket no longer has them
      s.on('end', () => ends.push(tcpState(local, remote) === undefined ? 'end after RST' : 'end (FIN)'));
      s.on('error', (e: NodeJS.ErrnoException) => ends.push(e.code ?? e.message));
    });
    await new Promise<void>((r) => dst.listen(0, '127.0.0.1', () => r()));
    const cfgB = await configFor('west', 'east', 1, 'mtls', pki);
    const b = await startGateway(cfgB, { logger: silent, unsafeAllowLoopbackDestinations: true });
    const mitm = await startTamperer(cfgB.listen!.tunnel!.port, 1 << 20); // well past the handshake and header
    const cfgA = await configFor('east', 'west', mitm.port, 'mtls', pki);
    const a = await startGateway(cfgA, { logger: silent, originalDestination: () => ({ host: '127.0.0.1', port: (dst.address() as net.AddressInfo).port }) });
    try {
      const client = await withTimeout(new Promise<string>((resolve) => {
        const c = net.connect({ port: cfgA.listen!.intercept!.port, host: '127.0.0.1', allowHalfOpen: true });
        const buf = crypto.randomBytes(1 << 16);
        c.on('connect', () => {
          const iv = setInterval(() => { if (!c.destroyed && c.writableLength < (1 << 22)) c.write(buf); }, 1);
          c.on('close', () => clearInterval(iv));
        });
        c.on('end', () => resolve('end'));
        c.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
      }), 20_000, 'client end after tampering');
      assert.ok(mitm.tampered(), 'the forwarder altered a byte');
      assert.match(client, /ECONNRESET|EPIPE/, 'the client sees a reset');
      const t0 = Date.now();
      while (ends.length === 0 && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 20));
      assert.equal(ends.length, 1, `one end at the destination: ${ends.join(', ')}`);
      assert.match(ends[0], /^(ECONNRESET|end after RST)$/, 'the destination sees a reset, not a FIN');
    } finally { await a.close(); await b.close(); await mitm.close(); dst.close(); }
  });
});
