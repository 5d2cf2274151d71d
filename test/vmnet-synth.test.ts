/**
 * The example fleet with VM networks (examples/vm-networks.fleet.yaml, issue 40) through synthesis: the objects each
 * cluster gets, what must be the same everywhere and what differs, each cluster's dynamic range (what OVN-Kubernetes
 * may hand out by itself) disjoint from every other cluster's and from the mobile slice, computed from the emitted
 * CUDNs; adding a cluster moves nothing; Forklift maps every VM network; the GitOps stage and its protection.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { parseFleetDocument, ledgerPathFor, loadLedgerFile } from '../src/fleet/load';
import { Interval, mergeIntervals, overlaps, parseAddr, parseCidr, subtractIntervals } from '../src/base/ip';
import { validateObject } from './support/schemas';

const FLEET = path.resolve(__dirname, '..', 'examples', 'vm-networks.fleet.yaml');
const rawFleet = (): any => parse(fs.readFileSync(FLEET, 'utf8'));
const synth = (raw: any = rawFleet(), ledger = loadLedgerFile(ledgerPathFor(FLEET))) => synthesizeFleet(parseFleetDocument(raw), { ledger });

const cidr = (t: string): Interval => { const r = parseCidr(t); if (!r.ok) throw new Error(`not a CIDR: ${t}`); return r.cidr; };
const vmKinds = new Set(['ClusterUserDefinedNetwork', 'NodeNetworkConfigurationPolicy', 'VTEP', 'RouteAdvertisements']);
/** What keeps a moved VM's address from coming back twice (issue 40 item 4), emitted with a primary Layer2 network. */
const guardKeys = ['Role/migration-mesh-pin-addresses', 'ValidatingAdmissionPolicy/migration-mesh-moved-vm-halted', 'ValidatingAdmissionPolicyBinding/migration-mesh-moved-vm-halted'];
const isGuard = (o: any) => guardKeys.includes(`${o.kind}/${o.metadata.name}`);
const vmObjects = (objs: any[]) => objs.filter((o) => vmKinds.has(o.kind) || isGuard(o) || (o.kind === 'Namespace' && o.metadata.labels?.['k8s.ovn.org/primary-user-defined-network'] !== undefined));
const cudn = (objs: any[], name: string) => objs.find((o) => o.kind === 'ClusterUserDefinedNetwork' && o.metadata.name === name);

/** What a cluster's OVN-Kubernetes may hand out by itself on one network: its subnets minus everything reserved. */
function dynamicRange(o: any): Interval[] {
  const n = o.spec.network;
  const block = n.layer2 ?? n.localnet;
  const held = [...(block.reservedSubnets ?? []), ...(block.infrastructureSubnets ?? []), ...(block.excludeSubnets ?? [])].map(cidr);
  return subtractIntervals(mergeIntervals(block.subnets.map(cidr)), mergeIntervals(held));
}

