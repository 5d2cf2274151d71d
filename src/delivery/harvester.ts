/**
 * Harvester delivery form: a Harvester cluster gets its migration network from Harvester's own
 * `vm-migration-network` setting (Harvester then writes the NAD in harvester-system and sets
 * `migrations.network` on its KubeVirt CR). We compute the setting value from the cluster's planned
 * slice of the shared network and enforce Harvester's webhook rules before writing it, plus ours
 * (Harvester counts one address per non-witness node and forgets the sync controllers and surge).
 * Pure, no cdk8s import.
 *
 * Only the `direct` datapath fits: Harvester's generated NAD has no routes (gateway mode needs routes
 * to the other clusters via the local gateway) and Harvester does not write the native-mode KubeVirt
 * fields. See docs/gitops.md.
 */
import { Checked, FleetProblem, ProblemCollector, orThrow } from '../base/errors';
import { Attachment, FleetDocument, HarvesterSpec } from '../fleet/schema';
import {
  Interval, bits, countIntervals, formatCidr, intervalToCidrs, mask, mergeIntervals, parseAddr, parseCidr, subtractIntervals,
} from '../base/ip';
import { ClusterPlan, FleetPlan } from '../addressing/planner';
import { datapathMode } from '../fleet/datapath-modes';

export const HARVESTER_SETTING_NAME = 'vm-migration-network';
/** Harvester's `minSNPrefixLength`: ranges and excludes must be /16 or smaller. */
const HARVESTER_MIN_PREFIX = 16;

/**
 * Longest ClusterNetwork name: its bridge is `<name>-br` and a Linux interface name has at most 15
 * characters (harvester/harvester-network-controller @b3ad6a1b pkg/webhook/clusternetwork/validator.go
 * and vlanconfig/validator.go: `iface.MaxDeviceNameLen - len(iface.BridgeSuffix)` = 15 - 3).
 */
export const HARVESTER_MAX_CLUSTER_NETWORK_NAME = 15 - '-br'.length;

/**
 * Harvester's usable-address count (harvester/harvester @3d63c2af pkg/webhook/util/ip.go
 * GetUsableIPAddressesCount), as interval arithmetic instead of enumeration: each CIDR is read like Go's
 * net.ParseCIDR (host bits allowed) and walked from the given address to the end of its network; the
 * include range drops its network address (both families) and its last address (IPv4 only), so an IPv4
 * /31 or /32 and an IPv6 /128 count 0; excluded addresses are removed. undefined when a CIDR does not parse.
 */
export function harvesterUsableCount(range: string, exclude: readonly string[] = []): number | undefined {
  const walk = (text: string): { from: bigint; net: bigint; last: bigint; family: 4 | 6 } | undefined => {
    const m = /^([^/]+)\/(\d{1,3})$/.exec(text);
    const a = m ? parseAddr(m[1]) : undefined;
    if (!m || !a || +m[2] > bits(a.family)) return undefined;
    const net = a.value & mask(a.family, +m[2]);
    return { from: a.value, net, last: net | ((1n << BigInt(bits(a.family) - +m[2])) - 1n), family: a.family };
  };
  const inc = walk(range);
  if (!inc) return undefined;
  let lo = inc.from === inc.net ? inc.from + 1n : inc.from;
  let hi = inc.family === 4 ? inc.last - 1n : inc.last;
  if (lo > hi) { lo = 1n; hi = 0n; }
  const cuts: Interval[] = [];
  for (const e of exclude) {
    const x = walk(e);
    if (!x) return undefined;
    cuts.push({ family: x.family, start: x.from, end: x.last });
  }
  const kept = lo > hi ? [] : subtractIntervals([{ family: inc.family, start: lo, end: hi }], mergeIntervals(cuts.filter((c) => c.family === inc.family)));
  return Number(countIntervals(kept));
}

