/**
 * Fleet validation and normalization: every default applied, every address parsed, every problem
 * collected (not only the first). Pure, no cdk8s import.
 */
import { z } from 'zod';
import { Checked, FleetProblem, ProblemCollector, Salvaged, checkedOf, orThrow, pathToString } from '../base/errors';
import { kubevirtAdmissionProblems } from '../kubevirt/admission';
import {
  Attachment, ClusterSpec, ConfigDelivery, Datapath, FleetDocument, fleetDocumentSchema, FleetSpec, Placement, SyncPlacement,
} from './schema';
import {
  Cidr, Family, Interval, bits, cidrOf, contains, countIntervals, formatAddr, formatCidr, formatInterval, mergeIntervals,
  overlaps, parseAddr, parseCidr, parsePoolItem, subtractIntervals, usableHosts,
} from '../base/ip';
import { DEFAULT_TUNNEL_PORT } from '../base/names';
import { DEFAULT_ADMIN_PORT, DEFAULT_INTERCEPT_PORT, FORBIDDEN_CIDRS } from '../gateway/runtime-config';
import {
  DEFAULT_KUBEVIRT_VERSION, KubevirtVersion, fieldSupported, hasCrossClusterProxyApi, parseKubevirtVersion,
  supportsDecentralizedMigration, MIGRATION_FIELD_SINCE,
} from '../kubevirt/versions';
import { TrustPlan, resolveTrust } from '../trust/plan';
import { ExistingKubevirt, existingKubevirtProblems, resolveExistingKubevirt } from '../kubevirt/existing';
import { ResolvedSite, resolveSites, siteOfClusters, unionOfSites, withSitePaths } from './sites';

const DEFAULTS = {
  datapath: 'gateway' as Datapath,
  kubevirtNamespace: 'kubevirt',
  hcoNamespace: 'kubevirt-hyperconverged',
  kubevirtName: 'kubevirt',
  hcoName: 'kubevirt-hyperconverged',
  configDelivery: 'kubevirt-cr' as ConfigDelivery,
  crossClusterNadName: 'lm-crosscluster',
  migrationNadName: 'lm-migration',
  gatewayReplicas: 2,
  failoverMode: 'vip' as 'vip' | 'none',
  virtualRouterId: 51,
  gatewayImage: 'ghcr.io/migration-mesh/proxy:0.1.0',
  tunnelPort: DEFAULT_TUNNEL_PORT,
  syncReplicas: 2,
  syncPlacement: 'controlPlane' as SyncPlacement,
  addressSurge: 2,
  clusterPrefixLength: { 4: 24, 6: 64 } as Record<Family, number>,
} as const;

export interface ResolvedKubevirt {
  readonly namespace: string;
  readonly name: string;
  readonly version: KubevirtVersion;
  readonly configDelivery: ConfigDelivery;
  readonly hasProxyApi: boolean;
  /** What the cluster already has in the lists our KubeVirt object owns (src/kubevirt/existing.ts). */
  readonly existing: ExistingKubevirt;
}

export interface ResolvedCluster {
  readonly name: string;
  /** Position in the fleet file. */
  readonly index: number;
  readonly nodes: number;
  readonly datapath: Datapath;
  readonly kubevirt: ResolvedKubevirt;
  readonly syncReplicas: number;
  readonly syncPlacement: SyncPlacement;
  readonly migrationAttachment: Attachment;
  /** Explicit in-cluster CIDR; undefined means carved from the supernet. */
  readonly migrationCidr?: Cidr;
  readonly migrationExclude: Interval[];
  readonly gatewayReplicas: number;
  /** gateway mode with 2+ replicas and failover `vip`: the cluster holds one more in-cluster address, the replicas' shared next hop. */
  readonly gatewayVip: boolean;
  /**
   * Trust-agent replicas (`gatewayReplicas`) the cluster runs when it exchanges CAs without a gateway
   * (direct, native, Harvester); each holds one shared-network address. 0 for a gateway cluster (its
   * gateway exchanges) and when the fleet exchanges nothing.
   */
  readonly trustAgentReplicas: number;
  /** The site the cluster is in: its shared-network addresses come from that site's pool. */
  readonly site: string;
  readonly podCidrs: Cidr[];
  readonly serviceCidrs: Cidr[];
  readonly multiNetworkPolicy: boolean;
  /** OpenShift: the gateway pods need an SCC (declared, or implied by hco delivery). */
  readonly openshift: boolean;
}

export interface ResolvedCrossCluster {
  readonly nadName: string;
  readonly attachment: Attachment;
  readonly family: Family;
  readonly prefixLength: number;
  /** Pool after exclusions, network/broadcast and the router removed. */
  readonly usable: Interval[];
  readonly usableCount: bigint;
  /** Raw pool size (before subtractions), for the capacity report. */
  readonly poolCount: bigint;
  readonly excludedCount: bigint;
  readonly reservedCount: bigint;
  /** The /prefixLength subnets the pool touches. */
  readonly subnets: Cidr[];
  readonly gateway?: string;
  readonly routes: { dst: string; gw: string }[];
  /** The sites of the shared network, in file order: one, `default`, when the fleet declares none (src/fleet/sites.ts). */
  readonly sites: ResolvedSite[];
}

export interface ResolvedGateway {
  readonly image: string;
  readonly tunnelPort: number;
  readonly placement?: Placement;
  readonly tls: { kind: 'issuer'; name: string; issuerKind: 'Issuer' | 'ClusterIssuer' } | { kind: 'secret'; secretName: string } | { kind: 'plaintext' };
  /** How an mTLS tunnel carries the payload (`spec.gateway.payload`): spliced (KubeVirt's TLS alone) or inside TLS. */
  readonly payload: 'splice' | 'tls';
  readonly serviceMonitor: boolean;
  /** A PrometheusRule beside the ServiceMonitor (`spec.gateway.alerts`, default: `serviceMonitor`). */
  readonly alerts: boolean;
  readonly failover: { readonly mode: 'vip' | 'none'; readonly virtualRouterId: number };
}

