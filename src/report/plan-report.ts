/**
 * The operator's view of a plan: one row per cluster (mode, in-cluster CIDR, gateway addresses, pool
 * needed / usable / free, what `direct` mode would need instead) and fleet totals; as data (JSON) and
 * as an aligned plain-text table. Pure, no cdk8s import.
 */
import { VmNetworkReportRow, renderVmNetworks, vmNetworkReport } from './vm-networks-report';
import { Datapath } from '../fleet/schema';
import { clusterFlows } from '../kubevirt/network-policies';
import { ProductVersion, capabilitiesFor } from '../kubevirt/capabilities';
import { FleetPlan } from '../addressing/planner';
import { SitePlan } from '../addressing/sites';
import { DEFAULT_SITE } from '../fleet/sites';
import { DATAPATH_NAMES, datapathMode } from '../fleet/datapath-modes';

export interface PlanRow {
  readonly cluster: string;
  readonly mode: Datapath;
  /** How the KubeVirt configuration is delivered: kubevirt-cr, kustomize-patch, hco or harvester. */
  readonly delivery: string;
  readonly nodes: number;
  readonly syncControllers: number;
  /** In-cluster migration CIDR (gateway/native). */
  readonly inClusterCidr?: string;
  /** In-cluster addresses: needed (nodes + sync + gateways + surge), usable in the CIDR, free. */
  readonly inCluster?: { readonly needed: number; readonly usable: number; readonly free: number };
  /** Gateway replicas with their addresses on both networks. */
  readonly gateways: { readonly inCluster: string; readonly crossCluster: string }[];
  /** The in-cluster next hop the replicas hand between them (failover `vip`), with prefix. */
  readonly gatewayVip?: string;
  /** Addresses this cluster holds on the shared network. */
  readonly sharedAddresses: number;
  /** direct/native: the cluster's slice of the shared network (`first-last`). */
  readonly sharedRange?: string;
  /** Shared-network addresses this cluster would hold in direct mode (nodes + sync controllers + surge). */
  readonly directWouldNeed: number;
  /** Peer clusters in its gateway's table. */
  readonly peers: number;
  /**
   * How the cluster keeps its peers' KubeVirt CAs trusted (issue #30): by its gateway, by a trust agent
   * (a cluster without a gateway) at `endpoints`, or not at all; and whether the CA rotation is emitted.
   */
  readonly trust: {
    readonly keptBy: 'gateway' | 'trust-agent' | 'none';
    readonly endpoints: string[];
    readonly rotation: 'emitted' | 'not-emitted-harvester' | 'none';
  };
  /** Declared network policies and the flows the emitted allow-policies open, per workload (issue #29); absent when none. */
  readonly networkPolicies?: { readonly installed: 'kubevirt' | 'default-deny'; readonly flows: Record<string, string[]> };
  /** The product (and the version its rows are read with) and the capability rows that apply (src/kubevirt/capabilities.ts). */
  readonly product: {
    readonly name: string; readonly version?: string;
    /** The table's newest version, when the declared one is a newer minor (warning `product-version-newer`). */
    readonly newerThan?: string;
    readonly rows: { readonly since: string; readonly fact: string; readonly source: string }[];
  };
}

export interface PlanTotals {
  readonly clusters: number;
  readonly nodes: number;
  readonly byModeCount: Record<Datapath, number>;
  readonly sharedNetwork: {
    readonly name: string;
    readonly prefixLength: number;
    readonly pool: number;
    readonly excluded: number;
    /** Pool addresses lost to network/broadcast and the router (pool - excluded - usable). */
    readonly reserved: number;
    readonly usable: number;
    readonly needed: number;
    readonly free: number;
  };
  /** What the whole fleet would need on the shared network in each mode. */
  readonly wouldNeed: { readonly direct: number; readonly directWithSurge: number; readonly native: number; readonly gateway: number };
  /** Shared addresses saved against all-direct (with surge). */
  readonly savedVersusDirect: number;
  /**
   * Which clusters can live-migrate to each other: one group per datapath mode present. A gateway
   * cluster reaches only other gateway clusters (its routes and peer table name only them), a direct
   * cluster only clusters whose handlers sit on the shared network, a native cluster only clusters
   * running KubeVirt's own proxy. More than one group means the fleet is split.
   */
  readonly migrationGroups: { readonly mode: Datapath; readonly clusters: string[] }[];
}

