/**
 * The trust container on real API servers, under the Role we generate (issue 38 item 4).
 *
 * Three real kube-apiservers (RBAC on, one etcd; test/support/real-kube.ts), each with the objects of the
 * `policies` example's cluster tree the trust container depends on (dist/policies/lab-X: Namespace, ServiceAccount,
 * Role, RoleBinding, server-side applied as they are), and `kubevirt-ca` / `kubevirt-external-ca` created as
 * virt-operator creates them, holding the cluster's own KubeVirt CA. Per cluster the real runtime process and the
 * real trust container process (proxy/lib/cli.js `run` and `trust`), the trust container with a TokenRequest token
 * of the tree's ServiceAccount, in the projected-volume layout, named by its kubeconfig. lab-c's trust container
 * runs in a network namespace and reaches its API server over a veth (test/support/real-trust.ts DroppableLink).
 * No virt-operator runs here (the kubevirt-real suite has it): nothing merges `kubevirt-external-ca` into
 * `kubevirt-ca`, so the exchange has converged when each cluster's `kubevirt-external-ca` holds every peer's
 * current CA. A rotation is the new CA put first into `kubevirt-ca`, as virt-operator does.
 *
 * Checks, one fleet for the file, in order:
 *   - the exchange converges (bounded);
 *   - with the ServiceAccount's token, the real authorizer allows the trust container's five calls and refuses
 *     with 403 what lies outside the Role (Secrets, writes of kubevirt-ca, other ConfigMaps, other namespaces,
 *     LIST or WATCH without the field selector, PATCH/DELETE/CREATE);
 *   - faults a real server produces, each followed by trust converging again within a bound: the API server
 *     killed and restarted; a watch resumed from a resourceVersion etcd compacted away (410); a competing writer
 *     (409 on the trust container's PUT); a black hole (packets to the API server dropped for 15 s);
 *   - every call each trust container made was allowed: the API servers' audit logs (all its events, by the
 *     token's credential id) hold no 401 or 403, and its log no refusal.
 * The faults only a fake server produces stay in proxy/src/test/trust-api-faults.test.ts (its header:
 * proxy/src/testkit/fake-kube.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ChildProcess } from 'node:child_process';
import { createNamespaces, KubeObject, serverSideApply } from './support/real-apply';
import { Identity, RealCluster, RealFleet } from './support/real-kube';
import {
  auditEvents, auditFlags, auditPolicy, byCredential, compactEtcd, cpuSeconds, credentialId, DroppableLink, fingerprints, killProcess, logLines,
  openFds, runtimeConfig, startRuntime, startTrust, tokenKubeconfig, treeGatewayConfig, trustObjects, trustRole, virtOperatorConfigMap,
} from './support/real-trust';
import { makeCert } from '../proxy/lib/testkit/ca-certs';
import { freePort, makePki } from '../proxy/lib/testkit/helpers';

const ROOT = path.resolve(__dirname, '..');
const FLEET_DIR = path.join(ROOT, 'dist', 'policies');
const NAMES = ['lab-a', 'lab-b', 'lab-c'];
const KV_NS = 'kubevirt';
const H = 3600_000;
/** Each bound is generous for a loaded 2-core machine; the measured figures are printed at the end. */
const CONVERGE_MS = 30_000;
const BACK_MS = 15_000;
const CMS = `/api/v1/namespaces/${KV_NS}/configmaps`;

interface Gw {
  name: string; cluster: RealCluster; ca: { pem: string; fp: string }; credential: string; socket: string;
  runtime?: ChildProcess; trust?: ChildProcess; trustLog: string; runtimeLog: string; sa: { namespace: string; name: string }; role: KubeObject;
}

const work = fs.mkdtempSync(path.join(fs.existsSync('/dev/shm') ? '/dev/shm' : '/tmp', 'mm-trust-real-'));
/** Read by the harness at every start of an API server: lab-a's restart adds a flag here (see the 410 test). */
const apiserverFlags: string[] = auditFlags(auditPolicy(path.join(work, 'audit-policy.json'), 'migration-mesh'));
let fleet: RealFleet;
let link: DroppableLink | undefined;
const gws = new Map<string, Gw>();
const figures: string[] = [];
const gw = (n: string) => gws.get(n)!;
/** When an API server was down or starting (killed until /readyz answered), in ms since the epoch. */
const restarts: Array<{ cluster: string; from: number; to: number }> = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function newCa(name: string): { pem: string; fp: string } {
  const c = makeCert(`kubevirt.io@${name}-${Date.now()}`, Date.now() - H, Date.now() + 168 * H);
  return { pem: c.pem, fp: fingerprints(c.pem)[0] };
}