describe('examples/vm-networks.fleet.yaml', () => {
  const r = synth();
  const clusters = [...r.objects.keys()];

  test('each cluster: the primary namespace, the VTEP, the bridge mapping, the pin-addresses Role, the moved-VM guard, both CUDNs and the RouteAdvertisements, in rollout order', () => {
    expect(clusters.sort()).toEqual(['ams-1', 'fra-1']);
    for (const c of clusters) {
      const mine = vmObjects(r.objects.get(c)!);
      expect(mine.map((o) => `${o.kind}/${o.metadata.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata.name}`)).toEqual([
        'Namespace/tenant-blue', 'VTEP/fleet-vtep', 'NodeNetworkConfigurationPolicy/mm-vlan100-bridge-mapping',
        'Role/tenant-blue/migration-mesh-pin-addresses', 'ValidatingAdmissionPolicy/migration-mesh-moved-vm-halted',
        'ClusterUserDefinedNetwork/blue', 'ClusterUserDefinedNetwork/vlan100', 'ValidatingAdmissionPolicyBinding/migration-mesh-moved-vm-halted',
        'RouteAdvertisements/mm-blue',
      ]);
      const all = r.objects.get(c)!;
      expect(all.slice(all.length - mine.length)).toEqual(mine); // the last stage
      expect(mine.flatMap((o) => validateObject(o))).toEqual([]);
    }
  });

  test('the same network on every cluster: name, topology, subnets, MTU, gateway, infrastructure, EVPN; only the reserved slices and VTEP CIDRs differ', () => {
    const same = (o: any) => {
      const n = structuredClone(o.spec.network);
      delete n.layer2?.reservedSubnets;
      delete n.localnet?.excludeSubnets;
      return n;
    };
    for (const net of ['blue', 'vlan100']) {
      const [a, b] = clusters.map((c) => cudn(r.objects.get(c)!, net));
      expect(same(a)).toEqual(same(b));
      expect(a.spec.namespaceSelector).toEqual(b.spec.namespaceSelector);
    }
    const blue = cudn(r.objects.get('fra-1')!, 'blue').spec.network;
    expect(blue.layer2).toMatchObject({ role: 'Primary', mtu: 1400, ipam: { lifecycle: 'Persistent' }, defaultGatewayIPs: ['10.50.0.1', 'fd50::1'] });
    expect(blue.evpn).toEqual({ vtep: 'fleet-vtep', macVRF: { vni: 5001, routeTarget: '65000:5001' } });
    const vtep = (c: string) => r.objects.get(c)!.find((o) => o.kind === 'VTEP').spec.cidrs;
    expect([vtep('fra-1'), vtep('ams-1')]).toEqual([['192.0.2.0/26'], ['198.51.100.0/26']]);
  });

  test('every cluster\'s dynamic range is disjoint from every other\'s and from the mobile slice; mobile addresses are reserved everywhere', () => {
    const ledger = r.ledger.vmNetworks!;
    for (const net of ['blue', 'vlan100']) {
      const ranges = clusters.map((c) => dynamicRange(cudn(r.objects.get(c)!, net)));
      for (const x of ranges) expect(x.length).toBeGreaterThan(0);
      for (let i = 0; i < ranges.length; i++) {
        for (let j = i + 1; j < ranges.length; j++) for (const a of ranges[i]) for (const b of ranges[j]) expect(overlaps(a, b)).toBe(false);
      }
      const mobile = (ledger[net]!.subnets ?? []).map((s: any) => cidr(s.mobile));
      for (const range of ranges) for (const a of range) for (const m of mobile) expect(overlaps(a, m)).toBe(false);
      expect(mobile).toHaveLength(net === 'blue' ? 2 : 1); // one mobile slice per subnet
    }
    const addresses = Object.values(ledger.blue.vms ?? {}).flat() as string[];
    expect(addresses).toHaveLength(4); // web-1 and db-1, one per family
    for (const c of clusters) {
      const range = dynamicRange(cudn(r.objects.get(c)!, 'blue'));
      for (const t of addresses) {
        const a = parseAddr(t)!;
        expect(range.some((i) => i.family === a.family && i.start <= a.value && a.value <= i.end)).toBe(false);
      }
    }
  });

  test('adding a cluster moves nothing: the existing clusters\' VM-network objects stay byte for byte, the mobile addresses stay', () => {
    const grown = rawFleet();
    grown.spec.clusters.push({ name: 'par-1', nodes: 4, ovnKubernetes: { version: 'v1.3.0', ipamExtensions: true } });
    grown.spec.vmNetworks[0].clusters['par-1'] = { vtepCidrs: ['203.0.113.0/26'] };
    const after = synth(grown, r.ledger);
    for (const c of clusters) expect(vmObjects(after.objects.get(c)!)).toEqual(vmObjects(r.objects.get(c)!));
    expect(after.ledger.vmNetworks!.blue.vms).toEqual(r.ledger.vmNetworks!.blue.vms);
    const ranges = [...after.objects.keys()].map((c) => dynamicRange(cudn(after.objects.get(c)!, 'blue')));
    for (const a of ranges[2]) for (const b of [...ranges[0], ...ranges[1]]) expect(overlaps(a, b)).toBe(false);
  });

  test('Forklift maps every VM network of a move\'s pair: pod -> pod for the primary network, each namespace\'s localnet NAD to the same NAD', () => {
    const pair = r.forklift.plan!.pairs.find((p) => p.from === 'fra-1' && p.to === 'ams-1')!;
    expect(pair.networks).toEqual([
      { source: { type: 'pod' }, destination: { type: 'pod' } },
      { source: { name: 'vlan100', namespace: 'tenant-blue' }, destination: { type: 'multus', name: 'vlan100', namespace: 'tenant-blue' } },
      { source: { name: 'vlan100', namespace: 'tenant-red' }, destination: { type: 'multus', name: 'vlan100', namespace: 'tenant-red' } },
    ]);
    const map = parse(r.files.get('_forklift/NetworkMap.openshift-mtv.fra-1-to-ams-1.yaml') ?? [...r.files].find(([k]) => k.includes('NetworkMap'))![1]);
    expect(map.spec.map).toHaveLength(3);
  });

  test('with Argo CD: waves 6-10 after KubeVirt\'s 5, in the order of what names what; the primary namespace is never pruned or deleted', () => {
    const raw = rawFleet();
    raw.spec.gitops = { repoURL: 'https://git.example/infra.git', argocd: {} };
    const g = synth(raw, r.ledger);
    const wave = (f: string) => Number(parse(g.files.get(`fra-1/${f}`)!).metadata.annotations['argocd.argoproj.io/sync-wave']);
    expect(wave('KubeVirt.kubevirt.kubevirt.yaml')).toBe(5);
    expect([wave('Namespace.tenant-blue.yaml'), wave('VTEP.fleet-vtep.yaml'), wave('NodeNetworkConfigurationPolicy.mm-vlan100-bridge-mapping.yaml'),
      wave('ClusterUserDefinedNetwork.blue.yaml'), wave('ClusterUserDefinedNetwork.vlan100.yaml'), wave('RouteAdvertisements.mm-blue.yaml')]).toEqual([7, 8, 8, 9, 9, 10]);
    expect([wave('Role.tenant-blue.migration-mesh-pin-addresses.yaml'), wave('ValidatingAdmissionPolicy.migration-mesh-moved-vm-halted.yaml'),
      wave('ValidatingAdmissionPolicyBinding.migration-mesh-moved-vm-halted.yaml')]).toEqual([8, 8, 9]); // after the namespace they live in or select
    // the served-namespace guard before the Namespaces: in force when our Namespace meets an existing one
    expect([wave('ValidatingAdmissionPolicy.migration-mesh-served-namespace-label.yaml'), wave('ValidatingAdmissionPolicyBinding.migration-mesh-served-namespace-label.yaml')]).toEqual([6, 6]);
    expect(parse(g.files.get('fra-1/Namespace.tenant-blue.yaml')!).metadata.annotations['argocd.argoproj.io/sync-options']).toBe('Prune=false,Delete=false');
    expect(parse(g.files.get('fra-1/ClusterUserDefinedNetwork.blue.yaml')!).metadata.annotations['argocd.argoproj.io/sync-options']).toBe('Prune=false,Delete=false'); // issue 50: VMs run on it
  });

  test('a cluster that does not serve a network gets none of its objects, and a move to it is warned that the localnet NADs have no counterpart', () => {
    const raw = rawFleet();
    raw.spec.vmNetworks[1].clusters = { 'ams-1': { served: false } };
    raw.spec.vmNetworkDeletions = [{ network: 'vlan100', clusters: ['ams-1'] }]; // it served it: said explicitly (issue 50 item 2)
    const g = synth(raw, r.ledger);
    expect(vmObjects(g.objects.get('ams-1')!).map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'Namespace/tenant-blue', 'VTEP/fleet-vtep', ...guardKeys.slice(0, 2), 'ClusterUserDefinedNetwork/blue', guardKeys[2], 'RouteAdvertisements/mm-blue',
    ]);
    expect(vmObjects(g.objects.get('fra-1')!)).toEqual(vmObjects(r.objects.get('fra-1')!)); // its slot and split stay
    expect(g.forklift.plan!.pairs[0].networks).toEqual([{ source: { type: 'pod' }, destination: { type: 'pod' } }]);
    expect(g.forklift.warnings.filter((w) => w.code === 'forklift/network-unmapped').map((w) => w.message)).toEqual([
      expect.stringContaining('tenant-blue/vlan100 exists on fra-1 but not on ams-1'), expect.stringContaining('tenant-red/vlan100 exists on fra-1 but not on ams-1'),
    ]);
  });

  test('the guard binds, and the Role lives in, exactly the namespaces blue serves (not tenant-red, which only the localnet network serves)', () => {
    for (const c of clusters) {
      const objs = r.objects.get(c)!;
      const binding = objs.find((o) => o.kind === 'ValidatingAdmissionPolicyBinding' && o.metadata.name === 'migration-mesh-moved-vm-halted');
      expect(binding.spec.matchResources.namespaceSelector.matchExpressions).toEqual([{ key: 'kubernetes.io/metadata.name', operator: 'In', values: ['tenant-blue'] }]);
      expect(binding.spec.policyName).toBe(objs.find((o) => o.kind === 'ValidatingAdmissionPolicy' && o.metadata.name === binding.metadata.name).metadata.name);
      const served = objs.find((o) => o.kind === 'ValidatingAdmissionPolicy' && o.metadata.name === 'migration-mesh-served-namespace-label');
      expect(served.spec.matchConstraints.resourceRules[0].resourceNames).toEqual(['tenant-blue']);
      expect(objs.filter((o) => o.kind === 'Role' && o.metadata.name === 'migration-mesh-pin-addresses').map((o) => o.metadata.namespace)).toEqual(['tenant-blue']);
      expect(objs.filter((o) => o.kind === 'RoleBinding').map((o) => o.roleRef.name)).not.toContain('migration-mesh-pin-addresses'); // bound by the user
    }
  });

  test('a cluster that serves only the localnet network gets neither the guard nor the Role; the other keeps both', () => {
    const raw = rawFleet();
    raw.spec.vmNetworks[0].clusters['ams-1'] = { served: false };
    raw.spec.vmNetworkDeletions = [{ network: 'blue', clusters: ['ams-1'] }];
    raw.spec.forklift.moves = []; // the example's move goes to ams-1 over blue, which ams-1 no longer serves
    const g = synth(raw, r.ledger);
    expect(g.objects.get('ams-1')!.filter(isGuard)).toEqual([]);
    expect(vmObjects(g.objects.get('ams-1')!).map((o) => o.kind)).toEqual(['NodeNetworkConfigurationPolicy', 'ClusterUserDefinedNetwork']);
    expect(g.objects.get('fra-1')!.filter(isGuard).map((o) => `${o.kind}/${o.metadata.name}`)).toEqual(guardKeys);
  });

  test('pinAddressesBy: each cluster binds the Role to the named subjects in blue\'s namespace, after the Role (Argo CD wave 9)', () => {
    const raw = rawFleet();
    raw.spec.vmNetworks[0].pinAddressesBy = [{ kind: 'Group', name: 'vm-movers' }];
    raw.spec.gitops = { repoURL: 'https://git.example/infra.git', argocd: {} };
    const g = synth(raw, r.ledger);
    for (const c of clusters) {
      const b = parse(g.files.get(`${c}/RoleBinding.tenant-blue.migration-mesh-pin-addresses.yaml`)!);
      expect(b.subjects).toEqual([{ apiGroup: 'rbac.authorization.k8s.io', kind: 'Group', name: 'vm-movers' }]);
      expect(b.roleRef.name).toBe('migration-mesh-pin-addresses');
      const wave = (f: string) => Number(parse(g.files.get(`${c}/${f}`)!).metadata.annotations['argocd.argoproj.io/sync-wave']);
      expect([wave('Role.tenant-blue.migration-mesh-pin-addresses.yaml'), wave('RoleBinding.tenant-blue.migration-mesh-pin-addresses.yaml')]).toEqual([8, 9]);
    }
    expect([...r.files.keys()].filter((k) => k.includes('RoleBinding.tenant-blue'))).toEqual([]); // the example names nobody: unbound
  });

  test('with Flux: a 35-vmnet-guard stage, then 40-vm-networks, after kubevirt; the primary namespace is never pruned', () => {
    const raw = rawFleet();
    raw.spec.gitops = { flux: { sourceRef: { name: 'infra' } } };
    const g = synth(raw, r.ledger);
    expect(parse(g.files.get('fra-1/kustomization.yaml')!).resources).toEqual(['10-gateway', '20-network', '30-kubevirt', '35-vmnet-guard', '40-vm-networks']);
    // Flux applies every Namespace of a Kustomization before its other objects: the guard must be a stage before them
    expect(parse(g.files.get('fra-1/35-vmnet-guard/kustomization.yaml')!).resources).toEqual([
      'ValidatingAdmissionPolicy.migration-mesh-served-namespace-label.yaml', 'ValidatingAdmissionPolicyBinding.migration-mesh-served-namespace-label.yaml',
    ]);
    expect(parse(g.files.get('fra-1/40-vm-networks/kustomization.yaml')!).resources).toEqual([
      'Namespace.tenant-blue.yaml', 'VTEP.fleet-vtep.yaml', 'NodeNetworkConfigurationPolicy.mm-vlan100-bridge-mapping.yaml',
      'Role.tenant-blue.migration-mesh-pin-addresses.yaml', 'ValidatingAdmissionPolicy.migration-mesh-moved-vm-halted.yaml',
      'ClusterUserDefinedNetwork.blue.yaml', 'ClusterUserDefinedNetwork.vlan100.yaml', 'ValidatingAdmissionPolicyBinding.migration-mesh-moved-vm-halted.yaml',
      'RouteAdvertisements.mm-blue.yaml',
    ]);
    const ks = [...g.files].filter(([k]) => k.startsWith('_gitops/flux/Kustomization.')).map(([, v]) => parse(v));
    const vm = ks.find((k) => k.metadata.name === 'vmnet-fra-1-vm-networks');
    expect(vm.spec.dependsOn).toEqual([{ name: 'vmnet-fra-1-vmnet-guard' }]);
    expect(ks.find((k) => k.metadata.name === 'vmnet-fra-1-vmnet-guard').spec.dependsOn).toEqual([{ name: 'vmnet-fra-1-kubevirt' }]);
    expect(parse(g.files.get('fra-1/40-vm-networks/Namespace.tenant-blue.yaml')!).metadata.annotations['kustomize.toolkit.fluxcd.io/prune']).toBe('disabled');
    const objects = [...g.files].filter(([k]) => k.endsWith('.yaml') && !k.endsWith('kustomization.yaml') && !k.includes('/drift/')).map(([k, v]) => [k, parse(v)] as const);
    expect(objects.flatMap(([k, o]) => validateObject(o).map((e) => `${k}: ${e}`))).toEqual([]); // Flux's Kustomizations included
  });
});