export interface PlanReport {
  readonly fleet: string;
  readonly clusters: PlanRow[];
  readonly totals: PlanTotals;
  /** The sites of a fleet that declares them (issue #24): subnet, router, attachment, MTU, routes, clusters. @default - absent for one subnet */
  readonly sites?: SitePlan[];
  /** The fleet's VM networks (issue 40): split, slots, each cluster's slice, mobile VMs. @default - absent without VM networks */
  readonly vmNetworks?: VmNetworkReportRow[];
}

export interface PlanReportOptions {
  /** Clusters delivered in Harvester form (their delivery column says `harvester`). */
  readonly harvester?: Iterable<string>;
}

/** The report of a plan: numbers only, no formatting. */
export function planReport(plan: FleetPlan, opts: PlanReportOptions = {}): PlanReport {
  const hv = new Set(opts.harvester ?? []);
  const surge = plan.addressSurge;
  const clusters: PlanRow[] = plan.clusters.map((c) => {
    const ipam = datapathMode(c.datapath).sharedMigrationNetwork ? c.migrationNetwork.ipam : c.crossClusterSync?.ipam;
    const inCluster = c.capacity.inCluster
      ? {
        needed: c.capacity.inCluster.needed, usable: Number(c.capacity.inCluster.usable),
        free: Number(c.capacity.inCluster.usable) - c.capacity.inCluster.needed,
      }
      : undefined;
    return {
      cluster: c.name,
      mode: c.datapath,
      delivery: hv.has(c.name) ? 'harvester' : c.kubevirt.configDelivery,
      nodes: c.nodes,
      syncControllers: c.syncReplicas,
      inClusterCidr: c.migrationNetwork.cidr,
      inCluster,
      gateways: c.gateways.map((g) => ({ inCluster: g.inCluster, crossCluster: g.crossCluster })),
      ...(c.gatewayVip ? { gatewayVip: c.gatewayVip } : {}),
      sharedAddresses: c.capacity.crossCluster,
      sharedRange: ipam?.rangeStart ? `${ipam.rangeStart}-${ipam.rangeEnd}` : undefined,
      directWouldNeed: c.nodes + c.syncReplicas + surge,
      peers: c.peers.length,
      trust: trustRow(plan, c, hv.has(c.name)),
      ...policyRow(plan, c),
      product: productRow(c.kubevirt.product),
    };
  });
  const cap = plan.capacity;
  const byModeCount: Record<Datapath, number> = { gateway: 0, native: 0, direct: 0 };
  for (const c of plan.clusters) byModeCount[c.datapath]++;
  const declaresSites = plan.sites.length > 1 || plan.sites.some((s) => s.name !== DEFAULT_SITE);
  return {
    fleet: plan.fleet,
    clusters,
    ...(declaresSites ? { sites: plan.sites } : {}),
    totals: {
      clusters: plan.clusters.length,
      nodes: plan.clusters.reduce((n, c) => n + c.nodes, 0),
      byModeCount,
      sharedNetwork: {
        name: plan.crossCluster.nadName,
        prefixLength: plan.crossCluster.prefixLength,
        pool: Number(cap.pool), excluded: Number(cap.excluded),
        // what the pool loses beyond the exclusions: network/broadcast addresses and the router, where they fall inside it
        reserved: Math.max(0, Number(cap.pool) - Number(cap.excluded) - Number(cap.usable)),
        usable: Number(cap.usable), needed: cap.needed, free: Number(cap.free),
      },
      wouldNeed: { ...cap.byMode },
      savedVersusDirect: cap.byMode.directWithSurge - cap.needed,
      migrationGroups: DATAPATH_NAMES
        .map((mode) => ({ mode, clusters: plan.clusters.filter((c) => c.datapath === mode).map((c) => c.name) }))
        .filter((g) => g.clusters.length > 0),
    },
    ...(plan.vmNetworks ? { vmNetworks: vmNetworkReport(plan.vmNetworks) } : {}),
  };
}

