/**
 * CNI configuration for NetworkAttachmentDefinitions: the main plugin from the fleet's attachment and
 * the IPAM from the plan. Only keys the plugins really read (containernetworking/plugins @3d27709f,
 * https://github.com/containernetworking/plugins/tree/3d27709faaa4e3619f299b962d9ea24589e28f9c/plugins; whereabouts @3a262bd0, https://github.com/k8snetworkplumbingwg/whereabouts/blob/3a262bd0cd873e13d9b379342f8251b852a89b8f/pkg/types/types.go). Pure, no cdk8s import.
 */
import { Attachment } from '../fleet/schema';
import { FleetPlan, RoutePlan, WhereaboutsPlan } from './planner';
import { datapathMode } from '../fleet/datapath-modes';

const CNI_VERSION = '0.3.1';

export type CniConfig = Record<string, unknown>;

/** The main-plugin keys of an attachment. */
function attachmentKeys(a: Attachment): CniConfig {
  switch (a.type) {
    case 'macvlan':
      return { type: 'macvlan', master: a.master, mode: a.mode ?? 'bridge', ...(a.mtu ? { mtu: a.mtu } : {}) };
    case 'bridge':
      // with a VLAN, the pod port leaves VLAN 1 too (plugins v1.3-v1.7 keep it by default; v1.8+ default
      // to false; v1.1-v1.2 ignore the key): the pod sees only its own VLAN
      return { type: 'bridge', bridge: a.bridge, ...(a.vlan ? { vlan: a.vlan, preserveDefaultVlan: false } : {}), ...(a.mtu ? { mtu: a.mtu } : {}) };
    case 'ipvlan':
      return { type: 'ipvlan', master: a.master, mode: a.mode ?? 'l2', ...(a.mtu ? { mtu: a.mtu } : {}) };
    case 'host-device':
      return { type: 'host-device', device: a.device };
  }
}

export function whereaboutsIpam(w: WhereaboutsPlan): CniConfig {
  return {
    type: 'whereabouts',
    range: w.range,
    ...(w.rangeStart ? { range_start: w.rangeStart } : {}),
    ...(w.rangeEnd ? { range_end: w.rangeEnd } : {}),
    ...(w.exclude.length ? { exclude: w.exclude } : {}),
    ...(w.routes.length ? { routes: w.routes.map((r) => ({ dst: r.dst, gw: r.gw })) } : {}),
  };
}

/**
 * Static IPAM whose address comes from each pod's Multus selection (`ips`), so one NAD serves every
 * gateway replica with its own planned address. Needs `capabilities.ips` on the plugin config.
 */
export function staticIpam(routes: readonly RoutePlan[] = []): CniConfig {
  return {
    type: 'static',
    ...(routes.length ? { routes: routes.map((r) => ({ dst: r.dst, gw: r.gw })) } : {}),
  };
}

/** A complete single-plugin CNI config as deterministic JSON. */
export function cniConfigJson(name: string, attachment: Attachment, ipam: CniConfig, opts: { ipsCapability?: boolean } = {}): string {
  const cfg: CniConfig = {
    cniVersion: CNI_VERSION,
    name,
    ...attachmentKeys(attachment),
    ...(opts.ipsCapability ? { capabilities: { ips: true } } : {}),
    ipam,
  };
  return JSON.stringify(cfg);
}

/** What the nodes must provide for one attachment (a NAD) before its pods can start. */
export interface NodePrerequisite {
  /** The NAD name. */
  readonly network: string;
  /** Clusters whose nodes carry it. */
  readonly clusters: string[];
  /** Which pods attach to it on those nodes. */
  readonly pods: string;
  /** One line per requirement. */
  readonly requirements: string[];
}

/**
 * The node prerequisites of each attachment the plan uses, from the CNI plugins' own behaviour
 * (containernetworking/plugins, see docs/node-prerequisites.md): the bridge or master interface, MTU,
 * VLAN filtering and VLAN 1 membership, and IPv6 duplicate address detection.
 */
