/**
 * The VM lab's routed two-site layout (issue #24 item 4): VmMigrationLab with layout `routed-sites`
 * realizes ams-1 (site ams) and fra-1 (site fra) of the synthesized two-sites example, each site its own L2
 * segment, joined only by a router namespace with real forwarding (test/support/netns-sites.ts, the same
 * implementation test/fleet-sites.netns.test.ts uses). Gateway modes: each gateway's cross-cluster
 * attachment carries the plan's route to the other site via its own site's router.
 *
 * `direct` across the sites is what the planner emits for a direct two-site fleet: the same example with
 * `datapath: direct`, whose migration NAD (KubeVirt's `migrations.network`, on the site's shared network)
 * carries the route to the other site via the site's router. Each handler gets that NAD's attachment from
 * the real bridge plugin (as `direct0`: its `migration0` is the gateway variants'), with the first address
 * whereabouts would hand out. That variant's pools are moved to .100-.199 of each site's /24, apart from
 * the gateway variants' addresses, which share the segments.
 */
import * as path from 'path';
import * as YAML from 'yaml';
import type { SitePlan } from '../../src/addressing/sites';
import { synthesizeFleet } from '../../cli/synthesize-fleet';
import { NetnsLab, whereaboutsFirstFree } from './netns';
import { CniRunner, whereaboutsAsStatic } from './netns-cni';
import { RoutedSites } from './netns-sites';

const ROOT = path.join(__dirname, '..', '..');

/** `one-segment`: three-sites-vlan, one shared segment, `direct` a veth pair; `routed-sites`: two-sites across a router. */
export type VmLabLayout = 'one-segment' | 'routed-sites';

export const LAYOUT_FLEET: Record<VmLabLayout, string> = {
  'one-segment': path.join(ROOT, 'examples', 'three-sites-vlan.fleet.yaml'),
  'routed-sites': path.join(ROOT, 'examples', 'two-sites.fleet.yaml'),
};

/** `one-segment`'s direct path: the two handlers' addresses on a veth pair. */
export const ONE_SEGMENT_DIRECT = ['192.0.2.1', '192.0.2.2'];

/** How a cluster's node joins its segment of the shared network with its bridge `nodeBridge`. */
type Uplink = (cluster: string, i: number, node: string, nodeBridge: string) => void;

/**
 * The shared network's segments: one fabric bridge (`one-segment`), or the sites' segments joined by a
 * router (`routed-sites`, returned as `routed`). Returns how each cluster's node joins its segment.
 */
export function labSegments(
  lab: NetnsLab, layout: VmLabLayout, sites: readonly SitePlan[], xcMtu: number | undefined,
): { uplink: Uplink; routed?: RoutedSites } {
  if (layout === 'routed-sites') {
    const routed = new RoutedSites(lab, sites);
    return { routed, uplink: (cluster, i, node, nodeBridge) => routed.uplink(routed.siteOf(cluster).name, node, nodeBridge, `xc-up${i}`, `c${i}xc`) };
  }
  const fab = lab.addNs('fab');
  lab.addBridge(fab, 'br-xc', xcMtu);
  return {
    uplink: (_cluster, i, node, nodeBridge) => {
      lab.addBridge(node, nodeBridge, xcMtu);
      lab.addVeth({ hostNs: node, ifname: `xc-up${i}`, addrs: [], fabricNs: fab, portName: `c${i}xc`, bridge: 'br-xc', mtu: xcMtu });
      lab.run(['ip', '-n', node, 'link', 'set', `xc-up${i}`, 'master', nodeBridge]);
    },
  };
}

/**
 * `direct`'s path between the two handlers: a veth pair at the migration network's MTU (`one-segment`), or
 * (`routed-sites`, `direct` given) each handler's `direct0` from the direct variant's migration NAD by the
 * real bridge plugin on its node, on its site's segment, with the route to the other site via its router.
 */
export function addDirectPath(
  lab: NetnsLab, cni: CniRunner, clusters: readonly { name: string; node: string; handler: { ns: string } }[],
  o: { mtu?: number; direct?: Record<string, DirectAttachment>; kernelCfg: (c: Record<string, unknown>) => Record<string, unknown>; containerId: () => string },
): void {
  const { direct } = o;
  if (!direct) {
    const [a, b] = clusters;
    const D = ONE_SEGMENT_DIRECT;
    lab.addVeth({ hostNs: b.handler.ns, ifname: 'direct0', addrs: [`${D[1]}/30`], fabricNs: a.handler.ns, portName: 'direct0', mtu: o.mtu, peerAddrs: [`${D[0]}/30`] });
    return;
  }
  for (const c of clusters) {
    cni.add({
      nodeNs: c.node, podNs: c.handler.ns, ifname: 'direct0', containerId: o.containerId(),
      config: o.kernelCfg(whereaboutsAsStatic(direct[c.name].config, direct[c.name].address)), pod: { namespace: 'kubevirt', name: `virt-handler-${c.name}` },
    });
  }
}

