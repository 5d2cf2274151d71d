/**
 * The harness's own ways with a real kube-apiserver's connections. First, `request`'s kept-alive connections are
 * closed on this side before the server's 90 s idle timeout would close them under a request being written, and a
 * request that meets such a close anyway (before any answer) is sent again on a new connection when a replay cannot
 * change its outcome (a CI run with two hogs failed kubevirt-real's status test with a bare "socket hang up").
 * Then the suites' write recorder (test/support/real-watch.ts), through the three ways a watch
 * ends that the GitOps suites meet:
 *   - the server refuses the watch's resourceVersion as too old (HTTP 200, one ERROR event with code 410, the end of
 *     the stream), which a LIST answered from etcd while a new CRD's watch cache initializes leads to. Shown first
 *     on the raw protocol, then: the recorder lists again and records every later creation once, and what changed
 *     while no watch was open (a deletion, a change, a creation) as inferred writes;
 *   - the server ends the stream (here every second, `timeoutSeconds`): reopened from the last revision, nothing is
 *     lost or seen twice;
 *   - the collection is gone (its CRD deleted): no watch can be reopened, and every read of the events throws,
 *     naming the collection and the server's answer.
 */
import * as fs from 'node:fs';
import * as https from 'node:https';
import * as net from 'node:net';
import { installCrds, serverSideApply, type KubeObject } from './support/real-apply';
import type { Crd } from './support/real-crds';
import { KEEP_ALIVE_IDLE_MS, RealFleet, type RealCluster } from './support/real-kube';
import { ServerWatch } from './support/real-watch';

let fleet: RealFleet;
let cluster: RealCluster;
const watches: ServerWatch[] = [];
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const crd = (plural: string, kind: string): Crd => ({
  apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: `${plural}.watch.example.com` },
  spec: {
    group: 'watch.example.com', scope: 'Namespaced', names: { plural, singular: kind.toLowerCase(), kind, listKind: `${kind}List` },
    versions: [{ name: 'v1', served: true, storage: true, schema: { openAPIV3Schema: { type: 'object', 'x-kubernetes-preserve-unknown-fields': true } } }],
  },
});
const thing = (kind: string, name: string): KubeObject => ({ apiVersion: 'watch.example.com/v1', kind, metadata: { name, namespace: 'default' } });
const configMap = (name: string, labels: Record<string, string> = {}): KubeObject =>
  ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: 'default', labels }, data: { k: name } } as KubeObject);

async function until(what: string, ok: () => boolean, ms = 20_000): Promise<void> {
  for (const t0 = Date.now(); !ok(); await sleep(50)) if (Date.now() - t0 > ms) throw new Error(`${what}: not after ${ms} ms`);
}

/** The first line a raw watch of `collection` from `rv` gets, and whether the server then ended the stream. */
function rawWatch(collection: string, rv: string): Promise<{ status?: number; first: any; ended: boolean }> {
  const admin = cluster.admin as { cert: string; key: string };
  return new Promise((resolve, reject) => {
    const req = https.get(`${cluster.url}${collection}?watch=1&resourceVersion=${rv}`, {
      ca: fs.readFileSync(cluster.caFile), cert: fs.readFileSync(admin.cert), key: fs.readFileSync(admin.key), timeout: 10_000,
    }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (d: string) => { text += d; });
      res.on('end', () => resolve({ status: res.statusCode, first: JSON.parse(text.split('\n')[0]), ended: true }));
    });
    req.on('timeout', () => { req.destroy(); reject(new Error(`the watch of ${collection} from ${rv} did not end within 10 s`)); });
    req.on('error', reject);
  });
}

beforeAll(async () => { fleet = await RealFleet.start(['watch-a']); cluster = fleet.cluster('watch-a'); }, 120_000);
afterAll(async () => { for (const w of watches) w.stop(); await fleet?.stop(); }, 60_000);

