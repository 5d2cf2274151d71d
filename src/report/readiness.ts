/**
 * The five readiness checks of one move (network, storage, compute, version, capacity), judged from plain facts
 * (src/report/readiness-facts.ts) that cli/readiness.ts reads from the source and target clusters. Pure.
 *
 * The node label keys are KubeVirt's, read in the pinned module (kubevirt.io/api v1.8.4, real/kubevirt-bins/go.mod):
 * https://github.com/kubevirt/kubevirt/blob/v1.8.4/staging/src/kubevirt.io/api/core/v1/types.go (CPUModelLabel,
 * CPUFeatureLabel, SupportedHostModelMigrationCPU, SupportedMachineTypeLabel, NodeHostModelIsObsoleteLabel,
 * NodeSchedulable); which of them a virt-launcher pod selects on is
 * https://github.com/kubevirt/kubevirt/blob/v1.8.4/pkg/virt-controller/services/nodeselectorrenderer.go and
 * template.go (features with policy `require` or none must be labelled, `forbid` must not; a host-model VM
 * migrates to nodes labelled `cpu-model-migration.node.kubevirt.io/<source host model>` with the source's
 * required features, pkg/virt-controller/watch/migration/migration.go).
 */
import { FEATURE_GATE_DLM } from '../kubevirt/gates';
import { parseKubevirtVersion } from '../kubevirt/versions';
import { StatusCode } from './status-facts';
import { launcherContainers, limitRangeRefusals } from './launcher-limits';
import { NodeFacts, NodeSelectorRequirement, ReadinessFacts, Resources, Taint, Toleration, VmNeeds } from './readiness-facts';

const CPU_MODEL_LABEL = 'cpu-model.node.kubevirt.io/';
const CPU_FEATURE_LABEL = 'cpu-feature.node.kubevirt.io/';
const HOST_MODEL_MIGRATION_LABEL = 'cpu-model-migration.node.kubevirt.io/';
const MACHINE_TYPE_LABEL = 'machine-type.node.kubevirt.io/';
const HOST_MODEL_OBSOLETE_LABEL = 'node-labeller.kubevirt.io/obsolete-host-model';
export const SCHEDULABLE_LABEL = 'kubevirt.io/schedulable';

export type ReadinessCheck = 'network' | 'storage' | 'compute' | 'version' | 'capacity';
export interface ReadinessProblem {
  readonly code: StatusCode; readonly severity: 'error' | 'warning'; readonly check: ReadinessCheck;
  readonly message: string; readonly fix: string;
}

/** Which side of a pair to update for the version check, with both sides' KubeVirt as read. */
export interface VersionCard {
  readonly from: string; readonly to: string;
  readonly source: { readonly version?: string; readonly gate: boolean; readonly migrationNetwork?: string };
  readonly target: { readonly version?: string; readonly gate: boolean; readonly migrationNetwork?: string };
  /** The clusters to update, empty when the pair agrees. */
  readonly update: readonly string[];
}

const Mi = 1024 * 1024;
type Ver = NonNullable<ReturnType<typeof parseKubevirtVersion>>;
const older = (a: Ver, b: Ver) => (a.major - b.major || a.minor - b.minor || a.patch - b.patch) < 0;
const fmtMem = (b: number) => `${Math.ceil(b / Mi)}Mi`;
const fmtCpu = (m: number) => `${m}m`;

/**
 * The virt-launcher pod's memory overhead as KubeVirt v1.8.4 computes it on x86 (KvmHypervisorBackend.GetMemoryOverhead,
 * https://github.com/kubevirt/kubevirt/blob/v1.8.4/pkg/hypervisor/kvm/hypervisorbackend.go, called by
 * CalculateMemoryOverhead in pkg/virt-controller/services/template.go): page tables (guest memory / 512), the fixed
 * 25+100+25+40+30 Mi of virt-launcher-monitor, virt-launcher, virtlogd, virtqemud and qemu, 8 Mi per vCPU, 8 Mi for the
 * IO thread, 32 Mi video RAM unless autoattachGraphicsDevice is false. Not counted (so it is a lower bound for such VMs):
 * VFIO devices (+1 Gi), SEV (+256 Mi), TPM (+53 Mi), exec probes, dedicated CPUs (+100 Mi), the network binding's
 * share and additionalGuestMemoryOverheadRatio.
 */
