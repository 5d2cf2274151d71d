/**
 * What the real-API harness does when the API server answers "not now" (issue 53 item 5: a fresh clone on a machine
 * at load 8-10 got `HTTP 504: Timeout: request did not complete within requested timeout - context deadline
 * exceeded` on a server-side apply right after its CRD was installed). The harness's requests do what the clients
 * they stand for do, no more, and every retry is counted and printed at the suite's end (`retrySummary`), so a slow
 * server is seen, not hidden.
 *
 * Two layers, each the behaviour of a real client:
 *  - `withClientGoRetry`, a plain request, as client-go's rest client sends it (k8s.io/client-go v0.36.4
 *    rest/with_retry.go `IsNextRetry` and `checkWait`, rest/request.go `retryAfterSeconds`, `maxRetries: 10`):
 *    a 429 or any 5xx that carries an integer `Retry-After` header is sent again after that many seconds, at most
 *    10 times, whatever the method. Without the header it is not retried (the API server's own 504 for a request
 *    that ran out of time has none: k8s.io/apiserver endpoints/handlers/finisher sets RetryAfterSeconds 0, and
 *    responsewriters writes the header only when it is above 0).
 *  - `withEngineRequeue`, an apply as a GitOps engine makes it (Flux's kustomize-controller requeues a failed
 *    apply after its retry interval, Argo CD's `syncPolicy.retry` backs off `duration * factor^n` up to
 *    `maxDuration`, at most `limit` times): a failure that is the server's (5xx, 429) or the connection's (no
 *    answer, reset) is tried again after 1, 2, 4, 8 s, at most 4 times and never past 180 s from the first try (the
 *    API server gives a request 60 s, its --request-timeout default, before its 504: the budget holds two of them).
 *    A refusal (any other 4xx: 400 strict decoding, 403, 404, 409 field conflict, 422 invalid) is the answer, and
 *    is never retried: the engine would requeue it, and get the same refusal, forever.
 */

export interface HttpAnswer { status: number; headers?: Record<string, string | string[] | undefined> }

/** One retry, for the suite's summary. */
export interface Retry { layer: 'client-go' | 'engine'; what: string; reason: string; waitMs: number }

const retries: Retry[] = [];

/** The retries since the process started (a jest suite runs in its own module registry: the suite's). */
export function retriesSoFar(): readonly Retry[] {
  return retries;
}

/** One line per retry and a count, or a line saying there were none. */
export function retrySummary(): string {
  if (!retries.length) return 'real-API retries: none (every request answered the first time)';
  const lines = retries.map((r) => `  ${r.layer}: ${r.what}: ${r.reason}; retried after ${r.waitMs} ms`);
  return [`real-API retries: ${retries.length} (client-go ${retries.filter((r) => r.layer === 'client-go').length}, engine ${retries.filter((r) => r.layer === 'engine').length})`, ...lines].join('\n');
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A Go `time.Duration` string (`10s`, `1m30s`, `500ms`) in ms, as time.ParseDuration reads it. */
export function goDurationMs(s: string): number {
  const unit: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  const parts = [...s.matchAll(/(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('') !== s) throw new Error(`unable to parse ${s} as a duration`);
  return parts.reduce((ms, p) => ms + Number(p[1]) * unit[p[2]], 0);
}

/** Counts a retry made by another harness layer (an engine's own requeue, e.g. Argo CD's sync retry in real-argo.ts). */
export function countRetry(r: Retry): void {
  retries.push(r);
}

/** client-go's `checkWait`: the seconds to wait before sending again, or undefined for an answer that is not retried. */
export function clientGoWait(a: HttpAnswer): number | undefined {
  if (a.status !== 429 && a.status < 500) return undefined;
  const h = a.headers?.['retry-after'];
  const v = Array.isArray(h) ? h[0] : h;
  return v !== undefined && /^\s*[+-]?\d+\s*$/.test(v) ? Math.max(0, Number(v)) : undefined;
}

/** client-go's default `maxRetries`. */
export const CLIENT_GO_MAX_RETRIES = 10;

/** Sends with `send` until the answer is not a 429/5xx with `Retry-After`, at most 10 retries (see the header). */
export async function withClientGoRetry<T extends HttpAnswer>(what: string, send: () => Promise<T>, opts: { scaleMs?: number } = {}): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    const answer = await send();
    const seconds = clientGoWait(answer);
    if (seconds === undefined || attempt >= CLIENT_GO_MAX_RETRIES) return answer;
    const waitMs = seconds * (opts.scaleMs ?? 1000);
    retries.push({ layer: 'client-go', what, reason: `HTTP ${answer.status} with Retry-After: ${seconds}`, waitMs });
    await sleep(waitMs);
  }
}

/** The engine's requeue: backoff per retry and the bounds. */
export interface RequeuePolicy { readonly firstMs: number; readonly factor: number; readonly maxRetries: number; readonly budgetMs: number }
export const ENGINE_REQUEUE: RequeuePolicy = { firstMs: 1000, factor: 2, maxRetries: 4, budgetMs: 180_000 };

/**
 * Is this failure one an engine's requeue can cure? The server's (5xx, 429) or the connection's (an Error with no
 * HTTP status: no answer in time, reset); never a refusal (another 4xx).
 */
export function transient(e: unknown): boolean {
  const status = (e as { status?: unknown })?.status;
  if (typeof status === 'number') return status === 429 || status >= 500;
  return e instanceof Error;
}

/** Runs `apply` until it resolves, or a failure is a refusal, or the policy's count or time is spent (then the last failure). */
export async function withEngineRequeue<T>(what: string, apply: () => Promise<T>, policy: RequeuePolicy = ENGINE_REQUEUE): Promise<T> {
  const start = Date.now();
  for (let attempt = 0; ; attempt++) {
    try {
      return await apply();
    } catch (e) {
      const waitMs = policy.firstMs * policy.factor ** attempt;
      if (!transient(e) || attempt >= policy.maxRetries || Date.now() - start + waitMs > policy.budgetMs) throw e;
      retries.push({ layer: 'engine', what, reason: String((e as Error).message ?? e).slice(0, 200), waitMs });
      await sleep(waitMs);
    }
  }
}
