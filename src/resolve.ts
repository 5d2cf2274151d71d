/**
 * Fleet validation and normalization: every default applied, every address parsed, every problem
 * collected (not only the first). Pure, no cdk8s import.
 */
import { z } from 'zod';
import { FleetProblem, Problems, pathToString, FleetValidationError } from './errors';
import { kubevirtAdmissionProblems } from './admission/kubevirt';
import {
  Attachment, ClusterSpec, ConfigDelivery, Datapath, FleetDocument, fleetDocumentSchema, FleetSpec, Placement,
  SyncPlacement, FLEET_API_VERSION, FLEET_KIND,
} from './fleet-schema';
import {
  Cidr, Family, Interval, bits, cidrOf, contains, countIntervals, formatCidr, formatInterval, mergeIntervals,
  overlaps, parseAddr, parseCidr, parsePoolItem, subtractIntervals, Addr, formatAddr, addr,
} from './ip';
import {
  DEFAULT_KUBEVIRT_VERSION, KubevirtVersion, fieldSupported, hasCrossClusterProxyApi, parseKubevirtVersion,
  supportsDecentralizedMigration, MIGRATION_FIELD_SINCE,
} from './kubevirt-versions';
import { TrustPlan, resolveTrust } from './trust';

export const DEFAULTS = {
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
  tunnelPort: 15443,
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
  readonly podCidrs: Cidr[];
  readonly serviceCidrs: Cidr[];
  readonly multiNetworkPolicy: boolean;
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
}

export interface ResolvedGateway {
  readonly image: string;
  readonly tunnelPort: number;
  readonly placement?: Placement;
  readonly tls: { kind: 'issuer'; name: string; issuerKind: 'Issuer' | 'ClusterIssuer' } | { kind: 'secret'; secretName: string } | { kind: 'plaintext' };
  /** How an mTLS tunnel carries the payload (`spec.gateway.payload`): spliced (KubeVirt's TLS alone) or inside TLS. */
  readonly payload: 'splice' | 'tls';
  readonly serviceMonitor: boolean;
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
  /** KubeVirt CA rotation and CA exchange per cluster (src/trust.ts). */
  readonly trust: TrustPlan;
}

/** Addresses one cluster holds on its in-cluster migration network. */
export const inClusterNeeded = (c: ResolvedCluster, surge: number): number =>
  c.nodes + c.syncReplicas + (c.datapath === 'gateway' ? c.gatewayReplicas + (c.gatewayVip ? 1 : 0) : 0) + surge;

/** Addresses one cluster holds on the shared cross-cluster network, by datapath mode. */
export function crossClusterNeeded(c: ResolvedCluster, surge: number, mode: Datapath = c.datapath): number {
  if (mode === 'gateway') return c.gatewayReplicas;
  if (mode === 'native') return c.syncReplicas + surge;
  return c.nodes + c.syncReplicas + surge;
}

/** Usable host addresses of a CIDR: IPv4 loses network and broadcast (except /31, /32); IPv6 loses the subnet-router anycast. */
export function usableHosts(c: Cidr): Interval {
  const hostBits = bits(c.family) - c.prefix;
  if (c.family === 4 && hostBits >= 2) return { family: 4, start: c.start + 1n, end: c.end - 1n };
  if (c.family === 6 && hostBits >= 1) return { family: 6, start: c.start + 1n, end: c.end };
  return { family: c.family, start: c.start, end: c.end };
}

function zodProblems(err: z.ZodError, base: PropertyKey[] = []): FleetProblem[] {
  const out: FleetProblem[] = [];
  for (const issue of err.issues) {
    const path = pathToString([...base, ...issue.path]) || '(document)';
    let message = issue.message;
    let fix: string | undefined;
    if (issue.code === 'unrecognized_keys') {
      message = `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')}`;
      fix = 'remove it or check its spelling against the fleet format in README';
    } else if (issue.code === 'invalid_union' && 'note' in issue && issue.note === 'No matching discriminator') {
      message = 'unknown attachment type';
      fix = 'use one of macvlan, bridge, ipvlan, host-device';
    } else if (issue.code === 'invalid_type') {
      fix = undefined;
    }
    out.push({ path, message, fix });
  }
  return out;
}

