/**
 * Sites (issue #24): a fleet whose shared network is one subnet per data centre, joined by routers.
 * Each site's subnet is parsed as the single-subnet shared network always was (resolve.ts lends its
 * parser), its problems named at the site's own path; then the rules between sites: no overlap, a
 * router inside its subnet and outside every pool, one MTU on every path, every cluster in a declared
 * site and every site with a cluster. A fleet without `sites` is one site, `default`, with today's
 * `addresses`, so its plan is unchanged. Pure, no cdk8s import.
 */
import { Attachment, ClusterSpec, FleetSpec, SiteSpec } from './schema';
import { FleetProblem, ProblemCollector } from '../base/errors';
import { Cidr, Family, Interval, formatAddr, formatCidr, mergeIntervals, overlaps, parseAddr } from '../base/ip';

/** The name of the one site of a fleet that declares none. */
export const DEFAULT_SITE = 'default';

const CC = 'spec.crossClusterNetwork';

type Addresses = NonNullable<FleetSpec['crossClusterNetwork']['addresses']>;

/** One subnet of the shared network as resolve parses it (a site's, or the fleet's `addresses`: shared-network.ts). */
export interface SiteNetwork {
  readonly pool: Interval[];
  readonly family: Family;
  readonly prefixLength: number;
  readonly excluded: Interval[];
  readonly subnets: Cidr[];
  readonly usable: Interval[];
  /** Reserved addresses the pool (after exclusions) held: what the capacity formula subtracts. */
  readonly reservedInPool: bigint;
  readonly gateway?: string;
  readonly routes: { dst: string; gw: string }[];
}

/** The parser resolve.ts lends: one shared network, problems at `spec.crossClusterNetwork.addresses`. */
export type SiteNetworkParser<N extends SiteNetwork> = (p: ProblemCollector, attachment: Attachment, addresses: Addresses) => N;

export interface ResolvedSite {
  readonly name: string;
  /** Position in `spec.crossClusterNetwork.sites`; undefined for the default site (`addresses`). */
  readonly index?: number;
  /** The site's attachment, with the site's MTU set on it. */
  readonly attachment: Attachment;
  /** The site's MTU (its own, else its attachment's). @default - the plugin default */
  readonly mtu?: number;
  readonly family: Family;
  readonly prefixLength: number;
  readonly subnets: Cidr[];
  /** Usable addresses of the site's pool: its members' addresses come from here only. */
  readonly usable: Interval[];
  /** The site's router on its subnet (for the default site: `addresses.gateway`). */
  readonly router?: string;
  /** Routes on every shared-network attachment of the site: the other sites' subnets via its router (default site: `addresses.routes`). */
  readonly routes: { dst: string; gw: string }[];
}

/** A site with its parsed network, for the per-site checks resolve.ts runs (capacity). */
export interface SiteParts<N extends SiteNetwork> {
  readonly site: ResolvedSite;
  readonly net: N;
}

/** Where a site's fields live: the default site's at `addresses`, a declared site's at `sites[i]`. */
export const sitePath = (s: ResolvedSite, field: string): string =>
  (s.index === undefined ? `${CC}.addresses.${field === 'router' ? 'gateway' : field}` : `${CC}.sites[${s.index}].${field}`);

/** A problem found by the single-network parser, moved to the site's own path. */
function atSite(q: FleetProblem, index: number, ownAttachment: boolean): FleetProblem {
  const map: [string, string][] = [
    [`${CC}.addresses.gateway`, `${CC}.sites[${index}].router`],
    [`${CC}.addresses`, `${CC}.sites[${index}]`],
    ...(ownAttachment ? [[`${CC}.attachment`, `${CC}.sites[${index}].attachment`] as [string, string]] : []),
  ];
  for (const [from, to] of map) if (q.path === from || q.path.startsWith(`${from}.`) || q.path.startsWith(`${from}[`)) return { ...q, path: to + q.path.slice(from.length) };
  return q;
}

/** Run `fn` with a collector of its own; its problems join `p` at the site's path. */
export function withSitePaths<T>(p: ProblemCollector, s: ResolvedSite, ownAttachment: boolean, fn: (q: ProblemCollector) => T): T {
  if (s.index === undefined) return fn(p);
  const q = new ProblemCollector();
  const value = fn(q);
  const index = s.index;
  p.addAll(q.problems.map((x) => atSite(x, index, ownAttachment)));
  return value;
}

const withMtu = (a: Attachment, mtu: number | undefined): Attachment => (mtu === undefined || a.type === 'host-device' ? a : { ...a, mtu });

