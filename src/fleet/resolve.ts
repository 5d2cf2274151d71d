/**
 * Fleet validation and normalization: every default applied, every address parsed, every problem
 * collected (not only the first). The phases live beside this file: structure (document.ts), the
 * shared network (shared-network.ts), the in-cluster template and the clusters (clusters.ts); this file
 * runs them in order and resolves the gateway. Pure, no cdk8s import.
 */
import { Checked, FleetProblem, ProblemCollector, Salvaged, checkedOf, orThrow } from '../base/errors';
import { kubevirtAdmissionProblems } from '../kubevirt/admission';
import { FleetDocument } from './schema';
import { DEFAULT_TUNNEL_PORT } from '../base/names';
import { DEFAULT_ADMIN_PORT, DEFAULT_INTERCEPT_PORT } from '../gateway/runtime-config';
import { resolveTrust } from '../trust/plan';
import { existingKubevirtProblems } from '../kubevirt/existing';
import { DEFAULTS, ResolvedFleet, ResolvedGateway } from './resolved';
import { reindexProblems, salvageFleetDocument } from './document';
import { checkSharedCapacity, resolveSharedNetwork } from './shared-network';
import { checkCidrOverlaps, checkInClusterCapacity, resolveClusters, resolveMigrationTemplate } from './clusters';

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

/** Structural validation of a fleet document. Throws FleetValidationError with every problem. */
export function parseFleetDocument(input: unknown, source?: string): FleetDocument {
  return orThrow(checkFleetDocument(input), source);
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
  const shared = resolveSharedNetwork(p, spec.crossClusterNetwork);
  const template = resolveMigrationTemplate(p, spec.migrationNetwork, shared);
  const surge = spec.addressSurge ?? DEFAULTS.addressSurge;
  const resolved = resolveClusters(p, spec, template);
  const trustProblems: FleetProblem[] = [];
  const trust = resolveTrust(spec.trust, resolved.map((c) => ({ ...c, configDelivery: c.kubevirt.configDelivery })), trustProblems);
  // issue #30: a cluster without a gateway exchanges through a trust agent, one shared address per replica
  const clusters = resolved.map((c) => (trust.clusters[c.name]?.agent ? { ...c, trustAgentReplicas: c.gatewayReplicas } : c));
  checkCidrOverlaps(p, clusters, shared.pool, template);
  checkInClusterCapacity(p, clusters, surge);
  const counts = checkSharedCapacity(p, shared, clusters, surge);
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
        subnets: shared.subnets, gateway: shared.gateway, routes: shared.routes,
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