function trustRow(plan: FleetPlan, c: FleetPlan['clusters'][number], harvester: boolean): PlanRow['trust'] {
  const t = plan.trust.clusters[c.name];
  const keptBy = !t?.exchange ? 'none' : t.agent ? 'trust-agent' : 'gateway';
  const endpoints = keptBy === 'gateway' ? c.gateways.map((g) => g.crossCluster) : c.trustAgents.map((a) => a.crossCluster);
  return { keptBy, endpoints: endpoints.map((e) => e.replace(/\/\d+$/, '')), rotation: !t ? 'none' : harvester ? 'not-emitted-harvester' : 'emitted' };
}

function policyRow(plan: FleetPlan, c: FleetPlan['clusters'][number]): Pick<PlanRow, 'networkPolicies'> {
  const installed = c.networkPolicies.installed;
  if (installed === 'none') return {};
  const flows: Record<string, string[]> = {};
  for (const f of clusterFlows(plan, c, '')) (flows[f.workload.kind] ??= []).push(`${f.direction === 'ingress' ? 'in' : 'out'} ${f.id}`);
  return { networkPolicies: { installed, flows } };
}

/** The clusters that declare network policies, and what the mesh opens through them; empty when none does. */
function renderPolicies(r: PlanReport): string {
  const rows = r.clusters.filter((c) => c.networkPolicies);
  if (rows.length === 0) return '';
  const line = (c: PlanRow): string => `  ${c.cluster} (${c.networkPolicies!.installed}):\n`
    + Object.entries(c.networkPolicies!.flows).map(([w, fs]) => `    ${w}: ${fs.join(', ')}\n`).join('');
  return `\nnetwork policies (allow-policies emitted for the declared ones, docs/network-policies.md):\n${rows.map(line).join('')}`;
}

/** Per cluster: how its trust is kept (the `plan` command prints it after the table). */
function productRow(p: ProductVersion): PlanRow['product'] {
  const v = p.productVersion;
  return {
    name: p.product, version: v ? `${v.major}.${v.minor}.${v.patch}` : undefined, ...(p.newer ? { newerThan: p.newer.newest } : {}),
    rows: capabilitiesFor(p).map(({ since, fact, source }) => ({ since, fact, source })),
  };
}

/** The capability rows that apply to each cluster (issue #29). */
function renderCapabilities(r: PlanReport): string {
  const newer = (c: PlanRow): string => (c.product.newerThan ? `, newer than the newest the capability table knows (${c.product.newerThan})` : '');
  const line = (c: PlanRow): string => `  ${c.cluster} (${c.product.name} ${c.product.version ?? 'version not declared'}${newer(c)}):\n`
    + (c.product.rows.length ? c.product.rows.map((x) => `    since ${x.since}: ${x.fact} [${x.source}]\n`).join('') : '    no row applies\n');
  return `\nproducts (capability table, src/kubevirt/capabilities.ts):\n${r.clusters.map(line).join('')}`;
}

function renderTrust(r: PlanReport): string {
  const w = Math.max(...r.clusters.map((c) => c.cluster.length));
  const line = (c: PlanRow): string => {
    const t = c.trust;
    const how = t.keptBy === 'gateway' ? `exchanged by its gateway (${t.endpoints.join(', ')})`
      : t.keptBy === 'trust-agent' ? `exchanged by its trust agent (${t.endpoints.join(', ')})`
        : 'not exchanged';
    const rot = t.rotation === 'emitted' ? 'CA rotation set' : t.rotation === 'not-emitted-harvester' ? 'CA rotation not set (Harvester renders its KubeVirt CR: docs/trust.md)' : 'CA rotation left as it is';
    return `  ${c.cluster.padEnd(w)}  ${how}; ${rot}\n`;
  };
  return `\ntrust (each cluster's KubeVirt CA in its peers' kubevirt-ca, docs/trust.md):\n${r.clusters.map(line).join('')}`;
}

