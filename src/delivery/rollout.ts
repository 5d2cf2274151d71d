/**
 * Rollout order: the one ordering function behind the kustomization order, the Argo CD sync waves and
 * the Flux stages. Pure, no cdk8s import.
 *
 * Two rules it encodes (docs/gitops.md):
 *  1. A NAD must exist before the KubeVirt configuration that names it: changing
 *     `migrations.network` restarts every virt-handler, and a handler whose NAD is missing does not start.
 *  2. A gateway must be ready before routes point at it: the in-cluster migration NAD carries the routes
 *     to the other clusters via the local gateway, so it follows the gateway Deployments.
 *
 *   wave 0  Namespace                                                  stage 10-gateway
 *   wave 1  the gateway's own NADs (shared network, gateway in-cluster)
 *   wave 2  SecurityContextConstraints, ServiceAccount, RBAC, ConfigMap, Secret, Certificate, Issuer
 *   wave 3  Deployment, Service, PodDisruptionBudget, NetworkPolicy, ... (and kinds not listed here)
 *   wave 4  NADs that KubeVirt names (`migrations.network`, native crossClusterNetwork)  stage 20-network
 *   wave 5  KubeVirt, HyperConverged, Harvester Setting                  stage 30-kubevirt
 *   wave 6  the served-namespace guard's ValidatingAdmissionPolicy and binding   stage 35-vmnet-guard
 *           (refuses the primary-network label on an existing namespace that lacks it: it must be in force before
 *           our Namespaces; a stage of its own because Flux applies every Namespace of a stage before the rest)
 *   wave 7  Namespaces served by a primary VM network (created with the label)   stage 40-vm-networks
 *   wave 8  NodeNetworkConfigurationPolicy (bridge mappings), VTEP; the pin-addresses Role (in a served
 *           namespace) and the moved-VM guard's ValidatingAdmissionPolicy
 *   wave 9  ClusterUserDefinedNetwork (names the VTEP and the physical network; selects the namespaces); the
 *           guard's ValidatingAdmissionPolicyBinding (names the policy, selects the namespaces); the pin-addresses
 *           RoleBinding (names the Role)
 *   wave 10 RouteAdvertisements (selects the networks by label)
 *
 * The VM networks (issue 40) come last: the mesh does not need them, so a VM network a cluster cannot take
 * (no OVN-Kubernetes UDN support, a bad bridge) never holds back the migration network or KubeVirt; and
 * inside their stage each object follows what it names.
 */
import { ClusterPlan } from '../addressing/planner';
import { SERVED_NAMESPACE_GUARD_NAME } from '../vmnet/namespaces';
import { MOVED_VM_GUARD_NAME, PIN_ROLE_NAME } from '../vmnet/pin-role';
import { PRIMARY_UDN_NAMESPACE_LABEL } from '../vmnet/resolved';

type Named = { kind: string; metadata?: { name?: string; namespace?: string; labels?: Record<string, string> } };

export type StageName = 'gateway' | 'network' | 'kubevirt' | 'vmnet-guard' | 'vm-networks';

export interface StageInfo {
  readonly name: StageName;
  /** Directory of the stage inside the cluster directory (staged layout, Flux). */
  readonly dir: string;
  /** Waves the stage holds (inclusive). */
  readonly waves: readonly [number, number];
}

/** Rollout stages in apply order. */
export const STAGES: readonly StageInfo[] = [
  { name: 'gateway', dir: '10-gateway', waves: [0, 3] },
  { name: 'network', dir: '20-network', waves: [4, 4] },
  { name: 'kubevirt', dir: '30-kubevirt', waves: [5, 5] },
  { name: 'vmnet-guard', dir: '35-vmnet-guard', waves: [6, 6] },
  { name: 'vm-networks', dir: '40-vm-networks', waves: [7, 10] },
];