test('a kept-alive connection unused for a while is closed by the harness, well before kube-apiserver\'s 90 s idle timeout', async () => {
  expect((await cluster.request('GET', '/version')).status).toBe(200);
  expect(cluster.openConnections()).toBe(1);
  const t0 = Date.now();
  await until('the idle connection closed', () => cluster.openConnections() === 0, 80_000);
  const idle = Date.now() - t0;
  expect({ idle, closedBeforeServer: idle < 60_000 }).toEqual({ idle: expect.any(Number), closedBeforeServer: true });
  expect(idle).toBeGreaterThanOrEqual(KEEP_ALIVE_IDLE_MS - 1000);
  // and the next request opens a new connection
  expect((await cluster.request('GET', '/version')).status).toBe(200);
}, 90_000);

test('a request that goes out on a kept-alive connection just as it is closed, before any answer, is sent again on a new one (reads, PUT, DELETE, apply); a create is not', async () => {
  // a TCP relay in front of the API server that, once armed, cuts each connection open at that moment when the
  // client next sends on it: what a server closing an idle connection just as a request goes out looks like
  const upstream = new URL(cluster.url);
  const open = new Set<net.Socket>();
  let armed = new Set<net.Socket>();
  let connections = 0;
  let cut = 0;
  const relay = net.createServer((client) => {
    connections++;
    open.add(client);
    const server = net.connect(Number(upstream.port), upstream.hostname);
    client.on('data', (d) => {
      if (armed.has(client)) { armed.delete(client); cut++; client.destroy(); server.destroy(); return; }
      server.write(d);
    });
    server.on('data', (d) => client.write(d));
    const end = () => { open.delete(client); client.destroy(); server.destroy(); };
    client.on('close', end).on('error', end);
    server.on('close', end).on('error', end);
  });
  await new Promise<void>((r) => relay.listen(0, '127.0.0.1', () => r()));
  const viaRelay = Object.create(cluster) as RealCluster;
  Object.defineProperty(viaRelay, 'url', { value: `https://127.0.0.1:${(relay.address() as net.AddressInfo).port}` });
  Object.defineProperty(viaRelay, 'agents', { value: new Map() });
  try {
    expect((await viaRelay.request('GET', '/version')).status).toBe(200);
    armed = new Set(open);
    expect((await viaRelay.request('GET', '/version')).status).toBe(200);
    expect({ connections, cut }).toEqual({ connections: 2, cut: 1 });
    armed = new Set(open);
    await expect(viaRelay.request('POST', '/api/v1/namespaces/default/configmaps', configMap('created-once'))).rejects
      .toThrow(/^POST \/api\/v1\/namespaces\/default\/configmaps: (socket hang up|read ECONNRESET) \(on a kept-alive connection\)$/);
    expect(cut).toBe(2);
  } finally {
    for (const c of open) c.destroy();
    relay.close();
  }
});

test('a watch whose revision the server no longer holds gets one ERROR event (410) and an ended stream; the recorder lists again and sees every later creation once', async () => {
  await installCrds(cluster, [crd('gadgets', 'Gadget')]);
  await serverSideApply(cluster, thing('Gadget', 'before'));
  const collection = '/apis/watch.example.com/v1/gadgets';
  const raw = await rawWatch(collection, '1');
  expect({ status: raw.status, type: raw.first.type, code: raw.first.object.code, ended: raw.ended })
    .toEqual({ status: 200, type: 'ERROR', code: 410, ended: true });
  expect(raw.first.object.message).toMatch(/too old resource version: 1 /);

  const w = await ServerWatch.start(cluster, [thing('Gadget', 'x')], { startAt: '1' });
  watches.push(w);
  await until('the relist after the expired watch', () => w.relists.length === 1);
  expect(w.relists[0]).toMatch(new RegExp(`^${collection}: watch from 1 expired \\(too old resource version: 1 .*\\); LIST at \\d+$`));
  for (const n of ['after-1', 'after-2', 'after-3']) await serverSideApply(cluster, thing('Gadget', n));
  await until('three creations seen', () => w.events.length >= 3);
  await sleep(500);
  expect(w.events.map((e) => `${e.type} ${e.key}${e.relisted ? ' (relisted)' : ''}`))
    .toEqual(['ADDED Gadget/default/after-1', 'ADDED Gadget/default/after-2', 'ADDED Gadget/default/after-3']);
  const rvs = w.events.map((e) => e.rv);
  expect([...rvs].sort((x, y) => x - y)).toEqual(rvs);
});

