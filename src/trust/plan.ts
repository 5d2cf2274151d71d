/**
 * Cross-cluster trust, planning side: per cluster, the KubeVirt CA rotation to emit
 * (`spec.certificateRotateStrategy.selfSigned`) and whether its gateway exchanges CA bundles, checked
 * against KubeVirt's webhook rules, HCO's webhook rules and ours (docs/trust.md). Pure, no cdk8s import.
 *
 * Why our rules: virt-operator's `MergeCABundle` keeps a non-current cert in `kubevirt-ca` only while
 * the local current CA and every newer cert in the bundle are younger than the overlap
 * (`ca.renewBefore`), and it empties `kubevirt-external-ca` after each merge
 * (KubeVirt main @d923fdb8: cleanupExternalCACerts, https://github.com/kubevirt/kubevirt/blob/d923fdb815cd2016ddaebdaaa51db04133576d72/pkg/virt-operator/resource/apply/core.go#L375-L398; MergeCABundle,
 * https://github.com/kubevirt/kubevirt/blob/d923fdb815cd2016ddaebdaaa51db04133576d72/pkg/virt-operator/resource/generate/components/secrets.go#L707-L747). A CA is at most `duration - renewBefore` old
 * before it is replaced (its rotation period). So a pushed peer CA survives when every cluster's
 * rotation period is at most every exchanging cluster's overlap.
 */
import { FleetProblem, ProblemCode } from '../base/errors';
import { ConfigDelivery, Datapath } from '../fleet/schema';
import { JsonObject } from '../base/json';
import { RotationSpec, TrustSpec } from './schema';
import { deliveryForm } from '../kubevirt/delivery-forms';
import { datapathMode } from '../fleet/datapath-modes';

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

/** A re-push at most every 1/REPUSH_FRACTION of the shortest rotation period. */
const REPUSH_FRACTION = 100;
/** The shortest re-push interval allowed (every gateway publishes to every peer that often). */
const REPUSH_MIN_SECONDS = 10;

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

/** One cluster's trust settings, where they are written, and its plan. */
interface TrustEntry { readonly c: TrustClusterInput; readonly path: string; readonly plan: ClusterTrustPlan }

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

/**
 * The values a fix may suggest for one CA: `renewBefore` at least half of `duration` (ours), at most
 * `duration` (KubeVirt's), and a rotation period (`duration - renewBefore`) of at least `minPeriod` (the
 * re-push rule's 100 x repushInterval when the cluster exchanges; 0 otherwise). Every fix names values
 * inside these bounds, so following one fix never trips another rule (issue #39: "use at most -12s").
 */
interface CaBounds {
  /** `renewBefore` for the given duration: [lo, hi], or undefined when none fits. */
  readonly renewBefore?: readonly [number, number];
  /** `duration` for the given renewBefore: [lo, hi], or undefined when none fits. */
  readonly duration?: readonly [number, number];
  /** A pair that always fits: the shortest rotation the re-push allows, overlap equal to it. */
  readonly pair: { readonly duration: number; readonly renewBefore: number };
}

function caBounds(ca: CertTiming, minPeriod: number): CaBounds {
  const range = (lo: number, hi: number): readonly [number, number] | undefined => (lo <= hi ? [lo, hi] : undefined);
  const p = Math.max(minPeriod, 1);
  return {
    renewBefore: range(Math.ceil(ca.duration / 2), ca.duration - minPeriod),
    duration: range(ca.renewBefore + minPeriod, ca.renewBefore * 2),
    pair: { duration: 2 * p, renewBefore: p },
  };
}

const between = ([lo, hi]: readonly [number, number]): string => (lo === hi ? human(lo) : `between ${human(lo)} and ${human(hi)}`);

/** Why the bounds are what they are, for the fixes that name them. */
function boundsReason(minPeriod: number, repush: number): string {
  return `renewBefore at least half of duration keeps pushed peer CAs${minPeriod > 0 ? `; a rotation period, duration - renewBefore, of at least ${human(minPeriod)} leaves room for the ${human(repush)} repushInterval` : ''}`;
}

/** The re-push rule's shortest CA rotation period for a re-push interval (never below the 10s minimum's). */
const minRotationFor = (repush: number): number => REPUSH_FRACTION * Math.max(REPUSH_MIN_SECONDS, repush);

