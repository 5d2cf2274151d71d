/**
 * Compression per move (issue #29 item 3): a move's `compression` becomes one cluster-scoped
 * MigrationPolicy on the move's TARGET cluster, selecting the VMI by the labels the user names
 * (`vmiLabels`) in the target namespace. Read in kubevirt/kubevirt v1.9.0 @79d34c17 (same on main @d923fdb8):
 *
 * - a VMI's labels are its VM's `spec.template.metadata.labels`, nothing added that names the VM
 *   (pkg/virt-controller/watch/vm/vm.go:1870, 1889 `SetupVMIFromVM`), so the user must name them;
 * - in a decentralized migration only the target cluster's virt-controller matches a policy: the source
 *   VMIM never reaches the target-pod hand-off (watch/migration/migration.go:1802 returns for a source;
 *   `matchMigrationPolicy` is called only at :1259 in `handleTargetPodHandoff`), the target writes the
 *   result into its VMI's `status.migrationState.migrationConfiguration` (:2642), the target's sync
 *   controller sends that status (synchronization-controller.go:727-740) and the source's copies it into
 *   the source VMI (:1152 -> :1419-1420), where the source virt-handler reads it (migration-source.go:518-523,
 *   578-580);
 * - ranking: `matchPolicy` / `countMatchingLabels` (watch/migration/migrationpolicy.go:44-122): a policy
 *   matches when every selector label is on the VMI / its namespace, the most matching labels win, ties go
 *   to the lexicographically first name.
 *
 * So the policy sits on the target and selects `kubernetes.io/metadata.name: <target namespace>` plus the
 * VMI labels (score 1 + labels, above the fleet-wide empty-selector policy's 0). KubeVirt applies the one
 * policy that wins and merges none, so the move's policy also carries the fleet's compression when the move
 * asks for none, and the cross-cluster settings (issue 51: src/forklift/move-policy.ts) when the fleet states
 * them. Pure, no cdk8s import.
 */
import { JsonObject } from '../base/json';
import { kubevirtSinceFor } from '../kubevirt/capabilities';
import { ForkliftProblems, MovesInput } from './checks';
import { ClusterFacts } from './model';
import { Move } from './schema';
import { CrossClusterPolicy } from './move-policy';

/** The namespace label the API server sets on every namespace (Kubernetes 1.21+). */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export type Compression = 'none' | 'zstd';

/** One per-move MigrationPolicy, on the move's target cluster: its compression, its cross-cluster settings, or both. */
export interface MovePolicy {
  /** The target cluster: the chart it goes in. */
  readonly cluster: string;
  readonly name: string;
  /** The target namespace (the VMI's namespace once it lands). */
  readonly namespace: string;
  readonly vm: string;
  readonly vmiLabels: Readonly<Record<string, string>>;
  /** The move's compression, else the fleet's (this policy outranks the fleet-wide one). @default - none */
  readonly compression?: Compression;
  /** The fleet's cross-cluster settings (src/forklift/move-policy.ts). @default - none */
  readonly crossCluster?: CrossClusterPolicy;
}

/**
 * `migration-mesh-<fleet>-move.<namespace>.<vm>`: at most 15 + 63 + 5 + 1 + 63 + 1 + 63 = 211 characters, a DNS
 * subdomain, one per target namespace and VM (namespace and VM names hold no dot).
 */
export const movePolicyName = (fleet: string, namespace: string, vm: string): string =>
  `migration-mesh-${fleet}-move.${namespace}.${vm}`;

/** The policy's spec: the target namespace by name, the VMI by its labels, the compression and the cross-cluster settings. */
export function movePolicySpec(p: MovePolicy): JsonObject {
  const cc = p.crossCluster;
  return {
    selectors: {
      namespaceSelector: { [NAMESPACE_NAME_LABEL]: p.namespace },
      virtualMachineInstanceSelector: { ...p.vmiLabels },
    },
    ...(cc ? {
      allowAutoConverge: cc.allowAutoConverge, allowPostCopy: cc.allowPostCopy,
      bandwidthPerMigration: cc.bandwidthPerMigration, completionTimeoutPerGiB: cc.completionTimeoutPerGiB,
    } : {}),
    ...(p.compression ? { experimental: { compression: p.compression } } : {}),
  };
}