test('what changed while no watch was open is inferred from the LIST after the expiry: a deletion, a change and a creation, each once; an unchanged object not at all', async () => {
  await installCrds(cluster, [crd('sprockets', 'Sprocket')]);
  for (const n of ['gone', 'changed', 'same']) await serverSideApply(cluster, thing('Sprocket', n));
  // the first LIST knows the three; the first watch starts from revision 1, which has expired; before the LIST that
  // replaces it, one object is deleted, one changed and one created
  const w = await ServerWatch.start(cluster, [thing('Sprocket', 'x')], {
    startAt: '1',
    beforeRelist: async () => {
      expect((await cluster.request('DELETE', '/apis/watch.example.com/v1/namespaces/default/sprockets/gone')).status).toBe(200);
      await serverSideApply(cluster, { ...thing('Sprocket', 'changed'), spec: { size: 2 } } as KubeObject);
      await serverSideApply(cluster, thing('Sprocket', 'new'));
    },
  });
  watches.push(w);
  await until('the relist after the expired watch', () => w.relists.length === 1);
  await until('three inferred writes', () => w.events.length >= 3);
  await sleep(500);
  expect(w.events.map((e) => `${e.type} ${e.key}${e.relisted ? ' (relisted)' : ''}`).sort()).toEqual([
    'ADDED Sprocket/default/new (relisted)', 'DELETED Sprocket/default/gone (relisted)', 'MODIFIED Sprocket/default/changed (relisted)',
  ]);
  const changed = w.events.find((e) => e.name === 'changed')!;
  expect(changed.object.spec).toEqual({ size: 2 });
  // and the watch then opened from the LIST's revision sees what follows, as a watch event
  await serverSideApply(cluster, thing('Sprocket', 'later'));
  await until('the later creation', () => w.events.length >= 4);
  expect(w.events.slice(3).map((e) => `${e.type} ${e.key}${e.relisted ? ' (relisted)' : ''}`)).toEqual(['ADDED Sprocket/default/later']);
});

test('a stream the server ends every second is reopened from its last revision: 30 ConfigMaps created over 3 s are each seen once, in revision order', async () => {
  const w = await ServerWatch.start(cluster, [configMap('x')], { timeoutSeconds: 1, labelSelector: 'watch-test=streams' });
  watches.push(w);
  await serverSideApply(cluster, configMap('unlabelled'));
  const names = Array.from({ length: 30 }, (_, i) => `cm-${String(i).padStart(2, '0')}`);
  for (const n of names) {
    await serverSideApply(cluster, configMap(n, { 'watch-test': 'streams' }));
    await sleep(100);
  }
  await until('30 creations seen', () => w.events.length >= 30);
  await sleep(1500);
  expect(w.events.map((e) => `${e.type} ${e.key}${e.relisted ? ' (relisted)' : ''}`)).toEqual(names.map((n) => `ADDED ConfigMap/default/${n}`));
  const rvs = w.events.map((e) => e.rv);
  expect([...rvs].sort((x, y) => x - y)).toEqual(rvs);
  expect(w.relists).toEqual([]);
});

test('a collection that is gone (its CRD deleted) cannot be watched again: every read of the events throws, naming it and the server\'s answer', async () => {
  await installCrds(cluster, [crd('widgets', 'Widget')]);
  const w = await ServerWatch.start(cluster, [thing('Widget', 'x')], { reopenWithinMs: 5_000 });
  watches.push(w);
  await serverSideApply(cluster, thing('Widget', 'one'));
  await until('the creation seen', () => w.events.length === 1);
  const r = await cluster.request('DELETE', '/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.watch.example.com');
  expect(r.status).toBe(200);
  await until('the watch failed for good', () => { try { w.check(); return false; } catch { return true; } }, 30_000);
  expect(() => w.events).toThrow(/^the watch of \/apis\/watch\.example\.com\/v1\/widgets on watch-a failed for good: (LIST \/apis\/watch\.example\.com\/v1\/widgets: HTTP 404|watch \/apis\/watch\.example\.com\/v1\/widgets: HTTP 404)/);
  expect(() => w.created()).toThrow(/failed for good/);
}, 60_000);
