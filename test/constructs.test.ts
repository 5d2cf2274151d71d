import { Testing, Chart } from 'cdk8s';
import { testApp, testChart } from './support/tmp';
import { KubevirtConfiguration } from '../constructs/kubevirt/configuration';
import { MigrationNetwork } from '../constructs/addressing/migration-network';
import { SyncControllerPlacement } from '../constructs/kubevirt/sync-controller-placement';
import { MigrationProxy } from '../constructs/gateway/migration-proxy';
import { CrossClusterMigrationMesh } from '../constructs/fleet/mesh';
import { parseProxyConfig } from '@migration-mesh/proxy/config';
import { FleetValidationError } from '../src/base/errors';
import { baseFleet, mutate } from './support/fleets';
import { validateObject } from './support/schemas';

const kubevirtOf = (objs: any[]) => objs.find((o) => o.kind === 'KubeVirt' || o.kind === 'HyperConverged');

describe('KubevirtConfiguration: each delivery form\'s own object, never another\'s', () => {
  test.each([['kubevirt-cr', 'KubeVirt'], ['kustomize-patch', 'KubeVirt'], ['hco', 'HyperConverged']] as const)('%s renders a %s', (delivery, kind) => {
    const chart = testChart();
    new KubevirtConfiguration(chart, 'kv', { namespace: 'ns', name: 'n', delivery });
    expect(Testing.synth(chart).map((o) => o.kind)).toEqual([kind]);
  });

  test('a form the registry does not know (a JavaScript caller\'s) is refused, not rendered as a KubeVirt CR', () => {
    const chart = testChart();
    // before the registry, any value but 'hco' fell to the else branch and rendered a KubeVirt CR
    expect(() => new KubevirtConfiguration(chart, 'kv', { namespace: 'ns', name: 'n', delivery: 'helm-values' as never }))
      .toThrow("delivery 'helm-values' is not a delivery form; use one of kubevirt-cr, kustomize-patch, hco");
    expect(() => new KubevirtConfiguration(testChart(), 'kv', { namespace: 'ns', name: 'n', delivery: 'toString' as never })).toThrow(/'toString' is not a delivery form/);
  });
});

describe('MigrationNetwork', () => {
  test('emits a whereabouts NAD in the KubeVirt namespace and selects it in migrations.network', () => {
    const chart = testChart();
    const kv = new KubevirtConfiguration(chart, 'kv', { namespace: 'kubevirt', name: 'kubevirt' });
    new MigrationNetwork(chart, 'net', {
      name: 'lm-migration', namespace: 'kubevirt', kubevirt: kv,
      attachment: { type: 'bridge', bridge: 'br-mig', vlan: 100, mtu: 9000 },
      ipam: { range: '10.200.0.0/24', exclude: ['10.200.0.1/32'], routes: [{ dst: '10.200.0.0/16', gw: '10.200.0.1' }] },
    });
    const objs = Testing.synth(chart);
    const nad = objs.find((o) => o.kind === 'NetworkAttachmentDefinition');
    expect(nad.metadata).toMatchObject({ name: 'lm-migration', namespace: 'kubevirt' });
    expect(JSON.parse(nad.spec.config)).toEqual({
      cniVersion: '0.3.1', name: 'lm-migration', type: 'bridge', bridge: 'br-mig', vlan: 100, preserveDefaultVlan: false, mtu: 9000,
      ipam: { type: 'whereabouts', range: '10.200.0.0/24', exclude: ['10.200.0.1/32'], routes: [{ dst: '10.200.0.0/16', gw: '10.200.0.1' }] },
    });
    const k = kubevirtOf(objs);
    expect(k.spec.configuration.migrations.network).toBe('lm-migration');
    expect(k.spec.configuration.developerConfiguration.featureGates).toEqual(['DecentralizedLiveMigration']);
    for (const o of objs) expect(validateObject(o)).toEqual([]);
  });

  test('fails without a planned range', () => {
    expect(() => new MigrationNetwork(testChart(), 'n', { name: 'x', namespace: 'kubevirt', attachment: { type: 'macvlan', master: 'eth1' }, ipam: { range: '', exclude: [], routes: [] } }))
      .toThrow(/ipam.range is empty/);
  });
});

