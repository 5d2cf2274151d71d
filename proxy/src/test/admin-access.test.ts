/**
 * What the admin endpoints answer, and to whom (issue 49): GET/HEAD only; /trust (the trust table, for
 * `migration-mesh-proxy trust-status` run inside the pod) only from loopback to loopback, 403 on the pod
 * address; /status, /metrics, /healthz, /readyz as before (the API server's pod proxy, Prometheus, the
 * kubelet). Loopback end to end; the pod-address case through the server's own request handler with a
 * socket whose addresses are the pod's (no other address is a target).
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayHandle } from '../gateway';
import { createAdminServer, isLoopback, mayRead } from '../admin';
import { createMetrics } from '../metrics';
import { configFor } from '../testkit/gateways';
import { HANG_GUARD_MS, silent, tmpDir } from '../testkit/helpers';
import * as path from 'node:path';

function get(port: number, p: string, method = 'GET'): Promise<{ code: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: p, method }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => { body += c; });
      res.on('end', () => resolve({ code: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The admin server's answer to a request arriving on a socket with these addresses. */
function answer(server: http.Server, url: string, socket: { localAddress: string; remoteAddress: string }, method = 'GET'): Promise<{ code: number; body: string }> {
  return new Promise((resolve) => {
    let code = 0;
    const res = {
      writeHead(c: number) { code = c; return res; },
      end(b?: string) { resolve({ code, body: b ?? '' }); return res; },
    };
    server.emit('request', { url, method, socket } as unknown as http.IncomingMessage, res as unknown as http.ServerResponse);
  });
}

describe('admin endpoints: who may read what', { timeout: 5 * HANG_GUARD_MS }, () => {
  let gw: GatewayHandle;
  before(async () => {
    const dir = tmpDir('mm-admin-');
    gw = await startGateway(await configFor('west', 'east', 1, 'plaintext', undefined, {
      trust: { socket: path.join(dir, 'trust.sock'), repushIntervalMs: 60_000, retryMs: 1000 },
    }), { logger: silent });
  });
  after(async () => { await gw?.close(); });

  it('answers /trust, /status, /metrics, /healthz over loopback (trust-status, keepalived, tests)', async () => {
    const port = gw.addresses().admin.port;
    const t = await get(port, '/trust');
    assert.equal(t.code, 200);
    assert.equal(JSON.parse(t.body).cluster, 'west');
    assert.equal((await get(port, '/status')).code, 200);
    assert.equal((await get(port, '/metrics')).code, 200);
    assert.equal((await get(port, '/healthz')).code, 200);
  });

  it('refuses every method but GET and HEAD', async () => {
    const port = gw.addresses().admin.port;
    for (const m of ['POST', 'PUT', 'DELETE', 'PATCH']) assert.equal((await get(port, '/trust', m)).code, 405, m);
    assert.equal((await get(port, '/healthz', 'HEAD')).code, 200);
  });

  it('on the pod address: /trust is refused (403), /status and /metrics answer (pod proxy, Prometheus)', async () => {
    const server = createAdminServer(createMetrics(undefined, undefined, false), () => 'ready', { '/trust': () => ({ secretish: true }), '/status': () => ({ ok: true }) });
    const pod = { localAddress: '10.128.0.7', remoteAddress: '10.128.0.1' };
    const t = await answer(server, '/trust', pod);
    assert.equal(t.code, 403);
    assert.doesNotMatch(t.body, /secretish/);
    assert.match(t.body, /trust-status/);
    assert.equal((await answer(server, '/trust?x=1', { localAddress: '::ffff:10.128.0.7', remoteAddress: '::ffff:127.0.0.1' })).code, 403);
    assert.equal((await answer(server, '/status', pod)).code, 200);
    assert.equal((await answer(server, '/healthz', pod)).code, 200);
    assert.equal((await answer(server, '/trust', { localAddress: '127.0.0.1', remoteAddress: '127.0.0.1' })).code, 200);
    assert.equal((await answer(server, '/trust', { localAddress: '::1', remoteAddress: '::1' })).code, 200);
  });

  it('loopback is 127.0.0.0/8, ::1 and their IPv4-mapped form, nothing else', () => {
    for (const a of ['127.0.0.1', '127.9.9.9', '::1', '::ffff:127.0.0.1', '::FFFF:127.0.0.1']) assert.equal(isLoopback(a), true, a);
    for (const a of [undefined, '', '10.0.0.1', '0.0.0.0', '::', '::ffff:10.0.0.1', 'fe80::1', '128.0.0.1', '::2']) assert.equal(isLoopback(a), false, String(a));
    assert.equal(mayRead('/metrics', { localAddress: '10.0.0.1', remoteAddress: '10.0.0.2' }), true);
    assert.equal(mayRead('/trust', { localAddress: '127.0.0.1', remoteAddress: '10.0.0.2' }), false);
  });
});
