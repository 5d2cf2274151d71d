/**
 * Gateway failover in the fleet network tests (fleet-netns, fleet-netns-ipv6, fleet-sites-netns): who holds
 * a cluster's VIP, and taking a replica's "node" away. One implementation for the three suites.
 */
import { ChildProcess } from 'child_process';
import { NetnsLab } from './netns';

/** A gateway replica as the fleet tests run it: its namespace, its in-cluster and shared-network links. */
export interface FailoverReplica { ns: string; ifname: string; proc?: ChildProcess; ka?: ChildProcess }

/**
 * Namespaces of the replicas whose in-cluster interface is up and holds the VIP (a replica whose "node"
 * the test took away keeps the address on a downed link: it answers nobody).
 */
export function vipHolders(lab: NetnsLab, c: { gateways: FailoverReplica[]; vip?: string }): string[] {
  return c.gateways.filter((g) => {
    const r = lab.exec(g.ns, ['ip', '-j', 'addr', 'show', 'dev', g.ifname]);
    return r.status === 0 && JSON.parse(r.stdout || '[]').some((l: any) => (l.flags ?? []).includes('UP') && (l.addr_info ?? []).some((a: any) => a.local === c.vip));
  }).map((g) => g.ns);
}

/** The node is lost: keepalived and the runtime killed, the in-cluster and shared-network links down. */
export function loseNode(lab: NetnsLab, g: FailoverReplica, sharedIfname: string): void {
  lab.kill(g.ka!);
  lab.kill(g.proc!);
  lab.run(['ip', '-n', g.ns, 'link', 'set', g.ifname, 'down']);
  lab.run(['ip', '-n', g.ns, 'link', 'set', sharedIfname, 'down']);
}
