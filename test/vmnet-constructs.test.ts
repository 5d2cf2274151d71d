/**
 * The VM-network constructs (constructs/vmnet/, issue 40 item 2): what each emits from its own props and what the
 * composite `VmNetworks` emits from a resolved cluster shape (src/vmnet/resolved.ts), each object checked against
 * the upstream CRD schemas (test/fixtures/upstream/ovn-k, nmstate; CEL rules are the real server's: vmnet.real.test.ts).
 */
import { App, Chart } from 'cdk8s';
import { ClusterVmNetwork } from '../src/vmnet/resolved';
import { kindWave, rolloutWave, stageOfWave } from '../src/delivery/rollout';
import { annotateForGitops, ARGOCD_SYNC_OPTIONS_ANNOTATION, FLUX_PRUNE_ANNOTATION, ResolvedGitops } from '../src/delivery/gitops';
import {
  BridgeMappingPolicy, ClusterUserDefinedNetwork, PrimaryNetworkNamespace, RouteAdvertisements, VmNetworks, Vtep,
} from '../index';
import { pinAddressesRoleRules } from '../src/vmnet/pin-role';
import { validateObject } from './support/schemas';

const chart = () => new Chart(new App(), 'c', { disableResourceNameHashes: true });
const json = (c: Chart): any[] => c.toJson();

const blue: ClusterVmNetwork = {
  name: 'blue', index: 0, topology: 'Layer2', role: 'Primary', namespaces: ['tenant-blue', 'tenant-green'], primaryNamespaces: true,
  subnets: ['10.50.0.0/16', 'fd50::/64'], mtu: 1400, ipam: { mode: 'Enabled', lifecycle: 'Persistent' },
  defaultGatewayIPs: ['10.50.0.1', 'fd50::1'], infrastructureSubnets: ['10.50.0.0/29', 'fd50::/125'],
  reservedSubnets: ['10.50.224.0/19', '10.50.32.0/19', 'fd50::8000:0:0:0/65'], excludeSubnets: [],
  reach: {
    type: 'evpn', vni: 5001, routeTarget: '65000:5001', vtep: 'fleet-vtep', vtepCidrs: ['100.64.1.0/24'], vtepMode: 'Unmanaged',
    routeAdvertisements: { name: 'mm-blue', frrConfigurationSelector: { 'fabric.example/bgp': 'evpn' } },
  },
  labels: { 'migrationmesh.dev/vm-network': 'blue' }, slice: { slot: 0, cidrs: ['10.50.16.0/20'] }, networkMap: [], mobileVms: [],
};
const vlan100: ClusterVmNetwork = {
  name: 'vlan100', index: 1, topology: 'Localnet', role: 'Secondary', namespaces: ['tenant-blue', 'tenant-red'], primaryNamespaces: false,
  subnets: [], mtu: 1500, ipam: { mode: 'Disabled' }, defaultGatewayIPs: [], infrastructureSubnets: [], reservedSubnets: [], excludeSubnets: [],
  localnet: {
    physicalNetworkName: 'physnet-vms', vlan: 100, bridge: { kind: 'create', name: 'br-vms', port: 'bond1' },
    policyName: 'mm-vlan100-bridge-mapping', nodeSelector: { 'node-role.kubernetes.io/worker': '' },
  },
  reach: { type: 'vlan' }, labels: { 'migrationmesh.dev/vm-network': 'vlan100' }, networkMap: [], mobileVms: [],
};

