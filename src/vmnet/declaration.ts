/**
 * One `spec.vmNetworks[i]` read and checked on its own (issue 40 items 1 and 5): the fields its topology
 * allows and needs, its addresses parsed (one subnet per family; gateways, infrastructure, reserved and
 * mobile inside them), the CEL rules of the ClusterUserDefinedNetwork CRD the API server would refuse, and
 * the names the derived objects take. Every problem has a code, the field path and the fix. Pure.
 */
import { ProblemCollector } from '../base/errors';
import { Addr, Cidr, Family, Interval, bits, containsAddr, contains, formatCidr, overlaps, parseAddr, parseCidr, parsePoolItem } from '../base/ip';
import { VmNetworkSpec } from './schema';
import { MAX_SPLIT_DEPTH, defaultSlicePrefix } from './split';

/** A network's declaration, parsed. Families sorted IPv4 first. */
export interface ParsedNetwork {
  readonly spec: VmNetworkSpec;
  readonly index: number;
  readonly path: string;
  readonly topology: 'Layer2' | 'Localnet';
  readonly ipamEnabled: boolean;
  readonly subnets: readonly Cidr[];
  readonly gateways: readonly Addr[];
  readonly infrastructure: readonly Cidr[];
  readonly reserved: readonly Interval[];
  readonly mobile: ReadonlyMap<Family, Cidr>;
  readonly slicePrefix: ReadonlyMap<Family, number>;
  readonly slots: number;
}

const DEFAULT_SLOTS = 8;
/** Linux VRF names OVN-K derives from an EVPN CUDN name must stay under IFNAMSIZ (https://github.com/ovn-kubernetes/ovn-kubernetes/blob/8871cd9cec9c45d6da1baf9e3b06eb575f49039c/docs/features/bgp-integration/evpn.md#L894). */
const MAX_EVPN_NAME = 15;
/** Cross-cluster live migration fails for longer VM names (CNV-61066, OpenShift Virtualization 4.22 release notes). */
export const MAX_MOVABLE_VM_NAME = 47;

const byFamily = <T extends { family: Family }>(list: T[]): T[] => [...list].sort((a, b) => a.family - b.family);

function cidrs(p: ProblemCollector, texts: readonly string[] | undefined, path: string): Cidr[] {
  const out: Cidr[] = [];
  (texts ?? []).forEach((t, i) => {
    const r = parseCidr(t);
    if (r.ok) { out.push(r.cidr); return; }
    if (r.reason === 'unmasked') p.add('cidr-host-bits', `${path}[${i}]`, `'${t}' has host bits set (the CRD requires masked CIDRs)`, `write ${r.suggestion}`);
    else p.add('cidr-syntax', `${path}[${i}]`, `'${t}' is not a CIDR`, 'write an IPv4 or IPv6 CIDR such as 10.50.0.0/16 or fd50::/64');
  });
  return out;
}