/** Polls `probe` every 100 ms; resolves the ms it took, throws after `ms` naming `what`. */
async function until(what: string, ms: number, probe: () => Promise<boolean> | boolean): Promise<number> {
  const t0 = Date.now();
  for (;;) {
    if (await Promise.resolve(probe()).catch(() => false)) return Date.now() - t0;
    if (Date.now() - t0 > ms) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(100);
  }
}

async function externalCa(g: Gw): Promise<string[]> {
  const r = await g.cluster.request('GET', `${CMS}/kubevirt-external-ca`, undefined, { timeoutMs: 5000 });
  return r.status === 200 ? fingerprints(r.json.data?.['ca-bundle']) : [];
}

/** Does every cluster's kubevirt-external-ca hold every peer's current CA? */
async function converged(names = NAMES): Promise<boolean> {
  for (const n of names) {
    const have = await externalCa(gw(n));
    if (!NAMES.filter((p) => p !== n).every((p) => have.includes(gw(p).ca.fp))) return false;
  }
  return true;
}

/** A rotation as virt-operator writes it: the new CA first in kubevirt-ca, the old one kept behind it. */
async function rotate(g: Gw): Promise<void> {
  const next = newCa(g.name);
  const r = await g.cluster.request('PATCH', `${CMS}/kubevirt-ca?fieldManager=virt-operator`,
    { data: { 'ca-bundle': `${next.pem}${g.ca.pem}` } }, { contentType: 'application/merge-patch+json' });
  if (r.status !== 200) throw new Error(`rotating ${g.name}'s CA: HTTP ${r.status} ${r.text}`);
  g.ca = next;
}

function trustKubeconfig(g: Gw, saDir: string): string {
  const file = path.join(work, `${g.name}.kubeconfig`);
  return link && g.name === 'lab-c'
    ? tokenKubeconfig(file, `https://${link.hostAddr}:${link.port}`, saDir, 'localhost')
    : tokenKubeconfig(file, g.cluster.url, saDir);
}

async function setUpCluster(g: Gw, objects: KubeObject[]): Promise<void> {
  const c = g.cluster;
  await createNamespaces(c, [KV_NS]); // the platform's: KubeVirt's namespace is not ours to create
  for (const o of objects) await serverSideApply(c, o);
  for (const [name, bundle] of [['kubevirt-ca', g.ca.pem], ['kubevirt-external-ca', '']]) {
    const r = await c.request('POST', `${CMS}?fieldManager=virt-operator`, virtOperatorConfigMap(name, KV_NS, bundle));
    if (r.status !== 201) throw new Error(`creating ${name} on ${g.name}: HTTP ${r.status} ${r.text}`);
  }
}

beforeAll(async () => {
  fleet = await RealFleet.start(NAMES, { apiserverFlags });
  const trees = NAMES.map((n) => path.join(FLEET_DIR, n));
  const cfg0 = treeGatewayConfig(trees[0]);
  const pki = makePki(cfg0.fleet, NAMES);
  const ports = await Promise.all(NAMES.map(async () => ({ intercept: await freePort(), tunnel: await freePort(), admin: await freePort() })));
  link = new DroppableLink();
  for (const [i, name] of NAMES.entries()) {
    const objects = trustObjects(trees[i]);
    const { role, serviceAccount } = trustRole(objects);
    const g: Gw = {
      name, cluster: fleet.cluster(name), ca: newCa(name), credential: '', socket: path.join(work, `${name}.sock`), sa: serviceAccount, role,
      trustLog: path.join(work, `${name}-trust.log`), runtimeLog: path.join(work, `${name}-runtime.log`),
    };
    gws.set(name, g);
    await setUpCluster(g, objects);
  }
  await link.relayTo(Number(new URL(gw('lab-c').cluster.url).port));
  for (const [i, name] of NAMES.entries()) {
    const g = gw(name);
    const tree = treeGatewayConfig(trees[i]);
    const cfgFile = path.join(work, `${name}.json`);
    fs.writeFileSync(cfgFile, JSON.stringify(runtimeConfig({
      fleet: tree.fleet, cluster: tree.cluster, ports: ports[i], cidr: `10.210.${i}.0/24`, socket: g.socket, repushIntervalMs: tree.repushIntervalMs,
      tls: { ca: pki.ca, ...pki.certs[name] }, peers: NAMES.flatMap((p, j) => (p === name ? [] : [{ cluster: p, tunnel: ports[j].tunnel, cidr: `10.210.${j}.0/24` }])),
    })));
    g.runtime = startRuntime(cfgFile, g.runtimeLog);
    const saDir = g.cluster.serviceAccountDir(g.sa.namespace, g.sa.name);
    g.credential = credentialId(fs.readFileSync(path.join(saDir, 'token'), 'utf8'));
    g.trust = startTrust(cfgFile, KV_NS, trustKubeconfig(g, saDir), g.trustLog, name === 'lab-c' ? link.ns : undefined);
  }
}, 240_000);

