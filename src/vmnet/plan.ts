/**
 * VM networks planned against the ledger (issue 40 items 1, 3, 5): `resolveVmNetworks(doc, ledger)` reads
 * `spec.vmNetworks`, splits each subnet (split.ts), keeps every slot, VLAN and mobile address the ledger
 * holds, gives new clusters the lowest free slot and new mobile VMs the lowest free mobile address, refuses
 * what the CRD makes immutable, and gives each cluster its `ClusterVmNetworks` (resolved.ts) for the
 * constructs. Pure, no cdk8s import.
 */
import { FleetProblem, ProblemCollector } from '../base/errors';
import { Addr, Cidr, Family, addr, containsAddr, formatAddr, formatCidr, parseAddr, parseCidr, usableHosts } from '../base/ip';
import type { Ledger } from '../addressing/ledger';
import type { FleetPlan } from '../addressing/fleet-plan';
import type { ResolvedFleet } from '../fleet/resolved';
import { FleetDocument } from '../fleet/schema';
import { VmNetworkDeletion, VmNetworkSpec } from './schema';
import { ParsedNetwork, parseNetwork } from './declaration';
import { fleetVmNetworkProblems, serves, vmNetworkWarnings } from './fleet-checks';
import { VmLedgerChange, VmNetworkLedger, VmNetworksLedger, diffVmNetworksLedgers, vmLedgerProblems } from './ledger';
import { ClusterVmNetworks, VmNetworkPlan, VmSubnetSplit } from './resolved';
import { Split, computeSplit, formatSplit } from './split';
import { clusterNetwork, mobileVmsOf } from './cluster-network';
import { CudnNetwork, createdLineOf, createdTokens, cudnNetworkOf, immutableFingerprint } from './cudn-spec';

/** What `resolveVmNetworks` gives. */
export interface VmNetworksResult {
  /** Per fleet cluster (every cluster, with an empty list where it serves none), only when there is no problem. */
  readonly perCluster: ReadonlyMap<string, ClusterVmNetworks>;
  /** Per network, fleet-wide (the split, the slots, the mobile VMs). */
  readonly networks: readonly VmNetworkPlan[];
  /** The ledger's next `vmNetworks` part (undefined when the fleet has no VM networks). */
  readonly ledger?: VmNetworksLedger;
  /** What changed against the previous ledger. */
  readonly changes: readonly VmLedgerChange[];
  readonly problems: readonly FleetProblem[];
  /** True and worth reading, not refusals (EVPN ingress, DNS). */
  readonly warnings: readonly FleetProblem[];
}

/** The network rendered for no cluster in particular: what every cluster's CUDN shares (the `created` line's source). */
function sharedNetwork(n: ParsedNetwork, splits: readonly Split[]): CudnNetwork {
  return cudnNetworkOf(clusterNetwork(new ProblemCollector(), n, '', { created: '' }, splits));
}

/** What the CUDN was created with, one line (ledger `created`): the recorded fields CUDN_FIELDS declares (cudn-spec.ts). */
const createdLine = (n: ParsedNetwork, splits: readonly Split[]): string => createdLineOf(sharedNetwork(n, splits));

const RECREATE = (net: string) => `the ClusterUserDefinedNetwork cannot change in place (its spec.network is immutable upstream): to change it, move or stop every VM on ${net}, `
  + `remove ${net} from the fleet (listed in spec.vmNetworkDeletions, which deletes its ClusterUserDefinedNetwork on every cluster) and synth, release it with \`migration-mesh reclaim FLEET --vm-network ${net}\`, and declare it again; `
  + `or give the changed network a new name and move the VMs over; otherwise restore the old value`;

/**
 * The ledger's `created` line against what the CUDN would now be created with, token by token: a field
 * immutable upstream that differs is refused, never emitted; a recorded mutable one (the EVPN VNI) is
 * updated. A token the declaration does not know (a newer ledger) counts as immutable.
 */
