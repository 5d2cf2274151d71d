/**
 * A VM that moves keeps its address (issue 40 item 4, planning side): the pre-flight check of one move
 * over the VM networks of its namespace, and the address to pin on the target, from the ledger's mobile
 * slice or from what the source's IPAMClaim holds (read by the CLI and passed in). The Forklift and CLI
 * side writes the result as KubeVirt's `network.kubevirt.io/addresses` annotation on the SOURCE VM's
 * template before the Plan runs (Forklift's live path copies the template). Pure, no cdk8s import.
 */
import { FleetProblem } from '../base/errors';
import { Addr, containsAddr, formatAddr, parseAddr, parseCidr } from '../base/ip';
import { mobileAnnotation } from './cluster-network';
import { MAX_MOVABLE_VM_NAME } from './declaration';
import { resolveVmNetworks } from './plan';
import type { FleetDocument } from '../fleet/schema';
import type { Move } from '../forklift/schema';
import { ADDRESSES_ANNOTATION, ClusterVmNetwork, ClusterVmNetworks, VmNetworkPlan } from './resolved';


/** One move, as the pre-flight check needs it. */
export interface KeepAddressMove {
  readonly vm: string;
  /** The VM's namespace on the source. */
  readonly namespace: string;
  readonly from: string;
  readonly to: string;
  /** @default - the source namespace */
  readonly targetNamespace?: string;
  /**
   * The addresses to keep, bare, one per subnet family: what the source's IPAMClaim `<vm>.<network>`
   * holds (`status.ips`, prefix dropped). @default - the ledger's mobile addresses of the VM
   */
  readonly addresses?: readonly string[];
  /** Addresses the target cluster already holds on the network (its IPAMClaims, pods' network-status). @default - none known */
  readonly targetHolds?: readonly string[];
  /**
   * Refuse the move when no address is known (neither given nor the ledger's). `false` for the fleet-level
   * check before the CLI has read the IPAMClaim: the move is then only warned about (`vmnet-ip-not-kept`).
   * @default true
   */
  readonly requireAddress?: boolean;
}

/** What `checkKeepAddressMove` decides. */
export interface KeepAddressVerdict {
  /** No problem: the move may run and keeps its address (or has none to keep). */
  readonly ok: boolean;
  /** The primary Layer2 network the VM is on (its namespace's), when it has one. */
  readonly network?: string;
  /** The addresses to pin (bare, IPv4 first); empty when there is nothing to pin. */
  readonly addresses: readonly string[];
  /**
   * The annotation to set on the source VM's `spec.template.metadata.annotations` before the Plan
   * runs: `{key: "network.kubevirt.io/addresses", value: "{\"default\":[\"10.50.240.1\"]}"}`.
   */
  readonly annotation?: { readonly key: string; readonly value: string };
  /** Where the address comes from: the mobile slice (safe anywhere) or the source's own slice (needs the halted source kept as tombstone). */
  readonly origin?: 'mobile' | 'source-slice';
  /**
   * What to do with the halted source VM after the move: `delete-source` (a mobile address: no cluster hands
   * it out, the claim may go), `keep-source-halted` (an address of the source's slice: its claim is the
   * tombstone that keeps the source from handing the address out again). Absent when nothing is pinned.
   */
  readonly afterMove?: 'delete-source' | 'keep-source-halted';
  readonly problems: readonly FleetProblem[];
  readonly warnings: readonly FleetProblem[];
}

/** What the check reads: `resolveVmNetworks`'s result (or the same two fields). */
export interface VmNetworksView {
  readonly perCluster: ReadonlyMap<string, ClusterVmNetworks>;
  readonly networks: readonly VmNetworkPlan[];
  /** The fleet's VM-network problems: when there are any, every move is refused with them (nothing was planned). @default - none */
  readonly problems?: readonly FleetProblem[];
}

const cidrsOf = (texts: readonly string[]) => texts.flatMap((t) => { const r = parseCidr(t); return r.ok ? [r.cidr] : []; });