export function memoryOverhead(vm: Pick<VmNeeds, 'requests' | 'vcpus' | 'graphics'>): number {
  // ScaledValue(Kilo) rounds up; Set(Value() / 512) divides in whole bytes
  const pageTables = Math.floor((Math.ceil(vm.requests.memoryBytes / 1000) * 1000) / 512);
  return pageTables + 220 * Mi + 8 * Mi * Math.max(1, vm.vcpus) + 8 * Mi + (vm.graphics ? 32 * Mi : 0);
}

/** What the virt-launcher pod requests: the VM's requests plus the overhead. */
const launcherRequests = (vm: VmNeeds): Resources => ({ cpuMilli: vm.requests.cpuMilli, memoryBytes: vm.requests.memoryBytes + memoryOverhead(vm) });

function tolerates(t: Toleration, taint: Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return !t.key || t.key === taint.key;
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

function matches(req: NodeSelectorRequirement, labels: Readonly<Record<string, string>>): boolean {
  const v = labels[req.key];
  const vals = req.values ?? [];
  switch (req.operator) {
    case 'In': return v !== undefined && vals.includes(v);
    case 'NotIn': return v === undefined || !vals.includes(v);
    case 'Exists': return v !== undefined;
    case 'DoesNotExist': return v === undefined;
    case 'Gt': return v !== undefined && Number(v) > Number(vals[0]);
    case 'Lt': return v !== undefined && Number(v) < Number(vals[0]);
    default: return false;
  }
}

/** The labels the virt-launcher pod selects on for this VM (true-valued), and those it rejects. */
function kubevirtSelector(vm: VmNeeds): { need: string[]; reject: string[] } {
  const need = [SCHEDULABLE_LABEL];
  const reject: string[] = [];
  if (vm.cpuModel && vm.cpuModel !== 'host-model' && vm.cpuModel !== 'host-passthrough') need.push(CPU_MODEL_LABEL + vm.cpuModel);
  if (!vm.cpuModel || vm.cpuModel === 'host-model') {
    reject.push(HOST_MODEL_OBSOLETE_LABEL);
    if (vm.hostModel) need.push(HOST_MODEL_MIGRATION_LABEL + vm.hostModel.model, ...vm.hostModel.requiredFeatures.map((f) => CPU_FEATURE_LABEL + f));
  }
  for (const f of vm.features) {
    if (!f.policy || f.policy === 'require') need.push(CPU_FEATURE_LABEL + f.name);
    if (f.policy === 'forbid') reject.push(CPU_FEATURE_LABEL + f.name);
  }
  if (vm.machineType) need.push(MACHINE_TYPE_LABEL + vm.machineType);
  return { need: [...new Set(need)], reject };
}

/** Why a node cannot run the VM's virt-launcher pod, or undefined when it can (resources aside). */
export function nodeRefusal(vm: VmNeeds, n: NodeFacts): string | undefined {
  if (n.unschedulable) return 'cordoned';
  const taint = n.taints.find((t) => (t.effect === 'NoSchedule' || t.effect === 'NoExecute') && !vm.tolerations.some((x) => tolerates(x, t)));
  if (taint) return `taint ${taint.key}${taint.value ? `=${taint.value}` : ''}:${taint.effect} not tolerated`;
  const sel = kubevirtSelector(vm);
  const missing = sel.need.find((l) => n.labels[l] !== 'true');
  if (missing) return `no label ${missing}=true`;
  const rejected = sel.reject.find((l) => n.labels[l] === 'true');
  if (rejected) return `labelled ${rejected}`;
  const selector = Object.entries(vm.nodeSelector).find(([k, v]) => n.labels[k] !== v);
  if (selector) return `nodeSelector ${selector[0]}=${selector[1]} not matched`;
  if (vm.requiredTerms?.length && !vm.requiredTerms.some((t) => (t.matchExpressions ?? []).every((r) => matches(r, n.labels)))) return 'required node affinity not matched';
  return undefined;
}

const free = (n: NodeFacts): Resources => ({
  cpuMilli: n.allocatable.cpuMilli - n.requested.cpuMilli, memoryBytes: n.allocatable.memoryBytes - n.requested.memoryBytes,
});
const fits = (need: Resources, have: Resources) => need.cpuMilli <= have.cpuMilli && need.memoryBytes <= have.memoryBytes;

/** The nodes that can run the VM and have room for its virt-launcher pod (used by evacuate too). */
export function nodesWithRoom(vm: VmNeeds, nodes: readonly NodeFacts[]): NodeFacts[] {
  const need = launcherRequests(vm);
  return nodes.filter((n) => !nodeRefusal(vm, n) && fits(need, free(n)));
}

type Add = (check: ReadinessCheck, code: StatusCode, severity: 'error' | 'warning', message: string, fix: string) => void;
interface Move { readonly from: string; readonly to: string; readonly vm: string; readonly targetNamespace: string }

function network(m: Move, f: ReadinessFacts, add: Add): void {
  const sides = [[m.from, m.to, f.tunnel?.source], [m.to, m.from, f.tunnel?.target]] as const;
  if (sides.every(([, , t]) => !t || t.read === 0)) {
    add('network', 'status/ready-tunnel-unknown', 'warning', `no gateway runtime status of ${m.from} or ${m.to} could be read, so whether the tunnel carries a connection now is unknown`,
      'let status read the gateway pods\' admin /status through the pod proxy (pods/proxy get in the gateway namespace), or check the gateways');
    return;
  }
  for (const [a, b, t] of sides) {
    if (!t || t.read === 0) continue;
    // the probe (a real tunnel handshake just now) decides where a gateway answered it; older gateways have no /probe
    if (t.probed > 0) {
      if (t.probesOk === 0) {
        add('network', 'status/ready-tunnel-down', 'error', `no gateway of ${a} can open a tunnel to ${b} now: their probe of ${b}'s gateways (a tunnel's TLS handshake and identity check) failed (${t.probeErrors.join('; ')})`,
          `check the path between ${a}'s and ${b}'s gateways (the peer address in the gateway config, firewalls, the peer's TLS identity) and that ${b}'s gateways run: the probe's error names the reason`);
      }
      continue;
    }
    if (t.tunnelsOpen > 0 || t.publicationsOk > 0) continue;
    if (t.publicationsFailed === 0) {
      add('network', 'status/ready-tunnel-unknown', 'warning', `no gateway of ${a} has a tunnel open to ${b} or has published trust through one yet, so the tunnel is not probed`,
        `turn the trust exchange on (its publications through the tunnel are the probe), or watch a migration's first connection in the gateways' /status`);
    } else {
      add('network', 'status/ready-tunnel-down', 'error', `no gateway of ${a} has carried a connection to ${b}: no tunnel open and its last ${t.publicationsFailed} trust publication(s) to ${b}'s gateways failed`,
        `check the path between ${a}'s and ${b}'s gateways (the peer address in the gateway config, firewalls, the peer's TLS identity): the gateways' /status lastErrors name the reason`);
    }
  }
}

function storage(m: Move, f: ReadinessFacts, add: Add): void {
  for (const v of f.vm?.volumes ?? []) {
    const sc = f.storageClasses[v.storageClass];
    if (!sc?.exists) continue; // status/move-storage-missing says it
    if (!v.accessModes.includes('ReadWriteMany')) {
      add('storage', 'status/ready-access-mode', 'error', `volume ${v.name} of ${m.vm} asks for ${v.accessModes.join(',') || 'no access mode'}: KubeVirt live-migrates only VMs whose PVCs are ReadWriteMany`,
        `give the target PVC accessMode ReadWriteMany (the StorageMap entry's accessMode for ${v.storageClass}), on a class whose driver supports it`);
    }
    const sets = sc.claimPropertySets;
    if (sets && !sets.some((s) => s.accessModes.includes('ReadWriteMany') && (s.volumeMode ?? 'Filesystem') === v.volumeMode)) {
      add('storage', 'status/ready-access-mode', 'error', `storage class ${v.storageClass} on ${m.to} offers no ReadWriteMany ${v.volumeMode} claims (CDI StorageProfile), which volume ${v.name} of ${m.vm} needs to stay live-migratable`,
        `map ${v.storageClass}'s source to a class with RWX ${v.volumeMode} support, or set the StorageProfile's claimPropertySets if the driver has it`);
    }
    const caps = (f.capacities ?? []).filter((c) => c.storageClassName === v.storageClass);
    if (caps.length && !caps.some((c) => (c.maximumVolumeSize ?? c.capacity ?? 0) >= v.sizeBytes)) {
      const best = Math.max(...caps.map((c) => c.maximumVolumeSize ?? c.capacity ?? 0));
      add('storage', 'status/ready-storage-capacity', 'error', `no topology segment of storage class ${v.storageClass} on ${m.to} has room for volume ${v.name} of ${m.vm} (${fmtMem(v.sizeBytes)}; largest CSIStorageCapacity ${fmtMem(best)})`,
        `free space in ${v.storageClass} on ${m.to}, or map the volume to another class`);
    }
  }
}

function compute(m: Move, f: ReadinessFacts, add: Add): void {
  const vm = f.vm;
  if (!vm || !f.nodes) return;
  if (f.nodes.some((n) => !nodeRefusal(vm, n))) return;
  const why = f.nodes.map((n) => `${n.name}: ${nodeRefusal(vm, n)}`).join('; ') || 'no nodes';
  add('compute', 'status/ready-no-node', 'error', `no schedulable node of ${m.to} can run ${m.vm} (${why})`,
    `label or add a node that KubeVirt's node labeller labels with ${kubevirtSelector(vm).need.join(', ')}, untaint it or give the VM the toleration, or change the VM's CPU model, machine type, nodeSelector or affinity`);
}

function capacity(m: Move, f: ReadinessFacts, add: Add): void {
  const vm = f.vm;
  if (!vm) return;
  const need = launcherRequests(vm);
  const want = `${fmtCpu(need.cpuMilli)} CPU, ${fmtMem(need.memoryBytes)} memory (requests plus ${fmtMem(memoryOverhead(vm))} KubeVirt overhead)`;
  const able = (f.nodes ?? []).filter((n) => !nodeRefusal(vm, n));
  if (able.length && !able.some((n) => fits(need, free(n)))) {
    add('capacity', 'status/ready-no-room', 'error', `no node of ${m.to} that can run ${m.vm} has ${want} free (${able.map((n) => `${n.name}: ${fmtCpu(free(n).cpuMilli)}, ${fmtMem(free(n).memoryBytes)} free`).join('; ')})`,
      `free or add capacity on ${m.to}, or move the VM to another cluster: the receiving virt-launcher pod would stay Pending`);
  }
  for (const q of f.quotas) {
    for (const [key, amount] of [['requests.cpu', need.cpuMilli], ['cpu', need.cpuMilli], ['requests.memory', need.memoryBytes], ['memory', need.memoryBytes], ['pods', 1]] as const) {
      if (q.hard[key] === undefined) continue;
      const left = q.hard[key] - (q.used[key] ?? 0);
      if (left < amount) {
        add('capacity', 'status/ready-quota', 'error', `ResourceQuota ${m.targetNamespace}/${q.name} on ${m.to} has ${key} ${left} left, the virt-launcher pod of ${m.vm} needs ${amount}`,
          `raise the quota's ${key} by ${amount - left}, or free some in ${m.targetNamespace}`);
      }
    }
  }
  limitRanges(m, f, vm, need, add);
}

/** The LimitRanges of the target namespace against the virt-launcher pod, container by container, and the target PVCs. */
function limitRanges(m: Move, f: ReadinessFacts, vm: VmNeeds, need: Resources, add: Add): void {
  const containers = launcherContainers(vm, f.target, need, memoryOverhead(vm));
  for (const r of limitRangeRefusals(containers, f.limits)) {
    add('capacity', 'status/ready-limit-range', 'error', `LimitRange ${m.targetNamespace}/${r.limitRange} on ${m.to} (${r.item}, type ${r.type}) refuses the virt-launcher pod of ${m.vm}: ${r.message}`,
      `change the LimitRange's ${r.field}, or the VM's requests or limits (domain.resources)`);
  }
  for (const lr of f.limits) {
    lr.items.forEach((item, i) => {
      if (item.type !== 'PersistentVolumeClaim' || !item.storage) return;
      const { min, max } = item.storage;
      for (const v of vm.volumes) {
        const bound = max !== undefined && v.sizeBytes > max ? ['maximum', 'max', max] as const : min !== undefined && v.sizeBytes < min ? ['minimum', 'min', min] as const : undefined;
        if (!bound) continue;
        add('capacity', 'status/ready-limit-range', 'error', `LimitRange ${m.targetNamespace}/${lr.name} on ${m.to} (spec.limits[${i}], type PersistentVolumeClaim) refuses the target PVC of volume ${v.name} of ${m.vm}: ${bound[0]} storage usage per PersistentVolumeClaim is ${fmtMem(bound[2])}, but request is ${fmtMem(v.sizeBytes)}`,
          `change the LimitRange's spec.limits[${i}].${bound[1]}.storage, or the volume's size`);
      }
    });
  }
}

/** Version, gate and migration network of both sides; the clusters to update. */
export function versionCard(from: string, to: string, f: ReadinessFacts): VersionCard {
  const gate = (s: ReadinessFacts['source']) => s.featureGates.includes(FEATURE_GATE_DLM);
  const sv = f.source.version ? parseKubevirtVersion(f.source.version) : undefined;
  const tv = f.target.version ? parseKubevirtVersion(f.target.version) : undefined;
  const update = new Set<string>();
  if (sv && tv && older(tv, sv)) update.add(to);
  if (f.source.found && !gate(f.source)) update.add(from);
  if (f.target.found && !gate(f.target)) update.add(to);
  if (f.source.found && f.target.found && !f.source.migrationNetwork !== !f.target.migrationNetwork) update.add(f.source.migrationNetwork ? to : from);
  const side = (s: ReadinessFacts['source']) => ({ ...(s.version ? { version: s.version } : {}), gate: gate(s), ...(s.migrationNetwork ? { migrationNetwork: s.migrationNetwork } : {}) });
  return { from, to, source: side(f.source), target: side(f.target), update: [...update].sort() };
}

function version(m: Move, f: ReadinessFacts, add: Add): void {
  const sv = f.source.version ? parseKubevirtVersion(f.source.version) : undefined;
  const tv = f.target.version ? parseKubevirtVersion(f.target.version) : undefined;
  if (sv && tv && older(tv, sv)) {
    add('version', 'status/ready-kubevirt-older', 'error', `KubeVirt on ${m.to} (${f.target.version}) is older than on ${m.from} (${f.source.version}): a VM does not migrate to an older virt-launcher`,
      `update ${m.to}'s KubeVirt to ${f.source.version} or later before moving`);
  }
  for (const [c, s] of [[m.from, f.source], [m.to, f.target]] as const) {
    if (s.found && !s.featureGates.includes(FEATURE_GATE_DLM)) {
      add('version', 'status/ready-gate-off', 'error', `${c}'s live KubeVirt CR does not enable ${FEATURE_GATE_DLM}: both ends of a decentralized live migration need it`,
        `update ${c}: add ${FEATURE_GATE_DLM} to its KubeVirt spec.configuration.developerConfiguration.featureGates (apply the generated tree)`);
    }
  }
  if (f.source.found && f.target.found && !f.source.migrationNetwork !== !f.target.migrationNetwork) {
    const [has, lacks] = f.source.migrationNetwork ? [m.from, m.to] : [m.to, m.from];
    add('version', 'status/ready-migration-network', 'error', `${has} migrates over a dedicated network (${f.source.migrationNetwork ?? f.target.migrationNetwork}) and ${lacks} over the pod network: the handlers of one side cannot reach the other's`,
      `update ${lacks}: set spec.configuration.migrations.network (apply the generated tree), or remove it on ${has}`);
  }
}

/** The five checks of one move, and the multifd warning; every problem with its check, code, severity and fix. */
export function judgeReadiness(m: Move, f: ReadinessFacts): ReadinessProblem[] {
  const out: ReadinessProblem[] = [];
  const add: Add = (check, code, severity, message, fix) => { out.push({ check, code, severity, message, fix }); };
  network(m, f, add);
  storage(m, f, add);
  compute(m, f, add);
  version(m, f, add);
  capacity(m, f, add);
  for (const [check, why] of Object.entries(f.unread ?? {})) {
    add(check as ReadinessCheck, 'status/ready-unread', 'warning', `the ${check} check could not read what it needs: ${why}`, 'grant the readiness ClusterRole (docs/migrations.md) to the identity status runs as');
  }
  if (f.vm?.cpuLimited) {
    add('compute', 'status/move-multifd-off', 'warning', `${m.vm} sets domain.resources.limits.cpu: KubeVirt migrates a VM with CPU limits single-threaded (multifd off), so a busy guest converges slower`,
      'remove the CPU limit for the move if the namespace allows it, or give the cross-cluster MigrationPolicy a longer completionTimeoutPerGiB');
  }
  return out;
}
