/**
 * KubeVirt's own code reads what we write. Three real API servers, each with KubeVirt v1.8.4's virt-operator
 * (test/support/real-kubevirt.ts), which creates `kubevirt-ca` and `kubevirt-external-ca` and merges the second
 * into the first. On each cluster our gateway runtime and trust container run as the pod runs them
 * (`migration-mesh-proxy run` and `trust`, proxy/lib/cli.js), the trust container with the example's trust Role,
 * authenticated by a ServiceAccount token from TokenRequest. Checks:
 *   - virt-operator's `kubevirt-ca` holds every peer's current CA once the exchange runs, and keeps it through its
 *     reconciles; then, after a short CA duration is set in kv-b's KubeVirt CR, each of the two CA rotations it forces
 *     in a row puts kv-b's new CA in every peer's kubevirt-ca (see SHORT_CA for why not the other way round, and why
 *     only from then on). The times are printed. Why a rotation takes more than
 *     virt-operator's 5 s: it re-queues the KubeVirt CR 5 s after any change to a ConfigMap
 *     it watches (kubevirt.go `defaultAddDelay`), merges, then empties `kubevirt-external-ca` with an unconditional
 *     Update; a peer's push that lands between its read and that Update is lost, and the trust container writes it
 *     again (at least `minRewriteMs`, 2 s, later), which costs a second 5 s delay. Measured here (2 cores): the first
 *     exchange 5-13 s from the processes' start, a rotation 3-5 s from the new CA in its own kubevirt-ca (0.3-0.9 s
 *     when every cluster rotates and every operator is re-queued anyway);
 *   - KubeVirt's virt-handler TLS code (real/kubevirt-bins/cmd/mm-handler-tls: NewCAManager on an informer of
 *     `kubevirt-ca`, SetupTLSForVirtHandlerClients/Server, virt-operator's handler certificates) refuses a
 *     handshake between two clusters' handlers before the exchange and completes it after;
 *   - `migration-mesh status` across the three real API servers, as a user bound to the generated read-only
 *     ClusterRole (real RBAC), with kube-controller-manager, kube-scheduler and kwok (test/support/real-nodes.ts)
 *     running the pods of our Deployments and of KubeVirt's own virt-handler DaemonSet and sync controller: after
 *     our trees are applied (forced, as a GitOps engine applies), every pair ready, every object in sync, the trust
 *     matrix (from virt-operator's own kubevirt-ca) all yes; a hand edit is the one error. The gateways' own /status
 *     stays unread (a warning): the API server will not proxy to kwok's loopback pod IPs.
 */
import { ChildProcess, execFile } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import type { ProxyConfigInput } from '../proxy/src/config';
import { freePort, makePki, type Pki } from '../proxy/src/testkit/helpers';
import { createNamespaces, crdsFor, installCrds, platformNamespaces, serverSideApply, stagesOf, type KubeObject } from './support/real-apply';
import { upstreamCrds } from './support/real-crds';
import { baseFleet, runCli } from './support/fleets';
import { runStatus } from './support/status-clusters';
import { NO_WEBHOOKS, RealKubevirt, kubevirtBinDir } from './support/real-kubevirt';
import { RealFleet, type RealCluster } from './support/real-kube';
import { ServerWatch } from './support/real-watch';
import { RealNodes } from './support/real-nodes';
import { killProcess, startRuntime, startTrust, tokenKubeconfig } from './support/real-trust';
import { untilQuiet } from './support/work-bound';

const NAMES = ['kv-a', 'kv-b', 'kv-c'];
/** The trust objects an example cluster's output carries (a three-cluster fleet, plain KubeVirt CR delivery). */
const EXAMPLE = path.resolve(__dirname, '..', 'dist', 'policies', 'lab-a');
/**
 * Set on kv-b by the rotation test (until then all three keep KubeVirt's default, 7 days renewed 33.6 h before):
 * kv-b's CA then rotates every ~15 s, valid 2 min, renewed 105 s before it ends. kv-a and kv-c keep the default,
 * so from then on this fleet breaks our own rule (src/trust/plan.ts: every cluster's rotation period at most every
 * exchanging cluster's overlap), on purpose, to force rotations quickly. What that costs on kv-b: virt-operator's
 * MergeCABundle keeps a certificate only while every newer one in kubevirt-ca is younger than the overlap (105 s),
 * and kv-a's and kv-c's CAs are older than kv-b's own CAs of the last two minutes, one of which is always older than
 * the overlap: every reconcile on kv-b drops them, and they are there only from a merge of what the trust container
 * wrote until virt-operator's next reconcile (at least 5 s; the container then rewrites with a doubling wait and warns
 * that virt-operator keeps dropping them). So what a rotation of kv-b must reach, and does whatever the load, is
 * kv-a's and kv-c's kubevirt-ca: there nothing newer than their own CA is older than their overlap (33.6 h). Two CI
 * runs under load failed while the test also waited for kv-b to hold its peers again; and the exchange test, while
 * kv-b rotated from the start, could see kv-b hold its peers only in those windows: so the short CA comes after it.
 */
