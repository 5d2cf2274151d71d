import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { managedByLabels } from '../../src/base/names';

/** OVN-Kubernetes' API group and version of `ClusterUserDefinedNetwork`, `VTEP` and `RouteAdvertisements`. */
export const OVN_K8S_API_VERSION = 'k8s.ovn.org/v1';

/**
 * EVPN transport of a primary Layer2 network (OVN-Kubernetes v1.3.0+, OpenShift 4.22+): the network's L2 segment
 * is a MAC-VRF that every cluster importing the same VNI and route target shares.
 */
export interface EvpnTransportOptions {
  /** Name of the cluster's `VTEP` object (`spec.network.evpn.vtep`). */
  readonly vtep: string;
  /** The MAC-VRF's VXLAN network identifier, 1-16777215, the same on every cluster. */
  readonly vni: number;
  /**
   * The MAC-VRF's route target (`<ASN>:<n>`, `<IPv4>:<n>` or `*:<n>`, at most 21 characters).
   *
   * @default - OVN-Kubernetes derives `<AS>:<VNI>` from the node's AS: give it explicitly when the clusters' AS differ
   */
  readonly routeTarget?: string;
}

/** The Layer2 block of a primary VM network: persistent IPs, explicit MTU, optional preconfigured addresses. */
export interface Layer2NetworkOptions {
  /** One CIDR per IP family (1 or 2), the same on every cluster. */
  readonly subnets: readonly string[];
  /** MTU, always written: the default (the cluster's MTU) differs between clusters. 576-65536, at least 1280 with IPv6. */
  readonly mtu: number;
  /**
   * Keep a VM's addresses across restarts and in-cluster live migration (`ipam.lifecycle: Persistent`, IPAMClaims).
   *
   * @default true
   */
  readonly persistentIps?: boolean;
  /**
   * `defaultGatewayIPs`: one per subnet family, inside `infrastructureSubnets` when those are set.
   *
   * @default - OVN-Kubernetes takes the first address of each subnet
   */
  readonly defaultGatewayIPs?: readonly string[];
  /**
   * `infrastructureSubnets` (1-4 masked CIDRs inside `subnets`), the same on every cluster.
   *
   * @default - none
   */
  readonly infrastructureSubnets?: readonly string[];
  /**
   * `reservedSubnets` (1-25 masked CIDRs inside `subnets`): what this cluster never hands out by itself (the
   * mobile slice and the other clusters' slices). An empty list writes none.
   *
   * @default - none
   */
  readonly reservedSubnets?: readonly string[];
  /**
   * Stretch the segment to the other clusters over OVN-Kubernetes' EVPN transport (`transport: EVPN`).
   *
   * @default - no transport: the segment stays inside the cluster (or is joined by the user's own fabric)
   */
  readonly evpn?: EvpnTransportOptions;
}

/** The Localnet block of a secondary VM network on a physical network (a VLAN on a node bridge). */
export interface LocalnetNetworkOptions {
  /** `physicalNetworkName`: the `localnet` key of the nodes' OVS bridge mapping (no `,` or `:`). */
  readonly physicalNetworkName: string;
  /** MTU, always written: the default (cluster MTU + 100) differs between clusters. 576-65536, at least 1280 with IPv6. */
  readonly mtu: number;
  /**
   * Access VLAN ID, 1-4094.
   *
   * @default - untagged
   */
  readonly vlan?: number;
  /**
   * One CIDR per IP family when OVN-Kubernetes assigns addresses (`ipam.lifecycle: Persistent`).
   *
   * @default - `ipam.mode: Disabled`: the guest (or the site's DHCP) owns its address, which then survives any move
   */
  readonly subnets?: readonly string[];
  /**
   * `excludeSubnets` (1-25 CIDRs inside `subnets`; upstream does not check that, OVN-Kubernetes fails at run time).
   * An empty list writes none.
   *
   * @default - none
   */
  readonly excludeSubnets?: readonly string[];
}

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

const nonEmpty = (key: string, list: readonly string[] | undefined): Record<string, string[]> => (list?.length ? { [key]: [...list] } : {});

/** `spec.network` of a primary Layer2 network. */
export function layer2NetworkSpec(o: Layer2NetworkOptions): Record<string, unknown> {
  const layer2 = {
    role: 'Primary',
    subnets: [...o.subnets],
    mtu: o.mtu,
    ...(o.persistentIps === false ? {} : { ipam: { lifecycle: 'Persistent' } }),
    ...nonEmpty('defaultGatewayIPs', o.defaultGatewayIPs),
    ...nonEmpty('infrastructureSubnets', o.infrastructureSubnets),
    ...nonEmpty('reservedSubnets', o.reservedSubnets),
  };
  if (!o.evpn) return { topology: 'Layer2', layer2 };
  const macVRF = { vni: o.evpn.vni, ...(o.evpn.routeTarget ? { routeTarget: o.evpn.routeTarget } : {}) };
  return { topology: 'Layer2', layer2, transport: 'EVPN', evpn: { vtep: o.evpn.vtep, macVRF } };
}

/** `spec.network` of a secondary Localnet network. */
export function localnetNetworkSpec(o: LocalnetNetworkOptions): Record<string, unknown> {
  const ipam = o.subnets?.length
    ? { ipam: { lifecycle: 'Persistent' }, subnets: [...o.subnets], ...nonEmpty('excludeSubnets', o.excludeSubnets) }
    : { ipam: { mode: 'Disabled' } };
  return {
    topology: 'Localnet',
    localnet: {
      role: 'Secondary',
      physicalNetworkName: o.physicalNetworkName,
      mtu: o.mtu,
      ...(o.vlan !== undefined ? { vlan: { mode: 'Access', access: { id: o.vlan } } } : {}),
      ...ipam,
    },
  };
}

/**
 * An OVN-Kubernetes `ClusterUserDefinedNetwork` (k8s.ovn.org/v1, cluster-scoped) for VMs: a primary Layer2
 * network with persistent IPs (optionally stretched over EVPN), or a secondary Localnet network. Never a namespaced
 * `UserDefinedNetwork`: its OVN name carries the namespace, and it has neither EVPN nor Localnet. The whole
 * `layer2`/`localnet` block is immutable upstream: a different block needs the network recreated with every VM off it.
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
      metadata: { name: props.name, labels: { ...managedByLabels(), ...props.labels } },
      spec: {
        namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [...props.namespaces] }] },
        network: props.layer2 ? layer2NetworkSpec(props.layer2) : localnetNetworkSpec(props.localnet!),
      },
    });
  }
}