export function attachmentRequirements(a: Attachment, ipv6: boolean): string[] {
  const out: string[] = [];
  const mtu = 'mtu' in a && a.mtu ? a.mtu : undefined;
  if (a.type === 'bridge') {
    if (a.vlan) {
      out.push(`bridge ${a.bridge}: absent (the plugin creates it with vlan_filtering 1) or created with vlan_filtering 1; an existing bridge without it ignores VLAN ${a.vlan} (ADD succeeds, nothing is enforced)`);
      out.push(`bridge ${a.bridge}: its uplink carries VLAN ${a.vlan} tagged (bridge vlan add dev <uplink> vid ${a.vlan}); the kernel needs bridge VLAN filtering (CONFIG_BRIDGE_VLAN_FILTERING)`);
      out.push(`bridge ${a.bridge}: the NAD sets preserveDefaultVlan: false, so pod ports leave VLAN 1; plugins v1.1-v1.2 have no such option and keep them untagged members of VLAN 1: keep VLAN 1 unused on this bridge, or run plugins >= v1.3.0`);
    } else {
      out.push(`bridge ${a.bridge}: absent (the plugin creates it) or present; to reach other nodes, an uplink NIC enslaved to it`);
    }
    if (mtu) out.push(`bridge ${a.bridge} and its uplink: MTU >= ${mtu} (a bridge takes the smallest MTU of its ports)`);
  } else if (a.type === 'macvlan' || a.type === 'ipvlan') {
    out.push(`${a.master}: present and up on every node that runs these pods (the ${a.type} master)`);
    out.push(`${a.master}: MTU >= ${mtu ?? 'the attachment MTU'} (ADD fails otherwise: "invalid MTU ${mtu ?? 'N'}, must be [0, master MTU(...)]")`);
    if (a.type === 'macvlan') out.push(`${a.master}: the node itself cannot reach its own macvlan pods through ${a.master} (macvlan isolation); other nodes can`);
  } else {
    out.push(`${a.device}: present on every node that runs these pods and used by nothing else (host-device moves it into the pod: one pod per node)`);
  }
  if (ipv6 && a.type !== 'bridge') {
    out.push('IPv6: addresses stay tentative (duplicate address detection) for about 1 s after ADD; the gateway\'s init step waits for them, virt-handler reads its address at start and listens on the wildcard (unaffected after the first second)');
  }
  return out;
}

/** Every attachment of the plan with what its nodes need, grouped by NAD and attachment. */
export function nodePrerequisites(plan: FleetPlan): NodePrerequisite[] {
  const groups = new Map<string, { network: string; a: Attachment; clusters: string[]; pods: Set<string>; ipv6: boolean }>();
  const add = (network: string, a: Attachment, cluster: string, pods: string, ipv6: boolean) => {
    const key = `${network}|${JSON.stringify(a)}`;
    const g = groups.get(key) ?? { network, a, clusters: [], pods: new Set<string>(), ipv6 };
    if (!g.clusters.includes(cluster)) g.clusters.push(cluster);
    g.pods.add(pods);
    groups.set(key, g);
  };
  for (const c of plan.clusters) {
    const v6 = c.migrationNetwork.ipam.range.includes(':');
    add(c.migrationNetwork.nadName, c.migrationNetwork.attachment, c.name, datapathMode(c.datapath).sharedMigrationNetwork ? 'virt-handler, sync controller (shared network)' : 'virt-handler, sync controller', v6);
    if (datapathMode(c.datapath).gateways) {
      add(`${c.migrationNetwork.nadName}-gateway`, c.migrationNetwork.attachment, c.name, 'gateway', v6);
      add(plan.crossCluster.nadName, c.site.attachment, c.name, 'gateway (shared network)', (c.gateways[0]?.crossCluster ?? '').includes(':'));
    }
    // a cluster without a gateway exchanges CAs through its trust agent, on the shared network too
    if (!datapathMode(c.datapath).gateways && c.trustAgents.length > 0) add(plan.crossCluster.nadName, c.site.attachment, c.name, 'trust agent (shared network)', c.trustAgents[0].crossCluster.includes(':'));
    if (datapathMode(c.datapath).kubevirtProxy && c.crossClusterSync) add(c.crossClusterSync.nadName, c.site.attachment, c.name, 'sync controller (shared network)', c.crossClusterSync.ipam.range.includes(':'));
  }
  return [...groups.values()].map((g) => ({ network: g.network, clusters: g.clusters.sort(), pods: [...g.pods].join('; '), requirements: attachmentRequirements(g.a, g.ipv6) }));
}

/** `plan`'s text section for the node prerequisites. */
export function renderNodePrerequisites(list: readonly NodePrerequisite[]): string {
  const lines = ['', 'Node prerequisites (what the CNI plugins need; docs/node-prerequisites.md):'];
  for (const p of list) {
    lines.push(`  ${p.network} (${p.pods}) on ${p.clusters.join(', ')}:`);
    for (const r of p.requirements) lines.push(`    - ${r}`);
  }
  return `${lines.join('\n')}\n`;
}