/** The addresses to keep: the given ones checked against the network's slices, else the ledger's mobile ones. */
interface Kept { addrs: Addr[]; origin?: 'mobile' | 'source-slice' }

function addressesToKeep(net: VmNetworkPlan, m: KeepAddressMove, path: string, out: FleetProblem[], warnings: FleetProblem[]): Kept {
  const ledger = net.mobileVms.find((v) => v.vm === m.vm && v.namespace === m.namespace);
  const given = m.addresses ?? ledger?.addresses;
  if (!given && m.requireAddress === false) {
    warnings.push({ code: 'vmnet-ip-not-kept', path, message: `${m.namespace}/${m.vm} is not a mobile VM of ${net.name}: unless the address its IPAMClaim ${m.vm}.${net.name} holds on ${m.from} is pinned before the Plan runs, ${m.to} gives it a new one`,
      fix: `pin the address read from the IPAMClaim (checkKeepAddressMove with addresses), or list ${m.namespace}/${m.vm} in spec.vmNetworks[${net.index}].mobileVms` });
    return { addrs: [] };
  }
  if (!given) {
    out.push({ code: 'vmnet-move-address', path, message: `no address is known for ${m.namespace}/${m.vm} on ${net.name}: it is not a mobile VM of the ledger, and no address read from its IPAMClaim was given`,
      fix: `list ${m.namespace}/${m.vm} in spec.vmNetworks[${net.index}].mobileVms (new VMs), or pass the addresses its source IPAMClaim ${m.vm}.${net.name} holds` });
    return { addrs: [] };
  }
  const addrs = given.map((t) => parseAddr(t.replace(/\/\d+$/, '')));
  const families = net.splits.map((s) => cidrsOf([s.subnet])[0]?.family);
  if (addrs.some((a) => !a) || addrs.length !== families.length || families.some((f) => !addrs.some((a) => a!.family === f))) {
    out.push({ code: 'vmnet-move-address', path, message: `${given.join(', ')} is not one address per subnet of ${net.name} (${net.splits.map((s) => s.subnet).join(', ')}); OVN-K requires exactly one per family`,
      fix: 'give one bare address per subnet family' });
    return { addrs: [] };
  }
  const list = addrs as Addr[];
  if (ledger && m.addresses && ledger.addresses.join(',') !== list.map((a) => formatAddr(a)).join(',')) {
    out.push({ code: 'vmnet-move-address', path, message: `${m.namespace}/${m.vm} holds ${ledger.addresses.join(', ')} in the ledger, not ${m.addresses.join(', ')}`,
      fix: 'check which address the VM really has (its IPAMClaim); the ledger\'s is the one every cluster keeps free' });
  }
  const srcSlot = net.slots[m.from];
  const dstSlot = net.slots[m.to];
  let origin: 'mobile' | 'source-slice' = 'mobile';
  for (const a of list) {
    const sp = net.splits.find((s) => cidrsOf([s.subnet])[0]?.family === a.family)!;
    const inMobile = cidrsOf([sp.mobile]).some((c) => containsAddr(c, a));
    const inSlice = (slot: number | undefined) => slot !== undefined && cidrsOf([sp.slices[slot]]).some((c) => containsAddr(c, a));
    if (inMobile) continue;
    if (inSlice(srcSlot)) { origin = 'source-slice'; continue; }
    const where = inSlice(dstSlot) ? `in ${m.to}'s own slice, which ${m.to} hands out dynamically` : `in neither the mobile slice ${sp.mobile} nor ${m.from}'s slice`;
    out.push({ code: 'vmnet-move-address', path, message: `${formatAddr(a)} is ${where}: kept on ${m.to}, it could collide with an address ${m.to} gives another VM`,
      fix: `keep only addresses of the mobile slice (list the VM in mobileVms) or of ${m.from}'s slice; this VM would get a new address on ${m.to}` });
  }
  const held = new Set((m.targetHolds ?? []).map((t) => parseAddr(t.replace(/\/\d+$/, ''))).filter((a): a is Addr => !!a).map((a) => `${a.family}:${a.value}`));
  for (const a of list) {
    if (held.has(`${a.family}:${a.value}`)) {
      out.push({ code: 'vmnet-move-address', path, message: `${m.to} already holds ${formatAddr(a)} on ${net.name}: the target pod would fail (IPsAllocated=False) and the VM would not start there`,
        fix: `find the VM or pod on ${m.to} that holds ${formatAddr(a)} (a stale IPAMClaim of an earlier move?) and remove it first` });
    }
  }
  return { addrs: list, origin };
}

