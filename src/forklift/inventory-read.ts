/**
 * The inventory of a live fleet (issue 51 item 2): what `migration-mesh inventory` reads from each cluster's API
 * (Nodes, Pods, KubeVirt's VirtualMachines and VirtualMachineInstances, PersistentVolumeClaims, the KubeVirt CR),
 * turned into the Inventory document `evacuate` plans from (src/forklift/inventory.ts). Pure: the objects come in
 * as plain JSON, the document goes out; no client, no cdk8s import.
 *
 * - A node's `requested` is what its pods request as the scheduler counts it (Kubernetes' pod resource rule:
 *   the larger of the containers' sum and the largest init container, plus the pod overhead), over the pods bound
 *   to it that have not ended (`Succeeded`, `Failed`); https://kubernetes.io/docs/concepts/workloads/pods/init-containers/#resource-sharing-within-containers
 * - A node is schedulable when it is not cordoned, its `Ready` condition is `True`, and virt-handler has labelled it
 *   `kubevirt.io/schedulable: "true"` (every virt-launcher pod selects that label); its taints are carried as they
 *   are, for evacuate to weigh against each VM's tolerations.
 * - A VM is listed when its VMI is `Running` on a node; the rest (stopped, pending, migrating away) are returned
 *   apart in `skipped` with the reason, for the caller to say. Its CPU is the VMI's CPU request, or, where the VMI
 *   has none, what KubeVirt gives the virt-launcher pod: vCPUs x 1000m / `cpuAllocationRatio` (the KubeVirt CR's
 *   `spec.configuration.developerConfiguration.cpuAllocationRatio`, default 10): https://github.com/kubevirt/kubevirt/blob/main/pkg/virt-controller/services/renderresources.go
 * - Its storage classes come from the claims its volumes name (a DataVolume's claim has the DataVolume's name),
 *   or, for a claim not made yet, from the VM's `dataVolumeTemplates`.
 * Everything is sorted by name, so the same cluster state gives the same document byte for byte.
 */
import { canonicalQuantity, quantityValue } from '../base/quantity';
import { SCHEDULABLE_LABEL } from '../report/readiness';
import { Inventory, InventoryNode, InventoryVm } from './inventory';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/** What one cluster's API answered. */
export interface ClusterObjects {
  readonly nodes: readonly Json[];
  readonly pods: readonly Json[];
  /** kubevirt.io/v1 VirtualMachines; empty for a cluster whose VMs are not wanted. */
  readonly vms: readonly Json[];
  readonly vmis: readonly Json[];
  readonly pvcs: readonly Json[];
  /** The KubeVirt CR, where there is one. */
  readonly kubevirt?: Json;
}

/** A VM left out of the inventory, and why. */
export interface SkippedVm { readonly cluster: string; readonly vm: string; readonly reason: string }

