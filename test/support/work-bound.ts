/**
 * Waits bounded by the work, not by a quiet machine (issue 53 item 5). A fixed wall bound on work that needs CPU
 * (a controller starting, a reconcile) fails on a loaded machine while the work is still going on. `untilQuiet`
 * waits while the work is seen to move: it fails once nothing moved for `quietMs` (what `progress` returns, e.g. the
 * size of the processes' logs or a count of watch events, stayed the same), and after `capMs` whatever moved, so
 * every loop stays bounded. On a quiet machine a stuck wait fails as soon as a fixed bound of `quietMs` would.
 */
import * as fs from 'node:fs';

export interface QuietBound {
  /** Fail when `progress` returned the same value for this long. */
  readonly quietMs: number;
  /** Fail after this long in any case. */
  readonly capMs: number;
  /** What moves while the work goes on; compared with `===` (return a number or a string). */
  readonly progress: () => unknown;
  /** A reason to fail at once (a process that exited), or undefined. */
  readonly dead?: () => string | undefined;
  /** Poll period. [250 ms] */
  readonly everyMs?: number;
}

/** The summed size of `files` (the missing ones count 0): a log that grows is a process at work. */
export const sizeOf = (files: readonly string[]): number => files.reduce((n, f) => n + (fs.existsSync(f) ? fs.statSync(f).size : 0), 0);

/**
 * Polls `probe` until it resolves a value (a probe that throws counts as "not yet"); throws `what: ...` with the
 * reason it gave up (see the header) and the probe's last error.
 */
export async function untilQuiet<T>(what: string, probe: () => Promise<T | undefined>, b: QuietBound): Promise<T> {
  const t0 = Date.now();
  let last = b.progress();
  let movedAt = t0;
  let lastError = '';
  for (;;) {
    const v = await probe().catch((e: unknown) => { lastError = `; the probe's last error: ${(e as Error)?.message ?? e}`; return undefined; });
    if (v !== undefined) return v;
    const now = Date.now();
    const p = b.progress();
    if (p !== last) { last = p; movedAt = now; }
    const dead = b.dead?.();
    if (dead) throw new Error(`${what}: ${dead}`);
    if (now - movedAt > b.quietMs) throw new Error(`${what}: not after ${now - t0} ms, nothing moved for the last ${b.quietMs} ms${lastError}`);
    if (now - t0 > b.capMs) throw new Error(`${what}: not after ${now - t0} ms (the cap), though the work was still moving${lastError}`);
    await new Promise((r) => setTimeout(r, b.everyMs ?? 250));
  }
}
