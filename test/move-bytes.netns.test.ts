/**
 * `migration-mesh watch-moves` reading a running move's bytes (issue 51 item 4) through real kube-apiservers' pod
 * proxy, as an identity bound only to the RBAC block of docs/migrations.md (`# migration-mesh-watch`).
 *
 * Two real kube-apiservers (p the hub and target, q the source; RBAC on; test/support/real-kube.ts), Forklift's Plan
 * and Migration CRDs and KubeVirt's VMIM CRD (test/fixtures/upstream). On q:
 *   - two virt-handler pods (label `kubevirt.io=virt-handler`, namespace `kubevirt`), one on q-node-0 (the source
 *     node, named by the source VMIM's status.migrationState.sourceNode) and a decoy on q-node-1 serving other numbers
 *     for the same VMI. Behind each pod IP is the MODEL of virt-handler's metrics endpoint,
 *     test/support/virt-handler-model.js (HTTPS on 8443; no real virt-handler can run without libvirt and a migrating
 *     domain), serving text whose metric names, help, types and labels are read from the pinned KubeVirt module's
 *     source at test time (test/support/virt-handler-metrics.ts), written as client_golang writes it;
 *   - a gateway pod of the generated Deployment migration-mesh-gateway-0 with the REAL gateway runtime behind its IP
 *     (`migration-mesh-proxy run`, the config synth wrote for q with the test's TLS files): its admin /metrics as it
 *     serves it. No migration traffic crosses it here, so its `mm_proxy_tunnel_bytes_total` has no series for p: the
 *     tunnel shows 0 B, which is what that runtime exports.
 * The API server refuses to proxy to loopback pod IPs ("address not allowed"), so each endpoint runs in a network
 * namespace of its own whose `eth0` (a veth to the host namespace) holds the pod IP written into the Pod's status,
 * as test/readiness-network.netns.test.ts does. Needs root and iproute2; run under `flock /tmp/mm-net.lock`.
 */
import { ChildProcess, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse, parseAllDocuments, stringify } from 'yaml';
import { generatedObjects } from '../cli/generated-objects';
import { VIRT_HANDLER_MIGRATION_METRICS } from '../src/forklift/move-bytes';
import { KubeObject, serverSideApply } from './support/real-apply';
import { moduleDir } from './support/real-crds';
import { Identity, RealCluster, RealFleet, kubeconfigFile, spawnLogged } from './support/real-kube';
import { killProcess } from './support/real-trust';
import { PROXY_CLI, gatewayNode } from './support/gateway-node';
import { baseFleet, runCli } from './support/fleets';
import { cliChild, create, moveClusters, setStatus, until, vmim } from './support/move-watch';
import { VmiSample, declaredMigrationMetrics, migrationMetricsText } from './support/virt-handler-metrics';
import { makePki } from '../proxy/lib/testkit/helpers';
import { describeWithNetns } from './support/netns';

const ROOT = path.resolve(__dirname, '..');
const GiB = 1024 ** 3;
const MiB = 1024 ** 2;
const started = Date.now();
const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One pod's endpoint in its own network namespace: eth0 holds the pod IP, the host end of the veth 10.214.i.1. */
interface Endpoint { ns: string; host: string; podIp: string; log: string; proc?: ChildProcess }
const endpoints: Endpoint[] = [];
/** The CLI children a test started, killed in afterAll whatever the test's end. */
const children: ChildProcess[] = [];
let real: RealFleet, p: RealCluster, q: RealCluster, watcher: { p: Identity; q: Identity };
/** The temp directory, the fleet file in it, the watcher's kubeconfig. */
let dir: string, fleetFile: string, kc: string;
let declared: ReturnType<typeof declaredMigrationMetrics>;
let plan: KubeObject;

