import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { managedByLabels } from '../../src/base/names';
import { OVN_K8S_API_VERSION } from './cluster-user-defined-network';

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * Properties for `Vtep`.
 */
export interface VtepProps {
  /** The VTEP's name, which an EVPN network's `spec.network.evpn.vtep` names. */
  readonly name: string;
  /** Where the nodes' VTEP addresses are (1-20 masked, non-overlapping CIDRs; IPv4 only on OpenShift 4.22). */
  readonly cidrs: readonly string[];
  /**
   * `Unmanaged`: the nodes already carry their VTEP addresses and OVN-Kubernetes discovers them; `Managed`:
   * OVN-Kubernetes assigns them (not yet implemented upstream, https://github.com/ovn-kubernetes/ovn-kubernetes/blob/8871cd9cec9c45d6da1baf9e3b06eb575f49039c/docs/features/bgp-integration/evpn.md#L106).
   *
   * @default 'Unmanaged'
   */
  readonly mode?: 'Managed' | 'Unmanaged';
}

/** An OVN-Kubernetes `VTEP` (k8s.ovn.org/v1, cluster-scoped): the VXLAN tunnel endpoints of one cluster's nodes. */
export class Vtep extends Construct {
  public readonly name: string;
  /** L1: cdk8s has no typed VTEP. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: VtepProps) {
    super(scope, id);
    if (!DNS1123_SUBDOMAIN.test(props.name) || props.name.length > 253) {
      throw new InvalidPropsError({
        code: 'prop-invalid', path: 'name', message: `'${props.name}' is not a DNS-1123 subdomain, so it cannot name the VTEP`,
        fix: 'use lowercase letters, digits, "-" and ".", starting and ending with a letter or digit, at most 253 characters',
      });
    }
    this.name = props.name;
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: OVN_K8S_API_VERSION,
      kind: 'VTEP',
      metadata: { name: props.name, labels: managedByLabels() },
      spec: { cidrs: [...props.cidrs], mode: props.mode ?? 'Unmanaged' },
    });
  }
}
