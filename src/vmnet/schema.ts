/**
 * The fleet's `spec.vmNetworks` (issue 40): VM networks that keep a VM's address across clusters, declared
 * once for the fleet and overridden per cluster only where the real systems allow it (the VLAN a site
 * uses, its bridge, its VTEP addresses, whether it serves the network). Structure only; the rules that
 * relate fields (families, containment, the split, versions) are in checks.ts and plan.ts with their own
 * problem codes. Facts: the OVN-Kubernetes CRDs (ovn-kubernetes @8871cd9c, copies in
 * test/fixtures/upstream/ovn-k) and docs/vm-networks.md, each check with its upstream source. Pure, no cdk8s import.
 */
import { z } from 'zod';
import { dnsSubdomain, matchLabels } from '../base/k8s-names';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const label = z.string()
  .max(63, { message: 'must be at most 63 characters (a DNS-1123 label)' })
  .regex(DNS1123_LABEL, { message: 'must be a DNS-1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit' });

const vlanId = z.number().int().min(1, { message: 'must be 1-4094 (802.1Q)' }).max(4094, { message: 'must be 1-4094 (802.1Q)' });

/** An OVS bridge name (Linux interface name rules). */
const bridgeName = z.string().min(1).max(15, { message: 'must be at most 15 characters (Linux IFNAMSIZ)' })
  .regex(/^[^\s/:]+$/, { message: 'must not contain spaces, "/" or ":"' });

/** The localnet OVS bridge: a new one on a NIC/bond (`name` + `port`), or an existing one (`existing: br-ex`: only the mapping is written). */
const bridgeSchema = z.union([
  z.object({
    /** OVS bridge the NNCP creates. */
    name: bridgeName,
    /** NIC or bond the bridge is built on. */
    port: bridgeName,
  }).strict(),
  z.object({
    /** An OVS bridge the node already has (e.g. `br-ex`). */
    existing: bridgeName,
  }).strict(),
]);

const selectorLabels = matchLabels;

/** How the network's L2 segment reaches the other clusters. */
const reachSchema = z.discriminatedUnion('type', [
  /** It does not: a VM keeps its address only inside its cluster; keep-the-address moves are refused. */
  z.object({ type: z.literal('none') }).strict(),
  /** Localnet only: the VLAN is one L2 segment at every site (the fabric joins them). */
  z.object({ type: z.literal('vlan') }).strict(),
  /** Layer2 only: OVN-Kubernetes' EVPN transport (MAC-VRF), OVN-K v1.3.0+ / OpenShift 4.22+, bare metal. */
  z.object({
    type: z.literal('evpn'),
    /** `evpn.macVRF.vni`, the same on every cluster. */
    vni: z.number().int().min(1, { message: 'must be 1-16777215 (a 24-bit VNI)' }).max(16_777_215, { message: 'must be 1-16777215 (a 24-bit VNI)' }),
    /**
     * `evpn.macVRF.routeTarget`: `<2-byte AS>:<4-byte n>`, `<4-byte AS>:<2-byte n>` or `<IPv4>:<2-byte n>`.
     * Needed when the clusters' BGP ASNs differ (OVN-K's default is `<local AS>:<VNI>`).
     * @default - OVN-K's `<local AS>:<VNI>`
     */
    routeTarget: z.string().max(21, { message: 'must be at most 21 characters (the CRD limit)' }).optional(),
    /** Name of the cluster-scoped VTEP object (shared by every EVPN network that names it). */
    vtep: dnsSubdomain,
    /** VTEP `spec.cidrs`: where the nodes' VTEP addresses are (per cluster: `clusters.<name>.vtepCidrs`). @default - per cluster only */
    vtepCidrs: z.array(z.string()).min(1).max(20, { message: 'must list at most 20 CIDRs (the VTEP CRD limit)' }).optional(),
    /** `spec.frrConfigurationSelector.matchLabels` of the RouteAdvertisements: your FRRConfiguration. @default - {} (every FRRConfiguration) */
    frrConfigurationSelector: selectorLabels.optional(),
    /** MTU of the underlay between the sites, checked against `mtu` + 50 bytes of VXLAN. @default - not checked */
    underlayMtu: z.number().int().min(576).max(65536).optional(),
  }).strict(),
]);

