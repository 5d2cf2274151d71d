/**
 * Gateway configuration: the single source of truth shared by the runtime (which reads it from the
 * mounted ConfigMap) and the construct library (which writes that ConfigMap). Pure zod, no I/O.
 *
 * Identity: every gateway presents a certificate chained to the fleet CA with a URI SAN
 * `spiffe://<fleet>/cluster/<cluster>` (see `peerIdentityUri`).
 */
import { z } from 'zod';
import { trustConfigSchema } from './trust/config';

export const PROXY_CONFIG_VERSION = 1 as const;

/** Default tunnel port on the cross-cluster network. */
/**
 * Refused whatever `localCidrs` says. Starting point: the IANA IPv4 and IPv6 Special-Purpose Address
 * Registries (RFC 6890 and updates), keeping the ranges that are not ordinary unicast hosts or that
 * translate to, or tunnel towards, some other place; plus cloud metadata endpoints.
 */
export const FORBIDDEN_CIDRS: readonly string[] = [
  '0.0.0.0/8', // "this network", unspecified (RFC 791)
  '127.0.0.0/8', // loopback (RFC 1122)
  '169.254.0.0/16', // link-local (RFC 3927): 169.254.169.254 cloud metadata, 169.254.170.2 ECS
  '192.0.0.0/24', // IETF protocol assignments (RFC 6890): DS-Lite 192.0.0.0/29, NAT64 discovery 192.0.0.170/171
  '192.52.193.0/24', // AMT relays (RFC 7450): tunnels elsewhere
  '192.88.99.0/24', // 6to4 relay anycast (RFC 3068, deprecated): translates elsewhere
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved (RFC 1112), includes 255.255.255.255 limited broadcast
  '100.100.100.200/32', // Alibaba Cloud metadata
  '168.63.129.16/32', // Azure host services (wireserver)
  '::/96', // IPv4-compatible IPv6 (RFC 4291, deprecated) incl. :: and ::1
  '::ffff:0:0:0/96', // IPv4-translated (RFC 2765 SIIT)
  '64:ff9b::/96', // NAT64 well-known prefix (RFC 6052): translates to IPv4
  '64:ff9b:1::/48', // local-use NAT64 (RFC 8215)
  '100::/64', // discard-only (RFC 6666)
  '2001::/32', // Teredo (RFC 4380): tunnels to IPv4
  '2001:20::/28', // ORCHIDv2 (RFC 7343): identifiers, not locators
  '2002::/16', // 6to4 (RFC 3056): tunnels to IPv4
  '5f00::/16', // SRv6 SIDs (RFC 9602): segments, forwarded elsewhere
  'fe80::/10', // link-local
  'fec0::/10', // site-local (RFC 3879, deprecated)
  'ff00::/8', // multicast
  'fd00:ec2::/32', // AWS services: metadata fd00:ec2::254, DNS ::253, time ::123
  'fd20:ce::254/128', // Google Cloud metadata (IPv6)
];

export const DEFAULT_TUNNEL_PORT = 15443;
/** Default port the intercept listener binds inside the pod (iptables REDIRECT target). */
export const DEFAULT_INTERCEPT_PORT = 15001;
/** Default admin port: /healthz, /readyz, /metrics. */
export const DEFAULT_ADMIN_PORT = 15090;

const ipLiteral = z.union([z.ipv4(), z.ipv6()]);
const cidr = z.union([z.cidrv4(), z.cidrv6()]);
const port = z.number().int().min(1).max(65535);
const clusterName = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/).max(63);

export const endpointSchema = z.object({
  /** Address to bind (listen) or dial. */
  host: ipLiteral,
  port,
}).strict();

/** Linux interface name (IFNAMSIZ - 1). */
const interfaceName = z.string().regex(/^[A-Za-z0-9_.-]{1,15}$/).refine((n) => n !== '.' && n !== '..', { message: 'is not an interface name' });

/** Default interface of the in-cluster migration network inside the gateway pod (the intercept listener's). */
export const DEFAULT_INTERCEPT_INTERFACE = 'mig0';
/** Default interface of the shared cross-cluster network inside the gateway pod (the tunnel listener's). */
export const DEFAULT_TUNNEL_INTERFACE = 'xc0';

/**
 * The intercept and tunnel listeners (issue 49): an address, optionally bound to the one interface that serves
 * the listener (SO_BINDTODEVICE: only connections that arrive on that interface are accepted, whatever their
 * destination address). A wildcard `host` (`0.0.0.0`, `::`) is accepted only together with `interface`: a
 * wildcard on every interface would take connections from networks the listener does not serve.
 */
