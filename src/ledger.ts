/**
 * The address ledger: planned addresses recorded beside the fleet file, committed like a lockfile.
 * Existing entries are kept, new members take the lowest free address, removed members free theirs.
 * Pure data + (de)serialization; the allocation itself is in planner.ts.
 */
import { z } from 'zod';
import * as YAML from 'yaml';
import { MigrationMeshError } from './errors';
import { FLEET_API_VERSION } from './fleet-schema';

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
}).strict();

const ledgerSchema = z.object({
  apiVersion: z.literal(FLEET_API_VERSION),
  kind: z.literal(LEDGER_KIND),
  fleet: z.string(),
  clusters: z.record(z.string(), clusterEntry),
}).strict();

export type Ledger = z.infer<typeof ledgerSchema>;
export type LedgerCluster = z.infer<typeof clusterEntry>;

export function emptyLedger(fleet: string): Ledger {
  return { apiVersion: FLEET_API_VERSION, kind: LEDGER_KIND, fleet, clusters: {} };
}

export function parseLedger(text: string, source = 'ledger'): Ledger {
  const doc = YAML.parseDocument(text, { prettyErrors: true });
  if (doc.errors.length > 0) {
    const e = doc.errors[0];
    const pos = e.linePos?.[0];
    const message = `${source}${pos ? `:${pos.line}:${pos.col}` : ''}: ledger is not valid YAML: ${e.message.split('\n')[0]}`;
    throw new MigrationMeshError(message, [{ code: 'ledger-syntax', path: source, message }]);
  }
  const r = ledgerSchema.safeParse(doc.toJS());
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
    clusters[name] = out;
  }
  const header = '# Migration Mesh address ledger: commit it beside the fleet file. Planned addresses are kept\n'
    + '# across changes; new members take the lowest free address. Do not edit by hand.\n';
  return header + YAML.stringify({ apiVersion: l.apiVersion, kind: l.kind, fleet: l.fleet, clusters }, { lineWidth: 0, flow: false });
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
  }
  return out;
}

export function formatLedgerChange(c: LedgerChange): string {
  if (c.from === undefined) return `${c.cluster}.${c.field}: + ${c.to}`;
  if (c.to === undefined) return `${c.cluster}.${c.field}: - ${c.from} (freed)`;
  return `${c.cluster}.${c.field}: ${c.from} -> ${c.to}`;
}
