/**
 * The allocation rule of every address the planner hands out: keep what the ledger has, then take the
 * lowest free. Pure, no cdk8s import.
 */
import { Family, Interval, parseAddr, parsePoolItem } from '../base/ip';

/** The addresses of one network that members may hold: usable ones, minus those already claimed. */
export class AddressPool {
  private readonly used = new Set<bigint>();
  private i = 0;
  private next: bigint | undefined;

  constructor(private readonly usable: readonly Interval[]) {
    this.next = usable[0]?.start;
  }

  /** Claim an address the ledger names, when it is usable and nobody holds it yet. */
  keep(v: bigint | undefined): bigint | undefined {
    if (v === undefined || this.used.has(v) || !this.usable.some((iv) => iv.start <= v && v <= iv.end)) return undefined;
    this.used.add(v);
    return v;
  }

  /** Never hand this address out (quarantined: released by a member that may still hold it). */
  block(v: bigint): void {
    this.used.add(v);
  }

  /** The lowest free address (ascending: call after every `keep`), or undefined when none is left. */
  take(): bigint | undefined {
    while (this.i < this.usable.length) {
      const iv = this.usable[this.i];
      if (this.next === undefined || this.next > iv.end) {
        this.i++;
        this.next = this.usable[this.i]?.start;
        continue;
      }
      const v = this.next;
      this.next = v + 1n;
      if (this.used.has(v)) continue;
      this.used.add(v);
      return v;
    }
    return undefined;
  }
}

/**
 * What one member asks of a pool: `want` addresses, and the ones the ledger recorded for it. By slot
 * (gateway replicas: replica i keeps only its own ledger entry) or as a set (a whereabouts slice keeps
 * whichever of its recorded addresses are still usable, up to `want`).
 */
export interface AddressRequest {
  readonly want: number;
  readonly ledger: Iterable<bigint | undefined>;
  readonly bySlot: boolean;
}

/**
 * Keep what the ledger has, then take the lowest free. Every request keeps its ledger addresses
 * first, so a new member never takes an address a surviving member holds; then the `blocked` addresses
 * are set aside; then the empty slots take the lowest free addresses, in request order. One array per request; undefined where the pool ran out.
 */
export function keepThenTake(pool: AddressPool, requests: readonly AddressRequest[], blocked: Iterable<bigint> = []): (bigint | undefined)[][] {
  const slots = requests.map((r) => {
    const got: (bigint | undefined)[] = new Array(r.want).fill(undefined);
    let n = 0;
    for (const v of r.ledger) {
      if (n >= r.want) break;
      const kept = pool.keep(v);
      if (r.bySlot) got[n++] = kept;
      else if (kept !== undefined) got[n++] = kept;
    }
    return got;
  });
  // after the keep phase: what was released (or held before) is never handed to a new member
  for (const v of blocked) pool.block(v);
  for (const got of slots) for (let i = 0; i < got.length; i++) if (got[i] === undefined) got[i] = pool.take();
  return slots;
}

/** The values of a ledger's address list (`a`, `a-b`, CIDR) of one family, lazily. */
export function* ledgerValues(items: readonly string[] | undefined, family: Family): Generator<bigint> {
  for (const item of items ?? []) {
    const r = parsePoolItem(item);
    if (!r.ok || r.interval.family !== family) continue;
    for (let v = r.interval.start; v <= r.interval.end; v++) yield v;
  }
}

/** One address the ledger recorded, when it parses and is of the family. */
export function ledgerAddr(text: string | undefined, family: Family): bigint | undefined {
  const a = text === undefined ? undefined : parseAddr(text);
  return a && a.family === family ? a.value : undefined;
}

/** The quarantined addresses of one family (`family:value` keys). */
export const keysOf = (keys: ReadonlySet<string>, family: Family): bigint[] =>
  [...keys].filter((k) => k.startsWith(`${family}:`)).map((k) => BigInt(k.slice(2)));
