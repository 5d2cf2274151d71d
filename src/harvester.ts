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
import { Checked, FleetProblem, ProblemCollector, orThrow } from './errors';
import { Attachment, FleetDocument, HarvesterSpec } from './fleet-schema';
import {
  Interval, countIntervals, formatCidr, intervalToCidrs, mergeIntervals, parseAddr, parseCidr, subtractIntervals, usableHosts,
} from './ip';
import { ClusterPlan, FleetPlan } from './planner';

export const HARVESTER_SETTING_NAME = 'vm-migration-network';
/** Harvester's `minSNPrefixLength`: ranges and excludes must be /16 or smaller. */
const HARVESTER_MIN_PREFIX = 16;

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
  const excluded: Interval[] = [];
  (v.exclude ?? []).forEach((e, i) => {
    const x = parseCidr(e);
    if (!x.ok) { problems.push({ code: 'plan-inconsistent', path: `${H}`, message: `exclude[${i}] '${e}' is not a CIDR`, fix: 'internal: report this' }); return; }
    if (x.cidr.prefix < HARVESTER_MIN_PREFIX) problems.push({ code: 'harvester-range', path: `${H}`, message: `exclude ${e} is larger than /${HARVESTER_MIN_PREFIX}`, fix: 'Harvester rejects it; narrow the pool' });
    if (x.cidr.start < range.start || x.cidr.end > range.end) problems.push({ code: 'harvester-range', path: `${H}`, message: `exclude ${e} is outside the range ${v.range}`, fix: 'Harvester rejects excludes outside the range' });
    if (x.cidr.prefix <= range.prefix) problems.push({ code: 'harvester-range', path: `${H}`, message: `exclude ${e} is not smaller than the range ${v.range} (no allocatable addresses)`, fix: 'give the cluster addresses in the pool' });
    excluded.push(x.cidr);
  });
  const usable = Number(countIntervals(subtractIntervals([usableHosts(range)], mergeIntervals(excluded))));
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
  if (cluster.datapath !== 'direct') {
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
  const excluded = ipam.exclude.map((e) => parseCidr(e)).filter((x) => x.ok).map((x) => (x as { cidr: Interval }).cidr);
  const slice = subtractIntervals([{ family: range.family, start: lo, end: hi }], excluded);
  const outside = subtractIntervals([range], slice);
  const exclude = mergeIntervals(outside).flatMap(intervalToCidrs).map(formatCidr);
  const vlan = spec.vlan ?? attachmentVlan(plan.crossCluster.attachment);
  const value: HarvesterMigrationNetworkValue = {
    clusterNetwork: spec.clusterNetwork, ...(vlan ? { vlan } : {}), range: formatCidr(range), ...(exclude.length ? { exclude } : {}),
  };
  const needed = cluster.capacity.crossCluster;
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
    if (!spec.harvester) return;
    const c = plan.clusters.find((x) => x.name === spec.name)!;
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
