/**
 * Checks across VM networks and clusters (issue 40 item 5): names, namespaces, VNIs, VTEPs, per-cluster
 * overrides, the underlay MTU, version gates per serving cluster, and the warnings a user should read
 * before relying on a move (DNS, EVPN ingress). Pure, no cdk8s import.
 */
import { FleetProblem, ProblemCollector } from '../base/errors';
import { Cidr, overlaps, parseCidr } from '../base/ip';
import { FleetDocument } from '../fleet/schema';
import { DEFAULT_DELIVERY_FORM, deliveryForm } from '../kubevirt/delivery-forms';
import { GateCluster, VmNetworkFeature, gateProblems } from './gates';
import { VmNetworkSpec } from './schema';

/** VXLAN over IPv4 adds 50 bytes to every frame (outer Ethernet 14, IPv4 20, UDP 8, VXLAN 8). */
const VXLAN_OVERHEAD = 50;

/** The fleet's clusters as the VM-network checks see them. */
function gateClusters(doc: FleetDocument): GateCluster[] {
  return doc.spec.clusters.map((c, index) => {
    const kv = { ...doc.spec.kubevirt, ...c.kubevirt };
    const form = deliveryForm(kv.configDelivery ?? DEFAULT_DELIVERY_FORM);
    const product = kv.product ?? form.impliedProduct;
    return { name: c.name, index, product, productVersion: kv.productVersion, hco: form.deploysIpamExtensions, ovnKubernetes: c.ovnKubernetes };
  });
}

/** Whether `cluster` serves `net` (every fleet cluster does unless its override says `served: false`). */
export const serves = (net: VmNetworkSpec, cluster: string): boolean => net.clusters?.[cluster]?.served !== false;

function overrideProblems(p: ProblemCollector, net: VmNetworkSpec, path: string, clusters: ReadonlySet<string>): void {
  for (const [name, o] of Object.entries(net.clusters ?? {})) {
    const at = `${path}.clusters.${name}`;
    if (!clusters.has(name)) {
      p.add('vmnet-unknown-cluster', at, `no cluster '${name}' in spec.clusters`, `use one of ${[...clusters].join(', ')}, or remove the override`);
    }
    const l2 = net.topology === 'layer2';
    const wrong = [
      ...(l2 ? (['vlan', 'bridge', 'nodeSelector'] as const).filter((k) => o[k] !== undefined) : []),
      ...(net.reach?.type !== 'evpn' && o.vtepCidrs !== undefined ? ['vtepCidrs' as const] : []),
    ];
    for (const k of wrong) {
      p.add('vmnet-topology-field', `${at}.${k}`, `${k} does not apply to network ${net.name} (${net.topology}, reach ${net.reach?.type ?? 'none'})`, `remove clusters.${name}.${k}`);
    }
  }
}

/** Each EVPN network's VTEP CIDRs on each serving cluster: present, masked, disjoint; one VTEP, one set of CIDRs per cluster. */
function vtepProblems(p: ProblemCollector, nets: readonly VmNetworkSpec[], clusters: readonly string[]): void {
  const byVtep = new Map<string, { net: string; cidrs: string }>();
  nets.forEach((net, i) => {
    if (net.reach?.type !== 'evpn') return;
    for (const c of clusters.filter((x) => serves(net, x))) {
      const own = net.clusters?.[c]?.vtepCidrs;
      const list = own ?? net.reach.vtepCidrs;
      const path = own ? `spec.vmNetworks[${i}].clusters.${c}.vtepCidrs` : `spec.vmNetworks[${i}].reach.vtepCidrs`;
      if (!list) {
        p.add('vmnet-vtep', path, `cluster ${c} serves EVPN network ${net.name} but no VTEP CIDRs are given for it (VTEP spec.cidrs is required)`,
          `give reach.vtepCidrs, or clusters.${c}.vtepCidrs: the CIDRs the node VTEP addresses of ${c} are in`);
        continue;
      }
      const parsed: Cidr[] = [];
      list.forEach((t, j) => {
        const r = parseCidr(t);
        if (!r.ok || r.cidr.family !== 4) {
          p.add('vmnet-vtep', `${path}[${j}]`, `'${t}' is not a masked IPv4 CIDR${r.ok ? '' : r.suggestion ? ` (did you mean ${r.suggestion}?)` : ''}; VTEPs are IPv4 only (OpenShift 4.22) and the CRD wants masked CIDRs`,
            'write a masked IPv4 CIDR such as 192.0.2.0/24');
        } else {
          if (parsed.some((x) => overlaps(x, r.cidr))) p.add('vmnet-vtep', `${path}[${j}]`, `'${t}' overlaps another VTEP CIDR of cluster ${c} (the CRD requires them disjoint)`, 'remove the overlap');
          parsed.push(r.cidr);
        }
      });
      const key = `${c}\u0000${net.reach.vtep}`;
      const text = [...list].sort().join(',');
      const prev = byVtep.get(key);
      if (prev && prev.cidrs !== text) {
        p.add('vmnet-vtep', path, `networks ${prev.net} and ${net.name} both name VTEP ${net.reach.vtep} on cluster ${c} with different CIDRs (${prev.cidrs} vs ${text}); one VTEP object has one spec.cidrs`,
          'give both networks the same VTEP CIDRs, or name different VTEPs');
      }
      if (!prev) byVtep.set(key, { net: net.name, cidrs: text });
    }
  });
}

