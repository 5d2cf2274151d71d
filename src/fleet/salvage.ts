/**
 * Which part of a fleet with problems the later layers can still check, so that one run reports the
 * problems of every layer at once (a VLAN out of range no longer hides an exhausted supernet). Pure, no
 * cdk8s import.
 *
 * The line, and why:
 * - A cluster with a problem anywhere under `spec.clusters[i]` is left out of planning: a value of
 *   it may be missing or out of range, and planning on it would invent problems (or hide them). The
 *   other clusters are planned, so their capacity, Harvester rules and the supernet are checked.
 * - A fleet-level problem stops planning, unless its field is one that planning never reads (the
 *   attachments and NAD names, KubeVirt, migration policy, trust, the gateway's image/TLS/payload/
 *   placement/port, GitOps, Forklift): addresses and counts depend on every other fleet-level field,
 *   and a guess there would report problems the user does not have.
 * - A ledger that cannot be used (another fleet's, a wrong --renamed-from) stops planning: the plan
 *   depends on the ledger, and planning from scratch is what the refusal protects against.
 * - A cluster whose required value is unreadable (`nodes: three`) is left out of the document by the
 *   schema check (document.ts `salvageFleetDocument`): the other clusters still get the cross-field
 *   checks, but nothing is planned, since plan problems would name clusters by their place in a
 *   document that is not the user's.
 * - Forklift's checks read the generated objects, which exist only for a complete plan: they run once
 *   every other layer passes (a moved-from cluster left out of planning would read as unknown).
 */
import { FleetProblem } from '../base/errors';
import { ResolvedFleet } from './resolved';

/** Fleet-level fields planning never reads: problems there leave the plan checkable. */
const NOT_PLANNED = [
  'apiVersion', 'kind',
  'spec.crossClusterNetwork.attachment', 'spec.crossClusterNetwork.name',
  'spec.migrationNetwork.attachment', 'spec.migrationNetwork.name',
  'spec.kubevirt', 'spec.migrationPolicy', 'spec.trust',
  'spec.gateway.image', 'spec.gateway.tls', 'spec.gateway.payload', 'spec.gateway.placement', 'spec.gateway.serviceMonitor', 'spec.gateway.alerts',
  'spec.gateway.tunnelPort', 'spec.gateway.failover.virtualRouterId',
  'spec.syncControllers.placement', 'spec.gitops', 'spec.forklift',
];

/** Codes whose fleet-level path is a field planning reads, but whose problem does not change a value it reads. */
const NOT_PLANNED_CODES = new Set(['native-needs-pr17922']);

const under = (path: string, field: string): boolean => path === field || path.startsWith(`${field}.`) || path.startsWith(`${field}[`);

/** The index of the cluster a problem is about (its path under `spec.clusters[i]`), if any. */
function clusterIndexOf(p: FleetProblem): number | undefined {
  const m = /^spec\.clusters\[(\d+)\]/.exec(p.path);
  return m ? Number(m[1]) : undefined;
}

/**
 * The part of a resolved fleet planning can check despite `problems`: the fleet without the clusters
 * that have a problem, or undefined when a problem concerns what every cluster's plan reads.
 */
export function plannablePart(fleet: ResolvedFleet, problems: readonly FleetProblem[]): ResolvedFleet | undefined {
  const broken = new Set<number>();
  for (const p of problems) {
    const i = clusterIndexOf(p);
    if (i !== undefined) broken.add(i);
    else if (!NOT_PLANNED_CODES.has(p.code) && !NOT_PLANNED.some((f) => under(p.path, f))) return undefined;
  }
  return broken.size === 0 ? fleet : { ...fleet, clusters: fleet.clusters.filter((c) => !broken.has(c.index)) };
}
