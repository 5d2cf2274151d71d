/**
 * The virt-operator model (proxy/src/testkit/virt-operator-model.ts) against KubeVirt's own virt-operator (v1.8.4,
 * test/support/real-kubevirt.ts), step by step with the same inputs. The model stays because the network-namespace
 * fleets (test/fleet-trust*.test.ts, the VM lab) and the proxy's trust tests run many clusters' operators at
 * once, with clocks they move, where a real operator per cluster cannot run; this suite is what makes it
 * trustworthy. Each step writes the same `kubevirt-external-ca` to both (the model's FakeKubeApi over HTTP, the
 * real API server over HTTP), waits until the operator has acted on it, and compares:
 *   - `kubevirt-ca` as an ordered list of roles: which of the cluster's own CAs (own0, own1: the CA Secret's
 *     certificate at each point) and which written peers it holds, in the order written;
 *   - `kubevirt-external-ca` after the reconcile: its `ca-bundle`, and whether the foreign label, annotation, data
 *     key and binaryData a writer added survive.
 * When the operator has acted is read from the API server, never guessed: a visible write is followed by the
 * operator emptying `ca-bundle` (it merges into `kubevirt-ca` first, in the same reconcile: core.go 434-442); an
 * invisible one (labels the informer does not select) by the operator's Create of the ConfigMap failing with
 * 409 AlreadyExists, which the audit log records. The model runs the reconcile a visible write triggers and the one
 * the operator's own emptying write triggers at once; the real operator runs the second 5 s after the first
 * (`defaultAddDelay`), and its unconditional Update of the ConfigMap shows in the audit log, so the comparison waits
 * for both.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { FakeKubeApi } from '../proxy/src/testkit/fake-kube';
import { makeCert, type TestCert } from '../proxy/src/testkit/ca-certs';
import { MANAGED, VirtOperatorModel } from '../proxy/src/testkit/virt-operator-model';
import { NO_WEBHOOKS, RealKubevirt } from './support/real-kubevirt';
import { RealFleet, type RealCluster } from './support/real-kube';
import { sizeOf, untilQuiet } from './support/work-bound';

const H = 3_600_000;
const NS = 'kubevirt';
const EXTERNAL = 'kubevirt-external-ca';
/** KubeVirt's default CA lifetime: 7 days, renewed 0.2 of it (33.6 h) before it ends, the overlap too (GetCARenewBefore). */
const DURATION = 168 * H;
const RENEW_BEFORE = 0.2 * DURATION;

let fleet: RealFleet;
let cluster: RealCluster;
let kv: RealKubevirt;
let fake: FakeKubeApi;
/** The audit policy's directory (the API server reads the file at start). */
let policyDir: string | undefined;
let model: VirtOperatorModel;
const now0 = Date.now();
/** The peers' CAs, issued once and written to both: distinct notBefore, all older than the operator's own CA. */
const peer = (cn: string, nbAgo: number, naFromNow: number): TestCert => makeCert(`kubevirt.io@${cn}`, now0 - nbAgo, now0 + naFromNow);
const PEERS = {
  peerA: peer('peer-a', 2 * H, 30 * 24 * H),
  peerB: peer('peer-b', 3 * H, 30 * 24 * H),
  peerC: peer('peer-c', 4 * H, 30 * 24 * H),
  /** older than the operator's overlap (renewBefore, 48 h): kept while it is first or after a younger one... */
  peerOld: peer('peer-old', 72 * H, 30 * 24 * H),
  /** ...and this one, behind peerOld, is dropped by the next merge of kubevirt-ca (MergeCABundle's overlap walk). */
  peerOlder: peer('peer-older', 96 * H, 30 * 24 * H),
  expired: peer('expired', 10 * 24 * H, -H),
  notYetValid: makeCert('kubevirt.io@not-yet-valid', now0 + 24 * H, now0 + 30 * 24 * H),
};
/** A CERTIFICATE block that is not a certificate (a truncated copy, as a bad merge of two writers leaves). */
const BROKEN_BLOCK = `-----BEGIN CERTIFICATE-----\n${PEERS.peerA.der.subarray(0, 120).toString('base64')}\n-----END CERTIFICATE-----\n`;

const fp = (pem: string) => new crypto.X509Certificate(pem).fingerprint256;
const blocks = (bundle: string | undefined) => (bundle ?? '').split(/(?=-----BEGIN CERTIFICATE-----)/).filter((b) => b.includes('BEGIN'));
const peerRole = new Map(Object.entries(PEERS).map(([k, c]) => [fp(c.pem), k]));

