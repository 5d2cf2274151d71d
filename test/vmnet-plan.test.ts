/**
 * The VM networks' address plan (issue 40 item 3): each subnet split into infrastructure, a mobile slice
 * and per-cluster slices; each cluster's reservedSubnets/excludeSubnets leave it exactly its slice; the
 * ledger keeps every slot and mobile address when clusters and VMs come and go; immutable changes and
 * broken ledgers are refused. Addresses are checked by meaning (what each cluster can hand out), not by
 * re-running the planner's arithmetic.
 */
import * as fs from 'fs';
import * as path from 'path';
import { resolveVmNetworks } from '../src/vmnet/plan';
import { Ledger, emptyLedger, parseLedger, serializeLedger } from '../src/addressing/ledger';
import { planFleetDocument } from '../src/addressing/planner';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { FleetValidationError } from '../src/base/errors';
import { Interval, parseAddr, parseCidr, subtractIntervals, overlaps, countIntervals } from '../src/base/ip';
import { ClusterVmNetwork } from '../src/vmnet/resolved';
import { OVN, RawFleet, vmFleet } from './support/vmnet-fleet';

const cidr = (t: string): Interval => { const r = parseCidr(t); if (!r.ok) throw new Error(t); return r.cidr; };
const codes = (ps: readonly { code: string }[]): string[] => ps.map((p) => p.code);

/** What a cluster can hand out dynamically: its subnets minus reserved/excluded minus infrastructure. */
function dynamic(n: ClusterVmNetwork): Interval[] {
  return subtractIntervals(n.subnets.map(cidr), [...n.reservedSubnets, ...n.excludeSubnets, ...n.infrastructureSubnets].map(cidr));
}

function net(r: ReturnType<typeof resolveVmNetworks>, cluster: string, name: string): ClusterVmNetwork {
  const n = r.perCluster.get(cluster)?.networks.find((x) => x.name === name);
  if (!n) throw new Error(`${cluster}/${name} missing: ${JSON.stringify(r.problems)}`);
  return n;
}

/** Plan, then plan again against the ledger `ledger` would have after serialization (the committed file). */
function replan(patch: (f: RawFleet) => void, ledger: Ledger): ReturnType<typeof resolveVmNetworks> {
  return resolveVmNetworks(vmFleet(patch), parseLedger(serializeLedger(ledger)));
}

/** A fresh ledger holding `r`'s VM networks (a deep copy: tests edit it). */
const ledgerOf = (r: ReturnType<typeof resolveVmNetworks>): Ledger => ({ ...emptyLedger('vmn'), vmNetworks: JSON.parse(JSON.stringify(r.ledger)) });

const addCluster = (name: string) => (f: RawFleet) => { f.spec.clusters.push({ name, nodes: 3, ovnKubernetes: { ...OVN } }); };

