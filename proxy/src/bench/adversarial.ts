#!/usr/bin/env node
/**
 * `npm run adversarial -w proxy` (root: `npm run security:adversarial`): the issue-14 attacks, rerunnable,
 * with figures. Not part of the default suite (minutes of CPU). Sections (pick with ARGS, default all):
 *   fuzz      >= 100,000 fuzzed OPEN frames from a peer with a valid certificate (fuzzer in a child process;
 *             the gateway in this one, dials only to loopback via the test hook: crashes, fds, RSS)            MM_ADV_FRAMES (default 100000)
 *   certless  cert-less TLS flood against the real CLI (RSS before, peak, after 20 s)   MM_ADV_CERTLESS (30000)
 *   idle      1,100 idle TCP connections held from 127.0.0.2 while legitimate tunnels run (success, latency)
 *   resets    dying peers (mTLS), both sides, 300 rounds each: how many in-cluster ends were FINs (want 0; the
 *             default suite runs the same check, security-resets.test.ts)
 *   abandon   a vanished peer in network namespaces (root): time until its tunnels are freed
 * Loopback only, plus network namespaces it creates (removed at the end).
 */
import { spawn } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { startGateway } from '../gateway';
import { FRAME_REPLY, FrameReader, encodeOpen } from '../protocol';
import { chatter, chattyServer, dyingOrigin, dyingTerminus, endOf } from '../testkit/dying-peers';
import { certlessFlood, persistentFlood, spawnGateway, type GatewayProcess } from '../testkit/flood';
import { configFor, startPair } from '../testkit/gateways';
import { makePki, sendAndVerify, silent, sleep, startSink, withTimeout, type Pki } from '../testkit/helpers';

const out = (line: string) => process.stdout.write(`${line}\n`);
const mb = (x: number) => `${x.toFixed(0)} MB`;

/** One fuzzed frame: random bytes, a valid OPEN with flipped bytes, truncated, oversized, odd TLVs, odd destinations. */
function fuzzFrame(sinkPort: number): Buffer {
  // destinations: a loopback sink (accepted through the test hook), a closed loopback port, forbidden ones:
  // every dial stays on this machine's loopback
  const dst = [['127.0.0.1', sinkPort], ['::ffff:127.0.0.1', sinkPort], ['127.0.0.1', 1], ['169.254.169.254', 80], ['64:ff9b::7f00:1', 80],
    ['10.77.0.255', 80], ['::', 80], ['203.0.113.9', 80]][crypto.randomInt(0, 8)] as [string, number];
  const valid = () => Buffer.from(encodeOpen({ connectionId: crypto.randomBytes(16), sourceCluster: 'east', dstHost: dst[0], dstPort: dst[1] }));
  switch (crypto.randomInt(0, 6)) {
    case 0: return crypto.randomBytes(crypto.randomInt(1, 600));
    case 1: { const f = valid(); for (let i = crypto.randomInt(1, 6); i > 0; i--) f[crypto.randomInt(0, f.length)] = crypto.randomInt(0, 256); return f; }
    case 2: { const f = valid(); return f.subarray(0, crypto.randomInt(1, f.length)); }
    case 3: { const f = valid(); f.writeUInt16BE(crypto.randomInt(0, 65536), 6); return Buffer.concat([f, crypto.randomBytes(crypto.randomInt(0, 300))]); }
    case 4: {
      const f = valid();
      const tlv = crypto.randomBytes(crypto.randomInt(1, 40));
      f.writeUInt16BE(f.readUInt16BE(6) + tlv.length, 6);
      return Buffer.concat([f, tlv]);
    }
    default: return valid();
  }
}

/** Send one frame over one mTLS connection with east's certificate; resolve with the reply status or how it ended. */
function fuzzOne(port: number, secureContext: tls.SecureContext, frame: Buffer): Promise<string> {
  return new Promise((resolve) => {
    const s = tls.connect({ port, host: '127.0.0.1', secureContext, checkServerIdentity: () => undefined });
    const reader = new FrameReader(65_543, FRAME_REPLY);
    let result = 'closed-no-reply';
    const timer = setTimeout(() => { result = 'timeout'; s.destroy(); }, 15_000);
    s.on('secureConnect', () => s.end(frame)); // half-close: a truncated frame is judged at once, not after the deadline
    s.on('data', (d: Buffer) => { const r = reader.push(d); if (r.kind === 'frame') result = `status-${r.body[0]}`; });
    s.on('error', () => undefined);
    s.on('close', () => { clearTimeout(timer); resolve(result); });
  });
}