/** The primary network of a namespace on a cluster, if any. */
const primaryIn = (v: VmNetworksView, cluster: string, ns: string): ClusterVmNetwork | undefined =>
  v.perCluster.get(cluster)?.networks.find((n) => n.role === 'Primary' && n.namespaces.includes(ns));

/**
 * The pre-flight check of one keep-the-address move, and the address to pin. Refuses a move whose primary
 * Layer2 network does not reach the target (reach none), is not served there, or changes namespace; an
 * address that is not the VM's or that the target holds; a VM name too long to move. Warns where a
 * secondary localnet network of the namespace cannot keep the address.
 */
export function checkKeepAddressMove(v: VmNetworksView, m: KeepAddressMove, path = `moves.${m.namespace}/${m.vm}`): KeepAddressVerdict {
  if (v.problems?.length) return { ok: false, addresses: [], problems: [...v.problems], warnings: [] };
  const problems: FleetProblem[] = [];
  const warnings: FleetProblem[] = [];
  const src = primaryIn(v, m.from, m.namespace);
  for (const ln of v.perCluster.get(m.from)?.networks.filter((n) => n.topology === 'Localnet' && n.namespaces.includes(m.namespace)) ?? []) {
    if (ln.ipam.mode === 'Enabled') {
      warnings.push({ code: 'vmnet-ip-not-kept', path, message: `${m.namespace}/${m.vm} may use localnet network ${ln.name}, whose addresses come from OVN IPAM per cluster: on ${m.to} it gets a new one (nothing upstream can pin a localnet address)`,
        fix: `use ipam: disabled on ${ln.name} for VMs that move (the guest owns its address on the shared VLAN), or re-address the VM after the move` });
    } else {
      // ovn-kubernetes #6461: each cluster sees one virt-launcher pod, so the source port is never switched off
      warnings.push({ code: 'vmnet-localnet-cclm', path, message: `${m.namespace}/${m.vm} may use localnet network ${ln.name}: its guest keeps its address${ln.reach.type === 'vlan' ? '' : `, but reach is ${ln.reach.type}, so on ${m.to} it is on another segment`}; traffic sent to the source node can be lost until the move completes (ovn-kubernetes #6461)`,
        fix: ln.reach.type === 'vlan' ? 'expect a short loss on this network during the switch-over; retrying clients recover' : `join ${ln.name}'s VLAN between the sites (reach: {type: vlan}) before moving VMs on it` });
    }
  }
  if (!src) {
    const dstOnly = primaryIn(v, m.to, m.namespace);
    if (dstOnly) {
      warnings.push({ code: 'vmnet-ip-not-kept', path, message: `${m.from} does not serve ${dstOnly.name} in ${m.namespace} (the VM is on the pod network there); on ${m.to} it lands on ${dstOnly.name}, the namespace's primary network, with a new address`,
        fix: `serve ${dstOnly.name} on ${m.from} too (before its namespace is created there), or expect the VM to be re-addressed` });
    }
    return { ok: true, addresses: [], problems, warnings };
  }
  const net = v.networks.find((n) => n.name === src.name)!;
  if (m.vm.length > MAX_MOVABLE_VM_NAME) {
    problems.push({ code: 'vmnet-move-vm-name', path, message: `VM name '${m.vm}' has ${m.vm.length} characters; cross-cluster live migration fails for names over ${MAX_MOVABLE_VM_NAME} (CNV-61066)`,
      fix: `rename the VM to at most ${MAX_MOVABLE_VM_NAME} characters before moving it` });
  }
  if ((m.targetNamespace ?? m.namespace) !== m.namespace) {
    problems.push({ code: 'vmnet-move-namespace', path, message: `the move puts ${m.vm} into namespace ${m.targetNamespace}; its primary network ${src.name}, its NAD and its IPAMClaim belong to ${m.namespace}, and the address is kept only in the same namespace`,
      fix: `drop targetNamespace, or serve ${m.targetNamespace} by ${src.name} and move without keeping the address` });
  }
  const dst = v.perCluster.get(m.to)?.networks.find((n) => n.name === src.name);
  if (!dst) {
    problems.push({ code: 'vmnet-move-not-served', path, message: `${m.to} does not serve VM network ${src.name} (the primary network of ${m.namespace} on ${m.from}); the VM would land on another network there`,
      fix: `serve ${src.name} on ${m.to} (remove clusters.${m.to}.served: false), or move the VM to a cluster that serves it` });
  } else if (src.reach.type === 'none') {
    problems.push({ code: 'vmnet-move-no-reach', path, message: `VM network ${src.name} has reach none: its L2 segment on ${m.to} is not joined to ${m.from}'s, so ${m.vm} would keep its address on a segment where no peer of ${m.from} reaches it, and its TCP connections would stop`,
      fix: `stretch ${src.name} (reach: {type: evpn, ...}) before moving VMs that must keep their address, or re-address the VM after the move` });
  }
  const kept = addressesToKeep(net, m, path, problems, warnings);
  if (kept.origin === 'source-slice') {
    warnings.push({ code: 'vmnet-move-tombstone', path, message: `${kept.addrs.map((a) => formatAddr(a)).join(', ')} is from ${m.from}'s own slice: after the move keep the halted source VM (its IPAMClaim holds the address on ${m.from}); deleting it lets ${m.from} hand the address out again while the VM runs on ${m.to}`,
      fix: `keep the halted ${m.vm} on ${m.from} as the tombstone; give VMs that move often a mobile address (mobileVms)` });
  }
  const addresses = kept.addrs.map((a) => formatAddr(a));
  const annotation = addresses.length && problems.length === 0
    ? { key: ADDRESSES_ANNOTATION, value: mobileAnnotation(net.primaryInterface, addresses) }
    : undefined;
  const origin = kept.addrs.length ? { origin: kept.origin, afterMove: kept.origin === 'mobile' ? 'delete-source' as const : 'keep-source-halted' as const } : {};
  return { ok: problems.length === 0, network: src.name, addresses, ...(annotation ? { annotation } : {}), ...origin, problems, warnings };
}

