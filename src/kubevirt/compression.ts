/**
 * Migration compression (issue #29 item 3). KubeVirt 1.9 compresses migration data with zstd on
 * libvirt's multifd channels (PR #17509). Read in kubevirt/kubevirt v1.9.0 @79d34c17 and main @d923fdb8:
 * the option lives in `ExperimentalMigrationOptions.compression` (types.go:3454-3475), which
 * `MigrationPolicy.spec.experimental` carries (api/migrations/v1alpha1/types.go:60-63) and the KubeVirt
 * CR's `MigrationConfiguration` does not (types.go:3545-3602). No feature gate registers it
 * (featuregate/active.go) and no admitter checks it (kubevirt-update-admitter.go
 * validateMigrationConfiguration:571-595, migrationpolicy-admitter.go:54-167). virt-controller merges
 * the matched policy's `experimental.compression` into the migration's options
 * (watch/migration/migrationpolicy.go:148-160) and the source virt-handler passes it to virt-launcher
 * (virt-handler/migration-source.go:578-580). So the fleet option becomes one MigrationPolicy per
 * cluster. In a cross-cluster migration the TARGET cluster's virt-controller matches the policy and the
 * sync controller copies the result to the source VMI (docs/compression.md; per-move policies:
 * src/forklift/compression.ts); the source's policies decide its in-cluster migrations. Pure, no cdk8s import.
 */
import { JsonObject } from '../base/json';

export const COMPRESSION_POLICY_API_VERSION = 'migrations.kubevirt.io/v1alpha1';

/** The name of the fleet's MigrationPolicy (cluster-scoped) on every cluster. */
export const compressionPolicyName = (fleet: string): string => `migration-mesh-${fleet}-compression`;

/**
 * The MigrationPolicy spec of one cluster, or undefined when the fleet sets no compression. Empty
 * selectors match every VMI with the lowest score (migrationpolicy.go countMatchingLabels), so a policy
 * of the user's that matches a VMI's labels wins over this one for that VMI.
 */
export function compressionPolicySpec(migrationPolicy: Readonly<Record<string, unknown>>): JsonObject | undefined {
  const compression = migrationPolicy.compression;
  if (compression !== 'zstd' && compression !== 'none') return undefined;
  return { selectors: {}, experimental: { compression } };
}

/** Fleet `migrationPolicy` fields that are not KubeVirt CR `migrations` fields (rendered elsewhere). */
export const NOT_IN_KUBEVIRT_CR: readonly string[] = ['compression', 'crossCluster'];