/** Fields a topology does not have, and fields it needs. */
function topologyFields(p: ProblemCollector, s: VmNetworkSpec, path: string): void {
  const l2 = s.topology === 'layer2';
  const wrong: [keyof VmNetworkSpec, string][] = l2
    ? [['physicalNetworkName', 'localnet'], ['vlan', 'localnet'], ['bridge', 'localnet'], ['ipam', 'localnet'], ['nodeSelector', 'localnet']]
    : [['gateways', 'layer2'], ['infrastructure', 'layer2'], ['mobileVms', 'layer2'], ['primaryInterface', 'layer2'], ['pinAddressesBy', 'layer2']];
  for (const [k, only] of wrong) {
    if (s[k] !== undefined) {
      p.add('vmnet-topology-field', `${path}.${k}`, `${k} is a ${only} field; network ${s.name} is ${s.topology}`, `remove ${k}, or set topology: ${only}`);
    }
  }
  const need: [keyof VmNetworkSpec, string][] = l2
    ? [['subnets', 'a primary Layer2 network allocates addresses (one subnet per family)'], ['infrastructure', 'the gateway and management addresses must be the same on every cluster (and outside every cluster slice)']]
    : [['physicalNetworkName', 'it names the bridge mapping'], ['bridge', 'the NodeNetworkConfigurationPolicy maps the physical network to it']];
  for (const [k, why] of need) {
    if (s[k] === undefined) p.add('vmnet-topology-field', `${path}.${k}`, `network ${s.name} (${s.topology}) needs ${k}: ${why}`, `add ${k}`);
  }
  const reach = s.reach?.type ?? 'none';
  if ((l2 && reach === 'vlan') || (!l2 && reach === 'evpn')) {
    p.add('vmnet-topology-field', `${path}.reach.type`, `reach ${reach} is not for ${s.topology} networks (${l2 ? 'a Layer2 overlay has no VLAN' : 'OVN-K EVPN carries primary Layer2/Layer3 networks only'})`,
      l2 ? 'use reach: {type: evpn, ...} or {type: none}' : 'use reach: {type: vlan} (the VLAN is shared between the sites) or {type: none}');
  }
  if (!l2 && s.ipam === 'disabled' && s.subnets !== undefined) {
    p.add('vmnet-topology-field', `${path}.subnets`, `network ${s.name} has ipam: disabled; the CRD forbids subnets then (the guest owns its address)`, 'remove subnets, or set ipam: persistent');
  }
  if (!l2 && s.ipam !== 'disabled' && s.subnets === undefined) {
    p.add('vmnet-topology-field', `${path}.subnets`, `network ${s.name} has ipam: persistent (the default) and no subnets`, 'add subnets, or set ipam: disabled (the guest owns its address; recommended for VMs that move)');
  }
}

/** Each address list inside the subnets; gateways in the infrastructure; infrastructure clear of mobile and reserved. */
interface Addresses { gateways: Addr[]; infra: Cidr[]; reserved: Interval[]; mobile: Cidr[] }

function containment(p: ProblemCollector, path: string, subnets: readonly Cidr[], x: Addresses, s: VmNetworkSpec): void {
  const inSubnet = (iv: Interval) => subnets.some((sn) => contains(sn, iv));
  const outside = (what: string, field: string, list: readonly (Interval | Addr)[], texts: readonly string[] | undefined) => {
    list.forEach((v, i) => {
      const iv = 'value' in v ? { family: v.family, start: v.value, end: v.value } : v;
      if (!inSubnet(iv)) {
        p.add('vmnet-outside-subnet', `${path}.${field}[${i}]`, `${what} ${texts?.[i] ?? '?'} is outside the network's subnets (${subnets.map(formatCidr).join(', ')})`,
          `give a ${what} inside ${subnets.map(formatCidr).join(' or ')}, or add the subnet of its family`);
      }
    });
  };
  outside('gateway', 'gateways', x.gateways, s.gateways);
  outside('infrastructure CIDR', 'infrastructure', x.infra, s.infrastructure);
  outside('reserved range', 'reserved', x.reserved, s.reserved);
  outside('mobile slice', 'allocation.mobile', x.mobile, s.allocation?.mobile);
  if (x.infra.length) {
    x.gateways.forEach((g, i) => {
      if (!x.infra.some((c) => containsAddr(c, g))) {
        p.add('vmnet-gateway-infra', `${path}.gateways[${i}]`, `gateway ${s.gateways?.[i]} is not inside the infrastructure (${s.infrastructure?.join(', ')}); the CRD requires it (CEL on defaultGatewayIPs)`,
          'put the gateway inside an infrastructure CIDR, or widen the infrastructure to hold it');
      }
    });
  }
  const fam = new Set(subnets.map((c) => c.family));
  const oneEach = x.gateways.length === subnets.length && x.gateways.every((g) => fam.has(g.family))
    && new Set(x.gateways.map((g) => g.family)).size === x.gateways.length;
  if (x.gateways.length && !oneEach) {
    p.add('vmnet-gateway-count', `${path}.gateways`, `gateways ${s.gateways?.join(', ')} must be one per subnet family (${subnets.map(formatCidr).join(', ')}); the CRD refuses another count`,
      'list exactly one gateway per subnet, of its family');
  }
  for (const c of x.infra) {
    for (const [what, list] of [['mobile slice', x.mobile], ['reserved range', x.reserved]] as const) {
      const hit = list.find((m) => overlaps(m, c));
      if (hit) {
        p.add('vmnet-infra-overlap', `${path}.infrastructure`, `infrastructure ${formatCidr(c)} overlaps the ${what}; the CRD forbids infrastructureSubnets that overlap reservedSubnets, which hold both`,
          `move the ${what} or the infrastructure apart`);
      }
    }
  }
}

