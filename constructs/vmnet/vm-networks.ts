import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { PinSubject } from '../../src/vmnet/pin-role';
import { ClusterVmNetwork, VmNetworkEvpn } from '../../src/vmnet/resolved';
import { BridgeMappingPolicy } from './bridge-mapping-policy';
import { layer2Of, localnetOf } from '../../src/vmnet/cudn-spec';
import { ClusterUserDefinedNetwork } from './cluster-user-defined-network';
import { ExistingNamespaceGuard } from './existing-namespace-guard';
import { MovedVmGuard } from './moved-vm-guard';
import { PinAddressesRole } from './pin-addresses-role';
import { PrimaryNetworkNamespace } from './primary-network-namespace';
import { RouteAdvertisements } from './route-advertisements';
import { Vtep } from './vtep';

/**
 * Properties for `VmNetworks`.
 */
export interface VmNetworksProps {
  /**
   * The VM networks one cluster serves, resolved and planned (src/vmnet: `ClusterVmNetworks.networks`, every value
   * final: the address plan's `reservedSubnets`/`excludeSubnets` for this cluster, explicit MTU, defaults applied).
   */
  readonly networks: readonly ClusterVmNetwork[];
  /**
   * The cluster's name, in the words of the served-namespace guard's refusal.
   *
   * @default '(this cluster)'
   */
  readonly cluster?: string;
}

/**
 * Everything that makes one cluster's VM networks real (issue 40): per network a `ClusterUserDefinedNetwork`
 * (same name, topology, subnets, MTU and gateway on every cluster; this cluster's reserved or excluded slices), the
 * served `Namespace`s of primary networks created with the primary-network label, for localnet the nmstate bridge
 * mapping, for EVPN the `VTEP` and the `RouteAdvertisements` (the FRRConfiguration stays the user's). With a
 * primary Layer2 network (the topology whose addresses move with a VM), also what keeps a moved address from coming
 * back twice (issue 40 item 4): the `MovedVmGuard` bound to the served namespaces of every Layer2 network, and the
 * `PinAddressesRole` in each of them for `migration-mesh pin-addresses`, bound to the network's `pinAddressesBy`
 * where it names subjects (else unbound: the identity is the user's). With served namespaces of a primary network,
 * the `ExistingNamespaceGuard` that refuses an apply adding the primary-network label to one that exists without it.
 * A localnet-only cluster gets neither: its VMs do not keep their address (OVN IPAM) or the guest owns it. Objects
 * several networks share (a namespace, a VTEP, a bridge-mapping policy) are emitted once; two networks that name
 * one of them with different contents are a planning error, refused here rather than emitted twice.
 */
export class VmNetworks extends Construct {
  /** One per network, in the fleet's order. */
  public readonly networks: readonly ClusterUserDefinedNetwork[];
  public readonly namespaces: readonly PrimaryNetworkNamespace[];
  public readonly bridgeMappings: readonly BridgeMappingPolicy[];
  public readonly vteps: readonly Vtep[];
  public readonly routeAdvertisements: readonly RouteAdvertisements[];
  /** The Role `migration-mesh-pin-addresses` in each namespace a Layer2 network serves (and its bindings); absent without a Layer2 network. */
  public readonly pinAddressesRole?: PinAddressesRole;
  /** The ValidatingAdmissionPolicy keeping a moved VM's tombstone Halted, bound to the Layer2 networks' namespaces; absent without one. */
  public readonly movedVmGuard?: MovedVmGuard;
  /**
   * The ValidatingAdmissionPolicy refusing the primary-network label on a served namespace that exists without it
   * (the label only counts at creation); absent without a primary network that serves namespaces.
   */
  public readonly existingNamespaceGuard?: ExistingNamespaceGuard;