function immutable(p: ProblemCollector, n: ParsedNetwork, was: VmNetworkLedger, splits: readonly Split[]): boolean {
  const now = createdTokens(sharedNetwork(n, splits));
  const old = new Map(was.created.split(' ').filter((x) => x).map((x) => [x.slice(0, x.indexOf('=')), x.slice(x.indexOf('=') + 1)] as const));
  const nowBy = new Map(now.map((t) => [t.token, t]));
  const changed = [...new Set([...old.keys(), ...nowBy.keys()])].filter((k) => old.get(k) !== nowBy.get(k)?.value)
    .filter((k) => nowBy.get(k)?.upstream !== 'mutable');
  if (!changed.length) return true;
  const text = (m: Map<string, string>) => changed.filter((k) => m.has(k)).map((k) => `${k}=${m.get(k)}`).join(' ') || '(nothing)';
  const fleet = nowBy.get(changed[0])?.fleet ?? changed[0];
  p.add('vmnet-immutable-change', `${n.path}.${fleet}`, `network ${n.spec.name} was created with ${text(old)}; the fleet now says ${text(new Map(now.map((t) => [t.token, t.value])))}`,
    RECREATE(n.spec.name));
  return false;
}

/** A split as the ledger wrote it, read back. */
function ledgerSplit(e: NonNullable<VmNetworkLedger['subnets']>[number]): Split | undefined {
  const c = (t: string): Cidr | undefined => { const r = parseCidr(t); return r.ok ? r.cidr : undefined; };
  const all = [e.subnet, e.mobile, ...(e.infrastructure ?? []), ...(e.reserved ?? []), ...e.slices].map(c);
  if (all.some((x) => !x)) return undefined;
  const list = (l: readonly string[] | undefined) => (l ?? []).map((t) => c(t)!);
  return { subnet: c(e.subnet)!, mobile: c(e.mobile)!, infrastructure: list(e.infrastructure), reserved: list(e.reserved), slices: list(e.slices) };
}

/**
 * Immutability judged on the upstream object (issue 50 item 4): each cluster that holds a slot gets its CUDN
 * rendered from the previous ledger and from the next one, and only a difference in what CUDN_FIELDS makes
 * immutable is refused. Growing `slots` with the same slices renders every CUDN byte-identical, and goes.
 * Every kept mobile address must stay inside the (new) mobile slice.
 */
function renderedUnchanged(p: ProblemCollector, n: ParsedNetwork, was: VmNetworkLedger, next: VmNetworkLedger, splits: readonly Split[]): void {
  const oldSplits = (was.subnets ?? []).map(ledgerSplit);
  if (oldSplits.some((x) => !x)) return; // vmLedgerProblems names what does not parse
  const moved: string[] = [];
  for (const c of Object.keys(was.clusters ?? {})) {
    const slot = next.clusters?.[c]?.slot;
    if (slot !== undefined && splits.some((sp) => slot >= sp.slices.length)) {
      p.add('vmnet-immutable-change', `${n.path}.allocation.slots`, `cluster ${c} holds slot ${slot} of ${n.spec.name}; the fleet's allocation now has ${splits[0].slices.length} slots`, RECREATE(n.spec.name));
      return;
    }
    const before = cudnNetworkOf(clusterNetwork(new ProblemCollector(), n, c, was, oldSplits as Split[]));
    const after = cudnNetworkOf(clusterNetwork(new ProblemCollector(), n, c, next, splits));
    const block = (x: CudnNetwork) => JSON.stringify(x.layer2?.reservedSubnets ?? x.localnet?.excludeSubnets ?? []);
    if (immutableFingerprint(before) !== immutableFingerprint(after)) moved.push(`${c}: ${block(before)} -> ${block(after)}`);
  }
  if (moved.length) {
    p.add('vmnet-immutable-change', `${n.path}.allocation`, `the fleet's allocation (slots, slicePrefix, mobile, reserved) would change the ClusterUserDefinedNetwork ${n.spec.name} of ${moved.length} cluster${moved.length === 1 ? '' : 's'} (${n.topology === 'Layer2' ? 'reservedSubnets' : 'excludeSubnets'}: ${moved.slice(0, 2).join('; ')}${moved.length > 2 ? `; and ${moved.length - 2} more` : ''})`,
      RECREATE(n.spec.name));
    return;
  }
  const mobiles = splits.map((sp) => sp.mobile);
  const inMobile = (t: string) => { const a = parseAddr(t); return !!a && mobiles.some((m) => containsAddr(m, a)); };
  const outside = Object.entries(next.vms ?? {}).filter(([, addrs]) => !addrs.every(inMobile));
  if (outside.length) {
    p.add('vmnet-immutable-change', `${n.path}.allocation.mobile`, `mobile VMs ${outside.map(([vm, a]) => `${vm} (${a.join(', ')})`).join(', ')} of ${n.spec.name} would be outside the fleet's mobile slice ${mobiles.map(formatCidr).join(', ')}`,
      `keep allocation.mobile as it was, or release each address first (\`migration-mesh reclaim FLEET --vm-network ${n.spec.name} --vm NS/NAME\` once the VM left mobileVms); ${RECREATE(n.spec.name)}`);
  }
}

