/**
 * Issue #29 item 1: a cluster that enforces KubeVirt's own NetworkPolicies (or any default-deny) gets
 * exactly the allow-policies the fleet's paths need. Meaning, not shape: every emitted policy is run,
 * beside a model of the declared policies, through an evaluator of NetworkPolicy semantics
 * (test/support/network-policy-eval.ts) for every flow the fleet needs (allowed) and flows it must not
 * open (denied).
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { FleetDocument } from '../src/fleet/schema';
import { ClusterPlan, FleetPlan } from '../src/addressing/fleet-plan';
import { planReport, renderPlanTable } from '../src/report/plan-report';
import { baseFleet, mutate, problemsOf } from './support/fleets';
import { Endpoint, EvalContext, evaluate } from './support/network-policy-eval';
import { describeSchema, validateObject } from './support/schemas';

const KV = 'kubevirt';
const MESH = 'migration-mesh';
const NAMESPACES: EvalContext['namespaces'] = {
  [KV]: { 'kubernetes.io/metadata.name': KV },
  [MESH]: { 'kubernetes.io/metadata.name': MESH },
  default: { 'kubernetes.io/metadata.name': 'default' },
};
const NP: EvalContext = { namespaces: NAMESPACES, kind: 'NetworkPolicy' };
const MNP: EvalContext = { namespaces: NAMESPACES, kind: 'MultiNetworkPolicy' };

/** KubeVirt's kubevirt-network-policies.yaml as the fact sheet reads networkpolicy.go (§1.3.4). */
const KUBEVIRT_POLICIES = [
  {
    kind: 'NetworkPolicy', metadata: { name: 'kubevirt-allow-handler-to-handler', namespace: KV },
    spec: {
      podSelector: { matchLabels: { 'kubevirt.io': 'virt-handler' } }, policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [{ podSelector: { matchLabels: { 'kubevirt.io': 'virt-handler' } } }] }],
      egress: [{ to: [{ podSelector: { matchLabels: { 'kubevirt.io': 'virt-handler' } } }] }],
    },
  },
  {
    kind: 'NetworkPolicy', metadata: { name: 'kubevirt-allow-ingress-to-metrics', namespace: KV },
    spec: {
      podSelector: { matchLabels: { 'kubevirt.io': 'virt-synchronization-controller' } }, policyTypes: ['Ingress'],
      ingress: [{ ports: [{ protocol: 'TCP', port: 8443 }, { protocol: 'TCP', port: 8187 }] }],
    },
  },
];

/** A default-deny of both directions in every namespace the fleet uses, of one kind (and NAD). */
function defaultDeny(kind: 'NetworkPolicy' | 'MultiNetworkPolicy', nads: string[] = []): any[] {
  return [KV, MESH].map((ns) => ({
    kind, metadata: { name: 'default-deny', namespace: ns, ...(kind === 'MultiNetworkPolicy' ? { annotations: { 'k8s.v1.cni.cncf.io/policy-for': nads.filter((n) => n.startsWith(`${ns}/`)).join(',') } } : {}) },
    spec: { podSelector: {}, policyTypes: ['Ingress', 'Egress'] },
  }));
}

const hostOf = (withPrefix: string): string => withPrefix.split('/')[0];
/** The n-th address of an IPv4 CIDR. */
function nth(cidr: string, n: number): string {
  const [a, b, c, d] = cidr.split('/')[0].split('.').map(Number);
  const v = ((a << 24) >>> 0) + (b << 16) + (c << 8) + d + n;
  return [v >>> 24, (v >>> 16) & 255, (v >>> 8) & 255, v & 255].join('.');
}

function synth(doc: FleetDocument): { objects: Map<string, any[]>; clusters: Map<string, ClusterPlan>; plan: FleetPlan } {
  const r = synthesizeFleet(doc, { render: false });
  return { objects: r.objects, clusters: new Map(r.plan.clusters.map((c) => [c.name, c])), plan: r.plan };
}
const policiesOf = (objs: any[]): any[] => objs.filter((o) => o.kind === 'NetworkPolicy' || o.kind === 'MultiNetworkPolicy');

