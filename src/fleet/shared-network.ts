/**
 * Fleet validation, the cross-cluster (shared) network: its pool, exclusions, subnets, router and
 * routes, and its capacity against what every cluster holds. Pure, no cdk8s import.
 */
import { ProblemCollector } from '../base/errors';
import { SiteNetwork } from './sites';
import { Attachment, FleetSpec } from './schema';
import {
  Cidr, Family, Interval, bits, cidrOf, contains, countIntervals, formatAddr, formatCidr, mergeIntervals, parseAddr,
  parsePoolItem, subtractIntervals, usableHosts,
} from '../base/ip';
import { ResolvedCluster, crossClusterNeeded } from './resolved';
import { checkAttachment, checkDialable, checkPairwiseOverlaps, parseCidrField, parseRangeField } from './fields';
import { Datapath, datapathMode } from './datapath-modes';

// ---------------- phase 1: the cross-cluster (shared) network ----------------

const SHARED = 'spec.crossClusterNetwork.addresses';

/**
 * The shared network as resolve sees it (one subnet: the fleet's `addresses` or one site's); capacity is
 * checked once the clusters are known. Declared in sites.ts, which reads it and must not import this file.
 */
export type SharedNetwork = SiteNetwork;

/** One subnet of the shared network (the fleet's `addresses`, or one site's, src/fleet/sites.ts), problems at `addresses`. */
export function resolveSharedNetwork(p: ProblemCollector, attachment: Attachment, addresses: NonNullable<FleetSpec['crossClusterNetwork']['addresses']>): SharedNetwork {
  const pool = parsePool(p, addresses.pool);
  // the family as written, even where no entry parses (a CIDR with host bits): an IPv6 pool's /64 is not "longer than an IPv4 address"
  const written = pool[0]?.family ?? writtenFamily(addresses.pool);
  const family: Family = written ?? 4;
  const prefixLength = addresses.prefixLength;
  if (written && prefixLength > bits(family)) p.add('prefix-too-long', `${SHARED}.prefixLength`, `${prefixLength} is longer than an IPv${family} address`, `use at most ${bits(family)}`);
  const excluded = parseExclusions(p, addresses, pool);
  const subnets = prefixLength <= bits(family) ? poolSubnets(pool, family, prefixLength) : [];
  const reserved = networkAndBroadcast(subnets);
  const gateway = parseRouter(p, addresses.gateway, subnets, prefixLength);
  if (gateway) reserved.push({ family: gateway.family, start: gateway.value, end: gateway.value });
  const routes = parseRoutes(p, addresses.routes ?? [], subnets);
  if (subnets.length > 1) {
    // routes cannot mend it: a fleet-wide route's next hop is on-link in one subnet only (issue #24)
    const shown = `${subnets.slice(0, 4).map(formatCidr).join(', ')}${subnets.length > 4 ? ', ...' : ''}`;
    p.add('pool-spans-subnets', `${SHARED}.pool`,
      `spans ${subnets.length} subnets of /${prefixLength} (${shown}); members in different subnets cannot reach each other, and one fleet-wide route cannot join them (its next hop is on-link in one subnet only)`,
      'widen prefixLength so one subnet holds the pool, or, for subnets joined by routers, declare one site per subnet in spec.crossClusterNetwork.sites (each with its pool and router; docs/fleet.md, "Sites")');
  }
  const usable = subtractIntervals(subtractIntervals(pool, excluded), reserved);
  const reservedInPool = countIntervals(subtractIntervals(pool, excluded)) - countIntervals(usable);
  checkAttachment(p, 'spec.crossClusterNetwork.attachment', attachment, family);
  return { pool, family, prefixLength, excluded, subnets, usable, reservedInPool, gateway: gateway && formatAddr(gateway), routes };
}

/** The family the first entry that shows one is written in (refused entries included), if any. */
function writtenFamily(items: readonly string[]): Family | undefined {
  for (const item of items) {
    const r = parsePoolItem(item);
    const f = r.ok ? r.interval.family : r.family;
    if (f) return f;
  }
  return undefined;
}