/** KubeVirt's webhook (kubevirt-update-admitter.go:220-248), HCO's (validator.go:252-280) and our per-cluster rule. */
function checkRotation(add: Add, path: string, r: Rotation, c: TrustClusterInput, exchange: { on: boolean; repush: number }): void {
  const { ca, server } = r;
  const minPeriod = exchange.on ? minRotationFor(exchange.repush) : 0;
  if (ca.renewBefore > ca.duration) {
    const b = caBounds(ca, minPeriod);
    const ways = [
      ...(b.renewBefore ? [`lower ca.renewBefore to ${between(b.renewBefore)}`] : []),
      ...(b.duration ? [`raise ca.duration to ${between(b.duration)}`] : []),
    ];
    const fix = ways.length ? ways.join(', or ') : `set ca.duration to ${human(b.pair.duration)} and ca.renewBefore to ${human(b.pair.renewBefore)}`;
    add('trust/kubevirt-ca-renew-exceeds-duration', `${path}.ca.renewBefore`, `${human(ca.renewBefore)} is longer than ca.duration ${human(ca.duration)}; KubeVirt's webhook refuses it (ca.duration must be >= ca.renewBefore)`,
      `${fix} (${boundsReason(minPeriod, exchange.repush)})`);
  }
  if (server.renewBefore > server.duration) {
    // a server certificate must not outlive its CA either: the way up stops at ca.duration
    const up = server.renewBefore <= ca.duration ? `, or raise server.duration to ${between([server.renewBefore, ca.duration])}` : '';
    add('trust/kubevirt-server-renew-exceeds-duration', `${path}.server.renewBefore`, `${human(server.renewBefore)} is longer than server.duration ${human(server.duration)}; KubeVirt's webhook refuses it`,
      `lower server.renewBefore to at most ${human(Math.min(server.duration, ca.duration))}${up}`);
  }
  if (server.duration > ca.duration) {
    add('trust/kubevirt-server-outlives-ca', `${path}.server.duration`, `${human(server.duration)} is longer than ca.duration ${human(ca.duration)}; KubeVirt's and HCO's webhooks refuse it (a leaf must not outlive its CA)`, `lower server.duration to at most ${human(ca.duration)} (ca.duration)`);
  }
  if (ca.renewBefore * 2 < ca.duration) {
    const b = caBounds(ca, minPeriod);
    add('trust/ca-overlap-too-short', `${path}.ca.renewBefore`,
      `${human(ca.renewBefore)} is less than half of ca.duration ${human(ca.duration)}: virt-operator drops every non-current CA, peer CAs included, once the local CA is older than renewBefore, so a pushed peer CA would be removed again for ${Math.round(100 * (1 - (ca.renewBefore / (ca.duration - ca.renewBefore))))}% of each CA's life`,
      b.renewBefore ? `set ca.renewBefore to at least ${human(b.renewBefore[0])}`
        : `set ca.duration to ${human(b.pair.duration)} and ca.renewBefore to ${human(b.pair.renewBefore)} (${boundsReason(minPeriod, exchange.repush)})`);
  }
  checkOperatorMinimum(add, path, r, c);
}

/** The delivery form's operator's own webhook minimum (HCO's: validator.go:252-280), when the form has one. */
function checkOperatorMinimum(add: Add, path: string, r: Rotation, c: TrustClusterInput): void {
  const min = deliveryForm(c.configDelivery).certMinimum;
  if (!min) return;
  for (const [k, t] of [['ca', r.ca], ['server', r.server]] as const) {
    for (const f of ['duration', 'renewBefore'] as const) {
      if (t[f] < min.seconds) {
        add('trust/hco-below-minimum', `${path}.${k}.${f}`,
          `${human(t[f])} is below ${min.operator}'s minimum of ${human(min.seconds)} (cluster ${c.name} is delivered through ${min.operator}, whose webhook refuses it)`, `use at least ${human(min.seconds)}`);
      }
    }
  }
}

/** Ours, across clusters: every exchanging cluster's overlap must outlast every exchanging cluster's rotation period. */
function checkPairs(add: Add, entries: TrustEntry[], minPeriod: number): void {
  // a cluster whose renewBefore passes its duration has no rotation period to compare: reported above
  const ex = entries.filter((e) => e.plan.exchange && caRotationPeriod(e.plan.rotation) >= 0);
  if (ex.length < 2) return;
  const longest = ex.reduce((a, b) => (caRotationPeriod(b.plan.rotation) > caRotationPeriod(a.plan.rotation) ? b : a));
  for (const e of ex) {
    const rot = caRotationPeriod(longest.plan.rotation);
    const { ca } = e.plan.rotation;
    // a cluster that breaks its own overlap rule, or shares the longest one's setting, is reported once above
    const ownRuleBroken = ca.renewBefore * 2 < ca.duration;
    if (ca.renewBefore < rot && e.path !== longest.path && !ownRuleBroken) {
      // renewBefore up to the longest rotation; where the cluster's duration leaves no room for that, the
      // duration goes up with it, keeping the cluster's own rotation period (or the re-push's minimum)
      const own = caRotationPeriod(e.plan.rotation);
      const raise = ca.duration - rot >= minPeriod
        ? `raise ${e.c.name}'s ca.renewBefore to at least ${human(rot)}`
        : `raise ${e.c.name}'s ca.renewBefore to ${human(rot)} and its ca.duration to ${human(rot + Math.max(own, minPeriod))} (its own rotation period ${own >= minPeriod ? 'stays' : 'becomes'} ${human(Math.max(own, minPeriod))})`;
      const other = ca.renewBefore >= minPeriod ? `, or rotate ${longest.c.name} more often (its ca.duration - ca.renewBefore at most ${human(ca.renewBefore)})` : '';
      add('trust/peer-rotation-exceeds-overlap', `${e.path}.ca.renewBefore`,
        `cluster ${e.c.name} keeps other CAs for ${human(ca.renewBefore)}, but cluster ${longest.c.name}'s CA lives ${human(rot)} before it is replaced; once that CA is older than ${human(ca.renewBefore)}, virt-operator on ${e.c.name} drops it`,
        `${raise}${other}`);
    }
  }
}

