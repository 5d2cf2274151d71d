/**
 * VM networks, resolved per cluster (issue 40): what `resolveVmNetworks` (plan.ts) gives the constructs
 * (constructs/vmnet/: ClusterUserDefinedNetwork, the primary-network Namespaces, the localnet
 * NodeNetworkConfigurationPolicy, VTEP, RouteAdvertisements) and the Forklift NetworkMap entries. THE
 * CONSTRUCTS HELPER CONSUMES THIS SHAPE AS IS: every value is final (defaults applied, the address plan
 * applied, addresses in canonical text, IPv4 before IPv6), so a construct copies fields and decides
 * nothing. Field names follow the upstream CRDs in test/fixtures/upstream/ovn-k/ (k8s.ovn.org/v1
 * ClusterUserDefinedNetwork, VTEP, RouteAdvertisements) and test/fixtures/upstream/nmstate/ (nmstate.io/v1
 * NodeNetworkConfigurationPolicy); the fleet's own words (layer2, localnet, reach) are mapped here.
 * Pure data, no cdk8s import.
 */
import { NetworkPair } from '../forklift/model';
import { PinSubject } from './pin-role';

/** `spec.network.topology` of the CUDN. Layer3 is not offered (a VM's address cannot move between node subnets). */
export type VmNetworkTopology = 'Layer2' | 'Localnet';

/** `spec.network.layer2.role` / `spec.network.localnet.role`: Layer2 networks are Primary, Localnet networks Secondary (the only role the CRD allows). */
export type VmNetworkRole = 'Primary' | 'Secondary';

/** Label on every CUDN we emit (value: the network name); the RouteAdvertisements of an EVPN network selects its CUDN by it. */
export const VM_NETWORK_LABEL = 'migrationmesh.dev/vm-network';

/** Label a Namespace must carry FROM ITS CREATION to get a primary user-defined network (OVN-K honours it only then). */
export const PRIMARY_UDN_NAMESPACE_LABEL = 'k8s.ovn.org/primary-user-defined-network';

/** KubeVirt VM template annotation that pins a primary Layer2 address (ipam-extensions `network.kubevirt.io/addresses`). */
export const ADDRESSES_ANNOTATION = 'network.kubevirt.io/addresses';

/** `spec.network.<layer2|localnet>.ipam` of the CUDN. */
export interface VmNetworkIpam {
  /** `Enabled`: OVN-K assigns addresses from `subnets`; `Disabled` (localnet only): the guest owns its address, no IP port security. */
  readonly mode: 'Enabled' | 'Disabled';
  /** `Persistent` whenever `mode` is `Enabled` (an IPAMClaim per VM interface keeps the address over restarts and in-cluster moves); absent with `Disabled`. */
  readonly lifecycle?: 'Persistent';
}

/** The localnet part of a network: the physical network, its VLAN on this cluster, and the OVS bridge the NNCP maps it to. */
export interface VmNetworkLocalnet {
  /** `spec.network.localnet.physicalNetworkName`; also the NNCP's `desiredState.ovn.bridge-mappings[].localnet`. Same on every cluster. */
  readonly physicalNetworkName: string;
  /**
   * `spec.network.localnet.vlan.access.id` on THIS cluster (`vlan: {mode: Access, access: {id}}`); the
   * fleet may override it per cluster where sites translate VLANs. @default - untagged (no `vlan` block)
   */
  readonly vlan?: number;
  /**
   * The OVS bridge of the NNCP's bridge mapping on this cluster. `create`: the NNCP also creates it
   * (`interfaces: [{name, type: ovs-bridge, state: up, bridge: {allow-extra-patch-ports: true, port: [{name: port}]}}]`);
   * `existing`: only the mapping is written (e.g. `br-ex`).
   */
  readonly bridge: { readonly kind: 'create'; readonly name: string; readonly port: string } | { readonly kind: 'existing'; readonly name: string };
  /** Name of the NodeNetworkConfigurationPolicy (cluster-scoped): `mm-<network>-bridge-mapping`. */
  readonly policyName: string;
  /** `spec.nodeSelector` of the NNCP (the nodes that run VMs). @default - {} (every node) */
  readonly nodeSelector: Readonly<Record<string, string>>;
}

