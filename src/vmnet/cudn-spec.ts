/**
 * `spec.network` of a ClusterUserDefinedNetwork, rendered (the construct writes exactly this), and the ONE
 * declaration of which of its fields OVN-Kubernetes makes immutable and where the ledger records each
 * (issue 53 item 4, issue 50 item 4). The immutability check of plan.ts is derived from CUDN_FIELDS: a
 * change is judged on what the upstream object would become, field by field, not on our declaration.
 *
 * Upstream: the CEL rules `self == oldSelf` of the CUDN CRD, ovn-kubernetes at 8871cd9cec9c45d6da1baf9e3b06eb575f49039c
 * (2026-08-21), https://github.com/ovn-kubernetes/ovn-kubernetes/blob/8871cd9cec9c45d6da1baf9e3b06eb575f49039c/helm/ovn-kubernetes/crds/k8s.ovn.org_clusteruserdefinednetworks.yaml
 * ("Topology is immutable", "Transport is immutable", "Layer2 is immutable", "Localnet is immutable";
 * `spec.network.evpn` and `spec.namespaceSelector` carry no such rule). Pure, no cdk8s import.
 */
import type { ClusterVmNetwork } from './resolved';

/** EVPN transport of a primary Layer2 network (OVN-Kubernetes v1.3.0+, OpenShift 4.22+). */
export interface EvpnTransportOptions {
  /** Name of the cluster's `VTEP` object (`spec.network.evpn.vtep`). */
  readonly vtep: string;
  /** The MAC-VRF's VXLAN network identifier, 1-16777215, the same on every cluster. */
  readonly vni: number;
  /**
   * The MAC-VRF's route target (`<ASN>:<n>`, `<IPv4>:<n>` or `*:<n>`, at most 21 characters).
   *
   * @default - OVN-Kubernetes derives `<AS>:<VNI>` from the node's AS: give it explicitly when the clusters' AS differ
   */
  readonly routeTarget?: string;
}

/** The Layer2 block of a primary VM network: persistent IPs, explicit MTU, optional preconfigured addresses. */
export interface Layer2NetworkOptions {
  /** One CIDR per IP family (1 or 2), the same on every cluster. */
  readonly subnets: readonly string[];
  /** MTU, always written: the default (the cluster's MTU) differs between clusters. 576-65536, at least 1280 with IPv6. */
  readonly mtu: number;
  /**
   * Keep a VM's addresses across restarts and in-cluster live migration (`ipam.lifecycle: Persistent`, IPAMClaims).
   *
   * @default true
   */
  readonly persistentIps?: boolean;
  /**
   * `defaultGatewayIPs`: one per subnet family, inside `infrastructureSubnets` when those are set.
   *
   * @default - OVN-Kubernetes takes the first address of each subnet
   */
  readonly defaultGatewayIPs?: readonly string[];
  /**
   * `infrastructureSubnets` (1-4 masked CIDRs inside `subnets`), the same on every cluster.
   *
   * @default - none
   */
  readonly infrastructureSubnets?: readonly string[];
  /**
   * `reservedSubnets` (1-25 masked CIDRs inside `subnets`): what this cluster never hands out by itself (the
   * mobile slice and the other clusters' slices). An empty list writes none.
   *
   * @default - none
   */
  readonly reservedSubnets?: readonly string[];
  /**
   * Stretch the segment to the other clusters over OVN-Kubernetes' EVPN transport (`transport: EVPN`).
   *
   * @default - no transport: the segment stays inside the cluster (or is joined by the user's own fabric)
   */
  readonly evpn?: EvpnTransportOptions;
}

/** The Localnet block of a secondary VM network on a physical network (a VLAN on a node bridge). */
export interface LocalnetNetworkOptions {
  /** `physicalNetworkName`: the `localnet` key of the nodes' OVS bridge mapping (no `,` or `:`). */
  readonly physicalNetworkName: string;
  /** MTU, always written: the default (cluster MTU + 100) differs between clusters. 576-65536, at least 1280 with IPv6. */
  readonly mtu: number;
  /**
   * Access VLAN ID, 1-4094.
   *
   * @default - untagged
   */
  readonly vlan?: number;
  /**
   * One CIDR per IP family when OVN-Kubernetes assigns addresses (`ipam.lifecycle: Persistent`).
   *
   * @default - `ipam.mode: Disabled`: the guest (or the site's DHCP) owns its address, which then survives any move
   */
  readonly subnets?: readonly string[];
  /**
   * `excludeSubnets` (1-25 CIDRs inside `subnets`; upstream does not check that, OVN-Kubernetes fails at run time).
   * An empty list writes none.
   *
   * @default - none
   */
  readonly excludeSubnets?: readonly string[];
}

/** `spec.network.layer2` as rendered. */
export interface CudnLayer2 {
  role: 'Primary';
  subnets: string[];
  mtu: number;
  ipam?: { lifecycle: 'Persistent' };
  defaultGatewayIPs?: string[];
  infrastructureSubnets?: string[];
  reservedSubnets?: string[];
}

