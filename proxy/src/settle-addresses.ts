/**
 * Wait (bounded) until no IPv6 address of this network namespace is still `tentative` (duplicate address
 * detection, about 1 s after an address is added). The CNI plugins' static IPAM settles addresses only
 * when the IPAM result has an IPv6 gateway (containernetworking/plugins pkg/ipam/ipam_linux.go
 * ConfigureIface -> ip.SettleAddresses), which the gateway's attachments never have, so the pod starts
 * with tentative addresses: a socket bound to one fails (EADDRNOTAVAIL), the kernel picks no source from
 * it, and keepalived's unicast VRRP from it fails. The gateway pod's init step calls this before the
 * runtime and the keepalived sidecar start. Same rule as the plugins' own wait: tentative or dadfailed
 * flags, polled every 50 ms; a DAD failure is reported at once (another host holds the address).
 */
import * as fs from 'node:fs';

/** /proc/net/if_inet6 flags (include/uapi/linux/if_addr.h). */
const IFA_F_DADFAILED = 0x08;
const IFA_F_TENTATIVE = 0x40;

export interface Inet6Addr { readonly address: string; readonly ifname: string; readonly flags: number }

/** Parse /proc/net/if_inet6: `addr32hex ifindex prefixlen scope flags ifname` per line. */
export function parseIfInet6(text: string): Inet6Addr[] {
  return text.split('\n').map((l) => l.trim().split(/\s+/)).filter((f) => f.length >= 6 && /^[0-9a-f]{32}$/.test(f[0]))
    .map((f) => ({ address: f[0].match(/.{4}/g)!.join(':'), ifname: f[5], flags: parseInt(f[4], 16) }));
}

export interface SettleResult { readonly waitedMs: number; readonly tentative: Inet6Addr[]; readonly dadFailed: Inet6Addr[] }

export async function settleAddresses(timeoutMs = 10_000, file = '/proc/net/if_inet6', everyMs = 50): Promise<SettleResult> {
  const start = Date.now();
  for (;;) {
    let addrs: Inet6Addr[] = [];
    try { addrs = parseIfInet6(fs.readFileSync(file, 'utf8')); } catch { /* no IPv6 in this namespace */ }
    const dadFailed = addrs.filter((a) => a.flags & IFA_F_DADFAILED);
    const tentative = addrs.filter((a) => a.flags & IFA_F_TENTATIVE && !(a.flags & IFA_F_DADFAILED));
    const waitedMs = Date.now() - start;
    if (dadFailed.length || tentative.length === 0 || waitedMs >= timeoutMs) return { waitedMs, tentative, dadFailed };
    await new Promise((r) => setTimeout(r, everyMs));
  }
}