describe('the split', () => {
  const r = resolveVmNetworks(vmFleet());

  test('the example plans without problems; EVPN across clusters is warned about', () => {
    expect(r.problems).toEqual([]);
    expect(codes(r.warnings)).toEqual(['vmnet-evpn-cclm-ingress']);
  });

  test('each cluster hands out exactly its own slice, the same size everywhere, disjoint from every other and from the mobile slice', () => {
    const plan = r.networks.find((n) => n.name === 'blue')!;
    const fra = net(r, 'fra-1', 'blue');
    const ams = net(r, 'ams-1', 'blue');
    expect(fra.slice).toEqual({ slot: 0, cidrs: ['10.50.16.0/20', 'fd50::1000:0:0:0/68'] });
    expect(ams.slice).toEqual({ slot: 1, cidrs: ['10.50.32.0/20', 'fd50::2000:0:0:0/68'] });
    expect(dynamic(fra)).toEqual(fra.slice!.cidrs.map(cidr).map(({ family, start, end }) => ({ family, start, end })));
    expect(dynamic(ams)).toEqual(ams.slice!.cidrs.map(cidr).map(({ family, start, end }) => ({ family, start, end })));
    const mobile = plan.splits.map((s) => cidr(s.mobile));
    for (const a of dynamic(fra)) {
      for (const b of [...dynamic(ams), ...mobile]) expect(overlaps(a, b)).toBe(false);
    }
    expect(countIntervals(dynamic(fra).filter((i) => i.family === 4))).toBe(4096n);
  });

  test('everything that is the same everywhere is the same on every cluster; only reservedSubnets and the slice differ', () => {
    const strip = (n: ClusterVmNetwork) => ({ ...n, reservedSubnets: undefined, slice: undefined, reach: n.reach.type });
    expect(strip(net(r, 'fra-1', 'blue'))).toEqual(strip(net(r, 'ams-1', 'blue')));
    expect(net(r, 'fra-1', 'blue').reservedSubnets).not.toEqual(net(r, 'ams-1', 'blue').reservedSubnets);
    expect(net(r, 'fra-1', 'blue').mtu).toBe(1400);
    expect(net(r, 'fra-1', 'blue').infrastructureSubnets).toEqual(['10.50.0.0/29', 'fd50::/68']);
  });

  test('reservedSubnets never overlap the infrastructure (CEL) and stay within 25 entries', () => {
    for (const c of ['fra-1', 'ams-1']) {
      const n = net(r, c, 'blue');
      expect(n.reservedSubnets.length).toBeLessThanOrEqual(25);
      for (const x of n.reservedSubnets) for (const i of n.infrastructureSubnets) expect(overlaps(cidr(x), cidr(i))).toBe(false);
    }
  });

  test('localnet: excludeSubnets leave the cluster its slice minus the fleet-wide reserved address', () => {
    const n = net(r, 'fra-1', 'vlan100');
    expect(n.reservedSubnets).toEqual([]);
    expect(dynamic(n)).toEqual([cidr('192.168.100.32/27')].map(({ family, start, end }) => ({ family, start, end })));
    expect(n.localnet).toEqual({ physicalNetworkName: 'physnet-vms', vlan: 100, bridge: { kind: 'create', name: 'br-vms', port: 'bond1' }, policyName: 'mm-vlan100-bridge-mapping', nodeSelector: {} });
    expect(n.networkMap).toEqual([
      { source: { name: 'vlan100', namespace: 'tenant-blue' }, destination: { type: 'multus', name: 'vlan100', namespace: 'tenant-blue' } },
      { source: { name: 'vlan100', namespace: 'tenant-red' }, destination: { type: 'multus', name: 'vlan100', namespace: 'tenant-red' } },
    ]);
  });

  test('mobile VMs get addresses of the mobile slice, one per family, with the annotation KubeVirt reads', () => {
    const vms = net(r, 'ams-1', 'blue').mobileVms;
    expect(vms.map((v) => [v.namespace, v.vm, v.addresses])).toEqual([
      ['tenant-blue', 'web-1', ['10.50.240.0', 'fd50::f000:0:0:0']],
      ['tenant-blue', 'db-1', ['10.50.240.1', 'fd50::f000:0:0:1']],
    ]);
    expect(JSON.parse(vms[0].annotation)).toEqual({ default: ['10.50.240.0', 'fd50::f000:0:0:0'] });
    const mobile = r.networks[0].splits.map((s) => cidr(s.mobile));
    const at = (t: string): Interval => { const a = parseAddr(t)!; return { family: a.family, start: a.value, end: a.value }; };
    for (const v of vms) for (const a of v.addresses) expect(mobile.some((m) => overlaps(m, at(a)))).toBe(true);
  });

  test('a cluster that does not serve a network keeps its slot but gets no network', () => {
    const s = resolveVmNetworks(vmFleet((f) => { f.spec.vmNetworks[1].clusters = { 'ams-1': { served: false } }; }));
    expect(s.problems).toEqual([]);
    expect(s.perCluster.get('ams-1')!.networks.map((n) => n.name)).toEqual(['blue']);
    expect(s.networks[1].slots).toEqual({ 'fra-1': 0, 'ams-1': 1 });
    expect(s.networks[1].servedOn).toEqual(['fra-1']);
  });
});