const compactSplit = (s: ReturnType<typeof formatSplit>): VmNetworkLedger['subnets'] extends (infer T)[] | undefined ? T : never => ({
  subnet: s.subnet, ...(s.infrastructure.length ? { infrastructure: s.infrastructure } : {}), ...(s.reserved.length ? { reserved: s.reserved } : {}),
  mobile: s.mobile, slices: s.slices,
});

/** Slots: the ledger's kept, pinned ones honoured, new clusters on the lowest free. */
type Slots = Record<string, { slot?: number; vlan?: number; served?: false }>;

function planSlots(p: ProblemCollector, n: ParsedNetwork, was: VmNetworkLedger | undefined, clusters: readonly string[]): Slots {
  const out: Slots = {};
  const used = new Set<number>();
  for (const [c, v] of Object.entries(was?.clusters ?? {})) {
    out[c] = { ...v };
    if (v.slot !== undefined) used.add(v.slot);
  }
  for (const c of clusters) {
    const pin = n.spec.clusters?.[c]?.slot;
    const vlan = n.topology === 'Localnet' && serves(n.spec, c) ? n.spec.clusters?.[c]?.vlan ?? n.spec.vlan : undefined;
    if (out[c]) {
      if (pin !== undefined && n.ipamEnabled && pin !== out[c].slot) {
        p.add('vmnet-immutable-change', `${n.path}.clusters.${c}.slot`, `cluster ${c} holds slot ${out[c].slot} of ${n.spec.name} in the ledger; moving it to slot ${pin} changes every cluster's reserved ranges`,
          `remove the pin or set it to ${out[c].slot}; ${RECREATE(n.spec.name)}`);
      }
      if (out[c].vlan !== undefined && vlan !== undefined && out[c].vlan !== vlan) {
        p.add('vmnet-immutable-change', `${n.path}.${n.spec.clusters?.[c]?.vlan !== undefined ? `clusters.${c}.vlan` : 'vlan'}`, `cluster ${c}'s ${n.spec.name} was created on VLAN ${out[c].vlan}; the fleet now says ${vlan} (the localnet block is immutable)`,
          RECREATE(n.spec.name));
      }
      if (out[c].vlan === undefined && vlan !== undefined) out[c] = { ...out[c], vlan };
      continue;
    }
    if (!n.ipamEnabled) { // nothing to split: only the VLAN the CUDN is created with
      if (vlan !== undefined) out[c] = { vlan };
      continue;
    }
    let slot = pin;
    if (slot !== undefined && (used.has(slot) || slot >= n.slots)) {
      const holder = Object.entries(out).find(([, v]) => v.slot === slot)?.[0];
      p.add('vmnet-slice-exhausted', `${n.path}.clusters.${c}.slot`, holder ? `slot ${slot} of ${n.spec.name} is cluster ${holder}'s` : `slot ${slot} is beyond the split's ${n.slots} slots`,
        'remove the pin (the lowest free slot is taken), or pin a free slot');
      continue;
    }
    if (slot === undefined) for (let i = 0; i < n.slots; i++) if (!used.has(i)) { slot = i; break; }
    if (slot === undefined) {
      p.add('vmnet-slice-exhausted', `${n.path}.allocation.slots`, `cluster ${c} needs a slot of ${n.spec.name}, and all ${n.slots} are taken (${Object.keys(out).sort().join(', ')}); the split cannot grow in place`,
        `free a slot of a cluster that left the fleet (\`migration-mesh reclaim FLEET --vm-network ${n.spec.name} --cluster NAME\` once its VMs are gone), or set clusters.${c}.served: false; ${RECREATE(n.spec.name)}`);
      continue;
    }
    used.add(slot);
    out[c] = { slot, ...(vlan !== undefined ? { vlan } : {}) };
  }
  // the ledger says who serves: a cluster that stops serving is seen (and refused unless deletions allow it)
  for (const c of clusters) {
    if (!out[c]) continue;
    const { served: _, ...rest } = out[c];
    out[c] = serves(n.spec, c) ? rest : { ...rest, served: false };
  }
  return out;
}

