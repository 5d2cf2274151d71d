/**
 * A cluster evacuation planned across the fleet (issue 51 item 2): every VM of one cluster gets a target among
 * the clusters it can reach, and the moves are ordered in waves within the migration limits, as a moves file a
 * person reviews in Git before it runs.
 *
 * - Reach: a target is in the source's migration group (the same datapath: src/forklift/checks.ts `checkPairs`),
 *   has a storage mapping (spec.forklift.storage) for each of the VM's storage classes, and each of its Multus
 *   networks is declared for the target (spec.forklift.networks) or mapped (spec.forklift.networkMaps).
 * - Room: a schedulable node of the target passes the readiness compute predicate (src/report/readiness.ts
 *   nodeRefusal: the VM's nodeSelector, its CPU model, features and machine type as node labeller labels, taints
 *   against its tolerations) and has the CPU and memory free for the
 *   virt-launcher pod: the VM's requests plus KubeVirt's memory overhead, bounded here by KubeVirt v1.8.4's
 *   `GetMemoryOverhead` (pkg/hypervisor/kvm/hypervisorbackend.go): guest memory / 512 for page tables, 220 MiB for
 *   virt-launcher, its monitor, virtlogd, virtqemud and QEMU, 8 MiB per vCPU, 8 MiB for the IO thread, 32 MiB of
 *   video RAM, and 100 MiB more for what it adds for probes, TPM or dedicated CPUs.
 * - Spread: the largest VMs first; each goes to the feasible target with the most free memory after it (ties to the
 *   first name), on that target's node with the most free memory. Deterministic for the same inputs.
 * - Waves: a VM joins the first wave in which the source cluster, the target cluster (KubeVirt's
 *   `parallelMigrationsPerCluster`, default 5) and the VM's source node (`parallelOutboundMigrationsPerNode`:
 *   KubeVirt's default 2, HCO's 1 since hyperconverged-cluster-operator PR #4426) still have room, and, with a
 *   gateway budget between the source and a target, no more go into that target than its pair's budget carries at
 *   their bandwidth (`Limits`).
 * Every VM no target can take is refused with each target's reason. Pure, no cdk8s import.
 */
import { quantityValue } from '../base/quantity';
import { FleetProblem } from '../base/errors';
import { FleetDocument } from '../fleet/schema';
import { DEFAULT_DELIVERY_FORM, deliveryForm } from '../kubevirt/delivery-forms';
import { Inventory, InventoryNode, InventoryVm } from './inventory';
import { datapathMode } from '../fleet/datapath-modes';
import { crossClusterPolicy } from './move-policy';
import { budgetBetween, resolveBandwidth } from '../gateway/bandwidth-budget';
import { Move } from './schema';
import { memoryOverhead, nodeRefusal, SCHEDULABLE_LABEL } from '../report/readiness';
import { NodeFacts, VmNeeds } from '../report/readiness-facts';

const MI = 2 ** 20;
/** KubeVirt's default (pkg/virt-config/virt-config.go); the per-node default is the delivery form's. */
const KUBEVIRT_PARALLEL_PER_CLUSTER = 5;

/**
 * The memory a VM's virt-launcher pod requests beyond the guest: the bound in the header, the readiness check's
 * computation (src/report/readiness.ts memoryOverhead, video RAM counted) plus 100 MiB for what the inventory does not say.
 */
export const launcherOverhead = (guestBytes: number, vcpus: number): number =>
  memoryOverhead({ requests: { cpuMilli: 0, memoryBytes: guestBytes }, vcpus, graphics: true }) + 100 * MI;

/** The inventory's VM as the readiness compute predicate reads it (src/report/readiness.ts nodeRefusal). */
const needsOf = (vm: InventoryVm): VmNeeds => ({
  ...(vm.cpuModel ? { cpuModel: vm.cpuModel } : {}), features: vm.cpuFeatures ?? [], ...(vm.machineType ? { machineType: vm.machineType } : {}),
  nodeSelector: vm.nodeSelector ?? {}, tolerations: vm.tolerations ?? [], vcpus: vm.vcpus ?? 1,
  requests: { cpuMilli: Math.round(num(vm.cpu) * 1000), memoryBytes: num(vm.memory) }, cpuLimited: !!vm.cpuLimit, limits: {}, graphics: true, volumes: [],
});
/** An inventory node as the predicate reads it: `schedulable` stands for KubeVirt's own schedulable label. */
const factsOf = (n: InventoryNode): NodeFacts => ({
  name: n.name, labels: { ...n.labels, [SCHEDULABLE_LABEL]: n.schedulable === false ? 'false' : 'true' }, taints: n.taints ?? [], unschedulable: n.schedulable === false,
  allocatable: { cpuMilli: 0, memoryBytes: 0 }, requested: { cpuMilli: 0, memoryBytes: 0 },
});

