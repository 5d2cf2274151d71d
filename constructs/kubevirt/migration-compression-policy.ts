import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { JsonObject } from '../../src/base/json';
import { COMPRESSION_POLICY_API_VERSION, compressionPolicyName } from '../../src/kubevirt/compression';

/**
 * Properties for `MigrationCompressionPolicy`.
 */
export interface MigrationCompressionPolicyProps {
  /** The fleet name (the policy is `migration-mesh-<fleet>-compression`). */
  readonly fleet: string;
  /**
   * The MigrationPolicy spec (src/kubevirt/compression.ts `compressionPolicySpec`, or
   * src/forklift/compression.ts `movePolicySpec` for a move's policy).
   */
  readonly spec: JsonObject;
  /**
   * The policy's name: a move's policy is `migration-mesh-<fleet>-move.<namespace>.<vm>`
   * (src/forklift/compression.ts `movePolicyName`).
   * @default - the fleet-wide `migration-mesh-<fleet>-compression`
   */
  readonly name?: string;
}

/**
 * A cluster-scoped KubeVirt `MigrationPolicy` (migrations.kubevirt.io/v1alpha1) carrying the fleet's
 * `migrationPolicy.compression` in `spec.experimental.compression`: the KubeVirt CR has no such field
 * (KubeVirt 1.9.0 and main), so this is the only place it can go (docs/compression.md). The fleet-wide
 * one has empty selectors (every VMI, lowest rank); a move's selects its VMI by namespace and labels on
 * the move's target cluster, whose virt-controller picks the policy of a cross-cluster migration, and also
 * carries the fleet's cross-cluster settings (bandwidth, completion timeout, auto-converge, post-copy:
 * docs/migrations.md).
 */
export class MigrationCompressionPolicy extends Construct {
  /** L1: cdk8s has no typed MigrationPolicy. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: MigrationCompressionPolicyProps) {
    super(scope, id);
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: COMPRESSION_POLICY_API_VERSION,
      kind: 'MigrationPolicy',
      metadata: { name: props.name ?? compressionPolicyName(props.fleet) },
      spec: props.spec,
    });
  }
}
