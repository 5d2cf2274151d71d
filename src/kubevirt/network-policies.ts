/**
 * The flows a fleet's paths need through a cluster that enforces network policies (KubeVirt's optional
 * `kubevirt-network-policies.yaml`, or any default-deny), and the allow-policies that open exactly those
 * flows: `NetworkPolicy` for the pod network, `MultiNetworkPolicy` per secondary network (issue #29,
 * docs/network-policies.md). Pure, no cdk8s import.
 *
 * Facts (read in KubeVirt's networkpolicy.go @d923fdb8, https://github.com/kubevirt/kubevirt/blob/d923fdb815cd2016ddaebdaaa51db04133576d72/pkg/virt-operator/resource/generate/components/networkpolicy.go): KubeVirt's
 * policies isolate virt-handler for ingress and egress (peers: virt-handler pods only) and the sync
 * controller for ingress (8443/8187 only, never 9185). An allow-policy only adds: it never lists a
 * direction the declared policies leave open, since naming a direction isolates it (the upstream proxy
 * PR made the sync controller egress-isolated that way).
 */
import { ClusterPlan, FleetPlan } from '../addressing/fleet-plan';
import { ResolvedNetworkPolicies } from '../fleet/resolved';
import { Interval, aggregateCidrs, formatCidr, hostCidr, intervalToCidrs, parseAddr, parseCidr, subtractIntervals } from '../base/ip';
import { APP_NAME_LABEL, TRUST_AGENT_NAME, TRUST_AGENT_SET_LABEL } from '../base/names';
import { gatewayInClusterNadName, gatewaySetLabels, peerGatewayCidrs } from '../gateway/pod';
import { datapathMode } from '../fleet/datapath-modes';

/** KubeVirt's sync gRPC port (`synchronizationPort`, default 9185). */
const SYNC_PORT = 9185;
/** The gateway's and trust agent's admin (metrics, health) port on the pod network (proxy/src/config.ts). */
const ADMIN_PORT = 15090;
/** Ports an API server commonly listens on, when the fleet does not name its endpoints. */
const API_SERVER_PORTS = [443, 6443];
/** The namespace label every namespace carries (Kubernetes >= 1.22). */
const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export type WorkloadKind = 'virt-handler' | 'sync-controller' | 'gateway' | 'trust-agent';
export type Direction = 'ingress' | 'egress';
/** What a flow rides: the pod network, the in-cluster migration network, or the shared network. */
export type Via = 'pod' | 'migration' | 'crosscluster';

export interface Workload {
  readonly kind: WorkloadKind;
  readonly namespace: string;
  readonly labels: Record<string, string>;
}

/** TCP, one port, a range (`endPort`), or every port (no `port`). */
export interface PortRange {
  readonly port?: number;
  readonly endPort?: number;
}

/** A peer of a flow: addresses, or pods of this cluster. */
export type FlowPeer = { readonly cidr: string } | { readonly workload: Workload };

/** One thing the fleet needs to get through: the rule sits on `workload`'s side. */
export interface Flow {
  readonly id: string;
  readonly why: string;
  readonly workload: Workload;
  readonly direction: Direction;
  /** Empty: any source (ingress) or destination (egress). */
  readonly peers: FlowPeer[];
  readonly ports: PortRange[];
  readonly via: Via;
}

/** A policy of either kind, in the shape both API objects share (`networking.k8s.io/v1` and `k8s.cni.cncf.io/v1beta1`). */
export interface PolicyPlan {
  readonly kind: 'NetworkPolicy' | 'MultiNetworkPolicy';
  readonly name: string;
  readonly namespace: string;
  /** MultiNetworkPolicy: the NAD (`namespace/name`) it filters. */
  readonly policyFor?: string;
  readonly spec: PolicySpec;
  /** The flow ids the policy opens (for `plan` and the tests). */
  readonly flows: string[];
}

export interface PolicyRule {
  readonly from?: PolicyPeer[];
  readonly to?: PolicyPeer[];
  readonly ports?: { protocol: 'TCP'; port?: number; endPort?: number }[];
}
export interface PolicyPeer {
  readonly ipBlock?: { cidr: string; except?: string[] };
  readonly podSelector?: { matchLabels: Record<string, string> };
  readonly namespaceSelector?: { matchLabels: Record<string, string> };
}
export interface PolicySpec {
  readonly podSelector: { matchLabels: Record<string, string> };
  readonly policyTypes: ('Ingress' | 'Egress')[];
  readonly ingress?: PolicyRule[];
  readonly egress?: PolicyRule[];
}

