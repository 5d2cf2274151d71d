/**
 * The checks of spec.vmNetworks before anything is written (issue 40 item 5): each case changes one thing
 * of a valid fleet and expects exactly its code at its path (the valid fleet raises none, so every test
 * fails without its check). Sources of each rule: the CRDs in test/fixtures/upstream/ovn-k (ovn-kubernetes @8871cd9c) and the
 * table of checks in docs/vm-networks.md, each with its upstream source.
 */
import { resolveVmNetworks } from '../src/vmnet/plan';
import { planFleetDocument } from '../src/addressing/planner';
import { FleetValidationError } from '../src/base/errors';
import { routeTargetOk } from '../src/vmnet/declaration';
import { RawFleet, vmFleet } from './support/vmnet-fleet';

type Patch = (f: RawFleet) => void;
const found = (patch: Patch): [string, string][] => resolveVmNetworks(vmFleet(patch)).problems.map((p) => [p.code, p.path]);
const blue = (f: RawFleet) => f.spec.vmNetworks[0];
const vlan = (f: RawFleet) => f.spec.vmNetworks[1];

test('the base fleet raises nothing', () => {
  expect(found(() => undefined)).toEqual([]);
});

describe('one network on its own', () => {
  test.each<[string, Patch, [string, string][]]>([
    ['gateways on a localnet network', (f) => { vlan(f).gateways = ['192.168.100.1']; }, [['vmnet-topology-field', 'spec.vmNetworks[1].gateways']]],
    ['a layer2 network without infrastructure', (f) => { delete blue(f).infrastructure; }, [['vmnet-topology-field', 'spec.vmNetworks[0].infrastructure']]],
    ['a localnet network without bridge', (f) => { delete vlan(f).bridge; }, [['vmnet-topology-field', 'spec.vmNetworks[1].bridge']]],
    ['EVPN on a localnet network', (f) => { vlan(f).reach = { type: 'evpn', vni: 7, vtep: 'v', vtepCidrs: ['192.0.2.0/24'] }; }, [['vmnet-topology-field', 'spec.vmNetworks[1].reach.type']]],
    ['subnets with ipam disabled', (f) => { vlan(f).ipam = 'disabled'; }, [['vmnet-topology-field', 'spec.vmNetworks[1].subnets']]],
    ['a subnet with host bits', (f) => { vlan(f).subnets = ['192.168.100.7/24']; }, [['cidr-host-bits', 'spec.vmNetworks[1].subnets[0]']]],
    ['two IPv4 subnets', (f) => { vlan(f).subnets = ['192.168.100.0/24', '192.168.101.0/24']; }, [['family-mismatch', 'spec.vmNetworks[1].subnets']]],
    ['an MTU below 1280 with IPv6', (f) => { blue(f).mtu = 1200; }, [['mtu-too-small', 'spec.vmNetworks[0].mtu']]],
    ['a gateway outside the subnets', (f) => { blue(f).gateways = ['10.51.0.1', 'fd50::1']; },
      [['vmnet-outside-subnet', 'spec.vmNetworks[0].gateways[0]'], ['vmnet-gateway-infra', 'spec.vmNetworks[0].gateways[0]']]],
    ['a gateway outside the infrastructure', (f) => { blue(f).gateways = ['10.50.0.9', 'fd50::1']; }, [['vmnet-gateway-infra', 'spec.vmNetworks[0].gateways[0]']]],
    ['one gateway for two subnets', (f) => { blue(f).gateways = ['10.50.0.1']; }, [['vmnet-gateway-count', 'spec.vmNetworks[0].gateways']]],
    ['a reserved address outside the subnets', (f) => { vlan(f).reserved = ['192.168.99.1']; }, [['vmnet-outside-subnet', 'spec.vmNetworks[1].reserved[0]']]],
    ['a mobile slice on the infrastructure', (f) => { blue(f).allocation = { mobile: ['10.50.0.0/20', 'fd50::f000:0:0:0/68'] }; }, [['vmnet-infra-overlap', 'spec.vmNetworks[0].infrastructure']]],
    ['an EVPN network name of 16 characters (VRF)', (f) => { blue(f).name = 'blue-network-x16'; }, [['vmnet-name-too-long', 'spec.vmNetworks[0].name']]],
    ['a mobile VM name of 48 characters (cannot move)', (f) => { blue(f).mobileVms = [`tenant-blue/${'v'.repeat(48)}`]; }, [['vmnet-name-too-long', 'spec.vmNetworks[0].mobileVms[0]']]],
    ['a route target the CRD refuses', (f) => { blue(f).reach.routeTarget = '65000'; }, [['vmnet-route-target', 'spec.vmNetworks[0].reach.routeTarget']]],
    ['a slice prefix that leaves no room', (f) => { vlan(f).allocation = { slots: 4, slicePrefix: { ipv4: 25 } }; }, [['vmnet-slice-prefix', 'spec.vmNetworks[1].allocation.slicePrefix.ipv4']]],
    ['slots that do not fit beside infrastructure and reserved ranges', (f) => { vlan(f).allocation = { slots: 7, slicePrefix: { ipv4: 27 } }; },
      [['vmnet-slice-exhausted', 'spec.vmNetworks[1].allocation']]],
  ])('%s', (_what, patch, want) => {
    expect(found(patch)).toEqual(want);
  });

  test('route targets: the CRD\'s three forms and their ranges', () => {
    expect(['65000:5001', '4200000000:100', '192.0.2.1:100', '1:4294967295'].map(routeTargetOk)).toEqual([true, true, true, true]);
    expect(['65000', '4200000000:70000', '192.0.2.1:70000', 'fd00::1:1', 'a:b', '1:2:3'].map(routeTargetOk)).toEqual([false, false, false, false, false, false]);
  });
});