describe('the ledger keeps what it assigned', () => {
  const first = resolveVmNetworks(vmFleet());

  test('planning against its own ledger changes nothing (idempotent, churn-free)', () => {
    const again = replan(() => undefined, ledgerOf(first));
    expect(again.changes).toEqual([]);
    expect([...again.perCluster.entries()]).toEqual([...first.perCluster.entries()]);
  });

  test('adding a cluster moves nothing already assigned: every existing reservedSubnets, slot and mobile address stays', () => {
    const grown = replan(addCluster('par-1'), ledgerOf(first));
    expect(grown.problems).toEqual([]);
    for (const c of ['fra-1', 'ams-1']) {
      for (const n of ['blue', 'vlan100']) expect(net(grown, c, n)).toEqual(net(first, c, n));
    }
    expect(net(grown, 'par-1', 'blue').slice!.slot).toBe(2);
    expect(grown.changes.map((c) => c.field)).toEqual(['clusters.par-1', 'clusters.par-1']);
    const par = dynamic(net(grown, 'par-1', 'blue'));
    for (const c of ['fra-1', 'ams-1']) for (const a of dynamic(net(grown, c, 'blue'))) for (const b of par) expect(overlaps(a, b)).toBe(false);
  });

  test('adding a VM moves no other VM; the new VM takes the lowest free mobile address', () => {
    const more = replan((f) => { f.spec.vmNetworks[0].mobileVms = ['tenant-blue/app-0', 'tenant-blue/web-1', 'tenant-blue/db-1']; }, ledgerOf(first));
    const vms = Object.fromEntries(net(more, 'fra-1', 'blue').mobileVms.map((v) => [v.vm, v.addresses]));
    expect(vms).toEqual({ 'web-1': ['10.50.240.0', 'fd50::f000:0:0:0'], 'db-1': ['10.50.240.1', 'fd50::f000:0:0:1'], 'app-0': ['10.50.240.2', 'fd50::f000:0:0:2'] });
  });

  test('a VM that leaves the list keeps its address in the ledger: no later VM gets it', () => {
    const gone = replan((f) => { f.spec.vmNetworks[0].mobileVms = ['tenant-blue/db-1']; }, ledgerOf(first));
    expect(gone.ledger!.blue.vms!['tenant-blue/web-1']).toEqual(['10.50.240.0', 'fd50::f000:0:0:0']);
    const next = replan((f) => { f.spec.vmNetworks[0].mobileVms = ['tenant-blue/db-1', 'tenant-blue/new-1']; }, ledgerOf(gone));
    expect(net(next, 'fra-1', 'blue').mobileVms.find((v) => v.vm === 'new-1')!.addresses).toEqual(['10.50.240.2', 'fd50::f000:0:0:2']);
  });

  test('a cluster that leaves keeps its slot: a cluster added in the same change does not get it, and the cluster gets it back when it returns', () => {
    const swapped = replan((f) => { f.spec.clusters = [f.spec.clusters[0], { name: 'par-1', nodes: 3, ovnKubernetes: { ...OVN } }]; }, ledgerOf(first));
    expect(swapped.problems).toEqual([]);
    expect(net(swapped, 'par-1', 'blue').slice!.slot).toBe(2);
    const back = replan(addCluster('ams-1'), ledgerOf(swapped));
    expect(net(back, 'ams-1', 'blue').slice!.slot).toBe(1);
  });

  test('a pinned slot is honoured for a new cluster and refused when taken', () => {
    const pinned = resolveVmNetworks(vmFleet((f) => { f.spec.vmNetworks[0].clusters = { 'ams-1': { slot: 5 } }; }));
    expect(pinned.networks[0].slots).toEqual({ 'fra-1': 0, 'ams-1': 5 });
    const taken = resolveVmNetworks(vmFleet((f) => { f.spec.vmNetworks[0].clusters = { 'ams-1': { slot: 0 } }; }));
    expect(codes(taken.problems)).toEqual(['vmnet-slice-exhausted']);
    expect(taken.problems[0].message).toContain("cluster fra-1's");
  });

  test('more clusters than slots is refused, with the way out', () => {
    const r = resolveVmNetworks(vmFleet((f) => { f.spec.vmNetworks[1].allocation = { slots: 2 }; addCluster('par-1')(f); }));
    expect(codes(r.problems)).toEqual(['vmnet-slice-exhausted']);
    expect(r.problems[0].path).toBe('spec.vmNetworks[1].allocation.slots');
    expect(r.problems[0].fix).toMatch(/reclaim FLEET --vm-network vlan100 --cluster NAME/);
    expect(r.perCluster.size).toBe(0);
  });
});

