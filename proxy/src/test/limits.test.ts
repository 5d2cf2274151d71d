/** Idle timeout (both data paths), total tunnel cap, dial failure (DIAL_TIMEOUT is exercised in the netns lab). */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as net from 'node:net';
import { before, describe, it } from 'node:test';
import { startGateway } from '../gateway';
import { RefusalCode, encodeOpen } from '../protocol';
import { configFor, startPair } from '../testkit/gateways';
import { HANG_GUARD_MS, freePort, makePki, silent, sleep, startSink, withTimeout, type Pki } from '../testkit/helpers';
import { probe } from '../testkit/probe';

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });

for (const mode of ['plaintext', 'mtls', 'mtls-splice'] as const) {
  it(`closes an idle tunnel after limits.idleTimeoutMs (${mode}) and keeps a busy one`, { timeout: 5 * HANG_GUARD_MS }, async () => {
    const sink = await startSink();
    const pair = await startPair(mode, pki, () => ({ host: '127.0.0.1', port: sink.port }), {}, {}, { limits: { idleTimeoutMs: 400 } });
    // the origin gateway gets the same idle timeout
    pair.a.reload({ ...pair.cfgA, limits: { ...pair.cfgA.limits, idleTimeoutMs: 400 } });
    const busyIdle = (pace: number, total: number) => new Promise<number>((resolve) => {
      const t0 = Date.now();
      const c = net.connect(pair.cfgA.listen!.intercept!.port, '127.0.0.1');
      c.on('error', () => undefined);
      let n = 0;
      const iv = pace ? setInterval(() => { if (n++ < total) { c.write('x'); } else { clearInterval(iv); c.end(); } }, pace) : undefined;
      c.on('data', () => undefined);
      c.on('close', () => { if (iv) clearInterval(iv); resolve(Date.now() - t0); });
    });
    try {
      const idleMs = await withTimeout(busyIdle(0, 0), HANG_GUARD_MS, 'idle close');
      assert.ok(idleMs >= 350 && idleMs < 4000, `idle tunnel closed after ${idleMs} ms`);
      const busyMs = await withTimeout(busyIdle(100, 12), HANG_GUARD_MS, 'busy tunnel');
      assert.ok(busyMs >= 1100, `a tunnel with traffic every 100 ms lived ${busyMs} ms (ended by the client)`);
    } finally { await pair.close(); await sink.close(); }
  });
}

describe('caps and dial failure', { timeout: 5 * HANG_GUARD_MS }, () => {
  it('enforces the total tunnel cap', async () => {
    const sink = await startSink();
    const cfg = await configFor('west', 'east', 1, 'plaintext', undefined, { limits: { maxTunnelsTotal: 2, maxTunnelsPerPeer: 10 } });
    const west = await startGateway(cfg, { logger: silent, unsafeAllowLoopbackDestinations: true });
    const open = () => encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: '127.0.0.1', dstPort: sink.port, sourceCluster: 'east' });
    const holders: net.Socket[] = [];
    try {
      for (let i = 0; i < 2; i++) {
        const s = net.connect(west.addresses().tunnel.port, '127.0.0.1');
        s.on('error', () => undefined);
        s.write(open());
        holders.push(s);
      }
      for (const end = Date.now() + HANG_GUARD_MS; Date.now() < end && west.activeTunnels() < 2;) await sleep(10); // a hang guard
      const r = await probe(west.addresses().tunnel.port, open());
      assert.equal(r.reply?.status, RefusalCode.TOTAL_LIMIT);
    } finally { holders.forEach((s) => s.destroy()); await west.close(); await sink.close(); }
  });

  it('answers DIAL_FAILED when the destination refuses (closed loopback port)', async () => {
    const closed = await freePort();
    const cfg = await configFor('west', 'east', 1, 'plaintext', undefined);
    const west = await startGateway(cfg, { logger: silent, unsafeAllowLoopbackDestinations: true });
    try {
      const r = await probe(west.addresses().tunnel.port, encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: '127.0.0.1', dstPort: closed, sourceCluster: 'east' }));
      assert.equal(r.reply?.status, RefusalCode.DIAL_FAILED);
      assert.match(r.reply!.reason, /ECONNREFUSED/);
    } finally { await west.close(); }
  });
});
