/**
 * The VM networks' part of the address ledger (`vmNetworks:` beside `clusters:`, written only when the
 * fleet has VM networks, so other ledgers stay byte for byte as they were). Per network: what its CUDN
 * was created with (the block OVN-K makes immutable), the split of each subnet, each cluster's slot (and
 * localnet VLAN), and each mobile VM's addresses. Entries are kept: a slot or an address is never moved
 * or handed to someone else by a later plan; a network, cluster or VM that leaves the fleet keeps its entry
 * (it may still run) until `migration-mesh reclaim --vm-network` releases it (releaseVmNetwork). Pure, no cdk8s import.
 */
import { z } from 'zod';
import { FleetProblem } from '../base/errors';
import { containsAddr, parseAddr, parseCidr } from '../base/ip';

const splitEntry = z.object({
  subnet: z.string(),
  infrastructure: z.array(z.string()).optional(),
  reserved: z.array(z.string()).optional(),
  mobile: z.string(),
  slices: z.array(z.string()),
}).strict();

const clusterSlot = z.object({
  /** The cluster's slice (absent for a localnet network with ipam disabled: nothing to split). */
  slot: z.number().int().min(0).optional(),
  /** Localnet: the VLAN the cluster's CUDN was created with. */
  vlan: z.number().int().optional(),
  /** The cluster holds its slot but does not serve the network (no CUDN there); absent: it serves it. */
  served: z.literal(false).optional(),
}).strict();

export const vmNetworkLedgerEntry = z.object({
  /** What the CUDN was created with (immutable upstream): `Layer2 Primary mtu=1400 gw=... ipam=...`, one line. */
  created: z.string(),
  subnets: z.array(splitEntry).optional(),
  clusters: z.record(z.string(), clusterSlot).optional(),
  /** Mobile VMs (`namespace/name`) and their addresses, one per family. */
  vms: z.record(z.string(), z.array(z.string())).optional(),
}).strict();

export const vmNetworksLedgerSchema = z.record(z.string(), vmNetworkLedgerEntry);

export type VmNetworkLedger = z.infer<typeof vmNetworkLedgerEntry>;
export type VmNetworksLedger = z.infer<typeof vmNetworksLedgerSchema>;

const byName = <T>(r: Readonly<Record<string, T>>): [string, T][] => Object.entries(r).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));

/** Deterministic form: networks, clusters and VMs sorted by name, keys in a fixed order, empty parts left out. */
export function normalizeVmNetworksLedger(l: VmNetworksLedger): VmNetworksLedger {
  const out: VmNetworksLedger = {};
  for (const [name, n] of byName(l)) {
    const e: VmNetworkLedger = { created: n.created };
    if (n.subnets?.length) {
      e.subnets = n.subnets.map((s) => ({
        subnet: s.subnet,
        ...(s.infrastructure?.length ? { infrastructure: [...s.infrastructure] } : {}),
        ...(s.reserved?.length ? { reserved: [...s.reserved] } : {}),
        mobile: s.mobile, slices: [...s.slices],
      }));
    }
    if (n.clusters && Object.keys(n.clusters).length) {
      const entry = (v: { slot?: number; vlan?: number; served?: false }) => ({
        ...(v.slot !== undefined ? { slot: v.slot } : {}), ...(v.vlan !== undefined ? { vlan: v.vlan } : {}),
        ...(v.served === false ? { served: false as const } : {}),
      });
      e.clusters = Object.fromEntries(byName(n.clusters).map(([c, v]) => [c, entry(v)]));
    }
    if (n.vms && Object.keys(n.vms).length) e.vms = Object.fromEntries(byName(n.vms).map(([k, v]) => [k, [...v]]));
    out[name] = e;
  }
  return out;
}

/** One recorded change of the VM networks' ledger (for `synth`'s change list and `--frozen`). */
export interface VmLedgerChange {
  readonly network: string;
  readonly field: string;
  readonly from?: string;
  readonly to?: string;
}

