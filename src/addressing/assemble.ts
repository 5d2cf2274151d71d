/**
 * Address planning, assembly: the allocation turned into each cluster's plan (its NADs' IPAM, gateway
 * and trust-agent addresses, peer table, capacity) and the next ledger; `checkPlan` runs the phases in
 * order. Pure, no cdk8s import.
 */
import { Checked, ProblemCollector } from '../base/errors';
import {
  Cidr, Interval, Family, aggregateCidrs, contains, countIntervals, formatAddr, formatCidr, formatInterval, hostCidr, intervalToCidrs,
  mergeIntervals, addr, subtractIntervals, usableHosts,
} from '../base/ip';
import { Ledger, LedgerCluster, diffLedgers, emptyLedger, nextQuarantine } from './ledger';
import { planFleetVmNetworks } from '../vmnet/plan';
import { Quarantine, LedgerFamilies, ledgerProblems, quarantineOf, quarantinedIn, routerProblems } from './ledger-guard';
import { ResolvedCluster, ResolvedFleet, crossClusterNeeded, inClusterNeeded } from '../fleet/resolved';
import { CapacityReport, ClusterPlan, PeerPlan, PlanResult, TrustAgentReplicaPlan, WhereaboutsPlan } from './fleet-plan';
import { GatewayInCluster, planClusterCidrs, planGatewayInCluster, planSharedAddresses } from './allocate';
import { SitePlan, siteOf, sitePlans } from './sites';
import { datapathMode } from '../fleet/datapath-modes';

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
    if (datapathMode(o.datapath).gateways) return [{ cluster: o.name, cidrs: [formatCidr(cidrs.get(o.name)!)], gateways: endpoints(shared.get(o.name)!) }];
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
  const remotes = a.fleet.clusters.filter((o) => datapathMode(o.datapath).gateways && o.name !== c.name).map((o) => a.cidrs.get(o.name)!);
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
  if (datapathMode(c.datapath).sharedMigrationNetwork) return { gateways: [], peers, trustAgents, ipam: sliceRange };
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
  if (cidr && !datapathMode(c.datapath).sharedMigrationNetwork && !c.migrationCidr) entry.migrationCidr = formatCidr(cidr);
  const { ipam, ...parts } = datapathMode(c.datapath).gateways ? gatewayParts(a, c, entry) : sliceParts(p, a, c, entry);
  return {
    name: c.name, datapath: c.datapath, nodes: c.nodes, syncReplicas: c.syncReplicas, syncPlacement: c.syncPlacement,
    kubevirt: c.kubevirt, multiNetworkPolicy: c.multiNetworkPolicy, networkPolicies: c.networkPolicies, openshift: c.openshift,
    migrationNetwork: {
      nadName: datapathMode(c.datapath).sharedMigrationNetwork ? cc.nadName : a.fleet.migrationNadName,
      attachment: datapathMode(c.datapath).sharedMigrationNetwork ? siteOf(a.fleet, c).attachment : c.migrationAttachment,
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
export function checkPlan(fleet: ResolvedFleet, previous?: Ledger): Checked<PlanResult> {
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
  // issue 40: VM networks, planned against the ledger's own part (src/vmnet/plan.ts)
  const vm = planFleetVmNetworks(fleet, prev);
  p.addAll(vm.problems);
  const ledger: Ledger = { ...emptyLedger(fleet.name), clusters: next, ...(released.length ? { released } : {}), ...vm.ledger };
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
      ...vm.plan,
    },
    ledger,
    changes: diffLedgers(prev, ledger),
  }));
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
