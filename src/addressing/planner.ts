/**
 * Address planning: from a resolved fleet and the previous ledger to a complete, deterministic plan
 * (per-cluster CIDRs, gateway addresses on both networks, whereabouts ranges, routes, peer tables)
 * and the next ledger. Surviving members keep their addresses; new members take the lowest free one.
 * Pure, no cdk8s import.
 */
import { Attachment, Datapath, FleetDocument, FleetSpec, FLEET_API_VERSION, FLEET_KIND, SyncPlacement } from '../fleet/schema';
import { Checked, ProblemCollector, Salvaged, checkedOf, orThrow } from '../base/errors';
import {
  Cidr, Interval, Family, aggregateCidrs, bits, cidrOf, contains, countIntervals, formatAddr, formatCidr,
  formatInterval, hostCidr, intervalToCidrs, mergeIntervals, overlaps, parseAddr, parseCidr, parsePoolItem, addr,
  subtractIntervals, usableHosts,
} from '../base/ip';
import { Ledger, LedgerChange, LedgerCluster, diffLedgers, emptyLedger, formatLedgerChange, nextQuarantine } from './ledger';
import { Quarantine, ledgerForFleet, LedgerFamilies, ledgerProblems, quarantineOf, quarantinedIn, routerProblems } from './ledger-guard';
import { plannablePart } from '../fleet/salvage';
import { ResolvedSite, sitePath } from '../fleet/sites';
import { SitePlan, siteOf, sitePlans } from './sites';
import {
  reindexProblems, salvageFleet, salvageFleetDocument, ResolvedCluster, ResolvedFleet, ResolvedGateway, ResolvedKubevirt,
  crossClusterNeeded, inClusterBreakdown, inClusterNeeded,
} from '../fleet/resolve';

export interface RoutePlan { readonly dst: string; readonly gw: string }

/** Whereabouts IPAM for one NAD. */
export interface WhereaboutsPlan {
  readonly range: string;
  readonly rangeStart?: string;
  readonly rangeEnd?: string;
  readonly exclude: string[];
  readonly routes: RoutePlan[];
}

export interface GatewayReplicaPlan {
  readonly replica: number;
  /** Static address on the in-cluster migration network, with prefix (`10.200.0.1/24`). */
  readonly inCluster: string;
  /** Static address on the shared cross-cluster network, with prefix. */
  readonly crossCluster: string;
}

/** One replica of a trust agent (a cluster without a gateway that exchanges CAs, issue #30). */
export interface TrustAgentReplicaPlan {
  readonly replica: number;
  /** Static address on the shared cross-cluster network, with prefix. */
  readonly crossCluster: string;
}

export interface PeerPlan {
  readonly cluster: string;
  /** The peer's in-cluster CIDRs the tunnels carry; empty for a peer reached for trust only (a trust agent, or any peer of a trust agent). */
  readonly cidrs: string[];
  /** Where the peer exchanges: its gateway replicas, or its trust agent's replicas. */
  readonly gateways: { host: string; port: number }[];
}

export interface ClusterPlan {
  readonly name: string;
  readonly datapath: Datapath;
  readonly nodes: number;
  readonly syncReplicas: number;
  readonly syncPlacement: SyncPlacement;
  readonly kubevirt: ResolvedKubevirt;
  readonly multiNetworkPolicy: boolean;
  /** OpenShift cluster: the gateway gets an SCC and its binding. */
  readonly openshift: boolean;
  /** The NAD KubeVirt names in `migrations.network` (in-cluster in gateway/native mode, the shared network in direct mode). */
  readonly migrationNetwork: {
    readonly nadName: string;
    readonly attachment: Attachment;
    /** In-cluster CIDR (gateway/native). */
    readonly cidr?: string;
    readonly ipam: WhereaboutsPlan;
  };
  /** native mode: the sync controllers' NAD on the shared network. */
  readonly crossClusterSync?: { readonly nadName: string; readonly ipam: WhereaboutsPlan };
  /** gateway mode: one entry per replica. */
  readonly gateways: GatewayReplicaPlan[];
  /**
   * gateway mode with failover `vip` (2+ replicas): the in-cluster address, with prefix, that one
   * replica at a time holds (VRRP) and the handlers' routes point at.
   */
  readonly gatewayVip?: string;
  /**
   * The runtime's peer table: in gateway mode the other gateway clusters (with their CIDRs) and the
   * trust agents of the clusters without a gateway (trust only); for a trust agent every other
   * exchanging cluster, trust only. Empty when the cluster runs neither.
   */
  readonly peers: PeerPlan[];
  /** direct/native/Harvester clusters that exchange CAs: the trust agent's replicas (empty otherwise). */
  readonly trustAgents: TrustAgentReplicaPlan[];
  /** The cluster's site: the attachment, prefix and routes of its shared-network attachments (gateways, trust agents, direct/native slices). */
  readonly site: SitePlan;
  readonly capacity: {
    /** In-cluster addresses needed vs usable in the CIDR (gateway/native). */
    readonly inCluster?: { needed: number; usable: string };
    /** Shared-network addresses this cluster holds. */
    readonly crossCluster: number;
  };
}