const SHORT_CA = { duration: '2m0s', renewBefore: '1m45s' };

const fingerprints = (bundle: string | undefined) => (bundle ?? '').split(/(?=-----BEGIN CERTIFICATE-----)/).filter((b) => b.includes('BEGIN'))
  .map((b) => new crypto.X509Certificate(b).fingerprint256).sort();

function exampleTrustObjects(): KubeObject[] {
  return fs.readdirSync(EXAMPLE).filter((f) => /^(ServiceAccount|Role|RoleBinding|Namespace)\./.test(f))
    .map((f) => parse(fs.readFileSync(path.join(EXAMPLE, f), 'utf8')) as KubeObject);
}

function handshake(from: RealCluster, to: RealCluster, waitMs = 0): Promise<{ ok: boolean; error: string; tries: number }> {
  return new Promise((resolve, reject) => {
    execFile(path.join(kubevirtBinDir(), 'mm-handler-tls'), ['--source-kubeconfig', from.kubeconfig(), '--target-kubeconfig', to.kubeconfig(), `--wait=${waitMs}ms`],
      { timeout: waitMs + 60_000 }, (err, stdout, stderr) => {
        const line = stdout.trim().split('\n').pop() ?? '';
        try { resolve(JSON.parse(line)); } catch { reject(new Error(`mm-handler-tls: ${err?.message ?? ''} ${stderr.slice(-500)}`)); }
      });
  });
}

interface Site { cluster: RealCluster; kv: RealKubevirt; nodes?: RealNodes; runtime?: ChildProcess; trust?: ChildProcess }

let fleet: RealFleet;
let sites: Site[];
/** Measured times, printed at the end. */
const timings: string[] = [];
let pki: Pki;

beforeAll(async () => {
  fleet = await RealFleet.start(NAMES, { apiserverFlags: NO_WEBHOOKS });
  // KubeVirt's default CA rotation on all three until the rotation test gives kv-b SHORT_CA
  sites = NAMES.map((n, i) => ({ cluster: fleet.cluster(n), kv: new RealKubevirt(fleet.cluster(n), { listen: `127.0.0.${31 + i}` }) }));
  // two kwok nodes per cluster, pod IPs on loopback (127.1.N.0/24): Deployments and DaemonSets get Running pods
  for (const [i, s] of sites.entries()) s.nodes = await RealNodes.start(s.cluster, { count: 2, podCidr: `127.1.${i + 1}.0/24` });
  await Promise.all(sites.map((s) => s.kv.install()));
  pki = makePki('fleet', NAMES);
}, 300_000);

afterAll(async () => {
  process.stdout.write(`[kubevirt-real] ${timings.join('; ')}\n`);
  for (const s of sites ?? []) {
    await killProcess(s.trust); await killProcess(s.runtime); await s.kv.stop(); await s.nodes?.stop();
  }
  await fleet?.stop();
}, 60_000);

test('virt-operator creates kubevirt-ca and an empty kubevirt-external-ca, labelled as its informer selects them', async () => {
  for (const s of sites) {
    const ca = await s.kv.configMap('kubevirt-ca');
    const ext = await s.kv.configMap('kubevirt-external-ca');
    expect(fingerprints(ca?.data?.['ca-bundle']).length).toBeGreaterThanOrEqual(1);
    expect(ext?.data?.['ca-bundle']).toBe('');
    expect(ext?.metadata.labels?.['app.kubernetes.io/managed-by']).toBe('virt-operator');
  }
});

