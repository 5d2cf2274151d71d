/**
 * Loader for the native addon (proxy/native/mmproxy.c, built by `node-gyp rebuild` in `npm run build`).
 *
 * Why an addon: Node has no getsockopt(), so the original destination of a connection that iptables nat
 * REDIRECT sent to the intercept listener (SO_ORIGINAL_DST / IP6T_SO_ORIGINAL_DST) is out of reach from
 * JavaScript; and the plaintext legs of the data path use splice(2) on the addon's epoll threads, which is how the gateway
 * keeps up with HAProxy. The file descriptor of a Node TCP socket is `socket._handle.fd` (Linux, libuv TCP
 * handles; it is -1 for non-TCP handles). This is not a public API, so it is only read here, checked, and the
 * socket is kept paused (never read or written by Node) while the native relay owns the descriptor.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type * as net from 'node:net';

export interface OriginalDst { address: string; port: number; family: 4 | 6 }
export interface PumpResult { aToB: number; bToA: number; reason: 'eof' | 'reset' | 'idle' | 'cancel' | 'error'; side: 'a' | 'b' | ''; errno: number }
export type PumpHandle = { readonly __pump: unique symbol };

/** One peer's bandwidth budget in the addon (budgetCreate), shared by every relay toward that peer. */
export type BudgetHandle = { readonly __budget: unique symbol };
export type TlsCtx = { readonly __tlsctx: unique symbol };
export type TlsHandle = { readonly __tls: unique symbol };
export type TlsPhase1 = { phase: 1; ok: boolean; handshook: boolean; error: string; uris: string[]; frame: Buffer };
export type TlsPhase2 = { phase: 2; tlsToPlain: number; plainToTls: number; reason: PumpResult['reason']; side: 'tls' | 'plain' | ''; errno: number; error: string };

export interface NativeAddon {
  tlsContext(caPem: Buffer, certPem: Buffer, keyPem: Buffer, isServer: boolean): TlsCtx;
  /**
   * `flags` bit 0 (TLS_FLAG_SPLICE_CAPABLE): no read-ahead and the tunnel header kept, so that phase 2 may switch
   * to the authenticated splice at an exact record boundary.
   */
  tlsStart(ctx: TlsCtx, fd: number, isServer: boolean, deadlineMs: number, firstWrite: Buffer | null, headerMax: number,
    expectUri: string | null, cb: (r: TlsPhase1 | TlsPhase2) => void, flags?: number): TlsHandle;
  /**
   * `splice` (splice-capable sessions only): after `reply`, exchange BIND frames bound to this TLS session
   * (exporter over OPEN || REPLY), then relay with splice(2) on the same TCP connection, no second encryption.
   * A missing or wrong BIND ends the session as an error (both sockets reset, `error` starts with "binding:").
   */
  tlsContinue(h: TlsHandle, reply: Buffer | null, relayFd: number, idleMs: number, splice?: boolean, budget?: BudgetHandle | null): void;
  tlsCancel(h: TlsHandle): void;
  tlsStats(h: TlsHandle): [number, number];
  /** Native TLS sessions whose OpenSSL state is still allocated (freed when a session's thread ends, not by GC). */
  tlsLive(): number;
  /** sessions still holding TLS traffic secrets (0 once every session has wiped them, with no garbage collection) */
  tlsSecretsHeld(): number;
  /**
   * Process totals: [sessions relayed on our own TLS records, on OpenSSL's, KeyUpdates received by origins (TLS
   * clients), sent by origins, received by termini (TLS servers), sent by termini].
   */
  tlsRecordStats(): [number, number, number, number, number, number];
  getOriginalDst(fd: number): OriginalDst | null;
  /** `budgetAtoB` / `budgetBtoA`: the peer's bandwidth budget the bytes written in that direction count against. */
  startPump(fdA: number, fdB: number, prefixAtoB: Buffer | null, prefixBtoA: Buffer | null, idleMs: number, cb: (r: PumpResult) => void,
    budgetAtoB?: BudgetHandle | null, budgetBtoA?: BudgetHandle | null): PumpHandle;
  /** A bandwidth budget of `bytesPerSecond` (token bucket, native/budget.c); freed when unreferenced and no relay uses it. */
  budgetCreate(bytesPerSecond: number): BudgetHandle;
  /** Bytes granted so far under a budget. */
  budgetSent(b: BudgetHandle): number;
  pumpStats(h: PumpHandle): [number, number];
  pumpCancel(h: PumpHandle): void;
  /**
   * BENCH ONLY (bench/gw-runner.ts; no config field or CLI flag reaches it): the relay spliced tunnels started from
   * now on get, `pool` (the default: a bounded pool of epoll threads, native/relaypool.c) or `thread` (one thread
   * per tunnel, the relay before the pool, kept so that `npm run bench:concurrency` measures both in one run), and,
   * before the pool's first tunnel, its thread count (0: the default, min(2, CPUs)). No arguments: reads the current choice.
   */
  relayMode(mode?: 'pool' | 'thread', threads?: number): { mode: 'pool' | 'thread'; threads: number };
  /** SO_KEEPALIVE + TCP_KEEPIDLE/KEEPINTVL/KEEPCNT + TCP_USER_TIMEOUT on a TCP socket; 0 or an errno. */
  setTcpLiveness(fd: number, idleMs: number, intervalMs: number, probes: number, userTimeoutMs: number): number;
  /**
   * A TCP socket bound to interface `ifname` (SO_BINDTODEVICE before bind; unprivileged since Linux 5.7) and to
   * host:port, not listening yet (for `server.listen({fd})`): it accepts only connections arriving on `ifname`.
   * Throws an Error with `errno` (ENODEV: no such interface; EPERM: a kernel before 5.7 without CAP_NET_RAW).
   */
  bindDeviceSocket(host: string, port: number, ifname: string): number;
}

