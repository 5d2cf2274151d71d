/**
 * Test support: a small Kubernetes API server for ConfigMaps in one namespace, faithful to the REST
 * contract for exactly the calls the trust container (and virt-operator's informer) make:
 *   GET    /api/v1/namespaces/NS/configmaps/NAME                      200 object | 404 Status
 *   GET    /api/v1/namespaces/NS/configmaps?fieldSelector=metadata.name=NAME&labelSelector=...
 *          ConfigMapList + list resourceVersion (both selectors honoured; see matchesLabels)
 *   GET    ...configmaps?watch=true&fieldSelector=...&labelSelector=...&resourceVersion=RV[&timeoutSeconds=N]
 *          chunked JSON events newer than RV, filtered as kube-apiserver filters a watch: an object that
 *          starts matching the selectors arrives as ADDED, one that stops matching as DELETED; the server
 *          ends the stream after timeoutSeconds. An RV older than the retained history gets one ERROR event
 *          (Status 410 Expired) and the stream ends
 *   PUT    /api/v1/namespaces/NS/configmaps/NAME   replaces the whole object: labels, annotations,
 *          ownerReferences, data and binaryData are what the body says (absent = gone); 409 Conflict when
 *          metadata.resourceVersion is stale or metadata.uid names another object; 404 when it is gone.
 *          A PUT that changes nothing keeps the resourceVersion and sends no event.
 * One global resourceVersion counter, as etcd's revision; each created object a new uid. What it does
 * NOT do: authentication, RBAC, other kinds or namespaces, set-based selectors (`in`, `notin`: 400),
 * PATCH/apply, POST/DELETE over HTTP (create()/delete() act as a controller or kubectl would), bookmarks,
 * protobuf, table output (it records each Authorization header and checks none). It listens on loopback
 * TCP or on a unix socket (`listenPath`), plain HTTP or HTTPS (`tls`).
 * `compact()` drops history (watches from before get 410), `expireWatches()` ends live watches with 410; `restart()`
 * closes the listener and every watch and listens again on the same port.
 * Faults (`fault`, `blackhole`, `hold`, `corruptNextEvent()`): an HTTP status (with Retry-After) for chosen calls;
 * an API server that accepts TCP and never answers (requests held forever, live watches silent forever,
 * also after the blackhole ends), or holds only the requests a pattern matches; a watch event cut in half.
 *
 * Which faults only this server produces: a real kube-apiserver cannot be made to answer a status of our
 * choosing on chosen calls (500 on every PUT while reads work; 429 with Retry-After on LIST and PUT: its own
 * 429s come from priority and fairness under load, not on demand), to cut a watch event in half, or to accept
 * TCP and hold every request and watch unanswered for as long as a test likes (a real one is killed, restarted
 * or cut off; proxy/src/test/trust-socket-timeouts.test.ts holds the trust container against a plain net.Server
 * for that and counts its descriptors). Those stay here (proxy/src/test/trust-api-faults.test.ts), as do fast
 * versions of the rest. The faults a real server does produce run against real kube-apiservers in
 * test/trust-real-api.real.test.ts, the trust container under the Role we emit: the server killed and restarted
 * (and, while its RBAC informers sync, 403 to calls the Role allows, which this server never answers), a watch
 * resumed from a resourceVersion etcd compacted away (410), a competing writer (409), packets dropped in a
 * network namespace, and every refusal of the real RBAC authorizer (this server checks no authorization).
 *
 * For `migration-mesh status` (issue 28) it also serves, read-only, objects of any kind seeded with
 * `seed()` and discovery for their kinds (fake-kube-seeded.ts says which calls). Label selectors:
 * label-selector.ts.
 */
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as https from 'node:https';
import * as net from 'node:net';
import { matchesLabels, parseLabelSelector, type Requirement } from './label-selector';
import { SeededObjects, kubeStatus as status } from './fake-kube-seeded';

