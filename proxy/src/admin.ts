/** The admin server: /healthz (process up), /readyz (accepting tunnels), /metrics (Prometheus). */
import * as http from 'node:http';
import type { GatewayMetrics } from './metrics';

export type Readiness = 'ready' | 'draining' | 'not ready';

export function createAdminServer(metrics: GatewayMetrics, readiness: () => Readiness): http.Server {
  return http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
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
