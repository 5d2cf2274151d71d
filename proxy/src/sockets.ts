/** TCP helpers of the gateway: listen, dial with a deadline, reset a connection. */
import * as fs from 'node:fs';
import * as net from 'node:net';
import type { NativeAddon } from './native';

/** Wall-clock milliseconds (tunnel start, last activity). */
export const nowMs = (): number => Date.now();

/** Seconds elapsed since `t0` (a `process.hrtime.bigint()` reading). */
export function secondsSince(t0: bigint): number {
  return Number(process.hrtime.bigint() - t0) / 1e9;
}

export function listen(server: net.Server, host: string, port: number): Promise<net.AddressInfo> {
  return new Promise((resolve, reject) => {
    const onErr = (e: Error) => reject(e);
    server.once('error', onErr);
    server.listen({ host, port, backlog: 4096 }, () => {
      server.off('error', onErr);
      resolve(server.address() as net.AddressInfo);
    });
  });
}

/** What a listener binds: an address, and the one interface that serves it (issue 49). */
export interface ListenSpec { host: string; port: number; interface?: string }

const BIND_HINTS: Record<number, string> = {
  1: 'SO_BINDTODEVICE without privileges needs Linux 5.7 or later', // EPERM
  19: 'no such interface in this network namespace (is the network attached?)', // ENODEV
  98: 'the port is in use', // EADDRINUSE
  99: 'the address is not on this host', // EADDRNOTAVAIL
};

/**
 * Listen on `spec`: with `interface`, on a socket bound to that interface (the addon's SO_BINDTODEVICE), so a
 * connection arriving on any other interface is refused by the kernel, whatever its destination; without, on the
 * address alone. `what` names the config field in errors.
 */
export async function listenBound(server: net.Server, spec: ListenSpec, native: NativeAddon | undefined, what: string): Promise<net.AddressInfo> {
  if (!spec.interface) return listen(server, spec.host, spec.port);
  if (!native) throw new Error(`${what}.interface '${spec.interface}': binding a listener to an interface needs the native addon (SO_BINDTODEVICE)`);
  let fd: number;
  try { fd = native.bindDeviceSocket(spec.host, spec.port, spec.interface); } catch (e) {
    const errno = (e as { errno?: number }).errno ?? 0;
    throw new Error(`${what}: cannot bind ${spec.host}:${spec.port} on interface ${spec.interface}: ${(e as Error).message}${BIND_HINTS[errno] ? ` (${BIND_HINTS[errno]})` : ''}`);
  }
  try {
    return await new Promise<net.AddressInfo>((resolve, reject) => {
      const onErr = (e: Error) => reject(e);
      server.once('error', onErr);
      server.listen({ fd, backlog: 4096 }, () => { server.off('error', onErr); resolve(server.address() as net.AddressInfo); });
    });
  } catch (e) {
    if (!server.listening) { try { fs.closeSync(fd); } catch { /* taken by the handle */ } }
    throw new Error(`${what}: cannot listen on ${spec.host}:${spec.port} on interface ${spec.interface}: ${(e as Error).message}`);
  }
}

/** The error code a dial that ran out of time rejects with. */
export const DIAL_TIMEOUT_CODE = 'ETIMEDOUT_DIAL';

/** Connect with a deadline. `paused`: the socket must never be read by Node (native relay takes its fd). */
export function dial(host: string, port: number, timeoutMs: number, localAddress?: string, paused = false): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port, localAddress, allowHalfOpen: true, noDelay: true });
    if (paused) s.pause();
    const t = setTimeout(() => {
      s.destroy(); // still connecting: closing drops the half-open connection (no FIN is ever sent)
      reject(Object.assign(new Error(`connect ${host}:${port} timed out after ${timeoutMs} ms`), { code: DIAL_TIMEOUT_CODE }));
    }, timeoutMs);
    s.once('connect', () => { clearTimeout(t); s.removeAllListeners('error'); resolve(s); });
    s.once('error', (e) => { clearTimeout(t); s.destroy(); reject(e); });
  });
}

/** Close a TCP connection with a reset (RST) when the socket allows it, else just destroy it. */
export function resetOrDestroy(s: net.Socket): void {
  try { s.resetAndDestroy(); } catch { s.destroy(); }
}
