/**
 * The bandwidth budget per peer (config `bandwidth`, a peer's own `peers[].bandwidth`, issue 52 item 3), in network
 * namespaces this test creates:
 *
 *   [c] 10.1.0.10 --mig0-- [ga] 10.1.0.1 | 192.168.50.1 --xc0-- [gb] 192.168.50.2 | 10.2.0.1 --mig0-- [s] 10.2.0.10
 *                                       | 192.168.51.1 --xc1-- [gn] 192.168.51.2 | 10.3.0.1 --mig0-- [n] 10.3.0.10
 *
 * Gateway east (ga) has a budget of 20 MB/s per peer (top-level `bandwidth`) and two peers, west (gb) and north (gn),
 * north with a budget of its own, 12 MB/s (`peers[1].bandwidth`, as the library writes a per-pair budget); the real
 * CLI, the same setup-rules REDIRECT as in production. Four bulk streams from c to s share west's budget while one
 * bulk stream to n has north's; bytes are counted at the receivers over wall-clock windows (bulk.ts meter), so a slow
 * sender under load cannot fake a result. Per tunnel mode: plaintext (splice pump) and mtls-splice (the TLS
 * session's splice after the binding exchange).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NetnsLab, netnsUnavailable } from '../testkit/netns';
import { HANG_GUARD_MS, makePki, type Pki } from '../testkit/helpers';

const CLI = path.join(__dirname, '..', 'cli.js');
const BULK = path.join(__dirname, '..', 'testkit', 'bulk.js');
const node = process.execPath;
const skip = netnsUnavailable();
const BUDGET = 20_000_000; // bytes/s per peer: far below what the chain carries on a loaded 2-core machine
const NORTH_BUDGET = 12_000_000; // north's own (peers[].bandwidth overrides the top-level one)
const budgetOf: Record<string, number> = { west: BUDGET, north: NORTH_BUDGET };
const RUN_MS = 5000;

type Samples = Record<string, [number, number][]>;

/** When the meter first counted bytes of `name` (ms, absolute): the stream's start as the receiver saw it. */
function firstAt(s: Samples, name: string): number {
  const hit = (s[name] ?? []).find(([, b]) => b > 0);
  if (!hit) throw new Error(`${name}: no bytes arrived`);
  return hit[0];
}

/** When the meter had counted all of `name`'s bytes (ms, absolute): the stream's end as the receiver saw it. */
function lastAt(s: Samples, name: string): number {
  const l = s[name] ?? [];
  const total = l.at(-1)?.[1] ?? 0;
  return l.find(([, b]) => b === total)?.[0] ?? 0;
}

/** Bytes of `name` received between t0 and t1 (ms, absolute), from the nearest samples at or after each. */
function bytesIn(s: Samples, name: string, t0: number, t1: number): number {
  const at = (t: number) => {
    const l = s[name] ?? [];
    const hit = l.find(([ms]) => ms >= t);
    if (!hit) throw new Error(`${name}: no sample at or after ${t} (last ${l.at(-1)?.[0]})`);
    return hit[1];
  };
  return at(t1) - at(t0);
}

