/**
 * The address ledger: planned addresses recorded beside the fleet file, committed like a lockfile.
 * Existing entries are kept, new members take the lowest free address, removed members free theirs.
 * Pure data + (de)serialization; the allocation itself is in allocate.ts.
 */
import { z } from 'zod';
import { yamlText } from '../base/yaml-text';
import { MigrationMeshError } from '../base/errors';
import { parseYamlInput } from '../base/yaml-input';
import { FLEET_API_VERSION } from '../fleet/schema';
import { Interval, formatInterval, parsePoolItem, subtractIntervals } from '../base/ip';
import { normalizeVmNetworksLedger, vmLedgerChanges, vmNetworksLedgerSchema } from '../vmnet/ledger';

const LEDGER_KIND = 'AddressLedger';

const gatewayEntry = z.object({
  /** The replica's static address on the in-cluster migration network. */
  inCluster: z.string(),
  /** The replica's static address on the shared cross-cluster network. */
  crossCluster: z.string(),
}).strict();

const clusterEntry = z.object({
  /** Carved in-cluster migration CIDR (absent when the fleet gives the CIDR). */
  migrationCidr: z.string().optional(),
  /** Gateway replicas, by replica index. */
  gateways: z.array(gatewayEntry).optional(),
  /** The in-cluster address the gateway replicas hand between them (failover `vip`). */
  gatewayVip: z.string().optional(),
  /** Shared-network addresses held by the cluster's whereabouts range (direct and native modes). */
  crossClusterAddresses: z.array(z.string()).optional(),
  /** Trust agents of a cluster without a gateway (direct, native, Harvester), by replica: their shared-network address. */
  trustAgents: z.array(z.object({ crossCluster: z.string() }).strict()).optional(),
}).strict();

/**
 * An address that left the plan (a removed cluster's CIDR, shared addresses, VIP; a replica scaled
 * away): quarantined, never handed to anyone, until `migration-mesh reclaim` says its old holder is
 * gone (Argo CD and Flux may keep the old gateways running after their objects leave Git).
 */
const releasedEntry = z.object({
  /** The address, range or CIDR, as the ledger held it. */
  address: z.string(),
  /** The cluster that held it. */
  cluster: z.string(),
  /** The ledger field it was in (`migrationCidr`, `gateways[0].crossCluster`, ...). */
  field: z.string(),
}).strict();

export const ledgerSchema = z.object({
  apiVersion: z.literal(FLEET_API_VERSION),
  kind: z.literal(LEDGER_KIND),
  fleet: z.string(),
  clusters: z.record(z.string(), clusterEntry),
  /** Quarantined addresses (see releasedEntry). @default - none */
  released: z.array(releasedEntry).optional(),
  /** VM networks (issue 40, src/vmnet/ledger.ts): splits, slots, mobile VM addresses. @default - none (written only when the fleet has VM networks) */
  vmNetworks: vmNetworksLedgerSchema.optional(),
}).strict();

export type Ledger = z.infer<typeof ledgerSchema>;
export type LedgerCluster = z.infer<typeof clusterEntry>;
export type ReleasedAddress = z.infer<typeof releasedEntry>;

export function emptyLedger(fleet: string): Ledger {
  return { apiVersion: FLEET_API_VERSION, kind: LEDGER_KIND, fleet, clusters: {} };
}

export function parseLedger(text: string, source = 'ledger'): Ledger {
  const r = ledgerSchema.safeParse(parseYamlInput(text, source, 'ledger-syntax', 'ledger', source));
  if (!r.success) {
    const fix = 'restore it from git, or delete it to plan from scratch (addresses may then move)';
    const message = `${source}: ledger is malformed:\n${z.prettifyError(r.error)}`;
    throw new MigrationMeshError(`${message}\nfix: ${fix}`, [{ code: 'ledger-malformed', path: source, message, fix }]);
  }
  return r.data;
}

