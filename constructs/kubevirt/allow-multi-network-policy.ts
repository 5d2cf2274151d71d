import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { MULTI_POLICY_FOR_ANNOTATION } from '../../src/gateway/pod';
import { PolicyPlan } from '../../src/kubevirt/network-policies';

/**
 * Properties for `AllowMultiNetworkPolicy`.
 */
export interface AllowMultiNetworkPolicyProps {
  /** The planned policy (src/kubevirt/network-policies.ts `clusterPolicies`), of kind `MultiNetworkPolicy`. */
  readonly policy: PolicyPlan;
  /**
   * Labels for the policy.
   *
   * @default - none
   */
  readonly labels?: Record<string, string>;
}

/**
 * A `MultiNetworkPolicy` (k8s.cni.cncf.io/v1beta1) on one secondary network (`policy-for` names its NAD)
 * that opens the fleet's flows to or from one workload, for a cluster that declares a default-deny and
 * runs the multi-networkpolicy controller (docs/network-policies.md).
 */
export class AllowMultiNetworkPolicy extends Construct {
  /** L1: MultiNetworkPolicy is a Multus CRD; cdk8s-plus-28 has no construct for it. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: AllowMultiNetworkPolicyProps) {
    super(scope, id);
    const p = props.policy;
    if (p.kind !== 'MultiNetworkPolicy' || !p.policyFor) {
      throw new InvalidPropsError({ code: 'prop-invalid', path: 'policy', message: `${p.kind} ${p.name} is not a MultiNetworkPolicy with a network`, fix: 'plan it with clusterPolicies, which names the NAD it filters' });
    }
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'k8s.cni.cncf.io/v1beta1',
      kind: 'MultiNetworkPolicy',
      metadata: { name: p.name, namespace: p.namespace, labels: props.labels, annotations: { [MULTI_POLICY_FOR_ANNOTATION]: p.policyFor } },
      spec: p.spec,
    });
  }
}