/** Structural validation of a fleet document (from YAML/JSON or a TS object). */
export function parseFleetDocument(input: unknown, source?: string): FleetDocument {
  const r = fleetDocumentSchema.safeParse(input);
  if (r.success) return r.data;
  const problems = zodProblems(r.error);
  // Report the cross-field problems too (all at once), as far as the malformed document allows.
  try {
    resolveFleet(input as FleetDocument);
  } catch (e) {
    if (e instanceof FleetValidationError) {
      const seen = new Set(problems.map((p) => p.path));
      for (const p of e.problems) if (!seen.has(p.path)) problems.push(p);
    }
  }
  throw new FleetValidationError(problems, source);
}

function parseCidrField(p: Problems, path: string, text: string): Cidr | undefined {
  const r = parseCidr(text);
  if (r.ok) return r.cidr;
  if (r.reason === 'unmasked') p.add(path, `'${text}' has host bits set`, `use the masked network address '${r.suggestion}'`);
  else if (r.reason === 'prefix') p.add(path, `'${text}' has a prefix length longer than the address allows`, 'use /0-/32 for IPv4, /0-/128 for IPv6');
  else p.add(path, `'${text}' is not a CIDR`, 'write it as address/prefix, e.g. 10.200.0.0/16 or fd00:200::/48');
  return undefined;
}

function checkAttachment(p: Problems, path: string, a: Attachment, family: Family | undefined): void {
  if ('mtu' in a && a.mtu !== undefined && family === 6 && a.mtu < 1280) {
    p.add(`${path}.mtu`, `${a.mtu} is below the IPv6 minimum MTU of 1280`, 'use 1280-9216 on an IPv6 network');
  }
}