/** Mobile VM addresses: the ledger's kept, new VMs on the lowest free address of each mobile slice. */
function planVms(p: ProblemCollector, n: ParsedNetwork, was: VmNetworkLedger | undefined, splits: readonly Split[]): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  const taken = new Set<string>();
  for (const [vm, list] of Object.entries(was?.vms ?? {})) {
    out[vm] = [...list];
    for (const t of list) { const a = parseAddr(t); if (a) taken.add(`${a.family}:${a.value}`); }
  }
  const gateways = new Set(n.gateways.map((g) => `${g.family}:${g.value}`));
  for (const [i, ref] of (n.spec.mobileVms ?? []).entries()) {
    if (out[ref]) continue;
    const addrs: string[] = [];
    for (const s of splits) {
      const hosts = usableHosts(s.subnet);
      const lo = s.mobile.start > hosts.start ? s.mobile.start : hosts.start;
      const hi = s.mobile.end < hosts.end ? s.mobile.end : hosts.end;
      let got: Addr | undefined;
      for (let v = lo; v <= hi; v++) {
        const k = `${s.subnet.family}:${v}`;
        if (!taken.has(k) && !gateways.has(k) && !s.reserved.some((r) => containsAddr(r, addr(s.subnet.family, v)))) { got = addr(s.subnet.family, v); break; }
      }
      if (!got) {
        p.add('vmnet-mobile-exhausted', `${n.path}.mobileVms[${i}]`, `the mobile slice ${formatCidr(s.mobile)} of ${n.spec.name} has no free address left for ${ref}`,
          `release the address of a VM that is gone (\`migration-mesh reclaim FLEET --vm-network ${n.spec.name} --vm NS/NAME\` once it left mobileVms), or declare a larger allocation.mobile when you recreate the network`);
        break;
      }
      taken.add(`${got.family}:${got.value}`);
      addrs.push(formatAddr(got));
    }
    if (addrs.length === splits.length) out[ref] = addrs;
  }
  return out;
}

/** The splits of a network's subnets, or the problems. */
function splitsOf(p: ProblemCollector, n: ParsedNetwork): Split[] | undefined {
  const out: Split[] = [];
  for (const sn of n.subnets) {
    const f: Family = sn.family;
    const r = computeSplit({
      subnet: sn, infrastructure: n.infrastructure.filter((c) => c.family === f), reserved: n.reserved.filter((c) => c.family === f),
      slots: n.slots, slicePrefix: n.slicePrefix.get(f)!, mobile: n.mobile.get(f),
    });
    if (!r.split) {
      p.add('vmnet-slice-exhausted', `${n.path}.allocation`, `${formatCidr(sn)} has ${r.found} free /${n.slicePrefix.get(f)} blocks outside the infrastructure, reserved ranges and mobile slice; ${n.slots} slots need ${n.slots}`,
        'lower allocation.slots, use a longer allocation.slicePrefix, or move the infrastructure, reserved ranges or mobile slice together');
      return undefined;
    }
    // a slice with no usable host (a /32 of a /29: the subnet's network or broadcast address) is no slice
    const hosts = usableHosts(sn);
    const empty = r.split.slices.findIndex((c) => c.end < hosts.start || c.start > hosts.end);
    if (empty >= 0) {
      p.add('vmnet-slice-prefix', `${n.path}.allocation`, `slot ${empty}'s slice ${formatCidr(r.split.slices[empty])} of ${formatCidr(sn)} holds no address a VM can have (the subnet's network or broadcast address)`,
        'use a larger subnet, fewer slots or a shorter allocation.slicePrefix');
      return undefined;
    }
    out.push(r.split);
  }
  if (n.mobile.size && [...n.mobile.keys()].some((f) => !n.subnets.some((s) => s.family === f))) {
    p.add('vmnet-outside-subnet', `${n.path}.allocation.mobile`, 'a mobile slice of a family the network has no subnet of', 'give one mobile CIDR per subnet family');
    return undefined;
  }
  return out;
}