function endpoint(i: number, short: string): Endpoint {
  const e = { ns: `mmmb-${short}`, host: `mmmbh${i}`, podIp: `10.214.${i}.10`, log: path.join(dir, `${short}.log`) };
  ip('netns', 'add', e.ns);
  ip('link', 'add', e.host, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', e.ns);
  ip('addr', 'add', `10.214.${i}.1/24`, 'dev', e.host);
  ip('link', 'set', e.host, 'up');
  ip('-n', e.ns, 'addr', 'add', `${e.podIp}/24`, 'dev', 'eth0');
  for (const l of ['lo', 'eth0']) ip('-n', e.ns, 'link', 'set', l, 'up');
  endpoints.push(e);
  return e;
}

function cleanNetns(): void {
  for (const n of ['vh0', 'vh1', 'gw']) { try { ip('netns', 'del', `mmmb-${n}`); } catch { /* not there */ } }
  for (const i of [1, 2, 3]) { try { ip('link', 'del', `mmmbh${i}`); } catch { /* gone with its namespace */ } }
}

/** A Pod as the kubelet reports it: Running, Ready, on `node`, with `podIp`. */
async function runningPod(c: RealCluster, namespace: string, name: string, labels: Record<string, string>, node: string, podIp: string, ports: unknown[])
  : Promise<void> {
  const pod = (await c.request('POST', `/api/v1/namespaces/${namespace}/pods`, { apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace, labels },
    spec: { nodeName: node, containers: [{ name: 'main', image: 'x', ports }] } })).json;
  const now = new Date().toISOString();
  const r = await c.request('PUT', `/api/v1/namespaces/${namespace}/pods/${name}/status`, { ...pod, status: { phase: 'Running', podIP: podIp, podIPs: [{ ip: podIp }], hostIP: '127.0.0.1',
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }] } });
  if (r.status !== 200) throw new Error(`pod ${name} status: HTTP ${r.status} ${r.text.slice(0, 200)}`);
}

/** The model's text file for one virt-handler: the samples it keeps (the newest last). */
const textFile = (e: Endpoint) => path.join(dir, `${e.ns}.metrics`);
function serve(e: Endpoint, samples: VmiSample[]): void {
  fs.writeFileSync(`${textFile(e)}.tmp`, migrationMetricsText(declared, samples));
  fs.renameSync(`${textFile(e)}.tmp`, textFile(e));
}

function startModel(e: Endpoint): void {
  e.proc = spawnLogged('ip', ['netns', 'exec', e.ns, process.execPath, path.join(__dirname, 'support', 'virt-handler-model.js'),
    '--listen', `${e.podIp}:8443`, '--cert', path.join(dir, 'vh.crt'), '--key', path.join(dir, 'vh.key'), '--text', textFile(e)], e.log);
}
const scrapes = (e: Endpoint) => fs.readFileSync(e.log, 'utf8').split('\n').filter((l) => l.includes('"request":"/metrics"')).length;

/** The gateway runtime's config: synth's for q, the test's TLS files and trust socket. */
function gatewayConfig(gw: Endpoint): string {
  const f = path.join(dir, 'dist', 'mb', 'q', 'ConfigMap.migration-mesh.migration-mesh-gateway.yaml');
  const cfg = JSON.parse((parse(fs.readFileSync(f, 'utf8')) as { data: Record<string, string> }).data['config.json']);
  const pki = makePki('mb', ['p', 'q']);
  // the addresses of q's gateways: the in-cluster ones and the VIP on mig0, the cross-cluster ones on xc0 (one replica holds them all)
  ip('-n', gw.ns, 'link', 'add', 'mig0', 'type', 'veth', 'peer', 'name', 'mig0x');
  ip('-n', gw.ns, 'link', 'add', 'xc0', 'type', 'veth', 'peer', 'name', 'xc0x');
  for (const a of cfg.ownAddresses as string[]) ip('-n', gw.ns, 'addr', 'add', `${a}/24`, 'dev', a.startsWith('10.200.') ? 'mig0' : 'xc0');
  for (const l of ['mig0', 'mig0x', 'xc0', 'xc0x']) ip('-n', gw.ns, 'link', 'set', l, 'up');
  const file = path.join(dir, 'q-gateway.json');
  fs.writeFileSync(file, JSON.stringify({ ...cfg, tls: { ...cfg.tls, caFile: pki.ca, certFile: pki.certs.q.cert, keyFile: pki.certs.q.key },
    trust: { ...cfg.trust, socket: path.join(dir, 'q-trust.sock') } }));
  return file;
}