/** The fleet's workloads in one cluster. `meshNamespace`: where the gateway or trust agent runs. */
function clusterWorkloads(cluster: ClusterPlan, meshNamespace: string): Record<WorkloadKind, Workload> {
  const kv = cluster.kubevirt.namespace;
  return {
    'virt-handler': { kind: 'virt-handler', namespace: kv, labels: { 'kubevirt.io': 'virt-handler' } },
    'sync-controller': { kind: 'sync-controller', namespace: kv, labels: { 'kubevirt.io': 'virt-synchronization-controller' } },
    'gateway': { kind: 'gateway', namespace: meshNamespace, labels: gatewaySetLabels(cluster.name) },
    'trust-agent': { kind: 'trust-agent', namespace: meshNamespace, labels: { [APP_NAME_LABEL]: TRUST_AGENT_NAME, [TRUST_AGENT_SET_LABEL]: cluster.name } },
  };
}

/** Whether the declared policies isolate this workload in this direction (only then is an allow needed, or safe). */
function isolates(np: ResolvedNetworkPolicies, kind: WorkloadKind, direction: Direction): boolean {
  if (np.installed === 'default-deny') return true;
  if (np.installed !== 'kubevirt') return false;
  return kind === 'virt-handler' || (kind === 'sync-controller' && direction === 'ingress');
}

/** The addresses a direct or native cluster holds on the shared network (its whereabouts slice, gaps removed). */
function sliceCidrs(ipam: { rangeStart?: string; rangeEnd?: string; exclude: string[] } | undefined): string[] {
  const lo = ipam?.rangeStart && parseAddr(ipam.rangeStart);
  const hi = ipam?.rangeEnd && parseAddr(ipam.rangeEnd);
  if (!lo || !hi) return [];
  const gaps = ipam.exclude.flatMap((t) => { const r = parseCidr(t); return r.ok ? [r.cidr as Interval] : []; });
  const kept = subtractIntervals([{ family: lo.family, start: lo.value, end: hi.value }], gaps);
  return aggregateCidrs(kept.flatMap(intervalToCidrs)).map(formatCidr);
}

const ALL_TCP: PortRange[] = [{}];
const host = (withPrefix: string): string => {
  const a = parseAddr(withPrefix.split('/')[0]);
  return a ? hostCidr(a) : withPrefix;
};
const cidrs = (list: readonly string[]): FlowPeer[] => list.map((cidr) => ({ cidr }));

/** One flow (positional, so the tables above read as rows). */
function flow(id: string, why: string, w: Workload, direction: Direction, peers: FlowPeer[], ports: PortRange[], via: Via): Flow {
  return { id, why, workload: w, direction, peers, ports, via };
}

/** virt-handler to virt-handler inside the cluster on the migration network (in-cluster migrations). */
function inClusterFlows(w: Record<WorkloadKind, Workload>): Flow[] {
  const h = w['virt-handler'];
  return [
    flow('handler-from-handlers', 'in-cluster migrations between this cluster\'s virt-handlers', h, 'ingress', [{ workload: h }], ALL_TCP, 'migration'),
    flow('handler-to-handlers', 'in-cluster migrations between this cluster\'s virt-handlers', h, 'egress', [{ workload: h }], ALL_TCP, 'migration'),
  ];
}

/** gateway mode: the gateway dials local handlers and sync controllers from its in-cluster address; they dial remote CIDRs through it. */
function gatewayModeFlows(cluster: ClusterPlan, w: Record<WorkloadKind, Workload>): Flow[] {
  const gw = cidrs(cluster.gateways.map((g) => host(g.inCluster)));
  const remote = cidrs(cluster.peers.flatMap((p) => p.cidrs));
  const local = cidrs(cluster.migrationNetwork.cidr ? [cluster.migrationNetwork.cidr] : []);
  const out: Flow[] = [];
  if (remote.length > 0) {
    const [h, s, g] = [w['virt-handler'], w['sync-controller'], w.gateway];
    out.push(
      flow('sync-from-gateway', 'peer sync controllers reach this one on 9185 through the local gateway', s, 'ingress', gw, [{ port: SYNC_PORT }], 'migration'),
      flow('sync-to-peers', 'this sync controller dials the peers\' (9185), routed through the local gateway', s, 'egress', remote, [{ port: SYNC_PORT }], 'migration'),
      flow('handler-from-gateway', 'migrations arriving from peer clusters, dialled by the local gateway (any port: handler ports are ephemeral)', h, 'ingress', gw, ALL_TCP, 'migration'),
      flow('handler-to-peers', 'migrations leaving for peer clusters, routed through the local gateway', h, 'egress', remote, ALL_TCP, 'migration'),
      flow('gateway-from-cluster', 'the gateway intercepts what local handlers and sync controllers send to peer CIDRs', g, 'ingress', local, ALL_TCP, 'migration'),
      flow('gateway-to-cluster', 'the gateway dials local handlers and sync controllers for arriving tunnels', g, 'egress', local, ALL_TCP, 'migration'),
    );
  }
  return out;
}