/** The default site of a fleet without `sites`: today's single shared network. */
function defaultSite<N extends SiteNetwork>(p: ProblemCollector, cc: FleetSpec['crossClusterNetwork'], parse: SiteNetworkParser<N>): SiteParts<N>[] {
  const addresses = cc.addresses ?? { pool: [], prefixLength: 24 };
  if (!cc.addresses) {
    p.add('shared-network-missing', `${CC}.addresses`, 'the fleet gives neither addresses (one subnet) nor sites (one subnet per site)',
      `add ${CC}.addresses {pool, prefixLength}, or ${CC}.sites with one entry per data centre`);
  }
  const net = parse(p, cc.attachment, addresses);
  const mtu = 'mtu' in cc.attachment ? cc.attachment.mtu : undefined;
  const site: ResolvedSite = {
    name: DEFAULT_SITE, attachment: cc.attachment, mtu, family: net.family, prefixLength: net.prefixLength,
    subnets: net.subnets, usable: net.usable, router: net.gateway, routes: net.routes,
  };
  return [{ site, net }];
}

/** Every site of the fleet, parsed (problems at each site's path), with the rules between sites checked. */
export function resolveSites<N extends SiteNetwork>(p: ProblemCollector, cc: FleetSpec['crossClusterNetwork'], parse: SiteNetworkParser<N>): SiteParts<N>[] {
  if (!cc.sites) return defaultSite(p, cc, parse);
  if (cc.addresses) {
    p.add('shared-network-missing', `${CC}.addresses`, 'the fleet gives both addresses and sites; with sites, each site holds its own pool',
      `move the pool into the site it belongs to (${CC}.sites[].pool) and remove addresses`);
  }
  const parts = cc.sites.map((s: SiteSpec, index): SiteParts<N> => {
    const attachment = s.attachment ?? cc.attachment;
    const probe: ResolvedSite = { name: s.name, index, attachment, family: 4, prefixLength: s.prefixLength, subnets: [], usable: [], routes: [] };
    const addresses = { pool: s.pool, exclude: s.exclude, prefixLength: s.prefixLength, gateway: s.router };
    const net = withSitePaths(p, probe, s.attachment !== undefined, (q) => parse(q, attachment, addresses));
    const mtu = s.mtu ?? ('mtu' in attachment ? attachment.mtu : undefined);
    const site: ResolvedSite = {
      name: s.name, index, attachment: withMtu(attachment, s.mtu), mtu, family: net.family, prefixLength: net.prefixLength,
      subnets: net.subnets, usable: net.usable, router: net.gateway, routes: [],
    };
    return { site, net };
  });
  checkSitesApart(p, cc.sites, parts);
  checkSiteMtus(p, cc.sites, parts.map((x) => x.site));
  // every site reaches every other site's subnets through its own router: each next hop is on-link
  return parts.map(({ site, net }) => ({
    net,
    site: {
      ...site,
      routes: site.router === undefined ? [] : parts.filter((o) => o.site !== site)
        .flatMap((o) => o.site.subnets).filter((sn) => sn.family === site.family).map((sn) => ({ dst: formatCidr(sn), gw: site.router! })),
    },
  }));
}

/** Names once, one family, subnets apart, a router for each of two or more sites, never inside a pool. */
function checkSitesApart<N extends SiteNetwork>(p: ProblemCollector, specs: readonly SiteSpec[], parts: SiteParts<N>[]): void {
  const seen = new Map<string, number>();
  for (const [i, { site, net }] of parts.entries()) {
    const path = (f: string) => `${CC}.sites[${i}].${f}`;
    if (seen.has(site.name)) p.add('duplicate-site-name', path('name'), `'${site.name}' is also the name of ${CC}.sites[${seen.get(site.name)}]`, 'give every site a unique name');
    else seen.set(site.name, i);
    const first = parts[0].net;
    if (i > 0 && net.pool.length && first.pool.length && net.family !== first.family) {
      p.add('family-mismatch', path('pool'), `site ${site.name} is IPv${net.family} but site ${parts[0].site.name} is IPv${first.family}`, 'give every site of one shared network the same address family');
    }
    for (const [j, o] of parts.slice(0, i).entries()) {
      const clash = site.subnets.find((a) => o.site.subnets.some((b) => overlaps(a, b)));
      if (clash) {
        p.add('site-overlap', path('pool'), `site ${site.name}'s subnet ${formatCidr(clash)} overlaps site ${o.site.name}'s (${CC}.sites[${j}]); routed sites need disjoint subnets`,
          'give each site its own subnet (a different network, or a longer prefixLength)');
      }
    }
    if (specs[i].router === undefined && parts.length > 1) {
      p.add('site-router-missing', path('router'), `site ${site.name} has no router, so nothing on it can reach the ${parts.length - 1} other site(s)`,
        `give ${path('router')}: the address of the site's router on ${site.subnets.map(formatCidr).join(', ') || 'its subnet'}`);
    }
    const r = specs[i].router !== undefined ? parseAddr(specs[i].router!) : undefined;
    const inPool = r && parts.find((o) => o.net.pool.some((iv) => iv.family === r.family && iv.start <= r.value && r.value <= iv.end));
    if (r && inPool) {
      p.add('router-in-pool', path('router'), `router ${formatAddr(r)} is inside site ${inPool.site.name}'s pool: the planner would give it to a gateway`,
        `take ${formatAddr(r)} out of the pool, or give the router address the site's network team configured outside it`);
    }
  }
}

