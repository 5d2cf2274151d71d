/**
 * The gateway's attack surface as data (issue 49, items 5 and 6): every vantage point an attacker can stand on,
 * every target class it can aim at, and what must happen. `test/attack-matrix.netns.test.ts` runs each cell
 * against the real runtime in network namespaces (IPv4 and IPv6) and compares; `matrixMarkdown()` is the table
 * in README.md's security model (`test/attack-matrix-docs.test.ts` checks the README holds exactly it).
 *
 * Outcomes:
 *   - `flows`: the connection is carried and the bytes arrive intact (the sink's digest comes back),
 *   - `no connection`: the SYN is answered by a reset or an ICMP error, or not at all (the test's bound),
 *   - `refused G:REASON`: TCP connects, then gateway G (`a`: the gateway under test, `b`: the peer's)
 *     closes or resets it without one byte reaching a destination, and counts
 *     `mm_proxy_refusals_total{reason="REASON"}`,
 *   - `HTTP N`: the admin endpoint answers with status N,
 *   - `no address`: the target has no network address at all (the trust socket is a unix socket),
 *   - `n/a`: the vantage point reaches that target without the gateway (same L2 network): not the gateway's business.
 */

export const VANTAGES = ['stranger', 'peer-c', 'other-fleet', 'pod', 'mig-host', 'handler'] as const;
export type Vantage = (typeof VANTAGES)[number];

/** Who stands there, in the test's lab (cluster a's gateway is under test; b and c are its peers). */
export const VANTAGE_DESCRIPTION: Record<Vantage, string> = {
  'stranger': 'a host on the shared network with no certificate; its default route points at gateway a',
  'peer-c': 'peer gateway c\'s shared address with c\'s valid certificate (a fleet member, not the one a tunnel to b is for)',
  'other-fleet': 'peer gateway c\'s second shared address with a certificate of another fleet, issued by the same CA',
  'pod': 'a pod on cluster a\'s pod network (where the admin endpoints live); its default route points at gateway a\'s eth0',
  'mig-host': 'a host on cluster a\'s migration network, inside its CIDR, that is not a virt-handler',
  'handler': 'a virt-handler on cluster a\'s migration network (route to the fleet supernet via the gateway VIP)',
};

export type Expect = 'flows' | 'no connection' | `refused ${'a' | 'b'}:${string}` | `HTTP ${number}` | 'no address' | 'n/a';

export interface Row {
  /** Short key (stable: the test names its cells by it). */
  key: string;
  /** What is aimed at, in words (addresses are the lab's, per family). */
  target: string;
  /** The threat the row's expectations defend against. */
  threat: string;
  expect: Record<Vantage, Expect>;
}

/** What holds the admin cells (issue 49): the admin listener is bound to eth0 itself, not only to its address. */
const ADMIN_BOUND = "The admin listener's sockets are bound to eth0 (SO_BINDTODEVICE), as the intercept and tunnel listeners are to theirs: Linux takes a packet for any local address on any interface, so an address bind alone answered a host on the shared or migration network that routed a's pod address via the gateway (what this matrix found first)";

const all = (e: Expect): Record<Vantage, Expect> => ({ 'stranger': e, 'peer-c': e, 'other-fleet': e, 'pod': e, 'mig-host': e, 'handler': e });
/** The same outcome for the three shared-network vantage points, or for the pod and the two migration-network ones. */
const shared = (e: Expect) => ({ 'stranger': e, 'peer-c': e, 'other-fleet': e });
const inside = (e: Expect) => ({ 'pod': e, 'mig-host': e, 'handler': e });
const cert = 'refused a:unknown_peer_certificate';
const noTls = 'refused a:tls_handshake';

/**
 * The matrix. For the shared-network vantages with a certificate (`peer-c`, `other-fleet`) a destination row
 * is a tunnel OPEN to gateway a's tunnel port asking for that destination; every other vantage point tries the
 * destination itself, through whatever route it has (its default route points at the gateway).
 */