describe('across networks and clusters', () => {
  test.each<[string, Patch, [string, string][]]>([
    ['two networks with one name', (f) => { vlan(f).name = 'blue'; }, [['vmnet-duplicate-name', 'spec.vmNetworks[1].name']]],
    ['one namespace with two primary networks', (f) => {
      f.spec.vmNetworks.push({ ...blue(f), name: 'green', subnets: ['10.60.0.0/16'], gateways: ['10.60.0.1'], infrastructure: ['10.60.0.0/20'], reach: { type: 'none' }, mobileVms: [] });
    }, [['vmnet-namespace-primary', 'spec.vmNetworks[2].namespaces[0]']]],
    ['a primary network serving kube-system', (f) => { blue(f).namespaces = ['kube-system']; delete blue(f).mobileVms; }, [['vmnet-namespace-reserved', 'spec.vmNetworks[0].namespaces[0]']]],
    ['a primary network serving the mesh\'s own namespace', (f) => { blue(f).namespaces = ['tenant-blue', 'migration-mesh']; },
      [['vmnet-namespace-reserved', 'spec.vmNetworks[0].namespaces[1]']]],
    ['a primary network serving an OpenShift namespace', (f) => { blue(f).namespaces = ['openshift-cnv']; delete blue(f).mobileVms; }, [['vmnet-namespace-reserved', 'spec.vmNetworks[0].namespaces[0]']]],
    ['two EVPN networks on one VNI', (f) => {
      f.spec.vmNetworks.push({ ...blue(f), name: 'green', namespaces: ['tenant-green'], subnets: ['10.60.0.0/16'], gateways: ['10.60.0.1'], infrastructure: ['10.60.0.0/20'], mobileVms: [] });
    }, [['vmnet-evpn-vni', 'spec.vmNetworks[2].reach.vni']]],
    ['an override for a cluster the fleet does not have', (f) => { vlan(f).clusters = { 'par-9': { vlan: 101 } }; }, [['vmnet-unknown-cluster', 'spec.vmNetworks[1].clusters.par-9']]],
    ['a VLAN override on a layer2 network', (f) => { blue(f).clusters = { 'ams-1': { vlan: 101 } }; }, [['vmnet-topology-field', 'spec.vmNetworks[0].clusters.ams-1.vlan']]],
    ['no VTEP CIDRs for one serving cluster', (f) => { delete blue(f).reach.vtepCidrs; blue(f).clusters = { 'fra-1': { vtepCidrs: ['192.0.2.0/26'] } }; },
      [['vmnet-vtep', 'spec.vmNetworks[0].reach.vtepCidrs']]],
    ['an IPv6 VTEP', (f) => { blue(f).reach.vtepCidrs = ['fd00:1::/64']; }, [['vmnet-vtep', 'spec.vmNetworks[0].reach.vtepCidrs[0]'], ['vmnet-vtep', 'spec.vmNetworks[0].reach.vtepCidrs[0]']]],
    ['one VTEP with two sets of CIDRs on one cluster', (f) => {
      f.spec.vmNetworks.push({
        ...blue(f), name: 'green', namespaces: ['tenant-green'], subnets: ['10.60.0.0/16'], gateways: ['10.60.0.1'],
        infrastructure: ['10.60.0.0/20'], mobileVms: [], reach: { ...blue(f).reach, vni: 5002, vtepCidrs: ['192.0.3.0/24'] },
      });
    }, [['vmnet-vtep', 'spec.vmNetworks[2].reach.vtepCidrs'], ['vmnet-vtep', 'spec.vmNetworks[2].reach.vtepCidrs']]],
    ['an MTU too large for the underlay with VXLAN', (f) => { blue(f).reach.underlayMtu = 1400; }, [['vmnet-mtu-evpn', 'spec.vmNetworks[0].mtu']]],
  ])('%s', (_what, patch, want) => {
    expect(found(patch)).toEqual(want);
  });
});