/** What differs between two VM-network ledgers, field by field. */
export function diffVmNetworksLedgers(before: VmNetworksLedger | undefined, after: VmNetworksLedger | undefined): VmLedgerChange[] {
  const a = before ?? {};
  const b = after ?? {};
  const out: VmLedgerChange[] = [];
  const text = (v: unknown): string | undefined => (v === undefined ? undefined : JSON.stringify(v));
  for (const n of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
    const x = a[n] ?? { created: '' };
    const y = b[n] ?? { created: '' };
    // a network added or released whole: that line, then every slot and mobile address it brings or gives up
    if (!a[n] || !b[n]) out.push({ network: n, field: '', from: a[n]?.created, to: b[n]?.created });
    if (a[n] && b[n] && x.created !== y.created) out.push({ network: n, field: 'created', from: x.created, to: y.created });
    if (a[n] && b[n] && text(x.subnets) !== text(y.subnets)) out.push({ network: n, field: 'subnets', from: text(x.subnets), to: text(y.subnets) });
    for (const c of [...new Set([...Object.keys(x.clusters ?? {}), ...Object.keys(y.clusters ?? {})])].sort()) {
      const f = text(x.clusters?.[c]);
      const t = text(y.clusters?.[c]);
      if (f !== t) out.push({ network: n, field: `clusters.${c}`, from: f, to: t });
    }
    for (const v of [...new Set([...Object.keys(x.vms ?? {}), ...Object.keys(y.vms ?? {})])].sort()) {
      const f = x.vms?.[v]?.join(',');
      const t = y.vms?.[v]?.join(',');
      if (f !== t) out.push({ network: n, field: `vms.${v}`, from: f, to: t });
    }
  }
  return out;
}

/**
 * What a Git merge or a hand edit can break in the VM networks' ledger, each refused with both owners
 * and the fix (never repaired silently): two clusters on one slot, a slot the split does not have, one
 * address given to two VMs, a VM address outside the mobile slice or not an address.
 */
export function vmLedgerProblems(l: VmNetworksLedger | undefined): FleetProblem[] {
  const out: FleetProblem[] = [];
  const fix = 'a Git merge of two branches that each planned, or a hand edit: delete the entry that should move from the ledger '
    + '(or take the ledger from one side of the merge) and run synth without --frozen; it plans that member anew';
  for (const [name, n] of Object.entries(l ?? {})) {
    const slotOwner = new Map<number, string>();
    const slices = n.subnets?.[0]?.slices.length;
    for (const [c, v] of Object.entries(n.clusters ?? {})) {
      const path = `(ledger) vmNetworks.${name}.clusters.${c}.slot`;
      if (v.slot === undefined) continue;
      const other = slotOwner.get(v.slot);
      if (other !== undefined) {
        out.push({ code: 'vmnet-ledger-conflict', path, message: `clusters ${other} and ${c} both hold slot ${v.slot} of VM network ${name}: their dynamic ranges would overlap`, fix });
      } else if (slices !== undefined && v.slot >= slices) {
        out.push({ code: 'vmnet-ledger-conflict', path, message: `cluster ${c} holds slot ${v.slot}, but the split of VM network ${name} has ${slices} slots`, fix });
      }
      slotOwner.set(v.slot, c);
    }
    const mobiles = (n.subnets ?? []).map((s) => parseCidr(s.mobile)).flatMap((r) => (r.ok ? [r.cidr] : []));
    const seen = new Map<string, string>();
    for (const [vm, addrs] of Object.entries(n.vms ?? {})) {
      const path = `(ledger) vmNetworks.${name}.vms.${vm}`;
      for (const t of addrs) {
        const a = parseAddr(t);
        if (!a) { out.push({ code: 'vmnet-ledger-conflict', path, message: `'${t}' is not an address`, fix }); continue; }
        if (!mobiles.some((m) => containsAddr(m, a))) {
          out.push({ code: 'vmnet-ledger-conflict', path, message: `${t} is outside the mobile slice of VM network ${name} (${n.subnets?.map((s) => s.mobile).join(', ')})`, fix });
        }
        const key = `${a.family}:${a.value}`;
        const prev = seen.get(key);
        if (prev) out.push({ code: 'vmnet-ledger-conflict', path, message: `${t} is given to both ${prev} and ${vm}`, fix });
        seen.set(key, vm);
      }
    }
  }
  return out;
}

/** What `reclaim --vm-network` releases: a whole network, one cluster's slot of it, or one mobile VM's addresses. */
export interface VmReclaimSelector {
  readonly network: string;
  readonly cluster?: string;
  readonly vm?: string;
}

/** What the fleet still declares (a network, its clusters, its mobile VMs): never released while declared. */
export interface VmDeclared {
  readonly networks: ReadonlySet<string>;
  readonly clusters: ReadonlySet<string>;
  readonly mobileVms: ReadonlyMap<string, ReadonlySet<string>>;
}

/**
 * Release what the ledger keeps for a network that left the fleet, a cluster that left it, or a mobile VM
 * that left `mobileVms` (the user says nothing runs on it any more): the only way a slot, a split or a
 * mobile address is given up. Refused (with why) when the fleet still declares it, or the ledger has none.
 */
