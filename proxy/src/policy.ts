/**
 * Address policy: which peer a destination belongs to (origin side), and whether a gateway may dial a
 * destination for a peer (terminus side). Never an open relay: the terminus dials only inside its own
 * cluster's migration CIDR(s), and never loopback, unspecified, link-local, multicast, broadcast, cloud
 * metadata, the network or broadcast address of a subnet, ranges that translate to other places (NAT64,
 * 6to4, Teredo, IPv4-compatible/translated IPv6...), or any of its own addresses, whatever the CIDRs say.
 *
 * Every address is parsed once (ipaddr.js, after a strict `net.isIP` gate that refuses shorthand such as
 * '10.1' or octal '010.0.0.1'), IPv4-mapped IPv6 (`::ffff:a.b.c.d`, in any spelling) becomes IPv4, and
 * all comparisons are between parsed addresses, never between strings.
 */
import * as net from 'node:net';
import * as os from 'node:os';
import * as ipaddr from 'ipaddr.js';
import { FORBIDDEN_CIDRS } from './config';
import type { PeerConfig, ProxyConfig } from './config';

type Addr = ipaddr.IPv4 | ipaddr.IPv6;
type Range = [Addr, number];

/** Parse an address strictly; IPv4-mapped IPv6 comes back as IPv4. Undefined when it is not an IP literal. */
export function parseAddress(text: string): Addr | undefined {
  if (!net.isIP(text)) return undefined;
  // ipaddr.js reads any trailing dotted quad as IPv4-mapped ('::10.0.0.1' too): spell it in hex first
  const hex = net.isIPv6(text) ? text.replace(/(\d+)\.(\d+)\.(\d+)\.(\d+)$/, (_m, a, b, c, d) =>
    `${((+a << 8) | +b).toString(16)}:${((+c << 8) | +d).toString(16)}`) : text;
  const a = ipaddr.parse(hex);
  return a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress() ? (a as ipaddr.IPv6).toIPv4Address() : a;
}

/** Canonical text of an address ('::ffff:a32:1' -> '10.50.0.1', IPv6 compressed); unchanged when not an IP. */
export function normalizeAddress(text: string): string {
  return parseAddress(text)?.toString() ?? text;
}

/** A comparable key: one per address, whatever the spelling. */
const keyOf = (a: Addr): string => (a.kind() === 'ipv4' ? a.toString() : (a as ipaddr.IPv6).toNormalizedString());

function parseCidr(c: string): Range {
  const [addr, len] = c.split('/');
  const a = parseAddress(addr);
  if (!a) throw new Error(`bad CIDR ${c}`);
  // an IPv4-mapped CIDR ::ffff:a.b.c.d/n (n >= 96) is the IPv4 CIDR a.b.c.d/(n-96)
  const bits = a.kind() === 'ipv4' && net.isIPv6(addr) ? Math.max(0, Number(len) - 96) : Number(len);
  return [a, bits];
}

const inRange = (a: Addr, [net0, bits]: Range): boolean => a.kind() === net0.kind() && a.match(net0 as never, bits);
const inAny = (a: Addr, ranges: Range[]): boolean => ranges.some((r) => inRange(a, r));

// The list lives in ./config (pure, no node: imports) so the library validates fleets against the very
// ranges the gateway refuses to dial (src/gateway/runtime-config.ts is its door).
export { FORBIDDEN_CIDRS };

export type DestinationVerdict = { ok: true } | { ok: false; code: 'forbidden' | 'outside_cidr'; why: string };

type Interfaces = NodeJS.Dict<os.NetworkInterfaceInfo[]>;

/** Network and broadcast (IPv4) / subnet-router anycast (IPv6) addresses of a subnet, when it has them. */
function subnetEdges([a, bits]: Range): string[] {
  if (a.kind() === 'ipv4' && bits <= 30) {
    const cidr = `${a.toString()}/${bits}`;
    return [ipaddr.IPv4.networkAddressFromCIDR(cidr).toString(), ipaddr.IPv4.broadcastAddressFromCIDR(cidr).toString()];
  }
  if (a.kind() === 'ipv6' && bits <= 126) return [keyOf(ipaddr.IPv6.networkAddressFromCIDR(`${a.toString()}/${bits}`))];
  return [];
}

export class AddressPolicy {
  private readonly peers: { peer: PeerConfig; ranges: Range[] }[];
  private readonly local: Range[];
  private readonly forbidden = FORBIDDEN_CIDRS.map(parseCidr);
  private readonly loopback = ['127.0.0.0/8', '::1/128'].map(parseCidr);
  /** own addresses given in config (listen hosts, ownAddresses, dialFrom) */
  private readonly own = new Set<string>();
  /** network/broadcast addresses of the local CIDRs and of the pod's interface subnets (at build time) */
  private readonly edges = new Set<string>();
  private readonly interfaces: () => Interfaces;