test('before the exchange, KubeVirt\'s handler TLS refuses the other cluster\'s handler', async () => {
  const r = await handshake(sites[0].cluster, sites[1].cluster);
  expect(r.ok).toBe(false);
  expect(r.error).toMatch(/could not verify peer certificate|unknown authority|bad certificate/);
}, 90_000);

test('our exchange, under the example\'s Role: virt-operator\'s kubevirt-ca holds every peer\'s CA and keeps it; the handshake then completes', async () => {
  const ports = await Promise.all(NAMES.map(() => freePort()));
  for (const [i, s] of sites.entries()) {
    for (const o of exampleTrustObjects()) await serverSideApply(s.cluster, o);
    const socket = path.join(s.cluster.dir, 'trust.sock');
    const cfg: ProxyConfigInput = {
      version: 1, fleet: 'fleet', cluster: NAMES[i],
      listen: { intercept: { host: '127.0.0.1', port: await freePort() }, tunnel: { host: '127.0.0.1', port: ports[i] }, admin: { host: '127.0.0.1', port: await freePort() } },
      localCidrs: ['10.99.0.0/24'],
      peers: NAMES.map((p, j) => ({ cluster: p, cidrs: [`10.${100 + j}.0.0/24`], gateways: [{ host: '127.0.0.1', port: ports[j] }] })).filter((p) => p.cluster !== NAMES[i]),
      tls: { mode: 'mtls', caFile: pki.ca, certFile: pki.certs[NAMES[i]].cert, keyFile: pki.certs[NAMES[i]].key },
      limits: { handshakeTimeoutMs: 2000, dialTimeoutMs: 2000 },
      trust: { socket, repushIntervalMs: 300_000, retryMs: 200 },
    };
    fs.writeFileSync(path.join(s.cluster.dir, 'gateway.json'), JSON.stringify(cfg));
    s.runtime = startRuntime(path.join(s.cluster.dir, 'gateway.json'), path.join(s.cluster.dir, 'proxy-run.log'));
  }
  // every version of each kubevirt-ca from here on, to show the peers' CAs are kept once merged, not only merged
  const watches = await Promise.all(sites.map((s) => ServerWatch.start(s.cluster, [KUBEVIRT_CA], { labelSelector: 'app.kubernetes.io/managed-by=virt-operator' })));
  try {
    await exchange(watches);
  } finally {
    for (const w of watches) w.stop();
  }
}, 120_000);

const KUBEVIRT_CA: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kubevirt-ca', namespace: 'kubevirt' } };

/** The exchange test's body: trust containers started, every kubevirt-ca holding its peers' CAs, and keeping them. */
async function exchange(watches: ServerWatch[]): Promise<void> {
  const t0 = Date.now();
  for (const s of sites) {
    const secret = await s.cluster.request('GET', '/api/v1/namespaces/kubevirt/secrets/kubevirt-ca');
    expect(new crypto.X509Certificate(Buffer.from(secret.json.data['tls.crt'], 'base64')).fingerprint256).toBe(await currentCa(s.cluster));
  }
  const sa = exampleTrustObjects().find((o) => o.kind === 'ServiceAccount')!;
  for (const s of sites) {
    const saDir = s.cluster.serviceAccountDir(sa.metadata.namespace!, sa.metadata.name);
    const kubeconfig = tokenKubeconfig(path.join(saDir, 'kubeconfig'), s.cluster.url, saDir);
    s.trust = startTrust(path.join(s.cluster.dir, 'gateway.json'), 'kubevirt', kubeconfig, path.join(s.cluster.dir, 'proxy-trust.log'));
  }
  const ms = await allTrusted(60_000);
  timings.push(`exchange started to every kubevirt-ca holding every peer's CA: ${((ms - t0) / 1000).toFixed(1)} s`);
  const r = await handshake(sites[0].cluster, sites[1].cluster, 10_000);
  expect(r).toMatchObject({ ok: true, error: '' });
  expect((await handshake(sites[2].cluster, sites[0].cluster, 10_000)).ok).toBe(true);
  // kept, not only merged: a merge changes kubevirt-ca, and virt-operator reconciles again 5 s later; with every
  // cluster's rotation within the rule, MergeCABundle drops none of them in any version written since
  await new Promise((res) => setTimeout(res, Math.max(0, ms + 12_000 - Date.now())));
  const own = await Promise.all(sites.map((s) => currentCa(s.cluster)));
  for (const [i, w] of watches.entries()) {
    const versions = w.events.filter((e) => e.key === 'ConfigMap/kubevirt/kubevirt-ca' && e.type !== 'DELETED')
      .map((e) => ({ rv: e.rv, cas: fingerprints((e.object as { data?: Record<string, string> }).data?.['ca-bundle']) }));
    const peers = own.filter((_, j) => j !== i);
    const first = versions.findIndex((v) => peers.every((p) => v.cas.includes(p)));
    expect([NAMES[i], first >= 0]).toEqual([NAMES[i], true]);
    expect([NAMES[i], versions.slice(first).filter((v) => !peers.every((p) => v.cas.includes(p)))]).toEqual([NAMES[i], []]);
  }
}