export function releaseVmNetwork(l: VmNetworksLedger | undefined, sel: VmReclaimSelector, declared: VmDeclared):
  { ledger: VmNetworksLedger; released: string[] } | { refused: 'reclaim/no-match' | 'reclaim/still-declared'; message: string; fix: string } {
  const n = l?.[sel.network];
  const kept = Object.keys(l ?? {}).sort();
  if (!n) return { refused: 'reclaim/no-match', message: `the ledger keeps no VM network ${sel.network} (it keeps ${kept.length ? kept.join(', ') : 'none'})`, fix: 'name a network as the ledger\'s vmNetworks lists it (`migration-mesh plan` shows them)' };
  const rest = Object.fromEntries(Object.entries(l!).filter(([k]) => k !== sel.network));
  if (sel.vm !== undefined) {
    if (!n.vms?.[sel.vm]) return { refused: 'reclaim/no-match', message: `VM network ${sel.network} gives no mobile address to ${sel.vm} (it gives ${Object.keys(n.vms ?? {}).join(', ') || 'none'})`, fix: 'name the VM as namespace/name, as the ledger writes it' };
    if (declared.mobileVms.get(sel.network)?.has(sel.vm)) return { refused: 'reclaim/still-declared', message: `${sel.vm} is still in spec.vmNetworks[${sel.network}].mobileVms: its address is in use`, fix: `remove it from mobileVms first (once the VM is gone), then reclaim` };
    const vms = Object.fromEntries(Object.entries(n.vms).filter(([k]) => k !== sel.vm));
    return { ledger: { ...rest, [sel.network]: { ...n, vms } }, released: [`vmNetworks.${sel.network}.vms.${sel.vm}: ${n.vms[sel.vm].join(', ')}`] };
  }
  if (sel.cluster !== undefined) {
    const held = n.clusters?.[sel.cluster];
    if (!held) return { refused: 'reclaim/no-match', message: `VM network ${sel.network} holds nothing for cluster ${sel.cluster} (it holds ${Object.keys(n.clusters ?? {}).join(', ') || 'none'})`, fix: 'name a cluster as the ledger writes it' };
    if (declared.clusters.has(sel.cluster)) return { refused: 'reclaim/still-declared', message: `cluster ${sel.cluster} is still in spec.clusters: its slot of ${sel.network} is its own (served or not)`, fix: `remove the cluster from the fleet first (once its VMs are gone), then reclaim` };
    const clusters = Object.fromEntries(Object.entries(n.clusters!).filter(([k]) => k !== sel.cluster));
    return { ledger: { ...rest, [sel.network]: { ...n, clusters } }, released: [`vmNetworks.${sel.network}.clusters.${sel.cluster}: ${JSON.stringify(held)}`] };
  }
  if (declared.networks.has(sel.network)) return { refused: 'reclaim/still-declared', message: `VM network ${sel.network} is still in spec.vmNetworks: its split, slots and mobile addresses are in use`, fix: `remove it from the fleet (with spec.vmNetworkDeletions once every VM is off it) and synth, then reclaim` };
  return { ledger: rest, released: [`vmNetworks.${sel.network}: ${n.created}`] };
}

/** One VM-network ledger change as the address ledger's change list writes it (the shape of `LedgerChange`). */
export interface VmLedgerChangeLine { readonly cluster: string; readonly field: string; readonly from?: string; readonly to?: string }

/** A cluster's slot entry in words: the slot and its slices (the cluster's dynamic range), VLAN, served. */
function slotText(n: VmNetworkLedger | undefined, text: string | undefined): string | undefined {
  if (text === undefined) return undefined;
  const v = JSON.parse(text) as { slot?: number; vlan?: number; served?: false };
  const slices = v.slot !== undefined ? (n?.subnets ?? []).map((s) => s.slices[v.slot!]).filter((x) => x) : [];
  return [
    ...(v.slot !== undefined ? [`slot ${v.slot}${slices.length ? ` (slice ${slices.join(', ')})` : ''}`] : []),
    ...(v.vlan !== undefined ? [`vlan ${v.vlan}`] : []), ...(v.served === false ? ['not served'] : []),
  ].join(', ') || 'no slot';
}

/**
 * Every change of the VM networks' ledger part, as ledger changes: a cluster's slot (with its slice) under
 * the cluster, everything else (a network's created line, split, mobile VM addresses) under
 * `vmNetworks.<net>`. What synth's change list, `--frozen` and `diff` all read (one list, diffLedgers).
 */
export function vmLedgerChanges(before: VmNetworksLedger | undefined, after: VmNetworksLedger | undefined): VmLedgerChangeLine[] {
  return diffVmNetworksLedgers(before, after).map((c) => {
    const m = /^clusters\.(.+)$/.exec(c.field);
    if (m) return { cluster: m[1], field: `vmNetworks.${c.network}`, from: slotText(before?.[c.network], c.from), to: slotText(after?.[c.network], c.to) };
    return { cluster: `vmNetworks.${c.network}`, field: c.field || 'created', from: c.from, to: c.to };
  });
}