afterAll(async () => {
  const cpu = [...gws.values()].flatMap((g) => [g.runtime, g.trust]).filter((p): p is ChildProcess => !!p?.pid && p.exitCode === null)
    .reduce((s, p) => s + (() => { try { return cpuSeconds(p.pid!); } catch { return 0; } })(), 0);
  figures.push(`CPU of the 6 gateway processes (runtimes and trust containers) over the suite: ${cpu.toFixed(1)} s`);
  await Promise.all([...gws.values()].flatMap((g) => [killProcess(g.trust), killProcess(g.runtime)]));
  await link?.close();
  await fleet?.stop();
  fs.rmSync(work, { recursive: true, force: true });
  console.log(figures.map((f) => `[trust-real-api] ${f}`).join('\n'));
}, 60_000);

const failWith = (g: Gw) => (e: Error) => {
  const tail = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').trim().split('\n').slice(-15).join('\n') : '');
  throw new Error(`${e.message}\n--- ${g.name} trust log:\n${tail(g.trustLog)}\n--- ${g.name} runtime log:\n${tail(g.runtimeLog)}`);
};

test('the exchange converges: every cluster\'s kubevirt-external-ca holds every peer\'s CA', async () => {
  const ms = await until('every peer CA in every kubevirt-external-ca', CONVERGE_MS, () => converged()).catch(failWith(gw('lab-a')));
  figures.push(`converged ${ms} ms after the trust containers started checking (3 clusters, lab-c's trust container across a veth)`);
  for (const g of gws.values()) {
    const labels = (await g.cluster.request('GET', `${CMS}/kubevirt-external-ca`)).json.metadata.labels;
    expect(labels['app.kubernetes.io/managed-by']).toBe('virt-operator'); // still visible to virt-operator's informer
  }
}, CONVERGE_MS + 10_000);

