/**
 * The gateways' bandwidth budgets (`spec.gateway.bandwidth`, issue 52 item 3): one quantity for every pair of
 * clusters, or per pair of sites and of clusters, a cluster pair overriding its sites' pair, which overrides the
 * default. A pair's budget is what each of its two gateways may send toward the other (each direction on its own),
 * all tunnels to that peer together. Here: the rules resolved to bytes per second, the budget of one cluster pair,
 * the refusals of a rule that names no pair of the fleet (or names one twice), and the warning when a budget
 * cannot carry the migrations the fleet lets KubeVirt run at once: KubeVirt starts up to
 * `parallelMigrationsPerCluster` migrations (default 5), each limited to `bandwidthPerMigration`; over the budget
 * the gateways hold each migration below the bandwidth KubeVirt planned for, so migrations converge slower (or,
 * with a tight completion timeout, are cancelled). Units: bytes per second. Pure, no cdk8s import.
 */
import type { FleetProblem, ProblemCollector } from '../base/errors';
import type { FleetDocument, GatewayBandwidthPair, GatewayBandwidthSpec } from '../fleet/schema';
import { quantityValue } from '../base/quantity';
import { DEFAULT_DATAPATH, datapathMode } from '../fleet/datapath-modes';

/** KubeVirt's default `parallelMigrationsPerCluster`. */
const KUBEVIRT_PARALLEL_MIGRATIONS = 5;
const PATH = 'spec.gateway.bandwidth';

/** One pair of sites or clusters and its budget, bytes per second (each direction). */
export interface BandwidthPair {
  readonly between: readonly [string, string];
  readonly bandwidth: number;
}

/**
 * `spec.gateway.bandwidth` resolved to bytes per second: the budget of a cluster pair is its entry in `clusters`,
 * else its sites' entry in `sites`, else `default`; none of them: no budget.
 */
export interface ResolvedBandwidth {
  /** Every pair without an entry of its own. @default - none */
  readonly default?: number;
  /** Per pair of sites (`spec.crossClusterNetwork.sites`); one site twice is the pair within it. */
  readonly sites: readonly BandwidthPair[];
  /** Per pair of clusters. */
  readonly clusters: readonly BandwidthPair[];
}

const bytes = (q: string): number => Math.floor(quantityValue(q) ?? 0);
const pairKey = (a: string, b: string): string => (a < b ? `${a}\0${b}` : `${b}\0${a}`);

/** The rules in bytes per second, or undefined without a budget (values the checks refuse are kept as they read). */
export function resolveBandwidth(spec: GatewayBandwidthSpec | undefined): ResolvedBandwidth | undefined {
  if (spec === undefined) return undefined;
  if (typeof spec === 'string') return { default: bytes(spec), sites: [], clusters: [] };
  const pairs = (l: readonly GatewayBandwidthPair[] | undefined): BandwidthPair[] =>
    (l ?? []).map((x) => ({ between: [x.between[0], x.between[1]] as const, bandwidth: bytes(x.bandwidth) }));
  return { ...(spec.default !== undefined ? { default: bytes(spec.default) } : {}), sites: pairs(spec.sites), clusters: pairs(spec.clusters) };
}

const lookups = new WeakMap<ResolvedBandwidth, { sites: Map<string, number>; clusters: Map<string, number> }>();

/**
 * The budget between clusters `a` and `b` (bytes/s, the same both ways): their own entry, else their sites'
 * (`siteOf`), else the default; undefined when none applies. Lookup tables made once per rules object.
 */
export function budgetBetween(rules: ResolvedBandwidth | undefined, siteOf: (cluster: string) => string | undefined, a: string, b: string): number | undefined {
  if (!rules) return undefined;
  let l = lookups.get(rules);
  if (!l) {
    const table = (xs: readonly BandwidthPair[]) => new Map(xs.map((x) => [pairKey(x.between[0], x.between[1]), x.bandwidth]));
    l = { sites: table(rules.sites), clusters: table(rules.clusters) };
    lookups.set(rules, l);
  }
  const own = l.clusters.get(pairKey(a, b));
  if (own !== undefined) return own;
  const sa = siteOf(a), sb = siteOf(b);
  const sites = sa !== undefined && sb !== undefined ? l.sites.get(pairKey(sa, sb)) : undefined;
  return sites ?? rules.default;
}

