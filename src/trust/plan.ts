/**
 * Cross-cluster trust, planning side: per cluster, the KubeVirt CA rotation to emit
 * (`spec.certificateRotateStrategy.selfSigned`) and whether its gateway exchanges CA bundles, checked
 * against KubeVirt's webhook rules, HCO's webhook rules and ours (docs/trust.md). Pure, no cdk8s import.
 *
 * Why our rules: virt-operator's `MergeCABundle` keeps a non-current cert in `kubevirt-ca` only while
 * the local current CA and every newer cert in the bundle are younger than the overlap
 * (`ca.renewBefore`), and it empties `kubevirt-external-ca` after each merge
 * (../shared/reference/kubevirt-ca-trust.md §1.2, §1.4). A CA is at most `duration - renewBefore` old
 * before it is replaced (its rotation period). So a pushed peer CA survives when every cluster's
 * rotation period is at most every exchanging cluster's overlap.
 */
import { FleetProblem, ProblemCode } from '../base/errors';
import { ConfigDelivery, Datapath } from '../fleet/schema';
import { JsonObject } from '../base/json';
import { RotationSpec, TrustSpec } from './schema';

/** One certificate's settings, in seconds. */
export interface CertTiming { readonly duration: number; readonly renewBefore: number }
export interface Rotation { readonly ca: CertTiming; readonly server: CertTiming }

export interface ClusterTrustPlan {
  readonly rotation: Rotation;
  /**
   * The cluster exchanges CA bundles: its gateway runs the trust container (gateway datapath), or, with
   * no gateway (direct, native, Harvester), a trust agent does (`agent`).
   */
  readonly exchange: boolean;
  /** The exchange runs in a trust agent of its own (the cluster has no gateway), with one shared-network address per replica. */
  readonly agent: boolean;
}

export interface TrustPlan {
  /** Per cluster name; a cluster without an entry gets nothing (no rotation emitted, no trust container). */
  readonly clusters: Readonly<Record<string, ClusterTrustPlan>>;
  /** Seconds between periodic re-publications. */
  readonly repushIntervalSeconds: number;
}

const TRUST_DEFAULTS = {
  ca: { duration: 168 * 3600, renewBefore: 96 * 3600 },
  server: { duration: 24 * 3600, renewBefore: 12 * 3600 },
  repushIntervalSeconds: 300,
} as const;

/** HCO's webhook minimum for every certConfig value (validator.go:252-280). */
const HCO_MIN_SECONDS = 600;
/** A re-push at most every 1/REPUSH_FRACTION of the shortest rotation period. */
const REPUSH_FRACTION = 100;

/** The cluster fields trust planning reads. */
export interface TrustClusterInput {
  readonly name: string;
  readonly index: number;
  readonly datapath: Datapath;
  readonly configDelivery: ConfigDelivery;
}

const UNIT_SECONDS: Record<string, number> = { ns: 1e-9, us: 1e-6, 'µs': 1e-6, ms: 1e-3, s: 1, m: 60, h: 3600 };

/** The longest Go `time.Duration` (int64 nanoseconds, about 292 years): virt-operator cannot decode a longer one. */
const GO_DURATION_MAX_SECONDS = 9223372036.854775807;

/** Parse a Go duration into seconds; undefined when malformed or past Go's `time.Duration` range. */
export function parseGoDuration(text: string): number | undefined {
  const re = /([0-9]+(?:\.[0-9]+)?)(ns|us|µs|ms|s|m|h)/g;
  let total = 0;
  let consumed = 0;
  for (const m of text.matchAll(re)) {
    if (m.index !== consumed) return undefined;
    total += Number(m[1]) * UNIT_SECONDS[m[2]];
    consumed += m[0].length;
  }
  return consumed === text.length && consumed > 0 && total <= GO_DURATION_MAX_SECONDS ? total : undefined;
}

/** Seconds as Go's `time.Duration.String()` writes them for whole seconds (`168h0m0s`, `4h48m0s`, `90s` -> `1m30s`). */
export function formatGoDuration(seconds: number): string {
  const s = Math.round(seconds);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const r = s % 60;
  if (h > 0) return `${h}h${m}m${r}s`;
  if (m > 0) return `${m}m${r}s`;
  return `${r}s`;
}

const human = (seconds: number): string => formatGoDuration(seconds).replace(/(^|[hm])0m0s$|(^|[hm])0s$/, '$1$2') || '0s';

/** Rotation period of a CA: it is replaced when it is `duration - renewBefore` old. */
const caRotationPeriod = (r: Rotation): number => r.ca.duration - r.ca.renewBefore;

/** The JSON fragment of the KubeVirt spec (JSON key `certificateRotateStrategy`, as the CRD spells it). */
export function rotationFragment(r: Rotation): JsonObject {
  const cfg = (t: CertTiming): JsonObject => ({ duration: formatGoDuration(t.duration), renewBefore: formatGoDuration(t.renewBefore) });
  return { certificateRotateStrategy: { selfSigned: { ca: cfg(r.ca), server: cfg(r.server) } } };
}