export interface CapacityReport {
  readonly family: Family;
  readonly pool: string;
  readonly excluded: string;
  readonly reserved: string;
  readonly usable: string;
  /** Addresses the fleet holds on the shared network in its configured modes. */
  readonly needed: number;
  readonly free: string;
  /** What each mode would need for this fleet (VEP 191 comparison). */
  readonly byMode: { direct: number; directWithSurge: number; native: number; gateway: number };
}

export interface FleetPlan {
  readonly fleet: string;
  readonly crossCluster: {
    readonly nadName: string;
    readonly attachment: Attachment;
    readonly prefixLength: number;
    readonly gateway?: string;
    readonly routes: RoutePlan[];
  };
  readonly migrationPolicy: ResolvedFleet['migrationPolicy'];
  readonly gateway: ResolvedGateway;
  readonly addressSurge: number;
  readonly supernet?: string;
  /** Sorted by cluster name. */
  readonly clusters: ClusterPlan[];
  readonly capacity: CapacityReport;
  /** KubeVirt CA rotation and CA exchange per cluster (src/trust/plan.ts). */
  readonly trust: ResolvedFleet['trust'];
  /** The sites of the shared network (one, `default`, unless the fleet declares sites). */
  readonly sites: SitePlan[];
}

export interface PlanResult {
  readonly plan: FleetPlan;
  readonly ledger: Ledger;
  /** What changed against the previous ledger. */
  readonly changes: LedgerChange[];
}

// ---------------- keep what the ledger has, then take the lowest free ----------------

