/**
 * The resolved fleet: what validation gives planning (every default applied, every address parsed),
 * the defaults it applies, and the address counts both resolve and the planner use. Pure, no cdk8s import.
 */
import { Attachment, ConfigDelivery, Datapath, FleetSpec, Placement, SyncPlacement } from './schema';
import { Cidr, Family, Interval } from '../base/ip';
import { DEFAULT_TUNNEL_PORT } from '../base/names';
import { KubevirtVersion } from '../kubevirt/versions';
import { TrustPlan } from '../trust/plan';
import { ExistingKubevirt } from '../kubevirt/existing';
import { ResolvedSite } from './sites';
import { ProductVersion } from '../kubevirt/capabilities';
import { VmNetworkDeletion, VmNetworkSpec } from '../vmnet/schema';
import { FleetProblem } from '../base/errors';
import type { ResolvedBandwidth } from '../gateway/bandwidth-budget';
import { DEFAULT_DELIVERY_FORM } from '../kubevirt/delivery-forms';
import { DEFAULT_DATAPATH, datapathMode } from './datapath-modes';
import { assertNever } from '../base/never';

export const DEFAULTS = {
  datapath: DEFAULT_DATAPATH as Datapath,
  // kubevirt.namespace and kubevirt.name: each delivery form's own (src/kubevirt/delivery-forms.ts)
  configDelivery: DEFAULT_DELIVERY_FORM as ConfigDelivery,
  crossClusterNadName: 'lm-crosscluster',
  migrationNadName: 'lm-migration',
  gatewayReplicas: 2,
  failoverMode: 'vip' as 'vip' | 'none',
  virtualRouterId: 51,
  gatewayImage: 'ghcr.io/migration-mesh/proxy:0.1.0',
  tunnelPort: DEFAULT_TUNNEL_PORT,
  syncReplicas: 2,
  syncPlacement: 'controlPlane' as SyncPlacement,
  addressSurge: 2,
  clusterPrefixLength: { 4: 24, 6: 64 } as Record<Family, number>,
} as const;

export interface ResolvedKubevirt {
  readonly namespace: string;
  readonly name: string;
  readonly version: KubevirtVersion;
  readonly configDelivery: ConfigDelivery;
  readonly hasProxyApi: boolean;
  /** What the cluster already has in the lists our KubeVirt object owns (src/kubevirt/existing.ts). */
  readonly existing: ExistingKubevirt;
  /** `developerConfiguration.disabledFeatureGates` (checked against the capability table; empty: none). */
  readonly disabledFeatureGates: string[];
  /** The product and the version its capability rows are read with (src/kubevirt/capabilities.ts). */
  readonly product: ProductVersion;
}

export interface ResolvedNetworkPolicies {
  readonly installed: 'none' | 'kubevirt' | 'default-deny';
  /** Empty: TCP 443/6443 to any address. */
  readonly apiServerCidrs: string[];
}

export interface ResolvedCluster {
  readonly name: string;
  /** Position in the fleet file. */
  readonly index: number;
  readonly nodes: number;
  readonly datapath: Datapath;
  readonly kubevirt: ResolvedKubevirt;
  readonly syncReplicas: number;
  readonly syncPlacement: SyncPlacement;
  readonly migrationAttachment: Attachment;
  /** Explicit in-cluster CIDR; undefined means carved from the supernet. */
  readonly migrationCidr?: Cidr;
  readonly migrationExclude: Interval[];
  readonly gatewayReplicas: number;
  /** gateway mode with 2+ replicas and failover `vip`: the cluster holds one more in-cluster address, the replicas' shared next hop. */
  readonly gatewayVip: boolean;
  /**
   * Trust-agent replicas (`gatewayReplicas`) the cluster runs when it exchanges CAs without a gateway
   * (direct, native, Harvester); each holds one shared-network address. 0 for a gateway cluster (its
   * gateway exchanges) and when the fleet exchanges nothing.
   */
  readonly trustAgentReplicas: number;
  /** The site the cluster is in: its shared-network addresses come from that site's pool. */
  readonly site: string;
  readonly podCidrs: Cidr[];
  readonly serviceCidrs: Cidr[];
  readonly multiNetworkPolicy: boolean;
  /** Policies the cluster enforces that the mesh must open its paths through (src/kubevirt/network-policies.ts). */
  readonly networkPolicies: ResolvedNetworkPolicies;
  /** OpenShift: the gateway pods need an SCC (declared, or implied by hco delivery). */
  readonly openshift: boolean;
}

