/**
 * The sites of a plan in network namespaces (issue #24), shared by test/fleet-sites.netns.test.ts and the
 * VM lab's routed layout (test/support/vm-lab-sites.ts): one fabric bridge per site (its own L2 segment)
 * and one router namespace with real IPv4 forwarding and a leg on each, holding the site's `router` address
 * of the plan. Nothing else joins the segments, so every byte between two sites crosses the router.
 */
import type { SitePlan } from '../../src/addressing/sites';
import { NetnsLab } from './netns';

export interface SiteLeg {
  name: string;
  /** The site's router address on its subnet (the plan's `router`). */
  router: string;
  /** The site's first subnet of the shared network. */
  subnet: string;
  /** The site's fabric namespace, holding bridge `br-xc` (the site's L2 segment). */
  fab: string;
  /** The router's interface on the site's segment. */
  rtrIf: string;
  /** The plan's clusters in the site. */
  clusters: string[];
  mtu?: number;
}

export class RoutedSites {
  /** The router namespace. */
  readonly rtr: string;
  readonly sites: SiteLeg[];

  /** The router and one segment per site of `plan` (every site must have a router: a fleet with declared sites). */
  constructor(private readonly lab: NetnsLab, plan: readonly SitePlan[]) {
    this.rtr = lab.addNs('rtr');
    this.setForwarding('on');
    this.sites = plan.map((s, k) => {
      if (!s.router) throw new Error(`site ${s.name} has no router: the routed layout needs a fleet with declared sites`);
      const fab = lab.addNs(`fab-${s.name}`);
      lab.addBridge(fab, 'br-xc', s.mtu);
      const rtrIf = `to-${s.name}`;
      lab.addVeth({ hostNs: this.rtr, ifname: rtrIf, addrs: [`${s.router}/${s.prefixLength}`], fabricNs: fab, portName: `rtr${k}`, bridge: 'br-xc', mtu: s.mtu });
      return { name: s.name, router: s.router, subnet: s.subnets[0], fab, rtrIf, clusters: [...s.clusters], ...(s.mtu !== undefined ? { mtu: s.mtu } : {}) };
    });
  }

  site(name: string): SiteLeg {
    const s = this.sites.find((x) => x.name === name);
    if (!s) throw new Error(`no site ${name} (sites: ${this.sites.map((x) => x.name).join(', ')})`);
    return s;
  }

  /** The site of a cluster of the plan. */
  siteOf(cluster: string): SiteLeg {
    const s = this.sites.find((x) => x.clusters.includes(cluster));
    if (!s) throw new Error(`${cluster} is in no site (sites: ${this.sites.map((x) => `${x.name}: ${x.clusters.join(', ')}`).join('; ')})`);
    return s;
  }

  /**
   * A node's uplink into its site's segment: the node's bridge `nodeBridge` (made here) gets a veth whose
   * other end is port `portName` of the site's fabric bridge.
   */
  uplink(site: string, node: string, nodeBridge: string, ifname: string, portName: string): void {
    const s = this.site(site);
    this.lab.addBridge(node, nodeBridge, s.mtu);
    this.lab.addVeth({ hostNs: node, ifname, addrs: [], fabricNs: s.fab, portName, bridge: 'br-xc', mtu: s.mtu });
    this.lab.run(['ip', '-n', node, 'link', 'set', ifname, 'master', nodeBridge]);
  }

  /**
   * The router's forwarding: `on`; `off` (`net.ipv4.ip_forward=0`: Linux then drops what it would forward
   * without a word, so a connection across it hangs in SYN_SENT until TCP gives up); `reject` (forwarding
   * on, its FORWARD chain rejecting everything with ICMP admin-prohibited, as a router's ACL would: a
   * connection across it fails at once).
   */
  setForwarding(state: 'on' | 'off' | 'reject'): void {
    const rule = ['FORWARD', '-j', 'REJECT', '--reject-with', 'icmp-admin-prohibited'];
    const run = (cmd: string[]) => {
      const r = this.lab.exec(this.rtr, cmd);
      if (r.status !== 0) throw new Error(`${cmd.join(' ')} in ${this.rtr}: ${r.stderr}`);
    };
    run(['sysctl', '-qw', `net.ipv4.ip_forward=${state === 'off' ? 0 : 1}`]);
    const has = this.lab.exec(this.rtr, ['iptables', '-C', ...rule]).status === 0;
    if (state === 'reject' && !has) run(['iptables', '-I', ...rule]);
    if (state !== 'reject' && has) run(['iptables', '-D', ...rule]);
  }

  /** Bytes the router has sent out of each site's leg (what it forwarded into that site), by site name. */
  txBytes(): Record<string, number> {
    return Object.fromEntries(this.sites.map((s) => {
      const l = JSON.parse(this.lab.exec(this.rtr, ['ip', '-j', '-s', 'link', 'show', 'dev', s.rtrIf]).stdout)[0];
      return [s.name, l.stats64.tx.bytes as number];
    }));
  }

  /** `ip route get` of `to` from namespace `ns`: the next hop and device the kernel picks. */
  routeGet(ns: string, to: string): { gateway?: string; dev: string; prefsrc?: string } {
    const r = this.lab.exec(ns, ['ip', '-j', 'route', 'get', to]);
    if (r.status !== 0) throw new Error(`ip route get ${to} in ${ns}: ${r.stderr}`);
    return JSON.parse(r.stdout)[0];
  }
}
