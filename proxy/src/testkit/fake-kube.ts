/**
 * Test support: a small Kubernetes API server for ConfigMaps in one namespace, faithful to the REST
 * contract for exactly the calls the trust container makes:
 *   GET    /api/v1/namespaces/NS/configmaps/NAME                      200 object | 404 Status
 *   GET    /api/v1/namespaces/NS/configmaps?fieldSelector=metadata.name=NAME   ConfigMapList + list resourceVersion
 *   GET    ...configmaps?watch=true&fieldSelector=...&resourceVersion=RV        chunked JSON events newer than RV;
 *          an RV older than the retained history gets one ERROR event (Status 410 Expired) and the stream ends
 *   PUT    /api/v1/namespaces/NS/configmaps/NAME   409 Conflict when metadata.resourceVersion is stale
 * One global resourceVersion counter, as etcd's revision. What it does NOT do: authentication, RBAC,
 * other kinds or namespaces, label selectors, PATCH/apply, POST/DELETE over HTTP, bookmarks, watch
 * timeouts, protobuf, table output (it records each Authorization header and checks none). It listens on
 * loopback TCP or on a unix socket (`listenPath`), plain HTTP or HTTPS (`tls`).
 * `compact()` drops history (watches from before get 410), `expireWatches()` ends live watches with 410; `restart()`
 * closes the listener and every watch and listens again on the same port.
 *
 * For `migration-mesh status` (issue 28) it also serves, read-only, objects of any kind seeded with
 * `seed()` (any namespace, or cluster-scoped), and discovery for their group/versions and those named
 * by `serveKinds()` (a kind served with no object answers 404 NotFound, as for a CRD that is installed):
 *   GET /api/v1, /apis/GROUP/VERSION                                  APIResourceList (name, kind, namespaced, verbs)
 *   GET /api/v1/namespaces/NS/PLURAL/NAME, /apis/G/V/namespaces/NS/PLURAL/NAME, /api(s)/.../PLURAL/NAME
 * Not for these: lists, watches, writes, field/label selectors, subresources (status, scale, the pod
 * proxy), /apis group discovery, aggregated discovery, OpenAPI. Plurals are the lower-case kind + "s"
 * (a client must take them from discovery, as client-node's KubernetesObjectApi does).
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';

export interface ConfigMapObj { apiVersion: 'v1'; kind: 'ConfigMap'; metadata: { name: string; namespace: string; resourceVersion: string; uid: string; labels?: Record<string, string> }; data: Record<string, string> }

interface Event { rv: number; type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: ConfigMapObj }

const status = (code: number, reason: string, message: string) => ({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code });

export class FakeKubeApi {
  private rv = 1;
  private readonly objects = new Map<string, ConfigMapObj>();
  private history: Event[] = [];
  private oldestRv = 1;
  private readonly watchers = new Set<{ name?: string; res: http.ServerResponse }>();
  private server?: http.Server;
  private readonly sockets = new Set<net.Socket>();
  port = 0;
  /** Called after every successful write through the API (PUT), e.g. to run the operator's reconcile. */
  onUpdate?: (name: string) => void;
  readonly counts = { get: 0, list: 0, watch: 0, put: 0, conflicts: 0, gone: 0 };

  constructor(readonly namespace: string) {}

  /** Unix socket path when listening by `listenPath` (a test relays TCP to it, e.g. from a network namespace). */
  path?: string;

  /** Every `Authorization` header value received (the trust container's bearer token). */
  readonly authorizations = new Set<string>();
  /** Serve HTTPS with this key and certificate (as kube-apiserver does; client-node's in-cluster config needs it). */
  tls?: { key: string | Buffer; cert: string | Buffer };

  private serve(): http.Server {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.headers.authorization) this.authorizations.add(req.headers.authorization);
      this.handle(req, res);
    };
    this.server = this.tls ? https.createServer({ ...this.tls }, handler) : http.createServer(handler);
    this.server.on(this.tls ? 'secureConnection' : 'connection', (s: net.Socket) => { this.sockets.add(s); s.on('close', () => this.sockets.delete(s)); });
    return this.server;
  }

  async listen(port = 0): Promise<number> {
    const server = this.serve();
    await new Promise<void>((r) => server.listen(port, '127.0.0.1', () => r()));
    this.port = (server.address() as net.AddressInfo).port;
    return this.port;
  }

  /** Listen on a unix socket instead of loopback TCP (any stale file at `file` is replaced). */
  async listenPath(file: string): Promise<void> {
    const server = this.serve();
    fs.rmSync(file, { force: true });
    await new Promise<void>((r) => server.listen(file, () => r()));
    this.path = file;
  }

  /** Simulate an API server restart: every connection and watch is cut; the data (etcd) stays. */
  async restart(): Promise<void> {
    await this.close();
    if (this.path !== undefined) await this.listenPath(this.path); else await this.listen(this.port);
  }

  async close(): Promise<void> {
    for (const w of this.watchers) w.res.destroy();
    this.watchers.clear();
    for (const s of this.sockets) s.destroy();
    if (this.server) await new Promise<void>((r) => this.server!.close(() => r()));
  }

  /** Drop the event history: a watch from an older resourceVersion now gets 410 Gone. */
  compact(): void {
    this.oldestRv = this.rv;
    this.history = [];
  }

  /** Compact and end every live watch with an ERROR event carrying 410 Expired, as kube-apiserver does. */
  expireWatches(): void {
    this.compact();
    for (const w of this.watchers) {
      this.counts.gone++;
      w.res.end(`${JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', 'too old resource version') })}\n`);
    }
    this.watchers.clear();
  }

  get(name: string): ConfigMapObj | undefined {
    const o = this.objects.get(name);
    return o && JSON.parse(JSON.stringify(o));
  }

  /** Write as a controller would (virt-operator's own writes), outside HTTP. */
  put(name: string, data: Record<string, string>, labels?: Record<string, string>): ConfigMapObj {
    const prev = this.objects.get(name);
    const obj: ConfigMapObj = {
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name, namespace: this.namespace, resourceVersion: String(++this.rv), uid: prev?.metadata.uid ?? `uid-${name}`, labels: labels ?? prev?.metadata.labels },
      data: { ...data },
    };
    this.objects.set(name, obj);
    this.emit({ rv: this.rv, type: prev ? 'MODIFIED' : 'ADDED', object: obj });
    return obj;
  }

  private emit(e: Event): void {
    this.history.push(e);
    for (const w of this.watchers) if (!w.name || w.name === e.object.metadata.name) w.res.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
  }

  private readonly extra = new Map<string, unknown>();
  private readonly kinds = new Map<string, Map<string, { plural: string; namespaced: boolean }>>();

  /** Serve discovery for these kinds (apiVersion, kind, namespaced) even with no object of theirs. */
  serveKinds(kinds: { apiVersion: string; kind: string; namespaced?: boolean }[]): void {
    for (const k of kinds) this.kindInfo(k.apiVersion, k.kind, k.namespaced ?? true);
  }

  private kindInfo(apiVersion: string, kind: string, namespaced: boolean): { plural: string; namespaced: boolean } {
    const gv = this.kinds.get(apiVersion) ?? new Map<string, { plural: string; namespaced: boolean }>();
    this.kinds.set(apiVersion, gv);
    const info = gv.get(kind) ?? { plural: `${kind.toLowerCase()}s`, namespaced };
    gv.set(kind, info);
    return info;
  }

  /** Add or replace a read-only object of any kind (a ConfigMap of this namespace goes to the writable store). */
  seed(obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }, namespaced = obj.metadata.namespace !== undefined): void {
    if (obj.apiVersion === 'v1' && obj.kind === 'ConfigMap' && obj.metadata.namespace === this.namespace) {
      this.put(obj.metadata.name, (obj as unknown as ConfigMapObj).data ?? {}, (obj as unknown as ConfigMapObj).metadata.labels);
      return;
    }
    const info = this.kindInfo(obj.apiVersion, obj.kind, namespaced);
    const stored = JSON.parse(JSON.stringify({ ...obj, metadata: { resourceVersion: String(++this.rv), ...obj.metadata } }));
    this.extra.set(this.pathOf(obj.apiVersion, info.plural, obj.metadata.name, obj.metadata.namespace), stored);
  }

  /** Forget a seeded object (a deletion; no watch event: seeded objects are read-only). */
  unseed(apiVersion: string, kind: string, name: string, namespace?: string): void {
    const info = this.kinds.get(apiVersion)?.get(kind);
    if (info) this.extra.delete(this.pathOf(apiVersion, info.plural, name, namespace));
  }

  private pathOf(apiVersion: string, plural: string, name: string, namespace?: string): string {
    return `/${apiVersion.includes('/') ? 'apis' : 'api'}/${apiVersion}${namespace ? `/namespaces/${namespace}` : ''}/${plural}/${name}`.toLowerCase();
  }

  /** Discovery and seeded objects; undefined: not one of these paths. */
  private serveExtra(pathname: string): { code: number; body: unknown } | undefined {
    const gv = /^\/api\/v1$/.test(pathname) ? 'v1' : /^\/apis\/([^/]+\/[^/]+)$/.exec(pathname)?.[1];
    if (gv !== undefined) {
      const kinds = new Map(this.kinds.get(gv) ?? []);
      if (gv === 'v1') kinds.set('ConfigMap', { plural: 'configmaps', namespaced: true });
      if (kinds.size === 0) return { code: 404, body: status(404, 'NotFound', 'the server could not find the requested resource') };
      return {
        code: 200,
        body: { kind: 'APIResourceList', apiVersion: 'v1', groupVersion: gv, resources: [...kinds].map(([kind, i]) => ({ name: i.plural, singularName: kind.toLowerCase(), namespaced: i.namespaced, kind, verbs: ['get'] })) },
      };
    }
    const key = pathname.toLowerCase();
    if (this.extra.has(key)) { this.counts.get++; return { code: 200, body: this.extra.get(key) }; }
    for (const [apiVersion, kinds] of this.kinds) {
      for (const [kind, i] of kinds) {
        const prefix = `/${apiVersion.includes('/') ? 'apis' : 'api'}/${apiVersion}/`.toLowerCase();
        if (key.startsWith(prefix) && key.split('/').slice(-2, -1)[0] === i.plural && !(kind === 'ConfigMap' && key.includes(`/namespaces/${this.namespace}/`))) {
          this.counts.get++;
          return { code: 404, body: status(404, 'NotFound', `${i.plural} "${key.split('/').pop()}" not found`) };
        }
      }
    }
    return undefined;
  }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET') {
      const extra = this.serveExtra(url.pathname);
      if (extra) { res.writeHead(extra.code, { 'content-type': 'application/json' }).end(JSON.stringify(extra.body)); return; }
    }
    const base = `/api/v1/namespaces/${this.namespace}/configmaps`;
    const send = (code: number, body: unknown): void => { res.writeHead(code, { 'content-type': 'application/json' }).end(JSON.stringify(body)); };
    const field = url.searchParams.get('fieldSelector');
    const name = field?.startsWith('metadata.name=') ? field.slice('metadata.name='.length) : undefined;
    if (req.method === 'GET' && url.pathname === base) {
      if (url.searchParams.get('watch') === 'true') return this.watch(url, name, res);
      this.counts.list++;
      const items = [...this.objects.values()].filter((o) => !name || o.metadata.name === name);
      return send(200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) }, items });
    }
    const m = url.pathname.startsWith(`${base}/`) ? url.pathname.slice(base.length + 1) : undefined;
    if (!m || m.includes('/')) return send(404, status(404, 'NotFound', `the server could not find the requested resource`));
    if (req.method === 'GET') {
      this.counts.get++;
      const o = this.objects.get(m);
      return o ? send(200, o) : send(404, status(404, 'NotFound', `configmaps "${m}" not found`));
    }
    if (req.method === 'PUT') return this.update(req, m, send);
    return send(405, status(405, 'MethodNotAllowed', `${req.method} is not supported by this test server`));
  }

  private update(req: http.IncomingMessage, name: string, send: (c: number, b: unknown) => void): void {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => { body += c; });
    req.on('end', () => {
      this.counts.put++;
      let obj: ConfigMapObj;
      try { obj = JSON.parse(body); } catch { return send(400, status(400, 'BadRequest', 'body is not JSON')); }
      const cur = this.objects.get(name);
      if (!cur) return send(404, status(404, 'NotFound', `configmaps "${name}" not found`));
      if (obj.metadata?.name !== name) return send(400, status(400, 'BadRequest', 'the name of the object does not match the name on the URL'));
      const want = obj.metadata?.resourceVersion;
      if (want && want !== cur.metadata.resourceVersion) {
        this.counts.conflicts++;
        return send(409, status(409, 'Conflict', `Operation cannot be fulfilled on configmaps "${name}": the object has been modified; please apply your changes to the latest version and try again`));
      }
      const out = this.put(name, obj.data ?? {}, obj.metadata?.labels ?? cur.metadata.labels);
      send(200, out);
      this.onUpdate?.(name);
    });
  }

  private watch(url: URL, name: string | undefined, res: http.ServerResponse): void {
    this.counts.watch++;
    const from = Number(url.searchParams.get('resourceVersion') ?? '0');
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    if (from !== 0 && from < this.oldestRv) {
      this.counts.gone++;
      res.end(`${JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from} (${this.oldestRv})`) })}\n`);
      return;
    }
    for (const e of this.history) if (e.rv > from && (!name || e.object.metadata.name === name)) res.write(`${JSON.stringify({ type: e.type, object: e.object })}\n`);
    const w = { name, res };
    this.watchers.add(w);
    res.on('close', () => this.watchers.delete(w));
  }
}
