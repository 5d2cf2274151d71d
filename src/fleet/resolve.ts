/**
 * Fleet validation and normalization: every default applied, every address parsed, every problem
 * collected (not only the first): the stage between the schema check (document.ts) and planning. The
 * phases live beside this file: the shared network (shared-network.ts), the in-cluster template and the
 * clusters (clusters.ts); this file runs them in order and resolves the gateway. Pure, no cdk8s import.
 */
import { cnSkewProblems } from '../kubevirt/capabilities';
import { migrationNetworkFallbackProblems } from '../kubevirt/fallback';
import { Checked, FleetProblem, ProblemCollector, Salvaged, checkedOf, orThrow } from '../base/errors';
import { kubevirtAdmissionProblems } from '../kubevirt/admission';
import { FleetDocument } from './schema';
import { DEFAULT_TUNNEL_PORT } from '../base/names';
import { DEFAULT_ADMIN_PORT, DEFAULT_INTERCEPT_PORT } from '../gateway/runtime-config';
import { TrustPlan, resolveTrust } from '../trust/plan';
import { existingKubevirtProblems } from '../kubevirt/existing';
import { DEFAULTS, ResolvedFleet, ResolvedGateway } from './resolved';
import { datapathMode } from './datapath-modes';
import { checkSharedCapacity, resolveSharedNetwork } from './shared-network';
import { checkCidrOverlaps, checkInClusterCapacity, resolveClusters, resolveMigrationTemplate } from './clusters';
import { resolveSites, siteOfClusters, unionOfSites, withSitePaths } from './sites';
import { vmNetworkDocProblems } from '../vmnet/plan';
import { bandwidthBudgetWarnings, checkBandwidth, resolveBandwidth } from '../gateway/bandwidth-budget';
import { gatewayImageWarnings } from '../gateway/image-pinning';

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

/**
 * No trust without authentication (issue 49): a CA bundle is believed only from a verified peer
 * certificate. Over a plaintext tunnel anyone who reaches the tunnel port could hand a cluster a CA
 * "from" any peer, so a fleet with plaintext tunnels must turn the exchange off (every runtime also
 * refuses such a PUBLISH, TRUST_UNAUTHENTICATED).
 */
function checkTrustAuthenticated(p: ProblemCollector, doc: FleetDocument, trust: TrustPlan, tlsKind: ResolvedGateway['tls']['kind']): void {
  if (tlsKind !== 'plaintext') return;
  const exchanging = Object.entries(trust.clusters).filter(([, c]) => c.exchange).map(([name]) => name);
  if (exchanging.length === 0) return;
  const why = doc.spec.trust === undefined ? ' (on by default in a fleet of two or more clusters)' : '';
  p.add('trust/exchange-without-mtls', 'spec.gateway.tls',
    `spec.gateway.tls is plaintext, but the gateways' CA exchange is on${why} for ${exchanging.join(', ')}: a CA bundle is accepted only over mutual TLS from a verified peer certificate, so every gateway would refuse it, and without mTLS anyone reaching a tunnel port could pose as a peer`,
    "use mTLS material (spec.gateway.tls.issuerRef or spec.gateway.tls.secretName), or turn the exchange off with spec.trust.exchange.enabled: false (each cluster's kubevirt-ca then needs its peers' CAs by other means, docs/trust.md)");
}

// ---------------- the phases together ----------------

/** The resolve stage of the main path: the resolved fleet, or every problem of the cross-field rules. */
export function checkFleet(doc: FleetDocument): Checked<ResolvedFleet> {
  return checkedOf(resolveAndCheck(doc));
}

/**
 * Resolve defaults and check everything that relates several fields: every problem, and the resolved
 * fleet whatever was found (every cluster, every default applied; a value that did not parse is left
 * out). Which part of it later stages may still read when there are problems is salvage.ts's to decide.
 */
export function resolveAndCheck(doc: FleetDocument): Salvaged<ResolvedFleet> {
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
  p.addAll(migrationNetworkFallbackProblems(doc)); // issue #29 item 4
  p.addAll(cnSkewProblems(resolved.map((c, i) => ({ // issue #29 item 2: migration CN types differ across 1.7
    name: c.name, datapath: c.datapath, version: c.kubevirt.version,
    versionPath: spec.clusters[i]?.kubevirt?.version !== undefined ? `spec.clusters[${i}].kubevirt.version` : 'spec.kubevirt.version',
  }))));
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
  checkBandwidth(p, doc, tls.kind !== 'plaintext' && payload === 'tls'); // issue 52 item 3: budgets per pair (src/gateway/bandwidth-budget.ts)
  checkTrustAuthenticated(p, doc, trust, tls.kind);
  const vm = vmNetworkDocProblems(doc); // issue 40: VM networks (src/vmnet/)
  p.addAll(vm.problems);
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
        ...(gw.bandwidth !== undefined ? { bandwidth: resolveBandwidth(gw.bandwidth) } : {}),
        warnings: [...gatewayImageWarnings({
          image: gw.image ?? DEFAULTS.gatewayImage, given: gw.image !== undefined, environment: spec.environment ?? 'production',
          clusters: clusters.filter((c) => datapathMode(c.datapath).gateways || c.trustAgentReplicas > 0).map((c) => c.name).sort(),
        }), ...bandwidthBudgetWarnings({
          budget: gw.bandwidth, bandwidthPerMigration: spec.migrationPolicy?.bandwidthPerMigration,
          parallelMigrationsPerCluster: spec.migrationPolicy?.parallelMigrationsPerCluster,
        })],
      },
      migrationPolicy: spec.migrationPolicy ?? {},
      addressSurge: surge,
      clusters: [...clusters].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)),
      ...(spec.vmNetworks?.length || spec.vmNetworkDeletions?.length ? {
        vmNetworks: {
          specs: spec.vmNetworks ?? [], deletions: spec.vmNetworkDeletions ?? [], clusterOrder: spec.clusters.map((c) => c.name), warnings: vm.warnings,
        },
      } : {}),
    },
  };
}

/** Resolve defaults and check everything that relates several fields. Throws FleetValidationError with every problem. */
export function resolveFleet(doc: FleetDocument, source?: string): ResolvedFleet {
  return orThrow(checkFleet(doc), source);
}