describe('immutable upstream: refused, never emitted', () => {
  const first = resolveVmNetworks(vmFleet());
  const refused = (patch: (f: RawFleet) => void): { code: string; path: string; fix?: string }[] =>
    replan(patch, ledgerOf(first)).problems.map((p) => ({ code: p.code, path: p.path, fix: p.fix }));

  test.each([
    ['mtu', (f: RawFleet) => { f.spec.vmNetworks[0].mtu = 1300; }, 'spec.vmNetworks[0].mtu'],
    ['a subnet', (f: RawFleet) => { f.spec.vmNetworks[1].subnets = ['192.168.101.0/24']; f.spec.vmNetworks[1].reserved = ['192.168.101.1']; }, 'spec.vmNetworks[1].subnets'],
    ['the gateway', (f: RawFleet) => { f.spec.vmNetworks[0].gateways = ['10.50.0.2', 'fd50::1']; }, 'spec.vmNetworks[0].gateways'],
    ['the split (slots)', (f: RawFleet) => { f.spec.vmNetworks[0].allocation = { slots: 16 }; }, 'spec.vmNetworks[0].allocation'],
    ['a cluster\'s VLAN', (f: RawFleet) => { f.spec.vmNetworks[1].clusters = { 'ams-1': { vlan: 200 } }; }, 'spec.vmNetworks[1].clusters.ams-1.vlan'],
    ['a cluster\'s slot', (f: RawFleet) => { f.spec.vmNetworks[0].clusters = { 'ams-1': { slot: 3 } }; }, 'spec.vmNetworks[0].clusters.ams-1.slot'],
  ])('changing %s is vmnet-immutable-change with the recreate way out', (_what, patch, at) => {
    const ps = refused(patch);
    expect(ps.map((p) => [p.code, p.path])).toEqual([['vmnet-immutable-change', at]]);
    expect(ps[0].fix).toMatch(/move or stop every VM on (blue|vlan100)/);
  });

  test('a guest-owned localnet network (ipam disabled) has no slots, yet its VLAN per cluster is kept and guarded', () => {
    const guest = (f: RawFleet) => { const v = f.spec.vmNetworks[1]; v.ipam = 'disabled'; delete v.subnets; delete v.reserved; delete v.allocation; };
    const g = resolveVmNetworks(vmFleet(guest));
    expect(g.ledger!.vlan100).toEqual({ created: 'topology=Localnet mtu=1500 ipam=Disabled physicalNetworkName=physnet-vms', clusters: { 'fra-1': { vlan: 100 }, 'ams-1': { vlan: 100 } } });
    expect(net(g, 'fra-1', 'vlan100')).toMatchObject({ subnets: [], excludeSubnets: [], ipam: { mode: 'Disabled' } });
    expect(net(g, 'fra-1', 'vlan100').slice).toBeUndefined();
    const moved = replan((f) => { guest(f); f.spec.vmNetworks[1].clusters = { 'ams-1': { vlan: 300 } }; }, ledgerOf(g));
    expect(moved.problems.map((p) => [p.code, p.path])).toEqual([['vmnet-immutable-change', 'spec.vmNetworks[1].clusters.ams-1.vlan']]);
  });

  test('mobile VMs and served flags are not part of the immutable block', () => {
    expect(refused((f) => { f.spec.vmNetworks[0].mobileVms = []; })).toEqual([]);
  });
});