/** EVPN reach: what the CUDN's `spec.network.evpn`, the VTEP and the RouteAdvertisements need on this cluster. */
export interface VmNetworkEvpn {
  readonly type: 'evpn';
  /** `spec.network.transport: EVPN` is implied. `spec.network.evpn.macVRF.vni` (1-16777215); same on every cluster. */
  readonly vni: number;
  /**
   * `spec.network.evpn.macVRF.routeTarget` (`<AS>:<n>` or `<ip>:<n>`); same on every cluster.
   * @default - absent: OVN-K derives `<local AS>:<VNI>`, equal only where the ASNs are
   */
  readonly routeTarget?: string;
  /** `spec.network.evpn.vtep`: the name of the cluster-scoped VTEP object; that VTEP is emitted with the fields below. */
  readonly vtep: string;
  /** VTEP `spec.cidrs` on THIS cluster (1-20 masked, non-overlapping CIDRs: where the nodes' VTEP addresses are). */
  readonly vtepCidrs: readonly string[];
  /** VTEP `spec.mode`: always `Unmanaged` (the fabric assigns the VTEP addresses; `Managed` is not implemented upstream). */
  readonly vtepMode: 'Unmanaged';
  /**
   * The RouteAdvertisements to emit: `metadata.name` `name`, `spec.advertisements: [PodNetwork]`,
   * `spec.nodeSelector: {}` (required to be empty with PodNetwork), `spec.networkSelectors:
   * [{networkSelectionType: ClusterUserDefinedNetworks, clusterUserDefinedNetworkSelector: {networkSelector:
   * {matchLabels: {<VM_NETWORK_LABEL>: <network>}}}}]`, `spec.frrConfigurationSelector` as given. The
   * FRRConfiguration itself stays the user's.
   */
  readonly routeAdvertisements: {
    readonly name: string;
    /** `spec.frrConfigurationSelector.matchLabels`: the user's FRRConfiguration(s). @default - {} (every FRRConfiguration) */
    readonly frrConfigurationSelector: Readonly<Record<string, string>>;
  };
}

/**
 * How the network's L2 segment reaches the other clusters. `none`: it does not (a VM moved with its
 * address is unreachable from the other site; a keep-the-address move is refused). `vlan`: localnet on
 * a VLAN the sites share (the fabric joins them; nothing is emitted for it). `evpn`: OVN-K EVPN transport
 * (primary Layer2 only).
 */
export type VmNetworkReach = { readonly type: 'none' } | { readonly type: 'vlan' } | VmNetworkEvpn;

/** One subnet's split, the same on every cluster (recorded in the ledger; never re-split in place). */
export interface VmSubnetSplit {
  /** The subnet (`spec.network.<layer2|localnet>.subnets[i]`). */
  readonly subnet: string;
  /** Infrastructure (Layer2 `infrastructureSubnets`, same everywhere), for this family; empty for localnet. */
  readonly infrastructure: readonly string[];
  /** The mobile slice: reserved on every cluster, addresses given only by the ledger (to VMs that move). */
  readonly mobile: string;
  /** Cluster slices by slot (slot i = `slices[i]`), spares included: each cluster's dynamic range is its slice. */
  readonly slices: readonly string[];
  /** Addresses excluded everywhere (hosts outside Kubernetes), from the fleet's `reserved`. */
  readonly reserved: readonly string[];
}

/** A VM's address from the mobile slice, as the ledger holds it. */
export interface MobileVmAddress {
  readonly namespace: string;
  readonly vm: string;
  /** Bare addresses, one per subnet family, IPv4 first (the form the addresses annotation takes: ipam-extensions refuses CIDRs). */
  readonly addresses: readonly string[];
  /** The template annotation value `{"<iface>": [addresses]}` with the primary interface name (`default` unless the fleet names it). */
  readonly annotation: string;
}

