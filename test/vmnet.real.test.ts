/**
 * The VM-network objects of issue 40 (item 6, the objects half) on a real kube-apiserver with the upstream CRDs of
 * test/fixtures/upstream/ovn-k and nmstate installed, CEL rules included (the real server evaluates x-kubernetes-validations):
 *  1. every VM-network object synthesized for every cluster of examples/vm-networks.fleet.yaml, server-side applied
 *     in rollout order, is accepted, read back as applied, and a second apply changes nothing;
 *  2. a table of objects the CRDs refuse (schema bounds and CEL rules): each one is refused by the real server AND
 *     the fleet that would produce it is refused by our checks before synthesis, with a stable problem code;
 *  3. one rule the CRD leaves to run time (excludeSubnets outside subnets: the CEL rule is commented out upstream,
 *     OVN-Kubernetes fails later): the server accepts the object and we refuse the fleet;
 *  4. the networks are immutable once created (Layer2/Localnet `self == oldSelf`): the server refuses a changed block
 *     on the created network, and our ledger refuses the fleet change before it is emitted;
 *  5. adding a cluster to the fleet: the existing clusters' objects apply over the created ones with no refusal and
 *     no write;
 *  6. with OpenShift's admission policy for the primary-network label installed (test/fixtures/admission, verbatim),
 *     our Namespace applied over an existing namespace without the label is refused by the cluster, never patched;
 *  7. a fleet naming who runs pin-addresses (`pinAddressesBy`): the emitted RoleBinding gives exactly the Role's verbs
 *     in the served namespace, as the server's SubjectAccessReview answers.
 * One API server per cluster of the example fleet, one etcd.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse, parseAllDocuments } from 'yaml';
import { App, Chart } from 'cdk8s';
import { KubeObject, crdsFor, differences, installCrds, serverSideApply } from './support/real-apply';
import { upstreamCrds } from './support/real-crds';
import { RealCluster, RealFleet } from './support/real-kube';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { parseFleetDocument, ledgerPathFor, loadLedgerFile } from '../src/fleet/load';
import { rolloutWave, stageOfWave } from '../src/delivery/rollout';
import { PrimaryNetworkNamespace } from '../index';

const FLEET = path.resolve(__dirname, '..', 'examples', 'vm-networks.fleet.yaml');
const rawFleet = (): any => parse(fs.readFileSync(FLEET, 'utf8'));
const ledger = () => loadLedgerFile(ledgerPathFor(FLEET));

/** The VM-network stage of each cluster, in rollout order, as synth emits it. */
function vmNetworkObjects(): Map<string, KubeObject[]> {
  const r = synthesizeFleet(parseFleetDocument(rawFleet()), { ledger: ledger() });
  return new Map([...r.objects].map(([c, objs]) => [c, (objs as KubeObject[]).filter((o) => stageOfWave(rolloutWave(o, new Set())).name === 'vm-networks')]));
}

/**
 * The codes our checks give a fleet (parse, validate, plan, synth): none when it synthesizes. Without the committed
 * ledger by default: the fleet declares the networks anew, as the object on the server is new; `{ledger: true}`
 * plans it against what was created.
 */
function ourCodes(patch: (spec: any) => void, opts: { ledger?: boolean } = {}): string[] {
  const raw = rawFleet();
  patch(raw.spec);
  try {
    synthesizeFleet(parseFleetDocument(raw), { ledger: opts.ledger ? ledger() : undefined });
    return [];
  } catch (e) {
    const problems = (e as { problems?: { code: string }[] }).problems;
    if (!problems) throw e;
    return problems.map((p) => p.code);
  }
}

const clone = <T>(x: T): T => structuredClone(x);

/** OpenShift's ValidatingAdmissionPolicy (and binding) that keeps the primary-network label as the namespace was created. */
const UDN_LABEL_POLICY = (parseAllDocuments(fs.readFileSync(path.join(__dirname, 'fixtures', 'admission', 'udn-admission-policy.yaml'), 'utf8'))
  .map((d) => d.toJS()) as KubeObject[]);
const LABEL = 'k8s.ovn.org/primary-user-defined-network';

/**
 * Admission policies take effect a moment after they are created: wait (at most 20 s) until adding the label to a
 * fresh probe namespace is refused (a fresh one each try, so a try that got through leaves nothing behind).
 */