export interface ResolvedCrossCluster {
  readonly nadName: string;
  readonly attachment: Attachment;
  readonly family: Family;
  readonly prefixLength: number;
  /** Pool after exclusions, network/broadcast and the router removed. */
  readonly usable: Interval[];
  readonly usableCount: bigint;
  /** Raw pool size (before subtractions), for the capacity report. */
  readonly poolCount: bigint;
  readonly excludedCount: bigint;
  readonly reservedCount: bigint;
  /** The /prefixLength subnets the pool touches. */
  readonly subnets: Cidr[];
  readonly gateway?: string;
  readonly routes: { dst: string; gw: string }[];
  /** The sites of the shared network, in file order: one, `default`, when the fleet declares none (src/fleet/sites.ts). */
  readonly sites: ResolvedSite[];
}

export interface ResolvedGateway {
  readonly image: string;
  readonly tunnelPort: number;
  readonly placement?: Placement;
  readonly tls: { kind: 'issuer'; name: string; issuerKind: 'Issuer' | 'ClusterIssuer' } | { kind: 'secret'; secretName: string } | { kind: 'plaintext' };
  /** How an mTLS tunnel carries the payload (`spec.gateway.payload`): spliced (KubeVirt's TLS alone) or inside TLS. */
  readonly payload: 'splice' | 'tls';
  /**
   * The budgets between clusters in bytes per second (`spec.gateway.bandwidth`): a default and the pairs of sites
   * and of clusters; `budgetBetween` (src/gateway/bandwidth-budget.ts) gives one pair's. @default - none (no budget)
   */
  readonly bandwidth?: ResolvedBandwidth;
  readonly serviceMonitor: boolean;
  /** A PrometheusRule beside the ServiceMonitor (`spec.gateway.alerts`, default: `serviceMonitor`). */
  readonly alerts: boolean;
  readonly failover: { readonly mode: 'vip' | 'none'; readonly virtualRouterId: number };
  /**
   * What validate tells about the gateway but does not refuse (`gateway-image-tag-only`, src/gateway/image-pinning.ts;
   * `gateway-bandwidth-below-migrations`, src/gateway/bandwidth-budget.ts). @default - none
   */
  readonly warnings?: readonly FleetProblem[];
}

export interface ResolvedFleet {
  readonly name: string;
  readonly crossCluster: ResolvedCrossCluster;
  readonly migrationNadName: string;
  readonly supernet?: Cidr;
  readonly clusterPrefixLength: number;
  readonly gateway: ResolvedGateway;
  readonly migrationPolicy: NonNullable<FleetSpec['migrationPolicy']>;
  readonly addressSurge: number;
  /** Sorted by name (deterministic planning order). */
  readonly clusters: ResolvedCluster[];
  /** KubeVirt CA rotation and CA exchange per cluster (src/trust/plan.ts). */
  readonly trust: TrustPlan;
  /**
   * `spec.vmNetworks` as validated (issue 40; planned against the ledger in checkPlan, src/vmnet/plan.ts),
   * with its warnings. @default - none
   */
  readonly vmNetworks?: ResolvedVmNetworks;
}

/** What validation gives planning of `spec.vmNetworks`. */
export interface ResolvedVmNetworks {
  readonly specs: readonly VmNetworkSpec[];
  /** `spec.vmNetworkDeletions`: what may be deleted under running VMs. */
  readonly deletions: readonly VmNetworkDeletion[];
  /** Every fleet cluster, in `spec.clusters` order (the slots are handed out in it). */
  readonly clusterOrder: readonly string[];
  readonly warnings: readonly FleetProblem[];
}

/** Addresses one cluster holds on its in-cluster migration network. */
export const inClusterNeeded = (c: ResolvedCluster, surge: number): number =>
  c.nodes + c.syncReplicas + (datapathMode(c.datapath).gateways ? c.gatewayReplicas + (c.gatewayVip ? 1 : 0) : 0) + surge;

/** Addresses one cluster holds on the shared cross-cluster network, by datapath mode. */
export function crossClusterNeeded(c: ResolvedCluster, surge: number, mode: Datapath = c.datapath): number {
  // the trust agents of the cluster's own mode (what-if modes count the handlers alone, as before)
  const agents = mode === c.datapath ? c.trustAgentReplicas : 0;
  switch (mode) {
    case 'gateway': return c.gatewayReplicas;
    case 'native': return c.syncReplicas + surge + agents;
    case 'direct': return c.nodes + c.syncReplicas + surge + agents;
    default: return assertNever(mode, 'datapath mode');
  }
}

/**
 * The breakdown of `inClusterNeeded`, the one text both capacity messages use (resolve for explicit
 * CIDRs, the planner for carved and ledger ones): `8 nodes + 2 sync controllers + 2 gateways + 1
 * gateway VIP + 2 rollout surge`.
 */
export function inClusterBreakdown(c: ResolvedCluster, surge: number): string {
  const gateways = datapathMode(c.datapath).gateways ? ` + ${c.gatewayReplicas} gateways${c.gatewayVip ? ' + 1 gateway VIP' : ''}` : '';
  return `${c.nodes} nodes + ${c.syncReplicas} sync controllers${gateways} + ${surge} rollout surge`;
}