/** Each site's MTU agrees with its attachment's, and every path (any two sites) has one MTU: the smallest bounds the tunnel. */
function checkSiteMtus(p: ProblemCollector, specs: readonly SiteSpec[], sites: readonly ResolvedSite[]): void {
  for (const [i, s] of specs.entries()) {
    const own = s.attachment && 'mtu' in s.attachment ? s.attachment.mtu : undefined;
    if (s.mtu !== undefined && own !== undefined && own !== s.mtu) {
      p.add('site-mtu-mismatch', `${CC}.sites[${i}].mtu`, `site ${s.name} says MTU ${s.mtu} but its attachment says ${own}`, 'give the MTU once (sites[].mtu), or make both equal');
    }
  }
  const known = sites.filter((s) => s.mtu !== undefined);
  const smallest = known.reduce<ResolvedSite | undefined>((m, s) => (m === undefined || s.mtu! < m.mtu! ? s : m), undefined);
  if (!smallest) return;
  for (const s of sites) {
    if (s.mtu === smallest.mtu) continue;
    const what = s.mtu === undefined ? 'has no MTU set (the plugin default, 1500 on most NICs)' : `has MTU ${s.mtu}`;
    p.add('site-mtu-mismatch', sitePath(s, 'mtu'),
      `site ${s.name} ${what} but site ${smallest.name} has ${smallest.mtu}: a path between them crosses both, so the smallest MTU (${smallest.mtu}) bounds the tunnel, and larger packets are dropped at the router where ICMP "fragmentation needed" is filtered`,
      `set ${sitePath(s, 'mtu')}: ${smallest.mtu} (the smallest on the path), or raise site ${smallest.name}'s network and both routers' interfaces to ${s.mtu ?? 'the same MTU'} and say so in its mtu`);
  }
}

/** The site of each cluster (by name); a cluster in an unknown site, or without one among several, and a site without clusters, are problems. */
export function siteOfClusters(p: ProblemCollector, clusters: readonly ClusterSpec[], sites: readonly ResolvedSite[], declared: boolean): Map<string, string> {
  const out = new Map<string, string>();
  const names = sites.map((s) => s.name);
  clusters.forEach((c, i) => {
    const path = `spec.clusters[${i}].site`;
    if (c.site === undefined && sites.length === 1) { out.set(c.name, sites[0].name); return; }
    if (c.site !== undefined && names.includes(c.site)) { out.set(c.name, c.site); return; }
    const message = c.site === undefined ? `cluster ${c.name} names no site, and the fleet has ${sites.length}: ${names.join(', ')}`
      : declared ? `cluster ${c.name} is in site '${c.site}', which ${CC}.sites does not declare (sites: ${names.join(', ')})`
        : `cluster ${c.name} is in site '${c.site}', but the fleet declares no sites`;
    p.add('site-unknown', path, message, declared ? `set ${path} to one of ${names.join(', ')}` : `remove ${path}, or declare the fleet's sites in ${CC}.sites`);
  });
  if (!declared) return out;
  for (const s of sites) {
    if ([...out.values()].includes(s.name)) continue;
    p.add('site-empty', `${CC}.sites[${s.index}]`, `site ${s.name} has no cluster: its router and pool would be planned for nothing`,
      `put a cluster in it (spec.clusters[].site: ${s.name}), or remove the site`);
  }
  return out;
}

/** Every site's usable addresses together (the fleet's pool for the capacity report and the overlap checks). */
export function unionOfSites<N extends SiteNetwork>(parts: readonly SiteParts<N>[]): SiteNetwork {
  if (parts.length === 1) return parts[0].net;
  const all = (f: (n: N) => Interval[]) => parts.flatMap((x) => f(x.net));
  return {
    pool: all((n) => n.pool), excluded: all((n) => n.excluded), subnets: parts.flatMap((x) => x.net.subnets),
    usable: mergeIntervals(all((n) => n.usable)), family: parts[0].net.family, prefixLength: parts[0].net.prefixLength,
    reservedInPool: parts.reduce((n, x) => n + x.net.reservedInPool, 0n), routes: [],
  };
}