describe('VmNetworks from one cluster\'s resolved networks', () => {
  const c = chart();
  const v = new VmNetworks(c, 'VmNetworks', { networks: [blue, vlan100] });
  const objs = json(c);
  const find = (kind: string, name: string) => objs.find((o) => o.kind === kind && o.metadata.name === name);

  test('the primary Layer2 network: persistent IPs, explicit MTU, gateway, infrastructure, this cluster\'s reserved slices, EVPN MAC-VRF', () => {
    expect(find('ClusterUserDefinedNetwork', 'blue').spec).toEqual({
      namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['tenant-blue', 'tenant-green'] }] },
      network: {
        topology: 'Layer2',
        layer2: {
          role: 'Primary', subnets: ['10.50.0.0/16', 'fd50::/64'], mtu: 1400, ipam: { lifecycle: 'Persistent' },
          defaultGatewayIPs: ['10.50.0.1', 'fd50::1'], infrastructureSubnets: ['10.50.0.0/29', 'fd50::/125'],
          reservedSubnets: ['10.50.224.0/19', '10.50.32.0/19', 'fd50::8000:0:0:0/65'],
        },
        transport: 'EVPN',
        evpn: { vtep: 'fleet-vtep', macVRF: { vni: 5001, routeTarget: '65000:5001' } },
      },
    });
    expect(find('ClusterUserDefinedNetwork', 'blue').metadata.labels['migrationmesh.dev/vm-network']).toBe('blue');
  });

  test('the localnet network: Secondary, physical network, access VLAN, ipam Disabled and no subnets (the CRD forbids them then)', () => {
    expect(find('ClusterUserDefinedNetwork', 'vlan100').spec.network).toEqual({
      topology: 'Localnet',
      localnet: { role: 'Secondary', physicalNetworkName: 'physnet-vms', mtu: 1500, vlan: { mode: 'Access', access: { id: 100 } }, ipam: { mode: 'Disabled' } },
    });
  });

  test('Namespaces only for the primary network\'s namespaces, each once, created with the primary-network label', () => {
    const ns = objs.filter((o) => o.kind === 'Namespace');
    expect(ns.map((o) => o.metadata.name)).toEqual(['tenant-blue', 'tenant-green']);
    for (const o of ns) expect(o.metadata.labels['k8s.ovn.org/primary-user-defined-network']).toBe('');
    expect(v.namespaces).toHaveLength(2);
  });

  test('the bridge mapping of the localnet network creates its dedicated OVS bridge with its port, on the VM nodes', () => {
    expect(find('NodeNetworkConfigurationPolicy', 'mm-vlan100-bridge-mapping').spec).toEqual({
      nodeSelector: { 'node-role.kubernetes.io/worker': '' },
      desiredState: {
        interfaces: [{ name: 'br-vms', type: 'ovs-bridge', state: 'up', bridge: { 'allow-extra-patch-ports': true, port: [{ name: 'bond1' }] } }],
        ovn: { 'bridge-mappings': [{ localnet: 'physnet-vms', bridge: 'br-vms', state: 'present' }] },
      },
    });
  });

  test('EVPN: the VTEP (Unmanaged) and RouteAdvertisements selecting the CUDN by its label, PodNetwork from every node, the user\'s FRR config', () => {
    expect(find('VTEP', 'fleet-vtep').spec).toEqual({ cidrs: ['100.64.1.0/24'], mode: 'Unmanaged' });
    expect(find('RouteAdvertisements', 'mm-blue').spec).toEqual({
      targetVRF: 'auto', advertisements: ['PodNetwork'], nodeSelector: {}, frrConfigurationSelector: { matchLabels: { 'fabric.example/bgp': 'evpn' } },
      networkSelectors: [{ networkSelectionType: 'ClusterUserDefinedNetworks', clusterUserDefinedNetworkSelector: { networkSelector: { matchLabels: { 'migrationmesh.dev/vm-network': 'blue' } } } }],
    });
  });

  test('every object passes the upstream CRD schema (types, enums, bounds, unknown fields)', () => {
    expect(objs).toHaveLength(13); // 7 network objects + 2 pin-addresses Roles + the two guards' policies and bindings
    expect(objs.flatMap((o) => validateObject(o))).toEqual([]);
  });

  test('rollout: namespaces, then what the CUDN names (bridge mapping, VTEP), then the CUDNs, then what selects them; all in the last stage', () => {
    const wave = (kind: string, name: string) => rolloutWave(find(kind, name), new Set());
    expect(wave('Namespace', 'tenant-blue')).toBeLessThan(wave('VTEP', 'fleet-vtep'));
    expect(wave('NodeNetworkConfigurationPolicy', 'mm-vlan100-bridge-mapping')).toBeLessThan(wave('ClusterUserDefinedNetwork', 'blue'));
    expect(wave('VTEP', 'fleet-vtep')).toBeLessThan(wave('ClusterUserDefinedNetwork', 'blue'));
    expect(wave('ClusterUserDefinedNetwork', 'blue')).toBeLessThan(wave('RouteAdvertisements', 'mm-blue'));
    for (const o of objs) { // the served-namespace guard comes in a stage of its own, before the Namespaces
      expect(stageOfWave(rolloutWave(o, new Set())).name).toBe(o.metadata.name === 'migration-mesh-served-namespace-label' ? 'vmnet-guard' : 'vm-networks');
      expect(rolloutWave(o, new Set())).toBeGreaterThan(kindWave('KubeVirt'));
    }
    expect(rolloutWave({ kind: 'Namespace', metadata: { name: 'migration-mesh' } }, new Set())).toBe(0); // the gateway's stays first
  });

  test('GitOps never prunes or deletes a primary-network Namespace (it holds the VMs), nor the CUDN (VMs run on it, issue 50 item 2)', () => {
    const g: ResolvedGitops = {
      fleet: 'f', clusters: ['a'], targetRevision: 'HEAD', path: 'dist/f',
      argocd: { namespace: 'argocd', project: 'default', repoURL: 'https://git.example/x.git', automated: true },
      flux: { namespace: 'flux-system', sourceRef: { kind: 'GitRepository', name: 'x' }, interval: '10m', timeout: '5m', retryInterval: '1m', kubeConfigSecrets: {}, inCluster: true },
    };
    const ns = annotateForGitops(find('Namespace', 'tenant-blue'), 6, g).metadata.annotations;
    expect(ns[ARGOCD_SYNC_OPTIONS_ANNOTATION]).toBe('Prune=false,Delete=false');
    expect(ns[FLUX_PRUNE_ANNOTATION]).toBe('disabled');
    const cudn = annotateForGitops(find('ClusterUserDefinedNetwork', 'blue'), 8, g).metadata.annotations;
    expect([cudn[ARGOCD_SYNC_OPTIONS_ANNOTATION], cudn[FLUX_PRUNE_ANNOTATION]]).toEqual(['Prune=false,Delete=false', 'disabled']);
    expect(annotateForGitops({ kind: 'Namespace', metadata: { name: 'migration-mesh' } }, 0, g).metadata.annotations[ARGOCD_SYNC_OPTIONS_ANNOTATION]).toBeUndefined();
  });
});