interface Room { cpu: number; memory: number }
interface TargetNode { readonly node: InventoryNode; free: Room }
interface Target { readonly name: string; readonly nodes: TargetNode[] }

/** One placed VM. */
export interface Placement {
  readonly vm: InventoryVm;
  readonly to: string;
  readonly node: string;
  readonly wave: number;
}

export interface EvacuationPlan {
  readonly source: string;
  readonly placements: readonly Placement[];
  /** The VMs no target can take, each with every target's reason. */
  readonly problems: readonly FleetProblem[];
  /** Free memory of each target before and after, in bytes. */
  readonly targets: readonly { readonly name: string; readonly freeBefore: number; readonly freeAfter: number }[];
  readonly limits: Limits;
}

const num = (q: string | undefined): number => (q === undefined ? 0 : quantityValue(q) ?? 0);
const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
const clusterSpec = (doc: FleetDocument, name: string) => doc.spec.clusters.find((c) => c.name === name);
const datapathOf = (doc: FleetDocument, name: string) => clusterSpec(doc, name)?.datapath ?? doc.spec.datapath ?? 'gateway';
const gib = (b: number): string => `${(b / 2 ** 30).toFixed(1)} GiB`;

/**
 * How many moves a wave may hold: out of the source and into each target (`perCluster`), per source node (`perNode`),
 * and, when the fleet gives the gateways budgets (`spec.gateway.bandwidth`) and its migrations a bandwidth
 * (`migrationPolicy.crossCluster`, else `bandwidthPerMigration`), into each target whose pair with the source has a
 * budget as many as that budget carries at that bandwidth (`perPeer`, by target, at least 1): more would only share
 * the budget and each take longer than its timeout allows.
 */
export interface Limits { readonly perCluster: number; readonly perNode: number; readonly perPeer?: Readonly<Record<string, number>> }

/** Plan the evacuation of `source`: placements in waves, or a refusal per VM no target can take. */
export function planEvacuation(doc: FleetDocument, inventory: Inventory, source: string): EvacuationPlan {
  const targets = targetsOf(doc, inventory, source);
  const limits = limitsOf(doc, source, targets.map((t) => t.name));
  const clusterProblem = sourceProblem(doc, inventory, source);
  if (clusterProblem) return { source, placements: [], problems: [clusterProblem], targets: [], limits };
  const freeBefore = new Map(targets.map((t) => [t.name, freeMemory(t)]));
  const vms = [...(inventory.clusters[source].vms ?? [])]
    .sort((a, b) => num(b.memory) - num(a.memory) || byName(`${a.namespace}/${a.name}`, `${b.namespace}/${b.name}`));
  const placed: { vm: InventoryVm; to: string; node: string }[] = [];
  const problems: FleetProblem[] = [];
  vms.forEach((vm) => {
    const choice = place(doc, source, vm, targets);
    if ('reasons' in choice) {
      const i = (inventory.clusters[source].vms ?? []).indexOf(vm);
      problems.push({
        code: 'forklift/evacuate-unplaced', path: `clusters.${source}.vms[${i}]`,
        message: `${vm.namespace}/${vm.name} (${vm.memory}, ${vm.cpu} CPU) has no target: ${choice.reasons.join('; ')}`,
        fix: 'add capacity or a storage mapping on a target, map its networks (spec.forklift.networks, networkMaps), or move it by hand',
      });
    } else {
      placed.push({ vm, ...choice });
    }
  });
  return {
    source, placements: inWaves(placed, limits), problems, limits,
    targets: targets.map((t) => ({ name: t.name, freeBefore: freeBefore.get(t.name)!, freeAfter: freeMemory(t) })),
  };
}