/** The network's names as the derived objects take them. */
/** `mm-<name>-bridge-mapping` is the NNCP's name, which kubernetes-nmstate copies into a label value (`nmstate.io/policy`): 63 characters. */
const MAX_LOCALNET_NAME = 63 - 'mm--bridge-mapping'.length;

function names(p: ProblemCollector, s: VmNetworkSpec, path: string): void {
  if (s.topology === 'localnet' && s.name.length > MAX_LOCALNET_NAME) {
    p.add('vmnet-name-too-long', `${path}.name`, `'${s.name}' has ${s.name.length} characters; its NodeNetworkConfigurationPolicy mm-${s.name}-bridge-mapping would have ${s.name.length + 18}, and kubernetes-nmstate puts the policy name into the nmstate.io/policy label of every enactment (at most 63): the bridge mapping would never be enacted`,
      `rename the network to at most ${MAX_LOCALNET_NAME} characters (before it is created: the name is immutable)`);
  }
  if (s.reach?.type === 'evpn' && s.name.length > MAX_EVPN_NAME) {
    p.add('vmnet-name-too-long', `${path}.name`, `'${s.name}' has ${s.name.length} characters; OVN-K names the EVPN network's Linux VRF after it, which needs fewer than 16 (Linux IFNAMSIZ)`,
      `rename the network to at most ${MAX_EVPN_NAME} characters (before it is created: the name is immutable)`);
  }
  (s.mobileVms ?? []).forEach((ref, i) => {
    // a value the schema refused (no namespace) is not read again here: the schema's problem says it
    if (typeof ref !== 'string' || !/^[^/]+\/[^/]+$/.test(ref)) return;
    const [ns, vm] = ref.split('/');
    if (!s.namespaces.includes(ns)) {
      p.add('vmnet-mobile-namespace', `${path}.mobileVms[${i}]`, `${ref} is in namespace ${ns}, which network ${s.name} does not serve (${s.namespaces.join(', ')}): its address would be pinned on a network it is not on`,
        `add ${ns} to namespaces, or remove ${ref} from mobileVms`);
    }
    // a mobile VM is there to move: cross-cluster live migration fails for names over 47 (CNV-61066)
    if (vm.length > MAX_MOVABLE_VM_NAME) {
      p.add('vmnet-name-too-long', `${path}.mobileVms[${i}]`,
        `VM name '${vm}' has ${vm.length} characters; cross-cluster live migration fails for names over ${MAX_MOVABLE_VM_NAME} (CNV-61066, OpenShift Virtualization 4.22)`,
        `rename the VM to at most ${MAX_MOVABLE_VM_NAME} characters`);
    }
  });
  if (s.reach?.type === 'evpn' && s.reach.routeTarget !== undefined && !routeTargetOk(s.reach.routeTarget)) {
    p.add('vmnet-route-target', `${path}.reach.routeTarget`, `'${s.reach.routeTarget}' is not a route target the CRD accepts: <2-byte AS>:<4-byte n>, <4-byte AS>:<2-byte n> or <IPv4>:<2-byte n>`,
      'write e.g. 65000:5001, 4200000000:100 or 192.0.2.1:100');
  }
}

/** The CRD's route-target rules (cudn evpn CEL): two parts, a numeric or IPv4 global part, a local part in range. */
export function routeTargetOk(rt: string): boolean {
  const parts = rt.split(':');
  if (parts.length !== 2 || !/^\d+$/.test(parts[1])) return false;
  const local = Number(parts[1]);
  if (/^\d+$/.test(parts[0])) {
    const as = Number(parts[0]);
    if (as <= 65535) return local <= 4294967295;
    return as <= 4294967295 && local <= 65535;
  }
  const a = parseAddr(parts[0]);
  return !!a && a.family === 4 && local <= 65535;
}

