/**
 * Which clusters can run which VM network (issue 40 item 5): OVN-Kubernetes and OpenShift versions for
 * preconfigured addresses (reservedSubnets, infrastructureSubnets, defaultGatewayIPs) and EVPN, and
 * ipam-extensions for persistent addresses. One table, each row with its upstream source (OVN-Kubernetes @8871cd9c,
 * https://github.com/ovn-kubernetes/ovn-kubernetes/blob/8871cd9cec9c45d6da1baf9e3b06eb575f49039c, and OpenShift's feature gates). Pure, no cdk8s import.
 */
import { ProblemCollector } from '../base/errors';
import { parseKubevirtVersion } from '../kubevirt/versions';
import { OvnKubernetesSpec } from './schema';

/** What a VM network asks of a cluster. */
export type VmNetworkFeature = 'preconfigured-addresses' | 'evpn';

interface GateRow {
  readonly feature: VmNetworkFeature;
  /** First OVN-Kubernetes release with it. */
  readonly ovnK: string;
  /** First OpenShift minor with it on by default. */
  readonly openshift: string;
  readonly what: string;
  readonly source: string;
}

const VMNET_GATES: readonly GateRow[] = [
  {
    feature: 'preconfigured-addresses', ovnK: '1.2.0', openshift: '4.20',
    what: 'reservedSubnets, infrastructureSubnets and defaultGatewayIPs (enable-preconfigured-udn-addresses); without it OVN-K drops them from the NAD silently and every cluster allocates the whole subnet',
    source: 'ovn-kubernetes @8871cd9c go-controller/pkg/clustermanager/userdefinednetwork/template/net-attach-def-template.go:181-185, 274-284; OpenShift PreconfiguredUDNAddresses Default in 4.20',
  },
  {
    feature: 'evpn', ovnK: '1.3.0', openshift: '4.22',
    what: 'transport: EVPN with a MAC-VRF (enable-evpn; OpenShift: bare metal only, IPv4 VTEPs)',
    source: 'ovn-kubernetes CRD since 00ed2851d, in v1.3.0; OpenShift EVPN gate from release-4.22 (openshift/api features/features.go)',
  },
];

/** A cluster as the gates see it. */
export interface GateCluster {
  readonly name: string;
  readonly index: number;
  readonly product: 'kubevirt' | 'openshift-virtualization' | 'harvester';
  /** The product's version as written (OpenShift Virtualization follows the OpenShift minor). */
  readonly productVersion?: string;
  readonly hco: boolean;
  readonly ovnKubernetes?: OvnKubernetesSpec;
}

const atLeast = (text: string, since: string): boolean => {
  const v = parseKubevirtVersion(text);
  const s = parseKubevirtVersion(since)!;
  if (!v) return false;
  return v.major !== s.major ? v.major > s.major : v.minor !== s.minor ? v.minor > s.minor : v.patch >= s.patch;
};

/**
 * The problems of serving a network that needs `features` (and persistent addresses when `persistent`)
 * on cluster `c`; `path` is the network's field that asks for them.
 */
export function gateProblems(p: ProblemCollector, c: GateCluster, features: readonly VmNetworkFeature[], persistent: boolean, path: string, net: string): void {
  const cpath = `spec.clusters[${c.index}]`;
  if (c.product === 'harvester') {
    p.add('vmnet-cni-unsupported', path, `cluster ${c.name} is Harvester, whose VM networks are its own bridge/VLAN networks, not OVN-Kubernetes user-defined networks; VM network ${net} cannot be created there`,
      `serve ${net} elsewhere: set clusters.${c.name}.served: false on the network`);
    return;
  }
  const ovnVersion = c.ovnKubernetes?.version;
  const ocp = c.product === 'openshift-virtualization' ? c.productVersion : undefined;
  if (!ovnVersion && !ocp && features.length > 0) {
    p.add('vmnet-version-unknown', `${cpath}.ovnKubernetes.version`,
      `VM network ${net} needs ${features.join(' and ')}, and cluster ${c.name} declares neither an OVN-Kubernetes version nor an OpenShift Virtualization version to check it against`,
      `declare spec.clusters[${c.index}].ovnKubernetes.version (e.g. v1.3.0), or kubevirt.product: openshift-virtualization with its productVersion`);
    return;
  }
  for (const f of features) {
    const row = VMNET_GATES.find((g) => g.feature === f)!;
    const ok = ovnVersion ? atLeast(ovnVersion, row.ovnK) : atLeast(ocp!, row.openshift);
    if (!ok) {
      const have = ovnVersion ? `OVN-Kubernetes ${ovnVersion}` : `OpenShift ${ocp}`;
      const want = ovnVersion ? `OVN-Kubernetes v${row.ovnK}` : `OpenShift ${row.openshift}`;
      p.add(f === 'evpn' ? 'vmnet-evpn-gate' : 'vmnet-static-gate', path,
        `VM network ${net} needs ${row.what}; cluster ${c.name} runs ${have}, which has it from ${want} on (${row.source})`,
        f === 'evpn' ? `upgrade cluster ${c.name} to ${want}+, or use reach: {type: none} (no keep-the-address moves), or set clusters.${c.name}.served: false`
          : `upgrade cluster ${c.name} to ${want}+, or set clusters.${c.name}.served: false on ${net}`);
    }
  }
  if (features.includes('evpn') && c.ovnKubernetes?.bareMetal === false) {
    p.add('vmnet-evpn-gate', path, `VM network ${net} uses EVPN, and cluster ${c.name} declares ovnKubernetes.bareMetal: false; OpenShift supports EVPN on bare metal only`,
      `serve ${net} on bare-metal clusters only (clusters.${c.name}.served: false), or use reach: {type: none}`);
  }
  if (persistent && !c.hco && c.ovnKubernetes?.ipamExtensions !== true) {
    p.add('vmnet-persistent-gate', `${cpath}.ovnKubernetes.ipamExtensions`,
      `VM network ${net} uses persistent addresses (ipam.lifecycle: Persistent): on plain KubeVirt they need kubevirt/ipam-extensions (or CNAO kubevirtIpamController) on cluster ${c.name}, which does not declare it; without it the VM's IPAMClaim is never created and the address changes on every restart`,
      `install ipam-extensions on cluster ${c.name} and declare spec.clusters[${c.index}].ovnKubernetes.ipamExtensions: true (HCO deploys it always)`);
  }
}
