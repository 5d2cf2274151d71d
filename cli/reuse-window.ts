/**
 * Values reused for a window of time, keyed by what was read (watch-moves' meter: one read per URL per
 * interval). An entry older than the window is never reused, so it is dropped at the next `get`: the map holds
 * at most the distinct keys read within one window, however long the watch runs and however many keys it
 * sees over time (a VMI moving from node to node reads a new pod list each time).
 */
export class ReuseWindow<T> {
  /** In read order (a key read again is moved to the end), so the oldest entries are at the front. */
  private readonly entries = new Map<string, { at: number; value: T }>();

  constructor(private readonly windowMs: number) {}

  /** The value read for `key` less than the window ago, else `load()`'s (kept from `now`). */
  get(key: string, now: number, load: () => T): T {
    this.dropStale(now);
    const hit = this.entries.get(key);
    if (hit && this.fresh(hit.at, now)) return hit.value;
    const value = load();
    this.entries.delete(key);
    this.entries.set(key, { at: now, value });
    return value;
  }

  /** How many values are held (at most the distinct keys read within one window). */
  get size(): number { return this.entries.size; }

  /** Drop the entries that can no longer be reused, from the front (the oldest) to the first fresh one. */
  private dropStale(now: number): void {
    for (const [key, e] of this.entries) {
      if (this.fresh(e.at, now)) break;
      this.entries.delete(key);
    }
  }

  /** Reusable at `now`: younger than the window; one from the future (a clock stepped back) is not. */
  private fresh(at: number, now: number): boolean { return at <= now && now - at < this.windowMs; }
}