const targetNamespace = (m: Move): string => m.targetNamespace ?? m.namespace;

/** What decides a move's policy: the fleet's cross-cluster settings and compression, and which clusters are Harvester. */
export interface MovePolicyContext {
  readonly crossCluster?: CrossClusterPolicy;
  readonly fleetCompression?: Compression;
  readonly harvester: (cluster: string) => boolean;
}

/** The policy a move gets (compression it asks for, or the cross-cluster settings), or undefined. */
export function movePolicyOf(fleet: string, m: Move, ctx: MovePolicyContext): MovePolicy | undefined {
  if (!m.vmiLabels || !Object.keys(m.vmiLabels).length) return undefined;
  const crossCluster = ctx.crossCluster && !ctx.harvester(m.to) ? ctx.crossCluster : undefined;
  if (!m.compression && !crossCluster) return undefined;
  const ns = targetNamespace(m);
  const compression = m.compression ?? ctx.fleetCompression;
  return {
    cluster: m.to, name: movePolicyName(fleet, ns, m.vm), namespace: ns, vm: m.vm, vmiLabels: sortedLabels(m.vmiLabels),
    ...(compression ? { compression } : {}), ...(crossCluster ? { crossCluster } : {}),
  };
}

/**
 * The per-move policies by target cluster (the checks refuse moves whose policies would conflict). Moves of one VM
 * into one target namespace and cluster that agree are one policy.
 */