/** One VM network as ONE cluster sees it: the fields of its CUDN and companions. */
export interface ClusterVmNetwork {
  /** CUDN `metadata.name` (cluster-scoped); the NAD in each served namespace has the same name. Same on every cluster. */
  readonly name: string;
  /** Index in `spec.vmNetworks` (for error paths). */
  readonly index: number;
  /** `spec.network.topology`. */
  readonly topology: VmNetworkTopology;
  /** `spec.network.<layer2|localnet>.role`. */
  readonly role: VmNetworkRole;
  /**
   * Served namespaces, sorted: the CUDN's `spec.namespaceSelector: {matchExpressions: [{key:
   * kubernetes.io/metadata.name, operator: In, values: namespaces}]}`. For a Primary network each is
   * also emitted as a `Namespace` labelled `PRIMARY_UDN_NAMESPACE_LABEL: ""` (an existing namespace
   * without the label is refused, never patched: the label only counts at creation).
   */
  readonly namespaces: readonly string[];
  /** Emit the served Namespaces with the primary label (Primary networks only). */
  readonly primaryNamespaces: boolean;
  /** `subnets`: one per family, IPv4 first. Empty with localnet `ipam.mode: Disabled` (the CRD forbids them then). */
  readonly subnets: readonly string[];
  /** `mtu`: always written (the defaults differ: Layer2 = cluster MTU, Localnet = cluster MTU + 100). */
  readonly mtu: number;
  /** `ipam`. */
  readonly ipam: VmNetworkIpam;
  /** Layer2 `defaultGatewayIPs` (one per subnet, same everywhere: the guest keeps gateway IP and MAC). Empty for Localnet. */
  readonly defaultGatewayIPs: readonly string[];
  /** Layer2 `infrastructureSubnets` (same everywhere, contain the gateways). Empty for Localnet. */
  readonly infrastructureSubnets: readonly string[];
  /** Layer2 `reservedSubnets` for THIS cluster (everything but infrastructure and its own slice; at most 25). Empty for Localnet. */
  readonly reservedSubnets: readonly string[];
  /** Localnet `excludeSubnets` for THIS cluster (everything but its own slice; at most 25). Empty for Layer2 and with ipam Disabled. */
  readonly excludeSubnets: readonly string[];
  /** The localnet part; absent for Layer2. */
  readonly localnet?: VmNetworkLocalnet;
  /** How the segment reaches the other clusters; `evpn` means the CUDN gets `transport: EVPN` + `evpn` and the VTEP / RouteAdvertisements are emitted. */
  readonly reach: VmNetworkReach;
  /** Labels on the CUDN: `{VM_NETWORK_LABEL: name}`. */
  readonly labels: Readonly<Record<string, string>>;
  /** This cluster's slice (its dynamic range), per subnet, with the slot number; absent with ipam Disabled. */
  readonly slice?: { readonly slot: number; readonly cidrs: readonly string[] };
  /**
   * Forklift NetworkMap entries for this network on a pair whose TARGET is this cluster: Primary:
   * `{source: {type: pod}, destination: {type: pod}}` (a primary-UDN VM uses `pod: {}`); Localnet: one
   * `<ns>/<name>` -> multus `<ns>/<name>` per served namespace (same NAD on both sides).
   */
  readonly networkMap: readonly NetworkPair[];
  /** VMs of this network with a mobile address from the ledger (for the addresses annotation), in `mobileVms` order. */
  readonly mobileVms: readonly MobileVmAddress[];
  /**
   * Layer2: who the pin-addresses Role is bound to in each served namespace (`pinAddressesBy`), in declared order.
   * @default - none: the Role is emitted unbound
   */
  readonly pinAddressesBy?: readonly PinSubject[];
}

/** Every VM network one cluster serves, in `spec.vmNetworks` order. */
export interface ClusterVmNetworks {
  readonly cluster: string;
  readonly networks: readonly ClusterVmNetwork[];
}

/** One network, fleet-wide: the split, who holds which slot, and where it is served. */
export interface VmNetworkPlan {
  readonly name: string;
  readonly index: number;
  readonly topology: VmNetworkTopology;
  readonly role: VmNetworkRole;
  readonly reach: VmNetworkReach['type'];
  /** Per subnet (IPv4 first); empty with localnet ipam Disabled. */
  readonly splits: readonly VmSubnetSplit[];
  /**
   * Slot of each cluster that holds one: every fleet cluster (served or not: a cluster not served still holds
   * its slot) and clusters that left the fleet, whose slots the ledger keeps until their line is deleted.
   */
  readonly slots: Readonly<Record<string, number>>;
  /** Clusters that serve the network (get its CUDN). */
  readonly servedOn: readonly string[];
  /** Spare slots (not given to any cluster yet). */
  readonly spareSlots: number;
  /** How full each mobile slice is: addresses the ledger gives (kept ones included) of those a VM can have. */
  readonly mobileUse: readonly { readonly slice: string; readonly given: number; readonly capacity: string }[];
  readonly mobileVms: readonly MobileVmAddress[];
  /** Layer2: the VM's primary interface name, the key of the addresses annotation. */
  readonly primaryInterface: string;
  /** Whether a VM keeps its address when it moves: `pinned` (primary Layer2), `guest` (localnet ipam Disabled), `no` (localnet persistent). */
  readonly keepsAddress: 'pinned' | 'guest' | 'no';
}
