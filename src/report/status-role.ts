/**
 * The read-only ClusterRole `migration-mesh status` needs on one cluster (docs/status.md): `get` on every
 * kind synth wrote for it (drift), and what the runtime checks read: ConfigMaps (`kubevirt-ca`), pods
 * (`list`: gateway, virt-handler and sync controller pods) and `pods/proxy` (`get`: the gateways' admin
 * `/status`), `kubevirts` (`get`) where HCO writes the KubeVirt CR, and for `--moves` namespaces, VirtualMachines (`list`: MAC addresses across the cluster),
 * NADs and StorageClasses, and for the readiness checks of `--moves` Nodes (`list`), PVCs and VMIs (`get`), ResourceQuotas,
 * LimitRanges and CSIStorageCapacities (`list`) and CDI StorageProfiles (`get`). Pure: constructs/report/status-cluster-role.ts emits it.
 * Namespaces `get` also serves the VM networks' pre-flight (the served namespaces' primary-network label,
 * `vmnet-namespace-label`); it stays cluster-wide, not limited by resourceNames to the served names, because the
 * drift check reads every generated Namespace and `--moves` reads each plan's target namespace, which no fleet lists.
 */

export interface PolicyRule { readonly apiGroups: string[]; readonly resources: string[]; readonly verbs: string[] }

/** Name of the ClusterRole (and of the binding users make to it). */
export const STATUS_ROLE_NAME = 'migration-mesh-status';

/** Plurals that are not the lower-case kind + "s". */
const PLURALS: Record<string, string> = {
  NetworkAttachmentDefinition: 'network-attachment-definitions',
  MultiNetworkPolicy: 'multi-networkpolicies',
  SecurityContextConstraints: 'securitycontextconstraints',
  NetworkPolicy: 'networkpolicies',
  ClusterUserDefinedNetwork: 'clusteruserdefinednetworks',
};

/** The resource name of a kind (`Deployment` -> `deployments`, `NetworkPolicy` -> `networkpolicies`). */
export function pluralOf(kind: string): string {
  if (PLURALS[kind]) return PLURALS[kind];
  const k = kind.toLowerCase();
  if (k.endsWith('s')) return k;
  if (/[^aeiou]y$/.test(k)) return `${k.slice(0, -1)}ies`;
  return `${k}s`;
}

/** What status reads besides the generated kinds: [group, resource, verbs]. */
const RUNTIME: [string, string, string[]][] = [
  ['', 'configmaps', ['get']],
  ['', 'pods', ['get', 'list']],
  ['', 'pods/proxy', ['get']],
  ['', 'namespaces', ['get']],
  ['kubevirt.io', 'virtualmachines', ['get', 'list']],
  ['k8s.cni.cncf.io', 'network-attachment-definitions', ['get']],
  ['storage.k8s.io', 'storageclasses', ['get']],
  ['rbac.authorization.k8s.io', 'clusterroles', ['get']],
  // --moves readiness (src/report/readiness.ts): the target's nodes and what its pods request (pods list above), storage
  // profiles and capacities, the target namespace's quotas and limits; in the source the VM's PVCs, its VMI and node
  ['', 'nodes', ['get', 'list']],
  ['', 'persistentvolumeclaims', ['get']],
  ['', 'resourcequotas', ['list']],
  ['', 'limitranges', ['list']],
  ['kubevirt.io', 'virtualmachineinstances', ['get']],
  ['storage.k8s.io', 'csistoragecapacities', ['list']],
  ['cdi.kubevirt.io', 'storageprofiles', ['get']],
];

/** The rules for a cluster whose generated objects have these kinds; one rule per (API group, verbs), sorted. */
export function statusRoleRules(kinds: readonly { apiVersion: string; kind: string }[]): PolicyRule[] {
  const want = new Map<string, Set<string>>(); // "group|verbs" -> resources
  const add = (group: string, resource: string, verbs: string[]) => {
    const key = `${group}|${verbs.join(',')}`;
    want.set(key, (want.get(key) ?? new Set()).add(resource));
  };
  for (const k of kinds) {
    const group = k.apiVersion.includes('/') ? k.apiVersion.split('/')[0] : '';
    const listed = RUNTIME.find(([g, r]) => g === group && r === pluralOf(k.kind));
    if (!listed) add(group, pluralOf(k.kind), ['get']);
  }
  for (const [g, r, verbs] of RUNTIME) add(g, r, verbs);
  // HCO delivery: status reads the KubeVirt CR HCO writes from our HyperConverged CR (src/kubevirt/config.ts hcoKubevirtOf)
  if (kinds.some((k) => k.kind === 'HyperConverged')) add('kubevirt.io', 'kubevirts', ['get']);
  return [...want].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([key, resources]) => ({ apiGroups: [key.split('|')[0]], resources: [...resources].sort(), verbs: key.split('|')[1].split(',') }));
}