function parsePool(p: ProblemCollector, items: readonly string[]): Interval[] {
  const parsed: { interval: Interval; path: string }[] = [];
  items.forEach((item, i) => {
    const path = `${SHARED}.pool[${i}]`;
    const interval = parseRangeField(p, path, item, 'write a CIDR (10.0.0.0/28), a range (10.0.0.10-10.0.0.29) or an address');
    if (interval) checkDialable(p, path, interval, 'gateways and handlers on the shared network');
    if (interval) parsed.push({ interval, path });
  });
  if (new Set(parsed.map((x) => x.interval.family)).size > 1) p.add('family-mismatch', `${SHARED}.pool`, 'mixes IPv4 and IPv6 entries', 'give one address family per cross-cluster network');
  checkPairwiseOverlaps(p, parsed, 'pool-overlap', 'list each address once');
  return parsed.map((x) => x.interval);
}

function parseExclusions(p: ProblemCollector, addresses: NonNullable<FleetSpec['crossClusterNetwork']['addresses']>, pool: Interval[]): Interval[] {
  const parsed: { interval: Interval; path: string }[] = [];
  (addresses.exclude ?? []).forEach((item, i) => {
    const path = `${SHARED}.exclude[${i}]`;
    const interval = parseRangeField(p, path, item, 'write a CIDR, an a-b range or an address');
    if (!interval) return;
    const inside = pool.some((iv) => contains(iv, interval)) || countIntervals(subtractIntervals([interval], pool)) === 0n;
    if (!inside) p.add('exclude-outside-pool', path, `'${item}' is not inside the pool ${addresses.pool.join(', ')}`, 'remove it, or correct it to an address the pool holds');
    parsed.push({ interval, path });
  });
  checkPairwiseOverlaps(p, parsed, 'exclude-overlap', 'merge the two exclusions into one');
  return parsed.map((x) => x.interval);
}

/** The /prefixLength subnets the pool touches (at most a little over 4096). */
function poolSubnets(pool: Interval[], family: Family, prefixLength: number): Cidr[] {
  const subnets: Cidr[] = [];
  const m = ((1n << BigInt(bits(family))) - 1n) ^ ((1n << BigInt(bits(family) - prefixLength)) - 1n);
  for (const iv of mergeIntervals(pool)) {
    let s = iv.start & m;
    while (s <= iv.end) {
      const c = cidrOf(family, s, prefixLength);
      if (!subnets.some((x) => x.start === c.start)) subnets.push(c);
      s = c.end + 1n;
      if (subnets.length > 4096) break;
    }
  }
  return subnets;
}

/** Network and broadcast (IPv4) or subnet-router anycast (IPv6) of each subnet: not assignable. */
function networkAndBroadcast(subnets: Cidr[]): Interval[] {
  const reserved: Interval[] = [];
  for (const sn of subnets) {
    const u = usableHosts(sn);
    if (u.start > sn.start) reserved.push({ family: sn.family, start: sn.start, end: sn.start });
    if (u.end < sn.end) reserved.push({ family: sn.family, start: sn.end, end: sn.end });
  }
  return reserved;
}

function parseRouter(p: ProblemCollector, text: string | undefined, subnets: Cidr[], prefixLength: number): ReturnType<typeof parseAddr> {
  if (text === undefined) return undefined;
  const g = parseAddr(text);
  if (!g) {
    p.add('address-syntax', `${SHARED}.gateway`, `'${text}' is not an address`, 'give the router address on the shared network');
    return undefined;
  }
  if (!subnets.some((sn) => sn.family === g.family && sn.start <= g.value && g.value <= sn.end)) {
    p.add('router-outside-subnet', `${SHARED}.gateway`, `${formatAddr(g)} is outside every /${prefixLength} subnet of the pool`, 'give a router address on the same subnet as the pool');
  }
  return g;
}