/** The docs' RBAC block, applied, and bound as the docs say (cluster-wide; metrics only in kubevirt and migration-mesh). */
async function watchRbac(c: RealCluster): Promise<void> {
  const md = fs.readFileSync(path.join(ROOT, 'docs', 'migrations.md'), 'utf8');
  const block = /```yaml\n# migration-mesh-watch\n([\s\S]*?)```/.exec(md);
  if (!block) throw new Error('docs/migrations.md has no migration-mesh-watch block');
  for (const d of parseAllDocuments(block[1])) await serverSideApply(c, d.toJS() as KubeObject, 'operator');
  const subjects = [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'watcher' }];
  const ref = (name: string) => ({ apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name });
  await serverSideApply(c, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'mm-watch' }, roleRef: ref('migration-mesh-watch'), subjects } as KubeObject, 'operator');
  for (const ns of ['kubevirt', 'migration-mesh']) {
    await serverSideApply(c, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'mm-watch-metrics', namespace: ns },
      roleRef: ref('migration-mesh-watch-metrics'), subjects } as KubeObject, 'operator');
  }
}

const d = describeWithNetns('move-bytes-netns');

d('watch-moves reads the bytes through the pod proxy', () => {
  beforeAll(async () => {
    cleanNetns();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-move-bytes-'));
    declared = declaredMigrationMetrics(moduleDir('kubevirt.io/kubevirt'));
    fleetFile = path.join(dir, 'mb.fleet.yaml');
    fs.writeFileSync(fleetFile, stringify(baseFleet({
      clusters: [{ name: 'p', nodes: 3 }, { name: 'q', nodes: 3 }],
      forklift: { hub: { cluster: 'p', namespace: 'mtv' }, providers: { q: { url: 'https://api.q.example:6443', secret: 'q-provider' } },
        networks: [{ name: 'vlan100', namespace: 'vms' }], storage: [{ source: 'ceph-rbd', storageClass: 'ceph-rbd' }],
        moves: [{ vm: 'db1', namespace: 'vms', from: 'q', to: 'p', batch: 'w1' }] },
    } as any, 'mb')));
    const r = runCli(['synth', fleetFile, '--out', path.join(dir, 'dist'), '--no-svg']);
    if (r.code !== 0) throw new Error(r.err);
    execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'vh.key', '-out', 'vh.crt',
      '-days', '1', '-subj', '/CN=virt-handler'], { cwd: dir, stdio: 'pipe' });
    // the watch reads Plans, Migrations and VMIMs (the VMI only without a sourceNode, which the VMIM here has)
    ({ real, p, q } = await moveClusters({ p: ['mtv', 'vms', 'kubevirt', 'migration-mesh'], q: ['vms', 'kubevirt', 'migration-mesh'] }, false));
    for (const c of [p, q]) await watchRbac(c);
    watcher = { p: p.identity('watcher'), q: q.identity('watcher') };
    kc = kubeconfigFile(path.join(dir, 'watcher.kubeconfig'), [p, q], watcher);
    const [vh0, vh1, gw] = [endpoint(1, 'vh0'), endpoint(2, 'vh1'), endpoint(3, 'gw')];
    const port = [{ name: 'metrics', containerPort: 8443, protocol: 'TCP' }];
    await runningPod(q, 'kubevirt', 'virt-handler-x7k2p', { 'kubevirt.io': 'virt-handler' }, 'q-node-0', vh0.podIp, port);
    await runningPod(q, 'kubevirt', 'virt-handler-m4q9z', { 'kubevirt.io': 'virt-handler' }, 'q-node-1', vh1.podIp, port);
    serve(vh1, [{ namespace: 'vms', name: 'db1', node: 'q-node-1', atMs: Date.now(), values: { [VIRT_HANDLER_MIGRATION_METRICS.processed]: 9 * GiB, [VIRT_HANDLER_MIGRATION_METRICS.remaining]: GiB } }]);
    serve(vh0, []);
    startModel(vh0);
    startModel(vh1);
    const dep = generatedObjects(path.join(dir, 'dist', 'mb', 'q')).find((o) => o.kind === 'Deployment' && o.metadata.name === 'migration-mesh-gateway-0') as any;
    const tpl = dep.spec.template;
    await runningPod(q, 'migration-mesh', 'migration-mesh-gateway-0-a', tpl.metadata.labels, 'q-node-2', gw.podIp, tpl.spec.containers.flatMap((c: any) => c.ports ?? []));
    gw.proc = spawnLogged('ip', ['netns', 'exec', gw.ns, gatewayNode(), PROXY_CLI, 'run', '--config', gatewayConfig(gw)], gw.log);
    // each endpoint answers through q's pod proxy (as admin) before the tests begin
    const answers = async (what: string, url: string, log: string, ms: number) => {
      const t0 = Date.now();
      let last = '';
      for (;;) {
        const r = await q.request('GET', url).catch((e: Error) => ({ status: 0, text: e.message }));
        if (r.status === 200) return;
        last = `HTTP ${r.status} ${r.text.slice(0, 200)}`;
        if (Date.now() - t0 > ms) throw new Error(`${what} not reachable through the pod proxy: ${last}\n${fs.readFileSync(log, 'utf8').slice(-2000)}`);
        await sleep(300);
      }
    };
    await answers('virt-handler-x7k2p', '/api/v1/namespaces/kubevirt/pods/https:virt-handler-x7k2p:8443/proxy/metrics', vh0.log, 30_000);
    await answers('virt-handler-m4q9z', '/api/v1/namespaces/kubevirt/pods/https:virt-handler-m4q9z:8443/proxy/metrics', vh1.log, 30_000);
    await answers('the gateway runtime', '/api/v1/namespaces/migration-mesh/pods/migration-mesh-gateway-0-a:15090/proxy/metrics', gw.log, 60_000);
    plan = await create(p, generatedObjects(path.join(dir, 'dist', 'mb', '_forklift')).find((o) => o.kind === 'Plan') as unknown as KubeObject);
  }, 300_000);

  afterAll(async () => {
    for (const c of [...children, ...endpoints.map((e) => e.proc)]) await killProcess(c);
    cleanNetns();
    await real?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    console.log(`move-bytes-netns: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  test('the model serves what the pinned module declares; the watch identity proxies to virt-handler and gateway pods only', async () => {
    expect(Object.fromEntries(declared.metrics.map((m) => [m.name, m.type]))).toEqual({
      kubevirt_vmi_migration_data_bytes_total: 'counter', kubevirt_vmi_migration_data_remaining_bytes: 'gauge', kubevirt_vmi_migration_data_processed_bytes: 'gauge',
      kubevirt_vmi_migration_dirty_memory_rate_bytes: 'gauge', kubevirt_vmi_migration_memory_transfer_rate_bytes: 'gauge',
    });
    expect(Object.values(VIRT_HANDLER_MIGRATION_METRICS).every((n) => declared.metrics.some((m) => m.name === n))).toBe(true);
    expect(declared.labels).toEqual(['namespace', 'name', 'node']);
    const as = { as: watcher.q };
    const decoy = await q.request('GET', '/api/v1/namespaces/kubevirt/pods/https:virt-handler-m4q9z:8443/proxy/metrics', undefined, as);
    expect([decoy.status, decoy.text]).toEqual([200, fs.readFileSync(textFile(endpoints[1]), 'utf8')]);
    expect((await q.request('GET', '/api/v1/namespaces/migration-mesh/pods/migration-mesh-gateway-0-a:15090/proxy/metrics', undefined, as)).text)
      .toMatch(/^# TYPE mm_proxy_tunnel_bytes_total counter$/m);
    await q.request('POST', '/api/v1/namespaces/vms/pods', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'other', namespace: 'vms' }, spec: { containers: [{ name: 'c', image: 'x' }] } });
    const refused = await q.request('GET', '/api/v1/namespaces/vms/pods/other:80/proxy/', undefined, as);
    expect(refused.status).toBe(403);
    expect(refused.json.message).toBe('pods "other:80" is forbidden: User "watcher" cannot get resource "pods/proxy" in API group "" in the namespace "vms"');
  }, 60_000);

  test('a running move: processed, remaining, the rate and the tunnel as served, a refused read shown and survived, 0 at the end', async () => {
    const [vh0] = endpoints;
    const t1 = Date.now();
    const s1: VmiSample = { namespace: 'vms', name: 'db1', node: 'q-node-0', atMs: t1, values: {
      [VIRT_HANDLER_MIGRATION_METRICS.processed]: GiB, [VIRT_HANDLER_MIGRATION_METRICS.remaining]: 3 * GiB,
      [VIRT_HANDLER_MIGRATION_METRICS.total]: 4 * GiB, [VIRT_HANDLER_MIGRATION_METRICS.rate]: 100 * MiB } };
    serve(vh0, [s1]);
    const w = cliChild(['watch-moves', fleetFile, '--timeout', '150', '--output', 'json'], kc, path.join(dir, 'dist'));
    children.push(w);
    const lines = () => w.out().split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((j) => j.vm === 'vms/db1');
    const seen = (ok: (j: any) => boolean) => lines().some(ok);
    await create(p, { apiVersion: 'forklift.konveyor.io/v1beta1', kind: 'Migration', metadata: { name: 'w1-1', namespace: 'mtv' }, spec: { plan: { name: plan.metadata.name, namespace: 'mtv' } } } as KubeObject,
      { vms: [{ name: 'db1', namespace: 'vms', phase: 'StartMigration', pipeline: [{ name: 'Migrate', phase: 'Running', progress: { completed: 0, total: 1 } }] }] });
    const src = await create(q, vmim('db1-out', 'db1', 'vms'), { phase: 'Running', migrationState: { sourceNode: 'q-node-0', startTimestamp: new Date().toISOString(), mode: 'PreCopy' } });
    const dst = await create(p, vmim('db1-in', 'db1', 'vms'), { phase: 'Synchronizing' });
    const watchStart = Date.now();
    const before = scrapes(vh0);
    await until('the first bytes', () => seen((j) => j.bytes?.processed !== undefined), 30_000);
    const first = lines().find((j) => j.bytes?.processed !== undefined);
    expect(first.bytes).toEqual({ processed: GiB, remaining: 3 * GiB, rateBytesPerSecond: 100 * MiB, source: 'virt-handler' });
    expect(first.tunnel).toEqual({ path: 'q->p', peer: 'p', txBytes: 0, rxBytes: 0, gateways: 1, source: 'gateway' });
    // the next libvirt result, without a transfer rate: the rate is processed's growth between the two samples
    const m = VIRT_HANDLER_MIGRATION_METRICS;
    serve(vh0, [s1, { ...s1, atMs: t1 + 5000, values: { [m.processed]: 2 * GiB, [m.remaining]: 2 * GiB } }]);
    await until('the second reading', () => seen((j) => j.bytes?.processed === 2 * GiB), 30_000);
    expect(lines().find((j) => j.bytes?.processed === 2 * GiB).bytes).toEqual({ processed: 2 * GiB, remaining: 2 * GiB, rateBytesPerSecond: Math.round(GiB / 5), source: 'virt-handler' });
    // the same as a person reads it (a second watch, plain lines)
    const text = cliChild(['watch-moves', fleetFile, '--timeout', '20'], kc, path.join(dir, 'dist'));
    children.push(text);
    await until('a plain line with bytes', () => /GiB of/.test(text.out()), 30_000);
    text.kill('SIGTERM');
    expect(text.out().split('\n').find((l) => /GiB of/.test(l))).toBe('vms/db1 via q->p: running Running, 2.0 GiB of 4.0 GiB, 204.8 MiB/s, tunnel p 0 B');
    // the source node's virt-handler stops answering: unknown with the reason, and the watch goes on
    await killProcess(vh0.proc);
    await until('the refused read', () => seen((j) => j.bytes?.unknown !== undefined), 30_000);
    expect(lines().find((j) => j.bytes?.unknown).bytes.unknown)
      .toMatch(/^virt-handler metrics on q: HTTP 503: error trying to reach service: dial tcp 10\.214\.1\.10:8443: connect: connection refused/);
    expect(w.exitCode).toBeNull();
    startModel(vh0);
    await until('bytes again', () => lines().slice(-1)[0]?.bytes?.processed === 2 * GiB, 40_000);
    // at most one read of the source node's virt-handler per 5 s interval (and one by the plain watch), never the decoy's numbers
    expect(scrapes(vh0) - before).toBeLessThanOrEqual(Math.ceil((Date.now() - watchStart) / 5000) + 2);
    expect(lines().some((j) => j.bytes?.processed === 9 * GiB)).toBe(false);
    await setStatus(q, src, { phase: 'Succeeded', migrationState: { sourceNode: 'q-node-0', completed: true, endTimestamp: new Date().toISOString() } });
    await setStatus(p, dst, { phase: 'Succeeded' });
    const r = await w.result;
    expect(r.code).toBe(0);
    expect(lines().slice(-1)[0]).toMatchObject({ state: 'completed', bytes: { processed: 2 * GiB, remaining: 0, source: 'virt-handler' } });
  }, 200_000);
});
