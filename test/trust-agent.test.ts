/**
 * Issue #30: trust in every mode. A cluster without a gateway (direct, native, Harvester) exchanges its
 * KubeVirt CA through a trust agent: planned and ledgered shared-network addresses counted in capacity,
 * listed in its peers' tables, the runtime in a trust-only role, the token only in the trust container.
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { planFleetDocument } from '../src/addressing/planner';
import { parseProxyConfig } from '../proxy/src/config';
import { baseFleet, problemsOf, runCli } from './support/fleets';
import { validateObject } from './support/schemas';

const direct = (over: Parameters<typeof baseFleet>[0] = {}) => baseFleet({ datapath: 'direct', ...over });
const mixed = () => baseFleet({ clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3 }, { name: 'd', nodes: 2, datapath: 'direct' }] });
const configOf = (objs: any[], name: string) => parseProxyConfig(JSON.parse(objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === name).data['config.json']));

describe('planning: trust agents hold planned, ledgered, counted shared addresses', () => {
  test('each direct cluster gets gatewayReplicas agent addresses, disjoint from every slice, recorded in the ledger', () => {
    const { plan, ledger } = planFleetDocument(direct());
    const slices = new Set<string>();
    for (const c of plan.clusters) {
      expect(c.trustAgents.map((t) => t.replica)).toEqual([0, 1]);
      expect(ledger.clusters[c.name].trustAgents).toEqual(c.trustAgents.map((t) => ({ crossCluster: t.crossCluster.replace(/\/24$/, '') })));
      const ipam = c.migrationNetwork.ipam;
      const [lo, hi] = [ipam.rangeStart!, ipam.rangeEnd!].map((a) => Number(a.split('.')[3]));
      for (let i = lo; i <= hi; i++) slices.add(`192.168.50.${i}`);
      for (const t of c.trustAgents) {
        const host = t.crossCluster.replace(/\/24$/, '');
        // outside the whereabouts range, or excluded from it
        const inRange = Number(host.split('.')[3]) >= lo && Number(host.split('.')[3]) <= hi;
        if (inRange) expect(ipam.exclude).toContain(`${host}/32`);
      }
      // 3 nodes + 2 sync controllers + 2 surge + 2 trust agents
      expect(c.capacity.crossCluster).toBe(9);
    }
    const agents = plan.clusters.flatMap((c) => c.trustAgents.map((t) => t.crossCluster.replace(/\/24$/, '')));
    expect(new Set(agents).size).toBe(4);
    expect(plan.capacity.needed).toBe(18);
  });

  test('re-planning with the ledger keeps every address; a gateway-only fleet records no trust agent', () => {
    const first = planFleetDocument(direct());
    const again = planFleetDocument(direct(), { ledger: first.ledger });
    expect(again.changes).toEqual([]);
    expect(again.plan.clusters.map((c) => c.trustAgents)).toEqual(first.plan.clusters.map((c) => c.trustAgents));
    const gw = planFleetDocument(baseFleet());
    expect(Object.values(gw.ledger.clusters).every((c) => c.trustAgents === undefined)).toBe(true);
    expect(gw.plan.clusters.every((c) => c.trustAgents.length === 0)).toBe(true);
  });

  test('a direct fleet planned before trust agents keeps its slices: the agents take free addresses', () => {
    const before = planFleetDocument(direct({ trust: { enabled: false } }));
    expect(before.plan.clusters.every((c) => c.trustAgents.length === 0)).toBe(true);
    const after = planFleetDocument(direct(), { ledger: before.ledger });
    for (const n of ['a', 'b']) expect(after.ledger.clusters[n].crossClusterAddresses).toEqual(before.ledger.clusters[n].crossClusterAddresses);
    expect(after.changes.map((c) => c.field).sort()).toEqual(['trustAgents[0].crossCluster', 'trustAgents[0].crossCluster', 'trustAgents[1].crossCluster', 'trustAgents[1].crossCluster']);
  });

  test('capacity counts the agents: a pool that fits the handlers alone is refused, naming them', () => {
    // 2 x (3 + 2 + 2) = 14 handler addresses; 2 x 2 agents more need 18
    const tight = direct({ crossClusterNetwork: { attachment: { type: 'macvlan', master: 'eth2' }, addresses: { pool: ['192.168.50.10-192.168.50.23'], prefixLength: 24 } } });
    const p = problemsOf(tight);
    expect(p.map((x) => x.code)).toEqual(['pool-too-small']);
    expect(p[0].message).toMatch(/needed 18 .*trust agents/);
    expect(problemsOf(direct({ ...tight.spec, trust: { enabled: false } }))).toEqual([]);
  });

  test('a single-cluster fleet, or trust off, plans no agent; exchange off plans rotation only', () => {
    expect(planFleetDocument(direct({ clusters: [{ name: 'a', nodes: 3 }] })).plan.clusters[0].trustAgents).toEqual([]);
    const off = planFleetDocument(direct({ trust: { exchange: { enabled: false } } })).plan;
    expect(off.clusters.every((c) => c.trustAgents.length === 0)).toBe(true);
    expect(off.trust.clusters.a).toMatchObject({ exchange: false, agent: false });
  });
});

describe('peer tables: gateways and trust agents list each other', () => {
  const r = synthesizeFleet(mixed());
  const d = r.plan.clusters.find((c) => c.name === 'd')!;
  const dHosts = d.trustAgents.map((t) => t.crossCluster.replace(/\/24$/, ''));

  test("a gateway's table lists the direct cluster's trust endpoints, trust only (no CIDR: nothing is tunnelled to it)", () => {
    const cfg = configOf(r.objects.get('a')!, 'migration-mesh-gateway');
    expect(cfg.peers.map((p) => p.cluster)).toEqual(['b', 'd']);
    expect(cfg.peers.find((p) => p.cluster === 'b')!.cidrs).toHaveLength(1);
    expect(cfg.peers.find((p) => p.cluster === 'd')).toEqual({ cluster: 'd', cidrs: [], gateways: dHosts.map((host) => ({ host, port: 15443 })) });
    expect(cfg.trust).toBeDefined();
  });

  test("the trust agent's config: every peer trust only, dials nothing, intercept on loopback, same identity and caps", () => {
    const cfg = configOf(r.objects.get('d')!, 'migration-mesh-trust');
    expect(cfg.cluster).toBe('d');
    expect(cfg.localCidrs).toEqual([]);
    expect(cfg.listen.intercept.host).toBe('127.0.0.1');
    expect(cfg.listen.intercept.interface).toBeUndefined(); // loopback: no rule redirects to it
    // issue 49: the tunnel listener on the shared network's interface (the Multus selection's), the admin on the pod network
    expect(cfg.listen.tunnel).toEqual({ host: '0.0.0.0', interface: 'xc0', port: 15443 });
    expect(cfg.listen.admin).toEqual({ interface: 'eth0', port: 15090 });
    expect(cfg.ownAddresses).toEqual(dHosts);
    expect(cfg.peers.map((p) => [p.cluster, p.cidrs])).toEqual([['a', []], ['b', []]]);
    const a = r.plan.clusters.find((c) => c.name === 'a')!;
    expect(cfg.peers[0].gateways.map((g) => g.host)).toEqual(a.gateways.map((g) => g.crossCluster.replace(/\/24$/, '')));
    expect(cfg.tls.mode).toBe(configOf(r.objects.get('a')!, 'migration-mesh-gateway').tls.mode);
    expect(cfg.trust).toMatchObject({ socket: '/run/migration-mesh/trust.sock' });
  });

  test('the direct cluster gets the CA rotation in its KubeVirt CR', () => {
    const kv = r.objects.get('d')!.find((o) => o.kind === 'KubeVirt') as any;
    expect(kv.spec.certificateRotateStrategy.selfSigned.ca).toEqual({ duration: '168h0m0s', renewBefore: '96h0m0s' });
  });
});

describe('constructs: least privilege and schemas', () => {
  const r = synthesizeFleet(direct({ clusters: [{ name: 'a', nodes: 3, multiNetworkPolicy: true }, { name: 'b', nodes: 3 }] }));
  const objs = r.objects.get('a')!;

  test('the Role is limited by resourceNames to kubevirt-ca (read) and kubevirt-external-ca (get, update), bound to the agent only', () => {
    const role = objs.find((o) => o.kind === 'Role') as any;
    expect(role.metadata).toMatchObject({ name: 'migration-mesh-trust', namespace: 'kubevirt' });
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['kubevirt-ca'], verbs: ['get', 'list', 'watch'] },
      { apiGroups: [''], resources: ['configmaps'], resourceNames: ['kubevirt-external-ca'], verbs: ['get', 'update'] },
    ]);
    const binding = objs.find((o) => o.kind === 'RoleBinding') as any;
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'migration-mesh-trust', namespace: 'migration-mesh' }]);
  });

  test('one Deployment per replica; the token is mounted into the trust container alone; nothing runs as root or with capabilities', () => {
    const deps = objs.filter((o) => o.kind === 'Deployment') as any[];
    expect(deps.map((d) => d.metadata.name)).toEqual(['migration-mesh-trust-0', 'migration-mesh-trust-1']);
    for (const [i, d] of deps.entries()) {
      const pod = d.spec.template.spec;
      expect(d.spec).toMatchObject({ replicas: 1, strategy: { type: 'Recreate' } });
      expect(pod.automountServiceAccountToken).toBe(false);
      expect(pod.initContainers ?? []).toEqual([]);
      const tokenVolumes = pod.volumes.filter((v: any) => v.projected?.sources.some((s: any) => s.serviceAccountToken)).map((v: any) => v.name);
      expect(tokenVolumes).toHaveLength(1);
      const withToken = pod.containers.filter((c: any) => (c.volumeMounts ?? []).some((m: any) => tokenVolumes.includes(m.name))).map((c: any) => c.name);
      expect(withToken).toEqual(['trust']);
      expect(pod.containers.map((c: any) => c.name)).toEqual(['runtime', 'trust']);
      for (const c of pod.containers) {
        expect(c.securityContext).toMatchObject({ runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: { drop: ['ALL'] } });
        expect(c.securityContext.capabilities.add).toBeUndefined();
      }
      const selection = JSON.parse(d.spec.template.metadata.annotations['k8s.v1.cni.cncf.io/networks']);
      expect(selection).toEqual([{ name: 'lm-crosscluster', namespace: 'migration-mesh', interface: 'xc0', ips: [r.plan.clusters[0].trustAgents[i].crossCluster] }]);
    }
    expect(objs.find((o) => o.kind === 'PodDisruptionBudget')).toMatchObject({ metadata: { name: 'migration-mesh-trust' }, spec: { maxUnavailable: 1 } });
  });

  test('every object of every cluster validates against its schema', () => {
    const errors = [...r.objects.values()].flat().flatMap((o) => validateObject(o).map((e) => `${o.kind}/${o.metadata.name}: ${e}`));
    expect(errors).toEqual([]);
    const m = synthesizeFleet(mixed());
    expect([...m.objects.values()].flat().flatMap((o) => validateObject(o).map((e) => `${o.kind}/${o.metadata.name}: ${e}`))).toEqual([]);
  });

  test('the MultiNetworkPolicy admits the tunnel port from the peers\' trust endpoints only', () => {
    const mnp = objs.find((o) => o.kind === 'MultiNetworkPolicy') as any;
    const b = r.plan.clusters.find((c) => c.name === 'b')!;
    expect(mnp.spec.ingress[0].from.map((f: any) => f.ipBlock.cidr)).toEqual(b.trustAgents.map((t) => `${t.crossCluster.replace(/\/24$/, '')}/32`));
  });
});

test('`migration-mesh plan` shows per cluster how its trust is kept', () => {
  const out = runCli(['plan', 'examples/harvester.fleet.yaml']);
  expect(out.code).toBe(0);
  expect(out.out).toMatch(/hv-a\s+exchanged by its trust agent \(172\.20\.40\.34, 172\.20\.40\.35\); CA rotation not set \(Harvester/);
  expect(out.out).toMatch(/kv-c\s+exchanged by its trust agent \(172\.20\.40\.38, 172\.20\.40\.39\); CA rotation set/);
  const gw = runCli(['plan', 'examples/gitops.fleet.yaml']);
  expect(gw.out).toMatch(/east\s+exchanged by its gateway \(/);
});

describe('metrics: the trust agent is scraped as the gateway is (Service, ServiceMonitor, alerts)', () => {
  const withMonitor = synthesizeFleet(direct({ gateway: { serviceMonitor: true } }));
  const objs = withMonitor.objects.get('a')!;
  const of = (kind: string) => objs.filter((o) => o.kind === kind) as any[];

  test("the Service's port is the runtime container's metrics port (the config's admin port) and selects every replica", () => {
    const [svc] = of('Service');
    expect(svc.metadata).toMatchObject({ name: 'migration-mesh-trust-metrics', namespace: 'migration-mesh' });
    const admin = configOf(objs, 'migration-mesh-trust').listen.admin.port;
    expect(svc.spec.ports).toEqual([{ name: 'metrics', port: admin, targetPort: admin, protocol: 'TCP' }]);
    for (const d of of('Deployment')) {
      const labels = d.spec.template.metadata.labels;
      for (const [k, v] of Object.entries(svc.spec.selector)) expect(labels[k]).toBe(v);
      const runtime = d.spec.template.spec.containers.find((c: any) => c.name === 'runtime');
      expect(runtime.ports).toContainEqual({ name: 'metrics', containerPort: admin, protocol: 'TCP' });
      expect(runtime.readinessProbe.httpGet.port).toBe(admin);
    }
  });

  test("the ServiceMonitor selects that Service (not a gateway's) and scrapes its metrics port at /metrics", () => {
    const [sm] = of('ServiceMonitor');
    const [svc] = of('Service');
    expect(sm.metadata).toMatchObject({ name: 'migration-mesh-trust', namespace: 'migration-mesh' });
    expect(Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => svc.metadata.labels[k] === v)).toBe(true);
    expect(sm.spec.endpoints).toEqual([{ port: svc.spec.ports[0].name, path: '/metrics', interval: '30s', scheme: 'http' }]);
    expect(sm.spec.namespaceSelector).toEqual({ matchNames: ['migration-mesh'] });
    expect([...withMonitor.objects.values()].flat().flatMap((o) => validateObject(o).map((e) => `${o.kind}/${o.metadata.name}: ${e}`))).toEqual([]);
  });

  test('without serviceMonitor: the Service, no ServiceMonitor, no PrometheusRule (as for a gateway)', () => {
    const plain = synthesizeFleet(direct()).objects.get('a')!;
    expect(plain.filter((o) => o.kind === 'Service').map((o) => o.metadata.name)).toEqual(['migration-mesh-trust-metrics']);
    expect(plain.filter((o) => o.kind === 'ServiceMonitor' || o.kind === 'PrometheusRule')).toEqual([]);
  });

  test('a mixed fleet: the gateway clusters keep their names, the direct cluster gets the trust agent\'s', () => {
    const fleet = mixed();
    const m = synthesizeFleet({ ...fleet, spec: { ...fleet.spec, gateway: { serviceMonitor: true } } });
    const names = (c: string, kind: string) => m.objects.get(c)!.filter((o) => o.kind === kind).map((o) => o.metadata.name);
    expect(names('a', 'ServiceMonitor')).toEqual(['migration-mesh-gateway']);
    expect(names('d', 'ServiceMonitor')).toEqual(['migration-mesh-trust']);
    expect(names('d', 'PrometheusRule')).toEqual(['migration-mesh-trust']);
    expect(names('d', 'Service')).toEqual(['migration-mesh-trust-metrics']);
  });
});
