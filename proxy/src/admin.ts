/** The admin server: /healthz (process up), /readyz (accepting tunnels), /metrics (Prometheus). */
import * as http from 'node:http';
import type { GatewayMetrics } from './metrics';

export type Readiness = 'ready' | 'draining' | 'not ready';

/** Extra JSON endpoints (e.g. `/trust`): the body, or undefined for 404. */
export type JsonRoutes = Record<string, () => unknown>;

export function createAdminServer(metrics: GatewayMetrics, readiness: () => Readiness, json: JsonRoutes = {}): http.Server {
  return http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (Object.hasOwn(json, url)) {
      const body = json[url]();
      res.writeHead(body === undefined ? 404 : 200, { 'content-type': 'application/json' }).end(`${JSON.stringify(body ?? { error: 'not enabled' }, null, 2)}\n`);
      return;
    }
    if (url === '/healthz') { res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n'); return; }
    if (url === '/readyz') {
      const state = readiness();
      res.writeHead(state === 'ready' ? 200 : 503, { 'content-type': 'text/plain' }).end(`${state}\n`);
      return;
    }
    if (url === '/metrics') {
      metrics.registry.metrics().then((body) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body);
      }, (e: Error) => { res.writeHead(500).end(e.message); });
      return;
    }
    res.writeHead(404).end('not found\n');
  });
}
