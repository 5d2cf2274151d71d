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
 */
import { ClusterPlan } from '../addressing/planner';

export type StageName = 'gateway' | 'network' | 'kubevirt';

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
];

/** Waves by kind; NADs are refined by `rolloutWave` (the ones KubeVirt names come late). */
export function kindWave(kind: string): number {
  switch (kind) {
    case 'Namespace': case 'CustomResourceDefinition': return 0;
    case 'NetworkAttachmentDefinition': return 1;
    case 'SecurityContextConstraints': case 'ServiceAccount': case 'Role': case 'RoleBinding': case 'ClusterRole': case 'ClusterRoleBinding':
    case 'ConfigMap': case 'Secret': case 'Certificate': case 'Issuer': case 'ClusterIssuer': return 2;
    case 'KubeVirt': case 'HyperConverged': case 'Setting': return 5;
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
export function rolloutWave(o: { kind: string; metadata?: { name?: string; namespace?: string } }, kubevirtNads: ReadonlySet<string>): number {
  if (o.kind === 'NetworkAttachmentDefinition' && kubevirtNads.has(`${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`)) return 4;
  return kindWave(o.kind);
}

export function stageOfWave(wave: number): StageInfo {
  return STAGES.find((s) => wave >= s.waves[0] && wave <= s.waves[1]) ?? STAGES[0];
}

/** Stable sort of a cluster's objects into rollout order (ties keep construct order). */
type Named = { kind: string; metadata?: { name?: string; namespace?: string } };

export function sortForRollout<T extends Named>(objs: readonly T[], kubevirtNads: ReadonlySet<string>): T[] {
  return objs.map((o, i) => ({ o, i, w: rolloutWave(o, kubevirtNads) }))
    .sort((a, b) => (a.w - b.w) || (a.i - b.i))
    .map((x) => x.o);
}