  constructor(scope: Construct, id: string, props: VmNetworksProps) {
    super(scope, id);
    const namespaces = new Map<string, PrimaryNetworkNamespace>();
    const policies = new Map<string, { policy: BridgeMappingPolicy; key: string }>();
    const vteps = new Map<string, { vtep: Vtep; key: string }>();
    const ras: RouteAdvertisements[] = [];
    for (const n of props.networks) {
      if (n.primaryNamespaces) {
        for (const ns of n.namespaces) if (!namespaces.has(ns)) namespaces.set(ns, new PrimaryNetworkNamespace(this, `Namespace-${ns}`, { name: ns }));
      }
      if (n.localnet) this.bridgeMapping(n, policies);
      if (n.reach.type === 'evpn') {
        this.vtep(n.name, n.reach, vteps);
        ras.push(new RouteAdvertisements(this, `RouteAdvertisements-${n.reach.routeAdvertisements.name}`, {
          name: n.reach.routeAdvertisements.name, networkLabels: n.labels, frrConfigurationLabels: n.reach.routeAdvertisements.frrConfigurationSelector,
        }));
      }
    }
    this.networks = props.networks.map((n) => new ClusterUserDefinedNetwork(this, `Network-${n.name}`, {
      name: n.name, namespaces: n.namespaces, labels: n.labels,
      ...(n.topology === 'Layer2' ? { layer2: layer2Of(n) } : { localnet: localnetOf(n) }),
    }));
    this.namespaces = [...namespaces.values()];
    const primary = props.networks.filter((n) => n.primaryNamespaces && n.namespaces.length);
    if (primary.length) this.existingNamespaceGuard = new ExistingNamespaceGuard(this, 'ExistingNamespaceGuard', { cluster: props.cluster ?? '(this cluster)', networks: primary });
    this.bridgeMappings = [...policies.values()].map((x) => x.policy);
    this.vteps = [...vteps.values()].map((x) => x.vtep);
    this.routeAdvertisements = ras;
    const layer2 = props.networks.filter((n) => n.topology === 'Layer2');
    const kept = [...new Set(layer2.flatMap((n) => n.namespaces))].sort();
    if (kept.length) {
      const bindings: Record<string, PinSubject[]> = {};
      for (const n of layer2) for (const ns of n.namespaces) bindings[ns] = [...(bindings[ns] ?? []), ...(n.pinAddressesBy ?? [])];
      this.pinAddressesRole = new PinAddressesRole(this, 'PinAddressesRole', { namespaces: kept, bindings });
      this.movedVmGuard = new MovedVmGuard(this, 'MovedVmGuard', { namespaces: kept });
    }
  }

  private bridgeMapping(n: ClusterVmNetwork, policies: Map<string, { policy: BridgeMappingPolicy; key: string }>): void {
    const l = n.localnet!;
    const props = {
      name: l.policyName, physicalNetworkName: l.physicalNetworkName, bridge: l.bridge.name,
      ...(l.bridge.kind === 'create' ? { port: l.bridge.port } : {}), nodeSelector: { ...l.nodeSelector },
    };
    const key = JSON.stringify(props);
    const seen = policies.get(l.policyName);
    if (seen && seen.key !== key) {
      throw new InvalidPropsError({
        code: 'plan-inconsistent', path: `networks[${n.name}].localnet.policyName`,
        message: `VmNetworks: network ${n.name} names NodeNetworkConfigurationPolicy ${l.policyName} with other contents than an earlier network`,
        fix: 'give each physical network and bridge one policy name (one policy per physical network)',
      });
    }
    if (!seen) policies.set(l.policyName, { policy: new BridgeMappingPolicy(this, `BridgeMapping-${l.policyName}`, props), key });
  }

  private vtep(network: string, e: VmNetworkEvpn, vteps: Map<string, { vtep: Vtep; key: string }>): void {
    const key = JSON.stringify([e.vtepCidrs, e.vtepMode]);
    const seen = vteps.get(e.vtep);
    if (seen && seen.key !== key) {
      throw new InvalidPropsError({
        code: 'plan-inconsistent', path: `networks[${network}].reach.vtep`,
        message: `VmNetworks: network ${network} names VTEP ${e.vtep} with other CIDRs than an earlier network`, fix: 'give one VTEP the same CIDRs in every network that names it',
      });
    }
    if (!seen) vteps.set(e.vtep, { vtep: new Vtep(this, `Vtep-${e.vtep}`, { name: e.vtep, cidrs: e.vtepCidrs, mode: e.vtepMode }), key });
  }
}