type Add = (code: ProblemCode, path: string, message: string, fix: string) => void;

function timing(add: Add, path: string, spec: { duration?: string; renewBefore?: string } | undefined, dflt: CertTiming): CertTiming {
  const read = (key: 'duration' | 'renewBefore'): number => {
    const text = spec?.[key];
    if (text === undefined) return dflt[key];
    const v = parseGoDuration(text);
    if (v === undefined || v <= 0) {
      add('trust/bad-duration', `${path}.${key}`, `'${text}' is not a positive Go duration (at most 2562047h, Go's time.Duration range)`, 'write it like 168h, 96h or 1h30m');
      return dflt[key];
    }
    return v;
  };
  const duration = read('duration');
  // renewBefore left out while duration is given: half of it (our rule's minimum, rounded up to a second)
  const renewBefore = spec?.renewBefore === undefined && spec?.duration !== undefined ? Math.ceil(duration / 2) : read('renewBefore');
  return { duration, renewBefore };
}

function rotationOf(add: Add, path: string, fleet: RotationSpec | undefined, own: RotationSpec | undefined): Rotation {
  const pick = (k: 'ca' | 'server') => (own?.[k] !== undefined ? { p: `${path}.${k}`, s: own[k] } : { p: `spec.trust.rotation.${k}`, s: fleet?.[k] });
  const ca = pick('ca');
  const server = pick('server');
  return { ca: timing(add, ca.p, ca.s, TRUST_DEFAULTS.ca), server: timing(add, server.p, server.s, TRUST_DEFAULTS.server) };
}

/** KubeVirt's webhook (kubevirt-update-admitter.go:220-248), HCO's (validator.go:252-280) and our per-cluster rule. */
function checkRotation(add: Add, path: string, r: Rotation, c: TrustClusterInput): void {
  const { ca, server } = r;
  if (ca.renewBefore > ca.duration) {
    add('trust/kubevirt-ca-renew-exceeds-duration', `${path}.ca.renewBefore`, `${human(ca.renewBefore)} is longer than ca.duration ${human(ca.duration)}; KubeVirt's webhook refuses it (ca.duration must be >= ca.renewBefore)`, 'lower ca.renewBefore, or raise ca.duration');
  }
  if (server.renewBefore > server.duration) {
    add('trust/kubevirt-server-renew-exceeds-duration', `${path}.server.renewBefore`, `${human(server.renewBefore)} is longer than server.duration ${human(server.duration)}; KubeVirt's webhook refuses it`, 'lower server.renewBefore, or raise server.duration');
  }
  if (server.duration > ca.duration) {
    add('trust/kubevirt-server-outlives-ca', `${path}.server.duration`, `${human(server.duration)} is longer than ca.duration ${human(ca.duration)}; KubeVirt's and HCO's webhooks refuse it (a leaf must not outlive its CA)`, 'lower server.duration to at most ca.duration');
  }
  if (ca.renewBefore * 2 < ca.duration) {
    add('trust/ca-overlap-too-short', `${path}.ca.renewBefore`,
      `${human(ca.renewBefore)} is less than half of ca.duration ${human(ca.duration)}: virt-operator drops every non-current CA, peer CAs included, once the local CA is older than renewBefore, so a pushed peer CA would be removed again for ${Math.round(100 * (1 - (ca.renewBefore / (ca.duration - ca.renewBefore))))}% of each CA's life`,
      `set ca.renewBefore to at least ${human(Math.ceil(ca.duration / 2))}`);
  }
  if (c.configDelivery === 'hco') checkHco(add, path, r, c);
}

function checkHco(add: Add, path: string, r: Rotation, c: TrustClusterInput): void {
  for (const [k, t] of [['ca', r.ca], ['server', r.server]] as const) {
    for (const f of ['duration', 'renewBefore'] as const) {
      if (t[f] < HCO_MIN_SECONDS) {
        add('trust/hco-below-minimum', `${path}.${k}.${f}`, `${human(t[f])} is below HCO's minimum of 10m (cluster ${c.name} is delivered through HCO, whose webhook refuses it)`, 'use at least 10m');
      }
    }
  }
}