type Planned = { entry: VmNetworkLedger; splits: Split[] } | undefined;

function planNetwork(p: ProblemCollector, n: ParsedNetwork, was: VmNetworkLedger | undefined, clusters: readonly string[]): Planned {
  const before = p.problems.length;
  const splits = n.ipamEnabled ? splitsOf(p, n) : [];
  if (!splits) return undefined;
  if (was && !immutable(p, n, was, splits)) return undefined;
  const slots = planSlots(p, n, was, clusters);
  const vms = n.topology === 'Layer2' ? planVms(p, n, was, splits) : {};
  if (p.problems.length > before) return undefined;
  const entry: VmNetworkLedger = {
    created: createdLine(n, splits),
    ...(splits.length ? { subnets: splits.map(formatSplit).map(compactSplit) } : {}),
    ...(Object.keys(slots).length ? { clusters: slots } : {}),
    ...(Object.keys(vms).length ? { vms } : {}),
  };
  if (was) renderedUnchanged(p, n, was, entry, splits);
  if (p.problems.length > before) return undefined;
  return { entry, splits };
}

const servedIn = (e: VmNetworkLedger | undefined): string[] => Object.entries(e?.clusters ?? {}).filter(([, v]) => v.served !== false).map(([c]) => c).sort();

/**
 * An edit that would delete what VMs may be running on (issue 50 item 2): a network the ledger holds gone
 * from the fleet, or a cluster that served a network set to `served: false`, takes its CUDN (and NNCP and
 * guards) out of the output, and the GitOps engine would delete them. Refused unless
 * `spec.vmNetworkDeletions` names it.
 */
function wouldDelete(input: VmNetworksInput, prev: VmNetworksLedger | undefined, parsed: readonly (ParsedNetwork | undefined)[]): FleetProblem[] {
  const out: FleetProblem[] = [];
  const allowed = (net: string, c?: string) => (input.deletions ?? [])
    .some((d) => d.network === net && (!d.clusters || (c !== undefined && d.clusters.includes(c))));
  const declared = new Set(input.specs.map((s) => s.name));
  for (const [net, e] of Object.entries(prev ?? {})) {
    const on = servedIn(e).filter((c) => input.clusters.includes(c));
    if (declared.has(net) || !on.length || allowed(net)) continue;
    out.push({
      code: 'vmnet-would-delete', path: 'spec.vmNetworks',
      message: `VM network ${net} is gone from spec.vmNetworks, but ${on.join(', ')} serve it (the ledger keeps its slots${Object.keys(e.vms ?? {}).length ? ` and mobile VMs ${Object.keys(e.vms!).join(', ')}` : ''}): synth would delete its ClusterUserDefinedNetwork there, under running VMs`,
      fix: `declare it again (it comes back on the same slices); or, once every VM is off it, add {network: ${net}} to spec.vmNetworkDeletions, synth, and release it with \`migration-mesh reclaim FLEET --vm-network ${net}\``,
    });
  }
  for (const n of parsed) {
    if (!n) continue;
    const was = new Set(servedIn(prev?.[n.spec.name]));
    const stops = input.clusters.filter((c) => was.has(c) && !serves(n.spec, c) && !allowed(n.spec.name, c));
    for (const c of stops) {
      out.push({
        code: 'vmnet-would-delete', path: `${n.path}.clusters.${c}.served`,
        message: `cluster ${c} serves VM network ${n.spec.name}; served: false would delete its ClusterUserDefinedNetwork there${n.topology === 'Layer2' ? ' (and, with the last primary network, the moved-VM and served-namespace guards)' : ' (and its NodeNetworkConfigurationPolicy with the last network on it)'}, under running VMs`,
        fix: `remove served: false; or, once every VM on ${c} is off ${n.spec.name}, add {network: ${n.spec.name}, clusters: [${c}]} to spec.vmNetworkDeletions (the cluster keeps its slot)`,
      });
    }
  }
  return out;
}