/** How each subnet is split (item 3): cluster slices (spares included), and the mobile slice. */
const allocationSchema = z.object({
  /**
   * Cluster slices per subnet, spares for clusters not in the fleet yet included. Fixed when the network
   * is first planned: changing it later is refused (the CUDN is immutable).
   * @default 8
   */
  slots: z.number().int().min(1).max(1024).optional(),
  /**
   * Prefix length of each slice, per family (`{ipv4: 20, ipv6: 80}`).
   * @default - the subnet's prefix + ceil(log2(slots + 2)) (room for the slots, the mobile slice and the infrastructure)
   */
  slicePrefix: z.object({ ipv4: z.number().int().min(1).max(32).optional(), ipv6: z.number().int().min(1).max(128).optional() }).strict().optional(),
  /** The mobile slice, one CIDR per subnet family. @default - the last slice-sized block of each subnet */
  mobile: z.array(z.string()).min(1).max(2).optional(),
}).strict();

/** What one cluster changes about a network. */
const clusterOverrideSchema = z.object({
  /** The cluster serves the network (gets its CUDN). A cluster that does not still holds its slot. @default true */
  served: z.boolean().optional(),
  /** Pin the cluster's slot (0-based); the ledger keeps it either way. @default - the lowest free slot */
  slot: z.number().int().min(0).max(1023).optional(),
  /** Localnet: this cluster's VLAN id (a site that translates VLANs). @default - the network's vlan */
  vlan: vlanId.optional(),
  /** Localnet: this cluster's OVS bridge. @default - the network's bridge */
  bridge: bridgeSchema.optional(),
  /** EVPN: this cluster's VTEP `spec.cidrs`. @default - reach.vtepCidrs */
  vtepCidrs: z.array(z.string()).min(1).max(20, { message: 'must list at most 20 CIDRs (the VTEP CRD limit)' }).optional(),
  /** Localnet: the NNCP's `nodeSelector` on this cluster. @default - the network's nodeSelector */
  nodeSelector: selectorLabels.optional(),
}).strict();

/** A subject the pin-addresses Role is bound to: a User or Group by name, a ServiceAccount by namespace and name. */
const pinSubjectSchema = z.object({
  /** `User`, `Group` or `ServiceAccount` (RBAC subject kinds). */
  kind: z.enum(['User', 'Group', 'ServiceAccount']),
  /** The user or group name as the API server authenticates it, or the ServiceAccount's name. */
  name: z.string().min(1).max(253),
  /** ServiceAccount only: its namespace. @default - none (required for a ServiceAccount) */
  namespace: label.optional(),
}).strict().superRefine((s, ctx) => {
  const bad = (path: string, message: string, fix: string) => ctx.addIssue({ code: 'custom', path: [path], message, params: { code: 'vmnet-pin-subject', fix } });
  if (s.kind === 'ServiceAccount' && s.namespace === undefined) {
    bad('namespace', `ServiceAccount ${s.name} has no namespace; a RoleBinding names a ServiceAccount by namespace and name`, 'add namespace: <the ServiceAccount\'s namespace>');
  }
  if (s.kind !== 'ServiceAccount' && s.namespace !== undefined) {
    bad('namespace', `a ${s.kind} is cluster-wide and has no namespace (only a ServiceAccount does)`, 'remove namespace, or use kind: ServiceAccount');
  }
  if (s.kind === 'ServiceAccount' && !DNS1123_SUBDOMAIN.test(s.name)) {
    bad('name', `'${s.name}' is not a ServiceAccount name (a DNS-1123 subdomain: lowercase letters, digits, "-" and ".")`, 'write the ServiceAccount\'s name as the cluster has it, e.g. vm-mover');
  }
});

/** `namespace/name` of a VirtualMachine. */
const vmRef = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, { message: 'must be namespace/name of a VirtualMachine, e.g. tenant-blue/web-1' });