export interface ConfigMapObj {
  apiVersion: 'v1'; kind: 'ConfigMap';
  metadata: {
    name: string; namespace: string; resourceVersion: string; uid: string; labels?: Record<string, string>;
    annotations?: Record<string, string>; ownerReferences?: unknown[]; [k: string]: unknown;
  };
  data: Record<string, string>;
  binaryData?: Record<string, string>;
}

/** A call of the trust container, as the fault hook sees it. */
export type ApiOp = 'get' | 'list' | 'watch' | 'put';
/** Answer with this status (and Retry-After), or never answer. */
export type Fault = { status: number; retryAfter?: string } | 'hang';

interface Event { rv: number; type: 'ADDED' | 'MODIFIED' | 'DELETED'; object: ConfigMapObj; prev?: ConfigMapObj }

/** JSON with object keys sorted: equal for equal content whatever the key order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object') return `{${Object.keys(v).filter((k) => (v as Record<string, unknown>)[k] !== undefined).sort().map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`).join(',')}}`;
  return JSON.stringify(v);
}

interface Watcher { name?: string; labels?: Requirement[]; res: http.ServerResponse; dead: boolean; timer?: NodeJS.Timeout }

export class FakeKubeApi {
  private rv = 1;
  private uids = 0;
  private readonly objects = new Map<string, ConfigMapObj>();
  private history: Event[] = [];
  private oldestRv = 1;
  private readonly watchers = new Set<Watcher>();
  private readonly held = new Set<http.ServerResponse>();
  private server?: http.Server;
  private readonly sockets = new Set<net.Socket>();
  private corrupt = false;
  port = 0;
  /** Called after every successful write through the API (PUT) with the object before and after. */
  onUpdate?: (name: string, prev: ConfigMapObj, next: ConfigMapObj) => void;
  readonly counts = { get: 0, list: 0, watch: 0, put: 0, conflicts: 0, gone: 0, faults: 0, held: 0 };
  /** Every request, in order: the call, when it arrived (Date.now()) and the status answered (0: held). */
  readonly requests: { op: ApiOp; at: number; code: number }[] = [];
  /** Decide a fault for a call (undefined: serve it normally). */
  fault?: (op: ApiOp, name: string | undefined) => Fault | undefined;
  /** While true the server accepts connections and never answers: new requests are held, live watches go silent for good. */
  private hole = false;

  constructor(readonly namespace: string) {}

  /** Unix socket path when listening by `listenPath` (a test relays TCP to it, e.g. from a network namespace). */
  path?: string;

  /** Every `Authorization` header value received (the trust container's bearer token). */
  readonly authorizations = new Set<string>();
  /** Serve HTTPS with this key and certificate (as kube-apiserver does; client-node's in-cluster config needs it). */
  tls?: { key: string | Buffer; cert: string | Buffer };

  /**
   * Requests whose `METHOD /path?query` matches are held unanswered (the rest are served): an API server that
   * answers some reads and stalls on one, which `blackhole` (everything held) cannot show.
   */
  hold?: RegExp;

  get blackhole(): boolean { return this.hole; }
  set blackhole(on: boolean) {
    this.hole = on;
    if (on) for (const w of this.watchers) w.dead = true;
  }

  /** Watches open and answering now. */
  get liveWatches(): number { return [...this.watchers].filter((w) => !w.dead).length; }

  /** The next event sent on every live watch is cut in half (a malformed JSON line); later events are whole. */
  corruptNextEvent(): void { this.corrupt = true; }

  /** A subclass serves more calls here (fake-kube-cluster.ts: lists, pods, the pod proxy); true when it answered. */
  protected serveMore(_req: http.IncomingMessage, _res: http.ServerResponse): boolean { return false; }

  private serve(): http.Server {
    const handler = (req: http.IncomingMessage, res: http.ServerResponse) => {
      if (req.headers.authorization) this.authorizations.add(req.headers.authorization);
      if (this.hold?.test(`${req.method} ${req.url}`)) { this.counts.held++; return; }
      if (!this.hole && this.serveMore(req, res)) return;
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
    for (const w of this.watchers) { clearTimeout(w.timer); w.res.destroy(); }
    this.watchers.clear();
    for (const r of this.held) r.destroy();
    this.held.clear();
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
      if (w.dead) continue;
      this.counts.gone++;
      clearTimeout(w.timer);
      w.res.end(`${JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', 'too old resource version') })}\n`);
    }
    this.watchers.clear();
  }

  get(name: string): ConfigMapObj | undefined {
    const o = this.objects.get(name);
    return o && JSON.parse(JSON.stringify(o));
  }

  /** Write data (and labels if given; else the object's own) as a controller would, outside HTTP; creates the object if absent. */
  put(name: string, data: Record<string, string>, labels?: Record<string, string>): ConfigMapObj {
    const base = this.objects.get(name) ?? this.fresh(name);
    return this.store({ ...base, metadata: { ...base.metadata, labels: labels ?? base.metadata.labels }, data: { ...data } });
  }

  /** Replace the whole object outside HTTP (as an unconditional Update): metadata.name/namespace/uid are kept, the rest is `obj`'s. */
  replaceObject(name: string, obj: Omit<ConfigMapObj, 'apiVersion' | 'kind'>): ConfigMapObj {
    const prev = this.objects.get(name);
    if (!prev) throw new Error(`${name} does not exist`);
    return this.store({ apiVersion: 'v1', kind: 'ConfigMap', ...obj, metadata: { ...obj.metadata, name, namespace: this.namespace, uid: prev.metadata.uid } } as ConfigMapObj);
  }

  /** Create an object (new uid) outside HTTP; false when it already exists (AlreadyExists). */
  create(name: string, data: Record<string, string>, labels?: Record<string, string>): boolean {
    if (this.objects.has(name)) return false;
    const base = this.fresh(name);
    this.store({ ...base, metadata: { ...base.metadata, labels }, data: { ...data } });
    return true;
  }

  /** Delete an object outside HTTP (kubectl delete); watchers get DELETED. */
  delete(name: string): boolean {
    const prev = this.objects.get(name);
    if (!prev) return false;
    this.objects.delete(name);
    this.emit({ rv: ++this.rv, type: 'DELETED', object: { ...prev, metadata: { ...prev.metadata, resourceVersion: String(this.rv) } }, prev });
    return true;
  }

  private fresh(name: string): ConfigMapObj {
    return { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: this.namespace, resourceVersion: '', uid: `uid-${name}-${++this.uids}` }, data: {} };
  }

  /** Store `obj` as the new state of its name: a new resourceVersion and an event, unless nothing changed. */
  private store(obj: ConfigMapObj): ConfigMapObj {
    const name = obj.metadata.name;
    const prev = this.objects.get(name);
    const strip = (o: ConfigMapObj) => canonical({ ...o, metadata: { ...o.metadata, resourceVersion: '' } });
    for (const k of ['labels', 'annotations', 'ownerReferences'] as const) if (obj.metadata[k] === undefined) delete obj.metadata[k];
    if (obj.binaryData === undefined) delete obj.binaryData;
    if (prev && strip(prev) === strip({ ...obj, metadata: { ...obj.metadata, uid: prev.metadata.uid } })) return JSON.parse(JSON.stringify(prev));
    const uid = prev?.metadata.uid ?? obj.metadata.uid;
    const next: ConfigMapObj = JSON.parse(JSON.stringify({ ...obj, metadata: { ...obj.metadata, resourceVersion: String(++this.rv), uid } }));
    this.objects.set(name, next);
    this.emit({ rv: this.rv, type: prev ? 'MODIFIED' : 'ADDED', object: next, prev });
    return JSON.parse(JSON.stringify(next));
  }

  /** The event as a watcher with these selectors sees it (kube-apiserver's watch filter), or undefined. */
  private filtered(e: Event, w: { name?: string; labels?: Requirement[] }): { type: string; object: ConfigMapObj } | undefined {
    if (w.name && e.object.metadata.name !== w.name) return undefined;
    if (!w.labels) return { type: e.type, object: e.object };
    const now = e.type !== 'DELETED' && matchesLabels(e.object.metadata.labels, w.labels);
    const before = !!e.prev && matchesLabels(e.prev.metadata.labels, w.labels);
    if (e.type === 'DELETED') return before ? { type: 'DELETED', object: e.object } : undefined;
    if (now && before) return { type: 'MODIFIED', object: e.object };
    if (now) return { type: 'ADDED', object: e.object };
    if (before) return { type: 'DELETED', object: e.object };
    return undefined;
  }

  private emit(e: Event): void {
    this.history.push(e);
    const corrupt = this.corrupt && [...this.watchers].some((w) => !w.dead && this.filtered(e, w));
    if (corrupt) this.corrupt = false;
    for (const w of this.watchers) {
      if (w.dead) continue;
      const f = this.filtered(e, w);
      if (!f) continue;
      const line = JSON.stringify(f);
      w.res.write(corrupt ? `${line.slice(0, Math.floor(line.length / 2))}\n` : `${line}\n`);
    }
  }

  /** Read-only objects of any kind and their discovery (fake-kube-seeded.ts); seeding takes a resourceVersion from this server's counter. */
  private readonly seeded = new SeededObjects(() => ++this.rv, () => { this.counts.get++; });
  /** Kinds served by discovery, per apiVersion. */
  protected get kinds(): Map<string, Map<string, { plural: string; namespaced: boolean }>> { return this.seeded.kinds; }

  /** Serve discovery for these kinds (apiVersion, kind, namespaced) even with no object of theirs. */
  serveKinds(kinds: { apiVersion: string; kind: string; namespaced?: boolean }[]): void { this.seeded.serveKinds(kinds); }

  /** Add or replace a read-only object of any kind (a ConfigMap of this namespace goes to the writable store). */
  seed(obj: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }, namespaced = obj.metadata.namespace !== undefined): void {
    if (obj.apiVersion === 'v1' && obj.kind === 'ConfigMap' && obj.metadata.namespace === this.namespace) {
      this.put(obj.metadata.name, (obj as unknown as ConfigMapObj).data ?? {}, (obj as unknown as ConfigMapObj).metadata.labels);
      return;
    }
    this.seeded.seed(obj, namespaced);
  }

  /** Forget a seeded object (a deletion; no watch event: seeded objects are read-only). */
  unseed(apiVersion: string, kind: string, name: string, namespace?: string): void { this.seeded.unseed(apiVersion, kind, name, namespace); }

  private handle(req: http.IncomingMessage, res: http.ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://x');
    if (req.method === 'GET') {
      const extra = this.seeded.serve(url.pathname, this.namespace);
      if (extra) { res.writeHead(extra.code, { 'content-type': 'application/json' }).end(JSON.stringify(extra.body)); return; }
    }
    const base = `/api/v1/namespaces/${this.namespace}/configmaps`;
    const send = (code: number, body: unknown, headers: Record<string, string> = {}): void => {
      this.requests.push({ op, at: Date.now(), code });
      res.writeHead(code, { 'content-type': 'application/json', ...headers }).end(JSON.stringify(body));
    };
    const field = url.searchParams.get('fieldSelector');
    const name = field?.startsWith('metadata.name=') ? field.slice('metadata.name='.length) : undefined;
    const one = url.pathname.startsWith(`${base}/`) ? decodeURIComponent(url.pathname.slice(base.length + 1)) : undefined;
    const op: ApiOp = req.method === 'PUT' ? 'put' : url.pathname === base ? (url.searchParams.get('watch') === 'true' ? 'watch' : 'list') : 'get';
    if (this.hole) {
      this.counts.held++;
      this.requests.push({ op, at: Date.now(), code: 0 });
      this.held.add(res);
      res.on('close', () => this.held.delete(res));
      return;
    }
    const f = this.fault?.(op, one ?? name);
    if (f === 'hang') {
      this.counts.held++;
      this.requests.push({ op, at: Date.now(), code: 0 });
      this.held.add(res);
      res.on('close', () => this.held.delete(res));
      return;
    }
    if (f) {
      this.counts.faults++;
      req.resume();
      return send(f.status, status(f.status, f.status === 429 ? 'TooManyRequests' : 'InternalError', `injected fault ${f.status}`), f.retryAfter !== undefined ? { 'retry-after': f.retryAfter } : {});
    }
    const selText = url.searchParams.get('labelSelector');
    const labels = selText ? parseLabelSelector(selText) : undefined;
    if (selText && !labels) return send(400, status(400, 'BadRequest', `unable to parse requirement (this test server knows equality-based selectors only): ${selText}`));
    if (req.method === 'GET' && url.pathname === base) {
      if (op === 'watch') return this.watch(url, name, labels, res);
      this.counts.list++;
      const items = [...this.objects.values()].filter((o) => (!name || o.metadata.name === name) && (!labels || matchesLabels(o.metadata.labels, labels)));
      return send(200, { kind: 'ConfigMapList', apiVersion: 'v1', metadata: { resourceVersion: String(this.rv) }, items });
    }
    if (!one || one.includes('/')) return send(404, status(404, 'NotFound', `the server could not find the requested resource`));
    if (req.method === 'GET') {
      this.counts.get++;
      const o = this.objects.get(one);
      return o ? send(200, o) : send(404, status(404, 'NotFound', `configmaps "${one}" not found`));
    }
    if (req.method === 'PUT') return this.update(req, one, send);
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
      const conflict = (why: string) => { this.counts.conflicts++; return send(409, status(409, 'Conflict', `Operation cannot be fulfilled on configmaps "${name}": ${why}`)); };
      if (want && want !== cur.metadata.resourceVersion) return conflict('the object has been modified; please apply your changes to the latest version and try again');
      if (obj.metadata.uid && obj.metadata.uid !== cur.metadata.uid) return conflict(`Precondition failed: UID in precondition: ${obj.metadata.uid}, UID in object meta: ${cur.metadata.uid}`);
      const { resourceVersion: _rv, uid: _uid, ...meta } = obj.metadata;
      void _rv; void _uid;
      const out = this.store({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { ...meta, name, namespace: this.namespace, resourceVersion: '', uid: cur.metadata.uid }, data: { ...(obj.data ?? {}) }, binaryData: obj.binaryData });
      send(200, out);
      this.onUpdate?.(name, cur, out);
    });
  }

  private watch(url: URL, name: string | undefined, labels: Requirement[] | undefined, res: http.ServerResponse): void {
    this.counts.watch++;
    this.requests.push({ op: 'watch', at: Date.now(), code: 200 });
    const from = Number(url.searchParams.get('resourceVersion') ?? '0');
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    res.flushHeaders();
    if (from !== 0 && from < this.oldestRv) {
      this.counts.gone++;
      res.end(`${JSON.stringify({ type: 'ERROR', object: status(410, 'Expired', `too old resource version: ${from} (${this.oldestRv})`) })}\n`);
      return;
    }
    const w: Watcher = { name, labels, res, dead: false };
    for (const e of this.history) {
      if (e.rv <= from) continue;
      const f = this.filtered(e, w);
      if (f) res.write(`${JSON.stringify(f)}\n`);
    }
    const t = Number(url.searchParams.get('timeoutSeconds') ?? '0');
    if (t > 0) { w.timer = setTimeout(() => { if (!w.dead) res.end(); }, t * 1000); w.timer.unref(); }
    this.watchers.add(w);
    res.on('close', () => { clearTimeout(w.timer); this.watchers.delete(w); });
  }
}