/** Child process: `adversarial.js fuzz-client PORT SINK_PORT TOTAL CA CERT KEY` prints progress and a JSON tally. */
async function fuzzClient(args: string[]): Promise<void> {
  const [port, sinkPort, total, ca, cert, key] = args;
  // one context for all connections: parsing the key and the CA per connection cost more than the handshake
  const creds = tls.createSecureContext({ ca: fs.readFileSync(ca), cert: fs.readFileSync(cert), key: fs.readFileSync(key), minVersion: 'TLSv1.3' });
  const tally: Record<string, number> = {};
  let sent = 0, done = 0;
  const worker = async () => {
    while (sent < Number(total)) {
      sent++;
      const r = await fuzzOne(Number(port), creds, fuzzFrame(Number(sinkPort)));
      tally[r] = (tally[r] ?? 0) + 1;
      if (++done % 10_000 === 0) out(`progress ${done}`); // answered frames, each count printed once
    }
  };
  await Promise.all(Array.from({ length: 48 }, worker));
  out(`tally ${JSON.stringify(tally)}`);
}

/** The gateway runs in this process (its RSS and fds are this process's), the fuzzer in a child. */
async function fuzz(pki: Pki): Promise<void> {
  const total = Number(process.env.MM_ADV_FRAMES ?? 100_000);
  const sink = await startSink();
  const cfg = await configFor('west', 'east', 1, 'mtls', pki, { limits: { handshakeTimeoutMs: 3000, dialTimeoutMs: 500 } });
  const gw = await startGateway(cfg, { logger: silent, unsafeAllowLoopbackDestinations: true });
  const fds = () => fs.readdirSync('/proc/self/fd').length;
  const rss = () => process.memoryUsage().rss / 2 ** 20;
  try {
    const rss0 = rss(), fds0 = fds();
    const t0 = Date.now();
    const c = pki.certs.east;
    const child = spawn(process.execPath, [__filename, 'fuzz-client', String(cfg.listen!.tunnel!.port), String(sink.port), String(total), pki.ca, c.cert, c.key], { stdio: ['ignore', 'pipe', 'inherit'] });
    let text = '';
    child.stdout.on('data', (d) => { text += d; for (const m of String(d).matchAll(/progress (\d+)/g)) out(`  fuzz: ${m[1]} frames, gateway RSS ${mb(rss())}, fds ${fds()}`); });
    await new Promise((r) => child.on('exit', r));
    await sleep(3000);
    out(`fuzz: ${total} fuzzed frames with a valid certificate in ${((Date.now() - t0) / 1000).toFixed(0)} s; gateway alive (0 crashes), ${gw.activeTunnels()} tunnels left`);
    out(`fuzz: outcomes ${/tally (.*)/.exec(text)?.[1] ?? '(fuzzer gave no tally)'}  (status-N = REPLY code N, PROTOCOL.md s.3)`);
    out(`fuzz: RSS ${mb(rss0)} -> ${mb(rss())}; fds ${fds0} -> ${fds()}`);
  } finally { await gw.close(); await sink.close(); }
}

async function certless(pki: Pki): Promise<void> {
  const total = Number(process.env.MM_ADV_CERTLESS ?? 30_000);
  const cfg = await configFor('west', 'east', 1, 'mtls', pki, { limits: { handshakeTimeoutMs: 5000 } });
  const gw: GatewayProcess = await spawnGateway(cfg);
  try {
    const ca = fs.readFileSync(pki.ca);
    await certlessFlood(cfg.listen!.tunnel!.port, ca, 300);
    await sleep(500);
    const base = gw.rssMb();
    let peak = base;
    const iv = setInterval(() => { peak = Math.max(peak, gw.rssMb()); }, 100);
    const t0 = Date.now();
    const ended = await certlessFlood(cfg.listen!.tunnel!.port, ca, total);
    clearInterval(iv);
    const s = ((Date.now() - t0) / 1000).toFixed(0);
    await sleep(20_000);
    out(`certless: ${ended}/${total} TLS connections without a client certificate in ${s} s: RSS ${mb(base)} -> peak ${mb(peak)} -> ${mb(gw.rssMb())} after 20 s idle`);
  } finally { await gw.stop(); }
}