/** Every budget of the document with its path and text: the one quantity, or the default and each pair's. */
function budgetsOf(spec: GatewayBandwidthSpec): { path: string; text: string; pair?: { kind: 'sites' | 'clusters'; between: readonly string[] } }[] {
  if (typeof spec === 'string') return [{ path: PATH, text: spec }];
  return [
    ...(spec.default !== undefined ? [{ path: `${PATH}.default`, text: spec.default }] : []),
    ...(['sites', 'clusters'] as const).flatMap((kind) => (spec[kind] ?? []).map((x, i) => ({
      path: `${PATH}.${kind}[${i}].bandwidth`, text: x.bandwidth, pair: { kind, between: x.between },
    }))),
  ];
}

/**
 * The refusals of `spec.gateway.bandwidth`: a budget below 1 byte/s, a pair form the fleet cannot hold (per site
 * without sites), a pair naming a site or cluster the fleet does not have, a cluster with itself or without a
 * gateway, a pair twice (in the same or the other order), and any budget on payload inside TLS.
 */
export function checkBandwidth(p: ProblemCollector, doc: FleetDocument, payloadInsideTls: boolean): void {
  const spec = doc.spec.gateway?.bandwidth;
  if (spec === undefined) return;
  for (const b of budgetsOf(spec)) {
    if ((quantityValue(b.text) ?? 0) < 1) {
      p.add('gateway-bandwidth-not-positive', b.path, `'${b.text}' is below 1 byte per second: a budget of nothing would stop every migration over it`,
        `give a budget of at least 1 byte/s (e.g. 125M for 1 Gbit/s), or remove it${b.path === PATH ? '' : ' (the pair then takes the next rule)'}`);
    }
  }
  if (typeof spec !== 'string') {
    checkPairs(p, doc, 'sites', spec.sites ?? []);
    checkPairs(p, doc, 'clusters', spec.clusters ?? []);
  }
  if (payloadInsideTls) {
    p.add('gateway-bandwidth-needs-splice', PATH, `a budget (${budgetsOf(spec).map((b) => `'${b.text}'`).join(', ')} bytes/s) with payload tls (tls.mode mtls): `
      + 'the gateway enforces the budget on plaintext and spliced tunnels only, so it would not hold',
    'set spec.gateway.payload: splice (KubeVirt\'s migration TLS on), or remove spec.gateway.bandwidth');
  }
}

/** Why a pair of `kind` may not name `name` (undefined: it may). */
function pairRefusal(doc: FleetDocument, kind: 'sites' | 'clusters'): (name: string) => string | undefined {
  if (kind === 'sites') {
    const names = new Set((doc.spec.crossClusterNetwork.sites ?? []).map((s) => s.name));
    return (n) => (names.has(n) ? undefined : `'${n}' is not a site of spec.crossClusterNetwork.sites (${[...names].join(', ')})`);
  }
  const datapaths = new Map(doc.spec.clusters.map((c) => [c.name, c.datapath ?? doc.spec.datapath ?? DEFAULT_DATAPATH]));
  return (n) => {
    const datapath = datapaths.get(n);
    if (datapath === undefined) return `'${n}' is not a cluster of spec.clusters`;
    return datapathMode(datapath).gateways ? undefined : `cluster '${n}' has no gateway (datapath ${datapath}): nothing would enforce a budget toward it`;
  };
}

