/**
 * `migration-mesh status --moves`, the network readiness check (src/report/readiness.ts `network`) on real parts:
 * two real kube-apiservers (RBAC on; test/support/real-kube.ts), and on each cluster the REAL gateway runtime
 * (`migration-mesh-proxy run`, proxy/lib/cli.js on the gateway's Node, test/support/gateway-node.ts) with the config
 * synth wrote for that cluster (its ConfigMap's config.json: listeners, peers, limits, trust, the repush interval
 * left at its 300 s; only the TLS file paths and the trust socket are the test's), and its REAL trust
 * container (`migration-mesh-proxy trust`) against its API server, with `kubevirt-ca` / `kubevirt-external-ca` as
 * virt-operator creates them (its merge of the second into the first is done here: no virt-operator runs).
 *
 * Each runtime runs in a network namespace of its own (mmrn-p, mmrn-q) as in its pod: `eth0` is one end of a veth
 * whose other end is in the host namespace, so the gateway pod's IP (written to the Pod's status as the kubelet
 * would) is reachable from the API server, which refuses to proxy to loopback pod IPs ("address not allowed",
 * test/kubevirt.real.test.ts); the admin listener is bound to `eth0` as in production. The two runtimes' `xc0`
 * are the two ends of one veth (the shared cross-cluster network) holding the addresses the plan gave each
 * cluster's two gateways; one replica per cluster runs, so it holds both. `mig0` exists for the intercept listener.
 * The CLI reads each gateway pod's admin /status through the API server's pod proxy, as a user bound only to the
 * generated status ClusterRole.
 *   - both runtimes up: their trust publications through the tunnel listener (mTLS, the same path a tunnel takes)
 *     are accepted; db1's move passes every check, the network check included, exit 0;
 *   - q's runtime killed, no tunnel open: p's last publications to q still say `accepted` (the next is up to 300 s
 *     away), but p's admin /probe (a tunnel's handshake to each of q's gateways, made when status asks) fails at
 *     once: within the probe's cache and timeout of the kill the move is refused with status/ready-tunnel-down, exit 1.
 * Needs root and iproute2 (network namespaces); run under `flock /tmp/mm-net.lock`.
 */
import { ChildProcess, execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { generatedObjects } from '../cli/generated-objects';
import { KubeObject, crdsFor, installCrds, serverSideApply, stagesOf } from './support/real-apply';
import { kubevirtWorkloadCrds, upstreamCrds } from './support/real-crds';
import { RealCluster, RealFleet, spawnLogged } from './support/real-kube';
import { killProcess, startTrust, virtOperatorConfigMap } from './support/real-trust';
import { PROXY_CLI, gatewayNode } from './support/gateway-node';
import { runCli } from './support/fleets';
import { readinessFleet, statusMoves } from './support/status-moves';
import { makePki } from '../proxy/lib/testkit/helpers';
import { describeWithNetns } from './support/netns';
import { makeCert } from '../proxy/lib/testkit/ca-certs';
import { PROBE_CACHE_MS, PROBE_TIMEOUT_MS } from '../proxy/lib/peer-probe';

const NAMES = ['p', 'q'] as const;
const H = 3600_000;
const started = Date.now();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const ip = (...args: string[]) => execFileSync('ip', args, { stdio: 'pipe' });

interface Site {
  name: string; cluster: RealCluster; ns: string; podIp: string; log: string; trustLog: string; cfgFile: string;
  runtime?: ChildProcess; trust?: ChildProcess; ownCa?: string;
}
let real: RealFleet;
let dir: string;
let fleetFile: string;
let kc: string;
const sites: Site[] = [];
const site = (n: string) => sites.find((s) => s.name === n)!;

async function ok(c: RealCluster, method: string, url: string, body: unknown): Promise<any> {
  const r = await c.request(method, url, body);
  if (r.status >= 300) throw new Error(`${c.name} ${method} ${url}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
  return r.json;
}

/** Polls `probe` every 200 ms; throws after `ms` naming `what`. */
async function until(what: string, ms: number, probe: () => Promise<boolean>): Promise<void> {
  const t0 = Date.now();
  while (!await probe().catch(() => false)) {
    if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms} ms\n${sites.map((s) => `--- ${s.name}\n${tail(s.log)}\n${tail(s.trustLog)}`).join('\n')}`);
    await sleep(200);
  }
}
const tail = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').slice(-6).join('\n') : '(no log)');