/** Resolve defaults and check everything that relates several fields. Throws FleetValidationError. */
export function resolveFleet(doc: FleetDocument, source?: string): ResolvedFleet {
  const p = new Problems();
  const spec = doc.spec;
  const S = 'spec';

  // ---- cross-cluster network ---------------------------------------------------------------
  const cc = spec.crossClusterNetwork;
  const ccPath = `${S}.crossClusterNetwork.addresses`;
  const pool: Interval[] = [];
  const poolItems: { interval: Interval; path: string }[] = [];
  cc.addresses.pool.forEach((item, i) => {
    const r = parsePoolItem(item);
    if (!r.ok) {
      p.add(`${ccPath}.pool[${i}]`, `'${item}' ${r.reason}`, r.suggestion ? `write '${r.suggestion}'` : 'write a CIDR (10.0.0.0/28), a range (10.0.0.10-10.0.0.29) or an address');
    }
    else { pool.push(r.interval); poolItems.push({ interval: r.interval, path: `${ccPath}.pool[${i}]` }); }
  });
  const families = new Set(pool.map((i) => i.family));
  if (families.size > 1) p.add(`${ccPath}.pool`, 'mixes IPv4 and IPv6 entries', 'give one address family per cross-cluster network');
  const family: Family = (pool[0]?.family ?? 4) as Family;
  // overlapping pool entries
  for (let i = 0; i < poolItems.length; i++) {
    for (let j = i + 1; j < poolItems.length; j++) {
      if (overlaps(poolItems[i].interval, poolItems[j].interval)) {
        p.add(poolItems[j].path, `overlaps ${poolItems[i].path} (${formatInterval(poolItems[i].interval)})`, 'list each address once');
      }
    }
  }
  const prefixLength = cc.addresses.prefixLength;
  if (prefixLength > bits(family)) p.add(`${ccPath}.prefixLength`, `${prefixLength} is longer than an IPv${family} address`, `use at most ${bits(family)}`);
  const excluded: Interval[] = [];
  const exItems: { interval: Interval; path: string }[] = [];
  (cc.addresses.exclude ?? []).forEach((item, i) => {
    const path = `${ccPath}.exclude[${i}]`;
    const r = parsePoolItem(item);
    if (!r.ok) { p.add(path, `'${item}' ${r.reason}`, r.suggestion ? `write '${r.suggestion}'` : 'write a CIDR, an a-b range or an address'); return; }
    const inside = pool.some((iv) => contains(iv, r.interval)) || countIntervals(subtractIntervals([r.interval], pool)) === 0n;
    if (!inside) p.add(path, `'${item}' is not inside the pool ${cc.addresses.pool.join(', ')}`, 'remove it, or correct it to an address the pool holds');
    exItems.push({ interval: r.interval, path });
    excluded.push(r.interval);
  });
  // every pair, not only neighbours
  for (let i = 0; i < exItems.length; i++) {
    for (let j = i + 1; j < exItems.length; j++) {
      if (overlaps(exItems[i].interval, exItems[j].interval)) {
        p.add(exItems[j].path, `overlaps ${exItems[i].path} (${formatInterval(exItems[i].interval)})`, 'merge the two exclusions into one');
      }
    }
  }
  // subnets of /prefixLength the pool touches; network/broadcast of each are not usable
  const subnets: Cidr[] = [];
  if (prefixLength <= bits(family)) {
    for (const iv of mergeIntervals(pool)) {
      const m = ((1n << BigInt(bits(family))) - 1n) ^ ((1n << BigInt(bits(family) - prefixLength)) - 1n);
      let s = iv.start & m;
      while (s <= iv.end) {
        const c = cidrOf(family, s, prefixLength);
        if (!subnets.some((x) => x.start === c.start)) subnets.push(c);
        s = c.end + 1n;
        if (subnets.length > 4096) break;
      }
    }
  }
  const reserved: Interval[] = [];
  for (const sn of subnets) {
    const u = usableHosts(sn);
    if (u.start > sn.start) reserved.push({ family, start: sn.start, end: sn.start });
    if (u.end < sn.end) reserved.push({ family, start: sn.end, end: sn.end });
  }
  let ccGateway: string | undefined;
  if (cc.addresses.gateway !== undefined) {
    const g = parseAddr(cc.addresses.gateway);
    if (!g) {
      p.add(`${ccPath}.gateway`, `'${cc.addresses.gateway}' is not an address`, 'give the router address on the shared network');
    }
    else {
      ccGateway = formatAddr(g);
      reserved.push({ family: g.family, start: g.value, end: g.value });
      if (!subnets.some((sn) => sn.family === g.family && sn.start <= g.value && g.value <= sn.end)) {
        p.add(`${ccPath}.gateway`, `${ccGateway} is outside every /${prefixLength} subnet of the pool`, 'give a router address on the same subnet as the pool');
      }
    }
  }
  const routes: { dst: string; gw: string }[] = [];
  (cc.addresses.routes ?? []).forEach((r, i) => {
    const dst = parseCidrField(p, `${ccPath}.routes[${i}].dst`, r.dst);
    const gw = parseAddr(r.gw);
    if (!gw) p.add(`${ccPath}.routes[${i}].gw`, `'${r.gw}' is not an address`, 'give the next-hop router address');
    if (dst && gw) routes.push({ dst: formatCidr(dst), gw: formatAddr(gw) });
  });
  if (subnets.length > 1 && routes.length === 0) {
    p.add(`${ccPath}.pool`, `spans ${subnets.length} subnets of /${prefixLength} (${subnets.slice(0, 4).map(formatCidr).join(', ')}${subnets.length > 4 ? ', ...' : ''}); gateways in different subnets cannot reach each other without a route`,
      `widen prefixLength so one subnet holds the pool, or add addresses.routes via a router`);
  }
  const usable = subtractIntervals(subtractIntervals(pool, excluded), reserved);
  // reserved addresses that the pool (after exclusions) actually held: what the capacity formula subtracts
  const reservedInPool = countIntervals(subtractIntervals(pool, excluded)) - countIntervals(usable);
  checkAttachment(p, `${S}.crossClusterNetwork.attachment`, cc.attachment, family);

  // ---- in-cluster migration network --------------------------------------------------------
  const mn = spec.migrationNetwork;
  let supernet: Cidr | undefined;
  if (mn?.supernet !== undefined) supernet = parseCidrField(p, `${S}.migrationNetwork.supernet`, mn.supernet);
  const mnFamily: Family = supernet?.family ?? family;
  const clusterPrefixLength = mn?.clusterPrefixLength ?? DEFAULTS.clusterPrefixLength[mnFamily];
  if (supernet && clusterPrefixLength < supernet.prefix) {
    p.add(`${S}.migrationNetwork.clusterPrefixLength`, `/${clusterPrefixLength} is larger than the supernet ${formatCidr(supernet)}`, `use a prefix length of at least ${supernet.prefix}`);
  }
  if (clusterPrefixLength > bits(mnFamily) - 2) {
    p.add(`${S}.migrationNetwork.clusterPrefixLength`, `/${clusterPrefixLength} leaves no room for hosts`, `use at most /${bits(mnFamily) - 2}`);
  }
  if (mn) checkAttachment(p, `${S}.migrationNetwork.attachment`, mn.attachment, mnFamily);
  if (supernet && pool.some((iv) => overlaps(iv, supernet!))) {
    p.add(`${S}.migrationNetwork.supernet`, `${formatCidr(supernet)} overlaps the cross-cluster pool`, 'carve in-cluster CIDRs from a range disjoint from the shared network');
  }

  // ---- fleet-wide defaults -----------------------------------------------------------------
  const fleetDatapath = spec.datapath ?? DEFAULTS.datapath;
  const surge = spec.addressSurge ?? DEFAULTS.addressSurge;
  const gw = spec.gateway ?? {};
  const tls: ResolvedGateway['tls'] = !gw.tls
    ? { kind: 'issuer', name: `${doc.metadata.name}-ca`, issuerKind: 'ClusterIssuer' }
    : 'issuerRef' in gw.tls ? { kind: 'issuer', name: gw.tls.issuerRef.name, issuerKind: gw.tls.issuerRef.kind ?? 'ClusterIssuer' }
      : 'secretName' in gw.tls ? { kind: 'secret', secretName: gw.tls.secretName } : { kind: 'plaintext' };
  const payload = resolvePayload(p, S, gw.payload, tls.kind === 'plaintext', spec.migrationPolicy?.disableTLS === true);

  // ---- clusters ----------------------------------------------------------------------------
  const seen = new Map<string, number>();
  const clusters: ResolvedCluster[] = [];
  spec.clusters.forEach((c: ClusterSpec, i) => {
    const cp = `${S}.clusters[${i}]`;
    if (seen.has(c.name)) p.add(`${cp}.name`, `'${c.name}' is also the name of spec.clusters[${seen.get(c.name)}]`, 'give every cluster a unique name');
    else seen.set(c.name, i);
    const datapath = c.datapath ?? fleetDatapath;
    const kvIn = { ...spec.kubevirt, ...c.kubevirt };
    const configDelivery = kvIn.configDelivery ?? DEFAULTS.configDelivery;
    const versionText = kvIn.version ?? DEFAULT_KUBEVIRT_VERSION;
    const version = parseKubevirtVersion(versionText)!;
    const versionPath = c.kubevirt?.version !== undefined ? `${cp}.kubevirt.version` : `${S}.kubevirt.version`;
    if (!supportsDecentralizedMigration(version)) {
      p.add(versionPath, `KubeVirt ${versionText} has no decentralized live migration (it arrived in v1.6.0)`, 'upgrade the cluster to KubeVirt 1.6 or later, or leave it out of the fleet');
    }
    const hasProxyApi = hasCrossClusterProxyApi(version);
    if (datapath === 'native' && !hasProxyApi) {
      p.add(c.datapath ? `${cp}.datapath` : `${S}.datapath`,
        `native datapath needs migrations.decentralizedLiveMigrationDatapath, migrations.crossClusterNetwork and spec.synchronizationPlacement, which KubeVirt ${versionText} (cluster ${c.name}) does not have: they exist only in the open kubevirt/kubevirt PR #17922, and the API server prunes unknown fields`,
        `use datapath: gateway (works with every released KubeVirt), or declare a build that carries the PR as kubevirt.version: "${version.major}.${version.minor}.${version.patch}+pr17922"`);
    }
    for (const field of Object.keys(MIGRATION_FIELD_SINCE)) {
      if ((spec.migrationPolicy as Record<string, unknown> | undefined)?.[field] !== undefined && !fieldSupported(version, field)) {
        const [ma, mi] = MIGRATION_FIELD_SINCE[field];
        p.add(`${S}.migrationPolicy.${field}`, `KubeVirt ${versionText} (cluster ${c.name}) has no migrations.${field} (added in v${ma}.${mi}); the API server would prune it`, `remove it, or upgrade the cluster to ${ma}.${mi}`);
      }
    }
    const attachment = c.migrationNetwork?.attachment ?? mn?.attachment;
    if (!attachment && datapath !== 'direct') {
      p.add(`${S}.migrationNetwork.attachment`, `cluster ${c.name} uses datapath ${datapath}, which needs an in-cluster migration network, and none is given`, 'add spec.migrationNetwork.attachment (e.g. {type: bridge, bridge: br-mig, vlan: 100}) or a per-cluster migrationNetwork.attachment');
    }
    if (c.migrationNetwork?.attachment) checkAttachment(p, `${cp}.migrationNetwork.attachment`, c.migrationNetwork.attachment, mnFamily);
    let migrationCidr: Cidr | undefined;
    if (c.migrationNetwork?.cidr !== undefined) {
      migrationCidr = parseCidrField(p, `${cp}.migrationNetwork.cidr`, c.migrationNetwork.cidr);
    }
    else if (mn?.supernet === undefined && datapath !== 'direct') {
      p.add(`${cp}.migrationNetwork.cidr`, `cluster ${c.name} has no in-cluster migration CIDR and the fleet has no supernet to carve one from`, `give ${cp}.migrationNetwork.cidr or spec.migrationNetwork.supernet`);
    }
    const migrationExclude: Interval[] = [];
    (c.migrationNetwork?.exclude ?? []).forEach((item, j) => {
      const r = parsePoolItem(item);
      if (!r.ok) {
        p.add(`${cp}.migrationNetwork.exclude[${j}]`, `'${item}' ${r.reason}`, r.suggestion ? `write '${r.suggestion}'` : 'write a CIDR, an a-b range or an address');
      }
      else {
        if (migrationCidr && !contains(migrationCidr, r.interval)) p.add(`${cp}.migrationNetwork.exclude[${j}]`, `'${item}' is outside the cluster CIDR ${formatCidr(migrationCidr)}`, 'remove it or correct it');
        migrationExclude.push(r.interval);
      }
    });
    const podCidrs = (c.podCidrs ?? []).map((t, j) => parseCidrField(p, `${cp}.podCidrs[${j}]`, t)).filter((x): x is Cidr => !!x);
    const serviceCidrs = (c.serviceCidrs ?? []).map((t, j) => parseCidrField(p, `${cp}.serviceCidrs[${j}]`, t)).filter((x): x is Cidr => !!x);
    const syncIn = { ...spec.syncControllers, ...c.syncControllers };
    const gatewayReplicas = c.gateway?.replicas ?? gw.replicas ?? DEFAULTS.gatewayReplicas;
    clusters.push({
      name: c.name, index: i, nodes: c.nodes, datapath,
      kubevirt: {
        namespace: kvIn.namespace ?? (configDelivery === 'hco' ? DEFAULTS.hcoNamespace : DEFAULTS.kubevirtNamespace),
        name: kvIn.name ?? (configDelivery === 'hco' ? DEFAULTS.hcoName : DEFAULTS.kubevirtName),
        version, configDelivery, hasProxyApi,
      },
      syncReplicas: syncIn.replicas ?? DEFAULTS.syncReplicas,
      syncPlacement: syncIn.placement ?? DEFAULTS.syncPlacement,
      migrationAttachment: (attachment ?? cc.attachment) as Attachment,
      migrationCidr, migrationExclude,
      gatewayReplicas,
      gatewayVip: datapath === 'gateway' && gatewayReplicas > 1 && (gw.failover?.mode ?? DEFAULTS.failoverMode) === 'vip',
      podCidrs, serviceCidrs,
      multiNetworkPolicy: c.multiNetworkPolicy ?? false,
    });
  });

  // ---- overlaps between per-cluster CIDRs, the pool, pod/service CIDRs ------------------------
  const declared: { cidr: Cidr; what: string; path: string }[] = [];
  clusters.forEach((c) => {
    const cp = `${S}.clusters[${c.index}]`;
    if (c.migrationCidr) declared.push({ cidr: c.migrationCidr, what: `cluster ${c.name} migration CIDR`, path: `${cp}.migrationNetwork.cidr` });
    c.podCidrs.forEach((x, j) => declared.push({ cidr: x, what: `cluster ${c.name} pod CIDR`, path: `${cp}.podCidrs[${j}]` }));
    c.serviceCidrs.forEach((x, j) => declared.push({ cidr: x, what: `cluster ${c.name} service CIDR`, path: `${cp}.serviceCidrs[${j}]` }));
  });
  const migration = declared.filter((d) => d.what.endsWith('migration CIDR'));
  for (const m of migration) {
    for (const d of declared) {
      if (d === m || !overlaps(m.cidr, d.cidr)) continue;
      // report each migration/migration pair once; a pod or service CIDR of any cluster conflicts too (routes would capture it)
      if (d.what.endsWith('migration CIDR') && declared.indexOf(d) > declared.indexOf(m)) continue;
      p.add(m.path, `${formatCidr(m.cidr)} overlaps ${d.what} ${formatCidr(d.cidr)} (${d.path})`, 'give each cluster a disjoint migration CIDR, outside every pod and service CIDR');
    }
    if (pool.some((iv) => overlaps(iv, m.cidr))) {
      p.add(m.path, `${formatCidr(m.cidr)} overlaps the cross-cluster pool`, 'keep in-cluster migration CIDRs disjoint from the shared network');
    }
    if (m.cidr.family !== mnFamily && supernet) {
      p.add(m.path, `${formatCidr(m.cidr)} is IPv${m.cidr.family} but the supernet is IPv${mnFamily}`, 'use one address family for the in-cluster migration networks');
    }
  }
  if (supernet) {
    for (const d of declared) {
      if (d.what.endsWith('migration CIDR')) continue;
      if (overlaps(supernet, d.cidr)) {
        p.add(`${S}.migrationNetwork.supernet`, `${formatCidr(supernet)} overlaps ${d.what} ${formatCidr(d.cidr)} (${d.path}); handler routes to the supernet would capture that traffic`, 'choose a supernet disjoint from every pod and service CIDR');
      }
    }
  }

  // ---- in-cluster capacity (explicit CIDRs; carved ones are checked by the planner) ---------
  for (const c of clusters) {
    if (!c.migrationCidr || c.datapath === 'direct') continue;
    const needed = inClusterNeeded(c, surge);
    const usableIn = countIntervals(subtractIntervals([usableHosts(c.migrationCidr)], c.migrationExclude));
    if (BigInt(needed) > usableIn) {
      p.add(`${S}.clusters[${c.index}].migrationNetwork.cidr`,
        `${formatCidr(c.migrationCidr)} is too small for cluster ${c.name}: needed ${needed} = ${c.nodes} nodes + ${c.syncReplicas} sync controllers${c.datapath === 'gateway' ? ` + ${c.gatewayReplicas} gateways${c.gatewayVip ? ' + 1 gateway VIP' : ''}` : ''} + ${surge} rollout surge, usable ${usableIn}`,
        `use a larger CIDR (at least /${bits(c.migrationCidr.family) - bitLength(BigInt(needed) + 2n)})`);
    }
  }

  // ---- cross-cluster capacity --------------------------------------------------------------
  const poolCount = countIntervals(mergeIntervals(pool));
  const excludedCount = countIntervals(mergeIntervals(excluded));
  const usableCount = countIntervals(usable);
  const neededCross = clusters.reduce((n, c) => n + crossClusterNeeded(c, surge), 0);
  if (pool.length > 0 && BigInt(neededCross) > usableCount) {
    const byMode = summarizeNeeded(clusters, surge);
    p.add(`${ccPath}.pool`,
      `pool too small: needed ${neededCross} (${byMode}), usable ${usableCount} = ${poolCount} in pool - ${excludedCount} excluded - ${reservedInPool} network/broadcast${ccGateway ? '/router' : ''}`,
      `add ${BigInt(neededCross) - usableCount} more address${BigInt(neededCross) - usableCount === 1n ? '' : 'es'} to the pool, remove exclusions${clusters.some((c) => c.datapath === 'direct') ? ', or use datapath: gateway (one address per gateway replica)' : ', or lower gateway.replicas'}`);
  }

  // what KubeVirt's admission and Kubernetes' validation would refuse (src/admission/)
  for (const x of kubevirtAdmissionProblems(doc)) p.add(x.path, x.message, x.fix);
  const trust = resolveTrust(spec.trust, clusters.map((c) => ({ ...c, configDelivery: c.kubevirt.configDelivery })), p.list);
  p.throwIfAny(source);
  return {
    name: doc.metadata.name, trust,
    crossCluster: {
      nadName: cc.name ?? DEFAULTS.crossClusterNadName, attachment: cc.attachment, family, prefixLength,
      usable, usableCount, poolCount, excludedCount, reservedCount: reservedInPool,
      subnets, gateway: ccGateway, routes,
    },
    migrationNadName: mn?.name ?? DEFAULTS.migrationNadName,
    supernet, clusterPrefixLength,
    gateway: {
      image: gw.image ?? DEFAULTS.gatewayImage, tunnelPort: gw.tunnelPort ?? DEFAULTS.tunnelPort,
      placement: gw.placement, tls, payload, serviceMonitor: gw.serviceMonitor ?? false,
      failover: { mode: gw.failover?.mode ?? DEFAULTS.failoverMode, virtualRouterId: gw.failover?.virtualRouterId ?? DEFAULTS.virtualRouterId },
    },
    migrationPolicy: spec.migrationPolicy ?? {},
    addressSurge: surge,
    clusters: [...clusters].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
  };
}

