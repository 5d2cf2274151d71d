/**
 * The facts the five readiness checks of a move judge (src/report/readiness.ts), read by cli/readiness.ts
 * from the source and target clusters. Plain objects: quantities already numbers (millicores, bytes). Pure types.
 */

/** CPU in millicores, memory in bytes. */
export interface Resources { readonly cpuMilli: number; readonly memoryBytes: number }

export interface Taint { readonly key: string; readonly value?: string; readonly effect: string }
export interface Toleration { readonly key?: string; readonly operator?: string; readonly value?: string; readonly effect?: string }
export interface NodeSelectorRequirement { readonly key: string; readonly operator: string; readonly values?: readonly string[] }
/** One `requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms` entry (its matchExpressions). */
export interface NodeSelectorTerm { readonly matchExpressions?: readonly NodeSelectorRequirement[] }

/** A target node as the scheduler sees it. */
export interface NodeFacts {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly taints: readonly Taint[];
  readonly unschedulable: boolean;
  readonly allocatable: Resources;
  /** What the pods bound to the node (not Succeeded or Failed) request already. */
  readonly requested: Resources;
}

/** One disk volume of the VM (a PVC or DataVolume), its size and what its target PVC will ask for. */
export interface VolumeNeed {
  readonly name: string;
  /** The target storage class (the pair's StorageMap destination). */
  readonly storageClass: string;
  readonly sizeBytes: number;
  readonly accessModes: readonly string[];
  /** `Filesystem` or `Block`. */
  readonly volumeMode: string;
}

/** What the moving VM (`spec.template.spec`) asks of its target, read from the source cluster. */
export interface VmNeeds {
  /** `domain.cpu.model`: a named model, `host-model`, `host-passthrough`, or undefined (the cluster's default). */
  readonly cpuModel?: string;
  readonly features: readonly { readonly name: string; readonly policy?: string }[];
  /** `domain.machine.type`, e.g. `pc-q35-rhel9.6.0`. */
  readonly machineType?: string;
  readonly nodeSelector: Readonly<Record<string, string>>;
  readonly requiredTerms?: readonly NodeSelectorTerm[];
  readonly tolerations: readonly Toleration[];
  readonly vcpus: number;
  /** `domain.resources.requests` (memory defaults to `domain.memory.guest`). */
  readonly requests: Resources;
  /** `domain.resources.limits.cpu` is set: KubeVirt then turns multifd migration off. */
  readonly cpuLimited: boolean;
  /** `domain.resources.limits` (cpu, memory) as the VM sets them. */
  readonly limits: Partial<Resources>;
  /**
   * Whether KubeVirt adds the guest-console-log container: false when `autoattachSerialConsole` or
   * `logSerialConsole` is false, true when `logSerialConsole` is true, undefined: the KubeVirt CR decides.
   */
  readonly serialConsoleLog?: boolean;
  /** `domain.devices.autoattachGraphicsDevice` is not false (KubeVirt adds 32Mi video RAM). */
  readonly graphics: boolean;
  readonly volumes: readonly VolumeNeed[];
  /** A running host-model VM: its source node's host model and required features (node labeller labels). */
  readonly hostModel?: { readonly model: string; readonly requiredFeatures: readonly string[] };
}

/** KubeVirt on one side, from its KubeVirt CR. */
export interface KubevirtSide {
  readonly found: boolean;
  /** `status.observedKubeVirtVersion`. */
  readonly version?: string;
  readonly featureGates: readonly string[];
  /** `spec.configuration.migrations.network`. */
  readonly migrationNetwork?: string;
  /** `spec.configuration.virtualMachineOptions.disableSerialConsoleLog` is set. */
  readonly serialConsoleLogDisabled?: boolean;
  /** `spec.configuration.supportContainerResources` of type `guest-console-log` (non-zero quantities only). */
  readonly guestConsoleLog?: { readonly requests: Partial<Resources>; readonly limits: Partial<Resources> };
}

/** The gateways' own view of the pair (admin `/status` through the API server's pod proxy). */
export interface TunnelFacts {
  /** Gateway pods whose runtime status was read, per side. */
  readonly read: number;
  /** Trust publications through the tunnel to the peer's gateways, by their last status. */
  readonly publicationsOk: number;
  readonly publicationsFailed: number;
  /** Tunnels open to the peer now. */
  readonly tunnelsOpen: number;
  /** Gateway pods whose admin `/probe` answered for the peer (a real tunnel handshake to its gateways, just now). */
  readonly probed: number;
  /** Of those, the pods that reached one of the peer's gateways. */
  readonly probesOk: number;
  /** Why the others did not: `POD: GATEWAY: error; ...`. */
  readonly probeErrors: readonly string[];
}

export interface StorageClassFacts {
  readonly exists: boolean;
  /** CDI's StorageProfile `status.claimPropertySets` for the class; undefined when there is none to read. */
  readonly claimPropertySets?: readonly { readonly accessModes: readonly string[]; readonly volumeMode?: string }[];
}

/** A `CSIStorageCapacity` of the target (bytes). */
export interface CapacityFacts { readonly storageClassName: string; readonly capacity?: number; readonly maximumVolumeSize?: number }

export interface QuotaFacts { readonly name: string; readonly hard: Readonly<Record<string, number>>; readonly used: Readonly<Record<string, number>> }
/**
 * One item of a LimitRange's `spec.limits`, as stored (quantities as numbers: millicores for cpu, bytes for
 * memory; `maxLimitRequestRatio` plain ratios). `Container` and `Pod` items judge the virt-launcher pod
 * (launcher-limits.ts), `PersistentVolumeClaim` items the target PVCs' `storage` (its own min and max).
 */
export interface LimitItemFacts {
  readonly type: string;
  readonly max: Partial<Resources>;
  readonly min: Partial<Resources>;
  readonly default: Partial<Resources>;
  readonly defaultRequest: Partial<Resources>;
  readonly maxLimitRequestRatio: Partial<Record<keyof Resources, number>>;
  /** `PersistentVolumeClaim` items: `min.storage`, `max.storage` in bytes. */
  readonly storage?: { readonly min?: number; readonly max?: number };
}
/** A LimitRange of the target namespace, its items in order. */
export interface LimitRangeFacts { readonly name: string; readonly items: readonly LimitItemFacts[] }

/** Everything read for one move's readiness. */
export interface ReadinessFacts {
  readonly vm?: VmNeeds;
  readonly tunnel?: { readonly source?: TunnelFacts; readonly target?: TunnelFacts };
  readonly storageClasses: Readonly<Record<string, StorageClassFacts>>;
  /** Undefined when CSIStorageCapacity could not be listed. */
  readonly capacities?: readonly CapacityFacts[];
  /** The target's Nodes; undefined when they could not be listed (compute and capacity then judge nothing). */
  readonly nodes?: readonly NodeFacts[];
  readonly quotas: readonly QuotaFacts[];
  readonly limits: readonly LimitRangeFacts[];
  readonly source: KubevirtSide;
  readonly target: KubevirtSide;
  /** What could not be read (RBAC, an API error), by check. */
  readonly unread?: Readonly<Record<string, string>>;
}