/** Deterministic YAML: clusters sorted by name, keys in a fixed order. */
export function serializeLedger(l: Ledger): string {
  const clusters: Record<string, LedgerCluster> = {};
  for (const name of Object.keys(l.clusters).sort()) {
    const c = l.clusters[name];
    const out: LedgerCluster = {};
    if (c.migrationCidr) out.migrationCidr = c.migrationCidr;
    if (c.gateways && c.gateways.length) out.gateways = c.gateways.map((g) => ({ inCluster: g.inCluster, crossCluster: g.crossCluster }));
    if (c.gatewayVip) out.gatewayVip = c.gatewayVip;
    if (c.crossClusterAddresses && c.crossClusterAddresses.length) out.crossClusterAddresses = [...c.crossClusterAddresses];
    if (c.trustAgents && c.trustAgents.length) out.trustAgents = c.trustAgents.map((t) => ({ crossCluster: t.crossCluster }));
    clusters[name] = out;
  }
  const header = '# Migration Mesh address ledger: commit it beside the fleet file. Planned addresses are kept\n'
    + '# across changes; new members take the lowest free address; released addresses stay quarantined\n'
    + '# until `migration-mesh reclaim`. Do not edit by hand.\n';
  const released = sortReleased(l.released ?? []);
  const vm = l.vmNetworks && Object.keys(l.vmNetworks).length ? { vmNetworks: normalizeVmNetworksLedger(l.vmNetworks) } : {};
  const doc = { apiVersion: l.apiVersion, kind: l.kind, fleet: l.fleet, clusters, ...(released.length ? { released } : {}), ...vm };
  // the `yaml` package's bytes (lineWidth 0, block style), several times faster: 25 ms of a 100-cluster synth before
  return header + yamlText(doc);
}

/** One recorded change between two ledgers. */
export interface LedgerChange {
  readonly cluster: string;
  readonly field: string;
  readonly from?: string;
  readonly to?: string;
}

export function diffLedgers(before: Ledger, after: Ledger): LedgerChange[] {
  const out: LedgerChange[] = [];
  const names = [...new Set([...Object.keys(before.clusters), ...Object.keys(after.clusters)])].sort();
  for (const n of names) {
    const a = before.clusters[n] ?? {};
    const b = after.clusters[n] ?? {};
    if (a.migrationCidr !== b.migrationCidr) out.push({ cluster: n, field: 'migrationCidr', from: a.migrationCidr, to: b.migrationCidr });
    const ga = a.gateways ?? [];
    const gb = b.gateways ?? [];
    for (let i = 0; i < Math.max(ga.length, gb.length); i++) {
      if (ga[i]?.inCluster !== gb[i]?.inCluster) out.push({ cluster: n, field: `gateways[${i}].inCluster`, from: ga[i]?.inCluster, to: gb[i]?.inCluster });
      if (ga[i]?.crossCluster !== gb[i]?.crossCluster) out.push({ cluster: n, field: `gateways[${i}].crossCluster`, from: ga[i]?.crossCluster, to: gb[i]?.crossCluster });
    }
    if (a.gatewayVip !== b.gatewayVip) out.push({ cluster: n, field: 'gatewayVip', from: a.gatewayVip, to: b.gatewayVip });
    const ca = (a.crossClusterAddresses ?? []).join(',');
    const cb = (b.crossClusterAddresses ?? []).join(',');
    if (ca !== cb) out.push({ cluster: n, field: 'crossClusterAddresses', from: ca || undefined, to: cb || undefined });
    const ta = a.trustAgents ?? [];
    const tb = b.trustAgents ?? [];
    for (let i = 0; i < Math.max(ta.length, tb.length); i++) {
      if (ta[i]?.crossCluster !== tb[i]?.crossCluster) out.push({ cluster: n, field: `trustAgents[${i}].crossCluster`, from: ta[i]?.crossCluster, to: tb[i]?.crossCluster });
    }
  }
  // the VM networks' part (slots, splits, mobile addresses): synth, --frozen and diff read this one list
  return [...out, ...vmLedgerChanges(before.vmNetworks, after.vmNetworks)];
}

/**
 * One change, with why it happens: a new entry (a member the ledger did not hold), a released one
 * (quarantined: given to no one until `migration-mesh reclaim`, never "freed"), or a move (the fleet no
 * longer allows the old address for it: pool, exclusions, router, CIDR or supernet changed), the reason
 * shown with `why`.
 */
export function formatLedgerChange(c: LedgerChange, why = false): string {
  const head = `${c.cluster}.${c.field}`;
  if (c.from === undefined) return `${head}: + ${c.to}${why ? ' (new: a member the ledger did not hold yet)' : ''}`;
  if (c.to === undefined) return `${head}: - ${c.from} (quarantined: given to no one until \`migration-mesh reclaim\`)`;
  const reason = c.field === 'crossClusterAddresses'
    ? ' (the slice changed: its member count, or the pool, exclusions or router changed)'
    : ' (moved: the fleet no longer allows the old address for it: its pool, exclusions, router, CIDR or supernet changed)';
  return `${head}: ${c.from} -> ${c.to}${why ? reason : ''}`;
}

