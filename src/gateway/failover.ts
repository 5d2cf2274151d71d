/**
 * Failover between a cluster's gateway replicas: the keepalived (VRRP) configuration that hands the
 * planned gateway VIP from one replica to another. Pure, no cdk8s import.
 *
 * Why: the handlers' NAD routes name ONE next hop. Without a VIP that next hop is replica 0, so losing
 * replica 0 cuts every outgoing migration of the cluster even though replica 1 is running. With
 * `gateway.failover.mode: vip` (the default for 2+ replicas) the next hop is an extra in-cluster
 * address that exactly one healthy replica holds:
 * - every replica runs keepalived in a sidecar (`--vrrp` only), unicast VRRP between the replicas'
 *   own static in-cluster addresses (no multicast needed on the migration network);
 * - all replicas start as BACKUP with `nopreempt`: the VIP moves only when its holder fails, never
 *   back when an old holder returns, because a move cuts the streams that holder intercepted;
 * - a replica whose runtime is not ready (`/readyz` on the admin port) gives the VIP up (track script,
 *   run as `nobody`: keepalived switches user for it, which is why the sidecar needs SETUID/SETGID);
 * - on taking the VIP keepalived sends gratuitous ARP (unsolicited NA for IPv6), which updates the
 *   handlers' neighbour entry for the next hop, so their routes need no change.
 * Tunnels arriving from other clusters are served by every replica regardless (the peers' tables
 * list every replica's shared address), so only the outgoing side needs the VIP.
 *
 * One file serves every replica: lines starting `@replica-N` apply to replica N only, `@^replica-N`
 * to every replica but N (keepalived's `--config-id`).
 */
import { ClusterPlan, FleetPlan } from '../addressing/planner';
import { InvalidPropsError } from '../base/errors';
import { datapathMode } from '../fleet/datapath-modes';

/** Key of the keepalived configuration in the gateway ConfigMap. */
export const GATEWAY_KEEPALIVED_FILE = 'keepalived.conf';
/** Where keepalived writes its pid files (an emptyDir: the root filesystem is read-only). */
export const KEEPALIVED_RUN_DIR = '/run/keepalived';
/** VRRP priority of replica 0; each further replica is 10 lower (only the first election uses it). */
const BASE_PRIORITY = 200;

const bare = (cidrAddr: string): string => cidrAddr.replace(/\/\d+$/, '');

/**
 * Options of the VIP line. IPv6: `preferred_lft 0` (deprecated), so the holder never picks the VIP as the
 * source of its own connections. IPv6 source selection takes the newest address of the interface on a tie
 * (an IPv4 VIP is a secondary address and never chosen), so without it the holder dialed handlers from the
 * VIP: a move of the VIP would cut those streams, and the far side would not see the replica's own address.
 */
const vipOptions = (vip: string): string => (vip.includes(':') ? ' preferred_lft 0' : '');

/** keepalived's config id of one replica (`--config-id`). */
const keepalivedConfigId = (replica: number): string => `replica-${replica}`;

/** The sidecar's command line (after the `keepalived` binary) for one replica. */
export function keepalivedArgs(configPath: string, replica: number): string[] {
  return [
    '--dont-fork', '--log-console', '--no-syslog', '--vrrp',
    '--use-file', configPath,
    '--config-id', keepalivedConfigId(replica),
    '--pid', `${KEEPALIVED_RUN_DIR}/keepalived.pid`,
    '--vrrp_pid', `${KEEPALIVED_RUN_DIR}/vrrp.pid`,
  ];
}

export interface KeepalivedOptions {
  /** Interface name of the in-cluster attachment inside the gateway pod. */
  readonly inClusterInterface: string;
  /** The runtime's admin port (its `/readyz` decides whether a replica may hold the VIP). */
  readonly adminPort: number;
  /** Advertisement interval in seconds; the backup takes over after about 3 missed adverts. @default 1 */
  readonly advertIntervalSeconds?: number;
}

/** The keepalived.conf of a cluster's gateway replicas, or undefined when the cluster has no VIP. */
export function keepalivedConfigFor(plan: FleetPlan, cluster: ClusterPlan, opts: KeepalivedOptions): string | undefined {
  if (!datapathMode(cluster.datapath).gateways || !cluster.gatewayVip) return undefined;
  if (cluster.gateways.length < 2) {
    throw new InvalidPropsError({ code: 'plan-inconsistent', path: 'cluster.gateways', message: `cluster ${cluster.name}: a gateway VIP needs 2 or more replicas, got ${cluster.gateways.length}` });
  }
  const ifname = opts.inClusterInterface;
  const advert = opts.advertIntervalSeconds ?? 1;
  const vrid = plan.gateway.failover.virtualRouterId;
  const own = cluster.gateways.map((g) => ({ id: keepalivedConfigId(g.replica), addr: bare(g.inCluster), priority: BASE_PRIORITY - 10 * g.replica }));
  const lines = [
    `# Migration Mesh gateway failover, fleet ${plan.fleet}, cluster ${cluster.name}: VRRP between the gateway`,
    `# replicas over ${ifname}; the holder of ${bare(cluster.gatewayVip)} is the next hop of the handlers' routes.`,
    '# One file for every replica: a line starting @replica-N applies to replica N only, @^replica-N to all others.',
    'global_defs {',
    `  router_id mm-${cluster.name}`,
    // the readiness check runs unprivileged (keepalived switches to this user for it: CAP_SETUID/SETGID)
    '  script_user nobody',
    '  enable_script_security',
    '  vrrp_garp_master_delay 1',
    '  vrrp_garp_master_repeat 3',
    // re-announce now and then: a handler that missed the takeover heals without waiting for ARP expiry
    '  vrrp_garp_master_refresh 30',
    '}',
    '',
    'vrrp_script gateway_ready {',
    `  script "/usr/bin/curl -fsS -o /dev/null --max-time 1 http://127.0.0.1:${opts.adminPort}/readyz"`,
    '  interval 1',
    '  timeout 2',
    '  fall 2',
    '  rise 2',
    '}',
    '',
    'vrrp_instance gateway {',
    '  version 3',
    '  state BACKUP',
    '  nopreempt',
    `  interface ${ifname}`,
    `  virtual_router_id ${vrid}`,
    ...own.map((o) => `  @${o.id} priority ${o.priority}`),
    `  advert_int ${advert}`,
    ...own.map((o) => `  @${o.id} unicast_src_ip ${o.addr}`),
    '  unicast_peer {',
    ...own.map((o) => `    @^${o.id} ${o.addr}`),
    '  }',
    '  virtual_ipaddress {',
    `    ${cluster.gatewayVip} dev ${ifname}${vipOptions(cluster.gatewayVip)}`,
    '  }',
    '  track_script {',
    '    gateway_ready',
    '  }',
    '}',
  ];
  return `${lines.join('\n')}\n`;
}