/** The runtime's /status as the API server's pod proxy serves it. */
async function runtimeStatus(s: Site): Promise<any> {
  const r = await s.cluster.request('GET', `/api/v1/namespaces/migration-mesh/pods/migration-mesh-gateway-0-a:15090/proxy/status`, undefined);
  if (r.status !== 200) throw new Error(`${s.name} /status through the pod proxy: HTTP ${r.status} ${r.text.slice(0, 200)}`);
  return r.json;
}

const status = () => statusMoves(fleetFile, path.join(dir, 'dist'), kc);
const findings = (s: any): string[] => s.findings.map((f: any) => `${f.severity} ${f.message}`);
const REPLICAS = ['warning p: 1/2 gateway replicas ready', 'warning q: 1/2 gateway replicas ready'];
const db1 = (s: any) => s.moves.find((m: any) => m.vm === 'vms/db1');

/** The network namespace of one gateway pod: eth0 (veth to the host: the pod IP), mig0, and its end of xc0. */
function netns(s: Site, i: number): void {
  ip('netns', 'add', s.ns);
  ip('link', 'add', `mmrnh${i}`, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', s.ns);
  ip('addr', 'add', `10.213.${i}.1/24`, 'dev', `mmrnh${i}`);
  ip('link', 'set', `mmrnh${i}`, 'up');
  ip('-n', s.ns, 'addr', 'add', `${s.podIp}/24`, 'dev', 'eth0');
  ip('-n', s.ns, 'link', 'add', 'mig0', 'type', 'veth', 'peer', 'name', 'mig0x');
  for (const l of ['lo', 'eth0', 'mig0', 'mig0x']) ip('-n', s.ns, 'link', 'set', l, 'up');
}

function cleanNetns(): void {
  for (const n of NAMES) { try { ip('netns', 'del', `mmrn-${n}`); } catch { /* not there */ } }
  for (const i of [1, 2]) { try { ip('link', 'del', `mmrnh${i}`); } catch { /* gone with its namespace */ } }
}

/** The gateway config synth wrote for the cluster, with the test's TLS files and trust socket. */
function gatewayConfig(s: Site, tls: { ca: string; cert: string; key: string }): any {
  const f = path.join(dir, 'dist', 'rn', s.name, 'ConfigMap.migration-mesh.migration-mesh-gateway.yaml');
  const cfg = JSON.parse((parse(fs.readFileSync(f, 'utf8')) as { data: Record<string, string> }).data['config.json']);
  expect(cfg.trust.repushIntervalMs).toBe(300_000);
  return { ...cfg, tls: { ...cfg.tls, caFile: tls.ca, certFile: tls.cert, keyFile: tls.key }, trust: { ...cfg.trust, socket: path.join(dir, `${s.name}-trust.sock`) } };
}

/** The runtime's /probe as the API server's pod proxy serves it. */
async function runtimeProbe(s: Site): Promise<any> {
  const r = await s.cluster.request('GET', `/api/v1/namespaces/migration-mesh/pods/migration-mesh-gateway-0-a:15090/proxy/probe`, undefined);
  if (r.status !== 200) throw new Error(`${s.name} /probe through the pod proxy: HTTP ${r.status} ${r.text.slice(0, 200)}`);
  return r.json;
}

/** The gateway pod of Deployment migration-mesh-gateway-0, its status as the kubelet writes it: Running, Ready, the pod IP. */
async function gatewayPod(s: Site): Promise<void> {
  const d = generatedObjects(path.join(dir, 'dist', 'rn', s.name)).find((o) => o.kind === 'Deployment' && o.metadata.name === 'migration-mesh-gateway-0') as any;
  const t = d.spec.template;
  const pod = await ok(s.cluster, 'POST', '/api/v1/namespaces/migration-mesh/pods', { apiVersion: 'v1', kind: 'Pod',
    metadata: { name: 'migration-mesh-gateway-0-a', namespace: 'migration-mesh', labels: t.metadata.labels },
    spec: { containers: t.spec.containers.map((c: any) => ({ name: c.name, image: c.image, ports: c.ports })) } });
  const now = new Date().toISOString();
  await ok(s.cluster, 'PUT', '/api/v1/namespaces/migration-mesh/pods/migration-mesh-gateway-0-a/status', { ...pod, status: {
    phase: 'Running', podIP: s.podIp, podIPs: [{ ip: s.podIp }], hostIP: '127.0.0.1',
    conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: now }, { type: 'ContainersReady', status: 'True', lastTransitionTime: now }] } });
  // what the Deployment controller then reports
  const url = '/apis/apps/v1/namespaces/migration-mesh/deployments/migration-mesh-gateway-0';
  const live = await ok(s.cluster, 'GET', url, undefined);
  await ok(s.cluster, 'PUT', `${url}/status`, { ...live, status: { observedGeneration: live.metadata.generation, replicas: 1, readyReplicas: 1, availableReplicas: 1, updatedReplicas: 1 } });
}

