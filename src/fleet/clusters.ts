/**
 * Fleet validation, in-cluster: the migration network template (supernet, prefix length), each
 * cluster with its defaults, the overlaps between clusters' CIDRs, and explicit CIDRs' capacity. Pure,
 * no cdk8s import.
 */
import { ProblemCollector } from '../base/errors';
import { Attachment, ClusterSpec, Datapath, FleetSpec } from './schema';
import { Cidr, Family, Interval, bits, contains, countIntervals, formatCidr, overlaps, subtractIntervals, usableHosts } from '../base/ip';
import {
  DEFAULT_KUBEVIRT_VERSION, KubevirtVersion, fieldSupported, hasCrossClusterProxyApi, parseKubevirtVersion, supportsDecentralizedMigration,
  MIGRATION_FIELD_SINCE,
} from '../kubevirt/versions';
import { resolveExistingKubevirt } from '../kubevirt/existing';
import { Product, ProductVersion, disabledGateProblems, kubevirtHas, kubevirtSinceFor, productVersionVerdict } from '../kubevirt/capabilities';
import { featureGatesFor } from '../kubevirt/gates';
import { deliveryForm } from '../kubevirt/delivery-forms';
import { DEFAULTS, ResolvedCluster, ResolvedKubevirt, ResolvedNetworkPolicies, inClusterBreakdown, inClusterNeeded } from './resolved';
import { checkAttachment, checkDialable, parseCidrField, parseRangeField } from './fields';
import { SharedNetwork } from './shared-network';
import { datapathMode } from './datapath-modes';

// ---------------- phase 2: the in-cluster migration network template ----------------

export interface MigrationTemplate {
  readonly supernet?: Cidr;
  readonly family: Family;
  readonly clusterPrefixLength: number;
}