/** `spec.network.localnet` as rendered. */
export interface CudnLocalnet {
  role: 'Secondary';
  physicalNetworkName: string;
  mtu: number;
  vlan?: { mode: 'Access'; access: { id: number } };
  ipam: { lifecycle: 'Persistent' } | { mode: 'Disabled' };
  subnets?: string[];
  excludeSubnets?: string[];
}

/** `spec.network.evpn.macVRF` as rendered. */
export interface CudnMacVrf { vni: number; routeTarget?: string }

/** `spec.network.evpn` as rendered. */
export interface CudnEvpn { vtep: string; macVRF: CudnMacVrf }

/** `spec.network` as rendered. */
export interface CudnNetwork {
  topology: 'Layer2' | 'Localnet';
  layer2?: CudnLayer2;
  localnet?: CudnLocalnet;
  transport?: 'EVPN';
  evpn?: CudnEvpn;
}

const nonEmpty = <K extends string>(key: K, list: readonly string[] | undefined): Partial<Record<K, string[]>> =>
  (list?.length ? { [key]: [...list] } as Record<K, string[]> : {});

/** `spec.network` of a primary Layer2 network. */
export function layer2NetworkSpec(o: Layer2NetworkOptions): CudnNetwork {
  const layer2: CudnLayer2 = {
    role: 'Primary',
    subnets: [...o.subnets],
    mtu: o.mtu,
    ...(o.persistentIps === false ? {} : { ipam: { lifecycle: 'Persistent' as const } }),
    ...nonEmpty('defaultGatewayIPs', o.defaultGatewayIPs),
    ...nonEmpty('infrastructureSubnets', o.infrastructureSubnets),
    ...nonEmpty('reservedSubnets', o.reservedSubnets),
  };
  if (!o.evpn) return { topology: 'Layer2', layer2 };
  const macVRF = { vni: o.evpn.vni, ...(o.evpn.routeTarget ? { routeTarget: o.evpn.routeTarget } : {}) };
  return { topology: 'Layer2', layer2, transport: 'EVPN', evpn: { vtep: o.evpn.vtep, macVRF } };
}

/** `spec.network` of a secondary Localnet network. */
export function localnetNetworkSpec(o: LocalnetNetworkOptions): CudnNetwork {
  const ipam = o.subnets?.length
    ? { ipam: { lifecycle: 'Persistent' as const }, subnets: [...o.subnets], ...nonEmpty('excludeSubnets', o.excludeSubnets) }
    : { ipam: { mode: 'Disabled' as const } };
  return {
    topology: 'Localnet',
    localnet: {
      role: 'Secondary',
      physicalNetworkName: o.physicalNetworkName,
      mtu: o.mtu,
      ...(o.vlan !== undefined ? { vlan: { mode: 'Access' as const, access: { id: o.vlan } } } : {}),
      ...ipam,
    },
  };
}

/** The CUDN block of one resolved network (what the VmNetworks construct renders). */
export function layer2Of(n: ClusterVmNetwork): Layer2NetworkOptions {
  const evpn = n.reach.type === 'evpn' ? n.reach : undefined;
  return {
    subnets: n.subnets, mtu: n.mtu, persistentIps: n.ipam.lifecycle === 'Persistent',
    defaultGatewayIPs: n.defaultGatewayIPs, infrastructureSubnets: n.infrastructureSubnets, reservedSubnets: n.reservedSubnets,
    ...(evpn ? { evpn: { vtep: evpn.vtep, vni: evpn.vni, routeTarget: evpn.routeTarget } } : {}),
  };
}

export function localnetOf(n: ClusterVmNetwork): LocalnetNetworkOptions {
  const l = n.localnet!;
  return {
    physicalNetworkName: l.physicalNetworkName, mtu: n.mtu, vlan: l.vlan,
    ...(n.ipam.mode === 'Enabled' ? { subnets: n.subnets, excludeSubnets: n.excludeSubnets } : {}),
  };
}

/** `spec.network` of one resolved network on its cluster: byte for byte what the construct emits. */
export const cudnNetworkOf = (n: ClusterVmNetwork): CudnNetwork => (n.topology === 'Layer2' ? layer2NetworkSpec(layer2Of(n)) : localnetNetworkSpec(localnetOf(n)));

// ---- the declaration: which fields are immutable upstream, and where the ledger records each ----------------

/**
 * Where the ledger records a field, so that a later plan can tell a change:
 *  - `{token, rank, fleet}`: in the network's `created` line as `token=value` (rank orders the line; `fleet`
 *    is the fleet field a refusal names), written only when the field is rendered, so a field added later
 *    leaves every ledger of a fleet that does not set it byte for byte;
 *  - `per-cluster`: by the split and the cluster's slot (reservedSubnets, excludeSubnets) or the cluster's
 *    VLAN: the plan renders it from the old and the new ledger and compares;
 *  - `derived`: follows from a recorded field (the role from the topology);
 *  - `none`: mutable upstream and not recorded.
 */
export type LedgerRecord = { readonly token: string; readonly rank: number; readonly fleet: string } | 'per-cluster' | 'derived' | 'none';