export const listenEndpointSchema = z.object({
  /** Address to bind: the exact address, or the wildcard of the family together with `interface`. */
  host: ipLiteral,
  port,
  /** The interface the listener is bound to (SO_BINDTODEVICE; unprivileged on Linux >= 5.7). Absent: the address alone. */
  interface: interfaceName.optional(),
}).strict();

/**
 * The admin listener (/healthz, /readyz, /metrics): either an address, or an interface whose addresses
 * (learned at start) it binds, plus 127.0.0.1 for in-pod checks. Never the shared cross-cluster network
 * by default: it binds the pod network's `eth0`.
 */
export const adminEndpointSchema = z.union([
  endpointSchema,
  z.object({ interface: interfaceName, port }).strict(),
]);

/** Default admin listener: the pod network interface (and loopback), not the shared network. */
export const DEFAULT_ADMIN_LISTEN = { interface: 'eth0', port: DEFAULT_ADMIN_PORT } as const;
/** Default intercept listener: the IPv4 wildcard bound to the migration network's interface. */
export const DEFAULT_INTERCEPT_LISTEN = { host: '0.0.0.0', interface: DEFAULT_INTERCEPT_INTERFACE, port: DEFAULT_INTERCEPT_PORT } as const;
/** Default tunnel listener: the IPv4 wildcard bound to the shared network's interface. */
export const DEFAULT_TUNNEL_LISTEN = { host: '0.0.0.0', interface: DEFAULT_TUNNEL_INTERFACE, port: DEFAULT_TUNNEL_PORT } as const;

export const peerSchema = z.object({
  /** Peer cluster name; must match the URI SAN of its gateway certificates. */
  cluster: clusterName,
  /**
   * That cluster's in-cluster migration CIDR(s): connections to these go to this peer. Empty: the peer
   * is reached for the trust exchange only (a cluster without a gateway, whose endpoints are its trust
   * agent; or any peer of a trust agent): no connection is ever tunnelled to it.
   */
  cidrs: z.array(cidr),
  /** The peer's gateway (or trust agent) replicas on the cross-cluster network (tried in order, then round-robin). */
  gateways: z.array(endpointSchema).min(1),
  /**
   * This peer's bandwidth budget, bytes per second: overrides the top-level `bandwidth` for the tunnels to and from
   * this peer (same enforcement and refusals). Absent: the top-level `bandwidth`, if any.
   */
  bandwidth: z.number().int().min(1).optional(),
}).strict();

export const limitsSchema = z.object({
  /** TLS handshake + header exchange must finish within this many ms. */
  handshakeTimeoutMs: z.number().int().positive().default(10_000),
  /** Largest accepted tunnel header, in bytes. */
  headerMaxBytes: z.number().int().min(64).max(65_536).default(4096),
  /** Concurrent tunnels accepted from (or opened to) one peer cluster. */
  maxTunnelsPerPeer: z.number().int().positive().default(256),
  /** Concurrent tunnels in total. */
  maxTunnelsTotal: z.number().int().positive().default(1024),
  /** A tunnel with no bytes in either direction for this long is closed. Migrations are bursty: keep it long. */
  idleTimeoutMs: z.number().int().positive().default(600_000),
  /** Dialing the in-cluster destination (or the peer gateway) must succeed within this many ms. */
  dialTimeoutMs: z.number().int().positive().default(5_000),
  /** On SIGTERM, tunnels in flight may finish for this long before they are closed (then they are reset). */
  drainTimeoutMs: z.number().int().nonnegative().default(30_000),
  /**
   * Unauthenticated work: connections still in TLS handshake / header exchange from one source address
   * that is not a configured peer gateway. A configured peer gateway's address has its own budget
   * (`maxTunnelsPerPeer`), so strangers can never crowd out peers.
   */
  maxHandshakesPerSource: z.number().int().positive().default(16),
  /** Unauthenticated connections in total from sources that are not configured peer gateways. */
  maxHandshakesTotal: z.number().int().positive().default(256),
  /** Tunnel sockets: TCP keepalive starts after this much silence (dead-peer detection). */
  keepaliveIdleMs: z.number().int().min(1000).default(5_000),
  /** Tunnel sockets: interval between keepalive probes. */
  keepaliveIntervalMs: z.number().int().min(1000).default(2_000),
  /** Tunnel sockets: unanswered probes before the peer is declared dead (the tunnel is reset). */
  keepaliveProbes: z.number().int().min(1).max(127).default(3),
  /** Tunnel sockets: TCP_USER_TIMEOUT, how long sent data may stay unacknowledged before the tunnel is reset. */
  userTimeoutMs: z.number().int().min(1000).default(15_000),
}).strict();

