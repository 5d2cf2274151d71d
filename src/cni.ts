/**
 * CNI configuration for NetworkAttachmentDefinitions: the main plugin from the fleet's attachment and
 * the IPAM from the plan. Only keys the plugins really read (../shared/reference/kubevirt-api-facts.md
 * s.7). Pure, no cdk8s import.
 */
import { Attachment } from './fleet-schema';
import { RoutePlan, WhereaboutsPlan } from './planner';

const CNI_VERSION = '0.3.1';

export type CniConfig = Record<string, unknown>;

/** The main-plugin keys of an attachment. */
function attachmentKeys(a: Attachment): CniConfig {
  switch (a.type) {
    case 'macvlan':
      return { type: 'macvlan', master: a.master, mode: a.mode ?? 'bridge', ...(a.mtu ? { mtu: a.mtu } : {}) };
    case 'bridge':
      return { type: 'bridge', bridge: a.bridge, ...(a.vlan ? { vlan: a.vlan } : {}), ...(a.mtu ? { mtu: a.mtu } : {}) };
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