/** Pods of one cluster, by role, on the in-cluster migration network (gateway mode). */
function gatewayClusterPods(c: ClusterPlan) {
  const cidr = c.migrationNetwork.cidr!;
  const kvNad = `${KV}/${c.migrationNetwork.nadName}`;
  const handler = (n: number): Endpoint => ({ ip: nth(cidr, 40 + n), pod: { namespace: KV, labels: { 'kubevirt.io': 'virt-handler', 'extra': 'x' }, nad: kvNad } });
  return {
    handler,
    sync: { ip: nth(cidr, 60), pod: { namespace: KV, labels: { 'kubevirt.io': 'virt-synchronization-controller' }, nad: kvNad } } as Endpoint,
    gateway: { ip: hostOf(c.gateways[0].inCluster), pod: { namespace: MESH, labels: { 'app.kubernetes.io/name': 'migration-mesh-gateway', 'migrationmesh.dev/gateway-set': c.name }, nad: `${MESH}/${c.migrationNetwork.nadName}-gateway` } } as Endpoint,
    gatewayShared: { ip: hostOf(c.gateways[0].crossCluster), pod: { namespace: MESH, labels: { 'app.kubernetes.io/name': 'migration-mesh-gateway', 'migrationmesh.dev/gateway-set': c.name }, nad: `${MESH}/lm-crosscluster` } } as Endpoint,
    stranger: { ip: '10.128.0.5', pod: { namespace: 'default', labels: { app: 'web' } } } as Endpoint,
  };
}