describe('what keeps a moved address from coming back twice (issue 40 item 4): only for the Layer2 networks', () => {
  const rules = [
    { apiGroups: ['kubevirt.io'], resources: ['virtualmachines'], verbs: ['get', 'list', 'patch', 'delete'] },
    { apiGroups: ['kubevirt.io'], resources: ['virtualmachineinstances'], verbs: ['get'] },
    { apiGroups: ['k8s.cni.cncf.io'], resources: ['ipamclaims'], verbs: ['get', 'list', 'delete'] },
  ];
  const of = (...networks: ClusterVmNetwork[]) => {
    const c = chart();
    const v = new VmNetworks(c, 'V', { networks });
    return { v, objs: json(c) };
  };
  const moved = (o: any) => o.metadata.name === 'migration-mesh-moved-vm-halted'; // beside the served-namespace guard
  const bindingNamespaces = (objs: any[]) => objs.filter((o) => o.kind === 'ValidatingAdmissionPolicyBinding' && moved(o))
    .map((o) => o.spec.matchResources.namespaceSelector.matchExpressions);

  test('the guard binds exactly the Layer2 network\'s namespaces (not the localnet-only tenant-red); a Role in each with exactly the CLI\'s rules', () => {
    const { v, objs } = of(blue, vlan100);
    expect(bindingNamespaces(objs)).toEqual([[{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['tenant-blue', 'tenant-green'] }]]);
    const binding = objs.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding' && moved(o));
    expect(binding.spec).toMatchObject({ policyName: 'migration-mesh-moved-vm-halted', validationActions: ['Deny'] });
    const policy = objs.filter((o) => o.kind === 'ValidatingAdmissionPolicy' && moved(o));
    expect(policy.map((o) => [o.apiVersion, o.metadata.name])).toEqual([['admissionregistration.k8s.io/v1', 'migration-mesh-moved-vm-halted']]);
    expect(policy[0].spec.matchConstraints.resourceRules).toEqual([{ apiGroups: ['kubevirt.io'], apiVersions: ['*'], operations: ['UPDATE'], resources: ['virtualmachines'] }]);
    const roles = objs.filter((o) => o.kind === 'Role');
    expect(roles.map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual(['tenant-blue/migration-mesh-pin-addresses', 'tenant-green/migration-mesh-pin-addresses']);
    for (const r of roles) expect(r.rules).toEqual(rules);
    expect(rules).toEqual(pinAddressesRoleRules()); // the rules the CLI's requests are written from
    expect(objs.filter((o) => o.kind === 'RoleBinding')).toEqual([]); // the identity is the user's to bind
    expect(v.pinAddressesRole?.roles).toHaveLength(2);
    expect(v.movedVmGuard?.binding).toBeDefined();
  });

  test('a localnet-only cluster gets neither the guard nor the Role: its VMs do not keep their address', () => {
    const { v, objs } = of(vlan100);
    expect(objs.map((o) => o.kind).sort()).toEqual(['ClusterUserDefinedNetwork', 'NodeNetworkConfigurationPolicy']);
    expect(v.pinAddressesRole).toBeUndefined();
    expect(v.movedVmGuard).toBeUndefined();
  });

  const red: ClusterVmNetwork = { ...blue, name: 'red', index: 2, namespaces: ['tenant-red', 'tenant-yellow'], reach: { type: 'none' }, labels: { 'migrationmesh.dev/vm-network': 'red' } };

  test('two Layer2 networks: one guard, its binding over both networks\' namespaces, one Role per namespace', () => {
    const { objs } = of(red, blue);
    expect(objs.filter((o) => o.kind === 'ValidatingAdmissionPolicy' && moved(o))).toHaveLength(1);
    expect(bindingNamespaces(objs)).toEqual([[{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['tenant-blue', 'tenant-green', 'tenant-red', 'tenant-yellow'] }]]);
    expect(objs.filter((o) => o.kind === 'Role').map((o) => o.metadata.namespace)).toEqual(['tenant-blue', 'tenant-green', 'tenant-red', 'tenant-yellow']);
  });

  test('pinAddressesBy: a RoleBinding to the Role in each namespace of that network only, with RBAC\'s subject forms; none for a network without it', () => {
    const bound: ClusterVmNetwork = {
      ...blue, pinAddressesBy: [{ kind: 'User', name: 'alice@example.com' }, { kind: 'ServiceAccount', name: 'mover', namespace: 'ops' }, { kind: 'User', name: 'alice@example.com' }],
    };
    const { v, objs } = of(bound, red, vlan100);
    const bindings = objs.filter((o) => o.kind === 'RoleBinding');
    expect(bindings.map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual(['tenant-blue/migration-mesh-pin-addresses', 'tenant-green/migration-mesh-pin-addresses']);
    for (const b of bindings) {
      expect(b.roleRef).toEqual({ apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'migration-mesh-pin-addresses' });
      expect(b.subjects).toEqual([ // once each
        { apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'alice@example.com' },
        { kind: 'ServiceAccount', name: 'mover', namespace: 'ops' },
      ]);
    }
    expect(v.pinAddressesRole?.bindings).toHaveLength(2);
    const w = (o: any) => rolloutWave(o, new Set());
    const role = objs.find((o) => o.kind === 'Role' && o.metadata.namespace === 'tenant-blue');
    expect(w(bindings[0])).toBeGreaterThan(w(role));
    expect(stageOfWave(w(bindings[0])).name).toBe('vm-networks');
    expect(rolloutWave({ kind: 'RoleBinding', metadata: { name: 'migration-mesh-gateway-trust', namespace: 'kubevirt' } }, new Set())).toBe(2);
    expect(bindings.flatMap((o) => validateObject(o))).toEqual([]);
  });

  test('rollout: after the Namespaces they live in or select, in the VM-network stage; the policy before its binding', () => {
    const { objs } = of(blue, vlan100);
    const w = (kind: string, ns?: string) => rolloutWave(objs.find((o) => o.kind === kind && (ns === undefined || o.metadata.namespace === ns)
      && o.metadata.name !== 'migration-mesh-served-namespace-label'), new Set()); // that one comes before the Namespaces (its own tests)
    expect(w('Role', 'tenant-blue')).toBeGreaterThan(w('Namespace'));
    expect(w('ValidatingAdmissionPolicy')).toBeGreaterThan(w('Namespace'));
    expect(w('ValidatingAdmissionPolicyBinding')).toBeGreaterThan(w('ValidatingAdmissionPolicy'));
    for (const k of ['Role', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']) expect(stageOfWave(w(k)).name).toBe('vm-networks');
    // any other Role (the gateway's) keeps its early wave
    expect(rolloutWave({ kind: 'Role', metadata: { name: 'migration-mesh-gateway-trust', namespace: 'kubevirt' } }, new Set())).toBe(2);
  });
});

describe('shared objects', () => {
  const red: ClusterVmNetwork = {
    ...blue, name: 'red', index: 2, namespaces: ['tenant-red'],
    reach: { ...blue.reach as any, routeAdvertisements: { name: 'mm-red', frrConfigurationSelector: {} } }, labels: { 'migrationmesh.dev/vm-network': 'red' },
  };
  test('two EVPN networks on one VTEP: one VTEP object, one RouteAdvertisements each; the empty FRR selector selects every FRRConfiguration', () => {
    const c = chart();
    new VmNetworks(c, 'V', { networks: [blue, red] });
    const objs = json(c);
    expect(objs.filter((o) => o.kind === 'VTEP')).toHaveLength(1);
    expect(objs.filter((o) => o.kind === 'RouteAdvertisements').map((o) => o.metadata.name)).toEqual(['mm-blue', 'mm-red']);
    expect(objs.find((o) => o.metadata.name === 'mm-red').spec.frrConfigurationSelector).toEqual({});
  });
  test('one VTEP name with two different CIDR lists is refused, not emitted twice', () => {
    const other = { ...red, reach: { ...red.reach as any, vtepCidrs: ['100.64.9.0/24'] } };
    expect(() => new VmNetworks(chart(), 'V', { networks: [blue, other] })).toThrow(/VTEP fleet-vtep with other CIDRs/);
    expect(() => new VmNetworks(chart(), 'V', { networks: [blue, other] })).toThrow(expect.objectContaining({ problems: [expect.objectContaining({ code: 'plan-inconsistent' })] }));
  });
  test('one bridge-mapping policy name with two different mappings is refused', () => {
    const other: ClusterVmNetwork = { ...vlan100, name: 'vlan200', localnet: { ...vlan100.localnet!, physicalNetworkName: 'physnet-other' } };
    expect(() => new VmNetworks(chart(), 'V', { networks: [vlan100, other] })).toThrow(/NodeNetworkConfigurationPolicy mm-vlan100-bridge-mapping/);
  });
});

describe('each construct on its own, from its props and defaults', () => {
  test('ClusterUserDefinedNetwork: exactly one of layer2 and localnet, at least one namespace', () => {
    expect(() => new ClusterUserDefinedNetwork(chart(), 'N', { name: 'x', namespaces: ['a'] })).toThrow(/exactly one of layer2 and localnet/);
    expect(() => new ClusterUserDefinedNetwork(chart(), 'N', {
      name: 'x', namespaces: ['a'], layer2: { subnets: ['10.0.0.0/24'], mtu: 1400 }, localnet: { physicalNetworkName: 'p', mtu: 1500 },
    })).toThrow(/exactly one/);
    expect(() => new ClusterUserDefinedNetwork(chart(), 'N', { name: 'x', namespaces: [], layer2: { subnets: ['10.0.0.0/24'], mtu: 1400 } })).toThrow(/serves no namespace/);
  });
  test('ClusterUserDefinedNetwork defaults: persistent IPs on, no transport, no empty lists written; localnet with subnets is persistent', () => {
    const c = chart();
    new ClusterUserDefinedNetwork(c, 'A', { name: 'a', namespaces: ['n'], layer2: { subnets: ['10.0.0.0/24'], mtu: 1400, reservedSubnets: [] } });
    new ClusterUserDefinedNetwork(c, 'B', { name: 'b', namespaces: ['n'], localnet: { physicalNetworkName: 'p', mtu: 1500, subnets: ['192.168.1.0/24'], excludeSubnets: ['192.168.1.0/28'] } });
    const [a, b] = json(c);
    expect(a.spec.network).toEqual({ topology: 'Layer2', layer2: { role: 'Primary', subnets: ['10.0.0.0/24'], mtu: 1400, ipam: { lifecycle: 'Persistent' } } });
    expect(b.spec.network.localnet).toEqual({ role: 'Secondary', physicalNetworkName: 'p', mtu: 1500, ipam: { lifecycle: 'Persistent' }, subnets: ['192.168.1.0/24'], excludeSubnets: ['192.168.1.0/28'] });
    expect(json(c).flatMap((o) => validateObject(o))).toEqual([]);
  });
  test('BridgeMappingPolicy refuses a physical network name that cannot name the policy unless a name is given', () => {
    expect(() => new BridgeMappingPolicy(chart(), 'P', { physicalNetworkName: 'Physnet_VMs' }))
      .toThrow(expect.objectContaining({ name: 'InvalidPropsError', problems: [expect.objectContaining({ code: 'prop-invalid', path: 'physicalNetworkName' })] }));
    const c = chart();
    new BridgeMappingPolicy(c, 'P', { physicalNetworkName: 'Physnet_VMs', name: 'mm-vms-bridge-mapping' });
    expect(json(c)[0].spec.desiredState.ovn['bridge-mappings'][0].localnet).toBe('Physnet_VMs');
  });
  test('what the CRDs would refuse is refused here first: a node-selector key that is not a label key, a VTEP name that is not a DNS-1123 subdomain', () => {
    const code = (path: string) => expect.objectContaining({ problems: [expect.objectContaining({ code: 'prop-invalid', path })] });
    expect(() => new BridgeMappingPolicy(chart(), 'P', { physicalNetworkName: 'p', nodeSelector: { 'bad key!': '' } })).toThrow(code('nodeSelector.bad key!'));
    expect(() => new Vtep(chart(), 'V', { name: 'Fleet_VTEP', cidrs: ['100.64.0.0/24'] })).toThrow(code('name'));
    const c = chart();
    new BridgeMappingPolicy(c, 'P', { physicalNetworkName: 'p', nodeSelector: { 'node-role.kubernetes.io/worker': '', 'example.com/vms': 'yes' } });
    new Vtep(c, 'V', { name: 'fleet.vtep-1', cidrs: ['100.64.0.0/24'] });
    expect(json(c)).toHaveLength(2);
  });
  test('BridgeMappingPolicy defaults: br-ex, only the mapping, every node, the derived name', () => {
    const c = chart();
    const p = new BridgeMappingPolicy(c, 'P', { physicalNetworkName: 'physnet-ex' });
    expect(p.name).toBe('mm-physnet-ex-bridge-mapping');
    expect(json(c)[0].spec).toEqual({ desiredState: { ovn: { 'bridge-mappings': [{ localnet: 'physnet-ex', bridge: 'br-ex', state: 'present' }] } } });
    new BridgeMappingPolicy(c, 'Q', { physicalNetworkName: 'physnet-2', name: 'x', maxUnavailable: '25%' });
    expect(json(c)[1].spec.maxUnavailable).toBe('25%');
    expect(json(c).flatMap((o) => validateObject(o))).toEqual([]);
  });
  test('Vtep defaults to Unmanaged; RouteAdvertisements to every FRRConfiguration; PrimaryNetworkNamespace keeps the label over a user\'s', () => {
    const c = chart();
    new Vtep(c, 'V', { name: 'v', cidrs: ['100.64.0.0/24'] });
    new RouteAdvertisements(c, 'R', { name: 'r', networkLabels: { a: 'b' } });
    new PrimaryNetworkNamespace(c, 'N', { name: 'n', labels: { 'k8s.ovn.org/primary-user-defined-network': 'no', team: 'x' } });
    const [v, r, n] = json(c);
    expect(v.spec.mode).toBe('Unmanaged');
    expect(r.spec.frrConfigurationSelector).toEqual({});
    expect(r.spec.targetVRF).toBe('auto'); // each network in its own VRF, as EVPN needs
    expect(n.metadata.labels).toMatchObject({ 'k8s.ovn.org/primary-user-defined-network': '', team: 'x' });
    expect(json(c).flatMap((o) => validateObject(o))).toEqual([]);
  });
});

describe('Forklift NetworkMap entries for the VM networks (no hand edits)', () => {
  const { vmNetworkNadsOf, declaredNetworks, networkPairs } = require('../src/forklift/maps');
  const { ForkliftProblems } = require('../src/forklift/checks');
  const c = chart();
  new VmNetworks(c, 'V', { networks: [blue, vlan100] });
  const objs = json(c);

  test('a Localnet network gives a NAD per served namespace; a primary network none (its VMs use pod: {})', () => {
    expect(vmNetworkNadsOf(objs)).toEqual(['tenant-blue/vlan100', 'tenant-red/vlan100']);
  });

  test('each pair maps pod -> pod and every Localnet NAD to the same NAD on the target; one served on the source only is warned', () => {
    const fact = (name: string, index: number, nads: string[]) => ({ name, index, datapath: 'direct', featureGates: [], meshNads: [], vmNetworkNads: nads });
    const clusters = new Map([['a', fact('a', 0, vmNetworkNadsOf(objs))], ['b', fact('b', 1, ['tenant-blue/vlan100'])]]);
    const p = new ForkliftProblems();
    const nets = declaredNetworks(p, { hub: { cluster: 'a', namespace: 'openshift-mtv' } }, clusters);
    expect(networkPairs(p, 'a', 'b', nets, new Map())).toEqual([
      { source: { type: 'pod' }, destination: { type: 'pod' } },
      { source: { name: 'vlan100', namespace: 'tenant-blue' }, destination: { type: 'multus', name: 'vlan100', namespace: 'tenant-blue' } },
    ]);
    expect(p.warnings.map((w: any) => w.message)).toEqual([expect.stringContaining('tenant-red/vlan100 exists on a but not on b')]);
    expect(p.problems).toEqual([]);
  });
});
