/**
 * Test support for `migration-mesh status` (issue 28): FakeKubeApi (fake-kube.ts) plus exactly the other
 * calls `status` makes, faithful to kube-apiserver's REST contract for them:
 *   GET /api/v1/namespaces/NS/PLURAL, /apis/G/V/namespaces/NS/PLURAL   a list of the seeded objects of that
 *       kind in NS (`<Kind>List`, `metadata.resourceVersion`, items), `labelSelector` honoured (equality-based)
 *   GET /api/v1/PLURAL, /apis/G/V/PLURAL                                the same across every namespace
 *       (a namespaced kind), or of the cluster-scoped kind
 *   GET /api/v1/namespaces/NS/pods/NAME[:PORT]/proxy[/PATH][?QUERY]   the pod proxy: the request goes to the
 *       backend a test registered for that pod and port (`podProxy`), its status, content-type and body come
 *       back as they are. A pod that is not seeded: 404 NotFound Status. No backend, or the backend refuses the
 *       connection: 503 ServiceUnavailable Status "error trying to reach service: dial tcp IP:PORT: connect:
 *       connection refused" (kube-apiserver's answer when the kubelet side cannot be dialed).
 *   `forbidList`: lists of the named plurals answer 403 Forbidden with kube-apiserver's message (no RBAC
 *       evaluation: the test names what is forbidden).
 * What it does NOT do: list pagination (`limit`/`continue`), field selectors on lists, set-based selectors
 * (400), watches of these kinds, the pod proxy's other methods (POST, PUT, ...) and websockets, a port
 * given by name instead of number, a pod with no IP (kube-apiserver: 503 "... does not have a host assigned"),
 * node or service proxies, and still no authentication or RBAC.
 */
import * as http from 'node:http';
import { FakeKubeApi } from './fake-kube';
import { matchesLabels, parseLabelSelector } from './label-selector';

type Obj = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string; labels?: Record<string, string> }; status?: { podIP?: string } };

const statusBody = (code: number, reason: string, message: string) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

export class FakeClusterApi extends FakeKubeApi {
  private readonly listed = new Map<string, Obj>();
  private readonly backends = new Map<string, { host: string; port: number }>();
  /** Lists of these plurals (e.g. `pods`) answer 403 Forbidden, as kube-apiserver does for an identity without `list`. */
  readonly forbidList = new Set<string>();
  /** Every pod proxy request, in order: `NS/NAME:PORT/PATH` and the status answered. */
  readonly proxied: { target: string; code: number }[] = [];

  override seed(obj: Obj, namespaced = obj.metadata.namespace !== undefined): void {
    super.seed(obj, namespaced);
    if (!(obj.apiVersion === 'v1' && obj.kind === 'ConfigMap' && obj.metadata.namespace === this.namespace)) {
      this.listed.set(`${obj.apiVersion}|${obj.kind}|${obj.metadata.namespace ?? ''}|${obj.metadata.name}`, JSON.parse(JSON.stringify(obj)));
    }
  }

  override unseed(apiVersion: string, kind: string, name: string, namespace?: string): void {
    super.unseed(apiVersion, kind, name, namespace);
    this.listed.delete(`${apiVersion}|${kind}|${namespace ?? ''}|${name}`);
  }

  /** Requests to pod NS/NAME on PORT through the pod proxy go to `target` (a real server standing in for the pod). */
  podProxy(namespace: string, name: string, port: number, target: { host: string; port: number }): void {
    this.backends.set(`${namespace}/${name}:${port}`, target);
  }

  protected override serveMore(req: http.IncomingMessage, res: http.ServerResponse): boolean {
    if (req.method !== 'GET') return false;
    const url = new URL(req.url ?? '/', 'http://x');
    const proxy = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/proxy(\/.*)?$/.exec(url.pathname);
    if (proxy) { this.proxy(decodeURIComponent(proxy[1]), decodeURIComponent(proxy[2]), `${proxy[3] ?? '/'}${url.search}`, res); return true; }
    const list = /^\/(?:api\/(v1)|apis\/([^/]+\/[^/]+))(?:\/namespaces\/([^/]+))?\/([^/]+)$/.exec(url.pathname);
    if (!list) return false;
    const apiVersion = list[1] ?? list[2];
    const namespace = list[3];
    const plural = list[4];
    const items = [...this.listed.values()].filter((o) => o.apiVersion === apiVersion && `${o.kind.toLowerCase()}s` === plural && (!namespace || o.metadata.namespace === namespace));
    if (items.length === 0 && !(plural === 'pods' && apiVersion === 'v1') && !this.knows(apiVersion, plural)) return false;
    const send = (code: number, body: unknown) => { res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body)); };
    if (this.forbidList.has(plural)) {
      const where = namespace ? ` in the namespace "${namespace}"` : ' at the cluster scope';
      const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : '';
      send(403, statusBody(403, 'Forbidden', `${plural} is forbidden: User "viewer" cannot list resource "${plural}" in API group "${group}"${where}`));
      return true;
    }
    const selText = url.searchParams.get('labelSelector');
    const sel = selText ? parseLabelSelector(selText) : undefined;
    if (selText && !sel) { send(400, statusBody(400, 'BadRequest', `unable to parse requirement (this test server knows equality-based selectors only): ${selText}`)); return true; }
    const kind = items[0]?.kind ?? (plural === 'pods' ? 'Pod' : plural);
    send(200, {
      kind: `${kind}List`, apiVersion, metadata: { resourceVersion: '1' },
      items: items.filter((o) => !sel || matchesLabels(o.metadata.labels, sel)).sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`)),
    });
    return true;
  }

  /** Kinds served by discovery (serveKinds) answer an empty list, as an installed CRD with no objects does. */
  private knows(apiVersion: string, plural: string): boolean {
    const kinds = this.kinds.get(apiVersion);
    return !!kinds && [...kinds.values()].some((k) => k.plural === plural);
  }

  private proxy(namespace: string, nameAndPort: string, path: string, res: http.ServerResponse): void {
    const [name, port] = nameAndPort.split(':');
    const target = `${namespace}/${nameAndPort}${path}`;
    const answer = (code: number, body: unknown) => {
      this.proxied.push({ target, code });
      res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    const pod = this.listed.get(`v1|Pod|${namespace}|${name}`);
    if (!pod) { answer(404, statusBody(404, 'NotFound', `pods "${name}" not found`)); return; }
    const backend = this.backends.get(`${namespace}/${name}:${port ?? ''}`);
    const refused = () => answer(503, statusBody(503, 'ServiceUnavailable', `error trying to reach service: dial tcp ${pod.status?.podIP ?? '10.128.0.1'}:${port ?? 80}: connect: connection refused`));
    if (!backend) { refused(); return; }
    const out = http.get({ host: backend.host, port: backend.port, path }, (r) => {
      const chunks: Buffer[] = [];
      r.on('data', (c: Buffer) => chunks.push(c));
      r.on('end', () => {
        this.proxied.push({ target, code: r.statusCode ?? 0 });
        res.writeHead(r.statusCode ?? 502, { 'content-type': r.headers['content-type'] ?? 'text/plain' }).end(Buffer.concat(chunks));
      });
    });
    out.on('error', refused);
  }
}