async function policyActive(c: RealCluster): Promise<void> {
  for (let i = 0, deadline = Date.now() + 20_000; ; i++) {
    const name = `vap-probe-${i}`;
    await serverSideApply(c, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } }, 'platform-installer');
    const refused = await serverSideApply(c, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { [LABEL]: '' } } }, 'probe')
      .then(() => false, () => true);
    if (refused) return;
    if (Date.now() > deadline) throw new Error(`${c.name}: the primary-network label policy is not active after 20 s`);
    await new Promise((r) => setTimeout(r, 200));
  }
}
let objects: Map<string, KubeObject[]>;
let real: RealFleet;
const started = Date.now();

beforeAll(async () => {
  objects = vmNetworkObjects();
  real = await RealFleet.start([...objects.keys()]);
  const all = [...objects.values()].flat();
  const crds = crdsFor(all, upstreamCrds().map((c) => c.crd));
  expect(crds.map((c) => c.metadata.name).sort()).toEqual([
    'clusteruserdefinednetworks.k8s.ovn.org', 'nodenetworkconfigurationpolicies.nmstate.io', 'routeadvertisements.k8s.ovn.org', 'vteps.k8s.ovn.org',
  ]);
  await Promise.all([...real.clusters.values()].map((c) => installCrds(c, crds)));
  await Promise.all([...real.clusters.values()].map(async (c) => {
    for (const o of UDN_LABEL_POLICY) await serverSideApply(c, o, 'platform-installer');
    await policyActive(c);
  }));
}, 180_000);
afterAll(async () => {
  await real?.stop();
  console.log(`vmnet-real: ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

/** One synthesized object of a cluster, by kind and name. */
const pick = (cluster: string, kind: string, name: string): KubeObject => {
  const o = objects.get(cluster)!.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`${cluster} has no ${kind} ${name}`);
  return clone(o);
};

describe('the example fleet\'s VM-network objects on real API servers', () => {
  test('every cluster: every object accepted in rollout order, read back as applied; a second apply writes nothing', async () => {
    for (const [cluster, objs] of objects) {
      expect(objs.map((o) => o.kind)).toEqual(expect.arrayContaining(['Namespace', 'ClusterUserDefinedNetwork', 'NodeNetworkConfigurationPolicy', 'VTEP', 'RouteAdvertisements']));
      const server = real.cluster(cluster);
      const live: KubeObject[] = [];
      for (const o of objs) live.push(await serverSideApply(server, o));
      expect(differences(objs, live)).toEqual([]);
      const again: KubeObject[] = [];
      for (const o of objs) again.push(await serverSideApply(server, o));
      expect(again.map((o) => o.metadata.resourceVersion)).toEqual(live.map((o) => o.metadata.resourceVersion));
    }
  }, 120_000);
});

describe('other forms the fleet can declare, on the real servers', () => {
  test('a guest-owned localnet network (ipam disabled: no subnets, no excludeSubnets) and an IPv4-only primary network without EVPN are accepted', async () => {
    const raw = rawFleet();
    const v = raw.spec.vmNetworks[1];
    v.ipam = 'disabled';
    for (const k of ['subnets', 'reserved', 'allocation']) delete v[k];
    const b = raw.spec.vmNetworks[0];
    Object.assign(b, { subnets: ['10.50.0.0/16'], gateways: ['10.50.0.1'], infrastructure: ['10.50.0.0/20'], reach: { type: 'none' } });
    delete b.clusters;
    delete raw.spec.forklift; // its move of web-1 over blue would be refused with reach none (vmnet-move-no-reach)
    const r = synthesizeFleet(parseFleetDocument(raw), {});
    const c = [...objects.keys()][0];
    const objs = (r.objects.get(c) as KubeObject[]).filter((o) => o.kind === 'ClusterUserDefinedNetwork');
    const [blue, vlan] = ['blue', 'vlan100'].map((n) => objs.find((o) => o.metadata.name === n)!) as any[];
    expect(vlan.spec.network.localnet.ipam).toEqual({ mode: 'Disabled' });
    expect(vlan.spec.network.localnet.subnets).toBeUndefined();
    expect(blue.spec.network.transport).toBeUndefined();
    for (const o of [blue, vlan]) {
      const renamed = { ...o, metadata: { ...o.metadata, name: `accepted-${o.metadata.name}` } };
      const live = await serverSideApply(real.cluster(c), renamed);
      expect(differences([renamed], [live])).toEqual([]);
    }
  }, 60_000);
});

describe('who runs pin-addresses (pinAddressesBy), on the real servers', () => {
  test('the emitted RoleBinding gives the named user and ServiceAccount exactly the Role\'s verbs in the served namespace, and nothing in a localnet-only one', async () => {
    const raw = rawFleet();
    raw.spec.vmNetworks[0].pinAddressesBy = [{ kind: 'User', name: 'alice@example.com' }, { kind: 'ServiceAccount', name: 'mover', namespace: 'ops' }];
    const r = synthesizeFleet(parseFleetDocument(raw), { ledger: ledger() });
    const c = [...objects.keys()][0];
    const server = real.cluster(c);
    const stage = (r.objects.get(c) as KubeObject[]).filter((o) => stageOfWave(rolloutWave(o, new Set())).name === 'vm-networks');
    expect(stage.filter((o) => o.kind === 'RoleBinding').map((o) => `${o.metadata.namespace}/${o.metadata.name}`)).toEqual(['tenant-blue/migration-mesh-pin-addresses']);
    for (const o of stage) await serverSideApply(server, o);
    const allowed = async (user: string, namespace: string, verb: string, group: string, resource: string): Promise<boolean> => {
      const review = await server.request('POST', '/apis/authorization.k8s.io/v1/subjectaccessreviews', {
        apiVersion: 'authorization.k8s.io/v1', kind: 'SubjectAccessReview', spec: { user, resourceAttributes: { namespace, verb, group, resource } },
      });
      expect(review.status).toBe(201);
      return review.json.status.allowed === true;
    };
    for (const user of ['alice@example.com', 'system:serviceaccount:ops:mover']) {
      expect(await allowed(user, 'tenant-blue', 'patch', 'kubevirt.io', 'virtualmachines')).toBe(true);
      expect(await allowed(user, 'tenant-blue', 'delete', 'k8s.cni.cncf.io', 'ipamclaims')).toBe(true);
      expect(await allowed(user, 'tenant-blue', 'create', 'kubevirt.io', 'virtualmachines')).toBe(false); // not a verb the CLI uses
      expect(await allowed(user, 'tenant-blue', 'get', '', 'secrets')).toBe(false);
      expect(await allowed(user, 'tenant-red', 'patch', 'kubevirt.io', 'virtualmachines')).toBe(false); // served by the localnet network only
    }
    expect(await allowed('bob@example.com', 'tenant-blue', 'patch', 'kubevirt.io', 'virtualmachines')).toBe(false);
  }, 60_000);
});

describe('adding a cluster on the real servers', () => {
  test('the grown fleet\'s objects for the existing clusters apply over the created ones without a refusal (immutable blocks unchanged) and without a write', async () => {
    const raw = rawFleet();
    raw.spec.clusters.push({ name: 'par-1', nodes: 4, ovnKubernetes: { version: 'v1.3.0', ipamExtensions: true } });
    raw.spec.vmNetworks[0].clusters['par-1'] = { vtepCidrs: ['203.0.113.0/26'] };
    const grown = synthesizeFleet(parseFleetDocument(raw), { ledger: ledger() });
    expect([...grown.objects.keys()].sort()).toEqual(['ams-1', 'fra-1', 'par-1']);
    for (const cluster of objects.keys()) {
      const server = real.cluster(cluster);
      const mine = (grown.objects.get(cluster) as KubeObject[]).filter((o) => stageOfWave(rolloutWave(o, new Set())).name === 'vm-networks');
      const created = (o: KubeObject) => objects.get(cluster)!.find((x) => x.kind === o.kind && x.metadata.name === o.metadata.name)!;
      const before = await Promise.all(mine.map(async (o) => (await serverSideApply(server, created(o))).metadata.resourceVersion));
      const after = await Promise.all(mine.map(async (o) => (await serverSideApply(server, o)).metadata.resourceVersion));
      expect(after).toEqual(before);
    }
  }, 60_000);
});

interface Refusal {
  readonly what: string;
  /** Which synthesized object to break (of the first cluster), and how. */
  readonly kind: string;
  readonly name: string;
  readonly breakObject: (o: any) => void;
  /** What the real server says (status 422). */
  readonly server: RegExp;
  /** The fleet change that would produce it, and the code our checks give it. */
  readonly breakFleet: (spec: any) => void;
  readonly code: string;
}

const l2 = (o: any) => o.spec.network.layer2;
const ln = (o: any) => o.spec.network.localnet;
const blue = (spec: any) => spec.vmNetworks[0];
const vlan = (spec: any) => spec.vmNetworks[1];

const REFUSALS: Refusal[] = [
  {
    what: 'a Localnet network with role Primary', kind: 'ClusterUserDefinedNetwork', name: 'vlan100',
    breakObject: (o) => { ln(o).role = 'Primary'; }, server: /spec\.network\.localnet\.role: Unsupported value: "Primary"/,
    breakFleet: (s) => { vlan(s).role = 'primary'; }, code: 'unknown-field',
  },
  {
    what: 'a Layer2 network with persistent IPAM and no subnets', kind: 'ClusterUserDefinedNetwork', name: 'blue',
    breakObject: (o) => { for (const k of ['subnets', 'defaultGatewayIPs', 'infrastructureSubnets', 'reservedSubnets']) delete l2(o)[k]; },
    server: /Subnets is required with ipam.mode is Enabled or unset/,
    breakFleet: (s) => { for (const k of ['subnets', 'gateways', 'infrastructure']) delete blue(s)[k]; }, code: 'vmnet-topology-field',
  },
  {
    // a /29 of infrastructure in a /16 leaves each cluster one reserved entry per bit of the rest (72 here)
    what: 'more than 25 reservedSubnets', kind: 'ClusterUserDefinedNetwork', name: 'blue',
    breakObject: (o) => { l2(o).reservedSubnets = Array.from({ length: 26 }, (_, i) => `10.50.17.${i * 4}/32`); },
    server: /reservedSubnets: Too many: 26: must have at most 25 items/,
    breakFleet: (s) => { blue(s).infrastructure = ['10.50.0.0/29', 'fd50::/125']; }, code: 'vmnet-limit',
  },
  {
    what: 'reservedSubnets outside the subnets', kind: 'ClusterUserDefinedNetwork', name: 'blue',
    breakObject: (o) => { l2(o).reservedSubnets = [...l2(o).reservedSubnets, '10.99.0.0/24']; },
    server: /reservedSubnets must be subnetworks of the networks specified in the subnets field/,
    breakFleet: (s) => { blue(s).reserved = ['10.99.0.0/24']; }, code: 'vmnet-outside-subnet',
  },
  {
    what: 'an MTU below the CRD minimum', kind: 'ClusterUserDefinedNetwork', name: 'blue',
    breakObject: (o) => { l2(o).mtu = 500; }, server: /spec\.network\.layer2\.mtu: Invalid value: 500: spec\.network\.layer2\.mtu in body should be greater than or equal to 576/,
    breakFleet: (s) => { blue(s).mtu = 500; }, code: 'schema-invalid',
  },
  {
    what: 'an MTU above the CRD maximum', kind: 'ClusterUserDefinedNetwork', name: 'vlan100',
    breakObject: (o) => { ln(o).mtu = 70000; }, server: /should be less than or equal to 65536/,
    breakFleet: (s) => { vlan(s).mtu = 70000; }, code: 'schema-invalid',
  },
  {
    what: 'an MTU under 1280 on a network with an IPv6 subnet', kind: 'ClusterUserDefinedNetwork', name: 'blue',
    breakObject: (o) => { l2(o).mtu = 1200; }, server: /MTU should be greater than or equal to 1280 when IPv6 subnet is used/,
    breakFleet: (s) => { blue(s).mtu = 1200; }, code: 'mtu-too-small',
  },
  {
    what: 'a gateway outside the infrastructure subnets', kind: 'ClusterUserDefinedNetwork', name: 'blue',
    breakObject: (o) => { l2(o).defaultGatewayIPs = ['10.50.16.9', 'fd50::1']; }, server: /defaultGatewayIPs have to belong to infrastructureSubnets/,
    breakFleet: (s) => { blue(s).gateways = ['10.50.16.9', 'fd50::1']; }, code: 'vmnet-gateway-infra',
  },
  {
    what: 'one gateway for two subnet families', kind: 'ClusterUserDefinedNetwork', name: 'blue',
    breakObject: (o) => { l2(o).defaultGatewayIPs = ['10.50.0.1']; }, server: /defaultGatewayIPs must be specified for all IP families/,
    breakFleet: (s) => { blue(s).gateways = ['10.50.0.1']; }, code: 'vmnet-gateway-count',
  },
  {
    what: 'infrastructure overlapping a reserved range', kind: 'ClusterUserDefinedNetwork', name: 'blue',
    breakObject: (o) => { l2(o).reservedSubnets = [...l2(o).reservedSubnets, '10.50.0.4/30']; }, server: /infrastructureSubnets and reservedSubnets must not overlap/,
    breakFleet: (s) => { blue(s).reserved = ['10.50.0.4/30']; }, code: 'vmnet-infra-overlap',
  },
  {
    what: 'EVPN transport on a Localnet network', kind: 'ClusterUserDefinedNetwork', name: 'vlan100',
    breakObject: (o) => { o.spec.network.transport = 'EVPN'; o.spec.network.evpn = { vtep: 'fleet-vtep', macVRF: { vni: 5002 } }; },
    server: /transport 'EVPN' is only supported for Layer2 or Layer3 primary networks/,
    breakFleet: (s) => { vlan(s).reach = { type: 'evpn', vni: 5002, vtep: 'fleet-vtep', vtepCidrs: ['192.0.2.0/26'] }; }, code: 'vmnet-topology-field',
  },
  {
    what: 'a route target without its colon', kind: 'ClusterUserDefinedNetwork', name: 'blue',
    breakObject: (o) => { o.spec.network.evpn.macVRF.routeTarget = '65000-5001'; }, server: /RT must contain exactly one colon/,
    breakFleet: (s) => { blue(s).reach.routeTarget = '65000-5001'; }, code: 'vmnet-route-target',
  },
  {
    what: 'a route target with a 4-byte AS and a local part over 65535', kind: 'ClusterUserDefinedNetwork', name: 'blue',
    breakObject: (o) => { o.spec.network.evpn.macVRF.routeTarget = '70000:70000'; }, server: /RT with 4-byte ASN global administrator must have format GHJK:MN/,
    breakFleet: (s) => { blue(s).reach.routeTarget = '70000:70000'; }, code: 'vmnet-route-target',
  },
  {
    what: 'a VNI over 24 bits', kind: 'ClusterUserDefinedNetwork', name: 'blue',
    breakObject: (o) => { o.spec.network.evpn.macVRF.vni = 16_777_216; }, server: /should be less than or equal to 16777215/,
    breakFleet: (s) => { blue(s).reach.vni = 16_777_216; }, code: 'schema-invalid',
  },
  {
    what: 'VLAN 4095', kind: 'ClusterUserDefinedNetwork', name: 'vlan100',
    breakObject: (o) => { ln(o).vlan.access.id = 4095; }, server: /should be less than or equal to 4094/,
    breakFleet: (s) => { vlan(s).vlan = 4095; }, code: 'schema-invalid',
  },
  {
    what: 'a physical network name with a colon', kind: 'ClusterUserDefinedNetwork', name: 'vlan100',
    breakObject: (o) => { ln(o).physicalNetworkName = 'physnet:vms'; }, server: /physicalNetworkName cannot contain `,` or `:` characters/,
    breakFleet: (s) => { vlan(s).physicalNetworkName = 'physnet:vms'; }, code: 'schema-invalid',
  },
  {
    what: 'a VTEP CIDR with host bits', kind: 'VTEP', name: 'fleet-vtep',
    breakObject: (o) => { o.spec.cidrs = ['192.0.2.1/26']; }, server: /CIDR must be a valid network address/,
    breakFleet: (s) => { blue(s).clusters['fra-1'].vtepCidrs = ['192.0.2.1/26']; }, code: 'vmnet-vtep',
  },
  {
    what: 'overlapping VTEP CIDRs', kind: 'VTEP', name: 'fleet-vtep',
    breakObject: (o) => { o.spec.cidrs = ['192.0.2.0/26', '192.0.2.0/27']; }, server: /CIDRs must not overlap with each other/,
    breakFleet: (s) => { blue(s).clusters['fra-1'].vtepCidrs = ['192.0.2.0/26', '192.0.2.0/27']; }, code: 'vmnet-vtep',
  },
  // the two below are refused by the server but not yet by our checks (reported to the lead): the fleet schema takes any
  // nodeSelector key and any VTEP name
  {
    what: 'a bridge-mapping node selector whose key is not a qualified name', kind: 'NodeNetworkConfigurationPolicy', name: 'mm-vlan100-bridge-mapping',
    breakObject: (o) => { o.spec.nodeSelector = { 'bad key!': '' }; }, server: /nodeSelector keys must be valid qualified names/,
    breakFleet: (s) => { vlan(s).nodeSelector = { 'bad key!': '' }; }, code: 'schema-invalid',
  },
  {
    what: 'a VTEP name that is not a DNS-1123 subdomain', kind: 'VTEP', name: 'fleet-vtep',
    breakObject: (o) => { o.metadata.name = 'Fleet_VTEP'; }, server: /metadata\.name: Invalid value: "Fleet_VTEP"/,
    breakFleet: (s) => { blue(s).reach.vtep = 'Fleet_VTEP'; }, code: 'schema-invalid',
  },
];

describe('objects the CRDs refuse: refused by the real server, and their fleets by our checks before synthesis', () => {
  const first = () => [...objects.keys()][0];
  test.each(REFUSALS.map((r, i) => [r.what, r, i] as const))('%s', async (_what, r, i) => {
    const o: any = pick(first(), r.kind, r.name);
    o.metadata.name = `refused-${i}`;
    r.breakObject(o);
    const err = await serverSideApply(real.cluster(first()), o).then(() => undefined, (e: Error & { status?: number }) => e);
    expect(err?.status).toBe(422);
    expect(err?.message).toMatch(r.server);
    expect(ourCodes(r.breakFleet)).toContain(r.code);
  }, 60_000);

  test('excludeSubnets outside the subnets: the CRD\'s rule is commented out upstream, so the server accepts what OVN-Kubernetes fails on at run time; we refuse it', async () => {
    const o: any = pick(first(), 'ClusterUserDefinedNetwork', 'vlan100');
    o.metadata.name = 'accepted-exclude-outside';
    ln(o).excludeSubnets = [...ln(o).excludeSubnets, '10.99.0.0/24'];
    await expect(serverSideApply(real.cluster(first()), o)).resolves.toMatchObject({ kind: 'ClusterUserDefinedNetwork' });
    expect(ourCodes((s) => { vlan(s).reserved = ['10.99.0.0/24']; })).toContain('vmnet-outside-subnet');
  }, 60_000);

  test('a created network is immutable: the server refuses a changed Layer2 or Localnet block; our ledger refuses the fleet change', async () => {
    const c = first();
    const b: any = pick(c, 'ClusterUserDefinedNetwork', 'blue');
    l2(b).mtu = 1450;
    await expect(serverSideApply(real.cluster(c), b)).rejects.toThrow(/Layer2 is immutable/);
    const v: any = pick(c, 'ClusterUserDefinedNetwork', 'vlan100');
    ln(v).vlan.access.id = 200;
    await expect(serverSideApply(real.cluster(c), v)).rejects.toThrow(/Localnet is immutable/);
    expect(ourCodes((s) => { blue(s).mtu = 1450; }, { ledger: true })).toEqual(['vmnet-immutable-change']);
    expect(ourCodes((s) => { vlan(s).vlan = 200; }, { ledger: true })).toEqual(['vmnet-immutable-change', 'vmnet-immutable-change']); // each cluster's VLAN
    expect(ourCodes((s) => { blue(s).mtu = 1450; })).toEqual([]); // the same fleet declared anew is fine
  }, 60_000);
});

describe('the primary-network label only counts at creation: the cluster refuses it on an existing namespace', () => {
  test('our Namespace over an existing namespace without the label is refused by OpenShift\'s admission policy; the namespace is left as it was', async () => {
    const c = real.cluster([...objects.keys()][0]);
    await serverSideApply(c, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'tenant-late', labels: { team: 'late' } } }, 'platform-installer');
    const chart = new Chart(new App(), 'x');
    new PrimaryNetworkNamespace(chart, 'N', { name: 'tenant-late' });
    const ours = chart.toJson()[0] as KubeObject;
    await expect(serverSideApply(c, ours)).rejects.toThrow(/The 'k8s\.ovn\.org\/primary-user-defined-network' label cannot be added\/removed after the namespace was created/);
    const live = (await c.request('GET', '/api/v1/namespaces/tenant-late')).json;
    expect(live.metadata.labels).toEqual({ 'kubernetes.io/metadata.name': 'tenant-late', team: 'late' });
  }, 60_000);

  test('a namespace we created with the label takes our apply again unchanged (the example\'s tenant-blue on every cluster)', async () => {
    for (const [cluster, objs] of objects) {
      const ns = objs.find((o) => o.kind === 'Namespace')!;
      const live = await serverSideApply(real.cluster(cluster), ns);
      expect((live.metadata as { labels?: Record<string, string> }).labels?.[LABEL]).toBe('');
    }
  }, 60_000);
});