/** KubeVirt's CR (the generated one, virt-operator's reported version), a node for db1 and the target storage class. */
async function platform(): Promise<void> {
  const [p, q] = [site('p').cluster, site('q').cluster];
  const kvCrds = upstreamCrds().filter((c) => c.crd.metadata.name === 'kubevirts.kubevirt.io').map((c) => c.crd);
  await installCrds(p, [...kvCrds, ...kubevirtWorkloadCrds(), ...upstreamCrds().filter((c) => c.crd.metadata.name.endsWith('.forklift.konveyor.io')).map((c) => c.crd)] as never);
  await installCrds(q, [...kvCrds, ...kubevirtWorkloadCrds()] as never);
  for (const s of sites) {
    const c = s.cluster;
    for (const ns of ['vms', 'kubevirt', 'mtv']) await serverSideApply(c, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } as KubeObject, 'platform-installer');
    // the cluster's tree, applied as a GitOps engine applies it (forced), then the KubeVirt CR's status as virt-operator reports it
    const stages = stagesOf(path.join(dir, 'dist', 'rn', s.name), (d) => c.kubectl(['kustomize', d]));
    const all = stages.flatMap((x) => x.objects);
    await installCrds(c, crdsFor(all, upstreamCrds().map((x) => x.crd).filter((x) => x.metadata.name !== 'kubevirts.kubevirt.io')));
    for (const o of all) await serverSideApply(c, o, 'migration-mesh', { force: true });
    const kv = all.find((o) => o.kind === 'KubeVirt')!;
    const url = `/apis/kubevirt.io/v1/namespaces/${kv.metadata.namespace}/kubevirts/${kv.metadata.name}`;
    await ok(c, 'PUT', `${url}/status`, { ...await ok(c, 'GET', url, undefined), status: { observedKubeVirtVersion: 'v1.8.4', phase: 'Deployed' } });
    await serverSideApply(c, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'readiness-viewer' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'migration-mesh-status' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'readiness-viewer' }] } as KubeObject, 'platform-installer');
    // what virt-operator creates: the cluster's CA in kubevirt-ca, an empty kubevirt-external-ca
    const ca = makeCert(`kubevirt.io@${s.name}`, Date.now() - H, Date.now() + 168 * H);
    s.ownCa = ca.pem;
    for (const [name, bundle] of [['kubevirt-ca', ca.pem], ['kubevirt-external-ca', '']]) {
      await ok(c, 'POST', '/api/v1/namespaces/kubevirt/configmaps?fieldManager=virt-operator', virtOperatorConfigMap(name, 'kubevirt', bundle));
    }
  }
  await serverSideApply(q, { apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name: 'db1-root', namespace: 'vms' },
    spec: { storageClassName: 'ceph-rbd', accessModes: ['ReadWriteMany'], volumeMode: 'Block', resources: { requests: { storage: '20Gi' } } } } as unknown as KubeObject, 'user');
  await serverSideApply(q, { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', metadata: { name: 'db1', namespace: 'vms' },
    spec: { runStrategy: 'Always', template: { spec: { domain: { cpu: { cores: 2 }, resources: { requests: { cpu: '2', memory: '4Gi' } },
      devices: { disks: [{ name: 'root', disk: { bus: 'virtio' } }] } }, volumes: [{ name: 'root', persistentVolumeClaim: { claimName: 'db1-root' } }] } } } } as unknown as KubeObject, 'user');
  await serverSideApply(p, { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', metadata: { name: 'ceph-rbd' }, provisioner: 'rbd.csi.ceph.com' } as KubeObject, 'platform-installer');
  const node = await ok(p, 'POST', '/api/v1/nodes', { apiVersion: 'v1', kind: 'Node', metadata: { name: 'p-node-0', labels: { 'kubevirt.io/schedulable': 'true', 'kubernetes.io/hostname': 'p-node-0' } } });
  const now = new Date().toISOString();
  const st = await ok(p, 'PUT', '/api/v1/nodes/p-node-0/status', { ...node, status: { allocatable: { cpu: '16', memory: '64Gi', pods: '110' }, capacity: { cpu: '16', memory: '64Gi', pods: '110' },
    conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: now, lastTransitionTime: now }] } });
  // the not-ready taint the node lifecycle controller lifts once the node is Ready (test/readiness.real.test.ts)
  await ok(p, 'PUT', '/api/v1/nodes/p-node-0', { ...st, spec: { ...st.spec, taints: [] } });
}

