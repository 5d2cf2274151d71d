/**
 * Watches on a real API server that record every write, kept the way client-go's reflector keeps an informer's
 * watch: a LIST for the resourceVersion, a watch from it, re-opened from the last event (or bookmark) when the
 * server ends it, and a new LIST when the server says the watch's resourceVersion has expired (an ERROR event,
 * 410). The GitOps suites order writes by these events, so a watch that silently stops is a test that waits for
 * nothing: here it either recovers or fails every read of `events` with the reason.
 *
 * Why the expiry is not hypothetical: the first request for a CRD's collection creates its watch cache. A LIST that
 * comes while that cache is still initializing is answered from etcd (KEP-4568, "resilient watch cache
 * initialization"), with etcd's current revision; the cache then lists at a later revision, because every API
 * server of the harness writes into one etcd. A watch from the LIST's revision is older than anything the cache
 * holds, and the server answers HTTP 200 and one ERROR event "too old resource version" (apiserver's
 * cacher.Watch, watchCache.getAllEventsSinceLocked). A CI run under load lost the Certificate's watch this way and
 * waited 60 s for a creation it had missed.
 *
 * Order across kinds comes from the resourceVersion: on an etcd-backed API server it is the etcd revision of the
 * write, one counter for every key of the etcd (Kubernetes calls it opaque; the suites use it only to order writes
 * of one server, which is what it is). Each collection is watched on its own stream, so arrival order is not
 * creation order across collections. test/watch.real.test.ts shows the recovery on a real API server.
 */
import * as fs from 'node:fs';
import type { ClientRequest } from 'node:http';
import * as https from 'node:https';
import { objectKey, objectPath, type KubeObject } from './real-apply';
import { countRetry } from './kube-retry';
import type { RealCluster } from './real-kube';

/** One write seen by a watch. */
export interface WatchEvent {
  readonly type: 'ADDED' | 'MODIFIED' | 'DELETED';
  /** objectKey of the object: `Kind/namespace/name` or `Kind/name`. */
  readonly key: string;
  readonly kind: string; readonly namespace?: string; readonly name: string;
  /** The etcd revision of the write (see the header). */
  readonly rv: number;
  /** When the watch reported it (Date.now()). */
  readonly at: number;
  readonly object: KubeObject & { status?: any; spec?: any };
  /**
   * Set when the event was not seen on a watch but inferred from the LIST that followed an expired watch: the
   * object changed (or appeared, or went) while no watch was open. `rv` is then its revision at that LIST.
   */
  readonly relisted?: true;
}

export interface ServerWatchOptions {
  /** Only objects with these labels (a label selector). [every object] */
  readonly labelSelector?: string;
  /** For tests of the watch itself: the resourceVersion the first watch of each collection starts from. [the LIST's] */
  readonly startAt?: string;
  /** For tests of the watch itself: `timeoutSeconds` of every watch request (the server ends the stream then). [the server's, 30-60 min] */
  readonly timeoutSeconds?: number;
  /** How long a collection may go without an open watch before the watch fails for good. [30000 ms] */
  readonly reopenWithinMs?: number;
  /** For tests of the watch itself: runs after a watch expired, before the LIST that replaces it (writes made here are what the LIST must infer). [nothing] */
  readonly beforeRelist?: (collection: string) => Promise<void>;
}

