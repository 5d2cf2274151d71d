import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { PolicyPlan } from '../../src/kubevirt/network-policies';

/**
 * Properties for `AllowNetworkPolicy`.
 */
export interface AllowNetworkPolicyProps {
  /** The planned policy (src/kubevirt/network-policies.ts `clusterPolicies`), of kind `NetworkPolicy`. */
  readonly policy: PolicyPlan;
  /**
   * Labels for the policy.
   *
   * @default - none
   */
  readonly labels?: Record<string, string>;
}

/**
 * A `NetworkPolicy` (networking.k8s.io/v1) that only allows: it opens the fleet's flows to or from one
 * workload (virt-handler, sync controller, gateway, trust agent) through a cluster that declares
 * KubeVirt's network policies or a default-deny (docs/network-policies.md). It lists only the
 * directions those policies already isolate, so it never isolates a pod further.
 */
export class AllowNetworkPolicy extends Construct {
  /** L1: cdk8s-plus-28's NetworkPolicy cannot express `endPort`-less all-port rules with ipBlocks and selectors as planned. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: AllowNetworkPolicyProps) {
    super(scope, id);
    const p = props.policy;
    if (p.kind !== 'NetworkPolicy') {
      throw new InvalidPropsError({ code: 'prop-invalid', path: 'policy.kind', message: `${p.kind} is not a NetworkPolicy`, fix: 'use AllowMultiNetworkPolicy for a MultiNetworkPolicy' });
    }
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'networking.k8s.io/v1',
      kind: 'NetworkPolicy',
      metadata: { name: p.name, namespace: p.namespace, labels: props.labels },
      spec: p.spec,
    });
  }
}
