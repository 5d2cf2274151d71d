/**
 * A cdk8s user's app against the published package: npm pack the library, install the tarball alone
 * with cdk8s, cdk8s-plus-28 and constructs into a scratch project, type-check (strict, with the
 * package's own .d.ts) and run an app that extends the gateway through the public API only (a
 * sidecar, a toleration, resources, a pod label), then read the synthesized YAML.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as YAML from 'yaml';

import { installedApp, versionOf } from './support/packed';

const root = path.join(__dirname, '..');

const APP = `
import { App, Size } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { CrossClusterMigrationMesh, MeshClusterChart } from 'migration-mesh';

const app = new App({ outdir: 'out' });
const mesh = new CrossClusterMigrationMesh(app, 'mesh', {
  fleet: { name: 'demo', spec: {
    crossClusterNetwork: { attachment: { type: 'macvlan', master: 'eth2' }, addresses: { pool: ['192.168.9.10-192.168.9.20'], prefixLength: 24 } },
    migrationNetwork: { attachment: { type: 'macvlan', master: 'eth1' }, supernet: '10.250.0.0/16' },
    gateway: { pod: { imagePullSecrets: ['regcred'] } },
    clusters: [{ name: 'east', nodes: 3 }, { name: 'west', nodes: 3 }],
  } },
  labels: { 'example.org/owner': 'netops' },
  gatewayPod: {
    resources: { cpu: { request: kplus.Cpu.millis(750) }, memory: { request: Size.mebibytes(384), limit: Size.gibibytes(2) } },
  },
});
for (const chart of mesh.charts.filter(MeshClusterChart.isMeshClusterChart)) {
  const gw = chart.proxy!;
  gw.addSidecar({
    name: 'tcpdump', image: 'example.org/tcpdump:4.99', imagePullPolicy: kplus.ImagePullPolicy.IF_NOT_PRESENT,
    resources: { cpu: { request: kplus.Cpu.millis(10) }, memory: { request: Size.mebibytes(16), limit: Size.mebibytes(64) } },
    securityContext: { user: 1000, group: 1000 },
  });
  gw.addToleration(kplus.NodeTaintQuery.exists('migration-only', { effect: kplus.TaintEffect.NO_SCHEDULE }));
  gw.addPodLabel('example.org/team', chart.cluster.name + '-net');
  // the typed cdk8s-plus Deployment of each replica, for anything else cdk8s-plus offers
  for (const d of gw.deployments) d.deployment.scheduling.attract(kplus.Node.labeled(kplus.NodeLabelQuery.is('example.org/xc', 'true')));
}
app.synth();
`;

test('a cdk8s app from the packed tarballs adds a sidecar, a toleration, resources and a pod label', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-userapp-'));
  try {
    // the packed tarball installed alone with the cdk8s peers (test/support/packed.ts: once per source state)
    const app = path.join(work, 'infra-repo');
    installedApp(app, [`cdk8s@${versionOf('cdk8s')}`, `cdk8s-plus-28@${versionOf('cdk8s-plus-28')}`, `constructs@${versionOf('constructs')}`]);
    // one copy of cdk8s-plus-28 (the user's), shared with the library: the handles are the user's types
    expect(fs.existsSync(path.join(app, 'node_modules', 'migration-mesh', 'node_modules', 'cdk8s-plus-28'))).toBe(false);

    fs.writeFileSync(path.join(app, 'main.ts'), APP);
    fs.writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'commonjs', moduleResolution: 'node', strict: true, esModuleInterop: true, skipLibCheck: false, outDir: 'build', types: [] }, files: ['main.ts'] }));
    execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], { cwd: app, encoding: 'utf8', timeout: 120_000 });
    execFileSync(process.execPath, ['build/main.js'], { cwd: app, encoding: 'utf8', timeout: 60_000 });

    for (const cluster of ['east', 'west']) {
      const objs = YAML.parseAllDocuments(fs.readFileSync(path.join(app, 'out', `${cluster}.k8s.yaml`), 'utf8')).map((d) => d.toJS());
      for (const o of objs) expect([o.kind, o.metadata.labels['example.org/owner']]).toEqual([o.kind, 'netops']);
      const deps = objs.filter((o) => o.kind === 'Deployment');
      expect(deps.map((d) => d.metadata.name)).toEqual(['migration-mesh-gateway-0', 'migration-mesh-gateway-1']);
      for (const d of deps) {
        const t = d.spec.template;
        expect(t.metadata.labels['example.org/team']).toBe(`${cluster}-net`);
        expect(t.spec.containers.map((c: any) => c.name)).toEqual(['gateway', 'failover', 'trust', 'tcpdump']);
        const [main, , , tcpdump] = t.spec.containers;
        expect(main.resources).toEqual({ requests: { cpu: '750m', memory: '384Mi' }, limits: { memory: '2Gi' } });
        expect(tcpdump).toMatchObject({ image: 'example.org/tcpdump:4.99', securityContext: { runAsUser: 1000, runAsGroup: 1000, runAsNonRoot: true } });
        expect(t.spec.tolerations).toEqual([{ key: 'migration-only', operator: 'Exists', effect: 'NoSchedule' }]);
        expect(t.spec.imagePullSecrets).toEqual([{ name: 'regcred' }]);
        expect(t.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms)
          .toEqual([{ matchExpressions: [{ key: 'example.org/xc', operator: 'In', values: ['true'] }] }]);
        // the gateway's own spread stays beside the user's node affinity
        expect(t.spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution).toHaveLength(1);
      }
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}, 300_000);