/**
 * The fleet-level pre-flight of every listed move (spec.forklift.moves or the moves file), before anything
 * is written: what `checkKeepAddressMove` refuses without reading a cluster. A VM with no ledger address
 * is warned about, not refused (the CLI pins the address it reads from the IPAMClaim).
 */
type Found = { problems: FleetProblem[]; warnings: FleetProblem[] };

function vmNetworkMoveProblems(v: VmNetworksView, moves: readonly KeepAddressMove[], listPath: string): Found {
  const problems: FleetProblem[] = [];
  const warnings: FleetProblem[] = [];
  moves.forEach((m, i) => {
    const r = checkKeepAddressMove(v, { ...m, requireAddress: false }, `${listPath}[${i}]`);
    problems.push(...r.problems);
    warnings.push(...r.warnings);
  });
  return { problems, warnings };
}

/**
 * `vmNetworkMoveProblems` for a fleet document and its moves (src/forklift/plan.ts calls it): nothing when
 * the fleet has no VM networks or they do not plan (validation reports why).
 */
export function fleetMoveProblems(doc: FleetDocument, moves: readonly Move[], listPath: string): Found {
  if (!doc.spec.vmNetworks?.length || !moves.length) return { problems: [], warnings: [] };
  const v = resolveVmNetworks(doc);
  if (v.problems.length) return { problems: [], warnings: [] };
  const list = moves.map((m) => ({ vm: m.vm, namespace: m.namespace, from: m.from, to: m.to, targetNamespace: m.targetNamespace }));
  return vmNetworkMoveProblems(v, list, listPath);
}
