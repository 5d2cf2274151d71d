/**
 * Address planning: from a resolved fleet and the previous ledger to a complete, deterministic plan
 * (per-cluster CIDRs, gateway addresses on both networks, whereabouts ranges, routes, peer tables)
 * and the next ledger. Surviving members keep their addresses; new members take the lowest free one.
 * Pure, no cdk8s import.
 */
import { Attachment, Datapath, SyncPlacement } from './fleet-schema';
import { FleetProblem, FleetValidationError } from './errors';
import {
  Cidr, Interval, Family, aggregateCidrs, bits, cidrOf, contains, containsAddr, countIntervals, formatAddr, formatCidr,
  formatInterval, hostCidr, intervalToCidrs, mergeIntervals, overlaps, parseAddr, parseCidr, parsePoolItem, addr,
  subtractIntervals,
} from './ip';
import { Ledger, LedgerChange, LedgerCluster, diffLedgers, emptyLedger, formatLedgerChange } from './ledger';
import { FleetDocument, FleetSpec, FLEET_API_VERSION, FLEET_KIND } from './fleet-schema';
import {
  parseFleetDocument, resolveFleet, ResolvedCluster, ResolvedFleet, ResolvedGateway, ResolvedKubevirt, crossClusterNeeded, inClusterNeeded, usableHosts,
} from './resolve';

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

export interface PeerPlan {
  readonly cluster: string;
  readonly cidrs: string[];
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
  /** gateway mode: the peer table (other gateway-mode clusters). */
  readonly peers: PeerPlan[];
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
  /** KubeVirt CA rotation and CA exchange per cluster (src/trust.ts). */
  readonly trust: ResolvedFleet['trust'];
}

export interface PlanResult {
  readonly plan: FleetPlan;
  readonly ledger: Ledger;
  /** What changed against the previous ledger. */
  readonly changes: LedgerChange[];
}

/** Walks the free addresses of `usable` in ascending order, skipping `used`. */
class FreeCursor {
  private i = 0;
  private next: bigint | undefined;
  constructor(private readonly usable: Interval[], private readonly used: Set<string>) {
    this.next = usable[0]?.start;
  }
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
      const key = `${iv.family}:${v}`;
      if (this.used.has(key)) continue;
      this.used.add(key);
      return v;
    }
    return undefined;
  }
}

const key = (family: Family, v: bigint): string => `${family}:${v}`;

