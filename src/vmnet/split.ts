/**
 * The address split of one VM-network subnet (issue 40 item 3): infrastructure (the same everywhere), a
 * mobile slice every cluster reserves and only the ledger assigns, and `slots` equal aligned cluster
 * slices (spares included). Each cluster's `reservedSubnets` (Layer2) or `excludeSubnets` (localnet) is
 * the subnet minus its own slice (and minus infrastructure, which the CRD forbids reserving), so its
 * dynamic range is exactly its slice. Pure address arithmetic, no cdk8s import.
 */
import { Cidr, Interval, bits, cidrOf, formatCidr, intervalToCidrs, overlaps, subtractIntervals } from '../base/ip';

/** The CRD's limit on `reservedSubnets` and `excludeSubnets` entries. */
export const MAX_RESERVED_ENTRIES = 25;

/** Slices are searched block by block: a split finer than 2^20 blocks per subnet is refused (slice-prefix). */
export const MAX_SPLIT_DEPTH = 20;

/** What a split is computed from: the declaration, parsed. */
export interface SplitInput {
  readonly subnet: Cidr;
  readonly infrastructure: readonly Cidr[];
  readonly reserved: readonly Interval[];
  readonly slots: number;
  /** Prefix length of a slice. */
  readonly slicePrefix: number;
  /** The mobile slice; undefined: the last slice-sized block of the subnet. */
  readonly mobile?: Cidr;
}

/** A computed split. */
export interface Split {
  readonly subnet: Cidr;
  readonly infrastructure: readonly Cidr[];
  readonly reserved: readonly Interval[];
  readonly mobile: Cidr;
  /** By slot. */
  readonly slices: readonly Cidr[];
}

/** The default slice prefix: room for the slots, the mobile slice and one block for the infrastructure. */
export function defaultSlicePrefix(subnet: Cidr, slots: number): number {
  let k = 0;
  while ((1 << k) < slots + 2) k++;
  return Math.min(subnet.prefix + k, bits(subnet.family));
}

/**
 * The split, or why it cannot be made: the first `slots` aligned blocks of the slice size, in address
 * order, that hold no infrastructure, reserved or mobile address. `found` counts the usable blocks.
 */
export function computeSplit(s: SplitInput): { split?: Split; found: number; blocks: number } {
  const depth = s.slicePrefix - s.subnet.prefix;
  const total = bits(s.subnet.family);
  const blocks = 2 ** depth;
  const mobile = s.mobile ?? cidrOf(s.subnet.family, s.subnet.end + 1n - (1n << BigInt(total - s.slicePrefix)), s.slicePrefix);
  const taken: Interval[] = [...s.infrastructure, ...s.reserved, mobile];
  const slices: Cidr[] = [];
  const size = 1n << BigInt(total - s.slicePrefix);
  let found = 0;
  for (let i = 0; i < blocks; i++) {
    const block = cidrOf(s.subnet.family, s.subnet.start + BigInt(i) * size, s.slicePrefix);
    if (taken.some((t) => overlaps(t, block))) continue;
    found++;
    if (slices.length < s.slots) slices.push(block);
  }
  if (slices.length < s.slots) return { found, blocks };
  return { split: { subnet: s.subnet, infrastructure: s.infrastructure, reserved: s.reserved, mobile, slices }, found, blocks };
}

/**
 * What one cluster must keep out of its dynamic allocation, as CIDRs: the whole subnet but its own slice
 * (less the fleet's reserved addresses inside it), never the infrastructure (the CRD forbids the overlap).
 * `slot` undefined: the cluster has no slice (everything but the infrastructure is reserved).
 */
export function reservedFor(split: Split, slot: number | undefined, withInfrastructure: boolean): Cidr[] {
  const own = slot === undefined ? [] : subtractIntervals([split.slices[slot]], split.reserved);
  const keepOut = subtractIntervals([split.subnet], [...own, ...(withInfrastructure ? split.infrastructure : [])]);
  return keepOut.flatMap(intervalToCidrs);
}

/** The split as the ledger writes it. */
export function formatSplit(s: Split): { subnet: string; infrastructure: string[]; reserved: string[]; mobile: string; slices: string[] } {
  return {
    subnet: formatCidr(s.subnet),
    infrastructure: s.infrastructure.map(formatCidr),
    reserved: s.reserved.flatMap(intervalToCidrs).map(formatCidr),
    mobile: formatCidr(s.mobile),
    slices: s.slices.map(formatCidr),
  };
}