/** What planning reads of a fleet's VM networks (ResolvedFleet.vmNetworks carries it from validation). */
export interface VmNetworksInput {
  /** `metadata.name` (a ledger of another fleet is not read). */
  readonly fleet: string;
  /** Every fleet cluster, in `spec.clusters` order. */
  readonly clusters: readonly string[];
  readonly specs: readonly VmNetworkSpec[];
  /** `spec.vmNetworkDeletions`. @default - none */
  readonly deletions?: readonly VmNetworkDeletion[];
}

/** The validation stage: every problem of `spec.vmNetworks` that needs no ledger, and the warnings. */
export function vmNetworkDocProblems(doc: FleetDocument): { problems: FleetProblem[]; warnings: FleetProblem[] } {
  if (!doc.spec.vmNetworks?.length) return { problems: [], warnings: [] };
  const p = new ProblemCollector();
  fleetVmNetworkProblems(p, doc);
  doc.spec.vmNetworks.forEach((s, i) => parseNetwork(p, s, i));
  return { problems: [...p.problems], warnings: vmNetworkWarnings(doc) };
}

/**
 * The planning stage: each network's split, slots and mobile addresses against the previous ledger's
 * `vmNetworks`, and each cluster's networks. Problems of the declaration itself are reported by
 * `vmNetworkDocProblems`; here a network that does not parse is left out.
 */
function planVmNetworks(input: VmNetworksInput, prev?: VmNetworksLedger): Omit<VmNetworksResult, 'warnings'> {
  // only the networks still declared are checked: one that left the fleet is kept as it is
  const declared = new Set(input.specs.map((s) => s.name));
  const inconsistent = vmLedgerProblems(Object.fromEntries(Object.entries(prev ?? {}).filter(([n]) => declared.has(n))));
  if (inconsistent.length) return { perCluster: new Map(), networks: [], changes: [], problems: inconsistent };
  const p = new ProblemCollector();
  const parsed = input.specs.map((s, i) => parseNetwork(new ProblemCollector(), s, i));
  const next: VmNetworksLedger = {};
  const networks: VmNetworkPlan[] = [];
  const splitsBy = new Map<string, Split[]>();
  for (const n of parsed) {
    if (!n) continue;
    const planned = planNetwork(p, n, prev?.[n.spec.name], input.clusters);
    if (!planned) continue;
    next[n.spec.name] = planned.entry;
    splitsBy.set(n.spec.name, planned.splits);
    networks.push(networkPlan(n, planned.entry, planned.splits, input.clusters));
  }
  // a network that leaves the fleet keeps what the ledger gave it (split, slots, mobile addresses), exactly
  // as a cluster that leaves keeps its slot: declared again, it comes back on the same slices. Only
  // `migration-mesh reclaim --vm-network` releases it (releaseVmNetwork, ledger.ts).
  for (const [name, entry] of Object.entries(prev ?? {})) if (!declared.has(name)) next[name] = entry;
  p.addAll(wouldDelete(input, prev, parsed));
  const perCluster = new Map<string, ClusterVmNetworks>();
  for (const c of input.clusters) {
    const list = parsed.filter((n): n is ParsedNetwork => !!n && next[n.spec.name] !== undefined && serves(n.spec, c))
      .map((n) => clusterNetwork(p, n, c, next[n.spec.name], splitsBy.get(n.spec.name)!, input.specs));
    perCluster.set(c, { cluster: c, networks: list });
  }
  const nextLedger = Object.keys(next).length || input.specs.length ? next : undefined;
  return { perCluster: p.empty ? perCluster : new Map(), networks, ledger: nextLedger, changes: diffVmNetworksLedgers(prev, nextLedger), problems: p.problems };
}

/**
 * Plan the fleet's VM networks against the ledger: validation and planning together, for callers that
 * hold the document (the constructs, tests). Every problem at once; `perCluster` only when there is none.
 * Fleets without `spec.vmNetworks` get empty lists and no ledger part.
 */