function checkPairs(p: ProblemCollector, doc: FleetDocument, kind: 'sites' | 'clusters', pairs: readonly { between: readonly string[] }[]): void {
  if (kind === 'sites' && pairs.length && doc.spec.crossClusterNetwork.sites === undefined) {
    p.add('gateway-bandwidth-sites-without-sites', `${PATH}.sites`, 'budgets per pair of sites in a fleet that declares no sites (spec.crossClusterNetwork.addresses: one site)',
      'give the budget as spec.gateway.bandwidth.default, or per pair of clusters in spec.gateway.bandwidth.clusters');
    return;
  }
  const refuse = pairRefusal(doc, kind);
  const seen = new Map<string, { i: number; first: string }>();
  pairs.forEach((x, i) => {
    const path = `${PATH}.${kind}[${i}].between`;
    const bad = x.between.map((n, j) => ({ j, why: refuse(n) })).filter((r) => r.why !== undefined);
    for (const r of bad) {
      p.add(kind === 'sites' ? 'gateway-bandwidth-unknown-site' : 'gateway-bandwidth-unknown-cluster', `${path}[${r.j}]`, r.why!,
        kind === 'sites' ? 'name a site of spec.crossClusterNetwork.sites' : 'name a cluster of spec.clusters whose datapath has gateways (gateway)');
    }
    const [a, b] = x.between;
    if (kind === 'clusters' && a === b) {
      p.add('gateway-bandwidth-same-cluster', path, `[${a}, ${b}] pairs cluster '${a}' with itself: a gateway never tunnels to its own cluster`,
        'name two clusters (a pair within one site is spec.gateway.bandwidth.sites with the site twice)');
      return;
    }
    const key = pairKey(a, b), had = seen.get(key);
    if (!had) { seen.set(key, { i, first: `${a}\0${b}` }); return; }
    const reversed = had.first !== `${a}\0${b}`;
    p.add(reversed ? 'gateway-bandwidth-pair-both-orders' : 'gateway-bandwidth-duplicate-pair', path,
      reversed ? `[${a}, ${b}] is the pair of ${PATH}.${kind}[${had.i}] in the other order: a budget applies to both directions of a pair, so one entry holds it`
        : `[${a}, ${b}] is the pair of ${PATH}.${kind}[${had.i}] again: one pair has one budget`,
      `keep one entry for the pair (${PATH}.${kind}[${had.i}]) and remove this one`);
  });
}

/** What the warning reads from the fleet. */
export interface BandwidthBudgetUse {
  /** `spec.gateway.bandwidth`, if set. */
  readonly budget?: GatewayBandwidthSpec;
  /** `spec.migrationPolicy.bandwidthPerMigration`, if set (unset: KubeVirt does not limit a migration). */
  readonly bandwidthPerMigration?: string;
  /** `spec.migrationPolicy.parallelMigrationsPerCluster`, if set. */
  readonly parallelMigrationsPerCluster?: number;
}

/** The `gateway-bandwidth-below-migrations` warnings: one per budget (the one quantity, the default, each pair) that is too small. */
export function bandwidthBudgetWarnings(u: BandwidthBudgetUse): FleetProblem[] {
  if (u.budget === undefined || u.bandwidthPerMigration === undefined) return [];
  const per = quantityValue(u.bandwidthPerMigration) ?? 0;
  const parallel = u.parallelMigrationsPerCluster ?? KUBEVIRT_PARALLEL_MIGRATIONS;
  return budgetsOf(u.budget).flatMap((b): FleetProblem[] => {
    const budget = quantityValue(b.text) ?? 0;
    if (budget < 1 || per <= 0 || budget >= per * parallel) return [];
    const fits = Math.max(1, Math.floor(budget / per));
    const what = b.pair ? `the budget between ${b.pair.kind === 'sites' ? 'sites' : 'clusters'} ${b.pair.between[0]} and ${b.pair.between[1]}, ${b.path} '${b.text}' (bytes/s each way),`
      : b.path === PATH ? `${PATH} '${b.text}' (bytes/s per peer)` : `${b.path} '${b.text}' (bytes/s, every pair without a budget of its own)`;
    return [{
      code: 'gateway-bandwidth-below-migrations', path: b.path,
      message: `${what} cannot carry ${parallel} parallel migrations at bandwidthPerMigration `
        + `'${u.bandwidthPerMigration}' (${per * parallel} bytes/s together): the gateways share the budget between them, so each gets `
        + `${Math.floor(budget / parallel)} bytes/s, less than KubeVirt planned for, and may not converge within its completion timeout`,
      fix: `raise ${b.path} to at least ${per * parallel} bytes/s, or set migrationPolicy.parallelMigrationsPerCluster: ${fits} `
        + `or migrationPolicy.bandwidthPerMigration to at most ${Math.floor(budget / parallel)} bytes/s`,
    }];
  });
}
