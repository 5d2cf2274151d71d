/**
 * The real-API harness's retries (test/support/kube-retry.ts, issue 53 item 5) against a local HTTP server that
 * answers as a loaded API server does (504, 429 with Retry-After, then 200) and as a refusing one does (422 and
 * other 4xx): no real API server. `serverSideApply` (test/support/real-apply.ts) runs here as the real lane runs
 * it, over a stand-in cluster whose requests go to that server through `withClientGoRetry`, as
 * RealCluster.request's do.
 */
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { clientGoWait, retriesSoFar, retrySummary, withClientGoRetry, withEngineRequeue } from './support/kube-retry';
import { KubeObject, serverSideApply } from './support/real-apply';

type Answer = { status: number; retryAfter?: string; body?: unknown };

/** A server that answers each request with the next scripted answer (the last one again once the script is spent). */
let server: http.Server;
let base: string;
let script: Answer[] = [];
let seen: string[] = [];
beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume().on('end', () => {
      if (req.method === 'GET' && req.url === '/api/v1') {
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ resources: [{ name: 'configmaps', kind: 'ConfigMap', namespaced: true }] }));
        return;
      }
      seen.push(`${req.method} ${req.url}`);
      const a = script.length > 1 ? script.shift()! : script[0];
      const headers: Record<string, string> = { 'content-type': 'application/json', ...(a.retryAfter !== undefined ? { 'retry-after': a.retryAfter } : {}) };
      res.writeHead(a.status, headers).end(JSON.stringify(a.body ?? { kind: 'Status', code: a.status, message: `answer ${a.status}` }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => { await new Promise((r) => server.close(r)); });
beforeEach(() => { seen = []; });

/** One plain HTTP request to the local server, resolved with status, JSON, text and headers. */
function send(method: string, urlPath: string, body?: unknown): Promise<{ status: number; json: any; text: string; headers: http.IncomingHttpHeaders }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${base}${urlPath}`, { method, headers: { 'content-type': 'application/json' }, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8').on('data', (c) => { text += c; }).on('end', () => {
        let json: unknown;
        try { json = JSON.parse(text); } catch { json = undefined; }
        resolve({ status: res.statusCode ?? 0, json, text, headers: res.headers });
      });
    });
    req.once('error', reject);
    req.end(body === undefined ? undefined : JSON.stringify(body));
  });
}

/** A stand-in for RealCluster: its requests go to the local server through client-go's retry, with a second of Retry-After taken as 20 ms. */
const cluster = {
  name: 'local',
  request: (method: string, urlPath: string, body?: unknown) => withClientGoRetry(`${method} ${urlPath}`, () => send(method, urlPath, body), { scaleMs: 20 }),
} as unknown as Parameters<typeof serverSideApply>[0];

const cm: KubeObject = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'n' }, data: { a: '1' } };
const applied = { ...cm, metadata: { ...cm.metadata, resourceVersion: '7' } };
const PATCH = 'PATCH /api/v1/namespaces/n/configmaps/c?fieldManager=migration-mesh&fieldValidation=Strict';
const fastEngine = { firstMs: 10, factor: 2, maxRetries: 4, budgetMs: 5_000 };

describe("client-go's retry of a plain request", () => {
  test('a 504 and a 429 that carry Retry-After are sent again after it; the 200 that follows is the answer', async () => {
    script = [{ status: 504, retryAfter: '1' }, { status: 429, retryAfter: '2' }, { status: 200, body: applied }];
    const before = retriesSoFar().length;
    const started = Date.now();
    const r = await cluster.request('GET', '/api/v1/namespaces/n/configmaps/c');
    expect(r.status).toBe(200);
    expect(seen).toHaveLength(3);
    expect(Date.now() - started).toBeGreaterThanOrEqual(60); // 1 + 2 "seconds" of 20 ms
    expect(retriesSoFar().slice(before).map((x) => [x.layer, x.reason, x.waitMs])).toEqual([
      ['client-go', 'HTTP 504 with Retry-After: 1', 20], ['client-go', 'HTTP 429 with Retry-After: 2', 40],
    ]);
  });

  test('a 504 without Retry-After (the API server\'s own request timeout) is the answer, as client-go gives it', async () => {
    script = [{ status: 504 }, { status: 200 }];
    expect((await cluster.request('GET', '/api/v1/namespaces/n/configmaps/c')).status).toBe(504);
    expect(seen).toHaveLength(1);
  });

  test('a 4xx refusal is never sent again, Retry-After or not; 10 retries at most', async () => {
    for (const status of [400, 403, 404, 409, 422]) {
      script = [{ status, retryAfter: '1' }, { status: 200 }];
      seen = [];
      expect((await cluster.request('GET', '/x')).status).toBe(status);
      expect(seen).toHaveLength(1);
    }
    script = [{ status: 503, retryAfter: '0' }];
    seen = [];
    expect((await cluster.request('GET', '/x')).status).toBe(503);
    expect(seen).toHaveLength(11);
  });

  test("checkWait's reading of Retry-After: an integer number of seconds on a 429 or 5xx, nothing else", () => {
    expect(clientGoWait({ status: 503, headers: { 'retry-after': '3' } })).toBe(3);
    expect(clientGoWait({ status: 429, headers: { 'retry-after': '0' } })).toBe(0);
    expect(clientGoWait({ status: 503, headers: { 'retry-after': 'Wed, 21 Oct 2026 07:28:00 GMT' } })).toBeUndefined();
    expect(clientGoWait({ status: 503, headers: {} })).toBeUndefined();
    expect(clientGoWait({ status: 422, headers: { 'retry-after': '1' } })).toBeUndefined();
    expect(clientGoWait({ status: 200, headers: { 'retry-after': '1' } })).toBeUndefined();
  });
});

describe("a GitOps engine's requeue of a server-side apply", () => {
  test('504s without Retry-After (the failure seen at load 8-10) are requeued with backoff until the apply lands', async () => {
    script = [{ status: 504 }, { status: 504 }, { status: 201, body: applied }];
    const before = retriesSoFar().length;
    const live = await withEngineRequeue('apply', () => applyOnce(), fastEngine);
    expect(live.metadata.resourceVersion).toBe('7');
    expect(seen).toEqual([PATCH, PATCH, PATCH]);
    expect(retriesSoFar().slice(before).map((x) => [x.layer, x.waitMs])).toEqual([['engine', 10], ['engine', 20]]);
    expect(retrySummary()).toMatch(/engine: apply: apply ConfigMap\/n\/c: HTTP 504: answer 504; retried after 10 ms/);
  });

  test('serverSideApply itself requeues a 500 and a 429 without Retry-After, and resolves the server\'s copy', async () => {
    script = [{ status: 500 }, { status: 429 }, { status: 200, body: applied }];
    await expect(serverSideApply(cluster, cm)).resolves.toMatchObject({ metadata: { resourceVersion: '7' } });
    expect(seen).toEqual([PATCH, PATCH, PATCH]);
  }, 30_000);

  test.each([400, 403, 404, 409, 422])('a %i refusal (the schema\'s or the server\'s answer) is never retried', async (status) => {
    script = [{ status, body: { kind: 'Status', code: status, message: 'spec.x: Invalid value' } }, { status: 200, body: applied }];
    const before = retriesSoFar().length;
    await expect(serverSideApply(cluster, cm)).rejects.toMatchObject({ status, message: `apply ConfigMap/n/c: HTTP ${status}: spec.x: Invalid value` });
    expect(seen).toEqual([PATCH]);
    expect(retriesSoFar().length).toBe(before);
  });

  test('bounded in count: a server that keeps failing gets 1 + maxRetries applies, then its last failure', async () => {
    script = [{ status: 503 }];
    await expect(withEngineRequeue('apply', () => applyOnce(), fastEngine)).rejects.toMatchObject({ status: 503 });
    expect(seen).toHaveLength(5);
  });

  test('bounded in time: no retry whose wait would end past the budget', async () => {
    script = [{ status: 503 }];
    const started = Date.now();
    await expect(withEngineRequeue('apply', () => applyOnce(), { firstMs: 100, factor: 2, maxRetries: 10, budgetMs: 350 })).rejects.toMatchObject({ status: 503 });
    expect(seen).toHaveLength(3); // waits of 100 and 200 ms fit in 350 ms; the next, 400 ms, does not
    expect(Date.now() - started).toBeLessThan(2_000);
  });

  test('a failed connection (no HTTP answer) is requeued too', async () => {
    let calls = 0;
    const r = await withEngineRequeue('apply', async () => { if (++calls < 3) throw new Error('PATCH /x: socket hang up'); return 'ok'; }, fastEngine);
    expect([r, calls]).toEqual(['ok', 3]);
  });
});

/** One apply the way serverSideApply makes it, without its own requeue (to drive withEngineRequeue with a fast policy). */
async function applyOnce(): Promise<KubeObject> {
  const r = await cluster.request('PATCH', '/api/v1/namespaces/n/configmaps/c?fieldManager=migration-mesh&fieldValidation=Strict', cm);
  if (r.status !== 200 && r.status !== 201) throw Object.assign(new Error(`apply ConfigMap/n/c: HTTP ${r.status}: ${r.json?.message}`), { status: r.status });
  return r.json as KubeObject;
}