/** Resolves the time at which every cluster's kubevirt-ca (virt-operator's) holds every other cluster's current CA. */
async function allTrusted(withinMs: number): Promise<number> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const bundles = await Promise.all(sites.map(async (s) => fingerprints((await s.kv.configMap('kubevirt-ca'))?.data?.['ca-bundle'])));
    const own = await Promise.all(sites.map((s) => currentCa(s.cluster)));
    if (sites.every((_, i) => sites.every((__, j) => i === j || bundles[i].includes(own[j])))) return Date.now();
    if (Date.now() > deadline) throw new Error(`kubevirt-ca not holding every peer's CA after ${withinMs} ms: ${JSON.stringify({ own, bundles })}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/**
 * The fingerprint of the CA a cluster publishes now: the first certificate of its own kubevirt-ca (virt-operator
 * writes its current CA first), checked against the CA Secret it signs with once the two agree.
 */
async function currentCa(c: RealCluster): Promise<string> {
  const r = await c.request('GET', '/api/v1/namespaces/kubevirt/configmaps/kubevirt-ca');
  const first = String(r.json.data['ca-bundle']).split(/(?=-----BEGIN CERTIFICATE-----)/)[0];
  return new crypto.X509Certificate(first).fingerprint256;
}

test('two CA rotations of kv-b in a row, forced by its short CA duration: each new CA reaches every peer\'s kubevirt-ca', async () => {
  // the first rotation at once (the CA Secret's duration annotation no longer matches), the next ~15 s later
  let before = await currentCa(sites[1].cluster);
  await sites[1].kv.setCa(SHORT_CA);
  for (let i = 0; i < 2; i++) {
    if (i > 0) before = await currentCa(sites[1].cluster);
    const deadline = Date.now() + 60_000;
    let rotated = '';
    let rotatedAt = 0;
    while (!rotated) {
      const now = await currentCa(sites[1].cluster);
      if (now !== before) {
        rotated = now;
        rotatedAt = Date.now();
      } else {
        if (Date.now() > deadline) throw new Error('kv-b\'s CA did not rotate within 60 s');
        await new Promise((r) => setTimeout(r, 200));
      }
    }
    const trustedAt = await peersTrust(rotated, [sites[0], sites[2]], 90_000);
    timings.push(`rotation ${i + 1} of kv-b's CA to every peer's kubevirt-ca: ${((trustedAt - rotatedAt) / 1000).toFixed(1)} s`);
  }
}, 300_000);

/** Resolves when the kubevirt-ca of each of `peers` holds the CA with fingerprint `ca`; the bound only catches a hang. */
async function peersTrust(ca: string, peers: Site[], withinMs: number): Promise<number> {
  const deadline = Date.now() + withinMs;
  for (;;) {
    const bundles = await Promise.all(peers.map(async (s) => fingerprints((await s.kv.configMap('kubevirt-ca'))?.data?.['ca-bundle'])));
    if (bundles.every((b) => b.includes(ca))) return Date.now();
    if (Date.now() > deadline) throw new Error(`kv-b's CA ${ca} not in every peer's kubevirt-ca after ${withinMs} ms: ${JSON.stringify(Object.fromEntries(peers.map((s, i) => [s.cluster.name, bundles[i]])))}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** A pod as its label selector finds it on a real server, polled until `want` of them are Running with an IP (kwok). */
type Pod = { metadata: { name: string; annotations?: Record<string, string> }; status: { podIP: string } };
async function runningPods(c: RealCluster, ns: string, selector: string, want: number): Promise<Pod[]> {
  // bounded by the work (work-bound.ts): waits while the list changes (its resourceVersion), 60 s of no change at most
  let rv = '';
  let running = 0;
  return untilQuiet(`${c.name}: ${want} pods Running for ${selector} in ${ns}`, async () => {
    const r = await c.request('GET', `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(selector)}`);
    rv = String(r.json?.metadata?.resourceVersion ?? rv);
    const pods = (r.json?.items ?? []).filter((p: any) => p.status?.phase === 'Running' && p.status.podIP && !p.metadata.deletionTimestamp);
    running = pods.length;
    return pods.length >= want ? pods : undefined;
  }, { quietMs: 60_000, capMs: 120_000, progress: () => `${rv} ${running}` });
}

/**
 * Multus' word on the KubeVirt pods: the network-status annotation its CNI plugin writes when it attaches a pod, here
 * written as it would be (there is no CNI without a node). The pods themselves are kwok's, created by KubeVirt's own
 * DaemonSet and Deployment. The gateway pods' runtimes are not run: the API server refuses to proxy to a pod IP in
 * the loopback range ("address not allowed"), so status could not read them anyway.
 */
async function runPods(s: Site): Promise<void> {
  await rolledOut(s.cluster);
  const nad = 'kubevirt/lm-migration';
  for (const app of ['virt-handler', 'virt-synchronization-controller']) {
    for (const [k, pod] of (await runningPods(s.cluster, 'kubevirt', `kubevirt.io=${app}`, 1)).entries()) {
      const status = [{ name: 'kindnet', interface: 'eth0', ips: [pod.status.podIP], default: true }, { name: nad, interface: 'migration0', ips: [`10.200.${NAMES.indexOf(s.cluster.name)}.${20 + k}`], default: false }];
      const patch = { metadata: { annotations: { 'k8s.v1.cni.cncf.io/network-status': JSON.stringify(status) } } };
      const r = await s.cluster.request('PATCH', `/api/v1/namespaces/kubevirt/pods/${pod.metadata.name}`, patch, { contentType: 'application/merge-patch+json' });
      expect(r.status).toBe(200);
    }
  }
}

/** virt-operator has rolled its components out to the current config (our KubeVirt CR changes it): no pod is about to be replaced. */
async function rolledOut(c: RealCluster): Promise<void> {
  // bounded by the work (work-bound.ts): waits while the rollout moves (the two objects' resourceVersions), 90 s of
  // no move at most
  let moved = '';
  await untilQuiet(`${c.name}: virt-handler / sync controller rolled out`, async () => {
    const ds = (await c.request('GET', '/apis/apps/v1/namespaces/kubevirt/daemonsets/virt-handler')).json;
    const dep = (await c.request('GET', '/apis/apps/v1/namespaces/kubevirt/deployments/virt-synchronization-controller')).json;
    const dsDone = ds?.kind === 'DaemonSet' && ds.status.observedGeneration === ds.metadata.generation && ds.status.desiredNumberScheduled > 0
      && ds.status.updatedNumberScheduled === ds.status.desiredNumberScheduled && ds.status.numberAvailable === ds.status.desiredNumberScheduled;
    const depDone = dep?.kind === 'Deployment' && dep.status.observedGeneration === dep.metadata.generation && dep.status.updatedReplicas === dep.spec.replicas
      && dep.status.availableReplicas === dep.spec.replicas && (dep.status.replicas ?? 0) === dep.spec.replicas;
    moved = `${ds?.metadata?.resourceVersion} ${dep?.metadata?.resourceVersion}`;
    return dsDone && depDone ? true : undefined;
  }, { quietMs: 90_000, capMs: 180_000, progress: () => moved, everyMs: 500 });
}

test('migration-mesh status across the three real API servers, under the generated read-only ClusterRole', async () => {
  const dir = fs.mkdtempSync(path.join(fleet.dir, 'status-'));
  const file = path.join(dir, 'kv.fleet.yaml');
  fs.writeFileSync(file, JSON.stringify(baseFleet({
    clusters: NAMES.map((name) => ({ name, nodes: 2 })), operatorView: { statusClusterRole: true }, syncControllers: { placement: 'workers' },
  }, 'kv')));
  expect(runCli(['synth', file, '--out', path.join(dir, 'dist'), '--no-svg']).code).toBe(0);
  const users: Record<string, { cert: string; key: string }> = {};
  for (const s of sites) {
    const tree = path.join(dir, 'dist', 'kv', s.cluster.name);
    const stages = stagesOf(tree, (d) => s.cluster.kubectl(['kustomize', d]));
    const all = stages.flatMap((x) => x.objects);
    await installCrds(s.cluster, crdsFor(all, upstreamCrds().map((c) => c.crd).filter((c) => c.metadata.name !== 'kubevirts.kubevirt.io')));
    await createNamespaces(s.cluster, platformNamespaces(all));
    for (const stage of stages) {
      for (const o of stage.objects) await serverSideApply(s.cluster, o, 'migration-mesh', { force: true });
    }
    await serverSideApply(s.cluster, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: 'status-reader' },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'migration-mesh-status' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'status-reader' }] } as KubeObject, 'platform-installer');
    const id = s.cluster.identity('status-reader') as { cert: string; key: string };
    users[s.cluster.name] = { cert: id.cert, key: id.key };
  }
  for (const s of sites) await runPods(s);
  // our KubeVirt CR sets the fleet's CA rotation: virt-operator rotates at once, and the exchange carries the new CAs
  await allTrusted(60_000);
  const kc = path.join(dir, 'kubeconfig');
  fs.writeFileSync(kc, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': NAMES[0],
    clusters: sites.map((s) => ({ name: s.cluster.name, cluster: { server: s.cluster.url, 'certificate-authority': s.cluster.caFile } })),
    users: sites.map((s) => ({ name: s.cluster.name, user: { 'client-certificate': users[s.cluster.name].cert, 'client-key': users[s.cluster.name].key } })),
    contexts: sites.map((s) => ({ name: s.cluster.name, context: { cluster: s.cluster.name, user: s.cluster.name } })),
  }));
  const status = async () => {
    // --timeout bounds each cluster's whole answer; nothing here is about it, so it is generous for a loaded machine
    const r = await runStatus([file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc, '--output', 'json', '--timeout', '60']);
    expect(r.err).toBe('');
    return { code: r.code, j: JSON.parse(r.out) };
  };
  const healthy = await status();
  process.stdout.write(`[kubevirt-real] status findings: ${JSON.stringify(healthy.j.findings.map((f: { message: string }) => f.message))}\n`);
  // the one part that cannot run here: the API server refuses to proxy to a loopback pod IP ("address not allowed"),
  // so each gateway's own /status is unread: a warning, which blocks no pair (docs/status.md)
  const notWarning = healthy.j.findings.filter((f: { severity: string; message: string }) => !(f.severity === 'warning' && /through the pod proxy: address not allowed/.test(f.message)));
  expect(notWarning).toEqual([]);
  expect(healthy.j.findings).toHaveLength(6);
  expect(healthy.j.pairs.every((p: { ready: boolean }) => p.ready)).toBe(true);
  expect(healthy.code).toBe(0);
  for (const a of NAMES) for (const b of NAMES) if (a !== b) expect([a, b, healthy.j.trust[a][b].trusted]).toEqual([a, b, true]);

  // a hand edit on kv-c: status must find it, and only it
  const cm = await sites[2].cluster.request('GET', '/api/v1/namespaces/migration-mesh/configmaps/migration-mesh-gateway');
  cm.json.metadata.labels = { ...cm.json.metadata.labels, 'migrationmesh.dev/fleet': 'edited-by-hand' };
  expect((await sites[2].cluster.request('PUT', '/api/v1/namespaces/migration-mesh/configmaps/migration-mesh-gateway', cm.json)).status).toBe(200);
  const drifted = await status();
  expect(drifted.code).toBe(1);
  const errors = drifted.j.findings.filter((f: { severity: string }) => f.severity === 'error');
  expect(errors.map((f: { code: string; cluster: string }) => `${f.code} ${f.cluster}`)).toEqual(['status/object-different kv-c']);
  expect(drifted.j.pairs.filter((p: { ready: boolean }) => p.ready).map((p: { from: string; to: string }) => `${p.from}>${p.to}`).sort()).toEqual(['kv-a>kv-b', 'kv-b>kv-a']);
  // every wait above has its own bound (pods, trust, status); this one only catches a hang: the test took 86 s in a
  // quiet fresh-clone CI run and 152 s beside two CPU hogs and a helper's batch, against the 180 s it had
}, 360_000);