const tlsFiles = {
  /** PEM bundle of the fleet CA. */
  caFile: z.string().min(1),
  /** PEM certificate of this gateway (URI SAN spiffe://<fleet>/cluster/<cluster>). */
  certFile: z.string().min(1),
  keyFile: z.string().min(1),
};

export const tlsSchema = z.discriminatedUnion('mode', [
  /** Mutual TLS 1.3 between the gateways; the payload travels inside it. */
  z.object({ mode: z.literal('mtls'), ...tlsFiles }).strict(),
  /**
   * Mutual TLS 1.3 authenticates both gateways and the tunnel header exactly as `mtls`; then the payload, which
   * must already be end-to-end encrypted (KubeVirt's migration TLS), is spliced on the same TCP connection after
   * a BIND exchange that ties it to the TLS session (PROTOCOL.md section 7). Also accepts `mtls` origins.
   */
  z.object({ mode: z.literal('mtls-splice'), ...tlsFiles }).strict(),
  z.object({
    /** Explicit opt-in: no encryption or authentication on the tunnel. Trusted networks only. */
    mode: z.literal('plaintext'),
  }).strict(),
]);

export const proxyConfigSchema = z.object({
  version: z.literal(PROXY_CONFIG_VERSION),
  fleet: clusterName,
  /** The cluster this gateway serves. */
  cluster: clusterName,
  listen: z.object({
    /**
     * Where redirected in-cluster connections arrive (nat REDIRECT target), on the migration network's interface;
     * `setup-rules` redirects only what arrives on `interface`. Default: `0.0.0.0` on interface `mig0`.
     */
    intercept: listenEndpointSchema.default({ ...DEFAULT_INTERCEPT_LISTEN }),
    /** Where peer gateways connect, on the cross-cluster network's interface. Default: `0.0.0.0` on interface `xc0`. */
    tunnel: listenEndpointSchema.default({ ...DEFAULT_TUNNEL_LISTEN }),
    /** /healthz, /readyz, /metrics: an address, or an interface (+ loopback). Default: interface eth0. */
    admin: adminEndpointSchema.default({ ...DEFAULT_ADMIN_LISTEN }),
  }).strict().default(() => ({
    intercept: { ...DEFAULT_INTERCEPT_LISTEN },
    tunnel: { ...DEFAULT_TUNNEL_LISTEN },
    admin: { ...DEFAULT_ADMIN_LISTEN },
  })),
  /**
   * This cluster's migration CIDR(s): the only destinations this gateway will dial for a peer. Empty: a
   * trust agent (a cluster without a gateway): it dials nothing, every tunnel is refused (`outside_cidr`)
   * and only PUBLISH is answered.
   */
  localCidrs: z.array(cidr),
  /** This gateway's own addresses (refused as destinations). */
  ownAddresses: z.array(ipLiteral).default([]),
  /** Address to dial in-cluster destinations from (the gateway's in-cluster migration address). */
  dialFrom: ipLiteral.optional(),
  peers: z.array(peerSchema),
  tls: tlsSchema,
  limits: limitsSchema.default(() => limitsSchema.parse({})),
  /**
   * Bandwidth budget per peer, bytes per second: what this gateway sends toward each peer over the shared network,
   * all tunnels to that peer together, shared fairly between them (native splice relay: tls.mode plaintext and
   * mtls-splice; refused with tls.mode mtls). A peer's own `peers[].bandwidth` overrides it for that peer.
   * Absent: no budget, except toward the peers that have their own.
   */
  bandwidth: z.number().int().min(1).optional(),
  /** KubeVirt CA exchange with the peers (trust/config.ts); absent: none. */
  trust: trustConfigSchema.optional(),
}).strict();

export type ProxyConfig = z.infer<typeof proxyConfigSchema>;
export type ProxyConfigInput = z.input<typeof proxyConfigSchema>;
export type PeerConfig = z.infer<typeof peerSchema>;

/** The URI SAN a gateway certificate of `cluster` in `fleet` carries. */
export function peerIdentityUri(fleet: string, cluster: string): string {
  return `spiffe://${fleet}/cluster/${cluster}`;
}

