/**
 * `migration-mesh status --moves`: pre-flight of each planned move (one VM of a generated Forklift
 * Plan), from facts read in its source and target clusters: the pair ready, the target namespace
 * present and the VM's name free there, the networks and storage classes the pair's maps send it to
 * present in the target, and no VM in the target with one of the moving VM's MAC addresses (Forklift
 * no longer checks MAC conflicts between KubeVirt clusters, Forklift PR #8293). Pure.
 */
import { StatusCode } from './status-facts';
import { ReadinessFacts } from './readiness-facts';
import { judgeReadiness, ReadinessCheck, VersionCard, versionCard } from './readiness';

/** What was read for one moving VM. */
export interface MoveFacts {
  /** `namespace/name` of the Plan on the hub. */
  readonly plan: string;
  readonly from: string;
  readonly to: string;
  readonly vm: { readonly namespace: string; readonly name: string };
  readonly targetNamespace: string;
  /** The VM in the source cluster: undefined when it is not there; its MACs from the VM spec's interfaces. */
  readonly source?: { readonly macs: string[] };
  /** Why the source could not be asked (unreachable); the check then cannot judge the MACs. */
  readonly sourceError?: string;
  /** The target cluster's side, or why it could not be asked. */
  readonly target: {
    readonly namespacePresent: boolean;
    readonly nameTaken: boolean;
    /** `namespace/name` of mapped NADs not in the target. */
    readonly missingNetworks: string[];
    readonly missingStorageClasses: string[];
    /** VMs of the target (`namespace/name`) by lower-case MAC address. */
    readonly macs: Record<string, string>;
  } | { readonly error: string };
  /** The five readiness checks' facts (src/report/readiness.ts), when they could be read. */
  readonly readiness?: ReadinessFacts;
}

export interface MoveCheck {
  readonly plan: string;
  /** `namespace/name` of the moving VM in the source cluster. */
  readonly vm: string;
  readonly from: string;
  readonly to: string;
  /** No problem of severity error. */
  readonly ready: boolean;
  /**
   * Every reason it is not ready, with its code, in this order: pair, source, namespace, name, networks, storage, MAC,
   * then the readiness checks (network, storage, compute, version, capacity; `check` names it). Severity error unless
   * `severity` says warning.
   */
  readonly problems: { readonly code: StatusCode; readonly message: string; readonly severity?: 'warning'; readonly check?: ReadinessCheck; readonly fix?: string }[];
  /** The version card of the pair: both sides' KubeVirt and the clusters to update. */
  readonly card?: VersionCard;
}

/** Judge each move; `pairReason(from, to)` is the pair verdict's reason (undefined: ready). */
export function judgeMoves(moves: readonly MoveFacts[], pairReason: (from: string, to: string) => string | undefined): MoveCheck[] {
  return moves.map((m) => {
    const problems: MoveCheck['problems'][number][] = [];
    const add = (code: StatusCode, message: string) => { problems.push({ code, message }); };
    const pr = pairReason(m.from, m.to);
    if (pr) add('status/move-pair-not-ready', `${m.from} -> ${m.to} not ready: ${pr}`);
    const id = `${m.vm.namespace}/${m.vm.name}`;
    if (m.sourceError && !pr) add('status/unreachable', `${m.from}: ${m.sourceError}`);
    if ('error' in m.target && !pr) add('status/unreachable', `${m.to}: ${m.target.error}`);
    if (!m.sourceError && !m.source) add('status/move-source-missing', `VM ${id} not found in ${m.from}`);
    if (!('error' in m.target)) {
      const t = m.target;
      if (!t.namespacePresent) add('status/move-namespace-missing', `target namespace ${m.targetNamespace} not in ${m.to}`);
      if (t.nameTaken) add('status/move-name-taken', `a VM ${m.targetNamespace}/${m.vm.name} already exists in ${m.to}`);
      for (const n of t.missingNetworks) add('status/move-network-missing', `network ${n} (NetworkMap destination) not in ${m.to}`);
      for (const sc of t.missingStorageClasses) add('status/move-storage-missing', `storage class ${sc} (StorageMap destination) not in ${m.to}`);
      for (const mac of m.source?.macs ?? []) {
        const holder = t.macs[mac.toLowerCase()];
        if (holder) add('status/move-mac-conflict', `MAC ${mac.toLowerCase()} of ${id} is already used by VM ${holder} in ${m.to}`);
      }
    }
    const r = m.readiness;
    for (const x of r ? judgeReadiness({ from: m.from, to: m.to, vm: id, targetNamespace: m.targetNamespace }, r) : []) {
      problems.push({ code: x.code, message: x.message, ...(x.severity === 'warning' ? { severity: 'warning' as const } : {}), check: x.check, fix: x.fix });
    }
    const card = r && versionCard(m.from, m.to, r);
    return { plan: m.plan, vm: id, from: m.from, to: m.to, ready: problems.every((p) => p.severity === 'warning'), problems, ...(card ? { card } : {}) };
  });
}