for (const mode of ['plaintext', 'mtls-splice'] as const) {
  describe(`bandwidth budget per peer in network namespaces (${mode})`, { timeout: 5 * HANG_GUARD_MS, skip }, () => {
    const lab = new NetnsLab();
    let pki: Pki;
    const ns = { c: '', ga: '', gb: '', gn: '', s: '', n: '' };
    const outs: (() => string)[] = [];

    const tls = (me: string) => (mode === 'plaintext' ? { mode } : { mode, caFile: pki.ca, certFile: pki.certs[me].cert, keyFile: pki.certs[me].key });
    const base = (me: string, tunnel: string, local: string, dialFrom: string) => ({
      version: 1, fleet: 'fleet', cluster: me,
      listen: { intercept: { host: '0.0.0.0', interface: 'mig0', port: 15001 }, tunnel: { host: tunnel, port: 15443 }, admin: { host: '127.0.0.1', port: 15090 } },
      localCidrs: [local], dialFrom, tls: tls(me), limits: { handshakeTimeoutMs: 3000, dialTimeoutMs: 2000, drainTimeoutMs: 1000 },
    });
    const configs: Record<string, object> = {};
    /** bytes each peer's receiver counted in the whole run (set by the first case) */
    const received: Record<string, number> = {};

    before(async () => {
      pki = makePki('fleet', ['east', 'west', 'north']);
      for (const k of Object.keys(ns) as (keyof typeof ns)[]) ns[k] = lab.addNs(k);
      lab.link(ns.c, 'mig0', ['10.1.0.10/24'], ns.ga, 'mig0', ['10.1.0.1/24']);
      lab.link(ns.ga, 'xc0', ['192.168.50.1/24'], ns.gb, 'xc0', ['192.168.50.2/24']);
      lab.link(ns.ga, 'xc1', ['192.168.51.1/24'], ns.gn, 'xc0', ['192.168.51.2/24']);
      lab.link(ns.gb, 'mig0', ['10.2.0.1/24'], ns.s, 'mig0', ['10.2.0.10/24']);
      lab.link(ns.gn, 'mig0', ['10.3.0.1/24'], ns.n, 'mig0', ['10.3.0.10/24']);
      lab.run(['ip', 'route', 'add', '10.0.0.0/8', 'via', '10.1.0.1'], ns.c);
      lab.run(['ip', 'route', 'add', '10.1.0.0/24', 'via', '10.2.0.1'], ns.s);
      lab.run(['ip', 'route', 'add', '10.1.0.0/24', 'via', '10.3.0.1'], ns.n);
      configs.east = {
        ...base('east', '192.168.50.1', '10.1.0.0/24', '10.1.0.1'), ownAddresses: ['10.1.0.1', '192.168.50.1', '192.168.51.1'], bandwidth: BUDGET,
        peers: [
          { cluster: 'west', cidrs: ['10.2.0.0/24'], gateways: [{ host: '192.168.50.2', port: 15443 }] },
          { cluster: 'north', cidrs: ['10.3.0.0/24'], gateways: [{ host: '192.168.51.2', port: 15443 }], bandwidth: NORTH_BUDGET },
        ],
      };
      for (const [me, ip, local, from] of [['west', '192.168.50.2', '10.2.0.0/24', '10.2.0.1'], ['north', '192.168.51.2', '10.3.0.0/24', '10.3.0.1']]) {
        configs[me] = { ...base(me, ip, local, from), ownAddresses: [from, ip], peers: [{ cluster: 'east', cidrs: ['10.1.0.0/24'], gateways: [{ host: '192.168.50.1', port: 15443 }] }] };
      }
      for (const [me, where] of [['east', ns.ga], ['west', ns.gb], ['north', ns.gn]]) {
        const file = path.join(pki.dir, `${me}.json`);
        fs.writeFileSync(file, JSON.stringify(configs[me]));
        await lab.exec(where, [node, CLI, 'setup-rules', '--config', file]);
        outs.push((await lab.start(where, [node, CLI, 'run', '--config', file], 'gateway listening')).out);
      }
    });
    after(async () => { await lab.cleanup(); if (pki) fs.rmSync(pki.dir, { recursive: true, force: true }); });

    it('4 streams to one peer hold its budget (±5%) and share it fairly (±25%), a late one within 1 s; another peer has its own rate', async () => {
      // each meter ends once its streams have ended (west 4, north 1), so what the budget let through has all arrived
      const meterS = lab.start(ns.s, [node, BULK, 'meter', '9185', String(RUN_MS / 1000 + 20), '4'], 'listening');
      const meterN = lab.start(ns.n, [node, BULK, 'meter', '9185', String(RUN_MS / 1000 + 20), '1'], 'listening');
      const [ms, mn] = await Promise.all([meterS, meterN]);
      const done = (m: typeof ms) => new Promise<Samples>((resolve, reject) => {
        m.child.on('exit', () => { try { resolve(JSON.parse(m.out().split('\n').filter(Boolean).at(-1)!) as Samples); } catch (e) { reject(e); } });
      });
      const resS = done(ms), resN = done(mn);
      const t0 = Date.now() + 300; // when the streams start (after the sender process is up)
      const streams = [
        ...[1, 2, 3].map((i) => ({ host: '10.2.0.10', port: 9185, name: `w${i}`, delayMs: t0 - Date.now(), durMs: RUN_MS })),
        { host: '10.2.0.10', port: 9185, name: 'w4', delayMs: t0 - Date.now() + 1000, durMs: RUN_MS - 1000 },
        { host: '10.3.0.10', port: 9185, name: 'n1', delayMs: t0 - Date.now(), durMs: RUN_MS },
      ];
      const sent = JSON.parse(await lab.exec(ns.c, [node, BULK, 'blast', JSON.stringify(streams)], RUN_MS + 15_000)) as Record<string, string | null>;
      assert.deepEqual(sent, { w1: null, w2: null, w3: null, w4: null, n1: null }, `${outs.map((o) => o().split('\n').slice(-5).join('\n')).join('\n---\n')}`);
      const [s, n] = await Promise.all([resS, resN]);
      const total = (x: Samples) => Object.values(x).reduce((sum, l) => sum + (l.at(-1)?.[1] ?? 0), 0);
      received.west = total(s);
      received.north = total(n);
      // The windows start from when the streams' first bytes arrived, not from t0: each stream's delay is counted
      // from the blast process's own start, and the tunnel (for mtls-splice a TLS handshake and the binding
      // exchange) is set up before a byte flows; on a loaded machine that took up to ~1 s, and a window from t0 + 500
      // then held a time no stream was sending yet (an aggregate of 18.7 MB/s, the budget itself exact: see
      // docs/dev/lab/2026-12-03-budget-under-load.md). Nothing is widened: the bounds are the same, over times the
      // streams were all sending.
      const w0 = Math.max(...['w1', 'w2', 'w3'].map((w) => firstAt(s, w))); // the last of the three on time started
      // until t0 + RUN_MS as before (no sender stops earlier: each stops RUN_MS after it connected, after t0), or the
      // first stream's last byte if sooner; not into the tail where the senders' queued bytes drain (shares then follow
      // the queues: one stream had 7.2 MB/s there)
      const wEnd = Math.min(t0 + RUN_MS, ...['w1', 'w2', 'w3', 'w4'].map((w) => lastAt(s, w)));
      assert.ok(wEnd - 200 - (w0 + 2000) >= 1500, `the streams were all sending ${w0 - t0}..${wEnd - t0} ms after t0: too short a time to measure (started late or ended early)`);
      const n0 = firstAt(n, 'n1');
      const rate = (name: string, a: number, b: number, src = s) => bytesIn(src, name, a, b) / ((b - a) / 1000);
      const agg = ['w1', 'w2', 'w3', 'w4'].reduce((sum, w) => sum + rate(w, w0 + 500, wEnd - 200), 0);
      const per = ['w1', 'w2', 'w3', 'w4'].map((w) => rate(w, w0 + 2000, wEnd - 200));
      const late = rate('w4', Math.max(w0, firstAt(s, 'w4')) + 1000, wEnd - 200);
      const north = rate('n1', n0 + 500, Math.min(t0 + RUN_MS, lastAt(n, 'n1')) - 200, n);
      const oldAgg = ['w1', 'w2', 'w3', 'w4'].reduce((sum, w) => sum + bytesIn(s, w, t0 + 500, t0 + RUN_MS - 200) / ((RUN_MS - 700) / 1000), 0);
      console.log(`# ${mode}: streams' first bytes ${['w1', 'w2', 'w3', 'w4'].map((w) => firstAt(s, w) - t0).join(' ')} ms (north ${n0 - t0}) after t0; window ${w0 - t0 + 500}..${wEnd - t0 - 200} ms; aggregate over t0 + 500..${RUN_MS - 200} ms (the old window) ${(oldAgg / 1e6).toFixed(2)} MB/s`);
      console.log(`# ${mode}: budget ${BUDGET / 1e6} MB/s (north ${NORTH_BUDGET / 1e6}); west aggregate ${(agg / 1e6).toFixed(2)} MB/s, per stream ${per.map((x) => (x / 1e6).toFixed(2)).join(' ')} MB/s; north ${(north / 1e6).toFixed(2)} MB/s`);
      assert.ok(Math.abs(agg - BUDGET) <= 0.05 * BUDGET, `aggregate to west ${agg} B/s, budget ${BUDGET} (±5%)`);
      for (const [i, r] of per.entries()) assert.ok(Math.abs(r - BUDGET / 4) <= 0.25 * BUDGET / 4, `stream w${i + 1}: ${r} B/s, fair share ${BUDGET / 4} (±25%)`);
      assert.ok(Math.abs(late - BUDGET / 4) <= 0.25 * BUDGET / 4, `w4, started 1 s late, from 1 s after its start: ${late} B/s`);
      // north has a budget of its own at its own rate: not a share of the one west fills (BUDGET / 5), nor the
      // top-level rate (BUDGET), but about all of its own 12 MB/s
      assert.ok(north >= 0.8 * NORTH_BUDGET && north <= 1.05 * NORTH_BUDGET, `north's one stream: ${north} B/s, its budget ${NORTH_BUDGET}, while west's budget is full`);
    });

    it('exposes each peer\'s budget and the bytes sent under it in /metrics', async () => {
      const m = await lab.exec(ns.ga, [node, '-e', `require('http').get('http://127.0.0.1:15090/metrics', r => { let b=''; r.on('data', d => b += d); r.on('end', () => { console.log(b); }); })`], HANG_GUARD_MS);
      for (const peer of ['west', 'north']) {
        assert.match(m, new RegExp(`mm_proxy_peer_bandwidth_budget_bytes_per_second\\{peer="${peer}"\\} ${budgetOf[peer]}\\b`));
        const sentBytes = Number(new RegExp(`mm_proxy_peer_bandwidth_sent_bytes_total\\{peer="${peer}"\\} (\\d+)`).exec(m)?.[1]);
        // what the budget let through is what arrived (the senders' queued bytes drain after they close, still
        // under the budget, and each receiver counts until its streams have ended)
        assert.ok(received[peer] > 0.7 * budgetOf[peer] * RUN_MS / 1000, `${peer}: the first case ran (${received[peer]} bytes received)`);
        assert.ok(Math.abs(sentBytes - received[peer]) <= 0.01 * received[peer] + 1e6, `${peer}: ${sentBytes} bytes sent under the budget, ${received[peer]} received`);
      }
    });
  });
}