describe('SyncControllerPlacement', () => {
  const synthPlacement = (props: Partial<ConstructorParameters<typeof SyncControllerPlacement>[2]>): any => {
    const chart = testChart();
    const kv = new KubevirtConfiguration(chart, 'kv', { namespace: 'kubevirt', name: 'kubevirt' });
    new SyncControllerPlacement(chart, 'p', { kubevirt: kv, ...props });
    return kubevirtOf(Testing.synth(chart));
  };

  test('controlPlane (the default) leaves KubeVirt placement alone', () => {
    expect(synthPlacement({}).spec).toEqual({});
  });

  test('workers: sets spec.infra.nodePlacement so virt-operator stops injecting control-plane affinity, and pins the sync controller with a strategic patch', () => {
    const kv = synthPlacement({ placement: 'workers' });
    expect(kv.spec.infra).toEqual({ nodePlacement: {} });
    const [patch] = kv.spec.customizeComponents.patches;
    expect(patch).toMatchObject({ resourceType: 'Deployment', resourceName: 'virt-synchronization-controller', type: 'strategic' });
    const nodeAffinity = JSON.parse(patch.patch).spec.template.spec.affinity.nodeAffinity;
    expect(nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions)
      .toEqual([{ key: 'node-role.kubernetes.io/control-plane', operator: 'DoesNotExist' }]);
    expect(kv.spec.synchronizationPlacement).toBeUndefined();
    expect(validateObject(kv)).toEqual([]);
  });

  test('native mode also writes the proposed spec.synchronizationPlacement', () => {
    const kv = synthPlacement({ placement: { nodeSelector: { lm: 'yes' } }, datapath: 'native', replicas: 3 });
    expect(kv.spec.synchronizationPlacement).toEqual({ nodePlacement: { nodeSelector: { lm: 'yes' } } });
    expect(kv.spec.infra).toEqual({ nodePlacement: {} }); // replicas ride the sync-controller patch (test/sync-replicas.test.ts)
    expect(JSON.parse(kv.spec.customizeComponents.patches[0].patch).spec.replicas).toBe(3);
    expect(validateObject(kv, { kubevirtSchema: 'pr17922' })).toEqual([]);
    expect(validateObject(kv, { kubevirtSchema: 'released' }).join()).toMatch(/synchronizationPlacement/);
  });
});

describe('CrossClusterMigrationMesh', () => {
  test('builds one top-level chart per cluster, named after the cluster', () => {
    const app = testApp();
    const mesh = new CrossClusterMigrationMesh(app, 'mesh', { fleet: { name: 'prod', spec: baseFleet().spec } });
    expect(mesh.charts.map((c) => c.node.id)).toEqual(['a', 'b']);
    expect(app.charts.every((c) => Chart.isChart(c))).toBe(true);
    expect(CrossClusterMigrationMesh.isMesh(mesh)).toBe(true);
    expect(CrossClusterMigrationMesh.isMesh({})).toBe(false);
  });

  test('native fields appear only for clusters whose declared version has them', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.datapath = 'native';
      d.spec.kubevirt = { version: '1.9.0+pr17922' };
    });
    const mesh = new CrossClusterMigrationMesh(testApp(), 'm', { fleet: doc });
    const objs = Testing.synth(mesh.charts[0]);
    const kv = kubevirtOf(objs);
    expect(kv.spec.configuration.migrations).toMatchObject({ decentralizedLiveMigrationDatapath: 'Proxy', crossClusterNetwork: 'lm-crosscluster', network: 'lm-migration' });
    expect(kv.spec.configuration.developerConfiguration.featureGates).toEqual(['DecentralizedLiveMigration', 'CrossClusterMigrationProxy']);
    // no gateway: the only Deployments are the trust agent's (issue #30)
    expect(objs.filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name)).toEqual(['migration-mesh-trust-0', 'migration-mesh-trust-1']);
    expect(objs.some((o) => o.metadata.name.startsWith('migration-mesh-gateway') && o.kind !== 'Certificate')).toBe(false);
    // a gateway-mode cluster on the same build gets none of them
    const gw = new CrossClusterMigrationMesh(testApp(), 'g', { fleet: mutate(doc, (d) => { d.spec.datapath = 'gateway'; }) });
    const kv2 = kubevirtOf(Testing.synth(gw.charts[0]));
    expect(JSON.stringify(kv2)).not.toMatch(/decentralizedLiveMigrationDatapath|crossClusterNetwork|CrossClusterMigrationProxy|synchronizationPlacement/);
  });

  test('refuses an invalid fleet before creating any chart', () => {
    const app = testApp();
    expect(() => new CrossClusterMigrationMesh(app, 'm', { fleet: mutate(baseFleet(), (d) => { d.spec.clusters[0].nodes = 0; }) }))
      .toThrow(FleetValidationError);
    expect(app.charts).toHaveLength(0);
  });

  test('frozen fails when the ledger would change, and passes when it would not', () => {
    const first = new CrossClusterMigrationMesh(testApp(), 'm', { fleet: baseFleet() });
    expect(() => new CrossClusterMigrationMesh(testApp(), 'm', { fleet: baseFleet(), ledger: first.ledger, frozen: true })).not.toThrow();
    const grown = mutate(baseFleet(), (d) => { d.spec.clusters.push({ name: 'c', nodes: 1 }); });
    expect(() => new CrossClusterMigrationMesh(testApp(), 'm', { fleet: grown, ledger: first.ledger, frozen: true }))
      .toThrow(/frozen: the plan would change the ledger:[\s\S]*c.migrationCidr: \+ 10.200.2.0\/24/);
  });

  test('HCO delivery: liveMigrationConfig + featureGates in HyperConverged; what HCO lacks goes through the jsonpatch annotation', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.kubevirt = { configDelivery: 'hco', namespace: 'openshift-cnv' };
      d.spec.migrationPolicy = { bandwidthPerMigration: '1Gi', progressTimeout: 300 };
      d.spec.syncControllers = { placement: 'workers', replicas: 3 };
    });
    const mesh = new CrossClusterMigrationMesh(testApp(), 'm', { fleet: doc });
    const hco = kubevirtOf(Testing.synth(mesh.charts[0]));
    expect(hco).toMatchObject({ apiVersion: 'hco.kubevirt.io/v1beta1', kind: 'HyperConverged', metadata: { name: 'kubevirt-hyperconverged', namespace: 'openshift-cnv' } });
    expect(hco.spec.liveMigrationConfig).toEqual({ bandwidthPerMigration: '1Gi', progressTimeout: 300, network: 'lm-migration' });
    expect(hco.spec.featureGates).toBeUndefined();
    expect(hco.spec.infra).toEqual({ nodePlacement: {} });
    const ops = JSON.parse(hco.metadata.annotations['kubevirt.kubevirt.io/jsonpatch']);
    expect(ops.map((o: any) => `${o.op} ${o.path}`)).toEqual([
      'add /spec/configuration/developerConfiguration/featureGates/-', 'add /spec/customizeComponents/patches',
    ]);
    expect(ops[0].value).toBe('DecentralizedLiveMigration');
    expect(ops[1].value[0].resourceName).toBe('virt-synchronization-controller');
    expect(validateObject(hco)).toEqual([]);
    // the migration NAD must be in the HCO namespace, where KubeVirt runs
    const nad = Testing.synth(mesh.charts[0]).find((o) => o.kind === 'NetworkAttachmentDefinition' && o.metadata.name === 'lm-migration');
    expect(nad.metadata.namespace).toBe('openshift-cnv');
  });
});