export function resolveMigrationTemplate(p: ProblemCollector, mn: FleetSpec['migrationNetwork'], shared: SharedNetwork): MigrationTemplate {
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

// ---------------- phase 3: the clusters ----------------

export function resolveClusters(p: ProblemCollector, spec: FleetSpec, template: MigrationTemplate): ResolvedCluster[] {
  const seen = new Map<string, number>();
  (spec.networkPolicies?.apiServerCidrs ?? []).forEach((t, j) => parseCidrField(p, `spec.networkPolicies.apiServerCidrs[${j}]`, t));
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
  if (!attachment && !datapathMode(datapath).sharedMigrationNetwork) {
    p.add('migration-network-missing', 'spec.migrationNetwork.attachment', `cluster ${c.name} uses datapath ${datapath}, which needs an in-cluster migration network, and none is given`,
      'add spec.migrationNetwork.attachment (e.g. {type: bridge, bridge: br-mig, vlan: 100}) or a per-cluster migrationNetwork.attachment');
  }
  if (c.migrationNetwork?.attachment) checkAttachment(p, `${cp}.migrationNetwork.attachment`, c.migrationNetwork.attachment, template.family);
  let migrationCidr: Cidr | undefined;
  if (c.migrationNetwork?.cidr !== undefined) {
    migrationCidr = parseCidrField(p, `${cp}.migrationNetwork.cidr`, c.migrationNetwork.cidr);
    if (migrationCidr) checkDialable(p, `${cp}.migrationNetwork.cidr`, migrationCidr, `cluster ${c.name}'s in-cluster migration network`);
  } else if (spec.migrationNetwork?.supernet === undefined && !datapathMode(datapath).sharedMigrationNetwork) {
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
  const gatewayVip = datapathMode(datapath).gateways && gatewayReplicas > 1 && (spec.gateway?.failover?.mode ?? DEFAULTS.failoverMode) === 'vip';
  const networkPolicies = resolveNetworkPolicies(p, spec, c, cp);
  if (gatewayVip && networkPolicies.installed === 'default-deny' && c.multiNetworkPolicy) {
    p.add('network-policy-vrrp', c.networkPolicies ? `${cp}.networkPolicies.installed` : 'spec.networkPolicies.installed',
      `cluster ${c.name} denies everything on its secondary networks (default-deny with multiNetworkPolicy: true), and its ${gatewayReplicas} gateways hand their VIP over by VRRP (IP protocol 112), which no NetworkPolicy or MultiNetworkPolicy can allow: every replica would claim the VIP`,
      `set spec.gateway.failover.mode: none or ${cp}.gateway.replicas: 1; or allow VRRP on the in-cluster migration network with your CNI's own policy and declare installed: kubevirt`);
  }
  return {
    name: c.name, index, nodes: c.nodes, datapath, kubevirt,
    syncReplicas: sync.replicas ?? DEFAULTS.syncReplicas,
    syncPlacement: sync.placement ?? DEFAULTS.syncPlacement,
    migrationAttachment: (attachment ?? spec.crossClusterNetwork.attachment) as Attachment,
    migrationCidr, migrationExclude,
    gatewayReplicas,
    gatewayVip,
    trustAgentReplicas: 0, // set once trust is resolved (resolveAndCheck)
    site: '', // set once the sites are resolved (resolveAndCheck)
    podCidrs, serviceCidrs,
    multiNetworkPolicy: c.multiNetworkPolicy ?? false,
    networkPolicies,
    openshift: c.openshift ?? deliveryForm(kubevirt.configDelivery).impliesOpenshift,
  };
}

/** `spec.networkPolicies`, or the cluster's own (replacing it whole); the fleet's CIDRs are reported once (resolveClusters). */
function resolveNetworkPolicies(p: ProblemCollector, spec: FleetSpec, c: ClusterSpec, cp: string): ResolvedNetworkPolicies {
  const own = c.networkPolicies !== undefined;
  const np = c.networkPolicies ?? spec.networkPolicies;
  const report = own ? p : new ProblemCollector();
  const base = own ? `${cp}.networkPolicies` : 'spec.networkPolicies';
  const apiServerCidrs = (np?.apiServerCidrs ?? []).filter((t, j) => parseCidrField(report, `${base}.apiServerCidrs[${j}]`, t) !== undefined);
  return { installed: np?.installed ?? 'none', apiServerCidrs };
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
  if (parsed && datapathMode(datapath).kubevirtProxy && !hasProxyApi) {
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
  const compression = (spec.migrationPolicy as Record<string, unknown> | undefined)?.compression;
  if (parsed && compression !== undefined && !kubevirtHas(version, 'migration-compression')) {
    const since = kubevirtSinceFor('migration-compression');
    p.add('compression-unsupported', 'spec.migrationPolicy.compression',
      `cluster ${c.name} runs KubeVirt ${versionText}, which has no migration compression (MigrationPolicy spec.experimental.compression arrived in ${since}; capability table, src/kubevirt/capabilities.ts): the API server would prune it`,
      `remove spec.migrationPolicy.compression, or upgrade ${c.name} to KubeVirt ${since} or later and declare it (kubevirt.version, default ${DEFAULT_KUBEVIRT_VERSION})`);
  }
  const existing = resolveExistingKubevirt(spec.kubevirt?.existing, c.kubevirt?.existing);
  const disabledFeatureGates = [...new Set(kv.disabledFeatureGates ?? [])];
  if (parsed) {
    const enabled = [...featureGatesFor({ datapath, version, migrationPolicy: spec.migrationPolicy ?? {} }), ...existing.featureGates];
    const path = c.kubevirt?.disabledFeatureGates !== undefined ? `${cp}.kubevirt.disabledFeatureGates` : 'spec.kubevirt.disabledFeatureGates';
    for (const x of disabledGateProblems({ cluster: c.name, version, disabled: disabledFeatureGates, path, enabled })) p.add(x.code, x.path, x.message, x.fix);
  }
  const form = deliveryForm(configDelivery);
  return {
    namespace: kv.namespace ?? form.defaultNamespace,
    name: kv.name ?? form.defaultName,
    version, configDelivery, hasProxyApi,
    existing, disabledFeatureGates,
    product: resolveProduct(p, { product: kv.product, productVersion: kv.productVersion, kubevirt: parsed, versionPath, productPath: c.kubevirt?.productVersion !== undefined ? `${cp}.kubevirt.productVersion` : 'spec.kubevirt.productVersion' }),
  };
}

interface ProductInput {
  readonly product?: Product;
  readonly productVersion?: string;
  readonly kubevirt?: KubevirtVersion;
  readonly versionPath: string;
  readonly productPath: string;
}

/**
 * Plain KubeVirt reads its rows with the KubeVirt version; other products only with their own declared
 * one. A version the capability table does not know is refused; a newer minor is kept for the warning.
 */
function resolveProduct(p: ProblemCollector, x: ProductInput): ProductVersion {
  const product = x.product ?? 'kubevirt';
  const kv = product !== 'kubevirt' && x.kubevirt ? productVersionVerdict('kubevirt', x.kubevirt.text, x.versionPath).problem : undefined;
  if (kv) p.add(kv.code, kv.path, kv.message, kv.fix); // the KubeVirt every product runs is checked too
  const declared = x.productVersion !== undefined ? { text: x.productVersion, path: x.productPath }
    : product === 'kubevirt' && x.kubevirt ? { text: x.kubevirt.text, path: x.versionPath } : undefined;
  if (!declared) return { product };
  const verdict = productVersionVerdict(product, declared.text, declared.path);
  if (verdict.problem) {
    p.add(verdict.problem.code, verdict.problem.path, verdict.problem.message, verdict.problem.fix);
    return { product };
  }
  const own = x.productVersion !== undefined ? parseKubevirtVersion(x.productVersion) : undefined;
  const productVersion = own ?? x.kubevirt;
  return { product, productVersion, ...(verdict.newest ? { newer: { newest: verdict.newest, path: declared.path } } : {}) };
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

export function checkCidrOverlaps(p: ProblemCollector, clusters: ResolvedCluster[], pool: Interval[], template: MigrationTemplate): void {
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
export function checkInClusterCapacity(p: ProblemCollector, clusters: ResolvedCluster[], surge: number): void {
  for (const c of clusters) {
    if (!c.migrationCidr || datapathMode(c.datapath).sharedMigrationNetwork) continue;
    const needed = inClusterNeeded(c, surge);
    const usableIn = countIntervals(subtractIntervals([usableHosts(c.migrationCidr)], c.migrationExclude));
    if (BigInt(needed) > usableIn) {
      p.add('cidr-too-small', `spec.clusters[${c.index}].migrationNetwork.cidr`,
        `${formatCidr(c.migrationCidr)} is too small for cluster ${c.name}: needed ${needed} = ${inClusterBreakdown(c, surge)}, usable ${usableIn}`,
        `use a larger CIDR (at least /${bits(c.migrationCidr.family) - bitLength(BigInt(needed) + 2n)})`);
    }
  }
}

function bitLength(n: bigint): number {
  let b = 0;
  while ((1n << BigInt(b)) < n) b++;
  return b;
}