describe('feature and version gates', () => {
  const ovn = (c: number, o: Record<string, unknown> | undefined) => (f: RawFleet) => {
    if (o) f.spec.clusters[c].ovnKubernetes = o;
    else delete f.spec.clusters[c].ovnKubernetes;
  };
  test.each<[string, Patch, [string, string][]]>([
    ['OVN-K v1.1.0: no preconfigured addresses, no EVPN', ovn(1, { version: 'v1.1.0', ipamExtensions: true }),
      [['vmnet-static-gate', 'spec.vmNetworks[0].reach'], ['vmnet-evpn-gate', 'spec.vmNetworks[0].reach']]],
    ['OVN-K v1.2.0: no EVPN', ovn(1, { version: 'v1.2.0', ipamExtensions: true }), [['vmnet-evpn-gate', 'spec.vmNetworks[0].reach']]],
    ['EVPN off bare metal', ovn(0, { version: 'v1.3.0', ipamExtensions: true, bareMetal: false }), [['vmnet-evpn-gate', 'spec.vmNetworks[0].reach']]],
    ['plain KubeVirt without ipam-extensions', ovn(0, { version: 'v1.3.0' }),
      [['vmnet-persistent-gate', 'spec.clusters[0].ovnKubernetes.ipamExtensions'], ['vmnet-persistent-gate', 'spec.clusters[0].ovnKubernetes.ipamExtensions']]],
    ['no version to check against', ovn(1, undefined), [['vmnet-version-unknown', 'spec.clusters[1].ovnKubernetes.version'], ['vmnet-persistent-gate', 'spec.clusters[1].ovnKubernetes.ipamExtensions']]],
    ['OpenShift 4.21 (HCO): preconfigured addresses yes, EVPN no', (f) => {
      delete f.spec.clusters[1].ovnKubernetes;
      f.spec.clusters[1].kubevirt = { configDelivery: 'hco', product: 'openshift-virtualization', productVersion: '4.21.1' };
    }, [['vmnet-evpn-gate', 'spec.vmNetworks[0].reach']]],
    ['a Harvester cluster', (f) => { f.spec.clusters[1].harvester = { clusterNetwork: 'mgmt' }; f.spec.clusters[1].datapath = 'direct'; f.spec.clusters[1].kubevirt = { product: 'harvester' }; },
      [['vmnet-cni-unsupported', 'spec.vmNetworks[0].reach'], ['vmnet-cni-unsupported', 'spec.vmNetworks[1].topology']]],
  ])('%s', (_what, patch, want) => {
    expect(found(patch)).toEqual(want);
  });

  test('OpenShift 4.22 on both clusters passes every gate (no ovnKubernetes needed)', () => {
    expect(found((f) => {
      for (const c of f.spec.clusters) { delete c.ovnKubernetes; c.kubevirt = { configDelivery: 'hco', product: 'openshift-virtualization', productVersion: '4.22.0' }; }
    })).toEqual([]);
  });

  test('a cluster that does not serve the network is not gated', () => {
    expect(found((f) => { ovn(1, { version: 'v1.1.0', ipamExtensions: true })(f); blue(f).clusters = { 'ams-1': { served: false } }; })).toEqual([]);
  });

  test('the gate message names the version and where the feature starts', () => {
    const p = resolveVmNetworks(vmFleet(ovn(1, { version: 'v1.2.0', ipamExtensions: true }))).problems[0];
    expect(p.message).toMatch(/cluster ams-1 runs OVN-Kubernetes v1\.2\.0, which has it from OVN-Kubernetes v1\.3\.0 on/);
    expect(p.fix).toMatch(/upgrade cluster ams-1/);
  });
});

