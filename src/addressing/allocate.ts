/**
 * Address planning, allocation: each cluster's in-cluster CIDR, every address on the shared network
 * (gateways, direct/native slices, trust agents), and each gateway's addresses in its own CIDR. Surviving
 * members keep their addresses; new members take the lowest free one. Pure, no cdk8s import.
 */
import { ProblemCollector } from '../base/errors';
import {
  Cidr, Interval, bits, cidrOf, contains, countIntervals, formatCidr, mergeIntervals, overlaps, parseCidr, subtractIntervals, usableHosts,
} from '../base/ip';
import { Ledger } from './ledger';
import { Quarantine } from './ledger-guard';
import { ResolvedCluster, ResolvedFleet, crossClusterNeeded, inClusterBreakdown, inClusterNeeded } from '../fleet/resolved';
import { AddressPool, AddressRequest, keepThenTake, keysOf, ledgerAddr, ledgerValues } from './address-pool';
import { ResolvedSite, sitePath } from '../fleet/sites';
import { datapathMode } from '../fleet/datapath-modes';

const needsInCluster = (c: ResolvedCluster, surge: number): string => `cluster ${c.name} needs ${inClusterNeeded(c, surge)} in-cluster addresses`;

// ---------------- phase 1: in-cluster CIDRs ----------------

/** Every gateway/native cluster's in-cluster CIDR: explicit, else kept from the ledger, else carved from the supernet. */
export function planClusterCidrs(p: ProblemCollector, fleet: ResolvedFleet, prev: Ledger, quarantine: Quarantine): Map<string, Cidr> {
  const cidrs = new Map<string, Cidr>();
  const taken: Interval[] = [...fleet.crossCluster.usable];
  for (const c of fleet.clusters) {
    if (c.migrationCidr) { cidrs.set(c.name, c.migrationCidr); taken.push(c.migrationCidr); }
    taken.push(...c.podCidrs, ...c.serviceCidrs);
  }
  const carved = fleet.clusters.filter((c) => !c.migrationCidr && !datapathMode(c.datapath).sharedMigrationNetwork);
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
    // merged into the merged ranges (few: carved blocks are adjacent and coalesce), not every taken range
    // sorted again: n claims cost n short merges, not n sorts of up to n ranges
    if (block.family === this.supernet.family && overlaps(block, this.supernet)) this.merged = mergeIntervals([...this.merged, block]);
  }
}

// ---------------- phase 2: addresses on the shared network ----------------

export interface SharedAddresses {
  /** Per cluster: gateway replicas' shared addresses (by replica), or the direct/native slice (ascending). */
  readonly members: Map<string, bigint[]>;
  /** Per cluster with a trust agent: its replicas' addresses (by replica). */
  readonly trustAgents: Map<string, bigint[]>;
}

/**
 * Every shared-network address. The trust agents ask after every gateway and slice, so a fleet that
 * gains them (issue #30) keeps every address it had; each agent replica keeps its own ledger entry.
 */
export function planSharedAddresses(p: ProblemCollector, fleet: ResolvedFleet, prev: Ledger, quarantine: Quarantine): SharedAddresses {
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
    return datapathMode(c.datapath).gateways
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
    out.members.set(c.name, datapathMode(c.datapath).gateways ? values : values.sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)));
  });
  const agents = got.slice(clusters.length);
  withAgents.forEach((c, i) => out.trustAgents.set(c.name, agents[i].filter((v): v is bigint => v !== undefined)));
}

// ---------------- phase 3: gateway addresses on the in-cluster network ----------------

export interface GatewayInCluster { readonly replicas: bigint[]; readonly vip?: bigint }

/**
 * Each gateway cluster's replica addresses and VIP in its CIDR. The VIP is kept before new replicas
 * take addresses, so growing the replicas never moves it.
 */
export function planGatewayInCluster(fleet: ResolvedFleet, prev: Ledger, cidrs: Map<string, Cidr>, quarantine: Quarantine): Map<string, GatewayInCluster> {
  const out = new Map<string, GatewayInCluster>();
  for (const c of fleet.clusters) {
    if (!datapathMode(c.datapath).gateways) continue;
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