/** Names, namespaces and VNIs across networks. */
function acrossNetworks(p: ProblemCollector, nets: readonly VmNetworkSpec[]): void {
  const names = new Map<string, number>();
  const primaryNs = new Map<string, string>();
  const vnis = new Map<number, string>();
  nets.forEach((net, i) => {
    const path = `spec.vmNetworks[${i}]`;
    const first = names.get(net.name);
    if (first !== undefined) p.add('vmnet-duplicate-name', `${path}.name`, `'${net.name}' is also spec.vmNetworks[${first}]'s name`, 'give each VM network its own name');
    else names.set(net.name, i);
    if (net.topology === 'layer2') {
      net.namespaces.forEach((ns, j) => {
        const other = primaryNs.get(ns);
        if (other !== undefined && other !== net.name) {
          p.add('vmnet-namespace-primary', `${path}.namespaces[${j}]`, `namespace ${ns} is served by primary networks ${other} and ${net.name}; a namespace has exactly one primary network`,
            `serve ${ns} from one of them; use a localnet (secondary) network for the other`);
        } else {
          primaryNs.set(ns, net.name);
        }
      });
    }
    if (net.reach?.type === 'evpn') {
      const other = vnis.get(net.reach.vni);
      if (other !== undefined) p.add('vmnet-evpn-vni', `${path}.reach.vni`, `VNI ${net.reach.vni} is also network ${other}'s: one VNI is one L2 segment, the two networks would be joined`, 'give each EVPN network its own VNI');
      else vnis.set(net.reach.vni, net.name);
      if (net.reach.underlayMtu !== undefined && net.mtu + VXLAN_OVERHEAD > net.reach.underlayMtu) {
        p.add('vmnet-mtu-evpn', `${path}.mtu`, `mtu ${net.mtu} + ${VXLAN_OVERHEAD} bytes of VXLAN = ${net.mtu + VXLAN_OVERHEAD}, more than the underlay MTU ${net.reach.underlayMtu}: full-size frames between the sites would be dropped`,
          `set mtu to at most ${net.reach.underlayMtu - VXLAN_OVERHEAD}, or raise the underlay MTU`);
      }
    }
  });
}

/** What each serving cluster must be able to do. */
function gates(p: ProblemCollector, doc: FleetDocument, nets: readonly VmNetworkSpec[]): void {
  const clusters = gateClusters(doc);
  nets.forEach((net, i) => {
    const features: VmNetworkFeature[] = [];
    if (net.topology === 'layer2') features.push('preconfigured-addresses');
    if (net.reach?.type === 'evpn') features.push('evpn');
    const persistent = net.topology === 'layer2' || net.ipam !== 'disabled';
    const path = net.reach?.type === 'evpn' ? `spec.vmNetworks[${i}].reach` : `spec.vmNetworks[${i}].topology`;
    for (const c of clusters.filter((x) => serves(net, x.name))) gateProblems(p, c, features, persistent, path, net.name);
  });
}

/** Warnings: true and worth reading, not refusals. */
export function vmNetworkWarnings(doc: FleetDocument): FleetProblem[] {
  const out: FleetProblem[] = [];
  const nets = doc.spec.vmNetworks ?? [];
  nets.forEach((net, i) => {
    const served = doc.spec.clusters.filter((c) => serves(net, c.name));
    const svc = new Set(served.map((c) => (c.serviceCidrs ?? []).join(',')).filter((x) => x));
    if (svc.size > 1 && net.topology === 'layer2') {
      out.push({ code: 'vmnet-dns-differs', path: 'spec.clusters[].serviceCidrs', message: `clusters serving ${net.name} have different service CIDRs (${[...svc].join(' / ')}): OVN-K's DHCP gives a guest its cluster's DNS Service address, and a moved guest keeps the old one until its lease renews (up to ~1 hour)`,
        fix: 'give the guests a DNS server reachable from every site, or renew DHCP in the guest after a move' });
    }
    const vlans = new Map(served.map((c) => [c.name, net.clusters?.[c.name]?.vlan ?? net.vlan]));
    if (net.topology === 'localnet' && new Set(vlans.values()).size > 1) {
      const list = [...vlans].map(([c, v]) => `${c} ${v ?? 'untagged'}`).join(', ');
      out.push({ code: 'vmnet-vlan-differs', path: `spec.vmNetworks[${i}].clusters`, message: `clusters put ${net.name} on different VLANs (${list}): a moved VM stays on its segment only where the fabric translates between them`,
        fix: `make sure the sites' fabric joins these VLANs into one segment, or give ${net.name} one VLAN everywhere (before it is created: the VLAN is immutable)` });
    }
    if (net.reach?.type === 'evpn' && served.length > 1) {
      out.push({ code: 'vmnet-evpn-cclm-ingress', path: `spec.vmNetworks[${i}].reach`, message: `cross-cluster moves over EVPN network ${net.name} are a future goal upstream (OKEP-5088), and OpenShift 4.22 lists lost ingress after them (OCPBUGS-86503)`,
        fix: 'test a move on your fabric first (docs/vm-networks.md, "A VM that moves keeps its address"), and watch ingress to the moved VM' });
    }
  });
  return out;
}

