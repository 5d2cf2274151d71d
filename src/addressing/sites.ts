/**
 * The sites of a plan (issue #24): what each cluster's shared-network attachments carry (the site's
 * attachment, prefix and routes to the other sites via its own router), and what the network team
 * must provide per site. Pure, no cdk8s import.
 */
import { Attachment } from '../fleet/schema';
import { ResolvedCluster, ResolvedFleet } from '../fleet/resolved';
import { ResolvedSite } from '../fleet/sites';
import { formatCidr } from '../base/ip';

export interface SitePlan {
  readonly name: string;
  /** The attachment of the site's shared network (its master/bridge/VLAN, its MTU set). */
  readonly attachment: Attachment;
  readonly prefixLength: number;
  /** The site's subnet(s) of the shared network. */
  readonly subnets: string[];
  /** The site's router on its subnet, the next hop of `routes`. @default - none (one site) */
  readonly router?: string;
  /** @default - the plugin default */
  readonly mtu?: number;
  /** Routes every shared-network address of the site carries (each next hop on-link: the site's own router). */
  readonly routes: { readonly dst: string; readonly gw: string }[];
  /** Clusters in the site, sorted. */
  readonly clusters: string[];
}

/** The resolved site a cluster is in. */
export function siteOf(fleet: ResolvedFleet, c: ResolvedCluster): ResolvedSite {
  return fleet.crossCluster.sites.find((s) => s.name === c.site) ?? fleet.crossCluster.sites[0];
}

export function sitePlans(fleet: ResolvedFleet): SitePlan[] {
  return fleet.crossCluster.sites.map((s) => ({
    name: s.name, attachment: s.attachment, prefixLength: s.prefixLength, subnets: s.subnets.map(formatCidr),
    ...(s.router !== undefined ? { router: s.router } : {}), ...(s.mtu !== undefined ? { mtu: s.mtu } : {}),
    routes: s.routes, clusters: fleet.clusters.filter((c) => c.site === s.name).map((c) => c.name),
  }));
}

/** VLAN of an attachment (bridge), if any. */
const vlanOf = (a: Attachment): number | undefined => (a.type === 'bridge' ? a.vlan : undefined);

/** What the network team provides per site: subnet, router and its routes, VLAN, MTU (`plan` prints it when the fleet has sites). */
export function renderSiteRequirements(sites: readonly SitePlan[]): string {
  if (sites.length < 2) return '';
  const lines = ['', 'Sites (what the network team provides at each; docs/node-prerequisites.md, "Sites"):'];
  for (const s of sites) {
    const other = sites.filter((o) => o !== s);
    const carrier = s.attachment.type === 'bridge' ? `bridge ${s.attachment.bridge}` : s.attachment.type === 'host-device' ? `NIC ${s.attachment.device}` : `${s.attachment.type} on ${s.attachment.master}`;
    const vlan = vlanOf(s.attachment);
    lines.push(`  ${s.name} (${s.clusters.join(', ')}): subnet ${s.subnets.join(', ')} on ${carrier}${vlan ? `, VLAN ${vlan} tagged on the uplinks` : ', untagged'}`);
    lines.push(`    - router ${s.router ?? '(none given)'} on ${s.subnets.join(', ')}, forwarding to ${other.map((o) => `${o.name} ${o.subnets.join(', ')} (via its router ${o.router ?? '?'})`).join('; ')}`);
    lines.push(`    - MTU ${s.mtu ?? 'default (1500)'} on the site's network, its uplinks and the router's interface; every site on a path the same`);
    lines.push(`    - our attachments there carry: ${s.routes.map((r) => `${r.dst} via ${r.gw}`).join(', ') || 'no routes'}`);
  }
  return `${lines.join('\n')}\n`;
}