/** Harvester's `network.Config`, in its struct field order (the setting's change detection hashes the raw string). */
export interface HarvesterMigrationNetworkValue {
  readonly clusterNetwork: string;
  readonly vlan?: number;
  readonly range: string;
  readonly exclude?: string[];
}

export interface HarvesterResult {
  readonly value?: HarvesterMigrationNetworkValue;
  /** The setting's `value`: compact JSON, fixed key order. */
  readonly json?: string;
  /** Addresses Harvester will count as usable (range - network/broadcast - excludes). */
  readonly usable: number;
  readonly problems: FleetProblem[];
}

export interface HarvesterContext {
  /** Field path of the cluster in the fleet file, e.g. `spec.clusters[3]`. */
  readonly path: string;
  /** Where the cluster's datapath comes from (`spec.clusters[3].datapath` or `spec.datapath`). */
  readonly datapathPath: string;
}

/** Deterministic JSON of the setting value (struct order, omitempty like Harvester's Go struct). */
export function harvesterValueJson(v: HarvesterMigrationNetworkValue): string {
  const o: Record<string, unknown> = { clusterNetwork: v.clusterNetwork };
  if (v.vlan) o.vlan = v.vlan;
  o.range = v.range;
  if (v.exclude && v.exclude.length) o.exclude = v.exclude;
  return JSON.stringify(o);
}

/**
 * Check a setting value the way Harvester's webhook does (validator.go: checkNetworkVlanValid,
 * checkNetworkRangeValid, validateIncludeExcludeRanges, checkVMMigrationNetworkRangeValid), plus our
 * own sizing rule. Returns the usable count and every problem.
 */