function limitsOf(doc: FleetDocument, source: string, targets: readonly string[]): Limits {
  const mp = doc.spec.migrationPolicy;
  const delivery = clusterSpec(doc, source)?.kubevirt?.configDelivery ?? doc.spec.kubevirt?.configDelivery ?? DEFAULT_DELIVERY_FORM;
  const perPeer = perTargetLimits(doc, source, targets);
  return {
    perCluster: mp?.parallelMigrationsPerCluster ?? KUBEVIRT_PARALLEL_PER_CLUSTER,
    perNode: mp?.parallelOutboundMigrationsPerNode ?? deliveryForm(delivery).migrationDefaults.parallelOutboundMigrationsPerNode,
    ...(Object.keys(perPeer).length ? { perPeer } : {}),
  };
}

/** Per target whose pair with the source has a gateway budget: the moves that budget carries at once (at least 1). */
function perTargetLimits(doc: FleetDocument, source: string, targets: readonly string[]): Record<string, number> {
  if (!datapathMode(datapathOf(doc, source)).gateways) return {}; // only the gateways enforce a budget
  const perMigration = crossClusterPolicy(doc)?.bytesPerMigration ?? num(doc.spec.migrationPolicy?.bandwidthPerMigration);
  const rules = resolveBandwidth(doc.spec.gateway?.bandwidth);
  if (!rules || perMigration <= 0) return {};
  const siteOf = (c: string) => clusterSpec(doc, c)?.site;
  const out: Record<string, number> = {};
  for (const t of targets) {
    const budget = budgetBetween(rules, siteOf, source, t) ?? 0;
    if (budget > 0) out[t] = Math.max(1, Math.floor(budget / perMigration));
  }
  return out;
}


function sourceProblem(doc: FleetDocument, inventory: Inventory, source: string): FleetProblem | undefined {
  const names = doc.spec.clusters.map((c) => c.name);
  const fail = (message: string, fix: string): FleetProblem => ({ code: 'forklift/evacuate-cluster', path: '--cluster', message, fix });
  if (!names.includes(source)) return fail(`'${source}' is not a cluster of fleet ${doc.metadata.name}`, `use one of ${names.join(', ')}`);
  if (!inventory.clusters[source]) return fail(`the inventory has no cluster ${source}`, `add ${source} with its nodes and VMs to the inventory`);
  if (!doc.spec.forklift) return fail('the fleet has no spec.forklift: the moves need a hub to run on', 'add spec.forklift (hub, providers, storage)');
  if (targetsOf(doc, inventory, source).length === 0) {
    return fail(`no other cluster of ${source}'s migration group (${datapathOf(doc, source)}) is in the inventory`, 'add the clusters that should take its VMs to the inventory');
  }
  return undefined;
}

/** The clusters that may take the source's VMs, with their nodes' free room. */
function targetsOf(doc: FleetDocument, inventory: Inventory, source: string): Target[] {
  return doc.spec.clusters.map((c) => c.name)
    .filter((n) => n !== source && inventory.clusters[n] && datapathOf(doc, n) === datapathOf(doc, source))
    .sort(byName)
    .map((name) => ({
      name,
      nodes: inventory.clusters[name].nodes.filter((n) => n.schedulable !== false).map((node) => ({
        node, free: { cpu: num(node.allocatable.cpu) - num(node.requested?.cpu), memory: num(node.allocatable.memory) - num(node.requested?.memory) },
      })),
    }));
}

const freeMemory = (t: Target): number => t.nodes.reduce((a, n) => a + Math.max(0, n.free.memory), 0);