async function idle(pki: Pki): Promise<void> {
  const sink = await startSink();
  const pair = await startPair('mtls', pki, () => ({ host: '127.0.0.1', port: sink.port }), {}, {}, { limits: { handshakeTimeoutMs: 10_000 } });
  const flood = persistentFlood(pair.cfgB.listen!.tunnel!.port, 1100, '127.0.0.2');
  try {
    await sleep(2000);
    const ms: number[] = [];
    let ok = 0;
    const N = 300;
    const t0 = Date.now();
    let next = 0;
    let peak = process.memoryUsage().rss;
    const worker = async () => {
      while (next < N) {
        next++;
        try {
          const r = await withTimeout(sendAndVerify(pair.cfgA.listen!.intercept!.port, '127.0.0.1', 4096), 15_000, 'legit');
          if (r.reply === r.sent) { ok++; ms.push(r.ms); }
        } catch { /* counted as a failure */ }
        peak = Math.max(peak, process.memoryUsage().rss);
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    ms.sort((a, b) => a - b);
    const p = (q: number) => ms[Math.min(ms.length - 1, Math.floor(q * ms.length))];
    out(`idle: 1,100 idle connections from 127.0.0.2, re-opened when closed (${flood.open()} open at the end): ${ok}/${N} legitimate tunnels (${(100 * ok / N).toFixed(1)}%) in ${((Date.now() - t0) / 1000).toFixed(1)} s; latency p50 ${p(0.5)} ms, p99 ${p(0.99)} ms; RSS (both gateways and this script) peak ${mb(peak / 2 ** 20)}`);
  } finally { flood.stop(); await pair.close(); await sink.close(); }
}

async function resets(pki: Pki): Promise<void> {
  const rounds = 300;
  // origin side: the far gateway dies -> the in-cluster client must see an RST
  let k = 0;
  const far = await dyingTerminus(pki, () => (k++ % 2 ? 'rst' : 'fin'));
  const cfgE = await configFor('east', 'west', far.port, 'mtls', pki);
  const east = await startGateway(cfgE, { logger: silent, originalDestination: () => ({ host: '127.0.0.1', port: 9 }) });
  const tallyO: Record<string, number> = {};
  for (let done = 0; done < rounds; done += 10) {
    const ends = await Promise.all(Array.from({ length: 10 }, () => {
      const c = net.connect({ port: cfgE.listen!.intercept!.port, host: '127.0.0.1', allowHalfOpen: true });
      chatter(c);
      return endOf(c);
    }));
    for (const e of ends) tallyO[e] = (tallyO[e] ?? 0) + 1;
  }
  await east.close(); far.close();
  out(`resets: origin side, ${rounds} far-gateway deaths mid-stream: client ends ${JSON.stringify(tallyO)}`);
  // terminus side: the origin dies -> the destination must see an RST
  const server = await chattyServer();
  const cfgW = await configFor('west', 'east', 1, 'mtls', pki);
  const west = await startGateway(cfgW, { logger: silent, unsafeAllowLoopbackDestinations: true });
  for (let done = 0; done < rounds; done += 10) {
    await Promise.all(Array.from({ length: 10 }, (_, i) => dyingOrigin(pki, cfgW.listen!.tunnel!.port, server.port, (done + i) % 2 ? 'rst' : 'fin')));
  }
  for (let w = 0; w < 1000 && server.ends.length < rounds; w++) await sleep(10);
  const tallyT: Record<string, number> = {};
  for (const e of await Promise.all(server.ends)) tallyT[e] = (tallyT[e] ?? 0) + 1;
  await west.close(); server.close();
  out(`resets: terminus side, ${rounds} origin deaths mid-stream: destination ends ${JSON.stringify(tallyT)} (${server.ends.length} destination connections)`);
}

async function abandon(): Promise<void> {
  const { netnsUnavailable } = await import('../testkit/netns');
  const why = netnsUnavailable();
  if (why) { out(`abandon: skipped (${why})`); return; }
  const { spawnSync } = await import('node:child_process');
  const r = spawnSync(process.execPath, ['--test', '--test-force-exit', `${__dirname}/../test/security-deadpeer.netns.test.js`], { encoding: 'utf8' });
  const line = /vanished peer: .*/.exec(r.stdout)?.[0] ?? `no figure (exit ${r.status})`;
  out(`abandon: ${line} (keepalive 1 s + 2 x 1 s, TCP_USER_TIMEOUT 3 s; defaults 5 s + 3 x 2 s, 15 s)`);
}

async function main(): Promise<void> {
  if (process.argv[2] === 'fuzz-client') { await fuzzClient(process.argv.slice(3)); return; }
  const all = ['fuzz', 'certless', 'idle', 'resets', 'abandon'];
  const pick = process.argv.slice(2).filter((a) => all.includes(a));
  const run = pick.length ? pick : all;
  const pki = makePki('fleet', ['east', 'west']);
  out(`adversarial run: ${run.join(', ')} (loopback; load average ${(await import('node:os')).loadavg().map((x) => x.toFixed(1)).join(' ')})`);
  for (const s of run) {
    const t0 = Date.now();
    if (s === 'fuzz') await fuzz(pki);
    if (s === 'certless') await certless(pki);
    if (s === 'idle') await idle(pki);
    if (s === 'resets') await resets(pki);
    if (s === 'abandon') await abandon();
    out(`  (${s}: ${((Date.now() - t0) / 1000).toFixed(0)} s)`);
  }
}

main().then(() => process.exit(0), (e) => { process.stderr.write(`${e?.stack ?? e}\n`); process.exit(1); });
