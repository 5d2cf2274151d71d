import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { MULTI_POLICY_FOR_ANNOTATION } from '../../src/gateway/pod';

/**
 * Properties for `GatewayCrossClusterPolicy`.
 */
export interface GatewayCrossClusterPolicyProps {
  /** Namespace of the gateway pods and of the cross-cluster NAD. */
  readonly namespace: string;
  /** Name of the cross-cluster NAD the policy applies to (only that attachment is filtered). */
  readonly crossClusterNad: string;
  /** Labels selecting this cluster's gateway pods. */
  readonly podSelector: Record<string, string>;
  /** The other clusters' gateway addresses as /32 or /128 CIDRs: the only ones admitted. */
  readonly peerCidrs: string[];
  /** TCP port of the tunnel listener. */
  readonly tunnelPort: number;
  /**
   * Also restrict egress on the cross-cluster attachment to the peers' tunnel port (replies to admitted
   * connections stay allowed: the policy controller accepts established flows).
   *
   * @default true
   */
  readonly restrictEgress?: boolean;
  /**
   * Labels for the policy.
   *
   * @default - none
   */
  readonly labels?: Record<string, string>;
}

/**
 * A `MultiNetworkPolicy` (k8s.cni.cncf.io/v1beta1, enforced by the multi-networkpolicy controller) on
 * the cross-cluster attachment only (`k8s.v1.cni.cncf.io/policy-for`): ingress to the gateways is
 * admitted from the other clusters' gateway addresses on the tunnel port, nothing else. Emitted only
 * for clusters that declare `multiNetworkPolicy: true`: without the controller the object is inert.
 */
export class GatewayCrossClusterPolicy extends Construct {
  /** L1: MultiNetworkPolicy is a Multus CRD; cdk8s-plus-28 has no construct for it. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: GatewayCrossClusterPolicyProps) {
    super(scope, id);
    if (!Number.isInteger(props.tunnelPort) || props.tunnelPort < 1 || props.tunnelPort > 65535) {
      throw new InvalidPropsError({ code: 'prop-invalid', path: 'tunnelPort', message: `${props.tunnelPort} is not a TCP port`, fix: 'use 1-65535' });
    }
    const peers = props.peerCidrs.map((cidr) => ({ ipBlock: { cidr } }));
    const ports = [{ protocol: 'TCP', port: props.tunnelPort }];
    const egress = props.restrictEgress ?? true;
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'k8s.cni.cncf.io/v1beta1',
      kind: 'MultiNetworkPolicy',
      metadata: {
        name: 'migration-mesh-gateway-crosscluster',
        namespace: props.namespace,
        labels: props.labels,
        annotations: { [MULTI_POLICY_FOR_ANNOTATION]: `${props.namespace}/${props.crossClusterNad}` },
      },
      spec: {
        podSelector: { matchLabels: props.podSelector },
        policyTypes: egress ? ['Ingress', 'Egress'] : ['Ingress'],
        // no peers (a one-cluster fleet): an empty rule list denies everything on this attachment
        ingress: peers.length ? [{ from: peers, ports }] : [],
        ...(egress ? { egress: peers.length ? [{ to: peers, ports }] : [] } : {}),
      },
    });
  }
}