export function checkHarvesterValue(
  v: HarvesterMigrationNetworkValue, nodes: number, needed: number, ctx: HarvesterContext,
): { usable: number; problems: FleetProblem[] } {
  const problems: FleetProblem[] = [];
  const H = `${ctx.path}.harvester`;
  if (v.vlan !== undefined && (v.vlan < 0 || v.vlan > 4094)) problems.push({ code: 'harvester-vlan', path: `${H}.vlan`, message: `${v.vlan} is outside 0-4094`, fix: 'give a VLAN id from 0 (untagged) to 4094' });
  if (v.clusterNetwork.length > HARVESTER_MAX_CLUSTER_NETWORK_NAME) {
    problems.push({
      code: 'harvester-cluster-network-name', path: `${H}.clusterNetwork`,
      message: `'${v.clusterNetwork}' is ${v.clusterNetwork.length} characters; Harvester refuses ClusterNetwork names over ${HARVESTER_MAX_CLUSTER_NETWORK_NAME} (its bridge '${v.clusterNetwork}-br' must fit the 15-character interface name limit)`,
      fix: `use a ClusterNetwork name of at most ${HARVESTER_MAX_CLUSTER_NETWORK_NAME} characters`,
    });
  }
  if (v.clusterNetwork === 'mgmt' && (v.vlan ?? 0) <= 1) {
    problems.push({ code: 'harvester-vlan', path: `${H}.vlan`, message: `on the mgmt cluster network Harvester rejects VLAN ${v.vlan ?? 0} (it would share the management traffic)`, fix: 'give a VLAN id of 2-4094, or a dedicated clusterNetwork' });
  }
  const r = parseCidr(v.range);
  if (!r.ok) {
    problems.push({ code: 'harvester-range', path: 'spec.crossClusterNetwork.addresses', message: `the range '${v.range}' for cluster ${ctx.path} is not a masked subnet CIDR (Harvester: "range should be subnet CIDR")`, fix: 'use a masked network address' });
    return { usable: 0, problems };
  }
  const range = r.cidr;
  if (range.family !== 4) {
    problems.push({ code: 'harvester-ipv4-only', path: 'spec.crossClusterNetwork.addresses.pool', message: `Harvester's vm-migration-network is IPv4 only; ${v.range} is IPv6`, fix: 'use an IPv4 shared network for fleets with Harvester clusters, or drop harvester from this cluster' });
    return { usable: 0, problems };
  }
  if (range.prefix < HARVESTER_MIN_PREFIX) {
    problems.push({ code: 'harvester-range', path: 'spec.crossClusterNetwork.addresses.prefixLength', message: `Harvester accepts a range of /${HARVESTER_MIN_PREFIX} or smaller; the shared subnet is ${v.range}`, fix: `use prefixLength ${HARVESTER_MIN_PREFIX} or longer` });
  }
  let previous: Interval | undefined;
  (v.exclude ?? []).forEach((e, i) => {
    const x = parseCidr(e);
    if (!x.ok) { problems.push({ code: 'plan-inconsistent', path: `${H}`, message: `exclude[${i}] '${e}' is not a CIDR`, fix: 'internal: report this' }); return; }
    if (x.cidr.prefix < HARVESTER_MIN_PREFIX) problems.push({ code: 'harvester-range', path: `${H}`, message: `exclude ${e} is larger than /${HARVESTER_MIN_PREFIX}`, fix: 'Harvester rejects it; narrow the pool' });
    if (x.cidr.start < range.start || x.cidr.end > range.end) problems.push({ code: 'harvester-range', path: `${H}`, message: `exclude ${e} is outside the range ${v.range}`, fix: 'Harvester rejects excludes outside the range' });
    if (x.cidr.prefix <= range.prefix) problems.push({ code: 'harvester-range', path: `${H}`, message: `exclude ${e} is not smaller than the range ${v.range} (no allocatable addresses)`, fix: 'give the cluster addresses in the pool' });
    // validateIncludeExcludeRanges compares each exclude with the one before it
    if (previous && x.cidr.start <= previous.end && previous.start <= x.cidr.end) {
      problems.push({ code: 'plan-inconsistent', path: `${H}`, message: `exclude ranges have overlapping subnets ${e} and the one before it`, fix: 'internal: report this' });
    }
    previous = x.cidr;
  });
  const usable = harvesterUsableCount(v.range, v.exclude ?? []) ?? 0;
  if (usable < nodes) {
    problems.push({ code: 'harvester-too-few-addresses', path: `${ctx.path}.nodes`, message: `Harvester refuses the setting: ${usable} usable addresses < ${nodes} non-witness nodes (one per virt-handler)`, fix: 'add addresses to spec.crossClusterNetwork.addresses.pool' });
  } else if (usable < needed) {
    problems.push({ code: 'harvester-too-few-addresses', path: `${ctx.path}.nodes`, message: `${usable} usable addresses pass Harvester's check (>= ${nodes} nodes) but the cluster needs ${needed} = nodes + sync controllers + surge; the sync controllers and rollout surge pods would not get an address`, fix: 'add addresses to spec.crossClusterNetwork.addresses.pool' });
  }
  return { usable, problems };
}

