/**
 * A route that fails inside the gateway answers one fixed body (500, code `admin_internal_error` and a
 * request id, docs/gateway.md) and logs what failed under that id: the admin port is reachable from the
 * whole pod network, so an internal message, a file path or a stack never goes to the client. A real
 * gateway on loopback; the failure is forced through its `interfaceAddresses` hook, which `/status` and
 * `/metrics` (`mm_proxy_address_held`) both read, throwing an error whose text holds a path.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { startGateway, type GatewayHandle } from '../gateway';
import { ADMIN_INTERNAL_ERROR, createAdminServer } from '../admin';
import { createMetrics } from '../metrics';
import { configFor } from '../testkit/gateways';

const SECRET = '/var/run/secrets/mm/tls.key: EACCES (uid 65532)';

function get(port: number, p: string): Promise<{ code: number; type: string; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ code: res.statusCode ?? 0, type: String(res.headers['content-type']), body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The body says nothing of what failed: not the message, not the path, no stack frame. */
function assertOpaque(body: string, what: string): void {
  assert.doesNotMatch(body, /EACCES|\/var\/run|tls\.key|65532/, `${what}: no message or path (${body})`);
  assert.doesNotMatch(body, /\bat .*\(|\.js:\d+|node:internal/, `${what}: no stack (${body})`);
}

describe('admin routes: an internal error is logged, never answered', { timeout: 30_000 }, () => {
  let gw: GatewayHandle;
  let failing = false;
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({ write(chunk: Buffer, _e, cb) { for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l)); cb(); } });
  before(async () => {
    gw = await startGateway(await configFor('west', 'east', 1, 'plaintext', undefined, { ownAddresses: ['127.0.0.1'] }), {
      logger: pino({ level: 'info' }, sink),
      interfaceAddresses: () => { if (failing) throw new Error(SECRET); return new Set(['127.0.0.1']); },
    });
  });
  after(async () => { await gw?.close(); });

  it('/status (a JSON route that throws at once): 500, the fixed JSON body, the gateway still answers', async () => {
    const port = gw.addresses().admin.port;
    assert.equal((await get(port, '/status')).code, 200, 'answers before the fault');
    failing = true;
    const r = await get(port, '/status');
    failing = false;
    assert.equal(r.code, 500);
    assert.equal(r.type, 'application/json');
    const body = JSON.parse(r.body) as { error: string; code: string; requestId: string };
    assert.deepEqual(Object.keys(body).sort(), ['code', 'error', 'requestId']);
    assert.equal(body.code, ADMIN_INTERNAL_ERROR);
    assert.equal(body.error, 'internal error');
    assert.match(body.requestId, /^[0-9a-f]{16}$/);
    assertOpaque(r.body, '/status');
    const logged = lines.find((l) => l.requestId === body.requestId) as { route: string; err: { message: string; stack: string } } | undefined;
    assert.ok(logged, 'the failure is logged under the answered request id');
    assert.equal(logged.route, '/status');
    assert.equal(logged.err.message, SECRET, 'the operator finds the message in the log');
    assert.match(logged.err.stack, /admin-errors\.test/);
    assert.equal((await get(port, '/status')).code, 200, 'the gateway is still up and answers again');
  });

  it('/metrics (a collector that throws): 500, the fixed text body, logged under its id', async () => {
    const port = gw.addresses().admin.port;
    failing = true;
    const r = await get(port, '/metrics');
    failing = false;
    assert.equal(r.code, 500);
    assert.match(r.body, new RegExp(`^internal error \\(${ADMIN_INTERNAL_ERROR}, request ([0-9a-f]{16})\\)\\n$`));
    assertOpaque(r.body, '/metrics');
    const id = /request ([0-9a-f]{16})/.exec(r.body)![1];
    const logged = lines.find((l) => l.requestId === id) as { route: string; err: { message: string } } | undefined;
    assert.equal(logged?.route, '/metrics');
    assert.equal(logged?.err.message, SECRET);
    assert.equal((await get(port, '/metrics')).code, 200);
  });

  it('a JSON route whose value cannot be serialized, a rejected promise, a throwing readiness: the same fixed answers', async () => {
    const server = createAdminServer(createMetrics(undefined, undefined, false), () => { throw new Error(SECRET); }, {
      '/big': () => ({ n: 1n }),
      '/rejects': () => Promise.reject(new Error(SECRET)),
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as { port: number }).port;
      for (const route of ['/big', '/rejects']) {
        const r = await get(port, route);
        assert.equal(r.code, 500, route);
        assert.equal(JSON.parse(r.body).code, ADMIN_INTERNAL_ERROR, route);
        assertOpaque(r.body, route);
      }
      const ready = await get(port, '/readyz');
      assert.equal(ready.code, 500);
      assertOpaque(ready.body, '/readyz');
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