/** One VM network. */
export const vmNetworkSchema = z.object({
  /** Name of the ClusterUserDefinedNetwork on every cluster (and of its NAD in each served namespace). */
  name: label,
  /** `layer2`: a primary Layer2 network with persistent addresses. `localnet`: a secondary network on a physical network and VLAN. */
  topology: z.enum(['layer2', 'localnet']),
  /** Namespaces the network serves, the same on every cluster. A primary network's namespaces are created with the primary-network label. */
  namespaces: z.array(label).min(1, { message: 'must list at least one namespace' }),
  /** One CIDR per family (IPv4, IPv6 or both). Required unless localnet `ipam: disabled` (then forbidden). @default - none */
  subnets: z.array(z.string()).min(1).max(2, { message: 'must list at most 2 subnets (one per family)' }).optional(),
  /** MTU of the network, always written (the upstream defaults differ between clusters and topologies). */
  mtu: z.number().int().min(576, { message: 'must be at least 576 (the CRD minimum; 1280 with IPv6)' }).max(65536, { message: 'must be at most 65536 (the CRD maximum)' }),
  /** Layer2: `defaultGatewayIPs`, one per subnet, inside `infrastructure`. @default - none (OVN-K's first address) */
  gateways: z.array(z.string()).min(1).max(2).optional(),
  /** Layer2: `infrastructureSubnets` (1-4 CIDRs inside the subnets, the same on every cluster). Required for layer2. */
  infrastructure: z.array(z.string()).min(1).max(4, { message: 'must list at most 4 CIDRs (the CRD limit)' }).optional(),
  /** Addresses excluded on every cluster (hosts outside Kubernetes: routers, appliances): CIDRs inside the subnets. @default - none */
  reserved: z.array(z.string()).optional(),
  /** How the L2 segment reaches the other clusters. @default {type: none} */
  reach: reachSchema.optional(),
  /**
   * Localnet: `persistent` (OVN-K assigns from this cluster's slice; a moved VM gets a new address) or
   * `disabled` (the guest owns its address).
   * @default persistent
   */
  ipam: z.enum(['persistent', 'disabled']).optional(),
  /** Localnet: `physicalNetworkName`, equal to the NNCP bridge mapping's `localnet` key. */
  physicalNetworkName: z.string().min(1).max(253).regex(/^[^,:]+$/, { message: 'must not contain "," or ":" (the CRD refuses them)' }).optional(),
  /** Localnet: VLAN id (access mode). @default - untagged */
  vlan: vlanId.optional(),
  /** Localnet: the OVS bridge the physical network is mapped to. Required for localnet. */
  bridge: bridgeSchema.optional(),
  /** Localnet: nodes the NNCP configures. @default - {} (every node) */
  nodeSelector: selectorLabels.optional(),
  /** How each subnet is split between the clusters and the mobile slice. @default {slots: 8} */
  allocation: allocationSchema.optional(),
  /** Layer2: VMs that get an address from the mobile slice (`namespace/name`); the ledger keeps each. @default - none */
  mobileVms: z.array(vmRef).optional(),
  /** Layer2: the VM's primary interface name (the key of the addresses annotation). @default default */
  primaryInterface: z.string().min(1).max(63).optional(),
  /**
   * Layer2: who runs `migration-mesh pin-addresses`: the pin-addresses Role is bound to them (a RoleBinding
   * `migration-mesh-pin-addresses`) in each served namespace, on every cluster that serves the network.
   * @default - none: the Role is emitted unbound; bind it yourself (docs/vm-networks.md)
   */
  pinAddressesBy: z.array(pinSubjectSchema).min(1, { message: 'must list at least one subject (or leave pinAddressesBy out)' }).max(32).optional(),
  /** Per-cluster overrides, by cluster name. @default - none */
  clusters: z.record(z.string(), clusterOverrideSchema).optional(),
}).strict();

/** One deletion the fleet allows (`spec.vmNetworkDeletions[i]`): a network's objects, everywhere or on some clusters. */
export const vmNetworkDeletionSchema = z.object({
  /** The VM network (as the ledger names it). */
  network: label,
  /** Only on these clusters (those that no longer serve it). @default - every cluster (the network left the fleet) */
  clusters: z.array(z.string().min(1)).min(1).optional(),
}).strict();

/** What a cluster's OVN-Kubernetes can do (plain KubeVirt: nothing else tells us). */
export const ovnKubernetesSchema = z.object({
  /** OVN-Kubernetes version (`v1.2.0`, `1.3`). @default - from OpenShift's version (openshift-virtualization), else unknown */
  version: z.string().regex(/^v?\d+\.\d+(\.\d+)?$/, { message: 'must look like v1.3.0 or 1.3' }).optional(),
  /** kubevirt/ipam-extensions is installed (plain KubeVirt; HCO always deploys it). @default true with configDelivery hco, else false */
  ipamExtensions: z.boolean().optional(),
  /** The cluster runs on bare metal (EVPN needs it on OpenShift). @default true */
  bareMetal: z.boolean().optional(),
}).strict();

export type VmNetworkSpec = z.infer<typeof vmNetworkSchema>;
export type VmNetworkDeletion = z.infer<typeof vmNetworkDeletionSchema>;
export type OvnKubernetesSpec = z.infer<typeof ovnKubernetesSchema>;