/** The setting value for one Harvester cluster from its plan, with every problem (ours and Harvester's). */
export function harvesterSettingFor(plan: FleetPlan, cluster: ClusterPlan, spec: HarvesterSpec, ctx: HarvesterContext): HarvesterResult {
  const problems: FleetProblem[] = [];
  if (!datapathMode(cluster.datapath).sharedMigrationNetwork) {
    problems.push({
      code: 'harvester-needs-direct',
      path: ctx.datapathPath,
      message: `cluster ${cluster.name} is Harvester with datapath ${cluster.datapath}; the Harvester form supports only direct: Harvester writes the migration NAD itself, without the routes gateway mode needs and without the native-mode KubeVirt fields`,
      fix: `set ${ctx.path}.datapath: direct, or remove ${ctx.path}.harvester and deliver a NAD + KubeVirt patch (Harvester's vm-migration-network setting must then stay empty)`,
    });
    return { usable: 0, problems };
  }
  const ipam = cluster.migrationNetwork.ipam;
  const r = parseCidr(ipam.range);
  if (!r.ok) return { usable: 0, problems: [{ code: 'plan-inconsistent', path: 'spec.crossClusterNetwork.addresses', message: `cluster ${cluster.name} has no planned range`, fix: 'internal: report this' }] };
  const range = r.cidr;
  // Harvester has no rangeStart/rangeEnd: everything of the subnet outside the cluster's slice becomes an exclude
  const lo = ipam.rangeStart ? parseAddr(ipam.rangeStart)!.value : range.start;
  const hi = ipam.rangeEnd ? parseAddr(ipam.rangeEnd)!.value : range.end;
  const cut = ipam.exclude.map((e) => parseCidr(e)).filter((x) => x.ok).map((x) => (x as { cidr: Interval }).cidr);
  const slice = subtractIntervals([{ family: range.family, start: lo, end: hi }], cut);
  const outside = subtractIntervals([range], slice);
  const exclude = mergeIntervals(outside).flatMap(intervalToCidrs).map(formatCidr);
  const vlan = spec.vlan ?? attachmentVlan(cluster.site.attachment);
  if (cluster.site.routes.length > 0) {
    // Harvester writes the migration NAD itself, from range/exclude/vlan only: the site routes cannot be delivered
    problems.push({
      code: 'harvester-routes-unsupported', path: `${ctx.path}.harvester`,
      message: `cluster ${cluster.name} is Harvester in site ${cluster.site.name}, whose handlers need routes (${cluster.site.routes.map((x) => `${x.dst} via ${x.gw}`).join(', ')}); Harvester's vm-migration-network setting has no routes, so its handlers could not reach the other sites`,
      fix: `remove ${ctx.path}.harvester (deliver a NAD + KubeVirt patch, which carry the routes), or keep the Harvester clusters in a fleet of one site`,
    });
  }
  const value: HarvesterMigrationNetworkValue = {
    clusterNetwork: spec.clusterNetwork, ...(vlan ? { vlan } : {}), range: formatCidr(range), ...(exclude.length ? { exclude } : {}),
  };
  // the trust agent's addresses are the cluster's too, but outside the setting's range (issue #30)
  const needed = cluster.capacity.crossCluster - cluster.trustAgents.length;
  const check = checkHarvesterValue(value, cluster.nodes, needed, ctx);
  problems.push(...check.problems);
  return { value, json: harvesterValueJson(value), usable: check.usable, problems };
}

function attachmentVlan(a: Attachment): number | undefined {
  return a.type === 'bridge' ? a.vlan : undefined;
}

/**
 * Harvester clusters get the vm-migration-network setting instead of NAD + KubeVirt patch; Harvester's
 * rules and ours are checked for every such cluster before any chart is built. As a value.
 */
export function checkHarvesterValues(document: FleetDocument, plan: FleetPlan): Checked<Map<string, HarvesterMigrationNetworkValue>> {
  const results = new Map<string, HarvesterResult>();
  document.spec.clusters.forEach((spec, i) => {
    const c = plan.clusters.find((x) => x.name === spec.name);
    // a plan of part of the fleet (src/fleet/salvage.ts) leaves out the clusters that have other problems
    if (!spec.harvester || !c) return;
    results.set(c.name, harvesterSettingFor(plan, c, spec.harvester, {
      path: `spec.clusters[${i}]`, datapathPath: spec.datapath ? `spec.clusters[${i}].datapath` : 'spec.datapath',
    }));
  });
  // fleet-level problems (e.g. the shared prefix) repeat per Harvester cluster: report each once
  const p = new ProblemCollector();
  p.addAll([...new Map([...results.values()].flatMap((h) => h.problems).map((x) => [`${x.path}\n${x.message}`, x])).values()]);
  return p.result(() => new Map([...results.entries()].map(([k, v]) => [k, v.value!])));
}

/** `checkHarvesterValues`, throwing FleetValidationError with every problem. */
export function harvesterValues(document: FleetDocument, plan: FleetPlan): Map<string, HarvesterMigrationNetworkValue> {
  return orThrow(checkHarvesterValues(document, plan));
}
