/**
 * Cross-cluster moves that finish (issue 51 item 3). KubeVirt aborts a migration that has not completed within
 * `completionTimeoutPerGiB` seconds per GiB of the VM's memory (virt-launcher's migration monitor,
 * pkg/virt-launcher/virtwrap/live-migration-source.go `migrationMonitor` at kubevirt v1.8.4), and since
 * hyperconverged-cluster-operator PR #4426 (2026-07-22) HCO sets that to 20 (it was 150): a migration then needs at
 * least 2^30 / 20 bytes per second, about 430 Mbit/s, just to copy the memory once. Over a path between sites that
 * many migrations share, that is often not there.
 *
 * So the fleet states the path's bandwidth (`spec.migrationPolicy.crossCluster.bandwidth`), and each move that names
 * its VM's `vmiLabels` gets a MigrationPolicy on its target cluster (whose virt-controller picks the policy of a
 * cross-cluster migration: src/forklift/compression.ts) with:
 * - `bandwidthPerMigration`: the bandwidth shared by the migrations that may run at once
 *   (`parallelMigrationsPerCluster`, KubeVirt's default 5), rounded down to a KiB;
 * - `completionTimeoutPerGiB`: three copies of a GiB at that bandwidth (the first pass and the re-sent dirty pages),
 *   at least the cluster's own value (the fleet's, else KubeVirt's 150);
 * - `allowAutoConverge` (default true) and `allowPostCopy` (default false) as the fleet says.
 * `validate` warns about a move that gets no such policy and cannot copy its memory once within the timeout it
 * gets, and about a VM whose CPU limit turns multifd off (KubeVirt user guide, "Live migration", 2026-06). Pure.
 */
import { canonicalQuantity, quantityValue } from '../base/quantity';
import { ConfigDelivery, FleetDocument } from '../fleet/schema';
import { deliveryForm } from '../kubevirt/delivery-forms';
import { ForkliftProblems, MovesInput } from './checks';
import { ClusterFacts } from './model';
import { Move } from './schema';

const GIB = 2 ** 30;
/** KubeVirt's `ParallelMigrationsPerClusterDefault` (pkg/virt-config/virt-config.go). */
const KUBEVIRT_PARALLEL_MIGRATIONS = 5;
/** KubeVirt's `MigrationCompletionTimeoutPerGiB` default (pkg/virt-config/virt-config.go). */
const KUBEVIRT_COMPLETION_TIMEOUT_PER_GIB = 150;
/** Copies of the memory the derived timeout allows for: the first pass and the pages dirtied meanwhile. */
const PASSES = 3;

/**
 * The `completionTimeoutPerGiB` a cluster's migrations get when no policy of ours selects them: the fleet's
 * `migrationPolicy.completionTimeoutPerGiB` where it sets one (every delivery form writes it), else the default of
 * what runs KubeVirt's configuration there (src/kubevirt/delivery-forms.ts `migrationDefaults`).
 */
export function clusterCompletionTimeoutPerGiB(doc: FleetDocument, delivery: ConfigDelivery, harvester: boolean): number {
  if (harvester) return KUBEVIRT_COMPLETION_TIMEOUT_PER_GIB; // Harvester writes KubeVirt's configuration itself
  return doc.spec.migrationPolicy?.completionTimeoutPerGiB ?? deliveryForm(delivery).migrationDefaults.completionTimeoutPerGiB;
}

/** The MigrationPolicy fields a cross-cluster move gets, and what they came from. */
export interface CrossClusterPolicy {
  readonly bandwidthPerMigration: string;
  readonly completionTimeoutPerGiB: number;
  readonly allowAutoConverge: boolean;
  readonly allowPostCopy: boolean;
  /** Bytes per second of one migration (the quantity above, as a number). */
  readonly bytesPerMigration: number;
  /** How many migrations share the path (the divisor). */
  readonly parallel: number;
}

/** The fleet's cross-cluster policy, or undefined when it states no bandwidth. */
export function crossClusterPolicy(doc: FleetDocument): CrossClusterPolicy | undefined {
  const mp = doc.spec.migrationPolicy;
  const cc = mp?.crossCluster;
  const link = cc && quantityValue(cc.bandwidth);
  if (!cc || !link) return undefined;
  const parallel = mp.parallelMigrationsPerCluster ?? KUBEVIRT_PARALLEL_MIGRATIONS;
  const perMigrationKi = Math.max(1, Math.floor(link / parallel / 1024));
  const bytesPerMigration = perMigrationKi * 1024;
  const derived = Math.ceil((PASSES * GIB) / bytesPerMigration);
  return {
    bandwidthPerMigration: canonicalQuantity(`${perMigrationKi}Ki`),
    completionTimeoutPerGiB: Math.max(derived, mp.completionTimeoutPerGiB ?? KUBEVIRT_COMPLETION_TIMEOUT_PER_GIB),
    allowAutoConverge: cc.allowAutoConverge ?? true,
    allowPostCopy: cc.allowPostCopy ?? false,
    bytesPerMigration,
    parallel,
  };
}

