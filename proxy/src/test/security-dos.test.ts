/**
 * Issue 14, item 3: a flood of idle TCP connections without a certificate (1,100, held and re-opened from
 * one other address) must not keep legitimate tunnels out: unauthenticated work is bounded per source and
 * in total, apart from the tunnel pool, and a configured peer gateway keeps its own budget.
 */
import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import pino from 'pino';
import { HandshakeAdmission } from '../handshake-admission';
import { parseProxyConfig } from '../config';
import { startPair } from '../testkit/gateways';
import { persistentFlood } from '../testkit/flood';
import { Registry } from 'prom-client';
import { makePki, sendAndVerify, sleep, startSink, withTimeout, type Pki } from '../testkit/helpers';

/** Polls `ok` every 50 ms until it holds (true) or `ms` passed (false). */
async function waitUntilAsync(ok: () => Promise<boolean>, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!(await ok())) { if (Date.now() > end) return false; await sleep(50); }
  return true;
}

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });

describe('admission of unauthenticated work', () => {
  const cfg = parseProxyConfig({
    version: 1, fleet: 'fleet', cluster: 'west', localCidrs: ['10.0.0.0/8'], tls: { mode: 'plaintext' },
    peers: [{ cluster: 'east', cidrs: ['10.1.0.0/16'], gateways: [{ host: '192.168.50.10', port: 15443 }] }],
    limits: { maxHandshakesPerSource: 3, maxHandshakesTotal: 5, maxTunnelsPerPeer: 8 },
  });

  it('bounds each stranger, strangers in total, and never counts peers against strangers', () => {
    const a = new HandshakeAdmission(() => cfg);
    const fromX = [1, 2, 3, 4].map(() => a.admit('198.51.100.1'));
    assert.deepEqual(fromX.map((r) => !!r), [true, true, true, false], 'per source');
    assert.ok(a.admit('198.51.100.2') && a.admit('::ffff:198.51.100.2'));
    assert.equal(a.admit('198.51.100.3'), undefined, 'strangers in total');
    const peer = Array.from({ length: 9 }, () => a.admit('::ffff:192.168.50.10'));
    assert.deepEqual(peer.map((r) => !!r), [...Array(8).fill(true), false], "the peer's own budget");
    fromX[0]!();
    fromX[0]!(); // idempotent
    assert.ok(a.admit('198.51.100.3'));
  });
});

/** Connections a gateway refused, by reason (mm_proxy_refusals_total, side=terminus). */
async function refused(registry: Registry, reason: string): Promise<number> {
  const m = await registry.getSingleMetric('mm_proxy_refusals_total')!.get();
  return m.values.find((v) => v.labels.reason === reason && v.labels.side === 'terminus')?.value ?? 0;
}

/**
 * What this protects: a stranger holding every handshake slot it may get (and re-opening what is refused) does
 * not keep a peer's tunnels out. A regression would make a legitimate tunnel wait for a slot the flood holds,
 * or be refused. West (the flooded side) lets an idle handshake hold its slot for FLOOD_HOLD_MS, longer than
 * east (the legitimate client) waits for its own handshake, EAST_HANDSHAKE_MS: so a tunnel that waited for a
 * flood slot to free is reset by east's own timeout, and counted as failed. No latency bound: a loaded machine
 * (load 25: p99 5,010 ms) slows every tunnel, but no tunnel of this test waits for the flood, so the product's
 * own handshake timeout is the bound that tells starved from slow.
 */
const EAST_HANDSHAKE_MS = 60_000;
const FLOOD_HOLD_MS = 2 * EAST_HANDSHAKE_MS;

describe('legitimate tunnels during a flood of 1,100 idle connections (native mTLS)', { timeout: 600_000 }, () => {
  it('every legitimate tunnel gets through while the flood holds its slots, none waiting for one to free', async () => {
    const sink = await startSink();
    // what the gateways say of anything but a tunnel that went well or the flood (127.0.0.2), to say why a legitimate
    // tunnel failed (a CI run under load once saw one ECONNRESET and no more)
    const warnings: string[] = [];
    const routine = /"msg":"(tunnel open|tunnel accepted|gateway listening)"|"how":"destroy".*"msg":"tunnel closed"|127\.0\.0\.2/;
    const collect = (who: string) => pino({ level: 'info' }, { write: (line: string) => { if (!routine.test(line)) warnings.push(`${who}: ${line.trim()}`); } });
    // The origin once had the test kit's 2 s handshake budget: beside a CI run, west's handshakes under the flood
    // took longer, and east gave up on them ("TLS handshake: timed out" after 2.2 s; 1, 72 and 5 of 200 tunnels reset).
    const pair = await startPair('mtls', pki, () => ({ host: '127.0.0.1', port: sink.port }), { logger: collect('east') }, { logger: collect('west') },
      { limits: { handshakeTimeoutMs: FLOOD_HOLD_MS, dialTimeoutMs: 5000 } }, { limits: { handshakeTimeoutMs: EAST_HANDSHAKE_MS, dialTimeoutMs: 5000 } });
    const floodStart = Date.now();
    const flood = persistentFlood(pair.cfgB.listen!.tunnel!.port, 1100, '127.0.0.2');
    try {
      // the flood holds every slot one source may have once west refuses it more (a hang guard, not a bound)
      assert.ok(await waitUntilAsync(async () => (await refused(pair.b.registry, 'too_many_handshakes')) >= 100, 120_000), 'the flood fills its slots');
      const flooding = Date.now();
      const ms: number[] = [];
      let ok = 0, failed = 0;
      const reasons: string[] = [];
      const N = 200;
      let next = 0;
      const worker = async () => {
        while (next < N && failed === 0) { // a failure fails the test: no need to wait out the rest
          next++;
          try {
            // a guard against a hang only: east's own handshake (60 s) and dial (5 s) timeouts end a starved tunnel first
            const r = await withTimeout(sendAndVerify(pair.cfgA.listen!.intercept!.port, '127.0.0.1', 4096), EAST_HANDSHAKE_MS + 30_000, 'legit');
            if (r.reply === r.sent) { ok++; ms.push(r.ms); } else {failed++;}
          } catch (e) { failed++; reasons.push(String((e as NodeJS.ErrnoException).code ?? e)); }
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      const tookMs = Date.now() - flooding;
      ms.sort((x, y) => x - y);
      const pct = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] ?? NaN;
      const timedOut = await refused(pair.b.registry, 'handshake_timeout');
      console.log(`# flood of ${flood.open()} idle connections held (${await refused(pair.b.registry, 'too_many_handshakes')} refused, ${timedOut} timed out): `
        + `${ok}/${N} legitimate tunnels carried in ${tookMs} ms; latency p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms, max ${ms[ms.length - 1]} ms`);
      assert.equal(ok, N, `${failed} of ${N} legitimate tunnels failed: ${reasons.slice(0, 5).join(', ')}; what the gateways said besides tunnels that went well (${warnings.length} lines, the first 20):\n${warnings.slice(0, 20).join('\n')}`);
      if (Date.now() - floodStart < FLOOD_HOLD_MS) assert.equal(timedOut, 0, 'no flood slot was freed while the legitimate tunnels ran: none of them could have used one');
    } finally { flood.stop(); await pair.close(); await sink.close(); }
  });
});