/** The roles of a kubevirt-ca bundle, in order; `own` lists the cluster's own CAs oldest first (own0, own1...). */
function roles(bundle: string | undefined, own: string[]): string[] {
  return blocks(bundle).map((b) => {
    const f = fp(b);
    const i = own.indexOf(f);
    return i >= 0 ? `own${i}` : (peerRole.get(f) ?? `unknown ${f.slice(0, 11)}`);
  });
}

type ConfigMap = {
  metadata: { name: string; resourceVersion?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>; binaryData?: Record<string, string>;
};

/** What a writer does to kubevirt-external-ca: a new ca-bundle, and optionally foreign fields or other labels. */
interface Write { bundle: string; foreign?: boolean; labels?: 'operator' | 'none' }

function written(cur: ConfigMap, w: Write): ConfigMap {
  const base: Record<string, string> = w.labels === 'none' ? { 'example.com/owner': 'someone' } : w.labels === 'operator' ? { ...MANAGED } : { ...cur.metadata.labels };
  const labels: Record<string, string> = { ...base, ...(w.foreign ? { 'example.com/foreign': 'yes' } : {}) };
  return {
    ...cur,
    metadata: { ...cur.metadata, labels, ...(w.foreign ? { annotations: { ...cur.metadata.annotations, 'example.com/note': 'kept?' } } : {}) },
    data: { ...(w.foreign ? { note: 'kept?' } : {}), 'ca-bundle': w.bundle },
    ...(w.foreign ? { binaryData: { blob: Buffer.from('kept?').toString('base64') } } : {}),
  };
}

/** The external ConfigMap as a comparison sees it: its bundle's roles, and which foreign parts survived. */
function externalView(o: ConfigMap | undefined, own: string[]) {
  if (!o) return { exists: false };
  return {
    exists: true, bundle: roles(o.data?.['ca-bundle'], own), bundleText: o.data?.['ca-bundle'] === '' ? 'empty' : 'not empty',
    operatorLabels: o.metadata.labels?.['app.kubernetes.io/managed-by'] === 'virt-operator',
    foreignLabel: !!o.metadata.labels?.['example.com/foreign'], foreignAnnotation: !!o.metadata.annotations?.['example.com/note'],
    foreignData: 'note' in (o.data ?? {}), binaryData: !!o.binaryData && Object.keys(o.binaryData).length > 0,
  };
}

// ---- the real side ---------------------------------------------------------------------------------------------

const realOwn: string[] = [];
async function realCurrentCa(): Promise<string> {
  const s = await cluster.request('GET', `/api/v1/namespaces/${NS}/secrets/kubevirt-ca`);
  return new crypto.X509Certificate(Buffer.from(s.json.data['tls.crt'], 'base64')).fingerprint256;
}
async function realGet(name: string): Promise<ConfigMap | undefined> {
  const r = await cluster.request('GET', `/api/v1/namespaces/${NS}/configmaps/${name}`);
  return r.status === 200 ? r.json : undefined;
}
/** Polls `probe`; bounded by virt-operator's work (work-bound.ts): gives up when its log was silent for `ms`, or after 2 * `ms`. */
function until<T>(what: string, ms: number, probe: () => Promise<T | undefined>): Promise<T> {
  return untilQuiet(what, probe, { quietMs: ms, capMs: 2 * ms, progress: () => sizeOf([kv.log]), everyMs: 200 });
}
/** virt-operator's own calls on kubevirt-external-ca, from the audit log (its client's user agent names it). */
function operatorCalls(): Array<{ verb: string; code: number; at: number }> {
  const log = fs.readFileSync(path.join(cluster.dir, 'kube-apiserver.log'), 'utf8');
  return log.split('\n').filter((l) => l.startsWith('{"kind":"Event"')).map((l) => JSON.parse(l))
    .filter((e) => e.objectRef?.name === EXTERNAL && /virt-operator/.test(e.userAgent ?? ''))
    .map((e) => ({ verb: e.verb, code: e.responseStatus?.code, at: Date.parse(e.stageTimestamp) }));
}
const refusedCreates = () => operatorCalls().filter((c) => c.verb === 'create' && c.code === 409).length;
const updatesAfter = (t: number) => operatorCalls().filter((c) => c.verb === 'update' && c.at > t).length;

async function realWrite(w: Write): Promise<void> {
  const cur = (await realGet(EXTERNAL))!;
  const refusedBefore = refusedCreates();
  const r = await cluster.request('PUT', `/api/v1/namespaces/${NS}/configmaps/${EXTERNAL}`, written(cur, w));
  if (r.status !== 200) throw new Error(`PUT ${EXTERNAL}: ${r.status} ${JSON.stringify(r.json)}`);
  if (w.labels === 'none') {
    // the informer no longer selects it: the operator's next reconcile tries to Create it and gets 409
    await until('virt-operator\'s Create of the unlabelled kubevirt-external-ca refused', 30_000, async () => (refusedCreates() > refusedBefore ? true : undefined));
  } else {
    // two reconciles, as the model runs them: the one that merges and empties it (a real change, so a watch event),
    // then the one that event queues, whose Update changes nothing and so queues no third
    // then the one that event queues, whose Update changes nothing and so queues no third. Counting updates would
    // not do: a reconcile queued by an earlier step's writes may land in between.
    await until('virt-operator emptying kubevirt-external-ca', 30_000, async () => ((await realGet(EXTERNAL))?.data?.['ca-bundle'] === '' ? true : undefined));
    const emptied = Date.now();
    await until('virt-operator reconciling once more after emptying it', 30_000, async () => (updatesAfter(emptied) > 0 ? true : undefined));
  }
}

// ---- the model's side --------------------------------------------------------------------------------------------

const modelOwn = () => [...new Set([...model.bundle].reverse().filter((c) => !peerRole.has(fp(c.pem))).map((c) => fp(c.pem)).concat(fp(model.ca.pem)))];
async function modelWrite(w: Write): Promise<void> {
  const cur = fake.get(EXTERNAL)! as unknown as ConfigMap;
  const res = await fetch(`http://127.0.0.1:${fake.port}/api/v1/namespaces/${NS}/configmaps/${EXTERNAL}`, {
    method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(written(cur, w)),
  });
  if (res.status !== 200) throw new Error(`model PUT ${EXTERNAL}: ${res.status} ${await res.text()}`);
}

/** Both sides, after the same step: equal, role by role. */
async function compare(step: string): Promise<{ real: unknown; model: unknown }> {
  const cur = await realCurrentCa();
  if (!realOwn.includes(cur)) realOwn.push(cur);
  const real = { step, kubevirtCa: roles((await realGet('kubevirt-ca'))?.data?.['ca-bundle'], realOwn), external: externalView(await realGet(EXTERNAL), realOwn) };
  const own = modelOwn();
  const modelView = { step, kubevirtCa: roles(fake.get('kubevirt-ca')?.data['ca-bundle'], own), external: externalView(fake.get(EXTERNAL) as unknown as ConfigMap, own) };
  expect(modelView).toEqual(real);
  return { real, model: modelView };
}

const pems = (...names: Array<keyof typeof PEERS>) => names.map((n) => PEERS[n].pem).join('');

beforeAll(async () => {
  policyDir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-agree-'));
  const policy = path.join(policyDir, 'audit.json');
  fs.writeFileSync(policy, JSON.stringify({
    apiVersion: 'audit.k8s.io/v1', kind: 'Policy', omitStages: ['RequestReceived', 'ResponseStarted'],
    rules: [{ level: 'Metadata', resources: [{ group: '', resources: ['configmaps'] }], namespaces: [NS], verbs: ['create', 'update'] }, { level: 'None' }],
  }));
  fleet = await RealFleet.start(['kv-m'], { apiserverFlags: [...NO_WEBHOOKS, `--audit-policy-file=${policy}`, '--audit-log-path=-'] });
  cluster = fleet.cluster('kv-m');
  kv = new RealKubevirt(cluster, { listen: '127.0.0.41' });
  fake = new FakeKubeApi(NS);
  await fake.listen();
  model = new VirtOperatorModel(fake, 'kv-m', DURATION, RENEW_BEFORE, Date.now);
  // as a second run on this machine would: its webhook port on the suite's address is taken (by us, or already by
  // another run's virt-operator), so the harness moves on
  const squatter = net.createServer();
  await new Promise<void>((r) => squatter.once('error', () => r()).listen(8444, '127.0.0.41', () => r()));
  try {
    await kv.install();
  } finally {
    squatter.close();
  }
  await until('kubevirt-external-ca', 60_000, () => realGet(EXTERNAL));
  model.install(0);
}, 300_000);

afterAll(async () => {
  await kv?.stop();
  await fleet?.stop();
  await fake?.close();
  if (policyDir) fs.rmSync(policyDir, { recursive: true, force: true });
}, 60_000);

test('the harness moves virt-operator to a free loopback address when another process holds its ports on the suite\'s', () => {
  expect(kv.listen).toMatch(/^127\.0\.([1-9]|[1-5]\d|6[0-3])\.41$/);
});

test('the harness runs the install-strategy Job beside its event loop: requests in flight meanwhile keep being served', () => {
  // a Job run held the loop for its whole length before (kubevirt-real's status test lost a TLS handshake that way):
  // then the longest gap between two turns of the loop equalled the run; now it is a timer's tick and some noise
  process.stdout.write(`[virt-operator-agreement] install-strategy Job runs: ${JSON.stringify(kv.jobRuns)}\n`);
  expect(kv.jobRuns.length).toBeGreaterThanOrEqual(1);
  for (const r of kv.jobRuns) expect({ ...r, loopHeld: r.loopGapMs >= r.ms / 2 }).toMatchObject({ loopHeld: false });
});

test('install: kubevirt-ca holds the cluster\'s own CA; kubevirt-external-ca is empty and carries the operator\'s labels', async () => {
  const { real } = await compare('install');
  expect(real).toMatchObject({ kubevirtCa: ['own0'], external: { bundleText: 'empty', operatorLabels: true } });
});

test('a peer CA written with foreign fields: merged after the own CA; the reconcile empties the ConfigMap and drops what it did not write', async () => {
  await realWrite({ bundle: pems('peerA'), foreign: true });
  await modelWrite({ bundle: pems('peerA'), foreign: true });
  const { real } = await compare('peerA with foreign fields');
  expect(real).toMatchObject({ kubevirtCa: ['own0', 'peerA'], external: { bundleText: 'empty', foreignLabel: false, foreignAnnotation: false, foreignData: false, binaryData: false } });
}, 60_000);

test('expired and not-yet-valid CAs are never merged; a valid one beside them is', async () => {
  const bundle = pems('expired', 'peerB', 'notYetValid');
  await realWrite({ bundle });
  await modelWrite({ bundle });
  const { real } = await compare('expired, peerB, not yet valid');
  expect(real).toMatchObject({ kubevirtCa: ['own0', 'peerA', 'peerB'] });
}, 60_000);

test('one broken CERTIFICATE block: KubeVirt parses the bundle as a whole and merges none of it, and empties it all the same', async () => {
  const bundle = pems('peerC') + BROKEN_BLOCK;
  await realWrite({ bundle });
  await modelWrite({ bundle });
  const { real } = await compare('peerC beside a broken block');
  expect((real as any).kubevirtCa).not.toContain('peerC');
}, 60_000);

test('CAs older than the overlap: the reconcile that reads them appends both; the next one keeps the first and drops the one behind it', async () => {
  await realWrite({ bundle: pems('peerOld', 'peerOlder') });
  await modelWrite({ bundle: pems('peerOld', 'peerOlder') });
  const { real } = await compare('peerOld, peerOlder');
  // MergeCABundle walks newest first and stops at a cert whose newer neighbour (peerOld) is older than the overlap
  expect((real as any).kubevirtCa).toEqual(['own0', 'peerA', 'peerB', 'peerOld']);
}, 60_000);

test('a rotation (the CA duration in the KubeVirt CR changed): the new CA first, the old one kept for the overlap, peers kept', async () => {
  const before = await realCurrentCa();
  // a new duration (the overlap stays the model's 33.6 h): virt-operator rotates at once (certificationNeedsRotation)
  await kv.setCa({ duration: '169h0m0s', renewBefore: '33h36m0s' });
  const rotated = await until('virt-operator rotating its CA', 60_000, async () => ((await realCurrentCa()) !== before ? true : undefined));
  expect(rotated).toBe(true);
  await until('kubevirt-ca led by the new CA', 30_000, async () => {
    const first = blocks((await realGet('kubevirt-ca'))?.data?.['ca-bundle'])[0];
    return first && fp(first) !== before ? true : undefined;
  });
  model.rotateNow();
  const { real } = await compare('rotation');
  expect((real as any).kubevirtCa.slice(0, 2)).toEqual(['own1', 'own0']);
}, 120_000);

test('unlabelled kubevirt-external-ca: the informer does not see it; nothing merged, nothing emptied; labelled again, it is merged', async () => {
  await realWrite({ bundle: pems('peerC'), labels: 'none' });
  await modelWrite({ bundle: pems('peerC'), labels: 'none' });
  const hidden = await compare('unlabelled, peerC');
  expect(hidden.real).toMatchObject({ external: { bundle: ['peerC'], operatorLabels: false } });
  expect((hidden.real as any).kubevirtCa).not.toContain('peerC');
  await realWrite({ bundle: pems('peerC'), labels: 'operator' });
  await modelWrite({ bundle: pems('peerC'), labels: 'operator' });
  const seen = await compare('labelled again, peerC');
  expect((seen.real as any).kubevirtCa).toContain('peerC');
}, 90_000);
