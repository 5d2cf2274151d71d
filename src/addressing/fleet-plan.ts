/**
 * The plan: what address planning gives the later stages (per-cluster CIDRs, gateway addresses on both
 * networks, whereabouts ranges, routes, peer tables, capacity) and the next ledger. Types only; the
 * planner (planner.ts) re-exports them. Pure, no cdk8s import.
 */
import { Attachment, Datapath, SyncPlacement } from '../fleet/schema';
import { Family } from '../base/ip';
import { Ledger, LedgerChange } from './ledger';
import { ResolvedFleet, ResolvedGateway, ResolvedKubevirt, ResolvedNetworkPolicies } from '../fleet/resolved';
import { SitePlan } from './sites';
import { ClusterVmNetworks, VmNetworkPlan } from '../vmnet/resolved';
import { FleetProblem } from '../base/errors';

export interface RoutePlan { readonly dst: string; readonly gw: string }

/** Whereabouts IPAM for one NAD. */
export interface WhereaboutsPlan {
  readonly range: string;
  readonly rangeStart?: string;
  readonly rangeEnd?: string;
  readonly exclude: string[];
  readonly routes: RoutePlan[];
}

export interface GatewayReplicaPlan {
  readonly replica: number;
  /** Static address on the in-cluster migration network, with prefix (`10.200.0.1/24`). */
  readonly inCluster: string;
  /** Static address on the shared cross-cluster network, with prefix. */
  readonly crossCluster: string;
}

/** One replica of a trust agent (a cluster without a gateway that exchanges CAs, issue #30). */
export interface TrustAgentReplicaPlan {
  readonly replica: number;
  /** Static address on the shared cross-cluster network, with prefix. */
  readonly crossCluster: string;
}

export interface PeerPlan {
  readonly cluster: string;
  /** The peer's in-cluster CIDRs the tunnels carry; empty for a peer reached for trust only (a trust agent, or any peer of a trust agent). */
  readonly cidrs: string[];
  /** Where the peer exchanges: its gateway replicas, or its trust agent's replicas. */
  readonly gateways: { host: string; port: number }[];
}

export interface ClusterPlan {
  readonly name: string;
  readonly datapath: Datapath;
  readonly nodes: number;
  readonly syncReplicas: number;
  readonly syncPlacement: SyncPlacement;
  readonly kubevirt: ResolvedKubevirt;
  readonly multiNetworkPolicy: boolean;
  /** Policies the cluster enforces (the mesh emits the allow-policies its flows need). */
  readonly networkPolicies: ResolvedNetworkPolicies;
  /** OpenShift cluster: the gateway gets an SCC and its binding. */
  readonly openshift: boolean;
  /** The NAD KubeVirt names in `migrations.network` (in-cluster in gateway/native mode, the shared network in direct mode). */
  readonly migrationNetwork: {
    readonly nadName: string;
    readonly attachment: Attachment;
    /** In-cluster CIDR (gateway/native). */
    readonly cidr?: string;
    readonly ipam: WhereaboutsPlan;
  };
  /** native mode: the sync controllers' NAD on the shared network. */
  readonly crossClusterSync?: { readonly nadName: string; readonly ipam: WhereaboutsPlan };
  /** gateway mode: one entry per replica. */
  readonly gateways: GatewayReplicaPlan[];
  /**
   * gateway mode with failover `vip` (2+ replicas): the in-cluster address, with prefix, that one
   * replica at a time holds (VRRP) and the handlers' routes point at.
   */
  readonly gatewayVip?: string;
  /**
   * The runtime's peer table: in gateway mode the other gateway clusters (with their CIDRs) and the
   * trust agents of the clusters without a gateway (trust only); for a trust agent every other
   * exchanging cluster, trust only. Empty when the cluster runs neither.
   */
  readonly peers: PeerPlan[];
  /** direct/native/Harvester clusters that exchange CAs: the trust agent's replicas (empty otherwise). */
  readonly trustAgents: TrustAgentReplicaPlan[];
  /** The cluster's site: the attachment, prefix and routes of its shared-network attachments (gateways, trust agents, direct/native slices). */
  readonly site: SitePlan;
  readonly capacity: {
    /** In-cluster addresses needed vs usable in the CIDR (gateway/native). */
    readonly inCluster?: { needed: number; usable: string };
    /** Shared-network addresses this cluster holds. */
    readonly crossCluster: number;
  };
}

export interface CapacityReport {
  readonly family: Family;
  readonly pool: string;
  readonly excluded: string;
  readonly reserved: string;
  readonly usable: string;
  /** Addresses the fleet holds on the shared network in its configured modes. */
  readonly needed: number;
  readonly free: string;
  /** What each mode would need for this fleet (VEP 191 comparison). */
  readonly byMode: { direct: number; directWithSurge: number; native: number; gateway: number };
}

export interface FleetPlan {
  readonly fleet: string;
  readonly crossCluster: {
    readonly nadName: string;
    readonly attachment: Attachment;
    readonly prefixLength: number;
    readonly gateway?: string;
    readonly routes: RoutePlan[];
  };
  readonly migrationPolicy: ResolvedFleet['migrationPolicy'];
  readonly gateway: ResolvedGateway;
  readonly addressSurge: number;
  readonly supernet?: string;
  /** Sorted by cluster name. */
  readonly clusters: ClusterPlan[];
  readonly capacity: CapacityReport;
  /** KubeVirt CA rotation and CA exchange per cluster (src/trust/plan.ts). */
  readonly trust: ResolvedFleet['trust'];
  /** The sites of the shared network (one, `default`, unless the fleet declares sites). */
  readonly sites: SitePlan[];
  /**
   * The fleet's VM networks (issue 40, src/vmnet/): per cluster what its ClusterUserDefinedNetworks and
   * companions carry, per network the split, slots and mobile VMs, and the warnings. @default - none
   */
  readonly vmNetworks?: {
    readonly perCluster: ReadonlyMap<string, ClusterVmNetworks>;
    readonly networks: readonly VmNetworkPlan[];
    readonly warnings: readonly FleetProblem[];
  };
}

export interface PlanResult {
  readonly plan: FleetPlan;
  readonly ledger: Ledger;
  /** What changed against the previous ledger. */
  readonly changes: LedgerChange[];
}