/** Read one network: every problem of its own fields, and the parsed value when its addresses parse. */
export function parseNetwork(p: ProblemCollector, s: VmNetworkSpec, index: number): ParsedNetwork | undefined {
  const path = `spec.vmNetworks[${index}]`;
  const before = p.problems.length;
  topologyFields(p, s, path);
  names(p, s, path);
  const subnets = byFamily(cidrs(p, s.subnets, `${path}.subnets`));
  if (subnets.length === 2 && subnets[0].family === subnets[1].family) {
    p.add('family-mismatch', `${path}.subnets`, `both subnets are IPv${subnets[0].family}; the CRD takes one subnet per family`, 'give one IPv4 and one IPv6 subnet, or one subnet');
  }
  if (subnets.some((c) => c.family === 6) && s.mtu < 1280) {
    p.add('mtu-too-small', `${path}.mtu`, `mtu ${s.mtu} with an IPv6 subnet; IPv6 needs at least 1280 (the CRD refuses less)`, 'set mtu to 1280 or more');
  }
  const gateways: Addr[] = [];
  (s.gateways ?? []).forEach((t, i) => {
    const a = parseAddr(t);
    if (a) gateways.push(a);
    else p.add('address-syntax', `${path}.gateways[${i}]`, `'${t}' is not an IP address`, 'write one address per family, e.g. 10.50.0.1');
  });
  const infra = cidrs(p, s.infrastructure, `${path}.infrastructure`);
  const reserved: Interval[] = [];
  (s.reserved ?? []).forEach((t, i) => {
    const r = parsePoolItem(t);
    if (r.ok) reserved.push(r.interval);
    else p.add('address-syntax', `${path}.reserved[${i}]`, `'${t}' ${r.reason}`, r.suggestion ? `write ${r.suggestion}` : 'write an address, an a-b range or a CIDR');
  });
  const mobile = cidrs(p, s.allocation?.mobile, `${path}.allocation.mobile`);
  // against subnets that all parsed (a subnet with a typo would make everything look outside)
  if (subnets.length === (s.subnets ?? []).length) containment(p, path, subnets, { gateways: byFamily(gateways), infra, reserved, mobile }, s);
  const slots = s.allocation?.slots ?? DEFAULT_SLOTS;
  const slicePrefix = new Map<Family, number>();
  for (const sn of subnets) {
    const given = sn.family === 4 ? s.allocation?.slicePrefix?.ipv4 : s.allocation?.slicePrefix?.ipv6;
    const q = given ?? defaultSlicePrefix(sn, slots);
    const key = sn.family === 4 ? 'ipv4' : 'ipv6';
    if (q <= sn.prefix || q > bits(sn.family) || q - sn.prefix > MAX_SPLIT_DEPTH || 2 ** (q - sn.prefix) < slots + 1) {
      p.add('vmnet-slice-prefix', `${path}.allocation.slicePrefix${given !== undefined ? `.${key}` : ''}`,
        `slices of /${q} cannot split ${formatCidr(sn)} into ${slots} cluster slices and a mobile slice (${2 ** Math.max(0, q - sn.prefix)} blocks; at most ${MAX_SPLIT_DEPTH} bits deeper than the subnet)`,
        `choose a slice prefix between /${defaultSlicePrefix(sn, slots)} and /${Math.min(bits(sn.family), sn.prefix + MAX_SPLIT_DEPTH)}, or fewer slots, or a larger subnet`);
    }
    slicePrefix.set(sn.family, q);
  }
  const mobileBy = new Map<Family, Cidr>();
  for (const m of mobile) {
    if (mobileBy.has(m.family)) p.add('family-mismatch', `${path}.allocation.mobile`, `two mobile slices of IPv${m.family}`, 'give one mobile CIDR per subnet family');
    mobileBy.set(m.family, m);
  }
  if (p.problems.length > before) return undefined;
  return {
    spec: s, index, path, topology: s.topology === 'layer2' ? 'Layer2' : 'Localnet',
    ipamEnabled: s.topology === 'layer2' || s.ipam !== 'disabled',
    subnets, gateways: byFamily(gateways), infrastructure: infra, reserved, mobile: mobileBy, slicePrefix, slots,
  };
}
