/**
 * Address policy: which peer a destination belongs to (origin side), and whether a gateway may dial a
 * destination for a peer (terminus side). Never an open relay: the terminus dials only inside its own
 * cluster's migration CIDR(s), and never loopback, unspecified, link-local, multicast, broadcast, cloud
 * metadata addresses, or its own addresses, whatever the CIDRs say.
 */
import * as net from 'node:net';
import type { PeerConfig, ProxyConfig } from './config';

/** '::ffff:10.0.0.1' -> '10.0.0.1'; anything else unchanged. */
export function normalizeAddress(a: string): string {
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  return m ? m[1] : a;
}

function familyOf(a: string): 'ipv4' | 'ipv6' | undefined {
  const f = net.isIP(a);
  return f === 4 ? 'ipv4' : f === 6 ? 'ipv6' : undefined;
}

export function cidrList(cidrs: string[]): net.BlockList {
  const bl = new net.BlockList();
  for (const c of cidrs) {
    const [addr, len] = c.split('/');
    const fam = familyOf(addr);
    if (!fam) throw new Error(`bad CIDR ${c}`);
    bl.addSubnet(addr, Number(len), fam);
  }
  return bl;
}

export function inList(bl: net.BlockList, address: string): boolean {
  const a = normalizeAddress(address);
  const fam = familyOf(a);
  return fam ? bl.check(a, fam) : false;
}

const FORBIDDEN_CIDRS = [
  '0.0.0.0/8', // "this network", unspecified
  '127.0.0.0/8', // loopback
  '169.254.0.0/16', // link-local, includes 169.254.169.254 (cloud metadata)
  '224.0.0.0/4', // multicast
  '240.0.0.0/4', // reserved, includes 255.255.255.255 broadcast
  '100.100.100.200/32', // Alibaba Cloud metadata
  '::/128', // unspecified
  '::1/128', // loopback
  'fe80::/10', // link-local
  'ff00::/8', // multicast
  'fd00:ec2::254/128', // AWS IPv6 metadata
];
const LOOPBACK_CIDRS = ['127.0.0.0/8', '::1/128'];

export type DestinationVerdict = { ok: true } | { ok: false; code: 'forbidden' | 'outside_cidr'; why: string };

export class AddressPolicy {
  private readonly peers: { peer: PeerConfig; list: net.BlockList }[];
  private readonly local: net.BlockList;
  private readonly forbidden: net.BlockList;
  private readonly loopback = cidrList(LOOPBACK_CIDRS);
  private readonly own: Set<string>;

  constructor(cfg: ProxyConfig, extraOwn: string[] = [], private readonly allowLoopback = false) {
    this.peers = cfg.peers.map((peer) => ({ peer, list: cidrList(peer.cidrs) }));
    this.local = cidrList(cfg.localCidrs);
    this.forbidden = cidrList(FORBIDDEN_CIDRS);
    this.own = new Set([...cfg.ownAddresses, ...(cfg.dialFrom ? [cfg.dialFrom] : []), ...extraOwn]
      .filter((a) => net.isIP(a) && a !== '0.0.0.0' && a !== '::').map(normalizeAddress));
  }

  /** Origin side: the peer whose CIDRs contain this destination (first match in config order). */
  peerFor(address: string): PeerConfig | undefined {
    return this.peers.find((p) => inList(p.list, address))?.peer;
  }

  /** Terminus side: may this gateway dial `address:port` on behalf of a peer? */
  checkDestination(address: string, port: number): DestinationVerdict {
    const a = normalizeAddress(address);
    if (!familyOf(a)) return { ok: false, code: 'forbidden', why: 'not an IP address' };
    if (port < 1 || port > 65535) return { ok: false, code: 'forbidden', why: `port ${port}` };
    const isLoop = inList(this.loopback, a);
    if (isLoop && !this.allowLoopback) return { ok: false, code: 'forbidden', why: 'loopback destination' };
    if (!isLoop && inList(this.forbidden, a)) return { ok: false, code: 'forbidden', why: 'reserved destination (link-local, metadata, multicast, unspecified)' };
    if (this.own.has(a)) return { ok: false, code: 'forbidden', why: 'the gateway\'s own address' };
    if (isLoop && this.allowLoopback) return { ok: true };
    if (!inList(this.local, a)) return { ok: false, code: 'outside_cidr', why: 'outside this cluster\'s migration CIDRs' };
    return { ok: true };
  }
}
