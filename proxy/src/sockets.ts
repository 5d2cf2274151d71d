/** TCP helpers of the gateway: listen, dial with a deadline, reset a connection. */
import * as net from 'node:net';

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