// ---- quarantine of released addresses (issue #12) ------------------------------------------------

const releasedKey = (r: ReleasedAddress) => `${r.cluster}\u0000${r.field}\u0000${r.address}`;

/** Deterministic order, duplicates once. */
function sortReleased(list: readonly ReleasedAddress[]): ReleasedAddress[] {
  const unique = [...new Map(list.map((r) => [releasedKey(r), { address: r.address, cluster: r.cluster, field: r.field }])).values()];
  return unique.sort((a, b) => (releasedKey(a) < releasedKey(b) ? -1 : releasedKey(a) > releasedKey(b) ? 1 : 0));
}

/** Every address a ledger cluster entry holds, with its field. */
export function addressesOf(name: string, c: LedgerCluster): ReleasedAddress[] {
  const out: ReleasedAddress[] = [];
  if (c.migrationCidr) out.push({ cluster: name, field: 'migrationCidr', address: c.migrationCidr });
  (c.gateways ?? []).forEach((g, i) => {
    out.push({ cluster: name, field: `gateways[${i}].inCluster`, address: g.inCluster });
    out.push({ cluster: name, field: `gateways[${i}].crossCluster`, address: g.crossCluster });
  });
  if (c.gatewayVip) out.push({ cluster: name, field: 'gatewayVip', address: c.gatewayVip });
  for (const a of c.crossClusterAddresses ?? []) out.push({ cluster: name, field: 'crossClusterAddresses', address: a });
  (c.trustAgents ?? []).forEach((t, i) => out.push({ cluster: name, field: `trustAgents[${i}].crossCluster`, address: t.crossCluster }));
  return out;
}

/**
 * The quarantine after a plan: what was quarantined before, plus every address the previous ledger held
 * that the next one holds nowhere (a removed cluster, a shrunk gateway set or slice), compared as
 * address intervals (a slice written differently but holding the same addresses releases nothing).
 * Quarantined addresses leave the quarantine only through `reclaimReleased`.
 */
export function nextQuarantine(prev: Ledger, next: Record<string, LedgerCluster>): ReleasedAddress[] {
  // CIDRs against CIDRs, addresses against addresses (a gateway address inside a kept CIDR is not kept)
  const isCidr = (a: ReleasedAddress) => a.field === 'migrationCidr';
  const nextAll = Object.entries(next).flatMap(([n, c]) => addressesOf(n, c));
  const heldOf = (cidr: boolean) => nextAll.filter((a) => isCidr(a) === cidr).flatMap((a) => intervalOf(a.address));
  const held = { cidr: heldOf(true), addr: heldOf(false) };
  const released: ReleasedAddress[] = [];
  for (const a of Object.entries(prev.clusters).flatMap(([n, c]) => addressesOf(n, c))) {
    const iv = intervalOf(a.address);
    if (!iv.length) continue;
    const gone = subtractIntervals(iv, isCidr(a) ? held.cidr : held.addr);
    // a CIDR or address released whole keeps its written form; part of a range is written as ranges
    if (gone.length === 1 && gone[0].start === iv[0].start && gone[0].end === iv[0].end) released.push(a);
    else for (const g of gone) released.push({ ...a, address: formatInterval(g) });
  }
  return sortReleased([...(prev.released ?? []), ...released]);
}

/** The interval an address, range or CIDR of the ledger covers (none when unparsable). */
export function intervalOf(text: string): Interval[] {
  const r = parsePoolItem(text);
  return r.ok ? [r.interval] : [];
}

/** Which released addresses to reclaim: all, those of some clusters, or some addresses. */
export interface ReclaimSelector {
  readonly all?: boolean;
  readonly clusters?: readonly string[];
  readonly addresses?: readonly string[];
}

/** Lift the quarantine of the selected addresses (the user says their old holders are gone). */
export function reclaimReleased(l: Ledger, sel: ReclaimSelector): { ledger: Ledger; reclaimed: ReleasedAddress[] } {
  const pick = (r: ReleasedAddress) => !!sel.all || (sel.clusters ?? []).includes(r.cluster) || (sel.addresses ?? []).includes(r.address);
  const list = l.released ?? [];
  const reclaimed = list.filter(pick);
  const kept = list.filter((r) => !pick(r));
  return { ledger: { ...l, released: kept.length ? kept : undefined }, reclaimed };
}
