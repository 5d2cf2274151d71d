/**
 * One VM network as one cluster gets it (resolved.ts `ClusterVmNetwork`): the same name, topology,
 * subnets, MTU, gateway and infrastructure everywhere; this cluster's reserved/excluded ranges from its
 * slot; its VLAN, bridge and VTEP; the Forklift NetworkMap entries. Refuses a cluster whose ranges would
 * exceed the CRD's 25 entries. Pure, no cdk8s import.
 */
import { ProblemCollector } from '../base/errors';
import { formatAddr, formatCidr } from '../base/ip';
import { NetworkPair } from '../forklift/model';
import { ParsedNetwork } from './declaration';
import { VmNetworkLedger } from './ledger';
import { PinSubject } from './pin-role';
import { VmNetworkSpec } from './schema';
import { ClusterVmNetwork, MobileVmAddress, VM_NETWORK_LABEL, VmNetworkReach } from './resolved';
import { MAX_RESERVED_ENTRIES, Split, reservedFor } from './split';

/** The addresses annotation value: `{"<iface>": ["10.50.240.1", "fd50::f:1"]}` (bare addresses; ipam-extensions refuses CIDRs). */
export const mobileAnnotation = (iface: string, addresses: readonly string[]): string => JSON.stringify({ [iface]: [...addresses] });

/** The declared mobile VMs, in declared order, with their ledger addresses (a VM the fleet no longer lists keeps its ledger entry, not a place here). */
export function mobileVmsOf(n: ParsedNetwork, entry: VmNetworkLedger): MobileVmAddress[] {
  const iface = n.spec.primaryInterface ?? 'default';
  return (n.spec.mobileVms ?? []).filter((ref) => entry.vms?.[ref]).map((ref) => {
    const [namespace, vm] = ref.split('/');
    const addresses = entry.vms![ref];
    return { namespace, vm, addresses, annotation: mobileAnnotation(iface, addresses) };
  });
}

function reachOn(n: ParsedNetwork, cluster: string): VmNetworkReach {
  const r = n.spec.reach ?? { type: 'none' as const };
  if (r.type !== 'evpn') return r;
  return {
    type: 'evpn', vni: r.vni, ...(r.routeTarget !== undefined ? { routeTarget: r.routeTarget } : {}), vtep: r.vtep,
    vtepCidrs: [...(n.spec.clusters?.[cluster]?.vtepCidrs ?? r.vtepCidrs ?? [])], vtepMode: 'Unmanaged',
    routeAdvertisements: { name: `mm-${n.spec.name}`, frrConfigurationSelector: { ...(r.frrConfigurationSelector ?? {}) } },
  };
}

/** A `pinAddressesBy` entry as the constructs take it (no empty namespace key). */
const pinSubject = (x: PinSubject): PinSubject => ({ kind: x.kind, name: x.name, ...(x.namespace !== undefined ? { namespace: x.namespace } : {}) });

function networkMap(n: ParsedNetwork, namespaces: readonly string[]): NetworkPair[] {
  if (n.topology === 'Layer2') return [{ source: { type: 'pod' }, destination: { type: 'pod' } }];
  return namespaces.map((ns) => ({ source: { name: n.spec.name, namespace: ns }, destination: { type: 'multus', name: n.spec.name, namespace: ns } }));
}

/** `mm-<network>-bridge-mapping`, after the first network (in fleet order) on the same physical network: one NNCP per mapping. */
function bridgePolicyName(n: ParsedNetwork, all: readonly VmNetworkSpec[] = [n.spec]): string {
  const first = all.find((x) => x.topology === 'localnet' && x.physicalNetworkName === n.spec.physicalNetworkName) ?? n.spec;
  return `mm-${first.name}-bridge-mapping`;
}

/** The network on `cluster`; `entry` is its ledger entry (slots), `splits` its subnets' splits; `all`: the fleet's networks (the shared NNCP's name). */
export function clusterNetwork(p: ProblemCollector, n: ParsedNetwork, cluster: string, entry: VmNetworkLedger, splits: readonly Split[],
  all: readonly VmNetworkSpec[] = [n.spec]): ClusterVmNetwork {
  const s = n.spec;
  const l2 = n.topology === 'Layer2';
  const slot = entry.clusters?.[cluster]?.slot;
  const ranges = n.ipamEnabled ? splits.flatMap((sp) => reservedFor(sp, slot, l2)).map(formatCidr) : [];
  if (ranges.length > MAX_RESERVED_ENTRIES) {
    const infraHint = l2 ? ' (a small infrastructure CIDR deep inside a large subnet costs one entry per bit: widen it to a whole slice-sized block)' : '';
    p.add('vmnet-limit', `${n.path}.allocation`, `cluster ${cluster}'s ${l2 ? 'reservedSubnets' : 'excludeSubnets'} for ${s.name} would need ${ranges.length} CIDRs; the CRD takes at most ${MAX_RESERVED_ENTRIES}${infraHint}`,
      'align the infrastructure, reserved ranges and mobile slice to slice-sized blocks, or use fewer reserved ranges');
  }
  const namespaces = [...s.namespaces].sort();
  const mobileVms = mobileVmsOf(n, entry);
  const bridge = s.clusters?.[cluster]?.bridge ?? s.bridge;
  const vlan = entry.clusters?.[cluster]?.vlan ?? s.clusters?.[cluster]?.vlan ?? s.vlan;
  return {
    name: s.name, index: n.index, topology: n.topology, role: l2 ? 'Primary' : 'Secondary', namespaces, primaryNamespaces: l2,
    subnets: n.subnets.map(formatCidr), mtu: s.mtu,
    ipam: n.ipamEnabled ? { mode: 'Enabled', lifecycle: 'Persistent' } : { mode: 'Disabled' },
    defaultGatewayIPs: n.gateways.map((g) => formatAddr(g)),
    infrastructureSubnets: n.infrastructure.map(formatCidr),
    reservedSubnets: l2 ? ranges : [],
    excludeSubnets: l2 ? [] : ranges,
    ...(!l2 && bridge && s.physicalNetworkName ? {
      localnet: {
        physicalNetworkName: s.physicalNetworkName,
        ...(vlan !== undefined ? { vlan } : {}),
        bridge: 'existing' in bridge ? { kind: 'existing' as const, name: bridge.existing } : { kind: 'create' as const, name: bridge.name, port: bridge.port },
        policyName: bridgePolicyName(n, all),
        nodeSelector: { ...(s.clusters?.[cluster]?.nodeSelector ?? s.nodeSelector ?? {}) },
      },
    } : {}),
    reach: reachOn(n, cluster),
    labels: { [VM_NETWORK_LABEL]: s.name },
    ...(slot !== undefined && n.ipamEnabled ? { slice: { slot, cidrs: splits.map((sp) => formatCidr(sp.slices[slot])) } } : {}),
    networkMap: networkMap(n, namespaces),
    mobileVms,
    ...(l2 && s.pinAddressesBy ? { pinAddressesBy: s.pinAddressesBy.map(pinSubject) } : {}),
  };
}