export const MATRIX: readonly Row[] = [
  {
    key: 'peer-handler', target: 'peer handler, any port (b\'s handler :49152)',
    threat: 'the gateway as an open relay into a peer\'s migration network (the review\'s scenario: a stranger routes b\'s CIDR via a\'s shared address); a peer relaying through a to b',
    expect: { 'stranger': 'no connection', 'peer-c': 'refused a:destination_outside_cidr', 'other-fleet': cert, 'pod': 'no connection', 'mig-host': 'flows', 'handler': 'flows' },
  },
  {
    key: 'peer-gateway-in-cidr', target: 'peer non-handler in b\'s CIDR: b\'s gateway in-cluster address :9185',
    threat: 'reaching the peer gateway\'s own services from inside the tunnel',
    expect: { 'stranger': 'no connection', 'peer-c': 'refused a:destination_outside_cidr', 'other-fleet': cert, 'pod': 'no connection', 'mig-host': 'refused b:destination_forbidden', 'handler': 'refused b:destination_forbidden' },
  },
  {
    key: 'peer-gateway-shared', target: 'peer gateway itself: b\'s shared address :15443, plain bytes',
    threat: 'the gateway forwarding between its networks (it is not a router)',
    expect: { 'stranger': 'refused b:tls_handshake', 'peer-c': 'refused b:tls_handshake', 'other-fleet': 'refused b:tls_handshake', 'pod': 'no connection', 'mig-host': 'no connection', 'handler': 'no connection' },
  },
  {
    key: 'local-handler', target: 'local handler: a\'s handler :9185',
    threat: 'a stranger, a pod or another fleet reaching a\'s migration network through its gateway; only an authenticated peer may',
    expect: { 'stranger': 'no connection', 'peer-c': 'flows', 'other-fleet': cert, 'pod': 'no connection', 'mig-host': 'n/a', 'handler': 'n/a' },
  },
  {
    key: 'local-gateway-own', target: 'local non-handler: a\'s gateway in-cluster address :15090',
    threat: 'a tunnel to the gateway\'s own services (admin, intercept) from a peer',
    expect: { 'stranger': 'no connection', 'peer-c': 'refused a:destination_forbidden', 'other-fleet': cert, 'pod': 'no connection', 'mig-host': 'no connection', 'handler': 'no connection' },
  },
  {
    key: 'node', target: 'the node: a\'s node address on the pod network :10250',
    threat: 'the kubelet or other node services reached through the gateway',
    expect: { 'stranger': 'no connection', 'peer-c': 'refused a:destination_outside_cidr', 'other-fleet': cert, 'pod': 'n/a', 'mig-host': 'no connection', 'handler': 'no connection' },
  },
  {
    key: 'intercept-mig', target: 'intercept port on a\'s migration address :15001 (no REDIRECT: the gateway itself)',
    threat: 'a client outside the migration network using the intercept listener as a tunnel entrance (routing to the migration address via another interface)',
    expect: { ...all('no connection'), 'mig-host': 'refused a:no_route', 'handler': 'refused a:no_route' },
  },
  {
    key: 'intercept-shared', target: 'intercept port on a\'s shared address :15001',
    threat: 'the intercept listener exposed on the shared network (from the migration network it is the intercept listener, and the gateway itself no route)',
    expect: { ...all('no connection'), 'mig-host': 'refused a:no_route', 'handler': 'refused a:no_route' },
  },
  {
    key: 'intercept-pod', target: 'intercept port on a\'s pod address :15001',
    threat: 'the intercept listener exposed on the pod network',
    expect: { ...all('no connection'), 'mig-host': 'refused a:no_route', 'handler': 'refused a:no_route' },
  },
  {
    key: 'tunnel-shared', target: 'tunnel port on a\'s shared address :15443, plain bytes',
    threat: 'anything but a TLS 1.3 client with a fleet certificate getting past the handshake; the tunnel listener reached from another network',
    expect: { ...shared(noTls), ...inside('no connection') },
  },
  {
    key: 'tunnel-mig', target: 'tunnel port on a\'s migration address :15443',
    threat: 'the tunnel listener exposed on the migration network (from the shared network it is the tunnel listener, whatever the address)',
    expect: { ...shared(noTls), ...inside('no connection') },
  },
  {
    key: 'tunnel-pod', target: 'tunnel port on a\'s pod address :15443',
    threat: 'the tunnel listener exposed on the pod network',
    expect: { ...shared(noTls), ...inside('no connection') },
  },
  {
    key: 'admin-healthz', target: 'admin /healthz on a\'s pod address :15090',
    threat: `admin endpoints reached from outside the pod network (the kubelet's probes come from there). ${ADMIN_BOUND}`,
    expect: { ...all('no connection'), 'pod': 'HTTP 200' },
  },
  {
    key: 'admin-metrics', target: 'admin /metrics on a\'s pod address :15090',
    threat: `peer names, counters and tunnel state read from outside the pod network (Prometheus scrapes from there). ${ADMIN_BOUND}`,
    expect: { ...all('no connection'), 'pod': 'HTTP 200' },
  },
  {
    key: 'admin-probe', target: 'admin /probe on a\'s pod address :15090',
    threat: `making the gateway connect to its peers' gateways on demand: only from the pod network (the API server's pod proxy), and there bounded (one probe per peer in flight, a result reused for 5 s, 3 s each; proxy/src/peer-probe.ts). ${ADMIN_BOUND}`,
    expect: { ...all('no connection'), 'pod': 'HTTP 200' },
  },
  {
    key: 'admin-trust', target: 'admin /trust on a\'s pod address :15090',
    threat: `the trust table read from outside the pod: it answers over loopback only (\`migration-mesh-proxy trust-status\`). ${ADMIN_BOUND}`,
    expect: { ...all('no connection'), 'pod': 'HTTP 403' },
  },
  {
    key: 'admin-shared', target: 'admin port on a\'s shared address :15090',
    threat: 'the admin listener exposed on the shared network',
    expect: all('no connection'),
  },
  {
    key: 'admin-mig', target: 'admin port on a\'s migration address :15090',
    threat: 'the admin listener exposed on the migration network',
    expect: all('no connection'),
  },
  {
    key: 'open-claim-b', target: 'tunnel port: OPEN naming cluster b as its source (to a\'s handler)',
    threat: 'a fleet member speaking for another one (the certificate names the source, not the header)',
    expect: { ...inside('no connection'), 'stranger': noTls, 'peer-c': 'refused a:source_mismatch', 'other-fleet': cert },
  },
  {
    key: 'publish-claim-b', target: 'tunnel port: PUBLISH of a CA bundle for cluster b',
    threat: 'a fleet member planting its CA as another cluster\'s (KubeVirt would trust it for b\'s migrations)',
    expect: { ...inside('no connection'), 'stranger': noTls, 'peer-c': 'refused a:trust_not_self', 'other-fleet': cert },
  },
  {
    key: 'bad-frame', target: 'tunnel port: bytes that are no frame, after TLS',
    threat: 'the header parser crashed or held open by junk',
    expect: { ...inside('no connection'), 'stranger': noTls, 'peer-c': 'refused a:malformed', 'other-fleet': cert },
  },
  {
    key: 'trust-socket', target: 'the trust socket (unix, mode 0600, in the pod\'s emptyDir)',
    threat: 'the local channel that hands the runtime its own CA, reached over a network or by another user',
    expect: all('no address'),
  },
];

const esc = (s: string) => s.replace(/\|/g, '\\|');

/** The README's table: one row per target, one column per vantage point, then the threat. */
export function matrixMarkdown(): string {
  const head = `| target | ${VANTAGES.join(' | ')} | threat |`;
  const rule = `|${' --- |'.repeat(VANTAGES.length + 2)}`;
  const rows = MATRIX.map((r) => `| ${esc(r.target)} | ${VANTAGES.map((v) => r.expect[v]).join(' | ')} | ${esc(r.threat)} |`);
  const who = VANTAGES.map((v) => `- \`${v}\`: ${VANTAGE_DESCRIPTION[v]}`);
  return [...who, '', head, rule, ...rows].join('\n');
}