/** Plan a fleet. Throws FleetValidationError when the plan cannot be made (capacity, exhausted supernet). */
export function planFleet(fleet: ResolvedFleet, previous?: Ledger): PlanResult {
  const problems: FleetProblem[] = [];
  const prev = previous && previous.fleet === fleet.name ? previous : emptyLedger(fleet.name);
  const next: Record<string, LedgerCluster> = {};
  const cc = fleet.crossCluster;
  const surge = fleet.addressSurge;
  for (const c of fleet.clusters) next[c.name] = {};

  // ---------------- in-cluster CIDRs ----------------
  const cidrOfCluster = new Map<string, Cidr>();
  const taken: Interval[] = [...cc.usable];
  for (const c of fleet.clusters) {
    if (c.migrationCidr) { cidrOfCluster.set(c.name, c.migrationCidr); taken.push(c.migrationCidr); }
    taken.push(...c.podCidrs, ...c.serviceCidrs);
  }
  const wantsCarve = fleet.clusters.filter((c) => !c.migrationCidr && c.datapath !== 'direct');
  const carveFits = (c: ResolvedCluster, cidr: Cidr): boolean =>
    BigInt(inClusterNeeded(c, surge)) <= countIntervals(subtractIntervals([usableHosts(cidr)], c.migrationExclude));
  // keep phase
  for (const c of wantsCarve) {
    const old = prev.clusters[c.name]?.migrationCidr;
    if (!old || !fleet.supernet) continue;
    const r = parseCidr(old);
    if (!r.ok || !contains(fleet.supernet, r.cidr) || taken.some((t) => overlaps(t, r.cidr))) continue;
    if (!carveFits(c, r.cidr)) {
      problems.push({
        path: `spec.clusters[${c.index}].nodes`,
        message: `cluster ${c.name} needs ${inClusterNeeded(c, surge)} in-cluster addresses but its ledger CIDR ${old} holds ${countIntervals([usableHosts(r.cidr)])}; it will not be renumbered silently`,
        fix: `give spec.clusters[${c.index}].migrationNetwork.cidr a larger CIDR explicitly (its handlers then move), or lower the node count`,
      });
      continue;
    }
    cidrOfCluster.set(c.name, r.cidr);
    taken.push(r.cidr);
  }
  // assign phase: lowest free aligned block of the supernet
  if (fleet.supernet) {
    const sn = fleet.supernet;
    const blockBits = bits(sn.family) - fleet.clusterPrefixLength;
    const blockSize = 1n << BigInt(blockBits);
    const sortedTaken = () => mergeIntervals(taken.filter((t) => t.family === sn.family && overlaps(t, sn)));
    let cursor = sn.start;
    let merged = sortedTaken();
    for (const c of wantsCarve) {
      if (cidrOfCluster.has(c.name)) continue;
      let found: Cidr | undefined;
      while (cursor + blockSize - 1n <= sn.end) {
        const cand = cidrOf(sn.family, cursor, fleet.clusterPrefixLength);
        const clash = merged.find((t) => overlaps(t, cand));
        if (!clash) { found = cand; cursor += blockSize; break; }
        // jump past the clash, keeping alignment
        const after = clash.end + 1n;
        cursor = ((after + blockSize - 1n) / blockSize) * blockSize;
        if (cursor < sn.start) cursor = sn.start;
        // re-align relative to the supernet start
        cursor = sn.start + (((cursor - sn.start) + blockSize - 1n) / blockSize) * blockSize;
      }
      if (!found) {
        const total = countIntervals([sn]) / blockSize;
        problems.push({
          path: 'spec.migrationNetwork.supernet',
          message: `supernet ${formatCidr(sn)} has no free /${fleet.clusterPrefixLength} left for cluster ${c.name} (${total} blocks in all, ${wantsCarve.length} clusters carve from it, others taken by explicit, pod, service or pool ranges)`,
          fix: 'use a larger supernet, a longer clusterPrefixLength, or give the cluster an explicit migrationNetwork.cidr',
        });
        continue;
      }
      if (!carveFits(c, found)) {
        problems.push({
          path: `spec.clusters[${c.index}].nodes`,
          message: `cluster ${c.name} needs ${inClusterNeeded(c, surge)} in-cluster addresses (${c.nodes} nodes + ${c.syncReplicas} sync controllers${c.datapath === 'gateway' ? ` + ${c.gatewayReplicas} gateways${c.gatewayVip ? ' + 1 gateway VIP' : ''}` : ''} + ${surge} surge) but a carved /${fleet.clusterPrefixLength} holds ${countIntervals([usableHosts(found)])}`,
          fix: 'lower spec.migrationNetwork.clusterPrefixLength (bigger blocks) or give the cluster an explicit larger migrationNetwork.cidr',
        });
        continue;
      }
      cidrOfCluster.set(c.name, found);
      taken.push(found);
      merged = sortedTaken();
      next[c.name].migrationCidr = formatCidr(found);
    }
  }
  for (const c of wantsCarve) {
    const got = cidrOfCluster.get(c.name);
    if (got && next[c.name].migrationCidr === undefined) next[c.name].migrationCidr = formatCidr(got);
  }

  // ---------------- gateway addresses on the shared network ----------------
  const usedCross = new Set<string>();
  const gwCross = new Map<string, (bigint | undefined)[]>();
  const sliceOf = new Map<string, bigint[]>();
  const usableCross = cc.usable;
  const inUsable = (v: bigint): boolean => usableCross.some((iv) => iv.start <= v && v <= iv.end);
  // keep phase
  for (const c of fleet.clusters) {
    const old = prev.clusters[c.name];
    if (c.datapath === 'gateway') {
      const arr: (bigint | undefined)[] = new Array(c.gatewayReplicas).fill(undefined);
      (old?.gateways ?? []).slice(0, c.gatewayReplicas).forEach((g, i) => {
        const a = parseAddr(g.crossCluster);
        if (a && a.family === cc.family && inUsable(a.value) && !usedCross.has(key(a.family, a.value))) {
          usedCross.add(key(a.family, a.value));
          arr[i] = a.value;
        }
      });
      gwCross.set(c.name, arr);
    } else {
      const want = crossClusterNeeded(c, surge);
      const kept: bigint[] = [];
      for (const item of old?.crossClusterAddresses ?? []) {
        const r = parsePoolItem(item);
        if (!r.ok || r.interval.family !== cc.family) continue;
        for (let v = r.interval.start; v <= r.interval.end && kept.length < want; v++) {
          if (inUsable(v) && !usedCross.has(key(cc.family, v))) { usedCross.add(key(cc.family, v)); kept.push(v); }
        }
      }
      sliceOf.set(c.name, kept);
    }
  }
  // assign phase
  const cursor = new FreeCursor(usableCross, usedCross);
  let exhausted = false;
  for (const c of fleet.clusters) {
    if (c.datapath === 'gateway') {
      const arr = gwCross.get(c.name)!;
      for (let i = 0; i < arr.length; i++) if (arr[i] === undefined) { arr[i] = cursor.take(); if (arr[i] === undefined) exhausted = true; }
    } else {
      const s = sliceOf.get(c.name)!;
      const want = crossClusterNeeded(c, surge);
      while (s.length < want) { const v = cursor.take(); if (v === undefined) { exhausted = true; break; } s.push(v); }
      s.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
    }
  }
  if (exhausted) {
    // resolveFleet checks totals first; this guards against anything it could not see
    problems.push({ path: 'spec.crossClusterNetwork.addresses.pool', message: `the pool ran out of free addresses (usable ${cc.usableCount})`, fix: 'add addresses to the pool' });
  }
  if (problems.length) throw new FleetValidationError(problems);

  // direct/native slices must sit in one subnet for a single whereabouts range
  const subnetOf = (v: bigint): Cidr | undefined => cc.subnets.find((s) => s.start <= v && v <= s.end);

  // ---------------- gateway in-cluster addresses ----------------
  const gwIn = new Map<string, bigint[]>();
  const gwVip = new Map<string, bigint>();
  for (const c of fleet.clusters) {
    if (c.datapath !== 'gateway') continue;
    const cidr = cidrOfCluster.get(c.name)!;
    const hosts = subtractIntervals([usableHosts(cidr)], c.migrationExclude);
    const used = new Set<string>();
    const arr: (bigint | undefined)[] = new Array(c.gatewayReplicas).fill(undefined);
    (prev.clusters[c.name]?.gateways ?? []).slice(0, c.gatewayReplicas).forEach((g, i) => {
      const a = parseAddr(g.inCluster);
      if (a && hosts.some((h) => containsAddr(h, a)) && !used.has(key(a.family, a.value))) { used.add(key(a.family, a.value)); arr[i] = a.value; }
    });
    // the VIP is kept before new replicas take addresses, so growing replicas never moves it
    let vip: bigint | undefined;
    const oldVip = c.gatewayVip ? parseAddr(prev.clusters[c.name]?.gatewayVip ?? '') : undefined;
    if (oldVip && hosts.some((h) => containsAddr(h, oldVip)) && !used.has(key(oldVip.family, oldVip.value))) { used.add(key(oldVip.family, oldVip.value)); vip = oldVip.value; }
    const cur = new FreeCursor(hosts, used);
    for (let i = 0; i < arr.length; i++) if (arr[i] === undefined) arr[i] = cur.take();
    if (c.gatewayVip && vip === undefined) vip = cur.take();
    gwIn.set(c.name, arr as bigint[]);
    if (vip !== undefined) gwVip.set(c.name, vip);
  }

  // ---------------- assemble the plan ----------------
  const gatewayClusters = fleet.clusters.filter((c) => c.datapath === 'gateway');
  // every gateway cluster's peer-table entry, formatted once (each cluster's table is all of them but itself)
  let peerCache: PeerPlan[] | undefined;
  const peerEntries = (): PeerPlan[] => (peerCache ??= gatewayClusters.map((o) => ({
    cluster: o.name,
    cidrs: [formatCidr(cidrOfCluster.get(o.name)!)],
    gateways: (gwCross.get(o.name)! as bigint[]).map((x) => ({ host: formatAddr(addr(cc.family, x)), port: fleet.gateway.tunnelPort })),
  })));
  const clusters: ClusterPlan[] = fleet.clusters.map((c) => {
    const cidr = cidrOfCluster.get(c.name);
    const fam = cidr?.family ?? cc.family;
    let gateways: GatewayReplicaPlan[] = [];
    let gatewayVip: string | undefined;
    let peers: PeerPlan[] = [];
    let migrationIpam: WhereaboutsPlan;
    let crossClusterSync: ClusterPlan['crossClusterSync'];
    if (c.datapath === 'gateway') {
      const ins = gwIn.get(c.name)!;
      const cross = gwCross.get(c.name)! as bigint[];
      gateways = cross.map((x, i) => ({
        replica: i,
        inCluster: `${formatAddr(addr(fam, ins[i]))}/${cidr!.prefix}`,
        crossCluster: `${formatAddr(addr(cc.family, x))}/${cc.prefixLength}`,
      }));
      next[c.name].gateways = cross.map((x, i) => ({ inCluster: formatAddr(addr(fam, ins[i])), crossCluster: formatAddr(addr(cc.family, x)) }));
      const remotes = gatewayClusters.filter((o) => o.name !== c.name).map((o) => cidrOfCluster.get(o.name)!);
      const vip = gwVip.get(c.name);
      if (vip !== undefined) {
        gatewayVip = `${formatAddr(addr(fam, vip))}/${cidr!.prefix}`;
        next[c.name].gatewayVip = formatAddr(addr(fam, vip));
      }
      // next hop: the VIP when the replicas fail over, else replica 0
      const via = formatAddr(addr(fam, vip ?? ins[0]));
      migrationIpam = {
        range: formatCidr(cidr!),
        exclude: [...[...ins, ...(vip !== undefined ? [vip] : [])].map((v) => hostCidr(addr(fam, v))), ...c.migrationExclude.flatMap(intervalToCidrs).map(formatCidr)],
        routes: routesFor(remotes, fleet.supernet, cidr!).map((dst) => ({ dst, gw: via })),
      };
      peers = peerEntries().filter((e) => e.cluster !== c.name);
    } else if (c.datapath === 'native') {
      migrationIpam = {
        range: formatCidr(cidr!),
        exclude: c.migrationExclude.flatMap(intervalToCidrs).map(formatCidr),
        routes: [],
      };
      const slice = sliceOf.get(c.name)!;
      crossClusterSync = { nadName: cc.nadName, ipam: sliceIpam(slice, cc.family, subnetOf, c, problems) };
      next[c.name].crossClusterAddresses = compact(slice, cc.family);
    } else {
      const slice = sliceOf.get(c.name)!;
      migrationIpam = sliceIpam(slice, cc.family, subnetOf, c, problems);
      next[c.name].crossClusterAddresses = compact(slice, cc.family);
    }
    return {
      name: c.name, datapath: c.datapath, nodes: c.nodes, syncReplicas: c.syncReplicas, syncPlacement: c.syncPlacement,
      kubevirt: c.kubevirt, multiNetworkPolicy: c.multiNetworkPolicy,
      migrationNetwork: {
        nadName: c.datapath === 'direct' ? cc.nadName : fleet.migrationNadName,
        attachment: c.datapath === 'direct' ? cc.attachment : c.migrationAttachment,
        cidr: cidr ? formatCidr(cidr) : undefined,
        ipam: migrationIpam,
      },
      crossClusterSync, gateways, gatewayVip, peers,
      capacity: {
        inCluster: cidr ? { needed: inClusterNeeded(c, surge), usable: countIntervals(subtractIntervals([usableHosts(cidr)], c.migrationExclude)).toString() } : undefined,
        crossCluster: crossClusterNeeded(c, surge),
      },
    };
  });
  if (problems.length) throw new FleetValidationError(problems);

  const needed = fleet.clusters.reduce((n, c) => n + crossClusterNeeded(c, surge), 0);
  const ledger: Ledger = { ...emptyLedger(fleet.name), clusters: next };
  const plan: FleetPlan = {
    fleet: fleet.name,
    crossCluster: { nadName: cc.nadName, attachment: cc.attachment, prefixLength: cc.prefixLength, gateway: cc.gateway, routes: cc.routes },
    migrationPolicy: fleet.migrationPolicy,
    gateway: fleet.gateway,
    addressSurge: surge,
    supernet: fleet.supernet ? formatCidr(fleet.supernet) : undefined,
    clusters, trust: fleet.trust,
    capacity: {
      family: cc.family,
      pool: cc.poolCount.toString(), excluded: cc.excludedCount.toString(), reserved: cc.reservedCount.toString(),
      usable: cc.usableCount.toString(), needed, free: (cc.usableCount - BigInt(needed)).toString(),
      byMode: {
        direct: fleet.clusters.reduce((n, c) => n + c.nodes + c.syncReplicas, 0),
        directWithSurge: fleet.clusters.reduce((n, c) => n + crossClusterNeeded(c, surge, 'direct'), 0),
        native: fleet.clusters.reduce((n, c) => n + crossClusterNeeded(c, surge, 'native'), 0),
        gateway: fleet.clusters.reduce((n, c) => n + c.gatewayReplicas, 0),
      },
    },
  };
  return { plan, ledger, changes: diffLedgers(prev, ledger) };
}

