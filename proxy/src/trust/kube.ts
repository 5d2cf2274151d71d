/**
 * The four ConfigMap calls the trust container makes: GET and PUT (with resourceVersion: 409 on a stale
 * one) of `kubevirt-external-ca`, LIST + WATCH of `kubevirt-ca` narrowed by
 * `fieldSelector=metadata.name=...` (RBAC resourceNames allow list/watch only that way).
 *
 * `@kubernetes/client-node` supplies only the credentials and TLS (KubeConfig: in-cluster token re-read on
 * every call, CA, client certificates); the HTTP is ours so that every call is bounded and every fault is
 * visible to the caller:
 *   - every GET/PUT/LIST has a deadline (`requestTimeoutMs`): an API server that accepts TCP and never
 *     answers costs at most that, then an ApiError with code 0;
 *   - the WATCH asks the server to end it after `watchTimeoutMs` (`timeoutSeconds`) and is cut by us
 *     `watchGraceMs` later if it has not ended (liveness: a stream from a server that went silent);
 *   - a WATCH line that is not JSON ends the watch with reason 'decode' (client-node's Watch drops such
 *     lines silently, losing the event it carried);
 *   - an HTTP error carries its status code and `Retry-After` (429, 503) in ms;
 *   - `abortAll()` cuts every call in flight (shutdown);
 *   - a call that ends early (its deadline, a stalled or stopped watch, shutdown) destroys its request, and
 *     with it its socket, whether or not the server has answered yet: each call opens its own connection
 *     (client-node gives every call a new agent without keep-alive), so a call cut before its answer once
 *     left that socket open for good against a server that accepts TCP and never answers (61 descriptors
 *     after 180 s against 20 before; proxy/src/test/trust-socket-timeouts.test.ts).
 * The PUT sends the whole object read by GET (labels, annotations, ownerReferences, binaryData, every
 * data key), so a write changes only what the caller changed in it.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import * as k8s from '@kubernetes/client-node';

/** A ConfigMap as the API server returns it; unknown fields are carried through untouched. */
export interface ConfigMapObject {
  apiVersion?: string;
  kind?: string;
  metadata: {
    name: string; namespace?: string; resourceVersion?: string; uid?: string;
    labels?: Record<string, string>; annotations?: Record<string, string>; ownerReferences?: unknown[];
    [k: string]: unknown;
  };
  data?: Record<string, string>;
  binaryData?: Record<string, string>;
  [k: string]: unknown;
}

export type WatchEvent = { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK'; object: ConfigMapObject }
  | { type: 'ERROR'; object: { code?: number; message?: string } };

/** How a watch ended: the server closed it ('closed'), we cut a silent one ('stalled'), a line was not JSON ('decode'), or the transport failed ('error'). */
export type WatchEnd = { reason: 'closed' | 'stalled' | 'decode' | 'error' | 'aborted'; err?: unknown };

/** An API call that failed: `code` is the HTTP status, 0 for no answer (timeout, connection refused or cut). */
export class ApiError extends Error {
  constructor(readonly code: number, message: string, readonly retryAfterMs?: number) { super(message); }
}

export interface ConfigMapApi {
  get(name: string): Promise<ConfigMapObject | undefined>;
  /** PUT the whole object at its metadata.resourceVersion; 'conflict' on 409, 'gone' on 404. */
  replace(obj: ConfigMapObject): Promise<'ok' | 'conflict' | 'gone'>;
  /** LIST narrowed to one name: the object (or undefined) and the list's resourceVersion to watch from. */
  list(name: string): Promise<{ item?: ConfigMapObject; resourceVersion: string }>;
  /** WATCH from `resourceVersion`; `done` exactly once when the stream ends. Returns a stop function. */
  watch(name: string, resourceVersion: string, onEvent: (e: WatchEvent) => void, done: (end: WatchEnd) => void): () => void;
  /** Cut every call in flight (they reject with ApiError code 0 / end with 'aborted'). */
  abortAll(): void;
}

export interface KubeClientOptions {
  /** Deadline of one GET, PUT or LIST, from sending to the last byte of the answer. [5000] */
  readonly requestTimeoutMs?: number;
  /** The server is asked to end each WATCH after this long (`timeoutSeconds`). [8000] */
  readonly watchTimeoutMs?: number;
  /** A WATCH still open this long after `watchTimeoutMs` is cut as stalled. [2000] */
  readonly watchGraceMs?: number;
}

/** Retry-After as seconds (the API server's form) or an HTTP date, in ms; undefined if absent or unreadable. */
export function retryAfterMs(v: string | string[] | undefined, now = Date.now()): number | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  if (!s) return undefined;
  if (/^\d+$/.test(s.trim())) return Number(s.trim()) * 1000;
  const t = Date.parse(s);
  return Number.isNaN(t) ? undefined : Math.max(0, t - now);
}