describe('ledger merges and hand edits are refused, never repaired', () => {
  const first = resolveVmNetworks(vmFleet());

  test('two clusters on one slot (two branches that each added a cluster)', () => {
    const l = ledgerOf(first);
    l.vmNetworks!.blue.clusters!['ams-1'] = { slot: 0 };
    const r = resolveVmNetworks(vmFleet(), l);
    expect(codes(r.problems)).toEqual(['vmnet-ledger-conflict']);
    expect(r.problems[0].message).toMatch(/clusters fra-1 and ams-1 both hold slot 0/);
  });

  test('a conflict in a network that leaves the fleet does not block the plan: the network is kept as the ledger had it', () => {
    const l = ledgerOf(first);
    l.vmNetworks!.vlan100.clusters!['ams-1'] = { slot: 0, vlan: 100 };
    const r = resolveVmNetworks(vmFleet((f) => { f.spec.vmNetworks.pop(); f.spec.vmNetworkDeletions = [{ network: 'vlan100' }]; }), l);
    expect(r.problems).toEqual([]);
    expect(Object.keys(r.ledger!)).toEqual(['blue', 'vlan100']);
    expect(r.ledger!.vlan100).toEqual(l.vmNetworks!.vlan100);
  });

  test('one mobile address given to two VMs, and one outside the mobile slice', () => {
    const l = ledgerOf(first);
    l.vmNetworks!.blue.vms!['tenant-blue/db-1'] = ['10.50.240.0', 'fd50::f000:0:0:1'];
    l.vmNetworks!.blue.vms!['tenant-blue/x'] = ['10.50.16.5', 'fd50::f000:0:0:9'];
    const r = resolveVmNetworks(vmFleet(), l);
    expect(codes(r.problems)).toEqual(['vmnet-ledger-conflict', 'vmnet-ledger-conflict']);
    expect(r.problems.map((p) => p.path)).toEqual(['(ledger) vmNetworks.blue.vms.tenant-blue/db-1', '(ledger) vmNetworks.blue.vms.tenant-blue/x']);
  });

  test('the mobile slice running out is refused', () => {
    const r = resolveVmNetworks(vmFleet((f) => {
      const b = f.spec.vmNetworks[0];
      b.subnets = ['10.50.0.0/16']; b.gateways = ['10.50.0.1']; b.infrastructure = ['10.50.0.0/20'];
      b.allocation = { mobile: ['10.50.255.252/30'] };
      b.mobileVms = ['tenant-blue/a', 'tenant-blue/b', 'tenant-blue/c', 'tenant-blue/d'];
    }));
    expect(codes(r.problems)).toEqual(['vmnet-mobile-exhausted']);
    expect(r.problems[0].path).toBe('spec.vmNetworks[0].mobileVms[3]');
  });

  test('a small IPv6 infrastructure deep in a /64 needs more than 25 reservedSubnets: refused, the fix says to widen it', () => {
    const r = resolveVmNetworks(vmFleet((f) => { f.spec.vmNetworks[0].infrastructure = ['10.50.0.0/29', 'fd50::/125']; }));
    expect(codes(r.problems)).toEqual(['vmnet-limit', 'vmnet-limit']);
    expect(r.problems[0].message).toMatch(/would need \d+ CIDRs; the CRD takes at most 25/);
  });
});