/** tlsStart flag: the session may switch to the authenticated splice in phase 2. */
export const TLS_FLAG_SPLICE_CAPABLE = 1;

let cached: NativeAddon | undefined;
let loadError: Error | undefined;

/** Candidate locations: next to the package (lib/.. -> build/Release), or MM_PROXY_ADDON. */
function candidates(): string[] {
  const root = path.resolve(__dirname, '..');
  const list = [path.join(root, 'build', 'Release', 'mmproxy.node')];
  if (process.env.MM_PROXY_ADDON) list.unshift(process.env.MM_PROXY_ADDON);
  return list;
}

/** The addon, or undefined (with the reason in `nativeLoadError()`). */
export function tryLoadNative(): NativeAddon | undefined {
  if (cached || loadError) return cached;
  for (const file of candidates()) {
    if (!fs.existsSync(file)) continue;
    try {
      cached = require(file) as NativeAddon;
      return cached;
    } catch (e) {
      loadError = new Error(`native addon ${file} failed to load: ${(e as Error).message}`);
      return undefined;
    }
  }
  loadError = new Error(
    `native addon mmproxy.node is not built (looked in ${candidates().join(', ')}). ` +
    'Run `npm run build -w proxy` (it runs `node-gyp rebuild`; needs g++, make, python3 and the Node headers).');
  return undefined;
}

export function nativeLoadError(): Error | undefined { tryLoadNative(); return loadError; }

/** The addon, or a clear error saying how to build it. */
export function loadNative(): NativeAddon {
  const n = tryLoadNative();
  if (!n) throw nativeLoadError()!;
  return n;
}

/** The kernel file descriptor of a connected Node TCP socket (Linux). */
export function socketFd(sock: net.Socket): number {
  const h = (sock as unknown as { _handle?: { fd?: number } })._handle;
  const fd = h?.fd;
  if (typeof fd !== 'number' || fd < 0) throw new Error('socket has no usable file descriptor (not a TCP handle?)');
  return fd;
}

/**
 * Stop Node from reading a socket, synchronously and for good (call it from inside a 'data' handler to hand
 * the fd over), and return whatever Node had already buffered (read-ahead) so it can be forwarded first.
 * `_read` is replaced by a no-op because a paused Readable still reads ahead up to its high-water mark
 * (maybeReadMore -> _read -> readStart), which would steal bytes from the native relay.
 */
export function stopReading(sock: net.Socket): Buffer | null {
  sock.pause();
  (sock as unknown as { _read: () => void })._read = () => undefined;
  const h = (sock as unknown as { _handle?: { reading?: boolean; readStop?: () => number } })._handle;
  if (h && h.readStop) { h.reading = false; h.readStop(); }
  if (sock.readableLength > 0) {
    const b = sock.read() as Buffer | null;
    return b && b.length ? b : null;
  }
  return null;
}
