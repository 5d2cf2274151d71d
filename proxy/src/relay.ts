/**
 * The relays that carry a plaintext tunnel's bytes once both legs are connected: the native splice relay (the
 * addon's epoll pool, native/relaypool.c) and the stream relay (Node streams, when the addon is not in use). The native TLS
 * relay lives in the addon's TLS session (see tls-native-session.ts); mTLS has no JavaScript relay.
 */
import type * as net from 'node:net';
import type { Logger } from 'pino';
import { type BudgetHandle, type NativeAddon, type PumpResult, socketFd, stopReading } from './native';
import { nowMs, resetOrDestroy } from './sockets';
import type { Tunnel } from './tunnel-table';

const join = (x: Buffer | null, y: Buffer | null) => (x && y ? Buffer.concat([x, y]) : x ?? y);

/**
 * Native splice relay between two plain sockets (both already paused). `budget`: the peer's bandwidth budget, for
 * the direction that writes to the tunnel socket (a to b when `t.aToBIsTx`).
 */
export function relayNative(native: NativeAddon, log: Logger, idleMs: number, t: Tunnel, a: net.Socket, b: net.Socket,
  prefixAtoB: Buffer | null, prefixBtoA: Buffer | null, budget: BudgetHandle | null = null): void {
  // bytes Node read ahead before the hand-over come after the header leftovers and before the kernel's
  prefixAtoB = join(prefixAtoB, stopReading(a));
  prefixBtoA = join(prefixBtoA, stopReading(b));
  for (const s of [a, b]) s.on('error', () => { /* owned by the pump; errors surface there */ });
  t.pump = native.startPump(socketFd(a), socketFd(b), prefixAtoB, prefixBtoA, idleMs, (r: PumpResult) => {
    t.bytes = t.aToBIsTx ? [r.aToB, r.bToA] : [r.bToA, r.aToB];
    if (r.reason === 'idle') log.info({ conn: t.id }, 'idle timeout');
    if (r.reason === 'reset' || r.reason === 'error') log.info({ conn: t.id, side: r.side, errno: r.errno }, 'relay ended by a reset/error');
    // the pump already armed SO_LINGER{1,0} on the surviving socket after a reset; reset explicitly too
    t.finish(r.reason === 'eof' ? 'destroy' : 'reset'); // only a clean end is not a reset
  }, t.aToBIsTx ? budget : null, t.aToBIsTx ? null : budget);
}

/**
 * Stream relay between two plain TCP sockets. Backpressure: a source is paused while its destination's write
 * buffer is above the high-water mark. Half-close: a FIN on one side becomes end() on the other. Reset: an
 * error on one side resets the other.
 */
export function relayStreams(log: Logger, t: Tunnel, a: net.Socket, b: net.Socket, prefixAtoB: Buffer | null, prefixBtoA: Buffer | null): void {
  const ended = { count: 0 };
  const txIndex = (aToB: boolean) => (aToB === t.aToBIsTx ? 0 : 1);
  if (prefixAtoB?.length) { t.bytes[txIndex(true)] += prefixAtoB.length; b.write(prefixAtoB); }
  if (prefixBtoA?.length) { t.bytes[txIndex(false)] += prefixBtoA.length; a.write(prefixBtoA); }
  pipeOneWay(t, a, b, txIndex(true), ended);
  pipeOneWay(t, b, a, txIndex(false), ended);
  const onError = (who: 'a' | 'b') => (e: NodeJS.ErrnoException) => {
    if (t.finished) return;
    log.info({ conn: t.id, side: who, err: e.code ?? e.message }, 'relay ended by an error');
    resetOrDestroy(who === 'a' ? b : a); // the reset propagates as a reset
    t.finish('reset');
  };
  a.on('error', onError('a'));
  b.on('error', onError('b'));
  const onClose = () => { if (!t.finished && ended.count < 2) setImmediate(() => t.finish('reset')); }; // cut before both ends
  a.on('close', onClose);
  b.on('close', onClose);
  a.resume();
  b.resume();
}

/** One direction of a stream relay: `src` to `dst`, counted in `t.bytes[k]`; `ended` counts finished directions. */
function pipeOneWay(t: Tunnel, src: net.Socket, dst: net.Socket, k: number, ended: { count: number }): void {
  let corked = false;
  const uncork = () => { corked = false; dst.uncork(); };
  src.on('data', (chunk: Buffer) => {
    t.bytes[k] += chunk.length;
    t.lastActivity = nowMs();
    // batch the chunks of one read into one writev
    if (!corked) { corked = true; dst.cork(); process.nextTick(uncork); }
    if (!dst.write(chunk)) {
      src.pause();
      dst.once('drain', () => src.resume());
    }
  });
  const halfClose = () => {
    dst.end();
    if (++ended.count === 2) {
      // both directions finished: close once the last writes are flushed
      const done = () => t.finish('normal');
      if (dst.writableFinished) done(); else dst.once('finish', done);
    }
  };
  src.on('end', () => {
    // 'end' is not proof of a FIN: when a reset arrives behind queued data, libuv reads the data and reports EOF
    // without reading the error (its POLLHUP short-circuit), about one reset in ten under load. An empty write
    // asks the kernel before the FIN is passed on: it fails (ECONNRESET; 'error' then resets the other side)
    // after a reset, and succeeds after a real FIN. Our own FIN already sent to src: nothing left to ask with.
    if (!src.writable) { halfClose(); return; }
    src.write(Buffer.alloc(0), (e) => { if (!e && !t.finished) halfClose(); });
  });
}
