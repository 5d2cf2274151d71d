/**
 * What the planner must never do silently with the ledger (issue #12), kept apart from the allocation
 * in planner.ts: plan a renamed fleet from scratch, hand out a quarantined address, or move an address
 * onto the router of the shared network. Pure, no cdk8s import.
 */
import { FleetProblem } from '../base/errors';
import { Family, Interval, parseAddr } from '../base/ip';
import { Ledger, addressesOf, intervalOf } from './ledger';

/**
 * The ledger to plan against. A ledger of another fleet name is refused (planning from scratch would
 * renumber every cluster), unless the caller carries it over explicitly with `renamedFrom`.
 */
export function ledgerForFleet(fleetName: string, ledger: Ledger | undefined, renamedFrom?: string): { ledger?: Ledger; problems: FleetProblem[] } {
  if (!ledger || ledger.fleet === fleetName) {
    if (renamedFrom !== undefined && ledger?.fleet !== renamedFrom && ledger) {
      return { problems: [{ code: 'ledger-renamed', path: 'metadata.name', message: `--renamed-from '${renamedFrom}' was given, but the ledger already belongs to '${fleetName}'`, fix: 'drop --renamed-from' }] };
    }
    return { ledger, problems: [] };
  }
  if (renamedFrom === ledger.fleet) return { ledger: { ...ledger, fleet: fleetName }, problems: [] };
  return {
    problems: [{
      code: 'ledger-other-fleet',
      path: 'metadata.name',
      message: `the ledger belongs to fleet '${ledger.fleet}', this fleet is '${fleetName}'; planning without it would give every cluster new addresses`,
      fix: `to rename the fleet and keep every address, run with --renamed-from ${ledger.fleet} once (library: renamedFrom: '${ledger.fleet}'); `
        + `otherwise change metadata.name back to '${ledger.fleet}', or point --ledger at this fleet's own ledger`,
    }],
  };
}

/** Quarantined addresses by use, ready for the planner's taken/used sets. */
export interface Quarantine {
  /** Released in-cluster CIDRs (never carved again). */
  readonly cidrs: Interval[];
  /** `family:value` keys of released shared-network addresses. */
  readonly crossKeys: Set<string>;
  /** `family:value` keys of released in-cluster gateway addresses and VIPs. */
  readonly inClusterKeys: Set<string>;
}

/** Largest released range expanded address by address (a shared-network slice is far smaller). */
const MAX_EXPAND = 1n << 16n;

/**
 * What no new assignment may take: the quarantined addresses, and every address the previous ledger
 * held (its survivors keep theirs before this applies; anything else they held is being released now,
 * so removing one cluster and adding another in one change never hands the new one the old one's).
 */
export function quarantineOf(ledger: Ledger): Quarantine {
  const q: Quarantine = { cidrs: [], crossKeys: new Set(), inClusterKeys: new Set() };
  const all = [...(ledger.released ?? []), ...Object.entries(ledger.clusters).flatMap(([n, c]) => addressesOf(n, c))];
  for (const r of all) {
    for (const iv of intervalOf(r.address)) {
      if (r.field === 'migrationCidr') { q.cidrs.push(iv); continue; }
      const keys = /crossCluster/.test(r.field) ? q.crossKeys : q.inClusterKeys;
      if (iv.end - iv.start >= MAX_EXPAND) continue;
      for (let v = iv.start; v <= iv.end; v++) keys.add(`${iv.family}:${v}`);
    }
  }
  return q;
}

/**
 * A router (`addresses.gateway`) on an address the ledger gives a gateway or a slice: refused, since
 * taking it out of the usable addresses would move that member.
 */
export function routerProblems(router: string | undefined, family: Family, ledger: Ledger): FleetProblem[] {
  const r = router ? parseAddr(router) : undefined;
  if (!r || r.family !== family) return [];
  const out: FleetProblem[] = [];
  for (const [name, c] of Object.entries(ledger.clusters)) {
    const held = [...(c.gateways ?? []).map((g, i) => [`gateways[${i}].crossCluster`, g.crossCluster]), ...(c.crossClusterAddresses ?? []).map((a) => ['crossClusterAddresses', a]),
      ...(c.trustAgents ?? []).map((t, i) => [`trustAgents[${i}].crossCluster`, t.crossCluster])];
    for (const [field, text] of held) {
      if (intervalOf(text).some((iv) => iv.family === r.family && iv.start <= r.value && r.value <= iv.end)) {
        out.push({
          code: 'router-takes-planned-address',
          path: 'spec.crossClusterNetwork.addresses.gateway',
          message: `router ${router} is the address the ledger gives cluster ${name} (${field}); making it the router would move that gateway`,
          fix: `give the router an address outside the planned ones (or outside the pool), or remove cluster ${name}'s entry knowingly`,
        });
      }
    }
  }
  return out;
}

/** Quarantined in-cluster addresses inside `cidr` (kept out of the handlers' whereabouts range too). */
export function quarantinedIn(q: Quarantine, cidr: Interval): bigint[] {
  return [...q.inClusterKeys]
    .map((k) => k.split(':'))
    .filter(([f]) => Number(f) === cidr.family)
    .map(([, v]) => BigInt(v))
    .filter((v) => cidr.start <= v && v <= cidr.end)
    .sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
}