test('the real authorizer allows the trust container\'s calls and refuses everything outside the Role with 403', async () => {
  const g = gw('lab-a');
  const as: Identity = { user: 'probe-sa', token: g.cluster.serviceAccountToken(g.sa.namespace, g.sa.name) };
  const ext = (await g.cluster.request('GET', `${CMS}/kubevirt-external-ca`)).json;
  const ca = (await g.cluster.request('GET', `${CMS}/kubevirt-ca`)).json;
  const sel = (n: string) => `fieldSelector=${encodeURIComponent(`metadata.name=${n}`)}`;
  const calls: Array<[string, string, string, unknown?, string?]> = [
    ['allowed', 'GET', `${CMS}/kubevirt-ca`],
    ['allowed', 'GET', `${CMS}?${sel('kubevirt-ca')}`],
    ['allowed', 'GET', `${CMS}?watch=true&${sel('kubevirt-ca')}&timeoutSeconds=1`],
    ['allowed', 'GET', `${CMS}/kubevirt-external-ca`],
    ['allowed', 'PUT', `${CMS}/kubevirt-external-ca`, ext],
    ['refused', 'GET', `/api/v1/namespaces/${KV_NS}/secrets`],
    ['refused', 'GET', `/api/v1/namespaces/${KV_NS}/secrets/kubevirt-ca`],
    ['refused', 'PUT', `${CMS}/kubevirt-ca`, ca],
    ['refused', 'PATCH', `${CMS}/kubevirt-ca`, { data: { x: 'y' } }, 'application/merge-patch+json'],
    ['refused', 'GET', `${CMS}/kubevirt-export-ca`],
    ['refused', 'PUT', `${CMS}/kubevirt-export-ca`, { metadata: { name: 'kubevirt-export-ca', namespace: KV_NS }, data: {} }],
    ['refused', 'POST', CMS, { metadata: { name: 'planted', namespace: KV_NS }, data: {} }],
    ['refused', 'PATCH', `${CMS}/kubevirt-external-ca`, { data: { x: 'y' } }, 'application/merge-patch+json'],
    ['refused', 'DELETE', `${CMS}/kubevirt-external-ca`],
    ['refused', 'GET', CMS],
    ['refused', 'GET', `${CMS}?watch=true&timeoutSeconds=1`],
    ['refused', 'GET', `${CMS}?${sel('kubevirt-external-ca')}`],
    ['refused', 'GET', '/api/v1/namespaces/migration-mesh/configmaps/migration-mesh-gateway'],
    ['refused', 'GET', '/api/v1/namespaces/default/configmaps/kubevirt-ca'],
  ];
  const seen: string[] = [];
  for (const [want, method, p, body, contentType] of calls) {
    const r = await g.cluster.request(method, p, body, { as, contentType });
    seen.push(`  ${method} ${p} -> ${r.status}${r.status === 403 ? ` (${r.json?.reason}: ${r.json?.message})` : ''}`);
    if (want === 'allowed') expect([method, p, r.status]).toEqual([method, p, 200]);
    else expect([method, p, r.status, r.json?.reason]).toEqual([method, p, 403, 'Forbidden']);
  }
  console.log(`[trust-real-api] the ServiceAccount's token (Role ${g.role.metadata.name} from dist/policies/lab-a) on a real API server:\n${seen.join('\n')}`);
  figures.push(`authorizer: ${calls.filter((c) => c[0] === 'allowed').length} calls of the trust container allowed, ${calls.filter((c) => c[0] === 'refused').length} outside the Role refused with 403`);
}, 60_000);

test('the API server killed and restarted: trust back within the bound', async () => {
  const a = gw('lab-a');
  apiserverFlags.push('--watch-cache-sizes=configmaps#0'); // for the 410 test: watches of ConfigMaps served by etcd
  const as: Identity = { user: 'startup-probe', token: a.cluster.serviceAccountToken(a.sa.namespace, a.sa.name) };
  const killed = Date.now();
  a.cluster.kill();
  const b = gw('lab-b');
  await rotate(b); // a peer rotates while lab-a's API server is down
  await sleep(3000);
  const t0 = Date.now();
  // what the trust container's first calls may meet: the same ServiceAccount's GET every 25 ms until /readyz answers
  let ready = false;
  const answers: number[] = [];
  const probe = (async () => {
    while (!ready) {
      const r = await a.cluster.request('GET', `${CMS}/kubevirt-external-ca`, undefined, { as, timeoutMs: 2000 }).catch(() => undefined);
      if (r) answers.push(r.status);
      await sleep(25);
    }
  })();
  await a.cluster.start();
  ready = true;
  await probe;
  const started = Date.now() - t0;
  restarts.push({ cluster: a.name, from: killed, to: Date.now() });
  apiserverFlags.pop();
  const tally = [...new Set(answers)].map((c) => `${c} x${answers.filter((x) => x === c).length}`).join(', ');
  const reasons = [...new Set(byCredential(auditEvents(a.cluster), credentialId(as.token)).filter((e) => e.responseStatus?.code === 403)
    .map((e) => JSON.stringify(e.annotations?.['authorization.k8s.io/reason'] ?? '')))];
  figures.push(`while lab-a's API server started (port open, /readyz not yet ok), the trust ServiceAccount's allowed GET was answered: ${tally || 'never'}`
    + (reasons.length ? ` (403 with audit reason ${reasons.join(', ')})` : ''));
  const ms = await until('lab-b\'s new CA in lab-a\'s kubevirt-external-ca', BACK_MS, async () => (await externalCa(a)).includes(b.ca.fp)).catch(failWith(a));
  await until('converged', BACK_MS, () => converged()).catch(failWith(a));
  figures.push(`API server killed (SIGKILL), down 3 s while a peer rotated, restarted in ${started} ms: the peer's new CA in its kubevirt-external-ca ${ms} ms after it was ready`);
  expect(ms).toBeLessThanOrEqual(BACK_MS);
}, 120_000);