export interface ResolvedFleet {
  readonly name: string;
  readonly crossCluster: ResolvedCrossCluster;
  readonly migrationNadName: string;
  readonly supernet?: Cidr;
  readonly clusterPrefixLength: number;
  readonly gateway: ResolvedGateway;
  readonly migrationPolicy: NonNullable<FleetSpec['migrationPolicy']>;
  readonly addressSurge: number;
  /** Sorted by name (deterministic planning order). */
  readonly clusters: ResolvedCluster[];
  /** KubeVirt CA rotation and CA exchange per cluster (src/trust/plan.ts). */
  readonly trust: TrustPlan;
}

/** Addresses one cluster holds on its in-cluster migration network. */
export const inClusterNeeded = (c: ResolvedCluster, surge: number): number =>
  c.nodes + c.syncReplicas + (c.datapath === 'gateway' ? c.gatewayReplicas + (c.gatewayVip ? 1 : 0) : 0) + surge;

/** Addresses one cluster holds on the shared cross-cluster network, by datapath mode. */
export function crossClusterNeeded(c: ResolvedCluster, surge: number, mode: Datapath = c.datapath): number {
  if (mode === 'gateway') return c.gatewayReplicas;
  // the trust agents of the cluster's own mode (what-if modes count the handlers alone, as before)
  const agents = mode === c.datapath ? c.trustAgentReplicas : 0;
  if (mode === 'native') return c.syncReplicas + surge + agents;
  return c.nodes + c.syncReplicas + surge + agents;
}


/**
 * The breakdown of `inClusterNeeded`, the one text both capacity messages use (resolve for explicit
 * CIDRs, the planner for carved and ledger ones): `8 nodes + 2 sync controllers + 2 gateways + 1
 * gateway VIP + 2 rollout surge`.
 */
export function inClusterBreakdown(c: ResolvedCluster, surge: number): string {
  const gateways = c.datapath === 'gateway' ? ` + ${c.gatewayReplicas} gateways${c.gatewayVip ? ' + 1 gateway VIP' : ''}` : '';
  return `${c.nodes} nodes + ${c.syncReplicas} sync controllers${gateways} + ${surge} rollout surge`;
}

// ---------------- structure: the fleet document against its schema ----------------

function zodProblems(err: z.ZodError, input?: unknown): FleetProblem[] {
  return err.issues.map((issue): FleetProblem => {
    const path = pathToString(issue.path) || '(document)';
    if (issue.code === 'unrecognized_keys') {
      return {
        code: 'unknown-field', path,
        message: `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')}`,
        fix: 'remove it or check its spelling against the fleet format in README',
      };
    }
    if (issue.code === 'invalid_union' && 'note' in issue && issue.note === 'No matching discriminator') {
      return { code: 'unknown-attachment-type', path, message: 'unknown attachment type', fix: 'use one of macvlan, bridge, ipvlan, host-device' };
    }
    // a record key the schema refuses: say which key and why (zod's own text is "Invalid key in record")
    if (issue.code === 'invalid_key' && issue.issues.length) {
      return { code: 'schema-invalid', path, message: `the key ${issue.issues.map((i) => i.message).join('; ')}` };
    }
    // YAML reads an unquoted 1.10 as the number 1.1, an unquoted 1 as 1: say so
    const given = issue.path.reduce<unknown>((o, k) => (isRecord(o) || Array.isArray(o) ? (o as Record<string, unknown>)[k as string] : undefined), input);
    if (issue.code === 'invalid_type' && issue.expected === 'string' && (typeof given === 'number' || typeof given === 'boolean')) {
      return {
        code: 'schema-invalid', path,
        message: `${issue.message}: YAML read the unquoted ${String(given)} as a ${typeof given} (an unquoted 1.10 even becomes 1.1)`,
        fix: `quote it: ${issue.path[issue.path.length - 1] as string}: "${String(given)}"`,
      };
    }
    return { code: 'schema-invalid', path, message: issue.message };
  });
}

/** Issues about a value's type or shape; the others (range, format, enum) leave a value of the right type. */
const SHAPE_ISSUES = new Set(['invalid_type', 'invalid_union', 'unrecognized_keys', 'invalid_key', 'invalid_element']);
const isShapeIssue = (i: z.core.$ZodIssue): boolean => SHAPE_ISSUES.has(i.code);