/** Aligned columns; numbers right-aligned. */
export function renderTable(header: string[], rows: string[][], rightAligned: ReadonlySet<number> = new Set()): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]): string => r.map((cell, i) => (rightAligned.has(i) ? cell.padStart(widths[i]) : cell.padEnd(widths[i]))).join('  ').trimEnd();
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line)].join('\n') + '\n';
}

const stripPrefix = (a: string): string => a.replace(/\/\d+$/, '');

/** The plan as a plain-text table (one row per cluster) followed by the shared-network totals. */
export function renderPlanTable(r: PlanReport): string {
  const header = ['CLUSTER', 'MODE', 'DELIVERY', 'NODES', 'IN-CLUSTER CIDR', 'NEED', 'USABLE', 'FREE', 'GATEWAYS shared (in-cluster)', 'SHARED', 'DIRECT WOULD NEED'];
  const rows = r.clusters.map((c) => [
    c.cluster, c.mode, c.delivery, String(c.nodes),
    c.inClusterCidr ?? '-',
    c.inCluster ? String(c.inCluster.needed) : '-',
    c.inCluster ? String(c.inCluster.usable) : '-',
    c.inCluster ? String(c.inCluster.free) : '-',
    c.gateways.length ? c.gateways.map((g) => `${stripPrefix(g.crossCluster)} (${stripPrefix(g.inCluster)})`).join(', ') + (c.gatewayVip ? `, vip ${stripPrefix(c.gatewayVip)}` : '') : (c.sharedRange ? `range ${c.sharedRange}` : '-'),
    String(c.sharedAddresses),
    String(c.directWouldNeed),
  ]);
  const t = r.totals;
  const s = t.sharedNetwork;
  const modes = (Object.entries(t.byModeCount) as [Datapath, number][]).filter(([, n]) => n > 0).map(([m, n]) => `${n} ${m}`).join(', ');
  return `fleet ${r.fleet}: ${t.clusters} clusters (${modes}), ${t.nodes} nodes\n\n`
    + renderTable(header, rows, new Set([3, 5, 6, 7, 9, 10]))
    + `\nshared network ${s.name} (/${s.prefixLength}): pool ${s.pool}, excluded ${s.excluded}, network/broadcast/router ${s.reserved}, usable ${s.usable}\n`
    + `  needed ${s.needed}, free ${s.free}\n`
    + `  all-direct would need ${t.wouldNeed.directWithSurge} (${t.wouldNeed.direct} without surge), all-native ${t.wouldNeed.native}, all-gateway ${t.wouldNeed.gateway}; `
    + `this plan saves ${t.savedVersusDirect} against direct\n`
    + renderTrust(r)
    + renderCapabilities(r)
    + renderPolicies(r)
    + renderMigrationGroups(t.migrationGroups)
    + renderVmNetworks(r.vmNetworks ?? []);
}

/** Empty for a one-mode fleet; otherwise says which clusters can migrate to which. */
function renderMigrationGroups(groups: PlanTotals['migrationGroups']): string {
  if (groups.length < 2) return '';
  const list = (cs: string[]): string => (cs.length <= 6 ? cs.join(', ') : `${cs.slice(0, 5).join(', ')} and ${cs.length - 5} more`);
  return `\nmigration stays within a datapath mode: clusters in different modes cannot live-migrate to each other\n`
    + groups.map((g) => `  ${g.mode} (${g.clusters.length}): ${list(g.clusters)}\n`).join('')
    + `  to join the groups, give the clusters one datapath (spec.datapath, or clusters[].datapath)\n`;
}