/** A handler's attachment to the shared network in direct mode: the migration NAD's config and the handler's address (CIDR form). */
export interface DirectAttachment { config: Record<string, any>; address: string }

/** KubeVirt's migration NAD config of each cluster in synthesized files. */
function migrationNadConfigs(files: Map<string, string>): Map<string, Record<string, any>> {
  const objs = new Map<string, any[]>();
  for (const [rel, text] of files) {
    if (!rel.endsWith('.yaml') || rel.endsWith('kustomization.yaml')) continue;
    const c = rel.split('/')[0];
    objs.set(c, [...(objs.get(c) ?? []), ...YAML.parseAllDocuments(text).map((d) => d.toJS()).filter(Boolean)]);
  }
  const out = new Map<string, Record<string, any>>();
  for (const [c, list] of objs) {
    const kv = list.find((o) => o.kind === 'KubeVirt');
    const nad = list.find((o) => o.kind === 'NetworkAttachmentDefinition' && o.metadata.name === kv?.spec?.configuration?.migrations?.network && o.metadata.namespace === kv?.metadata?.namespace);
    if (nad) out.set(c, JSON.parse(nad.spec.config));
  }
  return out;
}

/** The gateway modes the VM lab runs each migration through. */
export type GatewayMode = 'mtls-splice' | 'mtls' | 'plaintext';
/** What each gateway mode sets in the fleet's `spec.gateway`. */
export const GATEWAY_MODES: Record<GatewayMode, Record<string, unknown>> = { 'mtls-splice': { payload: 'splice' }, mtls: { payload: 'tls' }, plaintext: { tls: { plaintext: true } } };
/** A datapath variant of the lab: one of the gateway modes (one replica, no failover), or no gateways at all. */
export type LabDatapath = GatewayMode | 'direct';

/**
 * Fleet document `base` (copied) as datapath variant `v` runs it, without what validate refuses in that variant:
 *  - the bandwidth budgets (`spec.gateway.bandwidth`) are held by gateways on spliced and plaintext tunnels only:
 *    validate refuses them with payload tls (gateway-bandwidth-needs-splice) and, with a direct datapath, toward
 *    clusters without gateways (gateway-bandwidth-unknown-cluster), so mtls and direct run without them;
 *  - the CA exchange runs in the trust containers over mutual TLS: validate refuses it on a plaintext tunnel
 *    (trust/exchange-without-mtls), so plaintext turns it off.
 */
export function fleetForDatapath(base: any, v: LabDatapath): any {
  const f = JSON.parse(JSON.stringify(base));
  if (v === 'direct') f.spec.datapath = 'direct';
  else f.spec.gateway = { ...f.spec.gateway, replicas: 1, failover: { mode: 'none' }, ...GATEWAY_MODES[v] };
  if ((v === 'mtls' || v === 'direct') && f.spec.gateway) delete f.spec.gateway.bandwidth;
  if (v === 'plaintext') f.spec.trust = { ...f.spec.trust, exchange: { ...f.spec.trust?.exchange, enabled: false } };
  return f;
}

/**
 * The routed layout's direct variant of fleet document `base` (two-sites): `datapath: direct`, pools at
 * .100-.199 of each site's /24, no ledger. Returns each of `clusters`' handler attachment; refuses a
 * migration NAD without the route to the other site via the cluster's own site router (planner defect).
 */
export function routedDirectVariant(base: any, clusters: readonly string[]): Record<string, DirectAttachment> {
  const f = fleetForDatapath(base, 'direct');
  for (const s of f.spec.crossClusterNetwork.sites) {
    if (s.prefixLength !== 24 || !s.router) throw new Error(`site ${s.name}: the direct variant expects a /24 with a router`);
    const net = s.router.split('.').slice(0, 3).join('.');
    s.pool = [`${net}.100-${net}.199`];
  }
  const r = synthesizeFleet(f, {});
  const nads = migrationNadConfigs(r.files);
  const out: Record<string, DirectAttachment> = {};
  for (const c of clusters) {
    const config = nads.get(c);
    if (!config || config.ipam?.type !== 'whereabouts') throw new Error(`${c}: no whereabouts migration NAD in the direct variant`);
    const own = r.plan.sites.find((s) => s.clusters.includes(c))!;
    for (const other of r.plan.sites.filter((s) => s !== own)) {
      for (const dst of other.subnets) {
        if (!(config.ipam.routes ?? []).some((x: any) => x.dst === dst && x.gw === own.router)) {
          throw new Error(`${c}: the direct variant's migration NAD has no route to ${other.name} (${dst}) via ${own.name}'s router ${own.router}: ${JSON.stringify(config.ipam)}`);
        }
      }
    }
    out[c] = { config, address: whereaboutsFirstFree(config.ipam, 1)[0] };
  }
  return out;
}
