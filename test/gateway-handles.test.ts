/**
 * The gateway as a cdk8s user extends it: typed cdk8s-plus-28 handles, add... methods, props flowing
 * from CrossClusterMigrationMesh (fleet-wide and per cluster) and from the fleet file, and the chart
 * type guards. Assertions are on the synthesized pod templates; customized output still validates
 * against the upstream schemas.
 */
import { App, Chart, Size } from 'cdk8s';
import { testApp } from './support/tmp';
import * as kplus from 'cdk8s-plus-28';
import { CrossClusterMigrationMesh } from '../constructs/fleet/mesh';
import { MeshClusterChart } from '../constructs/fleet/mesh-cluster';
import { HarvesterClusterChart } from '../constructs/delivery/harvester-cluster';
import { FleetValidationError } from '../src/base/errors';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { baseFleet, mutate } from './support/fleets';
import { validateObject } from './support/schemas';

const deployments = (objs: any[]) => objs.filter((o) => o.kind === 'Deployment');
const podOf = (d: any) => d.spec.template;

describe('typed handles and add... methods', () => {
  const app = testApp();
  const mesh = new CrossClusterMigrationMesh(app, 'mesh', { fleet: baseFleet() });
  const gw = mesh.gateways[0];
  // what a user writes: a log shipper reading the gateway config, a toleration, a pod label and annotation
  const logs = kplus.Volume.fromEmptyDir(gw, 'Logs', 'logs');
  const sidecars = gw.addSidecar({
    name: 'log-shipper', image: 'example.org/shipper:1.2', imagePullPolicy: kplus.ImagePullPolicy.IF_NOT_PRESENT,
    resources: { cpu: { request: kplus.Cpu.millis(20) }, memory: { request: Size.mebibytes(32), limit: Size.mebibytes(64) } },
    volumeMounts: [{ path: '/var/log/shipper', volume: logs }],
  });
  // each replica's sidecar mounts that replica's config volume (one Container per replica is returned)
  sidecars.forEach((c, i) => c.mount('/etc/migration-mesh', gw.deployments[i].configVolume, { readOnly: true }));
  gw.addToleration(kplus.NodeTaintQuery.is('dedicated', 'migration', { effect: kplus.TaintEffect.NO_SCHEDULE }));
  gw.addPodLabel('team', 'netops');
  gw.addPodAnnotation('example.org/owner', 'netops');
  gw.addImagePullSecret('regcred');
  gw.setPriorityClassName('system-cluster-critical');
  gw.configMap.metadata.addAnnotation('example.org/reviewed', 'yes');
  gw.serviceAccount.metadata.addLabel('example.org/audit', 'true');
  gw.metrics.service.metadata.addAnnotation('prometheus.io/scrape', 'true');
  const chart = mesh.charts[0] as MeshClusterChart;
  const objs = chart.toJson();

  test('every replica gets the sidecar, toleration, label, annotation, pull secret and priority class', () => {
    const deps = deployments(objs);
    expect(deps).toHaveLength(2);
    for (const d of deps) {
      const t = podOf(d);
      expect(t.metadata.labels.team).toBe('netops');
      expect(t.metadata.annotations['example.org/owner']).toBe('netops');
      // the gateway's own selection stays
      expect(t.metadata.annotations['k8s.v1.cni.cncf.io/networks']).toContain('lm-crosscluster');
      expect(t.spec.containers.map((c: any) => c.name)).toEqual(['gateway', 'failover', 'trust', 'log-shipper']);
      const shipper = t.spec.containers[3];
      expect(shipper.resources).toEqual({ requests: { cpu: '20m', memory: '32Mi' }, limits: { memory: '64Mi' } });
      expect(shipper.volumeMounts).toEqual([
        { name: 'logs', mountPath: '/var/log/shipper' },
        { name: 'config-json', mountPath: '/etc/migration-mesh', readOnly: true },
      ]);
      expect(t.spec.volumes.map((v: any) => v.name).sort()).toEqual(['config', 'config-json', 'keepalived-config', 'keepalived-run', 'logs', 'tmp', 'trust-run', 'trust-token', 'xtables-lock']);
      expect(t.spec.tolerations).toEqual([{ key: 'dedicated', operator: 'Equal', value: 'migration', effect: 'NoSchedule' }]);
      expect(t.spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
      expect(t.spec.priorityClassName).toBe('system-cluster-critical');
      // the selector is still ours only (immutable on a Deployment)
      expect(Object.keys(d.spec.selector.matchLabels).sort()).toEqual(['app.kubernetes.io/name', 'migrationmesh.dev/gateway-replica', 'migrationmesh.dev/gateway-set']);
    }
  });

  test('handles on the ConfigMap, ServiceAccount and Service reach the YAML', () => {
    const cm = objs.find((o: any) => o.kind === 'ConfigMap');
    expect(cm.metadata.annotations).toEqual({ 'example.org/reviewed': 'yes' });
    expect(objs.find((o: any) => o.kind === 'ServiceAccount').metadata.labels['example.org/audit']).toBe('true');
    expect(objs.find((o: any) => o.kind === 'Service').metadata.annotations).toEqual({ 'prometheus.io/scrape': 'true' });
  });

  test('the customized objects still validate against the upstream schemas', () => {
    for (const o of objs) expect([o.kind, validateObject(o)]).toEqual([o.kind, []]);
  });

  test('a sidecar added to every replica does not share its mounts between replicas', () => {
    const m = new CrossClusterMigrationMesh(testApp(), 'm', { fleet: baseFleet() });
    const [first] = m.gateways[0].addSidecar({ name: 'extra', image: 'example.org/x:1', volumeMounts: [] });
    first.mount('/data', kplus.Volume.fromEmptyDir(m.gateways[0], 'Data', 'data'));
    const deps = deployments((m.charts[0] as MeshClusterChart).toJson());
    const mountsOf = (d: any) => podOf(d).spec.containers.find((c: any) => c.name === 'extra').volumeMounts;
    expect(mountsOf(deps[0])).toEqual([{ name: 'data', mountPath: '/data' }]);
    expect(mountsOf(deps[1])).toBeUndefined();
  });

  test('the gateway\'s own labels and annotations are refused with the reason', () => {
    expect(() => gw.addPodLabel('migrationmesh.dev/gateway-set', 'x')).toThrow(/belongs to the gateway/);
    expect(() => gw.addPodAnnotation('k8s.v1.cni.cncf.io/networks', '[]')).toThrow(/belongs to the gateway/);
  });
});

describe('props flow from CrossClusterMigrationMesh, fleet-wide and per cluster', () => {
  const fleet = baseFleet({ clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3 }] });
  const mesh = new CrossClusterMigrationMesh(testApp(), 'mesh', {
    fleet,
    labels: { 'example.org/env': 'prod' },
    gatewayPod: {
      resources: { cpu: { request: kplus.Cpu.units(1) }, memory: { request: Size.mebibytes(512), limit: Size.gibibytes(2) } },
      imagePullPolicy: kplus.ImagePullPolicy.ALWAYS,
      imagePullSecrets: ['regcred'],
      priorityClassName: 'gw-high',
      podLabels: { team: 'netops' },
      podAnnotations: { 'example.org/a': '1' },
      tolerations: [kplus.NodeTaintQuery.exists('gw', { effect: kplus.TaintEffect.NO_SCHEDULE })],
    },
    clusters: {
      b: {
        labels: { 'example.org/site': 'b' },
        gatewayPod: { podLabels: { team: 'site-b' }, imagePullSecrets: ['b-cred'], tolerations: [kplus.NodeTaintQuery.any()] },
      },
    },
  });
  const out = new Map(mesh.charts.map((c) => [c.cluster.name, c.toJson()]));

  test('labels on every object of every cluster; per-cluster labels only there', () => {
    for (const [name, objs] of out) {
      for (const o of objs) {
        expect([o.kind, o.metadata.labels['example.org/env']]).toEqual([o.kind, 'prod']);
        expect(o.metadata.labels['example.org/site']).toBe(name === 'b' ? 'b' : undefined);
        expect(o.metadata.labels['migrationmesh.dev/fleet']).toBe('test');
      }
    }
  });

  test('fleet-wide pod options on every replica; the cluster layer merges maps, appends lists', () => {
    const a = podOf(deployments(out.get('a')!)[0]);
    const b = podOf(deployments(out.get('b')!)[0]);
    for (const t of [a, b]) {
      const main = t.spec.containers[0];
      expect(main.resources).toEqual({ requests: { cpu: '1', memory: '512Mi' }, limits: { memory: '2Gi' } });
      expect(t.spec.containers.map((c: any) => c.imagePullPolicy)).toEqual(['Always', 'Always', 'Always']);
      expect(t.spec.initContainers[0].imagePullPolicy).toBe('Always');
      expect(t.spec.priorityClassName).toBe('gw-high');
      expect(t.metadata.annotations['example.org/a']).toBe('1');
    }
    expect(a.metadata.labels.team).toBe('netops');
    expect(b.metadata.labels.team).toBe('site-b');
    expect(a.spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    expect(b.spec.imagePullSecrets).toEqual([{ name: 'regcred' }, { name: 'b-cred' }]);
    expect(a.spec.tolerations).toEqual([{ key: 'gw', operator: 'Exists', effect: 'NoSchedule' }]);
    expect(b.spec.tolerations).toEqual([{ key: 'gw', operator: 'Exists', effect: 'NoSchedule' }, { operator: 'Exists' }]);
  });

  test('a customization for a cluster the fleet does not have is refused, naming the clusters', () => {
    expect(() => new CrossClusterMigrationMesh(testApp(), 'm', { fleet, clusters: { c: { labels: { x: 'y' } } } }))
      .toThrow(/clusters: c not in fleet test; use one of a, b/);
  });
});

