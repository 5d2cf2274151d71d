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
import { makePki, sendAndVerify, sleep, startSink, withTimeout, type Pki } from '../testkit/helpers';

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

describe('legitimate tunnels during a flood of 1,100 idle connections (native mTLS)', { timeout: 180_000 }, () => {
  it('every legitimate tunnel gets through, with bounded latency', async () => {
    const sink = await startSink();
    // the default handshake timeout (10 s), as in the attack: an idle connection holds its slot that long
    // what the gateways say of anything but a tunnel that went well or the flood (127.0.0.2), to say why a legitimate
    // tunnel failed (a CI run under load once saw one ECONNRESET and no more)
    const warnings: string[] = [];
    const routine = /"msg":"(tunnel open|tunnel accepted|gateway listening)"|"how":"destroy".*"msg":"tunnel closed"|127\.0\.0\.2/;
    const collect = (who: string) => pino({ level: 'info' }, { write: (line: string) => { if (!routine.test(line)) warnings.push(`${who}: ${line.trim()}`); } });
    // both gateways with the product's default timeouts. The origin once had the test kit's 2 s handshake budget:
    // beside a CI run, west's handshakes under the flood took longer, and east gave up on them ("TLS handshake:
    // timed out" after 2.2 s; 1, 72 and 5 of 200 tunnels reset). Latency is what the p99 bound below judges.
    const defaults = { limits: { handshakeTimeoutMs: 10_000, dialTimeoutMs: 5000 } };
    const pair = await startPair('mtls', pki, () => ({ host: '127.0.0.1', port: sink.port }), { logger: collect('east') }, { logger: collect('west') },
      defaults, defaults);
    const flood = persistentFlood(pair.cfgB.listen!.tunnel!.port, 1100, '127.0.0.2');
    try {
      await sleep(3000);
      const ms: number[] = [];
      let ok = 0, failed = 0;
      const reasons: string[] = [];
      const N = 200;
      let next = 0;
      const worker = async () => {
        while (next < N) {
          next++;
          try {
            const r = await withTimeout(sendAndVerify(pair.cfgA.listen!.intercept!.port, '127.0.0.1', 4096), 15_000, 'legit');
            if (r.reply === r.sent) { ok++; ms.push(r.ms); } else {failed++;}
          } catch (e) { failed++; reasons.push(String((e as NodeJS.ErrnoException).code ?? e)); }
        }
      };
      await Promise.all(Array.from({ length: 8 }, worker));
      ms.sort((x, y) => x - y);
      const pct = (p: number) => ms[Math.min(ms.length - 1, Math.floor(p * ms.length))] ?? NaN;
      console.log(`# flood of ${flood.open()} idle connections held: ${ok}/${N} legitimate tunnels carried; latency p50 ${pct(0.5)} ms, p99 ${pct(0.99)} ms`);
      assert.equal(ok, N, `${failed} of ${N} legitimate tunnels failed: ${reasons.slice(0, 5).join(', ')}; what the gateways said besides tunnels that went well (${warnings.length} lines, the first 20):\n${warnings.slice(0, 20).join('\n')}`);
      assert.ok(pct(0.99) < 5000, `p99 latency ${pct(0.99)} ms`);
    } finally { flood.stop(); await pair.close(); await sink.close(); }
  });
});
