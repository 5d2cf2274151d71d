/**
 * IPv6 helpers for the IPv6 fleet test (test/fleet-ipv6.netns.test.ts), beside the IPv4 lab of
 * test/support/netns.ts (which they reuse, unchanged):
 * - IPv6 arithmetic on BigInt, kept independent of the library's own address code on purpose (like
 *   the IPv4 helpers there), and the first addresses whereabouts would hand out from an IPv6 range;
 * - namespaces without duplicate address detection: a new IPv6 address is "tentative" (unusable as a
 *   source, not answered for) for about a second while DAD runs. In the test's own namespaces, where no
 *   address can be duplicated, DAD is switched off with the sysctls `accept_dad=0` (all + default,
 *   before any interface is created or moved in), so addresses are usable at once and nothing waits;
 * - the substitution of attachments this kernel cannot make (no macvlan, ipvlan, vlan or dummy links):
 *   a macvlan or ipvlan attachment on master M becomes a bridge attachment on a Linux bridge named M,
 *   which is what macvlan mode bridge / ipvlan l2 give the pods of one node: one L2 segment with the
 *   node's uplink. Every other key of the NAD config (name, MTU, IPAM, capabilities) stays as generated.
 */
import { NetnsLab, netnsSupport, hasCommand } from './netns';

/** Whether the IPv6 lab can run: the IPv4 lab's needs plus ip6tables (the rule-setup step's IPv6 half). */
export function netns6Support(): { ok: true } | { ok: false; reason: string } {
  const base = netnsSupport();
  if (!base.ok) return base;
  if (!hasCommand('ip6tables')) return { ok: false, reason: '\'ip6tables\' is not installed' };
  return { ok: true };
}

// ------------------------------------------------------------------------------------------------
// IPv6 arithmetic

/** An IPv6 address (no zone, no embedded dotted quad) as a 128-bit number. */
export function ip6(a: string): bigint {
  if (!/^[0-9a-fA-F:]+$/.test(a) || (a.match(/::/g) ?? []).length > 1) throw new Error(`not an IPv6 address: ${a}`);
  const [head, tail] = a.includes('::') ? a.split('::') : [a, undefined];
  const hs = head ? head.split(':') : [];
  const ts = tail ? tail.split(':') : [];
  const fill = tail === undefined ? 0 : 8 - hs.length - ts.length;
  const groups = [...hs, ...Array(fill).fill('0'), ...ts];
  if (groups.length !== 8 || fill < 0 || groups.some((g) => !/^[0-9a-fA-F]{1,4}$/.test(g))) throw new Error(`not an IPv6 address: ${a}`);
  return groups.reduce((v, g) => (v << 16n) | BigInt(`0x${g}`), 0n);
}

/** RFC 5952 text (lowercase, the longest run of 2+ zero groups as '::'): what `ip` and node print. */
export function fmt6(v: bigint): string {
  const g = Array.from({ length: 8 }, (_, i) => Number((v >> BigInt(112 - 16 * i)) & 0xffffn));
  let best = { at: -1, len: 1 };
  for (let i = 0; i < 8;) {
    if (g[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && g[j] === 0) j++;
    if (j - i > best.len) best = { at: i, len: j - i };
    i = j;
  }
  const hex = g.map((x) => x.toString(16));
  if (best.at < 0) return hex.join(':');
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.len).join(':')}`;
}

export function cidr6(c: string): { base: bigint; prefix: number; first: bigint; last: bigint } {
  const [a, l] = c.split('/');
  const prefix = Number(l);
  const host = (1n << BigInt(128 - prefix)) - 1n;
  const base = ip6(a) & ~host & ((1n << 128n) - 1n);
  return { base, prefix, first: base, last: base | host };
}

export const inCidr6 = (a: string, c: string): boolean => { const r = cidr6(c); const v = ip6(a); return v >= r.first && v <= r.last; };

/**
 * The first `n` addresses whereabouts could hand out from an IPv6 range: inside range (or
 * range_start..range_end), not excluded, not the subnet-router anycast (first) address.
 */
export function whereaboutsFirstFree6(ipam: { range: string; range_start?: string; range_end?: string; exclude?: string[] }, n: number): string[] {
  const r = cidr6(ipam.range);
  const lo = ipam.range_start ? ip6(ipam.range_start) : r.first + 1n;
  const hi = ipam.range_end ? ip6(ipam.range_end) : r.last;
  const out: string[] = [];
  for (let v = lo; v <= hi && out.length < n; v++) {
    const a = fmt6(v);
    if ((ipam.exclude ?? []).some((e) => inCidr6(a, e))) continue;
    out.push(`${a}/${r.prefix}`);
  }
  if (out.length < n) throw new Error(`whereabouts range ${ipam.range} has fewer than ${n} free addresses`);
  return out;
}

// ------------------------------------------------------------------------------------------------
// the lab, IPv6 flavour

/** A namespace of `lab` with IPv6 DAD off (set before any interface enters it). */
export function addNs6(lab: NetnsLab, short: string): string {
  const ns = lab.addNs(short);
  lab.run(['ip', 'netns', 'exec', ns, 'sysctl', '-q', '-w', 'net.ipv6.conf.all.accept_dad=0', 'net.ipv6.conf.default.accept_dad=0']);
  return ns;
}

/** Link types this kernel can make in the test (see the file comment). */
const SUBSTITUTED = new Set(['macvlan', 'ipvlan']);

/**
 * A NAD config this kernel can attach: macvlan/ipvlan on master M -> the bridge plugin on bridge M
 * (their `master` and `mode` keys dropped, everything else kept); other types unchanged.
 */
export function attachableConfig(cfg: Record<string, unknown>): Record<string, unknown> {
  if (!SUBSTITUTED.has(String(cfg.type))) return cfg;
  const { master, mode, ...rest } = cfg; // eslint-disable-line @typescript-eslint/no-unused-vars
  return { ...rest, type: 'bridge', bridge: String(master) };
}

/** The node bridge an attachment ends up on after `attachableConfig`. */
export function nodeBridgeOf(cfg: Record<string, unknown>): string {
  const c = attachableConfig(cfg);
  if (c.type !== 'bridge' || typeof c.bridge !== 'string') throw new Error(`attachment type ${String(cfg.type)} has no node bridge`);
  return c.bridge;
}
