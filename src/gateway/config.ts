/**
 * The gateway runtime's configuration for one cluster, written through the runtime's own zod schema
 * (`proxy/src/config.ts`, through ./runtime-config) so the ConfigMap and the runtime can never disagree. Pure.
 */
import { parseProxyConfig, peerSchema, PeerConfig, ProxyConfig, ProxyConfigInput, DEFAULT_ADMIN_LISTEN, DEFAULT_INTERCEPT_PORT } from './runtime-config';
import { DEFAULT_GATEWAY_INTERFACES, GatewayInterfaces, checkGatewayInterfaces } from './pod';
import { ClusterPlan, FleetPlan, PeerPlan } from '../addressing/planner';
import { InvalidPropsError } from '../base/errors';
import { Family, parseCidr } from '../base/ip';
import { deepFreeze } from '../base/json';
import { datapathMode } from '../fleet/datapath-modes';
import { budgetBetween } from './bandwidth-budget';

export const GATEWAY_CONFIG_MOUNT = '/etc/migration-mesh';
export const GATEWAY_CONFIG_FILE = 'config.json';
const GATEWAY_TLS_MOUNT = '/etc/migration-mesh/tls';

const bare = (cidrAddr: string): string => cidrAddr.replace(/\/\d+$/, '');

/**
 * The wildcard a listener binds for a network of `family`, always together with that network's interface
 * (issue 49: the runtime binds the socket to the interface, so it never takes a connection from another
 * network). Not '::' for both: an IPv4 wildcard accepts no IPv6 connection, and '::' needs IPv6 in the pod
 * (a node booted with ipv6.disable=1 cannot even create the socket), so each listener asks for exactly the
 * family of the network it serves. The wildcard, not the replica's address: one ConfigMap serves every
 * replica, and the handlers' next hop may be the VIP, which moves between replicas.
 */
const wildcard = (family: Family): string => (family === 6 ? '::' : '0.0.0.0');

/** The family of the cluster's in-cluster migration network (its CIDR). */
function migrationFamily(cluster: ClusterPlan): Family {
  const r = parseCidr(cluster.migrationNetwork.cidr ?? '');
  if (!r.ok) throw new InvalidPropsError({ code: 'plan-inconsistent', path: 'cluster.migrationNetwork.cidr', message: `cluster ${cluster.name}: no valid migration CIDR` });
  return r.cidr.family;
}

const tlsFor = (plan: FleetPlan): ProxyConfigInput['tls'] => (plan.gateway.tls.kind === 'plaintext'
  ? { mode: 'plaintext' as const }
  : { mode: plan.gateway.payload === 'splice' ? 'mtls-splice' as const : 'mtls' as const, caFile: `${GATEWAY_TLS_MOUNT}/ca.crt`, certFile: `${GATEWAY_TLS_MOUNT}/tls.crt`, keyFile: `${GATEWAY_TLS_MOUNT}/tls.key` });

const trustSection = (plan: FleetPlan) => ({ socket: '/run/migration-mesh/trust.sock', repushIntervalMs: plan.trust.repushIntervalSeconds * 1000 });

/**
 * The runtime's config in the trust-only role (issue #30): a cluster without a gateway (direct, native,
 * Harvester) runs the same runtime as a trust agent. Its tunnel listener on the shared network answers
 * PUBLISH with the same fleet mTLS identity, refusals and caps as a gateway; it dials nothing
 * (`localCidrs` empty: every tunnel is refused), tunnels nothing (every peer is trust only) and its
 * intercept listener binds loopback (no rule redirects to it). Its tunnel listener is bound to the shared
 * network's interface (`crossClusterInterface`), the admin listener to the pod network and loopback.
 */
export function trustAgentConfigFor(
  plan: FleetPlan, cluster: ClusterPlan, crossClusterInterface: string = DEFAULT_GATEWAY_INTERFACES.crossCluster,
): ProxyConfig {
  if (cluster.trustAgents.length === 0) throw new InvalidPropsError({ code: 'plan-inconsistent', path: 'cluster.trustAgents', message: `cluster ${cluster.name} has no trust agent planned` });
  const family = plan.capacity.family;
  const cfg = parseProxyConfig({
    version: 1,
    fleet: plan.fleet,
    cluster: cluster.name,
    listen: {
      intercept: { host: family === 6 ? '::1' : '127.0.0.1', port: DEFAULT_INTERCEPT_PORT },
      tunnel: { host: wildcard(family), interface: crossClusterInterface, port: plan.gateway.tunnelPort },
      admin: { ...DEFAULT_ADMIN_LISTEN },
    },
    localCidrs: [],
    ownAddresses: cluster.trustAgents.map((t) => bare(t.crossCluster)),
    peers: [],
    tls: tlsFor(plan),
    trust: trustSection(plan),
  });
  return withPeers(cfg, cluster, () => undefined); // a trust agent relays nothing: no budget
}

const siteLookups = new WeakMap<FleetPlan, Map<string, string>>();
/** Each cluster's site, one table per plan. */
function siteOf(plan: FleetPlan): (cluster: string) => string | undefined {
  let m = siteLookups.get(plan);
  if (!m) { m = new Map(plan.clusters.map((c) => [c.name, c.site.name])); siteLookups.set(plan, m); }
  return (c) => m.get(c);
}

/**
 * The budget toward each peer the runtime config carries besides its top-level `bandwidth` (the fleet's default):
 * a peer the tunnels reach whose pair has another budget (`spec.gateway.bandwidth.sites`, `.clusters`). Both
 * clusters of a pair get it toward each other, so it holds in each direction.
 */