function parseRoutes(p: ProblemCollector, routes: readonly { dst: string; gw: string }[], subnets: readonly Cidr[]): { dst: string; gw: string }[] {
  const out: { dst: string; gw: string }[] = [];
  routes.forEach((r, i) => {
    const dst = parseCidrField(p, `${SHARED}.routes[${i}].dst`, r.dst);
    const gw = parseAddr(r.gw);
    if (!gw) p.add('address-syntax', `${SHARED}.routes[${i}].gw`, `'${r.gw}' is not an address`, 'give the next-hop router address');
    // the kernel refuses a next hop that is not on the interface's subnet ("Nexthop has invalid gateway"): static IPAM ADD fails
    if (gw && subnets.length && !subnets.some((sn) => sn.family === gw.family && sn.start <= gw.value && gw.value <= sn.end)) {
      p.add('route-off-link', `${SHARED}.routes[${i}].gw`,
        `next hop ${formatAddr(gw)} is not on the shared subnet ${subnets.map(formatCidr).join(', ')}: the kernel refuses the route (Nexthop has invalid gateway), so the pod's attachment fails`,
        'give a router on the shared subnet as next hop; for subnets in other data centres declare spec.crossClusterNetwork.sites');
    }
    if (dst && gw) out.push({ dst: formatCidr(dst), gw: formatAddr(gw) });
  });
  return out;
}

// ---------------- phase 5: capacity of the shared network ----------------

/** The shared pool against what every cluster holds in its mode; returns the counts the plan reports. */
export function checkSharedCapacity(
  p: ProblemCollector, shared: SharedNetwork, clusters: ResolvedCluster[], surge: number,
): { poolCount: bigint; excludedCount: bigint; usableCount: bigint } {
  const poolCount = countIntervals(mergeIntervals(shared.pool));
  const excludedCount = countIntervals(mergeIntervals(shared.excluded));
  const usableCount = countIntervals(shared.usable);
  const needed = clusters.reduce((n, c) => n + crossClusterNeeded(c, surge), 0);
  if (shared.pool.length > 0 && BigInt(needed) > usableCount) {
    const missing = BigInt(needed) - usableCount;
    const alternative = clusters.some((c) => datapathMode(c.datapath).sharedMigrationNetwork) ? ', or use datapath: gateway (one address per gateway replica)' : ', or lower gateway.replicas';
    p.add('pool-too-small', `${SHARED}.pool`,
      `pool too small: needed ${needed} (${summarizeNeeded(clusters, surge)}), usable ${usableCount} = ${poolCount} in pool - ${excludedCount} excluded - ${shared.reservedInPool} network/broadcast${shared.gateway ? '/router' : ''}`,
      `add ${missing} more address${missing === 1n ? '' : 'es'} to the pool, remove exclusions${alternative}`);
  }
  return { poolCount, excludedCount, usableCount };
}

function summarizeNeeded(clusters: ResolvedCluster[], surge: number): string {
  const parts: string[] = [];
  const sum = (list: ResolvedCluster[]): number => list.reduce((n, c) => n + crossClusterNeeded(c, surge), 0);
  const agents = (list: ResolvedCluster[]): string => (list.some((c) => c.trustAgentReplicas > 0) ? ' + trust agents' : '');
  // one text per mode (a Record: a new mode must say what it counts), in this order
  const text: Record<Datapath, (list: ResolvedCluster[]) => string> = {
    gateway: (gw) => `gateway: ${gw.length} clusters x replicas = ${sum(gw)}`,
    direct: (dir) => `direct: (nodes + sync controllers + ${surge} surge${agents(dir)}) per cluster over ${dir.length} clusters = ${sum(dir)}`,
    native: (nat) => `native: (sync controllers + ${surge} surge${agents(nat)}) over ${nat.length} clusters = ${sum(nat)}`,
  };
  for (const [mode, say] of Object.entries(text) as [Datapath, (list: ResolvedCluster[]) => string][]) {
    const list = clusters.filter((c) => c.datapath === mode);
    if (list.length) parts.push(say(list));
  }
  return parts.join('; ');
}