export function movePolicies(fleet: string, moves: readonly Move[], ctx: MovePolicyContext): Map<string, MovePolicy[]> {
  const byName = new Map<string, MovePolicy>();
  for (const m of moves) {
    const policy = movePolicyOf(fleet, m, ctx);
    if (policy && !byName.has(`${m.to}|${policy.name}`)) byName.set(`${m.to}|${policy.name}`, policy);
  }
  const out = new Map<string, MovePolicy[]>();
  for (const p of [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    out.set(p.cluster, [...(out.get(p.cluster) ?? []), p]);
  }
  return out;
}

function sortedLabels(l: Readonly<Record<string, string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(l).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

/**
 * Per-move compression: it needs VMI labels to select by, KubeVirt 1.9+ on the target (the policy's
 * `experimental` field) and on the source (its virt-handler and virt-launcher apply the option), a
 * target that is not Harvester (we emit no MigrationPolicy there), and no two moves whose policies
 * select the same VMIs with different compression. Every problem at once.
 */
export function checkMoveCompression(p: ForkliftProblems, input: MovesInput, clusters: ReadonlyMap<string, ClusterFacts>, ctx: MovePolicyContext): void {
  input.moves.forEach((m, i) => {
    if (!m.compression) return;
    const at = `${input.path}[${i}]`;
    if (!m.vmiLabels || !Object.keys(m.vmiLabels).length) {
      p.error('compression-no-selector', `${at}.vmiLabels`,
        `${m.namespace}/${m.vm} asks for compression ${m.compression} but names no VMI labels: a MigrationPolicy selects VMIs only by labels, and KubeVirt gives a VMI exactly its VM's spec.template.metadata.labels, none naming the VM (virt-controller vm.go SetupVMIFromVM)`,
        `add vmiLabels with labels from the VM's spec.template.metadata.labels that no other VM of namespace ${targetNamespace(m)} on ${m.to} carries (e.g. add example.org/vm: ${m.vm} to the template first), or remove compression`);
    }
    checkSides(p, m, at, clusters);
  });
  checkOverlaps(p, input, (m) => movePolicyOf('f', m, ctx));
}

function checkSides(p: ForkliftProblems, m: Move, at: string, clusters: ReadonlyMap<string, ClusterFacts>): void {
  const since = kubevirtSinceFor('migration-compression');
  const to = clusters.get(m.to);
  if (to?.harvester) {
    p.error('compression-harvester', `${at}.compression`,
      `${m.to} is a Harvester cluster: the target cluster's virt-controller picks the MigrationPolicy of a cross-cluster migration, and we emit no MigrationPolicy on Harvester clusters (Harvester owns their migration settings)`,
      `remove compression from this move, or move the VM to a cluster the fleet manages in full`);
  }
  for (const [side, c] of [['source', clusters.get(m.from)], ['target', to]] as const) {
    if (!c || c.migrationCompression) continue;
    p.error('compression-unsupported', `${at}.compression`,
      `the ${side} cluster ${c.name} runs KubeVirt ${c.kubevirtVersion ?? 'of an unknown version'}, which has no migration compression (it arrived in ${since}; capability table, src/kubevirt/capabilities.ts): ${side === 'target' ? 'its MigrationPolicy CRD has no experimental.compression (the API server prunes it)' : 'its virt-handler and virt-launcher, which run the migration, do not know the option'}`,
      `upgrade ${c.name} to KubeVirt ${since} or later and declare it (kubevirt.version), or remove compression from this move`);
  }
}

/**
 * The fleet's compression reaches a move only through a MigrationPolicy on its target, and a Harvester
 * cluster gets none: such a move, without its own compression, migrates uncompressed. A warning per move.
 */
export function warnUncompressedMoves(
  p: ForkliftProblems, input: MovesInput, clusters: ReadonlyMap<string, ClusterFacts>, fleetCompression?: Compression,
): void {
  if (fleetCompression !== 'zstd') return;
  input.moves.forEach((m, i) => {
    if (m.compression || !clusters.get(m.to)?.harvester) return;
    p.warn('compression-uncovered', `${input.path}[${i}].to`,
      `${m.namespace}/${m.vm} moves into the Harvester cluster ${m.to} uncompressed, although spec.migrationPolicy.compression is zstd: the target cluster's MigrationPolicy decides a cross-cluster migration, and we emit none on Harvester clusters (Harvester owns their migration settings)`,
      `accept it, or give ${m.to} a MigrationPolicy with spec.experimental.compression: zstd through Harvester's own means (docs/compression.md)`);
  });
}

/**
 * Two policies of one target cluster and namespace whose label sets nest (one holds the other) select the
 * same VMIs: refused when their compression differs. Two moves of one VM into one namespace and cluster
 * are one policy (one name): refused unless they agree on labels and compression.
 */
function checkOverlaps(p: ForkliftProblems, input: MovesInput, policyOf: (m: Move) => MovePolicy | undefined): void {
  const within = (a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean => Object.entries(a).every(([k, v]) => b[k] === v);
  // every move with a policy of its own, with the compression that policy carries (its own, or the fleet's)
  const selecting = input.moves.map((m, i) => ({ m: { ...m, compression: policyOf(m)?.compression }, i, has: !!policyOf(m) })).filter((x) => x.has);
  for (const { m, i } of selecting) {
    for (const { m: o, i: j } of selecting.filter((x) => x.i < i)) {
      if (o.to !== m.to || targetNamespace(o) !== targetNamespace(m)) continue;
      const a = m.vmiLabels!;
      const b = o.vmiLabels!;
      const same = within(a, b) && within(b, a);
      const nested = within(a, b) || within(b, a);
      const ns = targetNamespace(m);
      if (o.vm === m.vm && (!same || o.compression !== m.compression)) {
        p.error('compression-conflict', `${input.path}[${i}].vmiLabels`,
          `moves ${ns}/${m.vm} into ${m.to} as ${input.path}[${j}] does, with other vmiLabels or compression: both would be the one MigrationPolicy migration-mesh-<fleet>-move.${ns}.${m.vm}`,
          'give both moves the same vmiLabels and compression (the VM carries the same labels), or drop compression from one');
      } else if (o.vm !== m.vm && nested && o.compression !== m.compression) {
        p.error('compression-conflict', `${input.path}[${i}].vmiLabels`,
          `its MigrationPolicy and that of ${input.path}[${j}] (${ns}/${o.vm}) select the same VMIs of namespace ${ns} on ${m.to} (one label set holds the other) with different compression (${m.compression ?? 'none asked'} here, ${o.compression ?? 'none asked'} there): the policy matching more labels wins for a VMI carrying both, so one of the VMs would not get the compression asked for`,
          'give both moves the same compression, or name vmiLabels that tell the two VMs apart (a label only this VM carries)');
      }
    }
  }
}
