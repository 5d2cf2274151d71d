/**
 * What the planner must never do silently with the ledger (issue #12), kept apart from the allocation
 * in allocate.ts: plan a renamed fleet from scratch, hand out a quarantined address, or move an address
 * onto the router of the shared network. Pure, no cdk8s import.
 */
import { FleetProblem, ProblemCollector } from '../base/errors';
import { Family, Interval, formatInterval, parseAddr, parseCidr, parsePoolItem } from '../base/ip';
import { Ledger, LedgerChange, addressesOf, formatLedgerChange, intervalOf } from './ledger';

/**
 * The ledger to plan against. A ledger of another fleet name is refused (planning from scratch would
 * renumber every cluster), unless the caller carries it over explicitly with `renamedFrom`.
 */
function ledgerForFleet(fleetName: string, ledger: Ledger | undefined, renamedFrom?: string): { ledger?: Ledger; problems: FleetProblem[] } {
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

export interface PlanOptions {
  /** The previous ledger: its addresses are kept. */
  readonly ledger?: Ledger;
  /**
   * The fleet's previous name, when it was renamed: its ledger is carried over (without it, a ledger of
   * another fleet is refused). @default - a ledger must belong to this fleet
   */
  readonly renamedFrom?: string;
  /** Fail when the plan would change the ledger (CI). */
  readonly frozen?: boolean;
}

/**
 * The ledger stage: the ledger to plan against (`ledgerForFleet`, every problem at once), and with
 * `frozen`, no carrying a renamed fleet's ledger over (that rewrites it). `fleetName` as written.
 */
export function carryLedger(fleetName: unknown, opts: PlanOptions): { ledger?: Ledger; problems: readonly FleetProblem[] } {
  const p = new ProblemCollector();
  const carried = ledgerForFleet(typeof fleetName === 'string' ? fleetName : '', opts.ledger, opts.renamedFrom);
  p.addAll(carried.problems);
  if (opts.frozen && opts.ledger && carried.ledger && opts.ledger.fleet !== carried.ledger.fleet) {
    p.add('ledger-renamed', '(ledger)', `frozen: carrying the ledger of '${opts.ledger.fleet}' over rewrites it`,
      'run synth with --renamed-from once without --frozen and commit the ledger');
  }
  return { ledger: carried.ledger, problems: p.problems };
}

/** The last stage, `frozen`: a plan that needs no ledger change, against a ledger that exists. */
export function frozenProblems(changes: readonly LedgerChange[], opts: PlanOptions): readonly FleetProblem[] {
  const p = new ProblemCollector();
  if (opts.frozen && !opts.ledger) {
    p.add('ledger-missing', '(ledger)', 'frozen, but there is no ledger', 'run synth without --frozen once and commit the ledger it writes');
  } else if (opts.frozen && changes.length > 0) {
    p.add('ledger-would-change', '(ledger)', `frozen: the plan would change the ledger:\n      ${changes.map((c) => formatLedgerChange(c, true)).join('\n      ')}`,
      'run synth without --frozen and commit the updated ledger');
  }
  return p.problems;
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

// ---- the ledger itself: what a Git merge or a hand edit can break (issue #23) --------------------

/** One address the ledger holds, parsed, with its owner. */
interface Held {
  readonly owner: string;
  readonly text: string;
  readonly iv: Interval;
  readonly kind: 'cidr' | 'in' | 'cross';
  readonly cluster: string;
}

const ownerOf = (cluster: string, field: string): string => `clusters.${cluster}.${field}`;

const LEDGER_FIX_SHARED = 'a Git merge of two branches that each planned addresses, or a hand edit, gave one address to two owners: '
  + 'delete the entry of the one that should move from the ledger (or take the ledger from one side of the merge, `git checkout --ours`/`--theirs`), '
  + 'then run synth without --frozen: it plans that member anew on a free address, and commit the ledger with the output';

/** What the fleet says about the families the ledger must hold. */
export interface LedgerFamilies {
  /** The shared network's family. */
  readonly crossCluster?: Family;
  /** Each cluster's in-cluster family (explicit CIDR, else the supernet's). */
  readonly inCluster?: ReadonlyMap<string, Family>;
  /** Explicit in-cluster CIDRs of the fleet, by cluster (a ledger CIDR of another cluster on them conflicts). */
  readonly explicitCidrs?: ReadonlyMap<string, Interval>;
}

const overlap = (a: Interval, b: Interval): boolean => a.family === b.family && a.start <= b.end && b.start <= a.end;

/**
 * Every inconsistency of the ledger itself, each with both owners and the fix: an entry that is not an
 * address (or not a CIDR), of the wrong family, or held twice (two clusters on one or overlapping CIDRs,
 * one shared-network address given to two members, a VIP equal to a gateway address, a quarantined address
 * still held). The planner refuses such a ledger instead of moving addresses until it is consistent.
 */
export function ledgerProblems(ledger: Ledger, fam: LedgerFamilies = {}): FleetProblem[] {
  const out: FleetProblem[] = [];
  /** `form`: what the field must be (a CIDR, one address, or an address, range or CIDR). */
  const add = (cluster: string, field: string, text: unknown, kind: Held['kind'], form: 'cidr' | 'single' | 'item', released = false): Held | undefined => {
    const owner = released ? `released[${field}]` : ownerOf(cluster, field);
    const path = `(ledger) ${owner}`;
    const s = typeof text === 'string' ? text : String(text);
    const r = form === 'cidr' ? parseCidr(s) : undefined;
    const p = form === 'cidr' ? undefined : parsePoolItem(s);
    const iv = r?.ok ? r.cidr : p?.ok && (form !== 'single' || p.form === 'single') ? p.interval : undefined;
    if (!iv) {
      const want = form === 'cidr' ? 'a CIDR (network address/prefix, no host bits)' : form === 'single' ? 'one IP address' : 'an address, an a-b range or a CIDR';
      out.push({
        code: 'ledger-not-an-address', path,
        message: `the ledger gives ${owner} '${s}', which is not ${want}${r && !r.ok && r.suggestion ? ` (host bits set: ${r.suggestion})` : ''}`,
        fix: `restore the ledger from Git (\`git checkout -- <ledger>\`), or delete ${owner} so synth plans it anew (that member's address then changes)`,
      });
      return undefined;
    }
    const want = kind === 'cross' ? fam.crossCluster : fam.inCluster?.get(cluster);
    if (!released && want !== undefined && iv.family !== want) {
      out.push({
        code: 'ledger-wrong-family', path,
        message: `the ledger gives ${owner} the IPv${iv.family} '${s}', but ${kind === 'cross' ? 'the shared network' : `cluster ${cluster}'s migration network`} is IPv${want}`,
        fix: `delete ${owner} from the ledger so synth plans it anew in IPv${want} (that member's address then changes), or restore the ledger from Git`,
      });
      return undefined;
    }
    return { owner, text: s, iv, kind, cluster };
  };
  const cur: Held[] = [];
  const keep = (h: Held | undefined) => { if (h) cur.push(h); };
  for (const [name, c] of Object.entries(ledger.clusters)) {
    if (c.migrationCidr !== undefined) keep(add(name, 'migrationCidr', c.migrationCidr, 'cidr', 'cidr'));
    (c.gateways ?? []).forEach((g, i) => {
      keep(add(name, `gateways[${i}].inCluster`, g.inCluster, 'in', 'single'));
      keep(add(name, `gateways[${i}].crossCluster`, g.crossCluster, 'cross', 'single'));
    });
    if (c.gatewayVip !== undefined) keep(add(name, 'gatewayVip', c.gatewayVip, 'in', 'single'));
    (c.crossClusterAddresses ?? []).forEach((a, i) => keep(add(name, `crossClusterAddresses[${i}]`, a, 'cross', 'item')));
  }
  const rel: Held[] = [];
  (ledger.released ?? []).forEach((r, i) => {
    const kind: Held['kind'] = r.field === 'migrationCidr' ? 'cidr' : /crossCluster/.test(r.field) ? 'cross' : 'in';
    const h = add(r.cluster, String(i), r.address, kind, 'item', true);
    if (h) rel.push(h);
  });
  const clash = (a: Held, b: Held, what: string, fix = LEDGER_FIX_SHARED): void => {
    out.push({
      code: 'ledger-conflict', path: `(ledger) ${b.owner}`,
      message: `${b.owner} (${b.text}) and ${a.owner} (${a.text}) ${what}`,
      fix,
    });
  };
  for (let i = 0; i < cur.length; i++) {
    for (let j = i + 1; j < cur.length; j++) {
      const a = cur[i];
      const b = cur[j];
      if (a.kind !== b.kind || !overlap(a.iv, b.iv)) continue;
      if (a.kind === 'cidr') clash(a, b, 'overlap: two clusters would route one migration network');
      else if (a.kind === 'cross') clash(a, b, 'hold the same shared-network address');
      else if (a.cluster === b.cluster) clash(a, b, 'are the same in-cluster address');
    }
  }
  out.push(...explicitCidrConflicts(cur, fam), ...quarantineConflicts(cur, rel, ledger));
  return out;
}

/** Ledger CIDRs on another cluster's explicit `migrationNetwork.cidr`. */
function explicitCidrConflicts(cur: readonly Held[], fam: LedgerFamilies): FleetProblem[] {
  const out: FleetProblem[] = [];
  for (const [name, iv] of fam.explicitCidrs ?? []) {
    for (const h of cur) {
      if (h.kind === 'cidr' && h.cluster !== name && overlap(h.iv, iv)) {
        out.push({
          code: 'ledger-conflict', path: `(ledger) ${h.owner}`,
          message: `${h.owner} (${h.text}) overlaps cluster ${name}'s migrationNetwork.cidr ${formatInterval(iv)} in the fleet`,
          fix: `delete ${h.owner} from the ledger so synth carves cluster ${h.cluster} a free CIDR (its handlers then move), or give cluster ${name} another CIDR`,
        });
      }
    }
  }
  return out;
}

/** Held addresses that are quarantined too (`rel`: the released entries, owners `released[i]`). */
function quarantineConflicts(cur: readonly Held[], rel: readonly Held[], ledger: Ledger): FleetProblem[] {
  const out: FleetProblem[] = [];
  for (const r of rel) {
    for (const h of cur) {
      if (h.kind !== r.kind || !overlap(h.iv, r.iv)) continue;
      const src = ledger.released![Number(r.owner.slice('released['.length, -1))];
      out.push({
        code: 'ledger-conflict', path: `(ledger) ${h.owner}`,
        message: `${h.owner} (${h.text}) is quarantined too: ${r.owner} (${r.text}) was released by cluster ${src.cluster} (${src.field}), which may still hold it`,
        fix: `if cluster ${src.cluster}'s old gateways are gone, \`migration-mesh reclaim FLEET --address ${r.text}\`; otherwise delete ${h.owner} from the ledger so synth plans it anew`,
      });
    }
  }
  return out;
}