/** Waves by kind; NADs are refined by `rolloutWave` (the ones KubeVirt names come late). */
export function kindWave(kind: string): number {
  switch (kind) {
    case 'Namespace': case 'CustomResourceDefinition': return 0;
    case 'NetworkAttachmentDefinition': return 1;
    case 'SecurityContextConstraints': case 'ServiceAccount': case 'Role': case 'RoleBinding': case 'ClusterRole': case 'ClusterRoleBinding':
    case 'ConfigMap': case 'Secret': case 'Certificate': case 'Issuer': case 'ClusterIssuer': return 2;
    case 'KubeVirt': case 'HyperConverged': case 'Setting': return 5;
    case 'NodeNetworkConfigurationPolicy': case 'VTEP': return 8;
    case 'ClusterUserDefinedNetwork': return 9;
    case 'RouteAdvertisements': return 10;
    default: return 3; // Deployment, Service, PDB, NetworkPolicy, MultiNetworkPolicy, ServiceMonitor, anything new
  }
}

/** `namespace/name` of every NAD the cluster's KubeVirt configuration names. */
export function kubevirtNadKeys(cluster: Pick<ClusterPlan, 'kubevirt' | 'migrationNetwork' | 'crossClusterSync'>): Set<string> {
  const ns = cluster.kubevirt.namespace;
  const keys = new Set([`${ns}/${cluster.migrationNetwork.nadName}`]);
  if (cluster.crossClusterSync) keys.add(`${ns}/${cluster.crossClusterSync.nadName}`);
  return keys;
}

/** The sync wave of one synthesized object. */
export function rolloutWave(o: Named, kubevirtNads: ReadonlySet<string>): number {
  if (o.kind === 'NetworkAttachmentDefinition' && kubevirtNads.has(`${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`)) return 4;
  if (isPrimaryNetworkNamespace(o)) return 7;
  const guard = vmNetworkGuardWave(o);
  if (guard !== undefined) return guard;
  return kindWave(o.kind);
}

/**
 * The objects that guard the primary VM networks' addresses (constructs/vmnet: PinAddressesRole, MovedVmGuard)
 * come after the served Namespaces they live in or select: the Role and the policy at 8, the bindings (which name
 * them) at 9. The served-namespace guard (ExistingNamespaceGuard) comes before them, at 6: it refuses our Namespace
 * over an existing unlabelled one, so it must be in force first (its binding may precede the policy it names: an
 * unmatched binding is inert). Undefined for anything else.
 */
function vmNetworkGuardWave(o: Named): number | undefined {
  const name = o.metadata?.name;
  if ((o.kind === 'ValidatingAdmissionPolicy' || o.kind === 'ValidatingAdmissionPolicyBinding') && name === SERVED_NAMESPACE_GUARD_NAME) return 6;
  if (o.kind === 'Role' && name === PIN_ROLE_NAME) return 8;
  if (o.kind === 'ValidatingAdmissionPolicy' && name === MOVED_VM_GUARD_NAME) return 8;
  if (o.kind === 'ValidatingAdmissionPolicyBinding' && name === MOVED_VM_GUARD_NAME) return 9;
  if (o.kind === 'RoleBinding' && name === PIN_ROLE_NAME) return 9;
  return undefined;
}

/** A Namespace created for a primary VM network (it carries the primary-UDN label). */
export function isPrimaryNetworkNamespace(o: Named): boolean {
  return o.kind === 'Namespace' && o.metadata?.labels?.[PRIMARY_UDN_NAMESPACE_LABEL] !== undefined;
}

export function stageOfWave(wave: number): StageInfo {
  return STAGES.find((s) => wave >= s.waves[0] && wave <= s.waves[1]) ?? STAGES[0];
}

/** Stable sort of a cluster's objects into rollout order (ties keep construct order). */

export function sortForRollout<T extends Named>(objs: readonly T[], kubevirtNads: ReadonlySet<string>): T[] {
  return objs.map((o, i) => ({ o, i, w: rolloutWave(o, kubevirtNads) }))
    .sort((a, b) => (a.w - b.w) || (a.i - b.i))
    .map((x) => x.o);
}