describe('the ledger file', () => {
  test('round-trips, sorted and stable; the VM networks part is the last key', () => {
    const r = resolveVmNetworks(vmFleet());
    const text = serializeLedger(ledgerOf(r));
    expect(serializeLedger(parseLedger(text))).toBe(text);
    expect(text.indexOf('vmNetworks:')).toBeGreaterThan(text.indexOf('clusters:'));
    expect(text.indexOf('ams-1:', text.indexOf('vmNetworks:'))).toBeLessThan(text.indexOf('fra-1:', text.indexOf('vmNetworks:')));
  });

  test('synth writes the VM networks into the ledger, and a frozen run against a ledger without them is refused', () => {
    const planned = planFleetDocument(vmFleet());
    expect(Object.keys(planned.ledger.vmNetworks!)).toEqual(['blue', 'vlan100']);
    expect(planned.plan.vmNetworks!.perCluster.get('fra-1')!.networks.map((n) => n.name)).toEqual(['blue', 'vlan100']);
    // what synth lists as ledger changes: each new network with the line it is created with, every slot and mobile address
    expect(planned.changes.filter((c) => c.cluster.startsWith('vmNetworks.') || c.field.startsWith('vmNetworks.')).map((c) => [c.cluster, c.field, c.to?.split(' ')[0]]))
      .toEqual([
        ['vmNetworks.blue', 'created', 'topology=Layer2'], ['ams-1', 'vmNetworks.blue', 'slot'], ['fra-1', 'vmNetworks.blue', 'slot'],
        ['vmNetworks.blue', 'vms.tenant-blue/db-1', '10.50.240.1,fd50::f000:0:0:1'], ['vmNetworks.blue', 'vms.tenant-blue/web-1', '10.50.240.0,fd50::f000:0:0:0'],
        ['vmNetworks.vlan100', 'created', 'topology=Localnet'], ['ams-1', 'vmNetworks.vlan100', 'slot'], ['fra-1', 'vmNetworks.vlan100', 'slot'],
      ]);
    const withoutVm: Ledger = { ...planned.ledger, vmNetworks: undefined };
    let err: unknown;
    try { planFleetDocument(vmFleet(), { ledger: withoutVm, frozen: true }); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(FleetValidationError);
    expect(codes((err as FleetValidationError).problems)).toEqual(['ledger-would-change']);
    expect(planFleetDocument(vmFleet(), { ledger: planned.ledger, frozen: true }).changes).toEqual([]);
  });

  test('fleets without VM networks keep their ledgers byte for byte', () => {
    const dir = path.join(__dirname, '..', 'examples');
    for (const f of ['two-sites.fleet.yaml', 'ipv6.fleet.yaml', 'hco.fleet.yaml']) {
      const file = path.join(dir, f);
      const planned = planFleetDocument(loadFleetFile(file), { ledger: loadLedgerFile(ledgerPathFor(file)) });
      expect(serializeLedger(planned.ledger)).toBe(fs.readFileSync(ledgerPathFor(file), 'utf8'));
      expect(planned.plan.vmNetworks).toBeUndefined();
    }
  });
});

test('a fleet of 20 clusters on 32 slots: every cluster hands out exactly its slice, pairwise disjoint, within 25 ranges', () => {
  const r = resolveVmNetworks(vmFleet((f) => {
    f.spec.crossClusterNetwork.addresses = { pool: ['192.168.60.0/24'], prefixLength: 24 };
    f.spec.clusters = Array.from({ length: 20 }, (_, i) => ({ name: `c${String(i).padStart(2, '0')}`, nodes: 2, ovnKubernetes: { ...OVN } }));
    f.spec.vmNetworks[0].allocation = { slots: 32 };
    f.spec.vmNetworks[0].infrastructure = ['10.50.0.0/29', 'fd50::/70'];
    f.spec.vmNetworks[1].allocation = { slots: 32 };
  }));
  expect(r.problems).toEqual([]);
  for (const name of ['blue', 'vlan100']) {
    const ranges = [...r.perCluster.values()].map((c) => c.networks.find((n) => n.name === name)!);
    for (const n of ranges) {
      expect(n.reservedSubnets.length + n.excludeSubnets.length).toBeLessThanOrEqual(25);
      expect(dynamic(n)).toEqual(n.slice!.cidrs.map(cidr).map(({ family, start, end }) => ({ family, start, end })));
    }
    for (let i = 0; i < ranges.length; i++) {
      for (let j = i + 1; j < ranges.length; j++) {
        for (const a of dynamic(ranges[i])) for (const b of dynamic(ranges[j])) expect(overlaps(a, b)).toBe(false);
      }
    }
    expect(r.networks.find((n) => n.name === name)!.spareSlots).toBe(12);
  }
});