export function resolveVmNetworks(doc: FleetDocument, ledger?: Ledger): VmNetworksResult {
  const checked = vmNetworkDocProblems(doc);
  const prev = ledger && ledger.fleet === doc.metadata.name ? ledger.vmNetworks : undefined;
  const input = {
    fleet: doc.metadata.name, clusters: doc.spec.clusters.map((c) => c.name), specs: doc.spec.vmNetworks ?? [], deletions: doc.spec.vmNetworkDeletions ?? [],
  };
  const planned = planVmNetworks(input, prev);
  const problems = [...checked.problems, ...planned.problems];
  return { ...planned, perCluster: problems.length ? new Map() : planned.perCluster, problems, warnings: checked.warnings };
}

/** Each mobile slice: how many addresses the ledger gives, of how many usable ones. */
function mobileUse(entry: VmNetworkLedger, splits: readonly Split[]): VmNetworkPlan['mobileUse'] {
  return splits.map((s) => {
    const hosts = usableHosts(s.subnet);
    const lo = s.mobile.start > hosts.start ? s.mobile.start : hosts.start;
    const hi = s.mobile.end < hosts.end ? s.mobile.end : hosts.end;
    const given = Object.values(entry.vms ?? {}).flat().filter((t) => { const a = parseAddr(t); return !!a && containsAddr(s.mobile, a); }).length;
    return { slice: formatCidr(s.mobile), given, capacity: String(hi >= lo ? hi - lo + 1n : 0n) };
  });
}

function networkPlan(n: ParsedNetwork, entry: VmNetworkLedger, splits: readonly Split[], clusters: readonly string[]): VmNetworkPlan {
  const slots = Object.fromEntries(Object.entries(entry.clusters ?? {}).filter(([, v]) => v.slot !== undefined).map(([c, v]) => [c, v.slot!]));
  const mobileVms = mobileVmsOf(n, entry);
  const splitTexts: VmSubnetSplit[] = splits.map((s) => formatSplit(s));
  return {
    name: n.spec.name, index: n.index, topology: n.topology, role: n.topology === 'Layer2' ? 'Primary' : 'Secondary', reach: n.spec.reach?.type ?? 'none',
    splits: splitTexts, slots, servedOn: clusters.filter((c) => serves(n.spec, c)),
    spareSlots: n.ipamEnabled ? n.slots - Object.keys(slots).length : 0, mobileVms, mobileUse: mobileUse(entry, splits), primaryInterface: n.spec.primaryInterface ?? 'default',
    keepsAddress: n.topology === 'Layer2' ? 'pinned' : n.ipamEnabled ? 'no' : 'guest',
  };
}

/**
 * checkPlan's step (src/addressing/assemble.ts): the VM networks of a resolved fleet against the previous
 * ledger, as the parts the fleet plan and the next ledger take (both empty for a fleet without VM networks
 * and a ledger without them, so those ledgers stay byte for byte); the changes are diffLedgers' (addressing/ledger.ts).
 */
export function planFleetVmNetworks(fleet: ResolvedFleet, prev: Ledger): {
  problems: readonly FleetProblem[];
  ledger: { vmNetworks?: VmNetworksLedger };
  plan: { vmNetworks?: NonNullable<FleetPlan['vmNetworks']> };
} {
  if (!fleet.vmNetworks && !prev.vmNetworks) return { problems: [], ledger: {}, plan: {} };
  const clusters = fleet.vmNetworks?.clusterOrder ?? fleet.clusters.map((c) => c.name);
  const input = { fleet: fleet.name, clusters, specs: fleet.vmNetworks?.specs ?? [], deletions: fleet.vmNetworks?.deletions ?? [] };
  const vm = planVmNetworks(input, prev.vmNetworks);
  return {
    problems: vm.problems,
    ledger: vm.ledger ? { vmNetworks: vm.ledger } : {},
    plan: vm.ledger ? { vmNetworks: { perCluster: vm.perCluster, networks: vm.networks, warnings: fleet.vmNetworks?.warnings ?? [] } } : {},
  };
}
