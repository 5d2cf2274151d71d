/**
 * A VM that moves keeps its address (issue 40 item 4, planning side): `checkKeepAddressMove` refuses a
 * keep-the-address move whose primary Layer2 network does not reach the target, is not served there, or
 * changes namespace, and an address that is not the VM's or that the target holds; it gives the address
 * to pin (the ledger's mobile one, or the one read from the source's IPAMClaim) as KubeVirt's annotation.
 * The same check runs over the fleet's moves list before anything is written.
 */
import { checkKeepAddressMove, KeepAddressMove } from '../src/vmnet/moves';
import { resolveVmNetworks } from '../src/vmnet/plan';
import { planForklift } from '../src/forklift/plan';
import { ClusterFacts } from '../src/forklift/model';
import { servedNamespaceProblems } from '../src/vmnet/namespaces';
import { addressesFromIpamClaim, pinAddressesPatch } from '../src/vmnet/claims';
import { RawFleet, vmFleet } from './support/vmnet-fleet';

const move = (o: Partial<KeepAddressMove> = {}): KeepAddressMove => ({ vm: 'web-1', namespace: 'tenant-blue', from: 'fra-1', to: 'ams-1', ...o });
const verdict = (patch: ((f: RawFleet) => void) | undefined, m: KeepAddressMove) => checkKeepAddressMove(resolveVmNetworks(vmFleet(patch)), m);
const codes = (ps: readonly { code: string }[]) => ps.map((p) => p.code);

test('over EVPN, a mobile VM moves with its ledger address, pinned through the addresses annotation', () => {
  const v = verdict(undefined, move());
  expect(v.ok).toBe(true);
  expect(v.network).toBe('blue');
  expect(v.addresses).toEqual(['10.50.240.0', 'fd50::f000:0:0:0']);
  expect(v.origin).toBe('mobile');
  expect(v.afterMove).toBe('delete-source');
  expect(v.annotation).toEqual({ key: 'network.kubevirt.io/addresses', value: '{"default":["10.50.240.0","fd50::f000:0:0:0"]}' });
  expect(v.problems).toEqual([]);
});