/** A move gets the fleet's cross-cluster policy: there is one, the move names labels to select by, its target is not Harvester. */
const getsCrossClusterPolicy = (m: Move, cc: CrossClusterPolicy | undefined, target: ClusterFacts | undefined): boolean =>
  !!cc && !!m.vmiLabels && Object.keys(m.vmiLabels).length > 0 && !target?.harvester;

const mbit = (bytesPerSecond: number): string => `${Math.round((bytesPerSecond * 8) / 1e6)} Mbit/s`;

/**
 * The warnings of the moves' migration settings: a move that gets no cross-cluster policy (no labels, or a Harvester
 * target) and cannot copy its memory once within the timeout it gets; a VM whose CPU limit turns multifd off.
 */
export function warnMoveSettings(p: ForkliftProblems, input: MovesInput, clusters: ReadonlyMap<string, ClusterFacts>, doc: FleetDocument): void {
  const cc = crossClusterPolicy(doc);
  input.moves.forEach((m, i) => {
    const at = `${input.path}[${i}]`;
    const id = `${m.namespace}/${m.vm}`;
    if (m.cpuLimit !== undefined) {
      p.warn('move-multifd-off', `${at}.cpuLimit`,
        `${id} sets a CPU limit (${m.cpuLimit}): KubeVirt turns multithreaded (multifd) migration off for such a VM, so its memory crosses on one channel, and compression (zstd, multifd only) does not apply`,
        'accept a slower move, or remove the CPU limit from the VM (spec.template.spec.domain.resources.limits.cpu) before it moves');
    }
    const target = clusters.get(m.to);
    if (!cc || !target || getsCrossClusterPolicy(m, cc, target)) return;
    warnUncovered(p, m, at, cc, target, doc);
  });
}

/** A move the cross-cluster policy cannot reach: why, and whether the cluster's own settings let it finish. */
function warnUncovered(p: ForkliftProblems, m: Move, at: string, cc: CrossClusterPolicy, target: ClusterFacts, doc: FleetDocument): void {
  const id = `${m.namespace}/${m.vm}`;
  const why = target.harvester
    ? `${m.to} is a Harvester cluster, where we emit no MigrationPolicy (Harvester owns its migration settings)`
    : 'the move names no vmiLabels, and a MigrationPolicy selects VMIs only by labels';
  const fleetCap = quantityValue(doc.spec.migrationPolicy?.bandwidthPerMigration ?? '') || Infinity;
  const bytes = Math.min(fleetCap, cc.bytesPerMigration);
  const timeout = target.completionTimeoutPerGiB ?? KUBEVIRT_COMPLETION_TIMEOUT_PER_GIB;
  const needed = Math.ceil(GIB / bytes);
  if (needed <= timeout) {
    p.warn('cross-cluster-unselected', target.harvester ? `${at}.to` : `${at}.vmiLabels`,
      `${id} gets ${m.to}'s own migration settings, not the fleet's cross-cluster policy: ${why}`,
      target.harvester ? 'accept it, or move the VM to a cluster the fleet manages in full' : `add vmiLabels with labels of the VM's spec.template.metadata.labels that no other VM of its namespace on ${m.to} carries`);
    return;
  }
  const gib = quantityValue(m.memory ?? '');
  const size = gib ? ` (${m.memory}: ${Math.round((gib / GIB) * timeout)} s allowed, at least ${Math.ceil(gib / bytes)} s needed)` : '';
  p.warn('move-cannot-finish', target.harvester ? `${at}.to` : `${at}.vmiLabels`,
    `${id} cannot finish: ${m.to} aborts a migration after ${timeout} s per GiB of memory, and at ${mbit(bytes)} a migration (${cc.parallel} sharing ${mbit(cc.bytesPerMigration * cc.parallel)}) needs at least ${needed} s to copy one GiB once${size}; it gets no cross-cluster policy because ${why}`,
    target.harvester
      ? `raise completionTimeoutPerGiB on ${m.to} through Harvester's own settings, or move the VM elsewhere`
      : `add vmiLabels (labels only this VM carries in its namespace) so the move gets the cross-cluster MigrationPolicy, or raise spec.migrationPolicy.completionTimeoutPerGiB to at least ${needed * PASSES}`);
}
