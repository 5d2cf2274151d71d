/**
 * IPv4/IPv6 address arithmetic for the planner. Parsing and formatting come from ipaddr.js (the
 * maintained library of the field); arithmetic is on BigInt so IPv6 /64s are as cheap as IPv4 /24s.
 * Pure functions, no I/O.
 */
import * as ipaddr from 'ipaddr.js';
import { deepFreeze } from './json';

export type Family = 4 | 6;

/** One address as a number plus its family. */
export interface Addr {
  readonly family: Family;
  readonly value: bigint;
}

/** An inclusive interval of addresses of one family. */
export interface Interval {
  readonly family: Family;
  readonly start: bigint;
  readonly end: bigint;
}

/** A network prefix (masked). */
export interface Cidr extends Interval {
  readonly prefix: number;
}

export const bits = (f: Family): number => (f === 4 ? 32 : 128);

/**
 * `f` with its results remembered by argument: a fleet names the same few thousand addresses and CIDRs over
 * and over (planning, its checks, every cluster's configs), and ipaddr.js parses each anew. Results are
 * frozen (they are shared); the memory is bounded (cleared past 50 000 entries).
 */
function remembered<R>(f: (text: string) => R): (text: string) => R {
  const memo = new Map<string, R>();
  return (text) => {
    let r = memo.get(text);
    if (r === undefined) {
      if (memo.size >= 50_000) memo.clear();
      r = deepFreeze(f(text));
      memo.set(text, r);
    }
    return r;
  };
}

/** Parse an address; undefined when it is not an IPv4 or IPv6 literal. */
export const parseAddr = remembered(parseAddrText);

function parseAddrText(text: string): Addr | undefined {
  const s = text.trim();
  // a zone id (fe80::1%eth0) means nothing off its host: refused, never dropped silently
  if (s.includes('%')) return undefined;
  if (ipaddr.IPv4.isValidFourPartDecimal(s)) {
    const b = ipaddr.IPv4.parse(s).toByteArray();
    return { family: 4, value: bytesToBig(b) };
  }
  if (!s.includes(':') || !ipaddr.IPv6.isValid(s)) return undefined;
  const v6 = ipaddr.IPv6.parse(s);
  if (v6.isIPv4MappedAddress()) return undefined;
  return { family: 6, value: bytesToBig(v6.toByteArray()) };
}

function bytesToBig(b: number[]): bigint {
  let v = 0n;
  for (const x of b) v = (v << 8n) | BigInt(x);
  return v;
}

/** Canonical text of an address (IPv6 compressed, RFC 5952). */
export function formatAddr(a: Addr): string {
  if (a.family === 4) { // dotted decimal, as ipaddr.js writes it, without its byte arrays
    const v = Number(a.value);
    return `${v >>> 24}.${(v >>> 16) & 255}.${(v >>> 8) & 255}.${v & 255}`;
  }
  const n = 16;
  const bytes: number[] = [];
  let v = a.value;
  for (let i = 0; i < n; i++) {
    bytes.unshift(Number(v & 0xffn));
    v >>= 8n;
  }
  return (ipaddr.fromByteArray(bytes) as ipaddr.IPv6).toRFC5952String();
}

export const addr = (family: Family, value: bigint): Addr => ({ family, value });

export function mask(family: Family, prefix: number): bigint {
  const total = bits(family);
  return ((1n << BigInt(total)) - 1n) ^ ((1n << BigInt(total - prefix)) - 1n);
}

/** A CIDR written with host bits: the address as given, and the network it lies in. */
export interface HostBits {
  readonly given: Addr;
  readonly masked: Cidr;
}

export type CidrParse =
  | { ok: true; cidr: Cidr }
  | { ok: false; reason: 'syntax' | 'prefix' | 'unmasked'; suggestion?: string; hostBits?: HostBits; family?: Family };

/** Parse `a.b.c.d/n` or `x::/n`. Unmasked input (host bits set) is refused with the masked suggestion. */
export const parseCidr = remembered(parseCidrText);

function parseCidrText(text: string): CidrParse {
  const m = /^([^/\s]+)\/(\d{1,3})$/.exec(text.trim());
  if (!m) return { ok: false, reason: 'syntax' };
  const a = parseAddr(m[1]);
  if (!a) return { ok: false, reason: 'syntax' };
  const prefix = Number(m[2]);
  if (prefix > bits(a.family)) return { ok: false, reason: 'prefix', family: a.family };
  const start = a.value & mask(a.family, prefix);
  if (start !== a.value) {
    const masked = cidrOf(a.family, start, prefix);
    return { ok: false, reason: 'unmasked', suggestion: formatCidr(masked), hostBits: { given: a, masked }, family: a.family };
  }
  return { ok: true, cidr: cidrOf(a.family, start, prefix) };
}

export function cidrOf(family: Family, start: bigint, prefix: number): Cidr {
  const size = 1n << BigInt(bits(family) - prefix);
  return { family, start, end: start + size - 1n, prefix };
}

export function formatCidr(c: Cidr): string {
  return `${formatAddr(addr(c.family, c.start))}/${c.prefix}`;
}

const size = (i: Interval): bigint => i.end - i.start + 1n;

export const contains = (outer: Interval, inner: Interval): boolean =>
  outer.family === inner.family && outer.start <= inner.start && inner.end <= outer.end;

export const containsAddr = (i: Interval, a: Addr): boolean =>
  i.family === a.family && i.start <= a.value && a.value <= i.end;

