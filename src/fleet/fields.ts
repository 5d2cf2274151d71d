/**
 * Field helpers of fleet validation: parse a CIDR, range or address and say what is wrong with it at
 * its path. Pure, no cdk8s import.
 */
import { ProblemCollector } from '../base/errors';
import { Attachment } from './schema';
import { Cidr, Family, HostBits, Interval, addr, formatAddr, formatCidr, formatInterval, overlaps, parseCidr, parsePoolItem } from '../base/ip';
import { FORBIDDEN_CIDRS } from '../gateway/runtime-config';

/** `first-last` of an interval, or the one address. */
const spanText = (i: Interval): string =>
  (i.start === i.end ? formatAddr(addr(i.family, i.start)) : `${formatAddr(addr(i.family, i.start))}-${formatAddr(addr(i.family, i.end))}`);

/**
 * The fix of a CIDR written with host bits (`192.168.60.20/28`): the masked network it lies in, with the
 * addresses that holds, so the widening is seen; where the field takes ranges too, also the range from
 * the given address to the end of that network, which is often what was meant (issue #39).
 */
function hostBitsFix(h: HostBits, ranges: boolean): string {
  const masked = formatCidr(h.masked);
  if (!ranges) return `use the masked network address '${masked}' (${spanText(h.masked)})`;
  const rest = spanText({ family: h.given.family, start: h.given.value, end: h.masked.end });
  return `write '${masked}' (the whole /${h.masked.prefix}: ${spanText(h.masked)}), or '${rest}' (from ${formatAddr(h.given)} to the end of that block)`;
}

export function parseCidrField(p: ProblemCollector, path: string, text: string): Cidr | undefined {
  const r = parseCidr(text);
  if (r.ok) return r.cidr;
  if (r.reason === 'unmasked') p.add('cidr-host-bits', path, `'${text}' has host bits set`, r.hostBits ? hostBitsFix(r.hostBits, false) : `use the masked network address '${r.suggestion}'`);
  else if (r.reason === 'prefix') p.add('cidr-syntax', path, `'${text}' has a prefix length longer than the address allows`, 'use /0-/32 for IPv4, /0-/128 for IPv6');
  else p.add('cidr-syntax', path, `'${text}' is not a CIDR`, 'write it as address/prefix, e.g. 10.200.0.0/16 or fd00:200::/48');
  return undefined;
}

/** The ranges the gateway runtime refuses to dial, whatever its config says (proxy/src/config.ts). */
const FORBIDDEN = FORBIDDEN_CIDRS.map((text) => ({ text, r: parseCidr(text) })).flatMap(({ text, r }) => (r.ok ? [{ text, cidr: r.cidr }] : []));

/**
 * A network the gateways would carry traffic to, in a range the gateway refuses to dial (link-local,
 * loopback, multicast, "this network", NAT64, cloud metadata, ...): valid here, refused at runtime.
 */
export function checkDialable(p: ProblemCollector, path: string, iv: Interval, what: string): void {
  const hit = FORBIDDEN.find((f) => overlaps(f.cidr, iv));
  if (!hit) return;
  p.add('network-not-dialable', path,
    `${formatInterval(iv)} overlaps ${hit.text}, a range the gateway refuses to dial (link-local, loopback, multicast, "this network", translated or metadata ranges), so ${what} would validate and then fail at runtime`,
    'use ordinary unicast space: RFC 1918 (10/8, 172.16/12, 192.168/16) for IPv4, a ULA (fd00::/8) or global prefix for IPv6');
}

/** A pool item, exclusion or other a-b range; `fix` is the advice when there is no suggested spelling. */
export function parseRangeField(p: ProblemCollector, path: string, text: string, fix: string): Interval | undefined {
  const r = parsePoolItem(text);
  if (r.ok) return r.interval;
  p.add('address-syntax', path, `'${text}' ${r.reason}`, r.hostBits ? hostBitsFix(r.hostBits, true) : r.suggestion ? `write '${r.suggestion}'` : fix);
  return undefined;
}

/** Every overlapping pair of a list (not only neighbours), reported at the later entry. */
export function checkPairwiseOverlaps(p: ProblemCollector, items: readonly { interval: Interval; path: string }[], code: 'pool-overlap' | 'exclude-overlap', fix: string): void {
  for (let i = 0; i < items.length; i++) {
    for (let j = i + 1; j < items.length; j++) {
      if (overlaps(items[i].interval, items[j].interval)) p.add(code, items[j].path, `overlaps ${items[i].path} (${formatInterval(items[i].interval)})`, fix);
    }
  }
}

export function checkAttachment(p: ProblemCollector, path: string, a: Attachment, family: Family | undefined): void {
  if ('mtu' in a && a.mtu !== undefined && family === 6 && a.mtu < 1280) {
    p.add('mtu-too-small', `${path}.mtu`, `${a.mtu} is below the IPv6 minimum MTU of 1280`, 'use 1280-9216 on an IPv6 network');
  }
}
