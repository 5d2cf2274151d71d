/**
 * The admin server: /healthz (process up), /readyz (accepting tunnels), /metrics (Prometheus), and JSON
 * routes (/status, /trust). What each answers, and to whom (issue 49), is what an operator's tooling needs:
 * - /healthz, /readyz: the kubelet's probes, and keepalived's readiness check over 127.0.0.1;
 * - /metrics: Prometheus (the ServiceMonitor);
 * - /status: `migration-mesh status`, through the API server's pod proxy (so on the pod address);
 * - /probe: `migration-mesh status --moves` the same way: a fresh probe of every peer's gateways (peer-probe.ts:
 *   one real tunnel handshake each, bounded in time, a result reused for 5 s, one probe per peer in flight);
 * - /trust: `migration-mesh-proxy trust-status`, run inside the pod (`kubectl exec`): loopback only
 *   (LOOPBACK_ONLY_ROUTES), 403 from anywhere else.
 * Only GET and HEAD are answered (405 otherwise); nothing else is served (404). No route changes state (a
 * probe changes nothing on either gateway: the peer answers it and keeps nothing).
 */
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import * as net from 'node:net';
import type { Logger } from 'pino';
import type { GatewayMetrics } from './metrics';

export type Readiness = 'ready' | 'draining' | 'not ready';

/** Extra JSON endpoints (e.g. `/trust`): the body (or a promise of it), or undefined for 404. */
export type JsonRoutes = Record<string, () => unknown>;

/** Routes answered only to a connection from loopback to loopback (inside the pod's network namespace). */
export const LOOPBACK_ONLY_ROUTES: readonly string[] = ['/trust'];

/** Is `address` a loopback address (127.0.0.0/8, ::1, or IPv4-mapped 127.x)? */
export function isLoopback(address: string | undefined): boolean {
  if (!address) return false;
  const a = address.toLowerCase().replace(/^::ffff:/, '');
  if (net.isIPv4(a)) return a.startsWith('127.');
  return a === '::1';
}

/** Whether a request on `socket` may read `route`. */
export function mayRead(route: string, socket: Pick<net.Socket, 'localAddress' | 'remoteAddress'>): boolean {
  return !LOOPBACK_ONLY_ROUTES.includes(route) || (isLoopback(socket.localAddress) && isLoopback(socket.remoteAddress));
}

/**
 * The stable code of the one answer to a route that failed inside the gateway (docs/gateway.md). The body
 * names only this code and the request id; what failed (message, path, stack) is logged under that id, never
 * answered: the admin port is reachable from the whole pod network.
 */
export const ADMIN_INTERNAL_ERROR = 'admin_internal_error';

/** The fixed 500 answer, JSON for the JSON routes and text for /metrics, and the log line it refers to. */
function internalError(log: Logger | undefined, res: http.ServerResponse, route: string, e: unknown, json: boolean): void {
  const requestId = crypto.randomBytes(8).toString('hex');
  const err = e instanceof Error ? { message: e.message, stack: e.stack } : { message: String(e) };
  log?.error({ requestId, route, err }, 'admin route failed');
  if (res.headersSent) { res.destroy(); return; }
  const body = json
    ? `${JSON.stringify({ error: 'internal error', code: ADMIN_INTERNAL_ERROR, requestId })}\n`
    : `internal error (${ADMIN_INTERNAL_ERROR}, request ${requestId})\n`;
  res.writeHead(500, { 'content-type': json ? 'application/json' : 'text/plain' }).end(body);
}

/** Call `f` and hand back its result as a promise: a synchronous throw becomes a rejection, never an uncaught exception. */
function attempt<T>(f: () => T | Promise<T>): Promise<T> {
  return new Promise<T>((resolve) => { resolve(f()); });
}

export function createAdminServer(metrics: GatewayMetrics, readiness: () => Readiness, json: JsonRoutes = {}, log?: Logger): http.Server {
  return http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') { res.writeHead(405, { allow: 'GET, HEAD' }).end('method not allowed\n'); return; }
    if (Object.hasOwn(json, url)) {
      if (!mayRead(url, req.socket)) {
        res.writeHead(403, { 'content-type': 'text/plain' }).end(`${url} answers only inside the pod (127.0.0.1): run migration-mesh-proxy trust-status there (kubectl exec)\n`);
        return;
      }
      // the body is serialized inside the promise too: a value JSON cannot encode (a BigInt, a cycle) is a 500, not a crash
      attempt(json[url]).then((body) => ({ code: body === undefined ? 404 : 200, text: `${JSON.stringify(body ?? { error: 'not enabled' }, null, 2)}\n` })).then(({ code, text }) => {
        res.writeHead(code, { 'content-type': 'application/json' }).end(text);
      }, (e: unknown) => internalError(log, res, url, e, true));
      return;
    }
    if (url === '/healthz') { res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n'); return; }
    if (url === '/readyz') {
      let state: Readiness;
      try { state = readiness(); } catch (e) { internalError(log, res, url, e, false); return; }
      res.writeHead(state === 'ready' ? 200 : 503, { 'content-type': 'text/plain' }).end(`${state}\n`);
      return;
    }
    if (url === '/metrics') {
      attempt(() => metrics.registry.metrics()).then((body) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body);
      }, (e: unknown) => internalError(log, res, url, e, false));
      return;
    }
    res.writeHead(404).end('not found\n');
  });
}