test('a watch resumed from a resourceVersion etcd compacted away: 410, relisted, changes seen again', async () => {
  const a = gw('lab-a');
  const gone = () => logLines(a.trustLog).filter((l) => l.code === 410).length;
  const before = gone();
  // its watch loop may still be in backoff from the outage (the write loop is not): wait for a WATCH from after it
  const restarted = new Date(restarts[restarts.length - 1].to).toISOString();
  await until('lab-a\'s trust container watching again', BACK_MS, () => byCredential(auditEvents(a.cluster), a.credential)
    .some((e) => e.verb === 'watch' && e.stage === 'ResponseStarted' && e.stageTimestamp >= restarted)).catch(failWith(a));
  // lab-a's watch of kubevirt-ca runs against etcd now (restarted above). Its next WATCH asks for the events after
  // the last revision it saw (R), i.e. from R+1: etcd still serves a watch from the compaction revision itself, so
  // write twice and compact at the second write (>= R+2) to take R+1 away
  const scratch = await a.cluster.request('POST', '/api/v1/namespaces/default/configmaps', { metadata: { name: 'revision-bump' }, data: {} });
  const bumped = await a.cluster.request('PUT', '/api/v1/namespaces/default/configmaps/revision-bump', { ...scratch.json, data: { n: '2' } });
  expect([scratch.status, bumped.status]).toEqual([201, 200]);
  const compactedAt = new Date().toISOString();
  const revision = await compactEtcd(fleet.etcd.url);
  const watches = () => byCredential(auditEvents(a.cluster), a.credential).filter((e) => e.verb === 'watch' && e.stageTimestamp >= compactedAt)
    .map((e) => `${e.stageTimestamp} ${e.stage} ${e.responseStatus?.code} ${decodeURIComponent(e.requestURI)}`).join('\n');
  const ms410 = await until('a 410 in lab-a\'s trust log', 20_000, () => gone() > before)
    .catch((e: Error) => failWith(a)(new Error(`${e.message} (etcd compacted at ${revision}, ${compactedAt}); its watches since:\n${watches()}`)));
  const line = logLines(a.trustLog).filter((l) => l.code === 410).pop()!;
  await rotate(a); // the watch after the relist must carry this to the peers
  const ms = await until('lab-a\'s new CA at lab-b and lab-c', BACK_MS, async () => (await externalCa(gw('lab-b'))).includes(a.ca.fp)
    && (await externalCa(gw('lab-c'))).includes(a.ca.fp)).catch(failWith(a));
  figures.push(`etcd compacted at revision ${revision}: lab-a's trust container got 410 (${JSON.stringify(line.message)}) ${ms410} ms later, relisted; `
    + `its next rotation reached both peers' kubevirt-external-ca ${ms} ms after it was written`);
}, 60_000);

test('a competing writer on kubevirt-external-ca: 409s on the trust container\'s PUT, trust back after', async () => {
  const b = gw('lab-b');
  const since = new Date().toISOString();
  let stop = false;
  let writes = 0;
  const hammer = async () => {
    while (!stop) {
      const r = await b.cluster.request('PATCH', `${CMS}/kubevirt-external-ca?fieldManager=competitor`,
        { metadata: { annotations: { 'example.com/competitor': String(writes++) } } }, { contentType: 'application/merge-patch+json' });
      if (r.status !== 200) throw new Error(`competitor: HTTP ${r.status}`);
    }
  };
  const hammers = [hammer(), hammer(), hammer()];
  await sleep(200);
  await rotate(gw('lab-c')); // lab-b's trust container must now write lab-c's new CA, under the competitor
  await sleep(3000);
  stop = true;
  await Promise.all(hammers);
  const ms = await until('lab-c\'s new CA in lab-b\'s kubevirt-external-ca', BACK_MS, async () => (await externalCa(b)).includes(gw('lab-c').ca.fp)).catch(failWith(b));
  const puts = byCredential(auditEvents(b.cluster), b.credential).filter((e) => e.verb === 'update' && e.stageTimestamp >= since && e.stage === 'ResponseComplete');
  const conflicts = puts.filter((e) => e.responseStatus?.code === 409).length;
  figures.push(`competing writer (3 loops, ${writes} PATCHes in 3 s): the trust container's PUTs ${puts.length}, of them 409 ${conflicts}; `
    + `the peer's new CA in place ${ms} ms after the competitor stopped`);
  expect(conflicts).toBeGreaterThanOrEqual(1);
  await until('converged', BACK_MS, () => converged()).catch(failWith(b));
}, 60_000);