/**
 * The tunnel's payload mode. `splice` leaves the payload's protection to KubeVirt's migration TLS, so it is the
 * default where that TLS is on and refused where the fleet turns it off (VM memory would cross the shared network
 * in clear); `tls` is the default there.
 */
function resolvePayload(p: Problems, S: string, asked: 'splice' | 'tls' | undefined, plaintextTunnel: boolean, kubevirtTlsOff: boolean): 'splice' | 'tls' {
  const path = `${S}.gateway.payload`;
  if (asked === 'splice' && plaintextTunnel) {
    p.list.push({ code: 'gateway/splice-without-mtls', path, message: "'splice' authenticates the gateways with mutual TLS, but spec.gateway.tls is plaintext", fix: 'use mTLS material (spec.gateway.tls.issuerRef or secretName), or remove payload' });
  }
  if (asked === 'splice' && kubevirtTlsOff) {
    p.list.push({
      code: 'gateway/splice-without-kubevirt-tls', path,
      message: "'splice' carries migration traffic without the gateways' encryption, and spec.migrationPolicy.disableTLS: true turns off KubeVirt's own TLS: VM memory would cross the shared network in clear",
      fix: "remove spec.migrationPolicy.disableTLS (KubeVirt's migration TLS on), or set spec.gateway.payload: tls",
    });
  }
  return asked ?? (kubevirtTlsOff ? 'tls' : 'splice');
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
  if (gw.length) parts.push(`gateway: ${gw.length} clusters x replicas = ${gw.reduce((n, c) => n + c.gatewayReplicas, 0)}`);
  if (dir.length) parts.push(`direct: (nodes + sync controllers + ${surge} surge) per cluster over ${dir.length} clusters = ${dir.reduce((n, c) => n + crossClusterNeeded(c, surge), 0)}`);
  if (nat.length) parts.push(`native: (sync controllers + ${surge} surge) over ${nat.length} clusters = ${nat.reduce((n, c) => n + crossClusterNeeded(c, surge), 0)}`);
  return parts.join('; ');
}

/** Re-export for callers that only need the address helpers of one address. */
export const fmt = (a: Addr): string => formatAddr(a);
export { addr, FLEET_API_VERSION, FLEET_KIND };