/** Routes a gateway-mode handler needs: one supernet route when every remote CIDR is inside it, else the exact aggregate. */
export function routesFor(remotes: Cidr[], supernet: Cidr | undefined, local: Cidr): string[] {
  if (remotes.length === 0) return [];
  if (supernet && remotes.every((r) => contains(supernet, r)) && contains(supernet, local)) return [formatCidr(supernet)];
  return aggregateCidrs(remotes).map(formatCidr);
}

function compact(values: bigint[], family: Family): string[] {
  return mergeIntervals(values.map((v) => ({ family, start: v, end: v }))).map(formatInterval);
}

function sliceIpam(slice: bigint[], family: Family, subnetOf: (v: bigint) => Cidr | undefined, c: ResolvedCluster, problems: FleetProblem[]): WhereaboutsPlan {
  const sn = subnetOf(slice[0]);
  const lo = slice[0];
  const hi = slice[slice.length - 1];
  if (!sn || slice.some((v) => subnetOf(v) !== sn)) {
    problems.push({
      path: 'spec.crossClusterNetwork.addresses.prefixLength',
      message: `cluster ${c.name} (${c.datapath} mode) would hold shared-network addresses in more than one /${sn?.prefix ?? '?'} subnet; one whereabouts range cannot span them`,
      fix: 'widen prefixLength so the pool is one subnet, or use datapath: gateway',
    });
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

/** Validate (structure and cross-field rules), plan against the ledger, and enforce `frozen`. */
export function planFleetDocument(fleet: FleetInput, opts: PlanOptions = {}, source?: string): PlanResult & { document: FleetDocument } {
  const document = parseFleetDocument(toFleetDocument(fleet), source);
  const result = planFleet(resolveFleet(document, source), opts.ledger);
  if (opts.frozen && !opts.ledger) {
    throw new FleetValidationError([{ path: '(ledger)', message: 'frozen, but there is no ledger', fix: 'run synth without --frozen once and commit the ledger it writes' }], source);
  }
  if (opts.frozen && result.changes.length > 0) {
    throw new FleetValidationError([{
      path: '(ledger)',
      message: `frozen: the plan would change the ledger:\n      ${result.changes.map(formatLedgerChange).join('\n      ')}`,
      fix: 'run synth without --frozen and commit the updated ledger',
    }], source);
  }
  return { ...result, document };
}