const d = describeWithNetns('readiness-network-netns');

d('the network readiness check against two real gateway runtimes', () => {
  beforeAll(async () => {
    cleanNetns();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-readiness-net-'));
    fleetFile = path.join(dir, 'rn.fleet.yaml');
    fs.writeFileSync(fleetFile, stringify(readinessFleet(['db1'], 'rn')));
    const r = runCli(['synth', fleetFile, '--out', path.join(dir, 'dist'), '--no-svg']);
    if (r.code !== 0) throw new Error(r.err);
    real = await RealFleet.start([...NAMES]);
    for (const [i, name] of NAMES.entries()) {
      sites.push({ name, cluster: real.cluster(name), ns: `mmrn-${name}`, podIp: `10.213.${i + 1}.10`, log: path.join(dir, `${name}-run.log`),
        trustLog: path.join(dir, `${name}-trust.log`), cfgFile: path.join(dir, `${name}-gateway.json`) });
    }
    for (const [i, s] of sites.entries()) netns(s, i + 1);
    // the shared cross-cluster network: one veth, xc0 in each namespace, holding the addresses of the cluster's gateways
    ip('link', 'add', 'xc0', 'netns', 'mmrn-p', 'type', 'veth', 'peer', 'name', 'xc0', 'netns', 'mmrn-q');
    const pki = makePki('rn', [...NAMES]);
    for (const s of sites) {
      const cfg = gatewayConfig(s, { ca: pki.ca, cert: pki.certs[s.name].cert, key: pki.certs[s.name].key });
      const own = (cfg.ownAddresses as string[]).filter((a) => a.startsWith('192.168.50.'));
      expect(own).toHaveLength(2);
      for (const a of own) ip('-n', s.ns, 'addr', 'add', `${a}/24`, 'dev', 'xc0');
      // the in-cluster addresses of both gateways and the VIP (keepalived's) on mig0: the one replica holds them all
      const inCluster = (cfg.ownAddresses as string[]).filter((a) => a.startsWith('10.200.'));
      expect(inCluster).toHaveLength(3);
      for (const a of inCluster) ip('-n', s.ns, 'addr', 'add', `${a}/24`, 'dev', 'mig0');
      ip('-n', s.ns, 'link', 'set', 'xc0', 'up');
      fs.writeFileSync(s.cfgFile, JSON.stringify(cfg));
    }
    await platform();
    for (const s of sites) {
      await gatewayPod(s);
      s.runtime = spawnLogged('ip', ['netns', 'exec', s.ns, gatewayNode(), PROXY_CLI, 'run', '--config', s.cfgFile], s.log);
    }
    for (const s of sites) await until(`${s.name}'s runtime /status through the pod proxy`, 30_000, async () => !!(await runtimeStatus(s)).peers);
    // the trust containers (host namespace: they reach their API server on loopback, and their runtime by its unix socket)
    for (const s of sites) s.trust = startTrust(s.cfgFile, 'kubevirt', s.cluster.kubeconfig(), s.trustLog);
    const id = site('p').cluster.identity('readiness-viewer');
    const idq = site('q').cluster.identity('readiness-viewer');
    kc = path.join(dir, 'viewer.kubeconfig');
    const user = (x: typeof id) => ('token' in x ? { token: x.token } : { 'client-certificate': x.cert, 'client-key': x.key });
    fs.writeFileSync(kc, JSON.stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'p',
      clusters: sites.map((s) => ({ name: s.name, cluster: { server: s.cluster.url, 'certificate-authority': s.cluster.caFile } })),
      users: [{ name: 'viewer-p', user: user(id) }, { name: 'viewer-q', user: user(idq) }],
      contexts: sites.map((s) => ({ name: s.name, context: { cluster: s.name, user: `viewer-${s.name}` } })),
    }));
  }, 300_000);

  afterAll(async () => {
    for (const s of sites) { await killProcess(s.trust); await killProcess(s.runtime); }
    cleanNetns();
    await real?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
    console.log(`readiness-network-netns: ${((Date.now() - started) / 1000).toFixed(1)} s`);
  });

  /**
   * virt-operator's part, which no virt-operator runs here to do (test/kubevirt.real.test.ts runs it): once the trust
   * container has written the peer's CA into `kubevirt-external-ca`, merge it into `kubevirt-ca` behind the own CA.
   */
  async function mergeExternalCa(s: Site): Promise<boolean> {
    const cms = '/api/v1/namespaces/kubevirt/configmaps';
    const ext = (await ok(s.cluster, 'GET', `${cms}/kubevirt-external-ca`, undefined)).data?.['ca-bundle'] ?? '';
    if (!ext.includes('BEGIN CERTIFICATE')) return false;
    const r = await s.cluster.request('PATCH', `${cms}/kubevirt-ca?fieldManager=virt-operator`, { data: { 'ca-bundle': `${s.ownCa}${ext}` } }, { contentType: 'application/merge-patch+json' });
    return r.status === 200;
  }

  test('both gateways up: trust publications through the tunnel accepted both ways; db1 passes the network check (exit 0)', async () => {
    const accepted = async (a: Site, b: string) => ((await runtimeStatus(a)).peers[b].publications ?? []).filter((x: any) => x.status === 'accepted').length === 2;
    await until('publications accepted both ways', 30_000, async () => await accepted(site('p'), 'q') && await accepted(site('q'), 'p'));
    for (const s of sites) await until(`${s.name}'s kubevirt-external-ca holding its peer's CA`, 30_000, () => mergeExternalCa(s));
    const r = await status();
    expect(r.err).toBe('');
    expect(db1(r.json).problems).toEqual([]);
    // what status says beside: one of each cluster's two planned gateway replicas runs here (a warning), nothing else
    expect(findings(r.json)).toEqual(REPLICAS);
    expect(r.code).toBe(0);
  }, 120_000);

  test('q\'s gateway stopped, no tunnel open: p\'s probe sees it within its cache and timeout; db1 is refused with status/ready-tunnel-down (exit 1)', async () => {
    const q = site('q');
    const p = site('p');
    await killProcess(q.trust);
    await killProcess(q.runtime);
    const killed = Date.now();
    // what p's probe says once its cached result (from the status run before) is gone: q's gateways refuse the connection
    await until('p\'s /probe of q failing', PROBE_CACHE_MS + PROBE_TIMEOUT_MS + 10_000, async () => !(await runtimeProbe(p)).peers.find((x: any) => x.peer === 'q').ok);
    const seen = Date.now() - killed;
    console.log(`readiness-network-netns: q's kill seen by p's /probe after ${seen} ms (its cache ${PROBE_CACHE_MS} ms, timeout ${PROBE_TIMEOUT_MS} ms)`);
    // bounded by the work: the cache's age plus one probe (a refused connect ends at once), and a loaded machine's slack
    expect(seen).toBeLessThan(PROBE_CACHE_MS + PROBE_TIMEOUT_MS + 5000);
    // no tunnel open, and p's publications to q, 300 s apart, still say accepted: only the probe could see q gone
    const view = (await runtimeStatus(p)).peers.q;
    expect(view.tunnels).toEqual({ origin: 0, terminus: 0 });
    expect(view.publications.map((x: any) => x.status)).toEqual(['accepted', 'accepted']);
    const r = await status();
    expect(r.err).toBe('');
    expect(r.code).toBe(1);
    // the one problem of the move; q's runtime is gone from behind the pod proxy
    const net = db1(r.json).problems;
    expect(net.map((x: any) => `${x.check} ${x.severity ?? 'error'} ${x.code}`)).toEqual(['network error status/ready-tunnel-down']);
    expect(findings(r.json)).toEqual([...REPLICAS,
      'warning q: gateway pod migration-mesh-gateway-0-a admin /status not readable through the pod proxy: error trying to reach service: dial tcp 10.213.2.10:15090: connect: connection refused']);
    const gw = String.raw`192\.168\.50\.\d+:\d+: connect ECONNREFUSED 192\.168\.50\.\d+:\d+`;
    expect(net[0].message).toMatch(new RegExp(`^no gateway of p can open a tunnel to q now: their probe of q's gateways \\(a tunnel's TLS handshake and identity check\\) failed \\(migration-mesh-gateway-0-a: ${gw}; ${gw}\\)$`));
    expect(net[0].fix).toMatch(/^check the path between p's and q's gateways/);
  }, 120_000);
});
