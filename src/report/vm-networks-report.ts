/**
 * The VM networks in `migration-mesh plan` (issue 40 item 7): per network its kind, reach and whether a
 * moved VM keeps its address; per subnet the split (infrastructure, mobile slice, slots); per cluster its
 * slot, its slice and how many reservedSubnets/excludeSubnets entries that costs (of the CRD's 25); the
 * mobile VMs with their addresses. Numbers and strings only; `renderVmNetworks` is the table form. Pure.
 */
import { FleetPlan } from '../addressing/fleet-plan';

export interface VmNetworkReportRow {
  readonly name: string;
  readonly topology: 'Layer2' | 'Localnet';
  readonly role: 'Primary' | 'Secondary';
  /** `none`, `vlan`, `evpn`. */
  readonly reach: string;
  /** `vlan 100`, `evpn VNI 5001 RT 65000:5001`, ``. */
  readonly reachDetail: string;
  readonly mtu: number;
  readonly namespaces: readonly string[];
  /** `pinned` (primary Layer2), `guest` (localnet ipam disabled), `no` (localnet OVN IPAM). */
  readonly keepsAddress: 'pinned' | 'guest' | 'no';
  readonly subnets: readonly {
    readonly subnet: string;
    readonly infrastructure: readonly string[];
    readonly reserved: readonly string[];
    readonly mobile: string;
    /** By slot: the CIDR and the cluster holding it (absent: a spare). */
    readonly slots: readonly { readonly slot: number; readonly cidr: string; readonly cluster?: string }[];
  }[];
  /** Every cluster holding a slot or serving the network, by slot. */
  readonly clusters: readonly {
    readonly cluster: string;
    readonly served: boolean;
    /** The cluster left the fleet; the ledger keeps its slot until its line is deleted. */
    readonly left: boolean;
    readonly slot?: number;
    readonly slice: readonly string[];
    /** reservedSubnets (Layer2) or excludeSubnets (localnet) entries on this cluster; the CRD allows 25. */
    readonly rangeEntries: number;
  }[];
  readonly spareSlots: number;
  /** How full each mobile slice is. */
  readonly mobileUse: readonly { readonly slice: string; readonly given: number; readonly capacity: string }[];
  readonly mobileVms: readonly { readonly vm: string; readonly addresses: readonly string[] }[];
}

/** The report rows of a plan's VM networks (empty without). */
export function vmNetworkReport(vm: FleetPlan['vmNetworks']): VmNetworkReportRow[] {
  if (!vm) return [];
  return vm.networks.map((n) => {
    const onCluster = (c: string) => vm.perCluster.get(c)?.networks.find((x) => x.name === n.name);
    const any = n.servedOn.map(onCluster).find((x) => !!x);
    const reach = any?.reach;
    const holder = new Map(Object.entries(n.slots).map(([c, s]) => [s, c]));
    const names = [...new Set([...Object.keys(n.slots), ...n.servedOn])]
      .sort((a, b) => (n.slots[a] ?? 1e9) - (n.slots[b] ?? 1e9) || (a < b ? -1 : 1));
    return {
      name: n.name, topology: n.topology, role: n.role, reach: n.reach,
      reachDetail: reach?.type === 'evpn' ? `VNI ${reach.vni}${reach.routeTarget ? ` RT ${reach.routeTarget}` : ''}` : any?.localnet?.vlan !== undefined ? `VLAN ${any.localnet.vlan}` : '',
      mtu: any?.mtu ?? 0, namespaces: any?.namespaces ?? [], keepsAddress: n.keepsAddress,
      subnets: n.splits.map((s) => ({
        subnet: s.subnet, infrastructure: s.infrastructure, reserved: s.reserved, mobile: s.mobile,
        slots: s.slices.map((cidr, slot) => ({ slot, cidr, ...(holder.has(slot) ? { cluster: holder.get(slot) } : {}) })),
      })),
      clusters: names.map((c) => {
        const cn = onCluster(c);
        const slot = n.slots[c];
        return {
          cluster: c, served: !!cn, left: !vm.perCluster.has(c), ...(slot !== undefined ? { slot } : {}),
          slice: slot !== undefined ? n.splits.map((s) => s.slices[slot]) : [],
          rangeEntries: cn ? cn.reservedSubnets.length + cn.excludeSubnets.length : 0,
        };
      }),
      spareSlots: n.spareSlots, mobileUse: n.mobileUse,
      mobileVms: n.mobileVms.map((v) => ({ vm: `${v.namespace}/${v.vm}`, addresses: v.addresses })),
    };
  });
}

const KEEPS: Record<VmNetworkReportRow['keepsAddress'], string> = {
  pinned: 'a moved VM keeps its address (pinned from the ledger or its IPAMClaim)',
  guest: 'the guest owns its address (ipam disabled)',
  no: 'a moved VM gets a new address (OVN IPAM per cluster)',
};

/** The VM networks as text, after the plan table (empty without VM networks). */
export function renderVmNetworks(rows: readonly VmNetworkReportRow[]): string {
  if (!rows.length) return '';
  const out: string[] = ['', 'VM networks (docs/vm-networks.md):'];
  for (const r of rows) {
    const reach = `reach ${r.reach}${r.reachDetail ? ` (${r.reachDetail})` : ''}`;
    out.push(`  ${r.name}: ${r.topology} ${r.role.toLowerCase()}, ${reach}, mtu ${r.mtu}, namespaces ${r.namespaces.join(', ')}; ${KEEPS[r.keepsAddress]}`);
    for (const s of r.subnets) {
      const infra = s.infrastructure.length ? `infrastructure ${s.infrastructure.join(', ')}, ` : '';
      const reserved = s.reserved.length ? `reserved ${s.reserved.join(', ')}, ` : '';
      out.push(`    ${s.subnet}: ${infra}${reserved}mobile ${s.mobile}, ${s.slots.length} slots of /${s.slots[0]?.cidr.split('/')[1] ?? '?'}`);
    }
    if (r.subnets.length) {
      const w = Math.max(7, ...r.clusters.map((c) => c.cluster.length));
      out.push(`    ${'CLUSTER'.padEnd(w)}  SLOT  SERVED  RANGES  SLICE (its dynamic range)`);
      for (const c of r.clusters) {
        out.push(`    ${c.cluster.padEnd(w)}  ${String(c.slot ?? '-').padStart(4)}  ${(c.served ? 'yes' : c.left ? 'left' : 'no').padEnd(6)}  ${String(c.rangeEntries).padStart(3)}/25  ${c.slice.join(', ') || '-'}`);
      }
      out.push(`    ${r.spareSlots} spare slot${r.spareSlots === 1 ? '' : 's'} for clusters not in the fleet yet`);
    }
    if (r.topology === 'Layer2') for (const m of r.mobileUse) out.push(`    mobile slice ${m.slice}: ${m.given} of ${m.capacity} addresses given`);
    for (const v of r.mobileVms) out.push(`    mobile VM ${v.vm}: ${v.addresses.join(', ')}`);
  }
  return `${out.join('\n')}\n`;
}
