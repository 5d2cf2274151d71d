/** Data path through two in-process gateways on loopback: integrity, half-close, resets, leaks. */
import assert from 'node:assert/strict';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { HANG_GUARD_MS, bulkBytes, makePki, openFds, sendAndVerify, shortConnections, sleep, startSink, withTimeout, type Pki } from '../testkit/helpers';
import { startPair, type Pair } from '../testkit/gateways';

const BULK = bulkBytes();
const BULK_TEXT = `${BULK / 2 ** 20} MiB`;
let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west', 'north']); });

async function metric(p: Pair['a'], name: string, labels: Record<string, string> = {}): Promise<number> {
  const m = await p.registry.getSingleMetric(name)!.get();
  return m.values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((s, v) => s + v.value, 0);
}

// mtls runs on the native OpenSSL relay (the only mTLS data path); mtls-splice authenticates there, then splices;
// 'plaintext-js' forces Node streams (dataPath: 'js')
for (const variant of ['plaintext', 'mtls', 'mtls-splice', 'plaintext-js'] as const) {
  const mode = variant === 'plaintext-js' ? 'plaintext' : variant;
  const o = variant === 'plaintext-js' ? { dataPath: 'js' as const } : {};
  describe(`two-gateway chain, ${variant}`, { timeout: 20 * HANG_GUARD_MS }, () => {
    let sink: Awaited<ReturnType<typeof startSink>>;
    let pair: Pair;
    before(async () => {
      sink = await startSink();
      pair = await startPair(mode, pki, () => ({ host: '127.0.0.1', port: sink.port }), o, o);
    });
    after(async () => { await pair?.close(); await sink?.close(); });

    it(`carries ${BULK_TEXT} with equal sha256 at both ends, and half-close both ways`, { timeout: 2 * HANG_GUARD_MS + BULK / 2 ** 20 * 100 }, async () => {
      const r = await withTimeout(sendAndVerify(pair.cfgA.listen!.intercept!.port, '127.0.0.1', BULK), HANG_GUARD_MS + BULK / 2 ** 20 * 100, BULK_TEXT);
      assert.equal(r.reply, r.sent, 'sink hash equals source hash');
      assert.ok(r.reply.endsWith(` ${BULK}`));
      console.log(`# ${variant}: ${BULK_TEXT} in ${r.ms} ms (${(8 * BULK / r.ms / 1e6).toFixed(1)} Gbit/s incl. hashing)`);
      await sleep(50);
      assert.equal(await metric(pair.a, 'mm_proxy_tunnel_bytes_total', { peer: 'west', direction: 'tx' }), BULK);
      assert.equal(await metric(pair.b, 'mm_proxy_tunnel_bytes_total', { peer: 'east', direction: 'rx' }), BULK);
      assert.equal(pair.a.activeTunnels(), 0);
      assert.equal(pair.b.activeTunnels(), 0);
      assert.equal(pair.a.nativeDataPath, variant !== 'plaintext-js', 'native addon is built and used unless dataPath=js');
    });

    it('propagates a reset from the destination to the client', { timeout: 5 * HANG_GUARD_MS }, async () => {
      // the sink resets every connection it gets
      const rst = net.createServer((s) => { s.on('error', () => undefined); s.once('data', () => s.resetAndDestroy()); });
      await new Promise<void>((r) => rst.listen(0, '127.0.0.1', () => r()));
      const p2 = await startPair(mode, pki, () => ({ host: '127.0.0.1', port: (rst.address() as net.AddressInfo).port }), o, o);
      try {
        const err = await withTimeout(new Promise<string>((resolve) => {
          const c = net.connect(p2.cfgA.listen!.intercept!.port, '127.0.0.1');
          c.on('connect', () => { const iv = setInterval(() => { if (!c.destroyed) c.write(Buffer.alloc(65536)); }, 5); c.on('close', () => clearInterval(iv)); });
          c.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
          c.on('close', () => resolve('closed'));
        }), HANG_GUARD_MS, 'reset propagation');
        assert.match(err, /ECONNRESET|EPIPE|closed/);
      } finally { await p2.close(); rst.close(); }
    });

    it('ends the client connection when the peer gateway dies mid-stream', { timeout: 5 * HANG_GUARD_MS }, async () => {
      const slow = await startSink();
      const p2 = await startPair(mode, pki, () => ({ host: '127.0.0.1', port: slow.port }), o, o);
      try {
        const ended = new Promise<number>((resolve) => {
          const c = net.connect(p2.cfgA.listen!.intercept!.port, '127.0.0.1');
          let t0 = 0;
          const buf = Buffer.alloc(1 << 16);
          c.on('connect', () => {
            const iv = setInterval(() => { if (!c.destroyed && c.writableLength < (1 << 22)) c.write(buf); }, 1);
            c.on('close', () => { clearInterval(iv); resolve(Date.now() - t0); });
          });
          c.on('error', () => undefined);
          setTimeout(() => { t0 = Date.now(); p2.b.close(); }, 300);
        });
        const ms = await withTimeout(ended, 15_000, 'client connection end after peer death');
        assert.ok(ms < 10_000, `client ended ${ms} ms after the peer died`);
      } finally { await p2.close(); await slow.close(); }
    });

    const n = variant === 'plaintext-js' ? Math.min(1_000, shortConnections()) : shortConnections();
    it(`${n.toLocaleString('en')} short connections leave no tunnels, sockets or fds behind`, { timeout: 2 * HANG_GUARD_MS + n * 100 }, async () => {
      await sendAndVerify(pair.cfgA.listen!.intercept!.port, '127.0.0.1', 10); // warm-up
      await sleep(100);
      const fds0 = openFds();
      let i = 0;
      const worker = async () => {
        while (i < n) {
          i++;
          const r = await sendAndVerify(pair.cfgA.listen!.intercept!.port, '127.0.0.1', 100);
          assert.equal(r.reply, r.sent);
        }
      };
      const t0 = Date.now();
      await withTimeout(Promise.all(Array.from({ length: 32 }, worker)), HANG_GUARD_MS + n * 100, `${n} connections`);
      console.log(`# ${variant}: ${n} short connections in ${Date.now() - t0} ms`);
      const left = () => pair.a.activeTunnels() + pair.b.activeTunnels() + sink.sockets.size;
      for (const end = Date.now() + HANG_GUARD_MS; Date.now() < end && left() > 0;) await sleep(20); // a hang guard: a leak stays
      assert.equal(pair.a.activeTunnels(), 0);
      assert.equal(pair.b.activeTunnels(), 0);
      assert.equal(sink.sockets.size, 0);
      await sleep(100);
      const fds1 = openFds();
      assert.ok(fds1 <= fds0 + 2, `fds before ${fds0}, after ${fds1}`);
      assert.ok(await metric(pair.a, 'mm_proxy_tunnels_total') >= n);
    });
  });
}