describe('warnings', () => {
  test('different service CIDRs: the moved guest keeps the old DNS server', () => {
    const r = resolveVmNetworks(vmFleet((f) => { f.spec.clusters[0].serviceCidrs = ['172.30.0.0/16']; f.spec.clusters[1].serviceCidrs = ['172.31.0.0/16']; }));
    expect(r.problems).toEqual([]);
    expect(r.warnings.map((w) => w.code)).toEqual(['vmnet-dns-differs', 'vmnet-evpn-cclm-ingress']);
  });

  test('a localnet network on different VLANs per cluster: allowed (sites translate VLANs), warned about', () => {
    const r = resolveVmNetworks(vmFleet((f) => { vlan(f).clusters = { 'ams-1': { vlan: 200 } }; }));
    expect(r.problems).toEqual([]);
    expect(r.warnings.map((w) => [w.code, w.path])).toEqual([['vmnet-evpn-cclm-ingress', 'spec.vmNetworks[0].reach'], ['vmnet-vlan-differs', 'spec.vmNetworks[1].clusters']]);
    expect(r.warnings[1].message).toContain('fra-1 100, ams-1 200');
    expect(r.perCluster.get('ams-1')!.networks[1].localnet!.vlan).toBe(200);
  });

  test('no EVPN warning when the network is served on one cluster only', () => {
    const r = resolveVmNetworks(vmFleet((f) => { blue(f).clusters = { 'ams-1': { served: false } }; }));
    expect(r.warnings).toEqual([]);
  });
});

test('the main path (validate, synth) refuses with the same codes before anything is planned', () => {
  let err: unknown;
  try { planFleetDocument(vmFleet((f) => { blue(f).gateways = ['10.50.0.9', 'fd50::1']; vlan(f).name = 'blue'; })); } catch (e) { err = e; }
  expect(err).toBeInstanceOf(FleetValidationError);
  expect((err as FleetValidationError).problems.map((p) => p.code)).toEqual(['vmnet-duplicate-name', 'vmnet-gateway-infra']);
});

test('a mistyped field is refused by the schema with its path', () => {
  let err: unknown;
  try { vmFleet((f) => { blue(f).mtuu = 1400; }); } catch (e) { err = e; }
  expect((err as FleetValidationError).problems.map((p) => [p.code, p.path])).toEqual([['unknown-field', 'spec.vmNetworks[0]']]);
  expect((err as FleetValidationError).problems[0].message).toContain('mtuu');
});

describe('pinAddressesBy: who the pin-addresses Role is bound to', () => {
  /** What the schema says of one subject on blue: [code, path, fix]. */
  const refused = (subject: Record<string, unknown>): [string, string, string | undefined][] => {
    try { vmFleet((f) => { blue(f).pinAddressesBy = [{ kind: 'Group', name: 'vm-movers' }, subject]; }); } catch (e) {
      return (e as FleetValidationError).problems.map((p) => [p.code, p.path, p.fix]);
    }
    return [];
  };
  test.each<[string, Record<string, unknown>, [string, string, string | undefined][]]>([
    ['a ServiceAccount without its namespace', { kind: 'ServiceAccount', name: 'mover' },
      [['vmnet-pin-subject', 'spec.vmNetworks[0].pinAddressesBy[1].namespace', expect.stringContaining('add namespace')]]],
    ['a User with a namespace', { kind: 'User', name: 'alice@example.com', namespace: 'ops' },
      [['vmnet-pin-subject', 'spec.vmNetworks[0].pinAddressesBy[1].namespace', expect.stringContaining('remove namespace, or use kind: ServiceAccount')]]],
    ['a ServiceAccount name that is not a DNS-1123 subdomain', { kind: 'ServiceAccount', name: 'VM_Mover', namespace: 'ops' },
      [['vmnet-pin-subject', 'spec.vmNetworks[0].pinAddressesBy[1].name', expect.stringContaining('e.g. vm-mover')]]],
    ['a kind RBAC does not have', { kind: 'Robot', name: 'r2' }, [['schema-invalid', 'spec.vmNetworks[0].pinAddressesBy[1].kind', undefined]]],
  ])('%s is refused with its path and fix', (_what, subject, want) => {
    expect(refused(subject)).toEqual(want);
  });

  test('users, groups and ServiceAccounts as the API server names them plan without a problem; on a localnet network the field is refused', () => {
    const ok = vmFleet((f) => {
      blue(f).pinAddressesBy = [{ kind: 'User', name: 'alice@example.com' }, { kind: 'Group', name: 'oidc:vm-movers' }, { kind: 'ServiceAccount', name: 'mover', namespace: 'ops' }];
    });
    const r = resolveVmNetworks(ok);
    expect(r.problems).toEqual([]);
    expect(r.perCluster.get('ams-1')!.networks[0].pinAddressesBy).toEqual([
      { kind: 'User', name: 'alice@example.com' }, { kind: 'Group', name: 'oidc:vm-movers' }, { kind: 'ServiceAccount', name: 'mover', namespace: 'ops' },
    ]);
    expect(r.perCluster.get('ams-1')!.networks[1].pinAddressesBy).toBeUndefined();
    expect(found((f) => { vlan(f).pinAddressesBy = [{ kind: 'Group', name: 'vm-movers' }]; })).toEqual([['vmnet-topology-field', 'spec.vmNetworks[1].pinAddressesBy']]);
  });
});
