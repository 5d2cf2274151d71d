import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { managedByLabels } from '../../src/base/names';
import { OVN_K8S_API_VERSION } from './cluster-user-defined-network';

/**
 * Properties for `RouteAdvertisements`.
 */
export interface RouteAdvertisementsProps {
  /** The object's name. */
  readonly name: string;
  /** Labels that select the `ClusterUserDefinedNetwork`s to advertise (`matchLabels`). */
  readonly networkLabels: Record<string, string>;
  /**
   * Labels of the user's `FRRConfiguration`s the OVN-Kubernetes FRR configuration builds on (the BGP sessions to the
   * fabric stay the user's).
   *
   * @default - every FRRConfiguration (an empty selector)
   */
  readonly frrConfigurationLabels?: Record<string, string>;
  /**
   * `spec.targetVRF`: which VRF the routes are advertised in. `auto` advertises each selected network in its own VRF
   * (and OVN-Kubernetes then keeps it out of the default VRF), which EVPN networks need: OVN-Kubernetes' EVPN
   * workflow (OVN-Kubernetes https://github.com/ovn-kubernetes/ovn-kubernetes/blob/8871cd9cec9c45d6da1baf9e3b06eb575f49039c/docs/features/bgp-integration/evpn.md, step 3) sets it. The CRD takes any string and says nothing
   * of this.
   *
   * @default 'auto'
   */
  readonly targetVrf?: string;
}

/**
 * An OVN-Kubernetes `RouteAdvertisements` (k8s.ovn.org/v1, cluster-scoped) that advertises the pod network of the
 * selected `ClusterUserDefinedNetwork`s over BGP, each in its own VRF by default, which an EVPN network needs for its
 * MAC-VRF routes. `PodNetwork`
 * is advertised from every node, so no node selector is written (the CRD refuses one with `PodNetwork`).
 */
export class RouteAdvertisements extends Construct {
  public readonly name: string;
  /** L1: cdk8s has no typed RouteAdvertisements. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: RouteAdvertisementsProps) {
    super(scope, id);
    this.name = props.name;
    const frr = props.frrConfigurationLabels && Object.keys(props.frrConfigurationLabels).length ? { matchLabels: { ...props.frrConfigurationLabels } } : {};
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: OVN_K8S_API_VERSION,
      kind: 'RouteAdvertisements',
      metadata: { name: props.name, labels: managedByLabels() },
      spec: {
        targetVRF: props.targetVrf ?? 'auto',
        advertisements: ['PodNetwork'],
        nodeSelector: {},
        frrConfigurationSelector: frr,
        networkSelectors: [{
          networkSelectionType: 'ClusterUserDefinedNetworks',
          clusterUserDefinedNetworkSelector: { networkSelector: { matchLabels: { ...props.networkLabels } } },
        }],
      },
    });
  }
}