/** A copy of `input` without the values of the wrong type or shape (and without unknown keys). */
function withoutMisshapenValues(input: unknown, issues: readonly z.core.$ZodIssue[]): unknown {
  const copy: unknown = structuredClone(input);
  for (const issue of issues.filter(isShapeIssue)) {
    const parent = issue.path.slice(0, -1).reduce<unknown>((o, k) => (isRecord(o) ? o[k as string] : undefined), copy);
    if (issue.code === 'unrecognized_keys') {
      const at = issue.path.reduce<unknown>((o, k) => (isRecord(o) ? o[k as string] : undefined), copy);
      if (isRecord(at)) for (const k of issue.keys) delete at[k];
    } else if (isRecord(parent) && issue.path.length > 0 && !Array.isArray(parent)) {
      delete parent[issue.path[issue.path.length - 1] as string];
    }
  }
  return copy;
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null;

/**
 * Structural validation of a fleet document (from YAML/JSON or a TS object), as a value. When the
 * structure is wrong, the cross-field rules still run, so one run reports both kinds of problem, but
 * only over a document whose every value has the schema's shape: values of the wrong type are removed
 * first, a cluster whose required value was removed is left out (the others are checked, their paths
 * numbered as in the input), and if a fleet-level required value was removed the cross-field rules do
 * not run. Values that are only out of range (nodes: 0, a bad pattern) keep their place.
 */
function checkFleetDocument(input: unknown): Checked<FleetDocument> {
  const s = salvageFleetDocument(input);
  if (s.problems.length === 0) return checkedOf(s);
  const p = new ProblemCollector();
  p.addAll(s.problems);
  if (s.value) p.addAll(reindexProblems(checkFleet(s.value).problems, s.clusterIndex), { newPathsOnly: true });
  return p.failed();
}

/** A salvaged fleet document; see `salvageFleetDocument`. */
export interface SalvagedDocument extends Salvaged<FleetDocument> {
  /**
   * When clusters were left out: the place in the input of each cluster the document kept.
   * @default - every cluster kept, in place
   */
  readonly clusterIndex?: readonly number[];
}

/**
 * The schema check alone, with the document later checks can still read: the parsed document, or the
 * input without its misshapen values (values only out of range or format keep their place). A
 * cluster whose required value is unreadable is left out (`clusterIndex` says where the others were);
 * nothing when a fleet-level required value is.
 */
export function salvageFleetDocument(input: unknown): SalvagedDocument {
  const r = fleetDocumentSchema.safeParse(input);
  if (r.success) return { problems: [], value: r.data };
  const problems = zodProblems(r.error, input);
  const rest = withoutMisshapenValues(input, r.error.issues);
  const again = fleetDocumentSchema.safeParse(rest);
  if (again.success) return { problems, value: again.data };
  const unreadable = new Set<number>();
  for (const { path } of again.error.issues.filter(isShapeIssue)) {
    if (path[0] !== 'spec' || path[1] !== 'clusters' || typeof path[2] !== 'number') return { problems };
    unreadable.add(path[2]);
  }
  if (unreadable.size === 0) return { problems, value: rest as FleetDocument };
  const spec = (rest as { spec: { clusters: unknown[] } }).spec;
  const clusterIndex = spec.clusters.map((_, i) => i).filter((i) => !unreadable.has(i));
  const fewer = { ...(rest as object), spec: { ...spec, clusters: clusterIndex.map((i) => spec.clusters[i]) } };
  const third = fleetDocumentSchema.safeParse(fewer);
  if (!third.success && third.error.issues.some(isShapeIssue)) return { problems };
  return { problems, value: third.success ? third.data : (fewer as FleetDocument), clusterIndex };
}

/** Problems found in a document that left clusters out, with every `spec.clusters[i]` as the input numbers it. */
export function reindexProblems(problems: readonly FleetProblem[], clusterIndex: readonly number[] | undefined): FleetProblem[] {
  if (!clusterIndex) return [...problems];
  const renumber = (s: string): string => s.replace(/spec\.clusters\[(\d+)\]/g, (_, j: string) => `spec.clusters[${clusterIndex[Number(j)] ?? j}]`);
  return problems.map((p) => ({ ...p, path: renumber(p.path), message: renumber(p.message), ...(p.fix ? { fix: renumber(p.fix) } : {}) }));
}

/** Structural validation of a fleet document. Throws FleetValidationError with every problem. */
export function parseFleetDocument(input: unknown, source?: string): FleetDocument {
  return orThrow(checkFleetDocument(input), source);
}

// ---------------- field helpers ----------------

function parseCidrField(p: ProblemCollector, path: string, text: string): Cidr | undefined {
  const r = parseCidr(text);
  if (r.ok) return r.cidr;
  if (r.reason === 'unmasked') p.add('cidr-host-bits', path, `'${text}' has host bits set`, `use the masked network address '${r.suggestion}'`);
  else if (r.reason === 'prefix') p.add('cidr-syntax', path, `'${text}' has a prefix length longer than the address allows`, 'use /0-/32 for IPv4, /0-/128 for IPv6');
  else p.add('cidr-syntax', path, `'${text}' is not a CIDR`, 'write it as address/prefix, e.g. 10.200.0.0/16 or fd00:200::/48');
  return undefined;
}

/** The ranges the gateway runtime refuses to dial, whatever its config says (proxy/src/config.ts). */
const FORBIDDEN = FORBIDDEN_CIDRS.map((text) => ({ text, r: parseCidr(text) })).flatMap(({ text, r }) => (r.ok ? [{ text, cidr: r.cidr }] : []));

/**
 * A network the gateways would carry traffic to, in a range the gateway refuses to dial (link-local,
 * loopback, multicast, "this network", NAT64, cloud metadata, ...): valid here, refused at runtime.
 */
function checkDialable(p: ProblemCollector, path: string, iv: Interval, what: string): void {
  const hit = FORBIDDEN.find((f) => overlaps(f.cidr, iv));
  if (!hit) return;
  p.add('network-not-dialable', path,
    `${formatInterval(iv)} overlaps ${hit.text}, a range the gateway refuses to dial (link-local, loopback, multicast, "this network", translated or metadata ranges), so ${what} would validate and then fail at runtime`,
    'use ordinary unicast space: RFC 1918 (10/8, 172.16/12, 192.168/16) for IPv4, a ULA (fd00::/8) or global prefix for IPv6');
}

/** A pool item, exclusion or other a-b range; `fix` is the advice when there is no suggested spelling. */
function parseRangeField(p: ProblemCollector, path: string, text: string, fix: string): Interval | undefined {
  const r = parsePoolItem(text);
  if (r.ok) return r.interval;
  p.add('address-syntax', path, `'${text}' ${r.reason}`, r.suggestion ? `write '${r.suggestion}'` : fix);
  return undefined;
}

/** Every overlapping pair of a list (not only neighbours), reported at the later entry. */
function checkPairwiseOverlaps(p: ProblemCollector, items: readonly { interval: Interval; path: string }[], code: 'pool-overlap' | 'exclude-overlap', fix: string): void {
  for (let i = 0; i < items.length; i++) {
    for (let j = i + 1; j < items.length; j++) {
      if (overlaps(items[i].interval, items[j].interval)) p.add(code, items[j].path, `overlaps ${items[i].path} (${formatInterval(items[i].interval)})`, fix);
    }
  }
}

function checkAttachment(p: ProblemCollector, path: string, a: Attachment, family: Family | undefined): void {
  if ('mtu' in a && a.mtu !== undefined && family === 6 && a.mtu < 1280) {
    p.add('mtu-too-small', `${path}.mtu`, `${a.mtu} is below the IPv6 minimum MTU of 1280`, 'use 1280-9216 on an IPv6 network');
  }
}

// ---------------- phase 1: the cross-cluster (shared) network ----------------

const SHARED = 'spec.crossClusterNetwork.addresses';

/** The shared network as resolve sees it; capacity is checked once the clusters are known. */
interface SharedNetwork {
  readonly pool: Interval[];
  readonly family: Family;
  readonly prefixLength: number;
  readonly excluded: Interval[];
  readonly subnets: Cidr[];
  readonly usable: Interval[];
  /** Reserved addresses the pool (after exclusions) held: what the capacity formula subtracts. */
  readonly reservedInPool: bigint;
  readonly gateway?: string;
  readonly routes: { dst: string; gw: string }[];
}

function resolveSharedNetwork(p: ProblemCollector, attachment: Attachment, addresses: NonNullable<FleetSpec['crossClusterNetwork']['addresses']>): SharedNetwork {
  const pool = parsePool(p, addresses.pool);
  const family: Family = (pool[0]?.family ?? 4) as Family;
  const prefixLength = addresses.prefixLength;
  if (prefixLength > bits(family)) p.add('prefix-too-long', `${SHARED}.prefixLength`, `${prefixLength} is longer than an IPv${family} address`, `use at most ${bits(family)}`);
  const excluded = parseExclusions(p, addresses, pool);
  const subnets = prefixLength <= bits(family) ? poolSubnets(pool, family, prefixLength) : [];
  const reserved = networkAndBroadcast(subnets);
  const gateway = parseRouter(p, addresses.gateway, subnets, prefixLength);
  if (gateway) reserved.push({ family: gateway.family, start: gateway.value, end: gateway.value });
  const routes = parseRoutes(p, addresses.routes ?? [], subnets);
  if (subnets.length > 1) {
    // routes cannot mend it: a fleet-wide route's next hop is on-link in one subnet only (issue #24)
    const shown = `${subnets.slice(0, 4).map(formatCidr).join(', ')}${subnets.length > 4 ? ', ...' : ''}`;
    p.add('pool-spans-subnets', `${SHARED}.pool`,
      `spans ${subnets.length} subnets of /${prefixLength} (${shown}); members in different subnets cannot reach each other, and one fleet-wide route cannot join them (its next hop is on-link in one subnet only)`,
      'widen prefixLength so one subnet holds the pool, or, for subnets joined by routers, declare one site per subnet in spec.crossClusterNetwork.sites (each with its pool and router; README "Sites")');
  }
  const usable = subtractIntervals(subtractIntervals(pool, excluded), reserved);
  const reservedInPool = countIntervals(subtractIntervals(pool, excluded)) - countIntervals(usable);
  checkAttachment(p, 'spec.crossClusterNetwork.attachment', attachment, family);
  return { pool, family, prefixLength, excluded, subnets, usable, reservedInPool, gateway: gateway && formatAddr(gateway), routes };
}

function parsePool(p: ProblemCollector, items: readonly string[]): Interval[] {
  const parsed: { interval: Interval; path: string }[] = [];
  items.forEach((item, i) => {
    const path = `${SHARED}.pool[${i}]`;
    const interval = parseRangeField(p, path, item, 'write a CIDR (10.0.0.0/28), a range (10.0.0.10-10.0.0.29) or an address');
    if (interval) checkDialable(p, path, interval, 'gateways and handlers on the shared network');
    if (interval) parsed.push({ interval, path });
  });
  if (new Set(parsed.map((x) => x.interval.family)).size > 1) p.add('family-mismatch', `${SHARED}.pool`, 'mixes IPv4 and IPv6 entries', 'give one address family per cross-cluster network');
  checkPairwiseOverlaps(p, parsed, 'pool-overlap', 'list each address once');
  return parsed.map((x) => x.interval);
}

function parseExclusions(p: ProblemCollector, addresses: NonNullable<FleetSpec['crossClusterNetwork']['addresses']>, pool: Interval[]): Interval[] {
  const parsed: { interval: Interval; path: string }[] = [];
  (addresses.exclude ?? []).forEach((item, i) => {
    const path = `${SHARED}.exclude[${i}]`;
    const interval = parseRangeField(p, path, item, 'write a CIDR, an a-b range or an address');
    if (!interval) return;
    const inside = pool.some((iv) => contains(iv, interval)) || countIntervals(subtractIntervals([interval], pool)) === 0n;
    if (!inside) p.add('exclude-outside-pool', path, `'${item}' is not inside the pool ${addresses.pool.join(', ')}`, 'remove it, or correct it to an address the pool holds');
    parsed.push({ interval, path });
  });
  checkPairwiseOverlaps(p, parsed, 'exclude-overlap', 'merge the two exclusions into one');
  return parsed.map((x) => x.interval);
}

/** The /prefixLength subnets the pool touches (at most a little over 4096). */
function poolSubnets(pool: Interval[], family: Family, prefixLength: number): Cidr[] {
  const subnets: Cidr[] = [];
  const m = ((1n << BigInt(bits(family))) - 1n) ^ ((1n << BigInt(bits(family) - prefixLength)) - 1n);
  for (const iv of mergeIntervals(pool)) {
    let s = iv.start & m;
    while (s <= iv.end) {
      const c = cidrOf(family, s, prefixLength);
      if (!subnets.some((x) => x.start === c.start)) subnets.push(c);
      s = c.end + 1n;
      if (subnets.length > 4096) break;
    }
  }
  return subnets;
}

/** Network and broadcast (IPv4) or subnet-router anycast (IPv6) of each subnet: not assignable. */
function networkAndBroadcast(subnets: Cidr[]): Interval[] {
  const reserved: Interval[] = [];
  for (const sn of subnets) {
    const u = usableHosts(sn);
    if (u.start > sn.start) reserved.push({ family: sn.family, start: sn.start, end: sn.start });
    if (u.end < sn.end) reserved.push({ family: sn.family, start: sn.end, end: sn.end });
  }
  return reserved;
}

function parseRouter(p: ProblemCollector, text: string | undefined, subnets: Cidr[], prefixLength: number): ReturnType<typeof parseAddr> {
  if (text === undefined) return undefined;
  const g = parseAddr(text);
  if (!g) {
    p.add('address-syntax', `${SHARED}.gateway`, `'${text}' is not an address`, 'give the router address on the shared network');
    return undefined;
  }
  if (!subnets.some((sn) => sn.family === g.family && sn.start <= g.value && g.value <= sn.end)) {
    p.add('router-outside-subnet', `${SHARED}.gateway`, `${formatAddr(g)} is outside every /${prefixLength} subnet of the pool`, 'give a router address on the same subnet as the pool');
  }
  return g;
}

function parseRoutes(p: ProblemCollector, routes: readonly { dst: string; gw: string }[], subnets: readonly Cidr[]): { dst: string; gw: string }[] {
  const out: { dst: string; gw: string }[] = [];
  routes.forEach((r, i) => {
    const dst = parseCidrField(p, `${SHARED}.routes[${i}].dst`, r.dst);
    const gw = parseAddr(r.gw);
    if (!gw) p.add('address-syntax', `${SHARED}.routes[${i}].gw`, `'${r.gw}' is not an address`, 'give the next-hop router address');
    // the kernel refuses a next hop that is not on the interface's subnet ("Nexthop has invalid gateway"): static IPAM ADD fails
    if (gw && subnets.length && !subnets.some((sn) => sn.family === gw.family && sn.start <= gw.value && gw.value <= sn.end)) {
      p.add('route-off-link', `${SHARED}.routes[${i}].gw`,
        `next hop ${formatAddr(gw)} is not on the shared subnet ${subnets.map(formatCidr).join(', ')}: the kernel refuses the route (Nexthop has invalid gateway), so the pod's attachment fails`,
        'give a router on the shared subnet as next hop; for subnets in other data centres declare spec.crossClusterNetwork.sites');
    }
    if (dst && gw) out.push({ dst: formatCidr(dst), gw: formatAddr(gw) });
  });
  return out;
}

// ---------------- phase 2: the in-cluster migration network template ----------------

interface MigrationTemplate {
  readonly supernet?: Cidr;
  readonly family: Family;
  readonly clusterPrefixLength: number;
}

function resolveMigrationTemplate(p: ProblemCollector, mn: FleetSpec['migrationNetwork'], shared: SharedNetwork): MigrationTemplate {
  const supernet = mn?.supernet !== undefined ? parseCidrField(p, 'spec.migrationNetwork.supernet', mn.supernet) : undefined;
  if (supernet) checkDialable(p, 'spec.migrationNetwork.supernet', supernet, 'the in-cluster migration networks carved from it');
  const family: Family = supernet?.family ?? shared.family;
  const clusterPrefixLength = mn?.clusterPrefixLength ?? DEFAULTS.clusterPrefixLength[family];
  if (supernet && clusterPrefixLength < supernet.prefix) {
    p.add('prefix-too-short', 'spec.migrationNetwork.clusterPrefixLength', `/${clusterPrefixLength} is larger than the supernet ${formatCidr(supernet)}`,
      `use a prefix length of at least ${supernet.prefix}`);
  }
  if (clusterPrefixLength > bits(family) - 2) {
    p.add('prefix-too-long', 'spec.migrationNetwork.clusterPrefixLength', `/${clusterPrefixLength} leaves no room for hosts`, `use at most /${bits(family) - 2}`);
  }
  if (mn) checkAttachment(p, 'spec.migrationNetwork.attachment', mn.attachment, family);
  if (supernet && shared.pool.some((iv) => overlaps(iv, supernet))) {
    p.add('cidr-overlap', 'spec.migrationNetwork.supernet', `${formatCidr(supernet)} overlaps the cross-cluster pool`,
      'carve in-cluster CIDRs from a range disjoint from the shared network');
  }
  return { supernet, family, clusterPrefixLength };
}

function resolveGatewayTls(doc: FleetDocument): ResolvedGateway['tls'] {
  const tls = doc.spec.gateway?.tls;
  if (!tls) return { kind: 'issuer', name: `${doc.metadata.name}-ca`, issuerKind: 'ClusterIssuer' };
  if ('issuerRef' in tls) return { kind: 'issuer', name: tls.issuerRef.name, issuerKind: tls.issuerRef.kind ?? 'ClusterIssuer' };
  if ('secretName' in tls) return { kind: 'secret', secretName: tls.secretName };
  return { kind: 'plaintext' };
}

/**
 * The tunnel's payload mode. `splice` leaves the payload's protection to KubeVirt's migration TLS, so it is the
 * default where that TLS is on and refused where the fleet turns it off (VM memory would cross the shared network
 * in clear); `tls` is the default there.
 */
function resolvePayload(p: ProblemCollector, asked: 'splice' | 'tls' | undefined, plaintextTunnel: boolean, kubevirtTlsOff: boolean): 'splice' | 'tls' {
  const path = 'spec.gateway.payload';
  if (asked === 'splice' && plaintextTunnel) {
    p.add('splice-without-mtls', path, "'splice' authenticates the gateways with mutual TLS, but spec.gateway.tls is plaintext",
      'use mTLS material (spec.gateway.tls.issuerRef or secretName), or remove payload');
  }
  if (asked === 'splice' && kubevirtTlsOff) {
    p.add('splice-without-kubevirt-tls', path,
      "'splice' carries migration traffic without the gateways' encryption, and spec.migrationPolicy.disableTLS: true turns off " +
      "KubeVirt's own TLS: VM memory would cross the shared network in clear",
      "remove spec.migrationPolicy.disableTLS (KubeVirt's migration TLS on), or set spec.gateway.payload: tls");
  }
  return asked ?? (kubevirtTlsOff ? 'tls' : 'splice');
}

// ---------------- phase 3: the clusters ----------------

function resolveClusters(p: ProblemCollector, spec: FleetSpec, template: MigrationTemplate): ResolvedCluster[] {
  const seen = new Map<string, number>();
  return spec.clusters.map((c: ClusterSpec, i) => {
    if (seen.has(c.name)) p.add('duplicate-cluster-name', `spec.clusters[${i}].name`, `'${c.name}' is also the name of spec.clusters[${seen.get(c.name)}]`, 'give every cluster a unique name');
    else seen.set(c.name, i);
    return resolveCluster(p, spec, c, i, template);
  });
}

function resolveCluster(p: ProblemCollector, spec: FleetSpec, c: ClusterSpec, index: number, template: MigrationTemplate): ResolvedCluster {
  const cp = `spec.clusters[${index}]`;
  const datapath = c.datapath ?? spec.datapath ?? DEFAULTS.datapath;
  const kubevirt = resolveKubevirt(p, spec, c, cp, datapath);
  const attachment = c.migrationNetwork?.attachment ?? spec.migrationNetwork?.attachment;
  if (!attachment && datapath !== 'direct') {
    p.add('migration-network-missing', 'spec.migrationNetwork.attachment', `cluster ${c.name} uses datapath ${datapath}, which needs an in-cluster migration network, and none is given`,
      'add spec.migrationNetwork.attachment (e.g. {type: bridge, bridge: br-mig, vlan: 100}) or a per-cluster migrationNetwork.attachment');
  }
  if (c.migrationNetwork?.attachment) checkAttachment(p, `${cp}.migrationNetwork.attachment`, c.migrationNetwork.attachment, template.family);
  let migrationCidr: Cidr | undefined;
  if (c.migrationNetwork?.cidr !== undefined) {
    migrationCidr = parseCidrField(p, `${cp}.migrationNetwork.cidr`, c.migrationNetwork.cidr);
    if (migrationCidr) checkDialable(p, `${cp}.migrationNetwork.cidr`, migrationCidr, `cluster ${c.name}'s in-cluster migration network`);
  } else if (spec.migrationNetwork?.supernet === undefined && datapath !== 'direct') {
    p.add('migration-network-missing', `${cp}.migrationNetwork.cidr`, `cluster ${c.name} has no in-cluster migration CIDR and the fleet has no supernet to carve one from`,
      `give ${cp}.migrationNetwork.cidr or spec.migrationNetwork.supernet`);
  }
  const migrationExclude = parseClusterExclusions(p, c, cp, migrationCidr);
  const cidrs = (list: readonly string[] | undefined, field: string): Cidr[] =>
    (list ?? []).map((t, j) => parseCidrField(p, `${cp}.${field}[${j}]`, t)).filter((x): x is Cidr => !!x);
  const podCidrs = cidrs(c.podCidrs, 'podCidrs');
  const serviceCidrs = cidrs(c.serviceCidrs, 'serviceCidrs');
  const sync = { ...spec.syncControllers, ...c.syncControllers };
  const gatewayReplicas = c.gateway?.replicas ?? spec.gateway?.replicas ?? DEFAULTS.gatewayReplicas;
  return {
    name: c.name, index, nodes: c.nodes, datapath, kubevirt,
    syncReplicas: sync.replicas ?? DEFAULTS.syncReplicas,
    syncPlacement: sync.placement ?? DEFAULTS.syncPlacement,
    migrationAttachment: (attachment ?? spec.crossClusterNetwork.attachment) as Attachment,
    migrationCidr, migrationExclude,
    gatewayReplicas,
    gatewayVip: datapath === 'gateway' && gatewayReplicas > 1 && (spec.gateway?.failover?.mode ?? DEFAULTS.failoverMode) === 'vip',
    trustAgentReplicas: 0, // set once trust is resolved (salvageFleet)
    site: '', // set once the sites are resolved (salvageFleet)
    podCidrs, serviceCidrs,
    multiNetworkPolicy: c.multiNetworkPolicy ?? false,
    openshift: c.openshift ?? kubevirt.configDelivery === 'hco',
  };
}

function resolveKubevirt(p: ProblemCollector, spec: FleetSpec, c: ClusterSpec, cp: string, datapath: Datapath): ResolvedKubevirt {
  const kv = { ...spec.kubevirt, ...c.kubevirt };
  const configDelivery = kv.configDelivery ?? DEFAULTS.configDelivery;
  const versionText = kv.version ?? DEFAULT_KUBEVIRT_VERSION;
  // a version the schema refused (`latest`, `""`) was reported there; the checks below read the default
  const parsed = parseKubevirtVersion(versionText);
  const version = parsed ?? parseKubevirtVersion(DEFAULT_KUBEVIRT_VERSION)!;
  const versionPath = c.kubevirt?.version !== undefined ? `${cp}.kubevirt.version` : 'spec.kubevirt.version';
  if (parsed && !supportsDecentralizedMigration(version)) {
    p.add('kubevirt-too-old', versionPath, `KubeVirt ${versionText} has no decentralized live migration (it arrived in v1.6.0)`,
      'upgrade the cluster to KubeVirt 1.6 or later, or leave it out of the fleet');
  }
  const hasProxyApi = hasCrossClusterProxyApi(version);
  if (parsed && datapath === 'native' && !hasProxyApi) {
    p.add('native-needs-pr17922', c.datapath ? `${cp}.datapath` : 'spec.datapath',
      `native datapath needs migrations.decentralizedLiveMigrationDatapath, migrations.crossClusterNetwork and spec.synchronizationPlacement, which KubeVirt ${versionText} (cluster ${c.name}) does not have: they exist only in the open kubevirt/kubevirt PR #17922, and the API server prunes unknown fields`,
      `use datapath: gateway (works with every released KubeVirt), or declare a build that carries the PR as kubevirt.version: "${version.major}.${version.minor}.${version.patch}+pr17922"`);
  }
  for (const field of Object.keys(MIGRATION_FIELD_SINCE)) {
    if (parsed && (spec.migrationPolicy as Record<string, unknown> | undefined)?.[field] !== undefined && !fieldSupported(version, field)) {
      const [ma, mi] = MIGRATION_FIELD_SINCE[field];
      p.add('migration-field-unsupported', `spec.migrationPolicy.${field}`,
        `KubeVirt ${versionText} (cluster ${c.name}) has no migrations.${field} (added in v${ma}.${mi}); the API server would prune it`, `remove it, or upgrade the cluster to ${ma}.${mi}`);
    }
  }
  const hco = configDelivery === 'hco';
  return {
    namespace: kv.namespace ?? (hco ? DEFAULTS.hcoNamespace : DEFAULTS.kubevirtNamespace),
    name: kv.name ?? (hco ? DEFAULTS.hcoName : DEFAULTS.kubevirtName),
    version, configDelivery, hasProxyApi,
    existing: resolveExistingKubevirt(spec.kubevirt?.existing, c.kubevirt?.existing),
  };
}

function parseClusterExclusions(p: ProblemCollector, c: ClusterSpec, cp: string, cidr: Cidr | undefined): Interval[] {
  const out: Interval[] = [];
  (c.migrationNetwork?.exclude ?? []).forEach((item, j) => {
    const path = `${cp}.migrationNetwork.exclude[${j}]`;
    const interval = parseRangeField(p, path, item, 'write a CIDR, an a-b range or an address');
    if (!interval) return;
    if (cidr && !contains(cidr, interval)) p.add('exclude-outside-pool', path, `'${item}' is outside the cluster CIDR ${formatCidr(cidr)}`, 'remove it or correct it');
    out.push(interval);
  });
  return out;
}

// ---------------- phase 4: overlaps between per-cluster CIDRs, the pool, pod/service CIDRs ----------------

function checkCidrOverlaps(p: ProblemCollector, clusters: ResolvedCluster[], pool: Interval[], template: MigrationTemplate): void {
  const declared: { cidr: Cidr; what: string; path: string; migration: boolean }[] = [];
  for (const c of clusters) {
    const cp = `spec.clusters[${c.index}]`;
    if (c.migrationCidr) declared.push({ cidr: c.migrationCidr, what: `cluster ${c.name} migration CIDR`, path: `${cp}.migrationNetwork.cidr`, migration: true });
    c.podCidrs.forEach((x, j) => declared.push({ cidr: x, what: `cluster ${c.name} pod CIDR`, path: `${cp}.podCidrs[${j}]`, migration: false }));
    c.serviceCidrs.forEach((x, j) => declared.push({ cidr: x, what: `cluster ${c.name} service CIDR`, path: `${cp}.serviceCidrs[${j}]`, migration: false }));
  }
  const { supernet } = template;
  for (const [mi, m] of declared.entries()) {
    if (!m.migration) continue;
    for (const [di, d] of declared.entries()) {
      if (d === m || !overlaps(m.cidr, d.cidr)) continue;
      // report each migration/migration pair once; a pod or service CIDR of any cluster conflicts too (routes would capture it)
      if (d.migration && di > mi) continue;
      p.add('cidr-overlap', m.path, `${formatCidr(m.cidr)} overlaps ${d.what} ${formatCidr(d.cidr)} (${d.path})`, 'give each cluster a disjoint migration CIDR, outside every pod and service CIDR');
    }
    if (pool.some((iv) => overlaps(iv, m.cidr))) {
      p.add('cidr-overlap', m.path, `${formatCidr(m.cidr)} overlaps the cross-cluster pool`, 'keep in-cluster migration CIDRs disjoint from the shared network');
    }
    if (m.cidr.family !== template.family && supernet) {
      p.add('family-mismatch', m.path, `${formatCidr(m.cidr)} is IPv${m.cidr.family} but the supernet is IPv${template.family}`, 'use one address family for the in-cluster migration networks');
    }
  }
  for (const d of supernet ? declared : []) {
    if (d.migration || !overlaps(supernet!, d.cidr)) continue;
    p.add('cidr-overlap', 'spec.migrationNetwork.supernet',
      `${formatCidr(supernet!)} overlaps ${d.what} ${formatCidr(d.cidr)} (${d.path}); handler routes to the supernet would capture that traffic`,
      'choose a supernet disjoint from every pod and service CIDR');
  }
}

// ---------------- phase 5: capacity ----------------

/** Explicit in-cluster CIDRs (carved ones are checked by the planner). */
function checkInClusterCapacity(p: ProblemCollector, clusters: ResolvedCluster[], surge: number): void {
  for (const c of clusters) {
    if (!c.migrationCidr || c.datapath === 'direct') continue;
    const needed = inClusterNeeded(c, surge);
    const usableIn = countIntervals(subtractIntervals([usableHosts(c.migrationCidr)], c.migrationExclude));
    if (BigInt(needed) > usableIn) {
      p.add('cidr-too-small', `spec.clusters[${c.index}].migrationNetwork.cidr`,
        `${formatCidr(c.migrationCidr)} is too small for cluster ${c.name}: needed ${needed} = ${inClusterBreakdown(c, surge)}, usable ${usableIn}`,
        `use a larger CIDR (at least /${bits(c.migrationCidr.family) - bitLength(BigInt(needed) + 2n)})`);
    }
  }
}

/** The shared pool against what every cluster holds in its mode; returns the counts the plan reports. */
function checkSharedCapacity(
  p: ProblemCollector, shared: SharedNetwork, clusters: ResolvedCluster[], surge: number,
): { poolCount: bigint; excludedCount: bigint; usableCount: bigint } {
  const poolCount = countIntervals(mergeIntervals(shared.pool));
  const excludedCount = countIntervals(mergeIntervals(shared.excluded));
  const usableCount = countIntervals(shared.usable);
  const needed = clusters.reduce((n, c) => n + crossClusterNeeded(c, surge), 0);
  if (shared.pool.length > 0 && BigInt(needed) > usableCount) {
    const missing = BigInt(needed) - usableCount;
    const alternative = clusters.some((c) => c.datapath === 'direct') ? ', or use datapath: gateway (one address per gateway replica)' : ', or lower gateway.replicas';
    p.add('pool-too-small', `${SHARED}.pool`,
      `pool too small: needed ${needed} (${summarizeNeeded(clusters, surge)}), usable ${usableCount} = ${poolCount} in pool - ${excludedCount} excluded - ${shared.reservedInPool} network/broadcast${shared.gateway ? '/router' : ''}`,
      `add ${missing} more address${missing === 1n ? '' : 'es'} to the pool, remove exclusions${alternative}`);
  }
  return { poolCount, excludedCount, usableCount };
}

function bitLength(n: bigint): number {
  let b = 0;
  while ((1n << BigInt(b)) < n) b++;
  return b;
}

function summarizeNeeded(clusters: ResolvedCluster[], surge: number): string {
  const parts: string[] = [];
  const gw = clusters.filter((c) => c.datapath === 'gateway');
  const dir = clusters.filter((c) => c.datapath === 'direct');
  const nat = clusters.filter((c) => c.datapath === 'native');
  const sum = (list: ResolvedCluster[]): number => list.reduce((n, c) => n + crossClusterNeeded(c, surge), 0);
  if (gw.length) parts.push(`gateway: ${gw.length} clusters x replicas = ${sum(gw)}`);
  const agents = (list: ResolvedCluster[]): string => (list.some((c) => c.trustAgentReplicas > 0) ? ' + trust agents' : '');
  if (dir.length) parts.push(`direct: (nodes + sync controllers + ${surge} surge${agents(dir)}) per cluster over ${dir.length} clusters = ${sum(dir)}`);
  if (nat.length) parts.push(`native: (sync controllers + ${surge} surge${agents(nat)}) over ${nat.length} clusters = ${sum(nat)}`);
  return parts.join('; ');
}

// ---------------- the phases together ----------------

/** Resolve defaults and check everything that relates several fields, as a value (every problem). */
function checkFleet(doc: FleetDocument): Checked<ResolvedFleet> {
  return checkedOf(salvageFleet(doc));
}

/**
 * `checkFleet` with the resolved fleet even when problems were found (every cluster, every default
 * applied; a value that did not parse is left out), for the checks that can still run on the parts
 * without problems (src/fleet/salvage.ts).
 */
export function salvageFleet(doc: FleetDocument): Salvaged<ResolvedFleet> {
  const p = new ProblemCollector();
  const spec = doc.spec;
  // issue #24: one site per subnet (the default site when the fleet declares none), src/fleet/sites.ts
  const siteParts = resolveSites(p, spec.crossClusterNetwork, resolveSharedNetwork);
  const shared = unionOfSites(siteParts);
  const siteOf = siteOfClusters(p, spec.clusters, siteParts.map((x) => x.site), spec.crossClusterNetwork.sites !== undefined);
  const template = resolveMigrationTemplate(p, spec.migrationNetwork, shared);
  const surge = spec.addressSurge ?? DEFAULTS.addressSurge;
  const resolved = resolveClusters(p, spec, template);
  const trustProblems: FleetProblem[] = [];
  const trust = resolveTrust(spec.trust, resolved.map((c) => ({ ...c, configDelivery: c.kubevirt.configDelivery })), trustProblems);
  // issue #30: a cluster without a gateway exchanges through a trust agent, one shared address per replica
  const clusters = resolved.map((c) => ({
    ...c, site: siteOf.get(c.name) ?? siteParts[0].site.name, ...(trust.clusters[c.name]?.agent ? { trustAgentReplicas: c.gatewayReplicas } : {}),
  }));
  checkCidrOverlaps(p, clusters, shared.pool, template);
  checkInClusterCapacity(p, clusters, surge);
  const counts = siteParts
    .map(({ site, net }) => withSitePaths(p, site, false, (q) => checkSharedCapacity(q, net, clusters.filter((c) => c.site === site.name), surge)))
    .reduce((a, b) => ({ poolCount: a.poolCount + b.poolCount, excludedCount: a.excludedCount + b.excludedCount, usableCount: a.usableCount + b.usableCount }));
  // what KubeVirt's admission and Kubernetes' validation would refuse (src/admission/)
  p.addAll(kubevirtAdmissionProblems(doc));
  p.addAll(trustProblems);
  for (const x of existingKubevirtProblems(doc)) p.add('existing-kubevirt-invalid', x.path, x.message, x.fix);
  const cc = spec.crossClusterNetwork;
  const gw = spec.gateway ?? {};
  const tls = resolveGatewayTls(doc);
  // the runtime listens on fixed ports besides the tunnel: one port twice is a pod that cannot start
  const fixedPorts: Record<number, string> = { [DEFAULT_INTERCEPT_PORT]: 'the intercept listener', [DEFAULT_ADMIN_PORT]: 'the admin listener (/healthz, /readyz, /metrics)' };
  if (gw.tunnelPort !== undefined && fixedPorts[gw.tunnelPort]) {
    p.add('gateway-port-conflict', 'spec.gateway.tunnelPort', `${gw.tunnelPort} is the port of ${fixedPorts[gw.tunnelPort]} in the gateway pod; two listeners cannot share it`,
      `choose another port (the default is ${DEFAULT_TUNNEL_PORT}; ${DEFAULT_INTERCEPT_PORT} and ${DEFAULT_ADMIN_PORT} are taken)`);
  }
  const payload = resolvePayload(p, gw.payload, tls.kind === 'plaintext', spec.migrationPolicy?.disableTLS === true);
  return {
    problems: p.problems,
    value: {
      name: doc.metadata.name, trust,
      crossCluster: {
        nadName: cc.name ?? DEFAULTS.crossClusterNadName, attachment: cc.attachment, family: shared.family, prefixLength: shared.prefixLength,
        usable: shared.usable, ...counts, reservedCount: shared.reservedInPool,
        subnets: shared.subnets, gateway: shared.gateway, routes: shared.routes, sites: siteParts.map((x) => x.site),
      },
      migrationNadName: spec.migrationNetwork?.name ?? DEFAULTS.migrationNadName,
      supernet: template.supernet, clusterPrefixLength: template.clusterPrefixLength,
      gateway: {
        image: gw.image ?? DEFAULTS.gatewayImage, tunnelPort: gw.tunnelPort ?? DEFAULTS.tunnelPort,
        placement: gw.placement, tls, payload, serviceMonitor: gw.serviceMonitor ?? false, alerts: gw.alerts ?? gw.serviceMonitor ?? false,
        failover: { mode: gw.failover?.mode ?? DEFAULTS.failoverMode, virtualRouterId: gw.failover?.virtualRouterId ?? DEFAULTS.virtualRouterId },
      },
      migrationPolicy: spec.migrationPolicy ?? {},
      addressSurge: surge,
      clusters: [...clusters].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
    },
  };
}

/** Resolve defaults and check everything that relates several fields. Throws FleetValidationError with every problem. */
export function resolveFleet(doc: FleetDocument, source?: string): ResolvedFleet {
  return orThrow(checkFleet(doc), source);
}