interface Transport {
  /** One request; `signal` aborted at any time (before the request exists, before or after its answer) destroys it and its socket. */
  open(method: string, path: string, body?: string, signal?: AbortSignal): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }>;
  call(method: string, path: string, body?: string): Promise<Answer>;
  abortAll(): void;
}
interface Answer { code: number; json: unknown; retryAfter?: number }

const fail = (method: string, path: string, r: Answer): ApiError =>
  new ApiError(r.code, `${method} ${path}: HTTP ${r.code} ${(r.json as { message?: string } | undefined)?.message ?? ''}`.trim(), r.retryAfter);

/** HTTP(S) with the kubeconfig's credentials; every call() bounded by requestTimeoutMs. */
function transport(kc: k8s.KubeConfig, requestTimeoutMs: number): Transport {
  const inFlight = new Set<http.ClientRequest>();
  let shut = false;

  /** One request with the kubeconfig's credentials; the response is handed over once headers arrive. */
  async function open(method: string, path: string, body?: string, signal?: AbortSignal): Promise<{ req: http.ClientRequest; res: http.IncomingMessage }> {
    const cluster = kc.getCurrentCluster();
    if (!cluster) throw new ApiError(0, 'kubeconfig has no current cluster');
    const opts: https.RequestOptions = {};
    await kc.applyToHTTPSOptions(opts);
    if (shut) throw new ApiError(0, 'aborted (shutting down)');
    if (signal?.aborted) throw new ApiError(0, `${method} ${path}: cut before it was sent`);
    const url = new URL(cluster.server.replace(/\/$/, '') + path);
    const headers: Record<string, string> = { accept: 'application/json' };
    for (const [k, v] of Object.entries(opts.headers ?? {})) if (v !== undefined) headers[k.toLowerCase()] = String(v);
    if (opts.auth) headers.authorization = `Basic ${Buffer.from(opts.auth).toString('base64')}`;
    if (body !== undefined) { headers['content-type'] = 'application/json'; headers['content-length'] = String(Buffer.byteLength(body)); }
    const mod = url.protocol === 'https:' ? https : http;
    return new Promise((resolve, reject) => {
      const req = mod.request(url, { method, headers, agent: opts.agent, signal }, (res) => resolve({ req, res }));
      inFlight.add(req);
      req.on('close', () => inFlight.delete(req));
      req.on('error', (e) => reject(e instanceof ApiError ? e : new ApiError(0, `${method} ${path}: ${e.message}`)));
      req.end(body);
    });
  }

  /** A bounded call: the whole answer within requestTimeoutMs, parsed as JSON. */
  async function call(method: string, path: string, body?: string): Promise<Answer> {
    let timer: NodeJS.Timeout | undefined;
    // aborting destroys the request wherever it is: not yet sent, waiting for headers, or reading the body
    const cut = new AbortController();
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        cut.abort();
        reject(new ApiError(0, `${method} ${path}: no answer within ${requestTimeoutMs} ms`));
      }, requestTimeoutMs);
      timer.unref();
    });
    const work = (async () => {
      const r = await open(method, path, body, cut.signal);
      const chunks: Buffer[] = [];
      await new Promise<void>((resolve, reject) => {
        r.res.on('data', (c: Buffer) => chunks.push(c));
        r.res.on('end', () => resolve());
        r.res.on('error', (e) => reject(new ApiError(0, `${method} ${path}: ${e.message}`)));
        r.res.on('aborted', () => reject(new ApiError(0, `${method} ${path}: answer cut`)));
      });
      const text = Buffer.concat(chunks).toString('utf8');
      let json: unknown;
      try { json = text ? JSON.parse(text) : undefined; } catch { json = undefined; }
      return { code: r.res.statusCode ?? 0, json, retryAfter: retryAfterMs(r.res.headers['retry-after']) };
    })();
    try { return await Promise.race([work, deadline]); } finally {
      clearTimeout(timer);
      work.catch(() => undefined);
    }
  }
  return {
    open, call,
    abortAll() {
      shut = true;
      for (const r of inFlight) r.destroy(new ApiError(0, 'aborted (shutting down)'));
      inFlight.clear();
    },
  };
}