/** The addresses of one network that members may hold: usable ones, minus those already claimed. */
class AddressPool {
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
interface AddressRequest {
  readonly want: number;
  readonly ledger: Iterable<bigint | undefined>;
  readonly bySlot: boolean;
}

/**
 * Keep what the ledger has, then take the lowest free. Every request keeps its ledger addresses
 * first, so a new member never takes an address a surviving member holds; then the `blocked` addresses
 * are set aside; then the empty slots take the lowest free addresses, in request order. One array per request; undefined where the pool ran out.
 */
function keepThenTake(pool: AddressPool, requests: readonly AddressRequest[], blocked: Iterable<bigint> = []): (bigint | undefined)[][] {
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
function* ledgerValues(items: readonly string[] | undefined, family: Family): Generator<bigint> {
  for (const item of items ?? []) {
    const r = parsePoolItem(item);
    if (!r.ok || r.interval.family !== family) continue;
    for (let v = r.interval.start; v <= r.interval.end; v++) yield v;
  }
}

/** One address the ledger recorded, when it parses and is of the family. */
function ledgerAddr(text: string | undefined, family: Family): bigint | undefined {
  const a = text === undefined ? undefined : parseAddr(text);
  return a && a.family === family ? a.value : undefined;
}

/** The quarantined addresses of one family (`family:value` keys). */
const keysOf = (keys: ReadonlySet<string>, family: Family): bigint[] =>
  [...keys].filter((k) => k.startsWith(`${family}:`)).map((k) => BigInt(k.slice(2)));

const needsInCluster = (c: ResolvedCluster, surge: number): string => `cluster ${c.name} needs ${inClusterNeeded(c, surge)} in-cluster addresses`;

// ---------------- phase 1: in-cluster CIDRs ----------------

/** Every gateway/native cluster's in-cluster CIDR: explicit, else kept from the ledger, else carved from the supernet. */
function planClusterCidrs(p: ProblemCollector, fleet: ResolvedFleet, prev: Ledger, quarantine: Quarantine): Map<string, Cidr> {
  const cidrs = new Map<string, Cidr>();
  const taken: Interval[] = [...fleet.crossCluster.usable];
  for (const c of fleet.clusters) {
    if (c.migrationCidr) { cidrs.set(c.name, c.migrationCidr); taken.push(c.migrationCidr); }
    taken.push(...c.podCidrs, ...c.serviceCidrs);
  }
  const carved = fleet.clusters.filter((c) => !c.migrationCidr && c.datapath !== 'direct');
  const fits = (c: ResolvedCluster, cidr: Cidr): boolean =>
    BigInt(inClusterNeeded(c, fleet.addressSurge)) <= countIntervals(subtractIntervals([usableHosts(cidr)], c.migrationExclude));
  // keep what the ledger has
  for (const c of carved) {
    const old = prev.clusters[c.name]?.migrationCidr;
    const r = old !== undefined && fleet.supernet ? parseCidr(old) : undefined;
    if (!r?.ok || !contains(fleet.supernet!, r.cidr) || taken.some((t) => overlaps(t, r.cidr))) continue;
    if (!fits(c, r.cidr)) {
      p.add('cidr-too-small', `spec.clusters[${c.index}].nodes`,
        `${needsInCluster(c, fleet.addressSurge)} but its ledger CIDR ${old} holds ${countIntervals([usableHosts(r.cidr)])}; it will not be renumbered silently`,
        `give spec.clusters[${c.index}].migrationNetwork.cidr a larger CIDR explicitly (its handlers then move), or lower the node count`);
      continue;
    }
    cidrs.set(c.name, r.cidr);
    taken.push(r.cidr);
  }
  // then take the lowest free aligned block of the supernet, never a released or previously held one
  taken.push(...quarantine.cidrs);
  if (!fleet.supernet) return cidrs;
  const blocks = new BlockCursor(fleet.supernet, fleet.clusterPrefixLength, taken);
  for (const c of carved) {
    if (cidrs.has(c.name)) continue;
    const found = blocks.take();
    if (!found) {
      const total = countIntervals([fleet.supernet]) / blocks.size;
      p.add('supernet-exhausted', 'spec.migrationNetwork.supernet',
        `supernet ${formatCidr(fleet.supernet)} has no free /${fleet.clusterPrefixLength} left for cluster ${c.name} (${total} blocks in all, ${carved.length} clusters carve from it, others taken by explicit, pod, service or pool ranges)`,
        'use a larger supernet, a longer clusterPrefixLength, or give the cluster an explicit migrationNetwork.cidr');
    } else if (!fits(c, found)) {
      p.add('cidr-too-small', `spec.clusters[${c.index}].nodes`,
        `${needsInCluster(c, fleet.addressSurge)} (${inClusterBreakdown(c, fleet.addressSurge)}) but a carved /${fleet.clusterPrefixLength} holds ${countIntervals([usableHosts(found)])}`,
        'lower spec.migrationNetwork.clusterPrefixLength (bigger blocks) or give the cluster an explicit larger migrationNetwork.cidr');
    } else {
      cidrs.set(c.name, found);
      blocks.claim(found);
    }
  }
  return cidrs;
}

/** Walks the aligned /prefix blocks of a supernet upwards, skipping every taken range. */
class BlockCursor {
  readonly size: bigint;
  private cursor: bigint;
  private merged: Interval[];

  constructor(private readonly supernet: Cidr, private readonly prefix: number, private readonly taken: Interval[]) {
    this.size = 1n << BigInt(bits(supernet.family) - prefix);
    this.cursor = supernet.start;
    this.merged = this.sortedTaken();
  }

  private sortedTaken(): Interval[] {
    return mergeIntervals(this.taken.filter((t) => t.family === this.supernet.family && overlaps(t, this.supernet)));
  }

  /** The lowest free block at or above the cursor (the cursor moves past it), or undefined. */
  take(): Cidr | undefined {
    const { supernet: sn, size } = this;
    while (this.cursor + size - 1n <= sn.end) {
      const cand = cidrOf(sn.family, this.cursor, this.prefix);
      const clash = this.merged.find((t) => overlaps(t, cand));
      if (!clash) { this.cursor += size; return cand; }
      // jump past the clash, keeping alignment relative to the supernet start
      let next = ((clash.end + 1n + size - 1n) / size) * size;
      if (next < sn.start) next = sn.start;
      this.cursor = sn.start + (((next - sn.start) + size - 1n) / size) * size;
    }
    return undefined;
  }

  claim(block: Cidr): void {
    this.taken.push(block);
    this.merged = this.sortedTaken();
  }
}

// ---------------- phase 2: addresses on the shared network ----------------

interface SharedAddresses {
  /** Per cluster: gateway replicas' shared addresses (by replica), or the direct/native slice (ascending). */
  readonly members: Map<string, bigint[]>;
  /** Per cluster with a trust agent: its replicas' addresses (by replica). */
  readonly trustAgents: Map<string, bigint[]>;
}

/**
 * Every shared-network address. The trust agents ask after every gateway and slice, so a fleet that
 * gains them (issue #30) keeps every address it had; each agent replica keeps its own ledger entry.
 */
function planSharedAddresses(p: ProblemCollector, fleet: ResolvedFleet, prev: Ledger, quarantine: Quarantine): SharedAddresses {
  const out: SharedAddresses = { members: new Map(), trustAgents: new Map() };
  // each site's members take addresses from its own pool (one site, `default`, unless the fleet declares sites)
  for (const site of fleet.crossCluster.sites) planSiteAddresses(p, fleet, site, prev, quarantine, out);
  return out;
}

function planSiteAddresses(p: ProblemCollector, fleet: ResolvedFleet, site: ResolvedSite, prev: Ledger, quarantine: Quarantine, out: SharedAddresses): void {
  const cc = fleet.crossCluster;
  const clusters = fleet.clusters.filter((c) => c.site === site.name);
  const requests = clusters.map((c): AddressRequest => {
    const old = prev.clusters[c.name];
    return c.datapath === 'gateway'
      ? { want: c.gatewayReplicas, bySlot: true, ledger: (old?.gateways ?? []).map((g) => ledgerAddr(g.crossCluster, cc.family)) }
      : { want: crossClusterNeeded(c, fleet.addressSurge) - c.trustAgentReplicas, bySlot: false, ledger: ledgerValues(old?.crossClusterAddresses, cc.family) };
  });
  const withAgents = clusters.filter((c) => c.trustAgentReplicas > 0);
  for (const c of withAgents) {
    const ledger = (prev.clusters[c.name]?.trustAgents ?? []).map((t) => ledgerAddr(t.crossCluster, cc.family));
    requests.push({ want: c.trustAgentReplicas, bySlot: true, ledger });
  }
  const got = keepThenTake(new AddressPool(site.usable), requests, keysOf(quarantine.crossKeys, cc.family));
  if (got.some((slots) => slots.includes(undefined))) {
    // resolveFleet checks totals first; this guards against anything it could not see
    p.add('pool-exhausted', sitePath(site, 'pool'), `the pool ran out of free addresses (usable ${countIntervals(site.usable)})`, 'add addresses to the pool');
  }
  clusters.forEach((c, i) => {
    const values = got[i].filter((v): v is bigint => v !== undefined);
    out.members.set(c.name, c.datapath === 'gateway' ? values : values.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  });
  const agents = got.slice(clusters.length);
  withAgents.forEach((c, i) => out.trustAgents.set(c.name, agents[i].filter((v): v is bigint => v !== undefined)));
}

// ---------------- phase 3: gateway addresses on the in-cluster network ----------------

interface GatewayInCluster { readonly replicas: bigint[]; readonly vip?: bigint }

/**
 * Each gateway cluster's replica addresses and VIP in its CIDR. The VIP is kept before new replicas
 * take addresses, so growing the replicas never moves it.
 */
function planGatewayInCluster(fleet: ResolvedFleet, prev: Ledger, cidrs: Map<string, Cidr>, quarantine: Quarantine): Map<string, GatewayInCluster> {
  const out = new Map<string, GatewayInCluster>();
  for (const c of fleet.clusters) {
    if (c.datapath !== 'gateway') continue;
    const cidr = cidrs.get(c.name)!;
    const old = prev.clusters[c.name];
    const pool = new AddressPool(subtractIntervals([usableHosts(cidr)], c.migrationExclude));
    const [replicas, vip] = keepThenTake(pool, [
      { want: c.gatewayReplicas, bySlot: true, ledger: (old?.gateways ?? []).map((g) => ledgerAddr(g.inCluster, cidr.family)) },
      { want: c.gatewayVip ? 1 : 0, bySlot: true, ledger: [ledgerAddr(old?.gatewayVip, cidr.family)] },
    ], keysOf(quarantine.inClusterKeys, cidr.family));
    out.set(c.name, { replicas: replicas as bigint[], vip: vip[0] });
  }
  return out;
}

// ---------------- phase 4: each cluster's plan and ledger entry ----------------

interface Allocation {
  readonly fleet: ResolvedFleet;
  readonly cidrs: Map<string, Cidr>;
  readonly shared: Map<string, bigint[]>;
  readonly trustAgents: Map<string, bigint[]>;
  readonly gatewayIn: Map<string, GatewayInCluster>;
  readonly quarantine: Quarantine;
  /**
   * Every exchanging cluster's peer-table entry, formatted once (each cluster's table is all of them but
   * itself), in cluster order: a gateway cluster with its CIDR, a trust agent with none (trust only).
   */
  readonly peers: PeerPlan[];
  /** The same entries for a trust agent's table: every one trust only. */
  readonly trustPeers: PeerPlan[];
  readonly sites: SitePlan[];
}

function peerEntries(fleet: ResolvedFleet, cidrs: Map<string, Cidr>, shared: Map<string, bigint[]>, trustAgents: Map<string, bigint[]>): PeerPlan[] {
  const endpoints = (values: bigint[]) => values.map((x) => ({ host: formatAddr(addr(fleet.crossCluster.family, x)), port: fleet.gateway.tunnelPort }));
  return fleet.clusters.flatMap((o): PeerPlan[] => {
    if (o.datapath === 'gateway') return [{ cluster: o.name, cidrs: [formatCidr(cidrs.get(o.name)!)], gateways: endpoints(shared.get(o.name)!) }];
    const agents = trustAgents.get(o.name);
    return agents?.length ? [{ cluster: o.name, cidrs: [], gateways: endpoints(agents) }] : [];
  });
}

type ModeParts = Pick<ClusterPlan, 'gateways' | 'gatewayVip' | 'peers' | 'crossClusterSync'> & { readonly ipam: WhereaboutsPlan; readonly trustAgents?: TrustAgentReplicaPlan[] };

function gatewayParts(a: Allocation, c: ResolvedCluster, entry: LedgerCluster): ModeParts {
  const cc = a.fleet.crossCluster;
  const cidr = a.cidrs.get(c.name)!;
  const fam = cidr.family;
  const { replicas: ins, vip } = a.gatewayIn.get(c.name)!;
  const cross = a.shared.get(c.name)!;
  entry.gateways = cross.map((x, i) => ({ inCluster: formatAddr(addr(fam, ins[i])), crossCluster: formatAddr(addr(cc.family, x)) }));
  if (vip !== undefined) entry.gatewayVip = formatAddr(addr(fam, vip));
  const remotes = a.fleet.clusters.filter((o) => o.datapath === 'gateway' && o.name !== c.name).map((o) => a.cidrs.get(o.name)!);
  // next hop: the VIP when the replicas fail over, else replica 0
  const via = formatAddr(addr(fam, vip ?? ins[0]));
  // the replicas' own addresses, the VIP and the quarantined ones are never whereabouts' to give
  const own = [...new Set([...ins, ...(vip !== undefined ? [vip] : []), ...quarantinedIn(a.quarantine, cidr)])].map((v) => hostCidr(addr(fam, v)));
  // a gateway exchanges trust only with the exchanging clusters (trust agents are listed only then)
  const exchanges = a.fleet.trust.clusters[c.name]?.exchange === true;
  return {
    gateways: cross.map((x, i) => ({
      replica: i,
      inCluster: `${formatAddr(addr(fam, ins[i]))}/${cidr.prefix}`,
      crossCluster: `${formatAddr(addr(cc.family, x))}/${siteOf(a.fleet, c).prefixLength}`,
    })),
    gatewayVip: vip !== undefined ? `${formatAddr(addr(fam, vip))}/${cidr.prefix}` : undefined,
    peers: a.peers.filter((e) => e.cluster !== c.name && (exchanges || e.cidrs.length > 0)),
    ipam: {
      range: formatCidr(cidr),
      exclude: [...own, ...c.migrationExclude.flatMap(intervalToCidrs).map(formatCidr)],
      routes: routesFor(remotes, a.fleet.supernet, cidr).map((dst) => ({ dst, gw: via })),
    },
  };
}

function sliceParts(p: ProblemCollector, a: Allocation, c: ResolvedCluster, entry: LedgerCluster): ModeParts {
  const cc = a.fleet.crossCluster;
  const slice = a.shared.get(c.name)!;
  entry.crossClusterAddresses = compact(slice, cc.family);
  const site = siteOf(a.fleet, c);
  // direct handlers and native sync controllers sit on the shared network: they carry the site's routes
  const sliceRange = { ...sliceIpam(p, slice, cc.family, site.subnets, c), routes: site.routes };
  const agents = a.trustAgents.get(c.name) ?? [];
  if (agents.length) entry.trustAgents = agents.map((x) => ({ crossCluster: formatAddr(addr(cc.family, x)) }));
  const trustAgents = agents.map((x, i) => ({ replica: i, crossCluster: `${formatAddr(addr(cc.family, x))}/${site.prefixLength}` }));
  const peers = agents.length ? a.trustPeers.filter((e) => e.cluster !== c.name) : [];
  if (c.datapath === 'direct') return { gateways: [], peers, trustAgents, ipam: sliceRange };
  const cidr = a.cidrs.get(c.name)!;
  return {
    gateways: [], peers, trustAgents,
    ipam: { range: formatCidr(cidr), exclude: c.migrationExclude.flatMap(intervalToCidrs).map(formatCidr), routes: [] },
    crossClusterSync: { nadName: cc.nadName, ipam: sliceRange },
  };
}

function clusterPlan(p: ProblemCollector, a: Allocation, c: ResolvedCluster, entry: LedgerCluster): ClusterPlan {
  const cc = a.fleet.crossCluster;
  const surge = a.fleet.addressSurge;
  const cidr = a.cidrs.get(c.name);
  const usableIn = cidr && countIntervals(subtractIntervals([usableHosts(cidr)], c.migrationExclude));
  if (cidr && c.datapath !== 'direct' && !c.migrationCidr) entry.migrationCidr = formatCidr(cidr);
  const { ipam, ...parts } = c.datapath === 'gateway' ? gatewayParts(a, c, entry) : sliceParts(p, a, c, entry);
  return {
    name: c.name, datapath: c.datapath, nodes: c.nodes, syncReplicas: c.syncReplicas, syncPlacement: c.syncPlacement,
    kubevirt: c.kubevirt, multiNetworkPolicy: c.multiNetworkPolicy, openshift: c.openshift,
    migrationNetwork: {
      nadName: c.datapath === 'direct' ? cc.nadName : a.fleet.migrationNadName,
      attachment: c.datapath === 'direct' ? siteOf(a.fleet, c).attachment : c.migrationAttachment,
      cidr: cidr ? formatCidr(cidr) : undefined,
      ipam,
    },
    crossClusterSync: parts.crossClusterSync, gateways: parts.gateways, gatewayVip: parts.gatewayVip, peers: parts.peers,
    trustAgents: parts.trustAgents ?? [],
    site: a.sites.find((s) => s.name === c.site) ?? a.sites[0],
    capacity: {
      inCluster: usableIn !== undefined ? { needed: inClusterNeeded(c, surge), usable: usableIn.toString() } : undefined,
      crossCluster: crossClusterNeeded(c, surge),
    },
  };
}

function capacityReport(fleet: ResolvedFleet): CapacityReport {
  const cc = fleet.crossCluster;
  const surge = fleet.addressSurge;
  const sum = (f: (c: ResolvedCluster) => number): number => fleet.clusters.reduce((n, c) => n + f(c), 0);
  const needed = sum((c) => crossClusterNeeded(c, surge));
  return {
    family: cc.family,
    pool: cc.poolCount.toString(), excluded: cc.excludedCount.toString(), reserved: cc.reservedCount.toString(),
    usable: cc.usableCount.toString(), needed, free: (cc.usableCount - BigInt(needed)).toString(),
    byMode: {
      direct: sum((c) => c.nodes + c.syncReplicas),
      directWithSurge: sum((c) => crossClusterNeeded(c, surge, 'direct')),
      native: sum((c) => crossClusterNeeded(c, surge, 'native')),
      gateway: sum((c) => c.gatewayReplicas),
    },
  };
}

// ---------------- the phases together ----------------

/** The families (and explicit CIDRs) the fleet expects of its ledger. */
function ledgerFamilies(fleet: ResolvedFleet): LedgerFamilies {
  const inCluster = new Map<string, Family>();
  const explicitCidrs = new Map<string, Interval>();
  for (const c of fleet.clusters) {
    if (c.migrationCidr) { inCluster.set(c.name, c.migrationCidr.family); explicitCidrs.set(c.name, c.migrationCidr); }
    else if (fleet.supernet) {inCluster.set(c.name, fleet.supernet.family);}
  }
  return { crossCluster: fleet.crossCluster.family, inCluster, explicitCidrs };
}

/** Plan a fleet, as a value: the plan, the next ledger and the changes, or every problem. */
function checkPlan(fleet: ResolvedFleet, previous?: Ledger): Checked<PlanResult> {
  const p = new ProblemCollector();
  const prev = previous && previous.fleet === fleet.name ? previous : emptyLedger(fleet.name);
  // a ledger that holds one address twice, a non-address or the wrong family is refused, never repaired
  const inconsistent = ledgerProblems(prev, ledgerFamilies(fleet));
  if (inconsistent.length) return { ok: false, problems: inconsistent };
  // released addresses stay quarantined until reclaimed; a router never takes a planned address
  const quarantine = quarantineOf(prev);
  p.addAll(routerProblems(fleet.crossCluster.gateway, fleet.crossCluster.family, prev));
  const cidrs = planClusterCidrs(p, fleet, prev, quarantine);
  const { members: shared, trustAgents } = planSharedAddresses(p, fleet, prev, quarantine);
  if (!p.empty) return p.failed();
  const gatewayIn = planGatewayInCluster(fleet, prev, cidrs, quarantine);
  const peers = peerEntries(fleet, cidrs, shared, trustAgents);
  // a trust-only copy gets its own gateways array: the runtime-config peer cache (src/gateway/config.ts) is keyed by it
  const trustPeers = peers.filter((e) => fleet.trust.clusters[e.cluster]?.exchange)
    .map((e) => (e.cidrs.length ? { ...e, cidrs: [], gateways: [...e.gateways] } : e));
  const allocation: Allocation = { fleet, cidrs, shared, trustAgents, gatewayIn, quarantine, peers, trustPeers, sites: sitePlans(fleet) };
  const next: Record<string, LedgerCluster> = {};
  const clusters = fleet.clusters.map((c) => clusterPlan(p, allocation, c, (next[c.name] = {})));
  const released = nextQuarantine(prev, next);
  const ledger: Ledger = { ...emptyLedger(fleet.name), clusters: next, ...(released.length ? { released } : {}) };
  const cc = fleet.crossCluster;
  return p.result(() => ({
    plan: {
      fleet: fleet.name,
      crossCluster: { nadName: cc.nadName, attachment: cc.attachment, prefixLength: cc.prefixLength, gateway: cc.gateway, routes: cc.routes },
      migrationPolicy: fleet.migrationPolicy,
      gateway: fleet.gateway,
      addressSurge: fleet.addressSurge,
      supernet: fleet.supernet ? formatCidr(fleet.supernet) : undefined,
      clusters, trust: fleet.trust, sites: allocation.sites,
      capacity: capacityReport(fleet),
    },
    ledger,
    changes: diffLedgers(prev, ledger),
  }));
}

/** Plan a fleet. Throws FleetValidationError when the plan cannot be made (capacity, exhausted supernet). */
export function planFleet(fleet: ResolvedFleet, previous?: Ledger): PlanResult {
  return orThrow(checkPlan(fleet, previous));
}

/** Routes a gateway-mode handler needs: one supernet route when every remote CIDR is inside it, else the exact aggregate. */
function routesFor(remotes: Cidr[], supernet: Cidr | undefined, local: Cidr): string[] {
  if (remotes.length === 0) return [];
  if (supernet && remotes.every((r) => contains(supernet, r)) && contains(supernet, local)) return [formatCidr(supernet)];
  return aggregateCidrs(remotes).map(formatCidr);
}

function compact(values: bigint[], family: Family): string[] {
  return mergeIntervals(values.map((v) => ({ family, start: v, end: v }))).map(formatInterval);
}

/** The whereabouts range of a direct/native cluster's slice: one subnet, first to last, the gaps excluded. */
function sliceIpam(p: ProblemCollector, slice: bigint[], family: Family, subnets: readonly Cidr[], c: ResolvedCluster): WhereaboutsPlan {
  const subnetOf = (v: bigint): Cidr | undefined => subnets.find((s) => s.start <= v && v <= s.end);
  const sn = subnetOf(slice[0]);
  const lo = slice[0];
  const hi = slice[slice.length - 1];
  if (!sn || slice.some((v) => subnetOf(v) !== sn)) {
    p.add('slice-spans-subnets', 'spec.crossClusterNetwork.addresses.prefixLength',
      `cluster ${c.name} (${c.datapath} mode) would hold shared-network addresses in more than one /${sn?.prefix ?? '?'} subnet; one whereabouts range cannot span them`,
      'widen prefixLength so the pool is one subnet, or use datapath: gateway');
    return { range: '', exclude: [], routes: [] };
  }
  const mine = mergeIntervals(slice.map((v) => ({ family, start: v, end: v })));
  const gaps = subtractIntervals([{ family, start: lo, end: hi }], mine);
  return {
    range: formatCidr(sn),
    rangeStart: formatAddr(addr(family, lo)),
    rangeEnd: formatAddr(addr(family, hi)),
    exclude: gaps.flatMap(intervalToCidrs).map(formatCidr),
    routes: [],
  };
}

export interface PlanOptions {
  /** The previous ledger: its addresses are kept. */
  readonly ledger?: Ledger;
  /**
   * The fleet's previous name, when it was renamed: its ledger is carried over (without it, a ledger of
   * another fleet is refused). @default - a ledger must belong to this fleet
   */
  readonly renamedFrom?: string;
  /** Fail when the plan would change the ledger (CI). */
  readonly frozen?: boolean;
}

/** A whole fleet document, or just a name and a spec. */
export type FleetInput = FleetDocument | { readonly name: string; readonly spec: FleetSpec };

export function toFleetDocument(fleet: FleetInput): FleetDocument {
  return 'apiVersion' in fleet
    ? fleet
    : { apiVersion: FLEET_API_VERSION, kind: FLEET_KIND, metadata: { name: fleet.name }, spec: fleet.spec };
}

/** `planFleetDocument` as a value: the plan with its document, or every problem. */
function checkFleetInput(fleet: FleetInput, opts: PlanOptions = {}): Checked<PlanResult & { document: FleetDocument }> {
  return checkedOf(salvageFleetInput(fleet, opts));
}

/**
 * Every problem of the ledger, the schema, the cross-field rules and the plan at once: each layer runs
 * on the part of the fleet the earlier ones found no problem in (src/fleet/salvage.ts draws the line). The
 * value is the plan with its document, complete when there is no problem, else the plan of the part
 * that could be planned (for the checks that read a plan, e.g. Harvester's), or nothing.
 */
export function salvageFleetInput(fleet: FleetInput, opts: PlanOptions = {}): Salvaged<PlanResult & { document: FleetDocument }> {
  const p = new ProblemCollector();
  const raw = toFleetDocument(fleet);
  // a ledger of another fleet is refused unless the fleet was renamed from it; every problem at once
  const carried = ledgerForFleet(typeof raw?.metadata?.name === 'string' ? raw.metadata.name : '', opts.ledger, opts.renamedFrom);
  p.addAll(carried.problems);
  if (opts.frozen && opts.ledger && carried.ledger && opts.ledger.fleet !== carried.ledger.fleet) {
    p.add('ledger-renamed', '(ledger)', `frozen: carrying the ledger of '${opts.ledger.fleet}' over rewrites it`,
      'run synth with --renamed-from once without --frozen and commit the ledger');
  }
  const usableLedger = p.empty;
  const doc = salvageFleetDocument(raw);
  p.addAll(doc.problems);
  const resolved = doc.value && salvageFleet(doc.value);
  // a second pass over a malformed document repeats what the schema found
  if (resolved) p.addAll(reindexProblems(resolved.problems, doc.clusterIndex), { newPathsOnly: true });
  // a document that left unreadable clusters out is checked, not planned (its cluster places differ)
  const part = usableLedger && !doc.clusterIndex && resolved?.value ? plannablePart(resolved.value, p.problems) : undefined;
  const result = part && salvagePlan(p, part, carried.ledger);
  if (!result || !doc.value || !p.empty) return { problems: p.problems, value: result && doc.value ? { ...result, document: doc.value } : undefined };
  if (opts.frozen && !opts.ledger) {
    p.add('ledger-missing', '(ledger)', 'frozen, but there is no ledger', 'run synth without --frozen once and commit the ledger it writes');
  } else if (opts.frozen && result.changes.length > 0) {
    p.add('ledger-would-change', '(ledger)', `frozen: the plan would change the ledger:\n      ${result.changes.map((c) => formatLedgerChange(c, true)).join('\n      ')}`,
      'run synth without --frozen and commit the updated ledger');
  }
  return { problems: p.problems, value: { ...result, document: doc.value } };
}

/** Plan what could be planned; its problems join `p`. The plan, when planning got that far. */
function salvagePlan(p: ProblemCollector, fleet: ResolvedFleet, ledger: Ledger | undefined): PlanResult | undefined {
  const r = checkPlan(fleet, ledger);
  p.addAll(r.problems);
  return r.ok ? r.value : undefined;
}

/** Validate (structure and cross-field rules), plan against the ledger, and enforce `frozen`. Throws FleetValidationError. */
export function planFleetDocument(fleet: FleetInput, opts: PlanOptions = {}, source?: string): PlanResult & { document: FleetDocument } {
  return orThrow(checkFleetInput(fleet, opts), source);
}