describe('evaluator (test/support/network-policy-eval.ts) can fail', () => {
  const h: Endpoint = { ip: '10.0.0.5', pod: { namespace: KV, labels: { 'kubevirt.io': 'virt-handler' } } };
  const sync: Endpoint = { ip: '10.0.0.6', pod: { namespace: KV, labels: { 'kubevirt.io': 'virt-synchronization-controller' } } };
  const remote: Endpoint = { ip: '10.201.0.9' };

  test('KubeVirt\'s policies alone drop the cross-cluster sync (9185) and handler traffic, keep metrics and handler-to-handler', () => {
    expect(evaluate(KUBEVIRT_POLICIES, { src: remote, dst: sync, port: 9185 }, NP)).toMatchObject({ allowed: false });
    expect(evaluate(KUBEVIRT_POLICIES, { src: remote, dst: h, port: 49152 }, NP)).toMatchObject({ allowed: false });
    expect(evaluate(KUBEVIRT_POLICIES, { src: h, dst: remote, port: 49152 }, NP)).toMatchObject({ allowed: false });
    expect(evaluate(KUBEVIRT_POLICIES, { src: remote, dst: sync, port: 8443 }, NP).allowed).toBe(true);
    expect(evaluate(KUBEVIRT_POLICIES, { src: h, dst: { ...h, ip: '10.0.0.7' }, port: 1234 }, NP).allowed).toBe(true);
    // the sync controller's egress is not isolated by them
    expect(evaluate(KUBEVIRT_POLICIES, { src: sync, dst: remote, port: 9185 }, NP).allowed).toBe(true);
  });

  test('ipBlock except, endPort ranges, protocols and policyTypes', () => {
    const p = [{
      kind: 'NetworkPolicy', metadata: { name: 'p', namespace: KV },
      spec: { podSelector: { matchLabels: { 'kubevirt.io': 'virt-handler' } }, ingress: [{ from: [{ ipBlock: { cidr: '10.201.0.0/24', except: ['10.201.0.8/29'] } }], ports: [{ protocol: 'TCP', port: 1000, endPort: 2000 }] }] },
    }];
    expect(evaluate(p, { src: { ip: '10.201.0.20' }, dst: h, port: 1500 }, NP).allowed).toBe(true);
    expect(evaluate(p, { src: { ip: '10.201.0.9' }, dst: h, port: 1500 }, NP).allowed).toBe(false); // except
    expect(evaluate(p, { src: { ip: '10.201.0.20' }, dst: h, port: 2001 }, NP).allowed).toBe(false); // past endPort
    expect(evaluate(p, { src: { ip: '10.201.0.20' }, dst: h, port: 1500, protocol: 'UDP' }, NP).allowed).toBe(false);
    // policyTypes defaulted to Ingress only: the handler's egress stays open
    expect(evaluate(p, { src: h, dst: { ip: '8.8.8.8' }, port: 53 }, NP).allowed).toBe(true);
    // a namespaceSelector peer needs the namespace's labels to match
    const ns = [{ kind: 'NetworkPolicy', metadata: { name: 'n', namespace: KV }, spec: { podSelector: {}, policyTypes: ['Ingress'], ingress: [{ from: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': MESH } } }] }] } }];
    expect(evaluate(ns, { src: { ip: '1.1.1.1', pod: { namespace: MESH, labels: {} } }, dst: h, port: 1 }, NP).allowed).toBe(true);
    expect(evaluate(ns, { src: { ip: '1.1.1.1', pod: { namespace: 'default', labels: {} } }, dst: h, port: 1 }, NP).allowed).toBe(false);
    expect(evaluate(ns, { src: { ip: '1.1.1.1' }, dst: h, port: 1 }, NP).allowed).toBe(false);
  });
});

describe('gateway fleet with KubeVirt\'s policies (a, b) and a default-deny with the multi-networkpolicy controller (c)', () => {
  const doc = mutate(baseFleet({
    clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3 }, { name: 'c', nodes: 3, gateway: { replicas: 1 }, multiNetworkPolicy: true, networkPolicies: { installed: 'default-deny', apiServerCidrs: ['192.0.2.0/28'] } }],
  }), (d) => { d.spec.networkPolicies = { installed: 'kubevirt' }; });
  const { objects, clusters, plan } = synth(doc);
  const [a, b, c] = ['a', 'b', 'c'].map((n) => clusters.get(n)!);
  const pa = gatewayClusterPods(a);
  const pb = gatewayClusterPods(b);
  const pc = gatewayClusterPods(c);

  test('every emitted object validates against the schemas', () => {
    expect(describeSchema('networking.k8s.io/v1', 'NetworkPolicy')).toBeDefined();
    expect(describeSchema('k8s.cni.cncf.io/v1beta1', 'MultiNetworkPolicy')).toBeDefined();
    const c = policiesOf(objects.get('c')!);
    expect(c.filter((o) => o.kind === 'MultiNetworkPolicy').map((o) => o.metadata.name).sort()).toEqual([
      'migration-mesh-allow-gateway-migration', 'migration-mesh-allow-sync-controller-migration', 'migration-mesh-allow-virt-handler-migration', 'migration-mesh-gateway-crosscluster',
    ]);
    const np = c.find((o) => o.kind === 'NetworkPolicy');
    expect(validateObject({ ...np, spec: { ...np.spec, podSelektor: {} } }).length).toBeGreaterThan(0); // validation can fail
    for (const [, objs] of objects) for (const o of objs) expect({ o: `${o.kind}/${o.metadata?.name}`, errors: validateObject(o) }).toEqual({ o: `${o.kind}/${o.metadata?.name}`, errors: [] });
  });

  test('KubeVirt\'s policies: the sync controller gets an ingress-only policy (never egress-isolated), the gateway nothing', () => {
    const pol = policiesOf(objects.get('a')!);
    expect(pol.map((p) => `${p.kind}/${p.metadata.namespace}/${p.metadata.name}`).sort()).toEqual([
      'NetworkPolicy/kubevirt/migration-mesh-allow-sync-controller', 'NetworkPolicy/kubevirt/migration-mesh-allow-virt-handler',
    ]);
    expect(pol.find((p) => p.metadata.name.endsWith('sync-controller')).spec.policyTypes).toEqual(['Ingress']);
  });

  const all = (name: string): any[] => [...KUBEVIRT_POLICIES, ...policiesOf(objects.get(name)!)];

  test('cluster a: every flow the gateway path needs passes KubeVirt\'s policies with ours', () => {
    const p = all('a');
    const need: [string, Endpoint, Endpoint, number][] = [
      ['arriving migration: local gateway dials the handler', pa.gateway, pa.handler(1), 49152],
      ['arriving migration, another ephemeral port', pa.gateway, pa.handler(2), 61000],
      ['leaving migration: handler to b\'s handler (routed via the gateway)', pa.handler(1), { ip: pb.handler(1).ip }, 49153],
      ['leaving migration to c', pa.handler(1), { ip: pc.handler(3).ip }, 50000],
      ['arriving sync: local gateway dials the sync controller', pa.gateway, pa.sync, 9185],
      ['leaving sync: to b\'s sync controller', pa.sync, { ip: pb.sync.ip }, 9185],
      ['in-cluster migration', pa.handler(1), pa.handler(2), 49152],
    ];
    for (const [what, src, dst, port] of need) expect({ what, ...evaluate(p, { src, dst, port }, NP) }).toMatchObject({ what, allowed: true });
    // and without ours the arriving paths are dropped: the policies are needed
    expect(evaluate(KUBEVIRT_POLICIES, { src: pa.gateway, dst: pa.sync, port: 9185 }, NP).allowed).toBe(false);
    expect(evaluate(KUBEVIRT_POLICIES, { src: pa.gateway, dst: pa.handler(1), port: 49152 }, NP).allowed).toBe(false);
  });

  test('cluster a: flows the fleet must not open stay denied', () => {
    const p = all('a');
    const deny: [string, Endpoint, Endpoint, number][] = [
      ['b\'s handler straight to a\'s handler (not through the gateway)', { ip: pb.handler(1).ip }, pa.handler(1), 49152],
      ['gateway to the sync controller on another port', pa.gateway, pa.sync, 9186],
      ['a pod of the cluster to the sync port', pa.stranger, pa.sync, 9185],
      ['a pod of the cluster to a handler', pa.stranger, pa.handler(1), 49152],
      ['the shared network to the sync port', { ip: '192.168.50.200' }, pa.sync, 9185],
      ['handler to the internet', pa.handler(1), { ip: '8.8.8.8' }, 443],
      ['handler to a\'s own pod network', pa.handler(1), pa.stranger, 80],
    ];
    for (const [what, src, dst, port] of deny) expect({ what, ...evaluate(p, { src, dst, port }, NP) }).toMatchObject({ what, allowed: false });
  });

  test('cluster c (default-deny): the gateway\'s own needs pass, on the pod network and on the migration network (MultiNetworkPolicy)', () => {
    const nads = [`${KV}/lm-migration`, `${MESH}/lm-migration-gateway`];
    const p = [...defaultDeny('NetworkPolicy'), ...defaultDeny('MultiNetworkPolicy', nads), ...policiesOf(objects.get('c')!)];
    const need: [string, Endpoint, Endpoint, number, EvalContext][] = [
      ['tunnel from a\'s gateway', { ip: hostOf(a.gateways[0].crossCluster) }, pc.gatewayShared, 15443, NP],
      ['tunnel to b\'s gateway', pc.gatewayShared, { ip: hostOf(b.gateways[1].crossCluster) }, 15443, NP],
      ['metrics scrape', pc.stranger, pc.gateway, 15090, NP],
      ['CA exchange through the declared API server', pc.gateway, { ip: '192.0.2.3' }, 6443, NP],
      ['handler to a peer, intercepted by the gateway (the destination stays the peer\'s address)', pc.handler(1), { ...pc.gateway, ip: pa.handler(1).ip }, 49152, MNP],
      ['gateway dials the handler', pc.gateway, pc.handler(1), 49152, MNP],
      ['gateway dials the sync controller', pc.gateway, pc.sync, 9185, MNP],
      ['in-cluster migration on migration0', pc.handler(1), pc.handler(2), 49152, MNP],
      ['sync controller to a\'s (routed via the gateway)', pc.sync, { ip: pa.sync.ip }, 9185, MNP],
    ];
    for (const [what, src, dst, port, ctx] of need) expect({ what, ...evaluate(p, { src, dst, port }, ctx) }).toMatchObject({ what, allowed: true });
    const deny: [string, Endpoint, Endpoint, number, EvalContext][] = [
      ['tunnel port from a stranger on the shared network', { ip: '192.168.50.250' }, pc.gatewayShared, 15443, NP],
      ['gateway to another API server', pc.gateway, { ip: '203.0.113.1' }, 6443, NP],
      ['gateway to a\'s migration CIDR directly (only the tunnel leaves)', pc.gateway, { ip: pa.handler(1).ip }, 49152, MNP],
      ['sync controller to c\'s handler on the migration network', pc.sync, pc.handler(1), 49152, MNP],
      ['a stranger on the migration network to the handler', { ip: nth(c.migrationNetwork.cidr!, 200), pod: { namespace: 'default', labels: {}, nad: `${KV}/lm-migration` } }, pc.handler(1), 49152, MNP],
    ];
    for (const [what, src, dst, port, ctx] of deny) expect({ what, ...evaluate(p, { src, dst, port }, ctx) }).toMatchObject({ what, allowed: false });
  });

  test('`plan` shows each declaring cluster\'s flows by workload', () => {
    const text = renderPlanTable(planReport(plan));
    expect(text).toContain('network policies (allow-policies emitted');
    expect(text).toContain('  a (kubevirt):\n');
    expect(text).toMatch(/ {4}sync-controller: in sync-from-gateway\n/); // ingress only: KubeVirt's policies leave its egress open
    expect(text).toContain('  c (default-deny):\n');
    expect(text).toMatch(/ {4}gateway: .*out gateway-api-server/);
    expect(renderPlanTable(planReport(synth(baseFleet()).plan))).not.toContain('network policies');
  });

  test('a policy missing one rule makes a needed flow fail (the test would catch a regression)', () => {
    const broken = all('a').map((p) => (p.metadata.name === 'migration-mesh-allow-sync-controller' ? { ...p, spec: { ...p.spec, ingress: [] } } : p));
    expect(evaluate(broken, { src: pa.gateway, dst: pa.sync, port: 9185 }, NP).allowed).toBe(false);
  });
});

describe('direct fleet with KubeVirt\'s policies', () => {
  const doc = mutate(baseFleet({ datapath: 'direct', clusters: [{ name: 'x', nodes: 3 }, { name: 'y', nodes: 3 }] }), (d) => {
    delete d.spec.migrationNetwork;
    d.spec.networkPolicies = { installed: 'kubevirt' };
  });
  const { objects, clusters } = synth(doc);
  const [x, y] = ['x', 'y'].map((n) => clusters.get(n)!);
  const at = (c: ClusterPlan, n: number, role: string): Endpoint => ({ ip: nth(`${c.migrationNetwork.ipam.rangeStart}/32`, n), pod: { namespace: KV, labels: { 'kubevirt.io': role } } });
  const p = [...KUBEVIRT_POLICIES, ...policiesOf(objects.get('x')!)];

  test('every emitted object validates', () => {
    for (const o of objects.get('x')!) expect(validateObject(o)).toEqual([]);
  });

  test('peers\' handlers and sync controllers pass, by the addresses they hold on the shared network', () => {
    const need: [Endpoint, Endpoint, number][] = [
      [{ ip: at(y, 1, 'virt-synchronization-controller').ip }, at(x, 2, 'virt-synchronization-controller'), 9185],
      [{ ip: at(y, 0, 'virt-handler').ip }, at(x, 1, 'virt-handler'), 49152],
      [at(x, 1, 'virt-handler'), { ip: at(y, 3, 'virt-handler').ip }, 49153],
    ];
    for (const [src, dst, port] of need) expect(evaluate(p, { src, dst, port }, NP)).toMatchObject({ allowed: true });
  });

  test('addresses outside the peers\' slices and other ports stay denied', () => {
    const outside = { ip: '192.168.50.254' };
    expect(evaluate(p, { src: outside, dst: at(x, 1, 'virt-handler'), port: 49152 }, NP).allowed).toBe(false);
    expect(evaluate(p, { src: outside, dst: at(x, 2, 'virt-synchronization-controller'), port: 9185 }, NP).allowed).toBe(false);
    expect(evaluate(p, { src: { ip: at(y, 1, 'x').ip }, dst: at(x, 2, 'virt-synchronization-controller'), port: 9186 }, NP).allowed).toBe(false);
  });
});

describe('native fleet (PR #17922 builds) with KubeVirt\'s policies', () => {
  const doc = mutate(baseFleet({ datapath: 'native', kubevirt: { version: '1.9.0+pr17922' }, clusters: [{ name: 'x', nodes: 3 }, { name: 'y', nodes: 3 }] }), (d) => {
    d.spec.networkPolicies = { installed: 'kubevirt' };
  });
  const { objects, clusters } = synth(doc);
  const [x, y] = ['x', 'y'].map((n) => clusters.get(n)!);
  const p = [...KUBEVIRT_POLICIES, ...policiesOf(objects.get('x')!)];
  const sync = (c: ClusterPlan, n: number): Endpoint => ({ ip: nth(`${c.crossClusterSync!.ipam.rangeStart}/32`, n), pod: { namespace: KV, labels: { 'kubevirt.io': 'virt-synchronization-controller' } } });
  const handler: Endpoint = { ip: nth(x.migrationNetwork.cidr!, 10), pod: { namespace: KV, labels: { 'kubevirt.io': 'virt-handler' } } };

  test('the peers\' sync controllers reach this one on 9185 only, the local handler reaches its sync controller (the proxy)', () => {
    for (const o of objects.get('x')!) expect(validateObject(o, { kubevirtSchema: 'pr17922' })).toEqual([]);
    expect(evaluate(p, { src: { ip: sync(y, 0).ip }, dst: sync(x, 1), port: 9185 }, NP)).toMatchObject({ allowed: true });
    expect(evaluate(p, { src: handler, dst: sync(x, 0), port: 49152 }, NP)).toMatchObject({ allowed: true });
    expect(evaluate(p, { src: sync(x, 0), dst: handler, port: 49153 }, NP)).toMatchObject({ allowed: true });
    expect(evaluate(p, { src: { ip: sync(y, 0).ip }, dst: sync(x, 1), port: 9186 }, NP).allowed).toBe(false);
    expect(evaluate(p, { src: { ip: sync(y, 0).ip }, dst: handler, port: 49152 }, NP).allowed).toBe(false); // remote never reaches a handler directly
    expect(evaluate(p, { src: { ip: '192.168.50.254' }, dst: sync(x, 1), port: 9185 }, NP).allowed).toBe(false);
  });
});

describe('fleet field', () => {
  test('default off: no policy of ours without a declaration', () => {
    const { objects } = synth(baseFleet());
    for (const [, objs] of objects) expect(objs.filter((o) => o.kind === 'NetworkPolicy')).toEqual([]);
  });

  test('a cluster\'s declaration replaces the fleet\'s; `none` emits nothing', () => {
    const doc = mutate(baseFleet({ clusters: [{ name: 'a', nodes: 3, networkPolicies: { installed: 'none' } }, { name: 'b', nodes: 3 }] }), (d) => { d.spec.networkPolicies = { installed: 'kubevirt' }; });
    const { objects } = synth(doc);
    expect(policiesOf(objects.get('a')!)).toEqual([]);
    expect(policiesOf(objects.get('b')!).length).toBe(2);
  });

  test('a default-deny on the secondary networks of a cluster whose gateways fail over by VRRP is refused: no policy can allow IP protocol 112', () => {
    const doc = baseFleet({ clusters: [{ name: 'a', nodes: 3, multiNetworkPolicy: true, networkPolicies: { installed: 'default-deny' } }, { name: 'b', nodes: 3 }] });
    const p = problemsOf(doc);
    expect(p.map((x) => `${x.code} ${x.path}`)).toEqual(['network-policy-vrrp spec.clusters[0].networkPolicies.installed']);
    expect(p[0].fix).toContain('failover.mode: none');
    // one replica (no VIP), failover none, or no multi-networkpolicy controller: accepted
    expect(problemsOf(mutate(doc, (d) => { d.spec.clusters[0].gateway = { replicas: 1 }; }))).toEqual([]);
    expect(problemsOf(mutate(doc, (d) => { d.spec.gateway = { failover: { mode: 'none' } }; }))).toEqual([]);
    expect(problemsOf(mutate(doc, (d) => { d.spec.clusters[0].multiNetworkPolicy = false; }))).toEqual([]);
  });

  test('an API server CIDR that is not one is refused with its path and code', () => {
    const doc = mutate(baseFleet(), (d) => { d.spec.networkPolicies = { installed: 'default-deny', apiServerCidrs: ['10.0.0.1/33'] }; });
    expect(problemsOf(doc).map((x) => `${x.code} ${x.path}`)).toEqual(['cidr-syntax spec.networkPolicies.apiServerCidrs[0]']);
  });
});