/** direct and native mode: the peers of the same mode, by the addresses they hold on the shared network. */
function sharedModeFlows(plan: FleetPlan, cluster: ClusterPlan, w: Record<WorkloadKind, Workload>): Flow[] {
  const others = plan.clusters.filter((c) => c.name !== cluster.name && c.datapath === cluster.datapath);
  const [h, s] = [w['virt-handler'], w['sync-controller']];
  if (datapathMode(cluster.datapath).sharedMigrationNetwork) {
    const peers = cidrs(others.flatMap((c) => sliceCidrs(c.migrationNetwork.ipam)));
    if (peers.length === 0) return [];
    return [
      flow('sync-from-peers', 'peer sync controllers dial this one on 9185 over the shared network', s, 'ingress', peers, [{ port: SYNC_PORT }], 'migration'),
      flow('sync-to-peers', 'this sync controller dials the peers\' on 9185', s, 'egress', peers, [{ port: SYNC_PORT }], 'migration'),
      flow('handler-from-peers', 'peer virt-handlers send migrations (any port: handler ports are ephemeral)', h, 'ingress', peers, ALL_TCP, 'migration'),
      flow('handler-to-peers', 'this cluster\'s virt-handlers send migrations to the peers', h, 'egress', peers, ALL_TCP, 'migration'),
    ];
  }
  const peers = cidrs(others.flatMap((c) => sliceCidrs(c.crossClusterSync?.ipam)));
  if (peers.length === 0) return [];
  // PR #17922: the sync controllers tunnel every migration channel over 9185 and talk to their own handlers in-cluster (INFERENCE on the in-cluster ports)
  return [
    flow('sync-from-peers', 'peer sync controllers (the native proxy) dial this one on 9185 over the shared network', s, 'ingress', peers, [{ port: SYNC_PORT }], 'crosscluster'),
    flow('sync-to-peers', 'this sync controller tunnels migrations to the peers on 9185', s, 'egress', peers, [{ port: SYNC_PORT }], 'crosscluster'),
    flow('handler-from-sync', 'the local sync controller delivers tunnelled migrations to the handler', h, 'ingress', [{ workload: s }], ALL_TCP, 'migration'),
    flow('handler-to-sync', 'the handler hands outgoing migrations to the local sync controller', h, 'egress', [{ workload: s }], ALL_TCP, 'migration'),
    flow('sync-from-handlers', 'the handler hands outgoing migrations to the local sync controller', s, 'ingress', [{ workload: h }], ALL_TCP, 'migration'),
    flow('sync-to-handlers', 'the local sync controller delivers tunnelled migrations to the handler', s, 'egress', [{ workload: h }], ALL_TCP, 'migration'),
  ];
}

/** The gateway's or trust agent's own needs: tunnels with the peers, the admin port, the API server (CA exchange). */
function meshPodFlows(cluster: ClusterPlan, w: Workload, tunnelPort: number): Flow[] {
  const peers = cidrs(peerGatewayCidrs(cluster));
  const api = cidrs(cluster.networkPolicies.apiServerCidrs);
  const apiPorts = api.length > 0 ? ALL_TCP : API_SERVER_PORTS.map((port) => ({ port }));
  const out: Flow[] = [];
  if (peers.length > 0) {
    out.push(
      flow(`${w.kind}-tunnel-in`, 'peer gateways and trust agents open tunnels (mTLS, fleet CA)', w, 'ingress', peers, [{ port: tunnelPort }], 'crosscluster'),
      flow(`${w.kind}-tunnel-out`, 'tunnels to the peer gateways and trust agents', w, 'egress', peers, [{ port: tunnelPort }], 'crosscluster'),
    );
  }
  out.push(
    flow(`${w.kind}-admin`, 'metrics and health probes on the admin port', w, 'ingress', [], [{ port: ADMIN_PORT }], 'pod'),
    flow(`${w.kind}-api-server`, 'the trust container reads and writes CA ConfigMaps through the API server', w, 'egress', api, apiPorts, 'pod'),
  );
  return out;
}

/**
 * Every flow the fleet needs through this cluster's declared policies, restricted to the directions those
 * policies isolate. Empty when the cluster declares none.
 */
