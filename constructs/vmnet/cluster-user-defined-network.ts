import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { managedByLabels } from '../../src/base/names';
import { vmPruneGuardAnnotations } from '../../src/vmnet/prune-guard';
import { Layer2NetworkOptions, LocalnetNetworkOptions, layer2NetworkSpec, localnetNetworkSpec } from '../../src/vmnet/cudn-spec';

export type { EvpnTransportOptions, Layer2NetworkOptions, LocalnetNetworkOptions } from '../../src/vmnet/cudn-spec';
export { layer2NetworkSpec, localnetNetworkSpec } from '../../src/vmnet/cudn-spec';

/** OVN-Kubernetes' API group and version of `ClusterUserDefinedNetwork`, `VTEP` and `RouteAdvertisements`. */
export const OVN_K8S_API_VERSION = 'k8s.ovn.org/v1';

/**
 * Properties for `ClusterUserDefinedNetwork`. Give exactly one of `layer2` and `localnet`.
 */
export interface ClusterUserDefinedNetworkProps {
  /**
   * The network's name, the same on every cluster: the NAD in each served namespace gets it, and its OVN network
   * name (`cluster_udn_<name>`) is the `spec.network` of every IPAMClaim on it. Under 16 characters with EVPN.
   */
  readonly name: string;
  /** The namespaces it serves, selected by `kubernetes.io/metadata.name`. */
  readonly namespaces: readonly string[];
  /** A primary Layer2 network (`role: Primary`). */
  readonly layer2?: Layer2NetworkOptions;
  /** A secondary Localnet network (`role: Secondary`). */
  readonly localnet?: LocalnetNetworkOptions;
  /**
   * Extra labels, e.g. the one a `RouteAdvertisements` selects it by.
   *
   * @default - the Migration Mesh labels only
   */
  readonly labels?: Record<string, string>;
}

/**
 * An OVN-Kubernetes `ClusterUserDefinedNetwork` (k8s.ovn.org/v1, cluster-scoped) for VMs: a primary Layer2
 * network with persistent IPs (optionally stretched over EVPN), or a secondary Localnet network. Never a namespaced
 * `UserDefinedNetwork`: its OVN name carries the namespace, and it has neither EVPN nor Localnet. The whole
 * `layer2`/`localnet` block is immutable upstream (src/vmnet/cudn-spec.ts declares which fields are): a different
 * block needs the network recreated with every VM off it.
 */
export class ClusterUserDefinedNetwork extends Construct {
  /** The network's name (also the NAD name in every served namespace). */
  public readonly name: string;
  /** L1: cdk8s has no typed ClusterUserDefinedNetwork. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: ClusterUserDefinedNetworkProps) {
    super(scope, id);
    if (!props.layer2 === !props.localnet) {
      throw new InvalidPropsError({
        code: 'prop-invalid', path: 'layer2', message: `ClusterUserDefinedNetwork ${props.name}: give exactly one of layer2 and localnet`,
        fix: 'layer2 for a primary network with persistent IPs, localnet for a secondary network on a physical network',
      });
    }
    if (props.namespaces.length === 0) {
      throw new InvalidPropsError({ code: 'prop-invalid', path: 'namespaces', message: `ClusterUserDefinedNetwork ${props.name}: serves no namespace`, fix: 'list the namespaces whose VMs use it' });
    }
    this.name = props.name;
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: OVN_K8S_API_VERSION,
      kind: 'ClusterUserDefinedNetwork',
      metadata: { name: props.name, labels: { ...managedByLabels(), ...props.labels }, annotations: vmPruneGuardAnnotations() },
      spec: {
        namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [...props.namespaces] }] },
        network: props.layer2 ? layer2NetworkSpec(props.layer2) : localnetNetworkSpec(props.localnet!),
      },
    });
  }
}