const KUBEVIRT_CPU_ALLOCATION_RATIO = 10;
const byName = (a: Json, b: Json): number => key(a).localeCompare(key(b), 'en');
const key = (o: Json): string => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;
const val = (q: unknown): number => (typeof q === 'string' || typeof q === 'number' ? quantityValue(String(q)) ?? 0 : 0);
const sortedRecord = (r: Record<string, string> | undefined): Record<string, string> | undefined =>
  (r && Object.keys(r).length ? Object.fromEntries(Object.entries(r).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : undefined);

/** CPU cores as a canonical quantity (`2`, `2500m`), rounded up to a millicore. */
export const cpuQuantity = (cores: number): string => canonicalQuantity(`${Math.ceil(Math.round(cores * 1e6) / 1e3)}m`);
/** Bytes as a canonical binary quantity where whole KiB (`16Gi`, `1536Mi`), else plain bytes. */
export const memoryQuantity = (bytes: number): string =>
  canonicalQuantity(bytes % 1024 === 0 ? `${bytes / 1024}Ki` : `${Math.ceil(bytes)}`);

/** What a pod requests, as the scheduler counts it. */
export function podRequests(pod: Json): { cpu: number; memory: number } {
  const sum = (cs: Json[] | undefined, r: 'cpu' | 'memory') => (cs ?? []).reduce((s, c) => s + val(c.resources?.requests?.[r]), 0);
  const maxInit = (r: 'cpu' | 'memory') => Math.max(0, ...(pod.spec?.initContainers ?? []).map((c: Json) => val(c.resources?.requests?.[r])));
  const of = (r: 'cpu' | 'memory') => Math.max(sum(pod.spec?.containers, r), maxInit(r)) + val(pod.spec?.overhead?.[r]);
  return { cpu: of('cpu'), memory: of('memory') };
}

function nodeOf(node: Json, pods: readonly Json[]): InventoryNode {
  const bound = pods.filter((p) => p.spec?.nodeName === node.metadata.name && !['Succeeded', 'Failed'].includes(p.status?.phase));
  const req = bound.map(podRequests).reduce((a, b) => ({ cpu: a.cpu + b.cpu, memory: a.memory + b.memory }), { cpu: 0, memory: 0 });
  const ready = (node.status?.conditions ?? []).some((c: Json) => c.type === 'Ready' && c.status === 'True');
  const labels = sortedRecord(node.metadata.labels);
  const taints = (node.spec?.taints ?? []).map((t: Json) => ({ key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect }));
  return {
    name: node.metadata.name,
    allocatable: { cpu: cpuQuantity(val(node.status?.allocatable?.cpu)), memory: memoryQuantity(val(node.status?.allocatable?.memory)) },
    ...(bound.length ? { requested: { cpu: cpuQuantity(req.cpu), memory: memoryQuantity(req.memory) } } : {}),
    ...(labels ? { labels } : {}),
    ...(!node.spec?.unschedulable && ready && labels?.[SCHEDULABLE_LABEL] === 'true' ? {} : { schedulable: false }),
    ...(taints.length ? { taints } : {}),
  };
}

/** The storage classes of a VM's volumes: from their claims, or from its DataVolume templates. */
function storageClassesOf(vm: Json, pvcs: readonly Json[]): string[] {
  const ns = vm.metadata.namespace;
  const templates = new Map<string, Json>((vm.spec?.dataVolumeTemplates ?? []).map((t: Json) => [t.metadata?.name, t]));
  const classes = new Set<string>();
  for (const v of vm.spec?.template?.spec?.volumes ?? []) {
    const claim = v.persistentVolumeClaim?.claimName ?? v.dataVolume?.name;
    if (!claim) continue;
    const pvc = pvcs.find((p) => p.metadata?.namespace === ns && p.metadata?.name === claim);
    const t = templates.get(claim);
    const sc = pvc?.spec?.storageClassName ?? t?.spec?.storage?.storageClassName ?? t?.spec?.pvc?.storageClassName;
    if (sc) classes.add(sc);
  }
  return [...classes].sort();
}

function vmOf(vm: Json, vmi: Json, pvcs: readonly Json[], ratio: number): InventoryVm {
  const domain = vmi.spec?.domain ?? {};
  const cpu = domain.cpu ?? {};
  const vcpus = (cpu.sockets ?? 1) * (cpu.cores ?? 1) * (cpu.threads ?? 1);
  const requestedCpu = domain.resources?.requests?.cpu;
  const memory = domain.memory?.guest ?? domain.resources?.requests?.memory;
  const ns = vm.metadata.namespace;
  const networks = (vm.spec?.template?.spec?.networks ?? []).map((n: Json) => n.multus?.networkName).filter(Boolean)
    .map((n: string) => (n.includes('/') ? n : `${ns}/${n}`)).sort();
  const storageClasses = storageClassesOf(vm, pvcs);
  const vmiLabels = sortedRecord(vm.spec?.template?.metadata?.labels);
  const nodeSelector = sortedRecord(vm.spec?.template?.spec?.nodeSelector);
  const tolerations = (vm.spec?.template?.spec?.tolerations ?? []) as InventoryVm['tolerations'];
  const features = (cpu.features ?? []).map((f: Json) => ({ name: f.name, ...(f.policy ? { policy: f.policy } : {}) }));
  return {
    name: vm.metadata.name, namespace: ns, node: vmi.status.nodeName,
    cpu: requestedCpu !== undefined ? cpuQuantity(val(requestedCpu)) : cpuQuantity(vcpus / ratio),
    memory: memoryQuantity(val(memory)),
    ...(domain.resources?.limits?.cpu !== undefined ? { cpuLimit: cpuQuantity(val(domain.resources.limits.cpu)) } : {}),
    ...(vcpus > 1 ? { vcpus } : {}),
    ...(storageClasses.length ? { storageClasses } : {}),
    ...(networks.length ? { networks } : {}),
    ...(vmiLabels ? { vmiLabels } : {}),
    ...(nodeSelector ? { nodeSelector } : {}),
    ...(cpu.model && cpu.model !== 'host-model' ? { cpuModel: cpu.model } : {}),
    ...(features.length ? { cpuFeatures: features } : {}),
    ...(domain.machine?.type ? { machineType: domain.machine.type } : {}),
    ...(tolerations?.length ? { tolerations } : {}),
  };
}

/** Why a VM cannot be moved live now, or undefined when its VMI runs on a node. */
function notRunning(vm: Json, vmi: Json | undefined): string | undefined {
  if (!vmi) return 'it is not running (no VirtualMachineInstance): a stopped VM moves cold, not by evacuate';
  if (vmi.status?.phase !== 'Running' || !vmi.status?.nodeName) return `its VirtualMachineInstance is ${vmi.status?.phase ?? 'without a phase'}, not Running on a node`;
  if (vmi.status?.migrationState && !vmi.status.migrationState.completed && !vmi.status.migrationState.failed) return 'it is migrating now';
  if (!vm.spec?.template?.spec?.domain) return 'it has no spec.template.spec.domain';
  return undefined;
}

/** The Inventory document of `fleet` from what each cluster answered (clusters in the fleet's order). */
export function inventoryFromObjects(fleet: string, clusters: ReadonlyMap<string, ClusterObjects>): { inventory: Inventory; skipped: SkippedVm[] } {
  const skipped: SkippedVm[] = [];
  const out: Inventory['clusters'] = {};
  for (const [name, c] of clusters) {
    const ratio = Number(c.kubevirt?.spec?.configuration?.developerConfiguration?.cpuAllocationRatio) || KUBEVIRT_CPU_ALLOCATION_RATIO;
    const vms: InventoryVm[] = [];
    for (const vm of [...c.vms].sort(byName)) {
      const vmi = c.vmis.find((i) => key(i) === key(vm));
      const reason = notRunning(vm, vmi);
      if (reason) skipped.push({ cluster: name, vm: key(vm), reason });
      else vms.push(vmOf(vm, vmi!, c.pvcs, ratio));
    }
    out[name] = { nodes: [...c.nodes].sort(byName).map((n) => nodeOf(n, c.pods)), ...(vms.length ? { vms } : {}) };
  }
  return { inventory: { apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Inventory', metadata: { name: fleet }, clusters: out }, skipped };
}