export function clusterFlows(plan: FleetPlan, cluster: ClusterPlan, meshNamespace: string): Flow[] {
  const np = cluster.networkPolicies;
  if (np.installed === 'none') return [];
  const w = clusterWorkloads(cluster, meshNamespace);
  const flows = [
    ...inClusterFlows(w),
    ...(datapathMode(cluster.datapath).gateways ? gatewayModeFlows(cluster, w) : sharedModeFlows(plan, cluster, w)),
    ...(datapathMode(cluster.datapath).gateways ? meshPodFlows(cluster, w.gateway, plan.gateway.tunnelPort) : []),
    ...(cluster.trustAgents.length > 0 ? meshPodFlows(cluster, w['trust-agent'], plan.gateway.tunnelPort) : []),
  ];
  return flows.filter((f) => isolates(np, f.workload.kind, f.direction));
}

const NAME_PREFIX = 'migration-mesh-allow';

function policyPeer(p: FlowPeer): PolicyPeer {
  if ('cidr' in p) return { ipBlock: { cidr: p.cidr } };
  return { podSelector: { matchLabels: p.workload.labels }, namespaceSelector: { matchLabels: { [NAMESPACE_NAME_LABEL]: p.workload.namespace } } };
}

function rule(f: Flow): PolicyRule {
  const peers = f.peers.length > 0 ? f.peers.map(policyPeer) : undefined;
  const ports = f.ports.map((r) => ({ protocol: 'TCP' as const, ...(r.port !== undefined ? { port: r.port } : {}), ...(r.endPort !== undefined ? { endPort: r.endPort } : {}) }));
  return { ...(peers ? (f.direction === 'ingress' ? { from: peers } : { to: peers }) : {}), ports };
}

/** One policy over flows that share a workload: the directions with flows, one rule per flow. */
function policyOf(kind: PolicyPlan['kind'], name: string, w: Workload, flows: Flow[], policyFor?: string): PolicyPlan {
  const ingress = flows.filter((f) => f.direction === 'ingress').map(rule);
  const egress = flows.filter((f) => f.direction === 'egress').map(rule);
  const policyTypes: PolicySpec['policyTypes'] = [...(ingress.length ? ['Ingress' as const] : []), ...(egress.length ? ['Egress' as const] : [])];
  return {
    kind, name, namespace: w.namespace, policyFor, flows: flows.map((f) => f.id),
    spec: { podSelector: { matchLabels: w.labels }, policyTypes, ...(ingress.length ? { ingress } : {}), ...(egress.length ? { egress } : {}) },
  };
}

/** The NAD (`namespace/name`) a workload's flow rides, for a MultiNetworkPolicy's `policy-for`. */
function nadOf(plan: FleetPlan, cluster: ClusterPlan, w: Workload, via: Via): string | undefined {
  if (via === 'pod') return undefined;
  if (w.kind === 'gateway' || w.kind === 'trust-agent') {
    // the shared attachment of the gateways and agents already has its MultiNetworkPolicy (constructs/gateway/policy.ts)
    return via === 'migration' ? `${w.namespace}/${gatewayInClusterNadName(cluster.migrationNetwork.nadName)}` : undefined;
  }
  const nad = via === 'migration' ? cluster.migrationNetwork.nadName : cluster.crossClusterSync?.nadName;
  return nad ? `${w.namespace}/${nad}` : undefined;
}

/**
 * The allow-policies of one cluster: a `NetworkPolicy` per workload with every flow (whatever the CNI
 * filters, the addresses are the same), and under `default-deny` on a cluster running the
 * multi-networkpolicy controller a `MultiNetworkPolicy` per workload and secondary network.
 */
export function clusterPolicies(plan: FleetPlan, cluster: ClusterPlan, meshNamespace: string): PolicyPlan[] {
  const flows = clusterFlows(plan, cluster, meshNamespace);
  const out: PolicyPlan[] = [];
  const byWorkload = new Map<WorkloadKind, Flow[]>();
  for (const f of flows) byWorkload.set(f.workload.kind, [...(byWorkload.get(f.workload.kind) ?? []), f]);
  for (const [kind, list] of byWorkload) out.push(policyOf('NetworkPolicy', `${NAME_PREFIX}-${kind}`, list[0].workload, list));
  if (cluster.networkPolicies.installed !== 'default-deny' || !cluster.multiNetworkPolicy) return out;
  const byNad = new Map<string, Flow[]>();
  for (const f of flows) {
    const nad = nadOf(plan, cluster, f.workload, f.via);
    if (nad) byNad.set(`${f.workload.kind} ${f.via} ${nad}`, [...(byNad.get(`${f.workload.kind} ${f.via} ${nad}`) ?? []), f]);
  }
  for (const [key, list] of byNad) {
    const [kind, via, nad] = key.split(' ');
    out.push(policyOf('MultiNetworkPolicy', `${NAME_PREFIX}-${kind}-${via}`, list[0].workload, list, nad));
  }
  return out;
}