/** The target and node a VM goes to (and the room taken there), or every target's reason. */
function place(doc: FleetDocument, source: string, vm: InventoryVm, targets: Target[]): { to: string; node: string } | { reasons: string[] } {
  const need: Room = { cpu: num(vm.cpu), memory: num(vm.memory) + launcherOverhead(num(vm.memory), vm.vcpus ?? 1) };
  const reasons: string[] = [];
  let best: { t: Target; n: TargetNode; after: number } | undefined;
  for (const t of targets) {
    const why = reachProblem(doc, source, t.name, vm);
    if (why) { reasons.push(`${t.name}: ${why}`); continue; }
    const needs = needsOf(vm);
    const fits = t.nodes.filter((n) => !nodeRefusal(needs, factsOf(n.node)));
    if (fits.length === 0) {
      const first = t.nodes[0] ? nodeRefusal(needs, factsOf(t.nodes[0].node)) : undefined;
      reasons.push(`${t.name}: no schedulable node carries its nodeSelector${first && !first.startsWith('nodeSelector') ? ` or can run it (${t.nodes[0].node.name}: ${first})` : ''}`);
      continue;
    }
    const room = fits.filter((n) => n.free.cpu >= need.cpu && n.free.memory >= need.memory)
      .sort((a, b) => b.free.memory - a.free.memory || byName(a.node.name, b.node.name));
    if (room.length === 0) {
      const largest = Math.max(...fits.map((n) => n.free.memory));
      reasons.push(`${t.name}: no node has ${need.cpu} CPU and ${gib(need.memory)} (with KubeVirt's overhead) free (the most free memory on one node: ${gib(largest)})`);
      continue;
    }
    const after = freeMemory(t) - need.memory;
    if (!best || after > best.after) best = { t, n: room[0], after };
  }
  if (!best) return { reasons };
  best.n.free.cpu -= need.cpu;
  best.n.free.memory -= need.memory;
  return { to: best.t.name, node: best.n.node.name };
}

/** Why `to` cannot take the VM from `from` by the fleet's maps, or undefined. */
function reachProblem(doc: FleetDocument, from: string, to: string, vm: InventoryVm): string | undefined {
  const fk = doc.spec.forklift!;
  for (const sc of vm.storageClasses ?? []) {
    const mapped = (fk.storage ?? []).some((s) => s.source === sc && (s.from ?? from) === from && (s.to ?? to) === to);
    if (!mapped) return `no storage mapping for ${sc} (spec.forklift.storage)`;
  }
  for (const net of vm.networks ?? []) {
    const [namespace, name] = net.split('/');
    const onBoth = (cs?: readonly string[]) => !cs || (cs.includes(from) && cs.includes(to));
    const declared = (fk.networks ?? []).some((n) => n.name === name && n.namespace === namespace && onBoth(n.clusters));
    const mapped = (fk.networkMaps ?? []).some((m) => m.from === from && m.to === to && m.source === net);
    if (!declared && !mapped) return `network ${net} is neither declared on both clusters nor mapped (spec.forklift.networks, networkMaps)`;
  }
  return undefined;
}

/** Waves in placement order: a VM joins the first wave where its source node, the source and its target have room. */
function inWaves(placed: readonly { vm: InventoryVm; to: string; node: string }[], limits: Limits): Placement[] {
  const waves: { out: number; into: Map<string, number>; fromNode: Map<string, number> }[] = [];
  return placed.map((p) => {
    const into = Math.min(limits.perCluster, limits.perPeer?.[p.to] ?? Infinity);
    const room = (x: (typeof waves)[number]) =>
      x.out < limits.perCluster && (x.into.get(p.to) ?? 0) < into && (x.fromNode.get(p.vm.node) ?? 0) < limits.perNode;
    let w = waves.findIndex(room);
    if (w < 0) { waves.push({ out: 0, into: new Map(), fromNode: new Map() }); w = waves.length - 1; }
    const x = waves[w];
    x.out += 1;
    x.into.set(p.to, (x.into.get(p.to) ?? 0) + 1);
    x.fromNode.set(p.vm.node, (x.fromNode.get(p.vm.node) ?? 0) + 1);
    return { ...p, wave: w + 1 };
  });
}

/** The batch name of a wave: a DNS label (a long cluster name is cut; the wave number stays). */
export const waveBatch = (source: string, wave: number): string => {
  const tail = `-wave-${wave}`;
  return `drain-${source.slice(0, 63 - 6 - tail.length).replace(/-+$/, '')}${tail}`;
};

/** The moves of a plan, wave by wave (each wave one batch), in placement order within a wave. */
export function evacuationMoves(plan: EvacuationPlan): Move[] {
  return [...plan.placements].sort((a, b) => a.wave - b.wave).map((p) => ({
    vm: p.vm.name, namespace: p.vm.namespace, from: plan.source, to: p.to, batch: waveBatch(plan.source, p.wave),
    ...(p.vm.vmiLabels && Object.keys(p.vm.vmiLabels).length ? { vmiLabels: p.vm.vmiLabels } : {}),
    memory: p.vm.memory,
    ...(p.vm.cpuLimit ? { cpuLimit: p.vm.cpuLimit } : {}),
  }));
}
