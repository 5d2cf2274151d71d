/**
 * The Forklift plan of a fleet: what the constructs turn into Providers, NetworkMaps, StorageMaps,
 * Plans and Migrations on the hub. Pure data, no cdk8s import.
 */
import { Datapath } from '../fleet/schema';
import { FleetProblem } from '../base/errors';

/** Forklift's own provider for the cluster it runs in (created by the operator, never by us). */
export const HOST_PROVIDER = 'host';
export const DEFAULT_CONTROLLER_NAME = 'forklift-controller';

export interface ObjectRef { readonly name: string; readonly namespace: string }

/** What planning needs to know about each fleet cluster, from the fleet plan and the generated objects. */
export interface ClusterFacts {
  readonly name: string;
  /** Index in `spec.clusters` (for error paths). */
  readonly index: number;
  readonly datapath: Datapath;
  /** Feature gates the generated KubeVirt configuration lists explicitly. */
  readonly featureGates: readonly string[];
  /** `namespace/name` of the NADs the fleet creates on the cluster (the live-migration networks). */
  readonly meshNads: readonly string[];
  /**
   * `namespace/name` of the Multus VM networks the fleet creates on the cluster (issue 40: each served namespace of a
   * Localnet ClusterUserDefinedNetwork gets a NAD of the network's name; `vmNetworkNadsOf`). They count as declared
   * networks, so moves map them without hand edits. Primary networks need no entry: their VMs use `pod: {}`, which
   * every NetworkMap maps to the pod network. @default - none
   */
  readonly vmNetworkNads?: readonly string[];
  /**
   * KubeVirt 1.9 with LibvirtHooksServerAndClient still on (src/kubevirt/capabilities.ts `libvirtHooksOn`):
   * it breaks renamed moves (PR #18526). @default false
   */
  readonly libvirtHooksRisk?: boolean;
  /** The declared KubeVirt version, for messages. @default - unknown */
  readonly kubevirtVersion?: string;
  /** KubeVirt has MigrationPolicy `experimental.compression` (1.9+, capability table). @default false */
  readonly migrationCompression?: boolean;
  /** A Harvester cluster (we emit no MigrationPolicy there). @default false */
  readonly harvester?: boolean;
  /**
   * The `completionTimeoutPerGiB` the cluster's migrations get without a policy of ours: the fleet's, else its
   * delivery form's default (HCO 20 since PR #4426, KubeVirt 150). @default 150
   */
  readonly completionTimeoutPerGiB?: number;
}

export interface ProviderPlan {
  readonly cluster: string;
  readonly name: string;
  readonly url: string;
  readonly secret: string;
}

export type NetworkSource = { readonly type: 'pod' } | { readonly name: string; readonly namespace: string };
export type NetworkDestination =
  | { readonly type: 'pod' } | { readonly type: 'ignored' }
  | { readonly type: 'multus'; readonly name: string; readonly namespace: string };

export interface NetworkPair { readonly source: NetworkSource; readonly destination: NetworkDestination }

export interface StoragePair {
  readonly source: string;
  readonly storageClass: string;
  readonly accessMode?: 'ReadWriteOnce' | 'ReadWriteMany' | 'ReadOnlyMany';
  readonly volumeMode?: 'Filesystem' | 'Block';
}

/** The maps of one ordered cluster pair that moves happen between. */
export interface PairPlan {
  readonly from: string;
  readonly to: string;
  /** Name of both the NetworkMap and the StorageMap. */
  readonly name: string;
  readonly source: ObjectRef;
  readonly destination: ObjectRef;
  readonly networks: readonly NetworkPair[];
  readonly storage: readonly StoragePair[];
}

export interface MovePlanVm {
  readonly name: string;
  readonly namespace: string;
  /**
   * The compression its migration gets: the move's own (`policy` is the per-move MigrationPolicy on the
   * target) or the fleet's `migrationPolicy.compression`. @default - none asked for
   */
  readonly compression?: { readonly value: 'none' | 'zstd'; readonly policy: string };
}

/** One Forklift `Plan` (type live): one batch, one pair, one target namespace. */
export interface LivePlan {
  readonly name: string;
  readonly batch: string;
  readonly from: string;
  readonly to: string;
  readonly targetNamespace: string;
  /** The pair's maps. */
  readonly maps: string;
  readonly source: ObjectRef;
  readonly destination: ObjectRef;
  readonly vms: readonly MovePlanVm[];
  /** The run to start (`Migration`), when the moves ask for it. */
  readonly migration?: { readonly name: string; readonly run: number };
}

export interface ForkliftHubPlan {
  readonly fleet: string;
  readonly hub: { readonly cluster: string; readonly namespace: string; readonly member: boolean };
  /** Providers we emit (the hub's `host` provider is Forklift's own), by name. */
  readonly providers: readonly ProviderPlan[];
  readonly controller?: { readonly name: string; readonly liveMigration: boolean };
  /** Sorted by from, to. */
  readonly pairs: readonly PairPlan[];
  /** Sorted by batch, name. */
  readonly plans: readonly LivePlan[];
}

export interface ForkliftPlanResult {
  /** Undefined when the fleet has no `spec.forklift` or a problem was found. */
  readonly plan?: ForkliftHubPlan;
  readonly problems: FleetProblem[];
  /** Things Forklift will do that the user should know of (nothing is refused for them). */
  readonly warnings: FleetProblem[];
}