type Status = { code?: number; reason?: string; message?: string };
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class ServerWatch {
  private readonly seen: WatchEvent[] = [];
  /** One line per expired watch and the LIST that replaced it (what the server said, what the LIST added). */
  readonly relists: string[] = [];
  private failure?: Error;
  private stopped = false;
  private readonly open = new Set<ClientRequest>();
  /** Per collection: every object's key and last known resourceVersion, to tell what a relist missed. */
  private readonly known = new Map<string, Map<string, number>>();
  private readonly kinds = new Map<string, string>();

  private constructor(private readonly cluster: RealCluster, private readonly o: ServerWatchOptions) {}

  /** Watches the collections of `kinds` (one object of each kind, to find its path), across namespaces. Resolves once every watch is open. */
  static async start(cluster: RealCluster, kinds: readonly KubeObject[], o: ServerWatchOptions = {}): Promise<ServerWatch> {
    const w = new ServerWatch(cluster, o);
    for (const k of kinds) {
      const p = (await objectPath(cluster, k)).replace(/\/[^/]+$/, '');
      w.kinds.set(k.metadata.namespace ? p.replace(`/namespaces/${k.metadata.namespace}/`, '/') : p, k.kind);
    }
    await Promise.all([...w.kinds.keys()].map(async (c) => {
      const rv = await w.list(c, false);
      await w.watch(c, o.startAt ?? rv);
    }));
    w.check();
    return w;
  }

  /** Every write seen so far, in arrival order. Throws when a watch failed for good (why, and which collection). */
  get events(): readonly WatchEvent[] {
    this.check();
    return this.seen;
  }

  /** Throws when a watch failed for good. */
  check(): void {
    if (this.failure) throw this.failure;
  }

  /** The resourceVersion of each object's creation (its first ADDED event), by key. */
  created(): Map<string, number> {
    const out = new Map<string, number>();
    for (const e of this.events) if (e.type === 'ADDED' && !out.has(e.key)) out.set(e.key, e.rv);
    return out;
  }

  stop(): void {
    this.stopped = true;
    for (const r of this.open) r.destroy();
    this.open.clear();
  }

  private query(): string {
    return this.o.labelSelector ? `labelSelector=${encodeURIComponent(this.o.labelSelector)}` : '';
  }

  /**
   * LISTs `collection`; resolves its resourceVersion. With `infer`, records as `relisted` events what changed since
   * the last known state (after an expired watch). A collection whose watch cache is initializing answers 429 for a
   * moment: LISTs again as client-go's reflector does after a failed list (k8s.io/client-go v0.36.4
   * tools/cache/reflector.go: backoff from 800 ms, doubling, at most 30 s; its jitter left out), each retry counted
   * in the suite's retry summary, for at most reopenWithinMs (the reflector never gives up; a test must).
   */
  private async list(collection: string, infer: boolean): Promise<string> {
    const deadline = Date.now() + (this.o.reopenWithinMs ?? 30_000);
    let r = await this.cluster.request('GET', `${collection}?${this.query()}`);
    for (let n = 0; (r.status === 429 || r.status === 503) && Date.now() < deadline; n++) {
      const waitMs = Math.min(30_000, 800 * 2 ** n, Math.max(0, deadline - Date.now()));
      countRetry({ layer: 'client-go', what: `reflector LIST ${collection} on ${this.cluster.name}`, reason: `HTTP ${r.status}`, waitMs });
      await sleep(waitMs);
      r = await this.cluster.request('GET', `${collection}?${this.query()}`);
    }
    if (r.status !== 200) throw new Error(`LIST ${collection}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
    const items = (r.json.items as KubeObject[]).map((i) => ({ ...i, kind: i.kind ?? this.kinds.get(collection)! }));
    const before = this.known.get(collection) ?? new Map<string, number>();
    const now = new Map(items.map((i) => [objectKey(i), Number(i.metadata.resourceVersion)]));
    if (infer) {
      for (const i of items) {
        const rv = now.get(objectKey(i))!;
        if (before.get(objectKey(i)) !== rv) this.record(before.has(objectKey(i)) ? 'MODIFIED' : 'ADDED', i, rv, true);
      }
      for (const [key, rv] of before) {
        if (!now.has(key)) this.record('DELETED', this.lastObject(key), rv, true);
      }
    }
    this.known.set(collection, now);
    return String(r.json.metadata.resourceVersion);
  }

  /** The object as last seen under `key`. */
  private lastObject(key: string): KubeObject {
    for (let i = this.seen.length - 1; i >= 0; i--) if (this.seen[i].key === key) return this.seen[i].object;
    const [kind, ...rest] = key.split('/');
    return { apiVersion: '', kind, metadata: { name: rest.pop()!, ...(rest.length ? { namespace: rest[0] } : {}) } };
  }

  private record(type: WatchEvent['type'], object: KubeObject, rv: number, relisted: boolean): void {
    const m = object.metadata;
    const e: WatchEvent = { type, key: objectKey(object), kind: object.kind, namespace: m.namespace, name: m.name, rv, at: Date.now(), object };
    this.seen.push(relisted ? { ...e, relisted: true } : e);
  }

  private fail(collection: string, why: string): void {
    this.failure ??= new Error(`the watch of ${collection} on ${this.cluster.name} failed for good: ${why}`);
    this.stop();
  }

  /**
   * Opens a watch of `collection` from resourceVersion `from`; resolves once the server answered it (rejects when
   * it refused it). When the stream ends it is re-opened from the last revision seen, after a LIST when the server
   * said the revision expired; a connection error or a 429 is retried every 200 ms for at most reopenWithinMs
   * from `since`, the moment the collection was left without a watch (client-go's reflector retries both, after
   * its backoff: the harness's shorter pause only sees the server back sooner), each retry counted in the suite's
   * retry summary.
   */
  private watch(collection: string, from: string, since = Date.now()): Promise<void> {
    const admin = this.cluster.admin as { cert: string; key: string };
    const timeout = this.o.timeoutSeconds ? `&timeoutSeconds=${this.o.timeoutSeconds}` : '';
    let last = from;
    let expired: Status | undefined;
    // lostAt: since when the collection has had no open watch
    const reopen = async (lostAt: number): Promise<void> => {
      if (this.stopped) return;
      if (Date.now() - lostAt > (this.o.reopenWithinMs ?? 30_000)) { this.fail(collection, `no watch could be opened for ${Date.now() - lostAt} ms`); return; }
      try {
        if (expired) {
          await this.o.beforeRelist?.(collection);
          const rv = await this.list(collection, true);
          this.relists.push(`${collection}: watch from ${last} expired (${expired.message}); LIST at ${rv}`);
          last = rv;
        }
        await this.watch(collection, last, lostAt);
      } catch (e) {
        this.fail(collection, (e as Error).message);
      }
    };
    return new Promise<void>((resolve, reject) => {
      let answered = false;
      const req = https.get(`${this.cluster.url}${collection}?watch=1&allowWatchBookmarks=true&resourceVersion=${from}${timeout}&${this.query()}`, {
        ca: fs.readFileSync(this.cluster.caFile), cert: fs.readFileSync(admin.cert), key: fs.readFileSync(admin.key), headers: { accept: 'application/json' },
      }, (res) => {
        answered = true;
        if (res.statusCode === 429 || res.statusCode === 503) {
          res.resume();
          this.open.delete(req);
          countRetry({ layer: 'client-go', what: `reflector WATCH ${collection} on ${this.cluster.name}`, reason: `HTTP ${res.statusCode}`, waitMs: 200 });
          sleep(200).then(() => reopen(since)).then(resolve, reject);
          return;
        }
        if (res.statusCode !== 200) { res.resume(); this.open.delete(req); reject(new Error(`watch ${collection}: HTTP ${res.statusCode}`)); return; }
        resolve();
        let buffer = '';
        res.setEncoding('utf8').on('data', (chunk: string) => {
          buffer += chunk;
          for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
            const line = buffer.slice(0, nl);
            buffer = buffer.slice(nl + 1);
            if (!line.trim()) continue;
            const e = JSON.parse(line) as { type: string; object: KubeObject & Status };
            if (e.type === 'ERROR') {
              if (e.object.code === 410) expired = e.object;
              else this.fail(collection, `ERROR event ${JSON.stringify(e.object)}`);
              continue;
            }
            last = String(e.object.metadata.resourceVersion ?? last);
            if (e.type !== 'ADDED' && e.type !== 'MODIFIED' && e.type !== 'DELETED') continue;
            const known = this.known.get(collection)!;
            if (e.type === 'DELETED') known.delete(objectKey(e.object)); else known.set(objectKey(e.object), Number(last));
            this.record(e.type, e.object, Number(last), false);
          }
        }).on('error', () => undefined).on('close', () => { if (this.open.delete(req)) void reopen(Date.now()); });
      });
      req.on('error', () => {
        // a refused or reset connection before the server answered: retried like a 429 (once answered, 'close' reopens)
        if (!answered && this.open.delete(req)) {
          countRetry({ layer: 'client-go', what: `reflector WATCH ${collection} on ${this.cluster.name}`, reason: 'no answer (connection refused or reset)', waitMs: 200 });
          sleep(200).then(() => reopen(since)).then(resolve, reject);
        }
      });
      this.open.add(req);
    });
  }
}