function peerBudgetFor(plan: FleetPlan, cluster: ClusterPlan): (peer: PeerPlan) => number | undefined {
  const rules = plan.gateway.bandwidth;
  if (!rules || (rules.sites.length === 0 && rules.clusters.length === 0)) return () => undefined;
  const sites = siteOf(plan);
  return (peer) => {
    if (peer.cidrs.length === 0) return undefined; // trust only: no tunnel carries a migration to it
    const b = budgetBetween(rules, sites, cluster.name, peer.cluster);
    return b === undefined || b === rules.default ? undefined : Math.max(1, b);
  };
}

/**
 * A gateway's runtime config. `interfaces`: the pod's interface names of the two attachments (the Multus
 * selection's); the intercept listener and the REDIRECT rules are bound to `inCluster`, the tunnel listener to
 * `crossCluster`.
 */
export function gatewayConfigFor(plan: FleetPlan, cluster: ClusterPlan, interfaces: GatewayInterfaces = DEFAULT_GATEWAY_INTERFACES): ProxyConfig {
  if (!datapathMode(cluster.datapath).gateways) throw new InvalidPropsError({ code: 'wrong-datapath', path: 'cluster', message: `cluster ${cluster.name} is in ${cluster.datapath} mode: it has no gateway` });
  const tls = tlsFor(plan);
  checkGatewayInterfaces(interfaces);
  const input: ProxyConfigInput = {
    version: 1,
    fleet: plan.fleet,
    cluster: cluster.name,
    listen: {
      // the handlers reach the intercept listener over the migration network; peer gateways reach the
      // tunnel listener over the shared network: each bound to its network's interface, on its family
      intercept: { host: wildcard(migrationFamily(cluster)), interface: interfaces.inCluster, port: DEFAULT_INTERCEPT_PORT },
      tunnel: { host: wildcard(plan.capacity.family), interface: interfaces.crossCluster, port: plan.gateway.tunnelPort },
      admin: { ...DEFAULT_ADMIN_LISTEN }, // the pod network (eth0) and loopback: never the shared network
    },
    localCidrs: [cluster.migrationNetwork.cidr!],
    ownAddresses: [
      ...cluster.gateways.map((g) => bare(g.inCluster)),
      ...(cluster.gatewayVip ? [bare(cluster.gatewayVip)] : []),
      ...cluster.gateways.map((g) => bare(g.crossCluster)),
    ],
    peers: [],
    tls,
    ...(plan.gateway.bandwidth?.default !== undefined ? { bandwidth: Math.max(1, plan.gateway.bandwidth.default) } : {}),
    // issue #10: the trust container beside the runtime (constructs/gateway/trust.ts)
    ...(plan.trust.clusters[cluster.name]?.exchange ? { trust: trustSection(plan) } : {}),
  };
  return withPeers(parseProxyConfig(input), cluster, peerBudgetFor(plan, cluster));
}

/**
 * The peer entries are validated by the runtime's peer schema once per fleet (they are shared by every
 * cluster's table), the rest of the config per cluster; then the whole table is checked.
 */
function withPeers(cfg: ProxyConfig, cluster: ClusterPlan, budgetOf: (peer: PeerPlan) => number | undefined): ProxyConfig {
  const peers = validatedPeers(cluster, budgetOf);
  const names = new Set(peers.map((p) => p.cluster));
  if (names.size !== peers.length || names.has(cfg.cluster)) {
    throw new InvalidPropsError({ code: 'plan-inconsistent', path: 'cluster.peers', message: `cluster ${cluster.name}: peer table lists a cluster twice or itself` });
  }
  return { ...cfg, peers };
}

const peerCache = new WeakMap<object, Map<string, PeerConfig>>();
/** Each validated peer's line in the ConfigMap (every cluster lists the same peer objects: n clusters, n lines made, not n²). */
const peerLine = new WeakMap<PeerConfig, string>();

/**
 * Each peer validated once per fleet and budget, and frozen (shared by every cluster's table that gives it that
 * budget; its line is cached).
 */
function validatedPeers(cluster: ClusterPlan, budgetOf: (peer: PeerPlan) => number | undefined): PeerConfig[] {
  return cluster.peers.map((p) => {
    let byCluster = peerCache.get(p.gateways);
    if (!byCluster) { byCluster = new Map(); peerCache.set(p.gateways, byCluster); }
    const bandwidth = budgetOf(p);
    const key = bandwidth === undefined ? p.cluster : `${p.cluster} ${bandwidth}`;
    let v = byCluster.get(key);
    if (!v) {
      v = deepFreeze(peerSchema.parse(bandwidth === undefined ? p : { ...p, bandwidth }));
      peerLine.set(v, `    ${JSON.stringify(v)}`);
      byCluster.set(key, v);
    }
    return v;
  });
}

/**
 * The ConfigMap text: one line per peer, so a peer-table change is a one-line diff and a
 * 1000-cluster fleet stays far under the 1 MiB ConfigMap limit (a pretty-printed table would not).
 */
export function formatGatewayConfig(cfg: ProxyConfig): string {
  const { peers, ...rest } = cfg;
  const head = JSON.stringify(rest, null, 2).replace(/\n}$/, '');
  if (!peers.length) return `${head},\n  "peers": []\n}\n`;
  // one join, head and tail in its first and last pieces: the text is made flat once (140 KB at 1000 clusters,
  // a large object for V8 and about 1 ms per copy here; a template around the joined table copied it again)
  const lines = peers.map((p) => peerLine.get(p) ?? `    ${JSON.stringify(p)}`);
  lines[0] = `${head},\n  "peers": [\n${lines[0]}`;
  lines[lines.length - 1] += '\n  ]\n}\n';
  return lines.join(',\n');
}
