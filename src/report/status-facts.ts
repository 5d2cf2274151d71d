/**
 * What `migration-mesh status` learns from each cluster (cli/status*.ts gather it; status-findings.ts and
 * status.ts judge it). Pure types.
 */
import { FleetProblem } from '../base/errors';
import { ProblemCode } from '../base/problem-codes';

/** One generated object compared with the live one. */
export interface DriftEntry {
  /** `<Kind>/<namespace>/<name>` (namespace empty for cluster-scoped objects). */
  readonly object: string;
  readonly state: 'missing' | 'different';
  /** For `different`: the first field we own whose live value differs (`.spec.replicas`). */
  readonly field?: string;
  readonly want?: unknown;
  readonly got?: unknown;
}

/** A CA certificate as read from a cluster's `kubevirt-ca`. */
export interface CaCert { readonly sha256: string; readonly subject: string; readonly notAfter: string }

/** A gateway pod's own view, from its admin `/status` through the API server's pod proxy (proxy/src/runtime-status.ts). */
export interface GatewayRuntimeView {
  readonly readiness: string;
  /** The planned gateway addresses this pod holds now. */
  readonly held: string[];
  /** Per configured peer: tunnels open now, and the trust channel's last publication to each peer gateway. */
  readonly peers: Record<string, {
    readonly tunnels: { readonly origin: number; readonly terminus: number };
    readonly publications?: { readonly gateway: string; readonly at: string; readonly status: string }[];
  }>;
  /** Newest first. */
  readonly lastErrors: { readonly at: string; readonly side: string; readonly reason: string; readonly peer?: string }[];
}

/** One peer as a gateway pod's admin `/probe` found it just now (proxy/src/peer-probe.ts): a real tunnel handshake to its gateways. */
export interface GatewayProbeView {
  readonly ok: boolean;
  readonly ms: number;
  /** When !ok: each of the peer's gateways and why it did not answer. */
  readonly error?: string;
}

export interface GatewayPodFacts {
  readonly pod: string;
  /** The pod's Ready condition. */
  readonly ready: boolean;
  readonly runtime?: GatewayRuntimeView;
  /** Why `runtime` could not be read. */
  readonly error?: string;
  /** `status --moves` only: the pod's `/probe`, per configured peer. */
  readonly probe?: Readonly<Record<string, GatewayProbeView>>;
  /** Why `/probe` could not be read (a gateway from before it answers 404). */
  readonly probeError?: string;
}

export interface GatewayFacts {
  /** Generated gateway Deployments, and how many have a ready replica. */
  readonly replicas: number;
  readonly ready: number;
  /** The cluster's VIP (from the generated keepalived.conf), when it has one. */
  readonly vip?: string;
  /** The gateway pods found (label selector of the gateway set); undefined when they could not be listed. */
  readonly pods?: GatewayPodFacts[];
  /** Why the gateway pods could not be listed (RBAC, an API error). */
  readonly podsError?: string;
}

/** A virt-handler or sync controller pod and the migration network in its `k8s.v1.cni.cncf.io/network-status`. */
export interface AttachmentFacts {
  /** `namespace/name` of the migration NAD. */
  readonly network: string;
  /** Why the pods could not be listed (then `pods` is empty). */
  readonly error?: string;
  readonly pods: { readonly pod: string; readonly role: 'virt-handler' | 'sync-controller'; readonly attached: boolean; readonly ips: string[] }[];
}

/** What was learned from one cluster (or why nothing was). */
export type ClusterFacts = {
  readonly cluster: string;
  readonly context: string;
  readonly reachable: false;
  readonly error: string;
} | {
  readonly cluster: string;
  readonly context: string;
  readonly reachable: true;
  /** Generated objects checked, and the ones that are missing or different. */
  readonly checked: number;
  readonly drift: DriftEntry[];
  /**
   * The live KubeVirt CR: the generated one (KubeVirt delivery) or the one HCO writes from our
   * HyperConverged CR (HCO delivery); undefined when the fleet writes a kustomize patch.
   */
  readonly kubevirt?: {
    readonly found: boolean; readonly migrationNetwork?: string; readonly featureGates: string[]; readonly wantNetwork?: string; readonly wantGates: string[];
    /** HCO delivery: `namespace/name` of the KubeVirt CR HCO writes (not one of ours). */
    readonly object?: string;
    /** The live CR's `status.observedKubeVirtVersion` (readiness' version check). */
    readonly version?: string;
    /** The live CR sets `virtualMachineOptions.disableSerialConsoleLog` (readiness' LimitRange check: no guest-console-log container). */
    readonly serialConsoleLogDisabled?: boolean;
    /** The live CR's `supportContainerResources` of type `guest-console-log`: millicores and bytes, non-zero quantities only. */
    readonly guestConsoleLog?: { readonly requests: { cpuMilli?: number; memoryBytes?: number }; readonly limits: { cpuMilli?: number; memoryBytes?: number } };
  };
  /** Gateway clusters. */
  readonly gateway?: GatewayFacts;
  /** When the fleet sets a migration network: the pods that must sit on it. */
  readonly attachments?: AttachmentFacts;
  /** `kubevirt-ca` of this cluster: the first certificate is the current CA. */
  readonly ca?: CaCert[];
  /**
   * The served namespaces of the cluster's primary VM networks that exist without the primary-network label
   * (src/vmnet/namespaces.ts servedNamespaceProblems, code `vmnet-namespace-label`); absent without such networks.
   */
  readonly servedNamespaces?: readonly FleetProblem[];
};

/**
 * The codes of status findings (`status/...` in src/base/problem-codes.ts, docs/errors.md), and the fleet check status
 * runs against what a cluster holds (`vmnet-namespace-label`).
 */
export type StatusCode = Extract<ProblemCode, `status/${string}`> | 'vmnet-namespace-label';

/** One thing found: `error` blocks every pair with the cluster, `warning` is said and blocks nothing. */
export interface StatusFinding {
  readonly code: StatusCode;
  readonly severity: 'error' | 'warning';
  readonly cluster: string;
  readonly message: string;
  /** The fleet field the finding is about. @default - none (a finding about the cluster) */
  readonly path?: string;
  /** What to do. @default - none: the message says it */
  readonly fix?: string;
}