/** One WATCH stream on `p` (timeoutSeconds already in it); see the header for how it ends. */
function watchStream(t: Transport, p: string, o: { requestTimeoutMs: number; watchTimeoutMs: number; watchGraceMs: number },
  onEvent: (e: WatchEvent) => void, done: (end: WatchEnd) => void): () => void {
  const { requestTimeoutMs, watchTimeoutMs, watchGraceMs } = o;
  const open = t.open;
  let ended = false;
  let aborted = false;
  // the stream's request and socket go with its end, also when the server never sent the headers
  const cut = new AbortController();
  const end = (e: WatchEnd) => {
    if (ended) return;
    ended = true;
    clearTimeout(liveness);
    clearTimeout(headers);
    cut.abort();
    done(e);
  };
  // no headers within requestTimeoutMs, or no end within timeoutSeconds + grace: the server is not answering
  const headers = setTimeout(() => end({ reason: 'stalled', err: new ApiError(0, `WATCH ${p}: no answer within ${requestTimeoutMs} ms`) }), requestTimeoutMs);
  const liveness = setTimeout(() => end({ reason: 'stalled', err: new ApiError(0, `WATCH ${p}: still open ${watchGraceMs} ms after its timeoutSeconds`) }), watchTimeoutMs + watchGraceMs);
  headers.unref();
  liveness.unref();
  open('GET', p, undefined, cut.signal).then(({ req: rq, res }) => {
    if (ended) { rq.destroy(); return; }
    clearTimeout(headers);
    if (res.statusCode !== 200) {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        let json: unknown;
        try { json = JSON.parse(Buffer.concat(chunks).toString('utf8')); } catch { json = undefined; }
        end({ reason: 'error', err: fail('WATCH', p, { code: res.statusCode ?? 0, json, retryAfter: retryAfterMs(res.headers['retry-after']) }) });
      });
      res.on('error', (err) => end({ reason: 'error', err }));
      return;
    }
    res.setEncoding('utf8');
    let buf = '';
    res.on('data', (chunk: string) => {
      buf += chunk;
      let i: number;
      while (!ended && (i = buf.indexOf('\n')) >= 0) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        if (!line) continue;
        let ev: WatchEvent;
        try { ev = JSON.parse(line) as WatchEvent; } catch {
          end({ reason: 'decode', err: new Error(`WATCH ${p}: a line is not JSON (${line.length} bytes: ${line.slice(0, 60)}...)`) });
          return;
        }
        onEvent(ev);
      }
    });
    res.on('end', () => end(buf.trim() ? { reason: 'decode', err: new Error(`WATCH ${p}: stream ended inside an event`) } : { reason: 'closed' }));
    res.on('aborted', () => end({ reason: aborted ? 'aborted' : 'error', err: new ApiError(0, `WATCH ${p}: stream cut`) }));
    res.on('error', (err) => end({ reason: aborted ? 'aborted' : 'error', err }));
  }, (err) => end({ reason: aborted ? 'aborted' : 'error', err }));
  return () => { aborted = true; end({ reason: 'aborted' }); };
}

export function kubeConfigMaps(kc: k8s.KubeConfig, namespace: string, o: KubeClientOptions = {}): ConfigMapApi {
  const timeouts = { requestTimeoutMs: o.requestTimeoutMs ?? 5000, watchTimeoutMs: o.watchTimeoutMs ?? 8000, watchGraceMs: o.watchGraceMs ?? 2000 };
  const base = `/api/v1/namespaces/${encodeURIComponent(namespace)}/configmaps`;
  const t = transport(kc, timeouts.requestTimeoutMs);
  const call = t.call;
  return {
    async get(name) {
      const p = `${base}/${encodeURIComponent(name)}`;
      const r = await call('GET', p);
      if (r.code === 404) return undefined;
      if (r.code !== 200) throw fail('GET', p, r);
      return r.json as ConfigMapObject;
    },
    async replace(obj) {
      const p = `${base}/${encodeURIComponent(obj.metadata.name)}`;
      const r = await call('PUT', p, JSON.stringify({ ...obj, apiVersion: 'v1', kind: 'ConfigMap' }));
      if (r.code === 200 || r.code === 201) return 'ok';
      if (r.code === 409) return 'conflict';
      if (r.code === 404) return 'gone';
      throw fail('PUT', p, r);
    },
    async list(name) {
      const p = `${base}?fieldSelector=${encodeURIComponent(`metadata.name=${name}`)}`;
      const r = await call('GET', p);
      if (r.code !== 200) throw fail('LIST', p, r);
      const l = r.json as { metadata?: { resourceVersion?: string }; items?: ConfigMapObject[] };
      return { item: l.items?.find((x) => x.metadata?.name === name), resourceVersion: l.metadata?.resourceVersion ?? '' };
    },
    watch(name, resourceVersion, onEvent, done) {
      const q = new URLSearchParams({
        watch: 'true', fieldSelector: `metadata.name=${name}`, resourceVersion, allowWatchBookmarks: 'true',
        timeoutSeconds: String(Math.max(1, Math.round(timeouts.watchTimeoutMs / 1000))),
      });
      return watchStream(t, `${base}?${q}`, timeouts, onEvent, done);
    },
    abortAll: () => t.abortAll(),
  };
}