export const overlaps = (a: Interval, b: Interval): boolean =>
  a.family === b.family && a.start <= b.end && b.start <= a.end;

/** Sort and merge touching/overlapping intervals of one family. */
export function mergeIntervals(list: readonly Interval[]): Interval[] {
  const sorted = [...list].sort((x, y) => (x.family - y.family) || (x.start < y.start ? -1 : x.start > y.start ? 1 : 0));
  const out: Interval[] = [];
  for (const i of sorted) {
    const last = out[out.length - 1];
    if (last && last.family === i.family && i.start <= last.end + 1n) {
      if (i.end > last.end) out[out.length - 1] = { ...last, end: i.end };
    } else {
      out.push({ family: i.family, start: i.start, end: i.end });
    }
  }
  return out;
}

/** `a` minus every interval of `cut`. */
export function subtractIntervals(a: readonly Interval[], cut: readonly Interval[]): Interval[] {
  let cur = mergeIntervals(a);
  for (const c of mergeIntervals(cut)) {
    const next: Interval[] = [];
    for (const i of cur) {
      if (!overlaps(i, c)) { next.push(i); continue; }
      if (i.start < c.start) next.push({ family: i.family, start: i.start, end: c.start - 1n });
      if (i.end > c.end) next.push({ family: i.family, start: c.end + 1n, end: i.end });
    }
    cur = next;
  }
  return cur;
}

export const countIntervals = (list: readonly Interval[]): bigint => list.reduce((n, i) => n + size(i), 0n);

/** The smallest set of CIDRs that covers exactly the interval. */
export function intervalToCidrs(i: Interval): Cidr[] {
  const out: Cidr[] = [];
  const total = bits(i.family);
  let start = i.start;
  while (start <= i.end) {
    let prefix = total;
    // grow the block while aligned and inside the interval
    while (prefix > 0) {
      const p = prefix - 1;
      const blockSize = 1n << BigInt(total - p);
      if ((start & (blockSize - 1n)) !== 0n || start + blockSize - 1n > i.end) break;
      prefix = p;
    }
    const c = cidrOf(i.family, start, prefix);
    out.push(c);
    start = c.end + 1n;
  }
  return out;
}

/** Exact minimal CIDR cover of a set of CIDRs (siblings merged). */
export function aggregateCidrs(list: readonly Cidr[]): Cidr[] {
  return mergeIntervals(list).flatMap(intervalToCidrs);
}

export type RangeParse =
  | { ok: true; interval: Interval; form: 'cidr' | 'range' | 'single' }
  /** `family`: the family the text is written in, where it shows one (a CIDR with host bits, a reversed range). */
  | { ok: false; reason: string; suggestion?: string; hostBits?: HostBits; family?: Family };

/** Parse a pool item: a CIDR, an `a-b` range (inclusive), or a single address. */
export function parsePoolItem(text: string): RangeParse {
  const s = text.trim();
  if (s.includes('/')) {
    const c = parseCidr(s);
    if (c.ok) return { ok: true, interval: c.cidr, form: 'cidr' };
    if (c.reason === 'unmasked') return { ok: false, reason: 'has host bits set', suggestion: c.suggestion, hostBits: c.hostBits, family: c.family };
    if (c.reason === 'prefix') return { ok: false, reason: 'prefix length is too long for the address family', family: c.family };
    return { ok: false, reason: 'is not a CIDR' };
  }
  const dash = s.indexOf('-');
  if (dash > 0) {
    const a = parseAddr(s.slice(0, dash));
    const b = parseAddr(s.slice(dash + 1));
    if (!a || !b) return { ok: false, reason: 'is not an address range `first-last`' };
    if (a.family !== b.family) return { ok: false, reason: 'mixes IPv4 and IPv6' };
    if (a.value > b.value) {
      return { ok: false, reason: 'starts after it ends', suggestion: `${formatAddr(b)}-${formatAddr(a)}`, family: a.family };
    }
    return { ok: true, interval: { family: a.family, start: a.value, end: b.value }, form: 'range' };
  }
  const a = parseAddr(s);
  if (!a) return { ok: false, reason: 'is not an address, an `a-b` range or a CIDR' };
  return { ok: true, interval: { family: a.family, start: a.value, end: a.value }, form: 'single' };
}

export function formatInterval(i: Interval): string {
  if (i.start === i.end) return formatAddr(addr(i.family, i.start));
  const cidrs = intervalToCidrs(i);
  if (cidrs.length === 1) return formatCidr(cidrs[0]);
  return `${formatAddr(addr(i.family, i.start))}-${formatAddr(addr(i.family, i.end))}`;
}

/** Host CIDR of a single address (/32 or /128). */
export const hostCidr = (a: Addr): string => `${formatAddr(a)}/${bits(a.family)}`;

/** Compare addresses (for sorting). */
/** Usable host addresses of a CIDR: IPv4 loses network and broadcast (except /31, /32); IPv6 loses the subnet-router anycast. */
export function usableHosts(c: Cidr): Interval {
  const hostBits = bits(c.family) - c.prefix;
  if (c.family === 4 && hostBits >= 2) return { family: 4, start: c.start + 1n, end: c.end - 1n };
  if (c.family === 6 && hostBits >= 1) return { family: 6, start: c.start + 1n, end: c.end };
  return { family: c.family, start: c.start, end: c.end };
}