describe('MigrationProxy', () => {
  test('writes the peer table through the runtime config schema and static-IPAM NADs that take per-pod ips', () => {
    const mesh = new CrossClusterMigrationMesh(testApp(), 'm', { fleet: mutate(baseFleet(), (d) => { d.spec.clusters.push({ name: 'c', nodes: 2 }); }) });
    const objs = Testing.synth(mesh.charts[0]);
    const cm = objs.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'migration-mesh-gateway');
    const cfg = parseProxyConfig(JSON.parse(cm.data['config.json']));
    expect(cfg.cluster).toBe('a');
    expect(cfg.localCidrs).toEqual(['10.200.0.0/24']);
    expect(cfg.peers.map((p) => [p.cluster, p.cidrs, p.gateways.map((g) => g.host)])).toEqual([
      ['b', ['10.200.1.0/24'], ['192.168.50.3', '192.168.50.4']],
      ['c', ['10.200.2.0/24'], ['192.168.50.5', '192.168.50.6']],
    ]);
    // its replicas' own addresses and the VIP they share: never dialled as a destination
    expect(cfg.ownAddresses).toEqual(['10.200.0.1', '10.200.0.2', '10.200.0.3', '192.168.50.1', '192.168.50.2']);
    const xc = objs.find((o) => o.kind === 'NetworkAttachmentDefinition' && o.metadata.name === 'lm-crosscluster');
    expect(xc.metadata.namespace).toBe('migration-mesh');
    expect(JSON.parse(xc.spec.config)).toMatchObject({ type: 'macvlan', capabilities: { ips: true }, ipam: { type: 'static' } });
  });

  test('fails for a cluster that is not in gateway mode', () => {
    const mesh = new CrossClusterMigrationMesh(testApp(), 'm', { fleet: mutate(baseFleet(), (d) => { d.spec.datapath = 'direct'; }) });
    expect(() => new MigrationProxy(testChart(), 'p', { plan: mesh.plan, cluster: mesh.plan.clusters[0] })).toThrow(/needs datapath gateway, got direct/);
  });
});
