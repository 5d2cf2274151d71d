/**
 * Progress for long runs (1000-cluster fleets): one updating line on a terminal, nothing in CI or
 * when stderr is a pipe or file. Pure apart from writing to the given stream.
 */

export interface ProgressStream {
  readonly isTTY?: boolean;
  write(s: string): unknown;
}

export interface ProgressOptions {
  /** @default process.stderr */
  readonly stream?: ProgressStream;
  /** @default process.env */
  readonly env?: Readonly<Record<string, string | undefined>>;
  /** Show nothing below this many steps. @default 50 */
  readonly minTotal?: number;
  /** Milliseconds between redraws. @default 100 */
  readonly intervalMs?: number;
  /** @default Date.now */
  readonly now?: () => number;
}

export interface Progress {
  /** Whether anything is drawn at all. */
  readonly active: boolean;
  update(done: number, total: number): void;
  /** Clear the line. */
  done(): void;
}

/** True when progress may be drawn: a TTY, and not CI (any non-empty CI other than "false"/"0"). */
export function progressEnabled(stream: ProgressStream, env: Readonly<Record<string, string | undefined>>): boolean {
  const ci = env.CI;
  const inCi = ci !== undefined && ci !== '' && ci !== 'false' && ci !== '0';
  return stream.isTTY === true && !inCi && env.TERM !== 'dumb';
}

export function createProgress(label: string, opts: ProgressOptions = {}): Progress {
  const stream = opts.stream ?? process.stderr;
  const env = opts.env ?? process.env;
  const active = progressEnabled(stream, env);
  const minTotal = opts.minTotal ?? 50;
  const interval = opts.intervalMs ?? 100;
  const now = opts.now ?? Date.now;
  let last = -Infinity;
  let drawn = false;
  return {
    active,
    update(done: number, total: number): void {
      if (!active || total < minTotal) return;
      const t = now();
      if (done < total && t - last < interval) return;
      last = t;
      const pct = Math.floor((done / total) * 100);
      stream.write(`\r\x1b[2K${label} ${done}/${total} (${pct}%)`);
      drawn = true;
    },
    done(): void {
      if (drawn) stream.write('\r\x1b[2K');
      drawn = false;
    },
  };
}