/** The re-push interval as written, in seconds: undefined when it is not a Go duration. */
function repushSeconds(trust: TrustSpec): number | undefined {
  const text = trust.exchange?.repushInterval;
  return text === undefined ? TRUST_DEFAULTS.repushIntervalSeconds : parseGoDuration(text);
}

function repushOf(add: Add, trust: TrustSpec, entries: TrustEntry[]): number {
  const text = trust.exchange?.repushInterval;
  const v = repushSeconds(trust);
  const path = 'spec.trust.exchange.repushInterval';
  if (v === undefined) {
    add('trust/bad-duration', path, `'${text}' is not a Go duration (at most 2562047h, Go's time.Duration range)`, 'write it like 5m or 90s');
    return TRUST_DEFAULTS.repushIntervalSeconds;
  }
  if (v < REPUSH_MIN_SECONDS) add('trust/repush-too-fast', path, `${human(v)} is below 10s; every gateway would publish to every peer that often`, 'use 10s or more (the watch already publishes within seconds of a change)');
  // a cluster whose renewBefore passes its duration has no rotation period: reported as KubeVirt refuses it
  const exchanging = entries.filter((e) => e.plan.exchange && caRotationPeriod(e.plan.rotation) >= 0);
  if (exchanging.length === 0) return v;
  const shortestEntry = exchanging.reduce((a, b) => (caRotationPeriod(b.plan.rotation) < caRotationPeriod(a.plan.rotation) ? b : a));
  const shortest = caRotationPeriod(shortestEntry.plan.rotation);
  if (v * REPUSH_FRACTION > shortest) {
    const most = Math.floor(shortest / REPUSH_FRACTION);
    add('trust/repush-too-slow', path,
      `${human(v)} is more than 1/${REPUSH_FRACTION} of the shortest CA rotation period in the fleet (${human(shortest)}): if the watch missed a rotation, a peer could distrust the new CA for over 1% of its life`,
      most >= REPUSH_MIN_SECONDS ? `use at most ${human(most)}` : lengthenRotation(shortestEntry, Math.max(v, REPUSH_MIN_SECONDS)));
  }
  return v;
}

/** No re-push of 10s or more fits the cluster's rotation: the CA settings that give it one, the fewest changed. */
function lengthenRotation(e: TrustEntry, repush: number): string {
  const { ca } = e.plan.rotation;
  const need = minRotationFor(repush);
  const b = caBounds(ca, need);
  const set = b.renewBefore ? `set ${e.path}.ca.renewBefore to ${human(b.renewBefore[1])}`
    : b.duration ? `set ${e.path}.ca.duration to ${human(b.duration[0])}`
      : `set ${e.path}.ca.duration to ${human(b.pair.duration)} and ca.renewBefore to ${human(b.pair.renewBefore)}`;
  return `no repushInterval of ${REPUSH_MIN_SECONDS}s or more fits a CA rotation period (ca.duration - ca.renewBefore) of ${human(caRotationPeriod(e.plan.rotation))}: ${set}, so the CA rotation period is ${human(need)} (${REPUSH_FRACTION} x the repushInterval of ${human(repush)})`;
}

/**
 * Resolve `spec.trust` for the given clusters. Problems go to `problems` (every one at once).
 * - `spec.trust.enabled: false`: nothing is planned (no rotation emitted, no trust container).
 * - no `spec.trust`: the default. With two or more clusters, whatever their datapath, as with
 *   `spec.trust: {}`, whatever `migrationPolicy.disableTLS` says: KubeVirt's sync channel is mutual TLS
 *   against `kubevirt-ca` regardless (KubeVirt https://github.com/kubevirt/kubevirt/blob/d923fdb815cd2016ddaebdaaa51db04133576d72/pkg/synchronization-controller/synchronization-controller.go#L160), so a decentralized
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
  // the fixes name values that the re-push rule accepts too (an unreadable interval: the default's)
  const exchange = { on: exchangeOn, repush: repushSeconds(trust) ?? TRUST_DEFAULTS.repushIntervalSeconds };
  const entries = clusters.map((c): TrustEntry => {
    const own = trust.clusters?.[c.name];
    const path = own !== undefined ? `spec.trust.clusters.${c.name}` : 'spec.trust.rotation';
    const rotation = rotationOf(add, path, trust.rotation, own);
    checkRotation(add, path, rotation, c, exchange);
    return { c, path, plan: { rotation, exchange: exchangeOn, agent: exchangeOn && !datapathMode(c.datapath).gateways } };
  });
  checkPairs(add, entries, exchangeOn ? minRotationFor(exchange.repush) : 0);
  const repushIntervalSeconds = repushOf(add, trust, entries);
  return { clusters: Object.fromEntries(entries.map((e) => [e.c.name, e.plan])), repushIntervalSeconds };
}