test('a black hole between the trust container and its API server for 15 s: trust back after, descriptors bounded', async () => {
  const c = gw('lab-c');
  const pid = c.trust!.pid!;
  await until('converged', BACK_MS, () => converged());
  const fds0 = openFds(pid);
  const lines0 = logLines(c.trustLog).length;
  link!.blackHole(true);
  let fdsHole = 0;
  try {
    await rotate(gw('lab-a')); // lab-c's trust container must write lab-a's new CA: its API does not answer
    await sleep(15_000);
    fdsHole = openFds(pid);
  } finally { link!.blackHole(false); }
  const ms = await until('lab-a\'s new CA in lab-c\'s kubevirt-external-ca', BACK_MS, async () => (await externalCa(c)).includes(gw('lab-a').ca.fp)).catch(failWith(c));
  await sleep(2000);
  const fds1 = openFds(pid);
  const failures = logLines(c.trustLog).slice(lines0).filter((l) => l.level >= 40).map((l) => String(l.err ?? l.msg)).filter((m) => /within|stalled|still open/.test(m));
  figures.push(`black hole (packets to and from the API server dropped) for 15 s: ${failures.length} timed-out calls logged; the peer's new CA in place ${ms} ms after `
    + `packets flowed again; trust container descriptors ${fds0} before, ${fdsHole} at the end of the hole, ${fds1} 2 s after`);
  expect(failures.length).toBeGreaterThanOrEqual(2);
  expect(fds1 - fds0).toBeLessThanOrEqual(3);
}, 60_000);

/**
 * A real API server answers before its RBAC informers have synced and until then may refuse what the Role allows
 * (403; kubernetes/kubernetes#121635, seen here once in a few runs right after the restart): a refusal counts as
 * the server's only between the kill and /readyz answering. The trust container retries it like any failure (the
 * restart test measures how soon trust is back).
 */
const whileStarting = (cluster: string, at: number) => restarts.some((r) => r.cluster === cluster && at >= r.from && at <= r.to);

test('every call each trust container made was allowed (audit logs of the three API servers)', () => {
  for (const g of gws.values()) {
    const events = byCredential(auditEvents(g.cluster), g.credential).filter((e) => e.stage === 'ResponseComplete');
    const byVerb = new Map<string, number>();
    for (const e of events) byVerb.set(`${e.verb} ${e.responseStatus?.code}`, (byVerb.get(`${e.verb} ${e.responseStatus?.code}`) ?? 0) + 1);
    const refused = events.filter((e) => e.responseStatus?.code === 401 || e.responseStatus?.code === 403);
    const starting = refused.filter((e) => whileStarting(g.name, Date.parse(e.stageTimestamp)));
    figures.push(`audit, ${g.name}'s trust container: ${events.length} calls: ${[...byVerb].sort().map(([k, n]) => `${k} x${n}`).join(', ')}`
      + (starting.length ? `; refused while its API server was starting: ${starting.map((e) => `${e.verb} ${e.objectRef?.name} `
        + `${e.responseStatus?.code} at ${e.stageTimestamp} (reason ${JSON.stringify(e.annotations?.['authorization.k8s.io/reason'] ?? '')})`).join(', ')}` : ''));
    expect(events.length).toBeGreaterThan(0);
    expect(refused.filter((e) => !starting.includes(e)).map((e) => JSON.stringify(e))).toEqual([]);
    // what the Role names and nothing else
    expect(events.filter((e) => !(e.objectRef?.resource === 'configmaps' && e.objectRef?.namespace === KV_NS)).map((e) => e.requestURI)).toEqual([]);
    const logged = logLines(g.trustLog).filter((l) => /forbidden|\b40[13]\b/i.test(`${l.err ?? ''} ${l.msg ?? ''}`));
    expect(logged.filter((l) => !whileStarting(g.name, l.time)).map((l) => JSON.stringify(l))).toEqual([]);
  }
});