/**
 * Namespaces a primary network must not serve: Kubernetes' and OpenShift's own, and those the mesh, KubeVirt and
 * Forklift run in. A primary network takes over every pod's network in its namespace, and the Namespace object we
 * create for it would be applied over the platform's (where the label counts for nothing: docs/vm-networks.md).
 */
const PLATFORM_NAMESPACE = /^(default|kube-.*|openshift(-.*)?|migration-mesh|kubevirt|kubevirt-hyperconverged|konveyor-forklift|cdi|harvester-system|cattle-.*)$/;

function platformNamespaces(p: ProblemCollector, doc: FleetDocument, nets: readonly VmNetworkSpec[]): void {
  const kubevirtNs = doc.spec.kubevirt?.namespace;
  nets.forEach((net, i) => {
    if (net.topology !== 'layer2') return;
    net.namespaces.forEach((ns, j) => {
      if (!PLATFORM_NAMESPACE.test(ns) && ns !== kubevirtNs) return;
      p.add('vmnet-namespace-reserved', `spec.vmNetworks[${i}].namespaces[${j}]`,
        `namespace ${ns} belongs to the platform (Kubernetes, OpenShift, KubeVirt, Forklift or the mesh itself); primary network ${net.name} would take over the network of every pod in it`,
        `serve the VMs' own namespaces, e.g. tenant-${net.name}, and move the VMs there`);
    });
  });
}

/** A cluster's bridge mapping of a localnet network: the bridge and the nodes the NNCP configures. */
const bridgeOn = (net: VmNetworkSpec, c: string): string =>
  JSON.stringify([net.clusters?.[c]?.bridge ?? net.bridge, net.clusters?.[c]?.nodeSelector ?? net.nodeSelector ?? {}]);

/**
 * One physical network is one OVS bridge mapping per cluster (issue 50 item 5): two localnet networks that
 * map one `physicalNetworkName` to different bridges (or node sets) on a cluster would yield two
 * NodeNetworkConfigurationPolicies fighting over one mapping. Refused; networks that agree share one NNCP.
 */
function bridgeMappings(p: ProblemCollector, nets: readonly VmNetworkSpec[], clusters: readonly string[]): void {
  for (const c of clusters) {
    const first = new Map<string, { i: number; key: string; name: string }>();
    nets.forEach((net, i) => {
      if (net.topology !== 'localnet' || !net.physicalNetworkName || !serves(net, c)) return;
      const key = bridgeOn(net, c);
      const seen = first.get(net.physicalNetworkName);
      if (!seen) { first.set(net.physicalNetworkName, { i, key, name: net.name }); return; }
      if (seen.key === key) return;
      const where = net.clusters?.[c]?.bridge ? `clusters.${c}.bridge` : net.clusters?.[c]?.nodeSelector ? `clusters.${c}.nodeSelector` : 'bridge';
      p.add('vmnet-bridge-conflict', `spec.vmNetworks[${i}].${where}`,
        `networks ${seen.name} and ${net.name} both use physical network ${net.physicalNetworkName} on cluster ${c}, `
        + `mapped to ${JSON.stringify(JSON.parse(seen.key)[0])} and ${JSON.stringify(JSON.parse(key)[0])} (or other nodes): one physical network has one bridge mapping per node`,
        `give ${net.name} the same bridge and nodeSelector as ${seen.name} on ${c}, or another physicalNetworkName (and its own bridge)`);
    });
  }
}

/** Every cross-network and per-cluster problem of `spec.vmNetworks`. */
export function fleetVmNetworkProblems(p: ProblemCollector, doc: FleetDocument): void {
  const nets = doc.spec.vmNetworks ?? [];
  const clusters = doc.spec.clusters.map((c) => c.name);
  acrossNetworks(p, nets);
  platformNamespaces(p, doc, nets);
  nets.forEach((net, i) => overrideProblems(p, net, `spec.vmNetworks[${i}]`, new Set(clusters)));
  vtepProblems(p, nets, clusters);
  bridgeMappings(p, nets, clusters);
  gates(p, doc, nets);
}