/** One field: immutable upstream (a CEL `self == oldSelf` covers it) or not, and where the ledger records it. */
export interface FieldRule { readonly upstream: 'immutable' | 'mutable'; readonly ledger: LedgerRecord }

/** Every key of T needs its rule: a field added to the rendered type does not compile until it is given one. */
export type FieldTable<T> = { readonly [K in keyof T]-?: FieldRule };

const im = (ledger: LedgerRecord): FieldRule => ({ upstream: 'immutable', ledger });
const mu = (ledger: LedgerRecord): FieldRule => ({ upstream: 'mutable', ledger });
const tok = (token: string, rank: number, fleet: string = token): LedgerRecord => ({ token, rank, fleet });

/** `spec.network` itself: `topology` and `transport` carry their own rule; `layer2`/`localnet` are immutable whole. */
export const CUDN_NETWORK_FIELDS: FieldTable<Omit<CudnNetwork, 'layer2' | 'localnet' | 'evpn'>> = {
  topology: im(tok('topology', 0)),
  transport: im(tok('transport', 70, 'reach.type')),
};

/** `spec.network.layer2` ("Layer2 is immutable": every field, present or not). */
export const CUDN_LAYER2_FIELDS: FieldTable<CudnLayer2> = {
  role: im('derived'),
  mtu: im(tok('mtu', 10)),
  ipam: im(tok('ipam', 20)),
  subnets: im(tok('subnets', 30)),
  defaultGatewayIPs: im(tok('gateways', 40)),
  infrastructureSubnets: im(tok('infrastructure', 50)),
  reservedSubnets: im('per-cluster'),
};

/** `spec.network.localnet` ("Localnet is immutable"). */
export const CUDN_LOCALNET_FIELDS: FieldTable<CudnLocalnet> = {
  role: im('derived'),
  mtu: im(tok('mtu', 10)),
  ipam: im(tok('ipam', 20)),
  subnets: im(tok('subnets', 30)),
  physicalNetworkName: im(tok('physicalNetworkName', 60)),
  vlan: im('per-cluster'),
  excludeSubnets: im('per-cluster'),
};

/** `spec.network.evpn`: no CEL immutability upstream (the VNI and route target are recorded, a change is not refused). */
export const CUDN_EVPN_FIELDS: FieldTable<CudnEvpn> = { vtep: mu('none'), macVRF: mu('none') };
export const CUDN_MACVRF_FIELDS: FieldTable<CudnMacVrf> = { vni: mu(tok('vni', 80, 'reach.vni')), routeTarget: mu(tok('routeTarget', 90, 'reach.routeTarget')) };

/** A rendered value as the `created` line writes it. */
function tokenText(v: unknown): string {
  if (Array.isArray(v)) return v.join(',');
  if (v && typeof v === 'object') {
    const o = v as Record<string, unknown>;
    return String(o.mode === 'Disabled' ? 'Disabled' : o.lifecycle ?? JSON.stringify(o));
  }
  return String(v);
}

/** One recorded field of the `created` line. */
export interface CreatedToken { readonly token: string; readonly value: string; readonly upstream: 'immutable' | 'mutable'; readonly fleet: string; readonly rank: number }

function tokensOf<T extends object>(o: T | undefined, table: FieldTable<T>, out: CreatedToken[]): void {
  if (!o) return;
  for (const [k, rule] of Object.entries(table) as [keyof T & string, FieldRule][]) {
    const v = o[k];
    if (v === undefined || typeof rule.ledger === 'string') continue;
    out.push({ token: rule.ledger.token, value: tokenText(v), upstream: rule.upstream, fleet: rule.ledger.fleet, rank: rule.ledger.rank });
  }
}

/** The network-wide recorded fields of a rendered `spec.network`, in the line's order (the ledger's `created`). */
export function createdTokens(n: CudnNetwork): CreatedToken[] {
  const out: CreatedToken[] = [];
  tokensOf(n, CUDN_NETWORK_FIELDS, out);
  tokensOf(n.layer2, CUDN_LAYER2_FIELDS, out);
  tokensOf(n.localnet, CUDN_LOCALNET_FIELDS, out);
  tokensOf(n.evpn?.macVRF, CUDN_MACVRF_FIELDS, out);
  return out.sort((a, b) => a.rank - b.rank);
}

export const createdLineOf = (n: CudnNetwork): string => createdTokens(n).map((t) => `${t.token}=${t.value}`).join(' ');

function immutablePart<T extends object>(o: T | undefined, table: FieldTable<T>): Record<string, unknown> | undefined {
  if (!o) return undefined;
  return Object.fromEntries((Object.keys(table) as (keyof T & string)[]).filter((k) => table[k].upstream === 'immutable' && o[k] !== undefined).map((k) => [k, o[k]]));
}

/** What OVN-K refuses to change of a rendered `spec.network`, as one comparable text (the mutable fields left out). */
export function immutableFingerprint(n: CudnNetwork): string {
  return JSON.stringify({
    ...immutablePart(n, CUDN_NETWORK_FIELDS),
    layer2: immutablePart(n.layer2, CUDN_LAYER2_FIELDS),
    localnet: immutablePart(n.localnet, CUDN_LOCALNET_FIELDS),
  });
}