  /**
   * @param interfaces the pod's interfaces, asked at every check (default: `os.networkInterfaces()`, the kernel's
   *   answer now): an address added to any interface after start, `lo` included, is refused from that moment
   */
  constructor(cfg: ProxyConfig, extraOwn: string[] = [], private readonly allowLoopback = false,
    interfaces: Interfaces | (() => Interfaces) = () => os.networkInterfaces()) {
    this.interfaces = typeof interfaces === 'function' ? interfaces : () => interfaces;
    this.peers = cfg.peers.map((peer) => ({ peer, ranges: peer.cidrs.map(parseCidr) }));
    this.local = cfg.localCidrs.map(parseCidr);
    // listen hosts in the loopback range are left to the loopback rule, as interface addresses are (see isOwn)
    const listen = Object.values(cfg.listen).flatMap((e) => ('host' in e ? [e.host] : []))
      .map((t) => parseAddress(t.replace(/%.*$/, ''))).filter((a): a is Addr => !!a && !inAny(a, this.loopback));
    const given = [...cfg.ownAddresses, ...(cfg.dialFrom ? [cfg.dialFrom] : []), ...extraOwn].map(parseAddress);
    for (const a of [...given, ...listen]) if (a && a.range() !== 'unspecified') this.own.add(keyOf(a));
    const ifaceInfos = Object.values(this.interfaces()).flatMap((l) => l ?? []).filter((i) => !i.internal);
    const subnets = [...this.local, ...ifaceInfos.filter((i) => i.cidr).map((i) => parseCidr(i.cidr!.replace(/%[^/]*/, '')))];
    for (const r of subnets) for (const e of subnetEdges(r)) this.edges.add(keyOf(parseAddress(e)!));
  }

  /** Every address local to the gateway's network namespace now: config, and each interface's, whatever the
   * interface (a non-loopback address on `lo`, as anycast and some CNI setups put there, is as local as any).
   * Loopback-range ones are left to the loopback rule (so the unsafe loopback test hook still reaches a server). */
  private isOwn(a: Addr): boolean {
    if (this.own.has(keyOf(a))) return true;
    for (const i of Object.values(this.interfaces()).flatMap((l) => l ?? [])) {
      const b = parseAddress(i.address.replace(/%.*$/, ''));
      if (b && b.range() !== 'unspecified' && !inAny(b, this.loopback) && keyOf(b) === keyOf(a)) return true;
    }
    return false;
  }

  /**
   * Origin side: may this client use the intercept listener? Only a source inside this cluster's migration
   * CIDR(s) (`localCidrs`: the handlers' network) may (issue 49); a trust agent (no local CIDRs) admits none.
   */
  isLocalClient(address: string): boolean {
    const a = parseAddress(address.replace(/%.*$/, ''));
    return !!a && inAny(a, this.local);
  }

  /** Origin side: the peer whose CIDRs contain this destination (first match in config order). */
  peerFor(address: string): PeerConfig | undefined {
    const a = parseAddress(address);
    return a ? this.peers.find((p) => inAny(a, p.ranges))?.peer : undefined;
  }

  /** Terminus side: may this gateway dial `address:port` on behalf of a peer? */
  checkDestination(address: string, port: number): DestinationVerdict {
    const a = parseAddress(address);
    if (!a) return { ok: false, code: 'forbidden', why: 'not an IP address' };
    if (!Number.isInteger(port) || port < 1 || port > 65535) return { ok: false, code: 'forbidden', why: `port ${port}` };
    const isLoop = inAny(a, this.loopback);
    if (isLoop && !this.allowLoopback) return { ok: false, code: 'forbidden', why: 'loopback destination' };
    if (this.isOwn(a)) return { ok: false, code: 'forbidden', why: 'the gateway\'s own address' };
    if (isLoop) return { ok: true }; // unsafe test hook only
    if (inAny(a, this.forbidden)) return { ok: false, code: 'forbidden', why: 'special-purpose destination (metadata, link-local, multicast, translation prefix, reserved)' };
    if (this.edges.has(keyOf(a))) return { ok: false, code: 'forbidden', why: 'network or broadcast address of a subnet' };
    if (!inAny(a, this.local)) return { ok: false, code: 'outside_cidr', why: 'outside this cluster\'s migration CIDRs' };
    return { ok: true };
  }
}