describe('the fleet file offers the same (CLI users)', () => {
  const doc = mutate(baseFleet({ clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3 }] }), (d) => {
    d.spec.labels = { 'example.org/env': 'prod' };
    d.spec.gateway = {
      pod: {
        labels: { team: 'netops' },
        annotations: { 'example.org/a': '1' },
        resources: { requests: { cpu: '250m', memory: '1Gi' }, limits: { memory: '2Gi' } },
        imagePullPolicy: 'Always',
        imagePullSecrets: ['regcred'],
        priorityClassName: 'gw-high',
        tolerations: [{ key: 'gw', operator: 'Exists', effect: 'NoSchedule' }],
      },
    };
    d.spec.clusters[1].labels = { 'example.org/site': 'b' };
    d.spec.clusters[1].gateway = { pod: { labels: { team: 'site-b' }, tolerations: [
      { key: 'dedicated', value: 'mig', effect: 'NoExecute', tolerationSeconds: 30 },
      { operator: 'Exists', effect: 'NoSchedule' },
    ] } };
  });
  const r = synthesizeFleet(doc);

  test('spec.labels, spec.gateway.pod and the per-cluster overrides reach the written objects', () => {
    for (const o of r.objects.get('a')!) expect([o.kind, o.metadata.labels['example.org/env']]).toEqual([o.kind, 'prod']);
    for (const o of r.objects.get('b')!) expect([o.kind, o.metadata.labels['example.org/site']]).toEqual([o.kind, 'b']);
    const a = podOf(deployments(r.objects.get('a')!)[0]);
    const b = podOf(deployments(r.objects.get('b')!)[0]);
    expect(a.spec.containers[0].resources).toEqual({ requests: { cpu: '250m', memory: '1Gi' }, limits: { memory: '2Gi' } });
    expect(a.spec.containers[0].imagePullPolicy).toBe('Always');
    expect(a.spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
    expect(a.spec.priorityClassName).toBe('gw-high');
    expect(a.metadata.labels.team).toBe('netops');
    expect(b.metadata.labels.team).toBe('site-b');
    expect(b.metadata.annotations['example.org/a']).toBe('1');
    expect(b.spec.tolerations).toEqual([
      { key: 'gw', operator: 'Exists', effect: 'NoSchedule' },
      { key: 'dedicated', operator: 'Equal', value: 'mig', effect: 'NoExecute', tolerationSeconds: 30 },
      // every taint of one effect: no cdk8s-plus factory for it, still emitted as written
      { operator: 'Exists', effect: 'NoSchedule' },
    ]);
    for (const objs of r.objects.values()) for (const o of objs) expect([o.kind, validateObject(o)]).toEqual([o.kind, []]);
  });

  test('bad values are refused with their field paths, all at once, before anything is built', () => {
    const bad = mutate(baseFleet(), (d) => {
      d.spec.labels = { 'bad key!': 'x' };
      d.spec.gateway = { pod: { resources: { limits: { memory: '1000M' } }, tolerations: [{ value: 'x' }], imagePullPolicy: 'Sometimes' } };
      d.spec.clusters[0].gateway = { pod: { resources: { requests: { memory: '1536Ki' } } } };
    });
    let err: unknown;
    try { synthesizeFleet(bad); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(FleetValidationError);
    const paths = (err as FleetValidationError).problems.map((p) => p.path).sort();
    expect(paths).toEqual([
      'spec.clusters[0].gateway.pod.resources.requests.memory',
      'spec.gateway.pod.imagePullPolicy',
      'spec.gateway.pod.resources.limits.memory',
      'spec.gateway.pod.tolerations[0]',
      'spec.labels.bad key!',
    ]);
  });
});

describe('charts filterable by type', () => {
  test('isMeshClusterChart is true for mesh charts only, not for any cdk8s Chart', () => {
    const app = new App();
    const mesh = new CrossClusterMigrationMesh(app, 'mesh', { fleet: baseFleet() });
    const plain = new Chart(app, 'plain');
    expect(mesh.charts.every(MeshClusterChart.isMeshClusterChart)).toBe(true);
    expect(MeshClusterChart.isMeshClusterChart(plain)).toBe(false);
    expect(HarvesterClusterChart.isHarvesterClusterChart(mesh.charts[0])).toBe(false);
    expect(app.node.children.filter(MeshClusterChart.isMeshClusterChart).map((c) => c.cluster.name)).toEqual(mesh.charts.map((c) => c.cluster.name));
    expect(mesh.gateways.map((g) => g.node.scope!.node.id)).toEqual(mesh.charts.map((c) => c.cluster.name));
    expect(mesh.chartOf('b')?.cluster.name).toBe('b');
  });
});
