/**
 * watch-moves' meter (cli/move-metrics.ts), its two bounds: a body through the pod proxy is bounded in bytes as
 * they arrive (cli/bounded-body.ts; the meter counted UTF-16 characters, letting three times the bound through
 * for multi-byte text), and the reads kept for reuse are only those of the current interval
 * (cli/reuse-window.ts; the meter's map kept every distinct URL of a long watch). The bodies come from a real
 * HTTP server on loopback. (move-metrics.ts itself loads @kubernetes/client-node, ESM only, which this CommonJS
 * jest lane cannot load: the parts it uses are tested here.)
 */
import * as http from 'node:http';
import { readBoundedBody } from '../cli/bounded-body';
import { ReuseWindow } from '../cli/reuse-window';

/** GET from a loopback server writing `chunks` (with a pause between them); the body or the refusal. No retries. */
async function fetchBounded(chunks: Buffer[], maxBytes: number): Promise<{ body?: string; refused?: string; serverSawClose: boolean }> {
  let serverSawClose = false;
  const server = http.createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' });
    res.on('close', () => { serverSawClose = !res.writableFinished; });
    const next = (i: number) => {
      if (i === chunks.length) { res.end(); return; }
      res.write(chunks[i]);
      setTimeout(() => next(i + 1), 10);
    };
    next(0);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const port = (server.address() as { port: number }).port;
    const out = await new Promise<{ body?: string; refused?: string }>((resolve) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/metrics' }, (res) => {
        readBoundedBody(res, maxBytes, (body) => resolve({ body }), (e) => { req.destroy(e); resolve({ refused: e.message }); });
      });
      req.on('error', () => undefined);
    });
    await new Promise((r) => setTimeout(r, 50));
    return { ...out, serverSawClose };
  } finally {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  }
}

const snowmen = (n: number) => Buffer.from('\u2603'.repeat(n)); // U+2603: 3 bytes in UTF-8, 1 UTF-16 unit

describe('readBoundedBody: the bound is in bytes as received', () => {
  test('1,000 three-byte characters (3,000 bytes) pass a 3,000-byte bound and decode whole', async () => {
    expect(await fetchBounded([snowmen(500), snowmen(500)], 3000)).toEqual({ body: '\u2603'.repeat(1000), serverSawClose: false });
  });

  test('1,001 of them (3,003 bytes but 1,001 characters) are refused, and the connection is cut mid-body', async () => {
    const r = await fetchBounded([snowmen(600), snowmen(401), snowmen(5000)], 3000);
    expect(r.refused).toBe('more than 3000 bytes');
    expect(r.body).toBeUndefined();
    expect(r.serverSawClose).toBe(true);
  });

  test('a character split across two chunks is decoded whole, not as replacement characters', async () => {
    const b = snowmen(2);
    expect((await fetchBounded([b.subarray(0, 4), b.subarray(4)], 6)).body).toBe('\u2603\u2603');
  });
});

describe('ReuseWindow: a read is reused within its window and dropped after it', () => {
  test('within the window the same key is loaded once; at the window it is loaded again', () => {
    const w = new ReuseWindow<number>(5000);
    let loads = 0;
    const load = () => ++loads;
    expect(w.get('a', 1000, load)).toBe(1);
    expect(w.get('a', 5999, load)).toBe(1);
    expect(w.get('a', 6000, load)).toBe(2);
    expect(loads).toBe(2);
  });

  test('a long watch over 10,000 intervals, a new key each time: it holds one interval of keys, not 10,000', () => {
    const w = new ReuseWindow<string>(5000);
    let most = 0;
    for (let i = 0; i < 10_000; i++) {
      const now = i * 1000; // 5 reads per window
      w.get(`/api/v1/namespaces/kubevirt/pods?fieldSelector=spec.nodeName%3Dnode-${i}`, now, () => `pods of node-${i}`);
      w.get('/metrics', now, () => 'metrics');
      most = Math.max(most, w.size);
    }
    expect(most).toBe(6); // the five node URLs of the last 5 s and /metrics
    expect(w.size).toBe(6);
  });

  test('a key read again moves to the back, so an old key behind it is still dropped in time', () => {
    const w = new ReuseWindow<string>(5000);
    w.get('old', 0, () => 'o');
    w.get('kept', 1000, () => 'k1');
    w.get('kept', 7000, () => 'k2'); // reloaded: 'old' (7 s) and the first 'kept' are stale
    expect(w.size).toBe(1);
    expect(w.get('kept', 8000, () => 'k3')).toBe('k2');
  });

  test('an entry from the future (the clock stepped back) is not reused', () => {
    const w = new ReuseWindow<string>(5000);
    w.get('a', 10_000, () => 'then');
    expect(w.get('a', 2000, () => 'now')).toBe('now');
    expect(w.size).toBe(1);
  });
});