/** Validate a config object; throws an Error whose message lists every problem with its path. */
export function parseProxyConfig(input: unknown): ProxyConfig {
  const r = proxyConfigSchema.safeParse(input);
  if (!r.success) {
    throw new Error(`invalid gateway config:\n${z.prettifyError(r.error)}`);
  }
  const cfg = r.data;
  const bad = listenProblems(cfg.listen);
  if (hasBandwidth(cfg) && cfg.tls.mode === 'mtls') {
    const where = cfg.bandwidth !== undefined ? 'bandwidth' : `peers[${cfg.peers.findIndex((p) => p.bandwidth !== undefined)}].bandwidth`;
    bad.push(`${where}: a budget per peer is enforced on plaintext and spliced tunnels only, not on payload inside TLS (tls.mode mtls); set tls.mode mtls-splice, or remove bandwidth`);
  }
  if (bad.length) throw new Error(`invalid gateway config:\n${bad.map((b) => `  - ${b}`).join('\n')}`);
  const names = new Set<string>();
  for (const [i, p] of cfg.peers.entries()) {
    if (p.cluster === cfg.cluster) throw new Error(`invalid gateway config: peers[${i}].cluster '${p.cluster}' is this gateway's own cluster; remove it`);
    if (names.has(p.cluster)) throw new Error(`invalid gateway config: peers[${i}].cluster '${p.cluster}' listed twice; merge the entries`);
    names.add(p.cluster);
  }
  return cfg;
}

/** Whether the config gives any peer a bandwidth budget (the top-level `bandwidth`, or a peer's own). */
export function hasBandwidth(cfg: ProxyConfig): boolean {
  return cfg.bandwidth !== undefined || cfg.peers.some((p) => p.bandwidth !== undefined);
}

const peerRates = new WeakMap<ProxyConfig, Map<string, number | undefined>>();
/**
 * The bandwidth budget toward `peer` (bytes/s): the peer's own `bandwidth`, else the top-level one; undefined
 * without either. One lookup table per config (a tunnel asks at every open).
 */
export function peerBandwidth(cfg: ProxyConfig, peer: string): number | undefined {
  let rates = peerRates.get(cfg);
  if (!rates) {
    rates = new Map(cfg.peers.map((p) => [p.cluster, p.bandwidth ?? cfg.bandwidth]));
    peerRates.set(cfg, rates);
  }
  return rates.has(peer) ? rates.get(peer) : cfg.bandwidth;
}

/** The unspecified address of either family ('0.0.0.0', '::', '::ffff:0.0.0.0' in any spelling). */
export function isWildcard(host: string): boolean {
  return /^(0+\.0+\.0+\.0+|[0:]*:[0:]*|::ffff:0+\.0+\.0+\.0+|::ffff:0+:0+)$/i.test(host);
}

/**
 * Every listener bound to the one interface or address that serves it (issue 49): no wildcard without its
 * interface, and the three networks kept apart (the migration network's interface is not the shared one's, and
 * the admin listener is on neither). Each problem names its field and the fix.
 */
export function listenProblems(listen: ProxyConfig['listen']): string[] {
  const out: string[] = [];
  const wild = { intercept: 'the migration network\'s interface (e.g. mig0)', tunnel: 'the shared cross-cluster network\'s interface (e.g. xc0)' };
  for (const k of ['intercept', 'tunnel'] as const) {
    const e = listen[k];
    if (isWildcard(e.host) && !e.interface) {
      out.push(`listen.${k}: host '${e.host}' without interface binds every interface of the pod (an open relay: issue 49); set listen.${k}.interface to ${wild[k]}, or host to the exact address`);
    }
  }
  const { intercept, tunnel, admin } = listen;
  if (intercept.interface && intercept.interface === tunnel.interface) {
    out.push(`listen.tunnel.interface: '${tunnel.interface}' is also listen.intercept.interface; the shared network and the migration network are different interfaces: name each its own`);
  }
  if ('host' in admin && isWildcard(admin.host)) {
    out.push(`listen.admin: host '${admin.host}' binds every interface, the shared and migration networks too; use {interface: 'eth0', port: ${admin.port}} (the pod network and loopback) or an exact address`);
  }
  if ('interface' in admin && (admin.interface === intercept.interface || admin.interface === tunnel.interface)) {
    out.push(`listen.admin.interface: '${admin.interface}' is the ${admin.interface === intercept.interface ? 'migration' : 'shared'} network's interface; the admin listener serves the pod network: use eth0`);
  }
  return out;
}