test('the same move with the sites\' L2 not joined (reach none) is refused, and no annotation is given', () => {
  const v = verdict((f) => { f.spec.vmNetworks[0].reach = { type: 'none' }; }, move());
  expect(v.ok).toBe(false);
  expect(codes(v.problems)).toEqual(['vmnet-move-no-reach']);
  expect(v.problems[0].message).toMatch(/its L2 segment on ams-1 is not joined to fra-1's/);
  expect(v.annotation).toBeUndefined();
});

test('a target that does not serve the network is refused', () => {
  const v = verdict((f) => { f.spec.vmNetworks[0].clusters = { 'ams-1': { served: false } }; }, move());
  expect(codes(v.problems)).toEqual(['vmnet-move-not-served']);
});

test('a move into another namespace is refused (the NAD and the IPAMClaim live in the namespace)', () => {
  expect(codes(verdict(undefined, move({ targetNamespace: 'tenant-other' })).problems)).toEqual(['vmnet-move-namespace']);
});

test('a VM name over 47 characters is refused (CNV-61066)', () => {
  expect(codes(verdict(undefined, move({ vm: 'v'.repeat(48), addresses: ['10.50.240.9', 'fd50::f000:0:0:9'] })).problems)).toEqual(['vmnet-move-vm-name']);
  expect(verdict(undefined, move({ vm: 'v'.repeat(47), addresses: ['10.50.240.9', 'fd50::f000:0:0:9'] })).ok).toBe(true);
});

describe('addresses read from the source IPAMClaim', () => {
  const other = (addresses: string[], o: Partial<KeepAddressMove> = {}) => verdict(undefined, move({ vm: 'app-7', addresses, ...o }));

  test('an address of the source\'s own slice is kept, with the tombstone warning', () => {
    const v = other(['10.50.16.20/20', 'fd50::1000:0:0:20/68']);
    expect(v.ok).toBe(true);
    expect(v.addresses).toEqual(['10.50.16.20', 'fd50::1000:0:0:20']);
    expect(v.origin).toBe('source-slice');
    expect(v.afterMove).toBe('keep-source-halted');
    // tenant-blue is also served by the localnet vlan100 (OVN IPAM): that address is not kept
    expect(v.warnings.map((w) => [w.code, /vlan100/.test(w.message)])).toEqual([['vmnet-ip-not-kept', true], ['vmnet-move-tombstone', false]]);
  });

  test('an address of the target\'s own slice is refused: the target hands it out', () => {
    const v = other(['10.50.32.20', 'fd50::1000:0:0:20']);
    expect(codes(v.problems)).toEqual(['vmnet-move-address']);
    expect(v.problems[0].message).toMatch(/in ams-1's own slice/);
  });

  test('one address for a dual-stack network is refused', () => {
    expect(codes(other(['10.50.16.20']).problems)).toEqual(['vmnet-move-address']);
  });

  test('an address the target already holds is refused', () => {
    const v = other(['10.50.240.40', 'fd50::f000:0:0:40'], { targetHolds: ['10.50.240.40/16'] });
    expect(codes(v.problems)).toEqual(['vmnet-move-address']);
    expect(v.problems[0].message).toMatch(/ams-1 already holds 10\.50\.240\.40/);
  });

  test('an address that contradicts the ledger\'s for a mobile VM is refused', () => {
    expect(codes(verdict(undefined, move({ addresses: ['10.50.240.7', 'fd50::f000:0:0:0'] })).problems)).toEqual(['vmnet-move-address']);
  });

  test('a VM with no address known is refused by the pre-flight, warned about by the fleet-level check', () => {
    expect(codes(verdict(undefined, move({ vm: 'app-7' })).problems)).toEqual(['vmnet-move-address']);
    const w = verdict(undefined, move({ vm: 'app-7', requireAddress: false }));
    expect(w.ok).toBe(true);
    expect(w.warnings.map((x) => [x.code, /not a mobile VM of blue/.test(x.message)])).toEqual([['vmnet-ip-not-kept', false], ['vmnet-ip-not-kept', true]]);
  });
});

test('a VM in a namespace with no primary VM network has nothing to pin; a localnet network of OVN IPAM is warned about', () => {
  const v = verdict(undefined, move({ namespace: 'tenant-red', vm: 'db-9' }));
  expect(v).toMatchObject({ ok: true, addresses: [], problems: [] });
  expect(codes(v.warnings)).toEqual(['vmnet-ip-not-kept']);
  const guest = verdict((f) => { f.spec.vmNetworks[1].ipam = 'disabled'; delete f.spec.vmNetworks[1].subnets; delete f.spec.vmNetworks[1].reserved; }, move({ namespace: 'tenant-red', vm: 'db-9' }));
  expect(codes(guest.warnings)).toEqual(['vmnet-localnet-cclm']);
  expect(guest.warnings[0].message).toMatch(/its guest keeps its address; traffic sent to the source node can be lost/);
});

describe('the fleet\'s moves are checked before anything is written (Forklift plan)', () => {
  const facts: ClusterFacts[] = ['fra-1', 'ams-1'].map((name, index) => ({ name, index, datapath: 'gateway', featureGates: ['DecentralizedLiveMigration'], meshNads: [] }));
  const withMoves = (reach: Record<string, unknown>) => vmFleet((f) => {
    f.spec.vmNetworks[0].reach = reach;
    f.spec.forklift = {
      hub: { cluster: 'fra-1', namespace: 'openshift-mtv' }, providers: { 'ams-1': { url: 'https://api.ams-1.example:6443', secret: 'ams-1-provider' } },
      controller: { liveMigration: true }, storage: [{ source: 'ceph-rbd', storageClass: 'ceph-rbd' }],
      moves: [{ vm: 'web-1', namespace: 'tenant-blue', from: 'fra-1', to: 'ams-1', batch: 'wave-1' }],
    };
  });

  test('reach none: the move is refused with its path in the moves list', () => {
    const r = planForklift(withMoves({ type: 'none' }), facts);
    expect(r.problems.map((p) => [p.code, p.path])).toEqual([['vmnet-move-no-reach', 'spec.forklift.moves[0]']]);
    expect(r.plan).toBeUndefined();
  });

  test('EVPN: the move is planned', () => {
    const r = planForklift(withMoves({ type: 'evpn', vni: 5001, vtep: 'fleet-vtep', vtepCidrs: ['192.0.2.0/24'] }), facts);
    expect(r.problems).toEqual([]);
    expect(r.plan!.plans.map((p) => p.vms.map((v) => v.name))).toEqual([['web-1']]);
  });
});

test('a served namespace that exists without the primary-network label is refused, never patched', () => {
  const fra = resolveVmNetworks(vmFleet()).perCluster.get('fra-1')!;
  const ps = servedNamespaceProblems(fra, [{ name: 'tenant-blue', labels: { team: 'blue' } }, { name: 'tenant-red' }]);
  expect(ps.map((p) => [p.code, p.path])).toEqual([['vmnet-namespace-label', 'spec.vmNetworks[0].namespaces[0]']]);
  expect(ps[0].fix).toMatch(/delete namespace tenant-blue on fra-1 so the fleet creates it with the label/);
  expect(servedNamespaceProblems(fra, [{ name: 'tenant-blue', labels: { 'k8s.ovn.org/primary-user-defined-network': '' } }])).toEqual([]);
});

describe('the source IPAMClaim and the pin', () => {
  const claim = (o: Record<string, unknown> = {}) => ({
    apiVersion: 'k8s.cni.cncf.io/v1alpha1', kind: 'IPAMClaim', metadata: { name: 'app-7.default', namespace: 'tenant-blue' },
    spec: { network: 'cluster_udn_blue', interface: '' }, status: { ips: ['fd50::1000:0:0:20/64', '10.50.16.20/16'] }, ...o,
  });

  test('the claim\'s addresses, bare and IPv4 first, pass the pre-flight and give the patch for the source VM', () => {
    const read = addressesFromIpamClaim(claim(), 'blue');
    expect(read).toEqual({ addresses: ['10.50.16.20', 'fd50::1000:0:0:20'], problems: [] });
    const v = verdict(undefined, move({ vm: 'app-7', addresses: read.addresses }));
    expect(v.ok).toBe(true);
    expect(pinAddressesPatch(v.annotation!)).toEqual({ spec: { template: { metadata: { annotations: { 'network.kubevirt.io/addresses': '{"default":["10.50.16.20","fd50::1000:0:0:20"]}' } } } } });
  });

  test.each([
    ['a claim of another network', { spec: { network: 'cluster_udn_green', interface: '' } }, /is of network 'cluster_udn_green', not blue/],
    ['a claim with no address yet', { status: {} }, /holds no address yet/],
    ['a claim with a bare address', { status: { ips: ['10.50.16.20'] } }, /holds "10\.50\.16\.20", not address\/prefix/],
  ])('%s is refused', (_what, o, why) => {
    const read = addressesFromIpamClaim(claim(o), 'blue');
    expect(read.addresses).toEqual([]);
    expect(read.problems.map((p) => p.code)).toEqual(['vmnet-move-address']);
    expect(read.problems[0].message).toMatch(why);
  });
});

test('a fleet whose VM networks do not plan refuses every move with its problems (never a silent ok)', () => {
  const v = verdict((f) => { f.spec.vmNetworks[0].gateways = ['10.50.0.9', 'fd50::1']; }, move());
  expect(v.ok).toBe(false);
  expect(codes(v.problems)).toEqual(['vmnet-gateway-infra']);
});

test('a move from a cluster that does not serve the primary network into one that does is warned about: the VM changes network', () => {
  const v = verdict((f) => { f.spec.vmNetworks[0].clusters = { 'fra-1': { served: false } }; f.spec.vmNetworks.pop(); }, move({ vm: 'app-7' }));
  expect(v.ok).toBe(true);
  expect(v.warnings.map((w) => [w.code, /on ams-1 it lands on blue/.test(w.message)])).toEqual([['vmnet-ip-not-kept', true]]);
});