/** Ours, across clusters: every exchanging cluster's overlap must outlast every exchanging cluster's rotation period. */
function checkPairs(add: Add, entries: { c: TrustClusterInput; path: string; plan: ClusterTrustPlan }[]): void {
  const ex = entries.filter((e) => e.plan.exchange);
  if (ex.length < 2) return;
  const longest = ex.reduce((a, b) => (caRotationPeriod(b.plan.rotation) > caRotationPeriod(a.plan.rotation) ? b : a));
  for (const e of ex) {
    const rot = caRotationPeriod(longest.plan.rotation);
    // a cluster that breaks its own overlap rule, or shares the longest one's setting, is reported once above
    const ownRuleBroken = e.plan.rotation.ca.renewBefore * 2 < e.plan.rotation.ca.duration;
    if (e.plan.rotation.ca.renewBefore < rot && e.path !== longest.path && !ownRuleBroken) {
      add('trust/peer-rotation-exceeds-overlap', `${e.path}.ca.renewBefore`,
        `cluster ${e.c.name} keeps other CAs for ${human(e.plan.rotation.ca.renewBefore)}, but cluster ${longest.c.name}'s CA lives ${human(rot)} before it is replaced; once that CA is older than ${human(e.plan.rotation.ca.renewBefore)}, virt-operator on ${e.c.name} drops it`,
        `raise ${e.c.name}'s ca.renewBefore to at least ${human(rot)}, or rotate ${longest.c.name} more often`);
    }
  }
}

function repushOf(add: Add, trust: TrustSpec, plans: ClusterTrustPlan[]): number {
  const text = trust.exchange?.repushInterval;
  const v = text === undefined ? TRUST_DEFAULTS.repushIntervalSeconds : parseGoDuration(text);
  const path = 'spec.trust.exchange.repushInterval';
  if (v === undefined) {
    add('trust/bad-duration', path, `'${text}' is not a Go duration (at most 2562047h, Go's time.Duration range)`, 'write it like 5m or 90s');
    return TRUST_DEFAULTS.repushIntervalSeconds;
  }
  if (v < 10) add('trust/repush-too-fast', path, `${human(v)} is below 10s; every gateway would publish to every peer that often`, 'use 10s or more (the watch already publishes within seconds of a change)');
  const exchanging = plans.filter((p) => p.exchange);
  if (exchanging.length === 0) return v;
  const shortest = Math.min(...exchanging.map((p) => caRotationPeriod(p.rotation)));
  if (v * REPUSH_FRACTION > shortest) {
    add('trust/repush-too-slow', path,
      `${human(v)} is more than 1/${REPUSH_FRACTION} of the shortest CA rotation period in the fleet (${human(shortest)}): if the watch missed a rotation, a peer could distrust the new CA for over 1% of its life`,
      `use at most ${human(Math.floor(shortest / REPUSH_FRACTION))}`);
  }
  return v;
}

/**
 * Resolve `spec.trust` for the given clusters. Problems go to `problems` (every one at once).
 * - `spec.trust.enabled: false`: nothing is planned (no rotation emitted, no trust container).
 * - no `spec.trust`: the default. With two or more clusters, whatever their datapath, as with
 *   `spec.trust: {}`, whatever `migrationPolicy.disableTLS` says: KubeVirt's sync channel is mutual TLS
 *   against `kubevirt-ca` regardless (fact sheet kubevirt-ca-trust.md s.2.4), so a decentralized
 *   migration needs the peer's CA either way. A single cluster gets nothing.
 * - `spec.trust` given: every cluster gets the rotation and (unless `exchange.enabled: false`) the
 *   exchange: gateway clusters in their gateway pods, the others in a trust agent (`agent`).
 */
export function resolveTrust(trust: TrustSpec | undefined, clusters: readonly TrustClusterInput[], problems: FleetProblem[]): TrustPlan {
  const none: TrustPlan = { clusters: {}, repushIntervalSeconds: TRUST_DEFAULTS.repushIntervalSeconds };
  if (trust?.enabled === false) return none;
  if (trust === undefined) {
    // the default: every cluster of a multi-cluster fleet exchanges, with our rotation, whatever its datapath
    if (clusters.length < 2) return none;
    return resolveTrust({}, clusters, problems);
  }
  const seen = new Set<string>();
  const add: Add = (code, path, message, fix) => {
    // a fleet-wide setting breaks the same rule for every cluster: report it once
    if (!seen.has(`${code}|${path}`)) problems.push({ code, path, message, fix });
    seen.add(`${code}|${path}`);
  };
  for (const name of Object.keys(trust.clusters ?? {})) {
    if (!clusters.some((c) => c.name === name)) {
      add('trust/unknown-cluster', `spec.trust.clusters.${name}`, `'${name}' is not a cluster of this fleet`, `use one of ${clusters.map((c) => c.name).join(', ')}, or remove it`);
    }
  }
  const exchangeOn = trust.exchange?.enabled ?? true;
  const entries = clusters.map((c) => {
    const own = trust.clusters?.[c.name];
    const path = own !== undefined ? `spec.trust.clusters.${c.name}` : 'spec.trust.rotation';
    const rotation = rotationOf(add, path, trust.rotation, own);
    checkRotation(add, path, rotation, c);
    return { c, path, plan: { rotation, exchange: exchangeOn, agent: exchangeOn && c.datapath !== 'gateway' } };
  });
  checkPairs(add, entries);
  const repushIntervalSeconds = repushOf(add, trust, entries.map((e) => e.plan));
  return { clusters: Object.fromEntries(entries.map((e) => [e.c.name, e.plan])), repushIntervalSeconds };
}
