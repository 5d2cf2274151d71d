/**
 * npm run bench:concurrency — N simultaneous bulk streams through one proxy pair, per N and tunnel mode, against
 * HAProxy with the same N in the same run (issue 52 item 1). Loopback, as `npm run bench:proxy`.
 *
 *   BENCH_STREAMS=1,4,16,64  (iperf3 -P N: one client process; iperf3 3.12 caps N at 128)
 *   BENCH_SECONDS=4          (per measurement)   BENCH_ONLY=regex (paths by name)
 *   BENCH_PROBE_MS=5000      (how long one open probe waits for its byte)
 *   BENCH_RELAY=pool:N       (the pool rows' relay: the event pool with N threads; default `pool`: min(2, CPUs))
 *
 * The "thread per tunnel" rows run the spliced relay as it was before the event pool (native/relaypool.c), chosen
 * through gw-runner's bench-only RELAY argument, so before and after come from the same run.
 *
 * Per N and path: aggregate Gbit/s (iperf3 receiver), proxy CPU s per GiB (user+system of both proxy processes
 * from /proc, and each apart), RSS and threads of each proxy process sampled half-way through the cell, RSS per tunnel (busy RSS
 * above the idle RSS, over N), p50/p99 time to open one more tunnel while the N are busy (connect through the
 * pair, send iperf3's 37-byte cookie, first byte back from the server: its "busy" answer; a probe without its byte
 * is counted as reset, the connection ended without it, or timed out, none in BENCH_PROBE_MS), and Jain's fairness
 * index over the N streams' received bytes. Raw data (with the load average) goes to bench/results/.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { writePairConfigs } from './bench-pair';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 4);
const NS = (process.env.BENCH_STREAMS ?? '1,4,16,64').split(',').map(Number).filter((n) => n > 0 && n <= 128);
const POOL = process.env.BENCH_RELAY || 'pool';
const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
const PROBE_MS = Number(process.env.BENCH_PROBE_MS ?? 5000);
const children = new Set<ChildProcess>();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mmproxy-conc-'));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function sh(bin: string, args: string[]): void {
  const r = spawnSync(bin, args, { encoding: 'utf8', cwd: tmp });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')}: ${r.stderr}`);
}
function freePort(): Promise<number> {
  return new Promise((resolve) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = (s.address() as net.AddressInfo).port; s.close(() => resolve(p)); }); });
}
function start(bin: string, args: string[], marker?: string): Promise<ChildProcess> {
  const c = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: tmp });
  children.add(c);
  c.on('exit', () => children.delete(c));
  let out = '';
  return new Promise((resolve, reject) => {
    const t = setTimeout(() => (marker ? reject(new Error(`${bin}: not ready: ${out}`)) : resolve(c)), marker ? 10_000 : 300);
    c.stdout!.on('data', (d) => { out += d; if (marker && out.includes(marker)) { clearTimeout(t); resolve(c); } });
    c.stderr!.on('data', (d) => { out += d; });
    c.on('exit', (code) => { clearTimeout(t); reject(new Error(`${bin} exited ${code}: ${out}`)); });
  });
}
function cpu(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const parts = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(parts[11]) + Number(parts[12])) / 100;
}
/** Per thread of `pid`: [ns on a CPU, ns waiting on a run queue] (/proc/PID/task/TID/schedstat). */
function sched(pid: number): Map<string, [number, number]> {
  const m = new Map<string, [number, number]>();
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try { const [run, wait] = fs.readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ').map(Number); m.set(tid, [run, wait]); } catch { /* ended */ }
  }
  return m;
}
/** Run-queue wait over CPU time of the threads alive at the end (from 0 for those born during the cell). */
function waitPerRun(before: Map<string, [number, number]>[], after: Map<string, [number, number]>[]): number {
  let run = 0, wait = 0;
  after.forEach((m, i) => m.forEach(([r, w], tid) => { const [r0, w0] = before[i].get(tid) ?? [0, 0]; run += r - r0; wait += w - w0; }));
  return run ? wait / run : NaN;
}
function status(pid: number): { rssKiB: number; threads: number } {
  const s = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  return { rssKiB: Number(/VmRSS:\s+(\d+)/.exec(s)?.[1] ?? NaN), threads: Number(/Threads:\s+(\d+)/.exec(s)?.[1] ?? NaN) };
}

function makeCerts() {
  sh('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=bench-ca',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign']);
  for (const c of ['east', 'west']) {
    sh('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${c}.key`, '-out', `${c}.csr`, '-subj', `/CN=${c}`]);
    fs.writeFileSync(path.join(tmp, `${c}.ext`), `subjectAltName=URI:spiffe://bench/cluster/${c}\nextendedKeyUsage=serverAuth,clientAuth\n`);
    sh('openssl', ['x509', '-req', '-in', `${c}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${c}.pem`, '-days', '2', '-extfile', `${c}.ext`]);
    fs.writeFileSync(path.join(tmp, `${c}.bundle.pem`), fs.readFileSync(path.join(tmp, `${c}.pem`), 'utf8') + fs.readFileSync(path.join(tmp, `${c}.key`), 'utf8'));
  }
}

interface Path { name: string; kind: 'haproxy' | 'ours'; port: number; procs: ChildProcess[] }

async function haproxy(name: string, dst: number, tls: boolean): Promise<Path> {
  const [p1, p2] = [await freePort(), await freePort()];
  const cfg = (listen: number, to: number, bindTls: boolean, serverTls: boolean) => [
    'global', '  maxconn 4000', '  nbthread 1', 'defaults', '  mode tcp', '  timeout connect 5s', '  timeout client 60s', '  timeout server 60s',
    ...(tls ? [] : ['  option splice-request', '  option splice-response']),
    'listen hop',
    `  bind 127.0.0.1:${listen}${bindTls ? ` ssl crt ${tmp}/west.bundle.pem ca-file ${tmp}/ca.pem verify required ssl-min-ver TLSv1.3` : ''}`,
    `  server s 127.0.0.1:${to}${serverTls ? ` ssl crt ${tmp}/east.bundle.pem ca-file ${tmp}/ca.pem verify required ssl-min-ver TLSv1.3 sni str(west)` : ''}`,
  ].join('\n') + '\n';
  fs.writeFileSync(path.join(tmp, `${p2}.cfg`), cfg(p2, dst, tls, false));
  fs.writeFileSync(path.join(tmp, `${p1}.cfg`), cfg(p1, p2, false, tls));
  const h2 = await start('haproxy', ['-db', '-f', path.join(tmp, `${p2}.cfg`)]);
  const h1 = await start('haproxy', ['-db', '-f', path.join(tmp, `${p1}.cfg`)]);
  return { name, kind: 'haproxy', port: p1, procs: [h1, h2] };
}

/** `relay` (gw-runner's bench-only RELAY): `thread` for the thread-per-tunnel splice relay, the rows before the pool. */
async function ours(name: string, dst: number, mode: 'plaintext' | 'mtls' | 'mtls-splice', relay?: string): Promise<Path> {
  const ports = await Promise.all(Array.from({ length: 6 }, freePort));
  const { west, east } = writePairConfigs(tmp, ports, mode);
  const runner = path.join(__dirname, 'gw-runner.js');
  const extra = relay ? [relay] : [];
  const b = await start(process.execPath, [runner, west, String(dst), ...extra], 'ready');
  const a = await start(process.execPath, [runner, east, String(dst), ...extra], 'ready');
  return { name, kind: 'ours', port: ports[0], procs: [a, b] };
}

/** One probe: the ms to the server's first byte, or why there was none ('reset': the connection ended without it). */
type Open = number | 'reset' | 'timeout';

/** One more tunnel while the N are busy: connect, send iperf3's cookie, wait for the server's first byte. */
function openOnce(port: number): Promise<Open> {
  const t0 = process.hrtime.bigint();
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let settled = false;
    const done = (r: Open) => { if (settled) return; settled = true; clearTimeout(timer); s.destroy(); resolve(r); };
    const timer = setTimeout(() => done('timeout'), PROBE_MS);
    s.once('connect', () => s.write('x'.repeat(36) + '\0'));
    s.once('data', () => done(Number(process.hrtime.bigint() - t0) / 1e6));
    s.once('error', () => done('reset'));
    s.once('close', () => done('reset'));
  });
}

function iperf(port: number, n: number): Promise<{ bytes: number; gbps: number; perStream: number[] }> {
  return new Promise((resolve, reject) => {
    const c = spawn('iperf3', ['-c', '127.0.0.1', '-p', String(port), '-t', String(SECONDS), '-P', String(n), '-J'], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(c);
    let o = '';
    c.stdout.on('data', (d) => { o += d; });
    const t = setTimeout(() => c.kill('SIGKILL'), (SECONDS + 30) * 1000);
    c.on('exit', () => {
      clearTimeout(t); children.delete(c);
      try {
        const j = JSON.parse(o);
        if (j.error) return reject(new Error(`iperf3: ${j.error}`));
        resolve({ bytes: j.end.sum_received.bytes, gbps: j.end.sum_received.bits_per_second / 1e9,
          perStream: j.end.streams.map((s: { receiver: { bytes: number } }) => s.receiver.bytes) });
      } catch (e) { reject(e); }
    });
  });
}

const pct = (xs: number[], q: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : NaN;
};
/** Jain's fairness index: (sum x)^2 / (n * sum x^2), 1 when every stream carried the same bytes. */
const jain = (xs: number[]) => {
  const sum = xs.reduce((a, b) => a + b, 0), sq = xs.reduce((a, b) => a + b * b, 0);
  return xs.length && sq ? (sum * sum) / (xs.length * sq) : NaN;
};

interface Result {
  path: string; n: number; gbps: number; cpuPerGiB: number; cpuPerGiBEach: number[]; rssKiB: number[]; idleRssKiB: number[];
  rssPerTunnelKiB: number; threads: number[]; openP50ms: number; openP99ms: number; openMaxMs: number; opens: number; openFailed: number;
  openReset: number; openTimedOut: number; jain: number; cpuBusyCores: number;
  /** the proxies' threads: time waiting for a CPU over time on one (a loaded machine starves a one-thread loop) */
  schedWaitPerRun: number;
}

async function measure(p: Path, n: number): Promise<Result> {
  const pids = p.procs.map((c) => c.pid!);
  const idle = pids.map(status);
  const c0 = pids.map(cpu), s0 = pids.map(sched), t0 = Date.now();
  const run = iperf(p.port, n);
  let stopProbes = false;
  const opens: Open[] = [];
  let mid = idle;
  const probes = (async () => {
    await sleep(Math.min(1000, SECONDS * 300));
    while (!stopProbes && Date.now() - t0 < SECONDS * 500) await sleep(50); // RSS and threads mid-cell, all N connected
    mid = pids.map(status);
    const probeEnd = Date.now() + SECONDS * 400;
    while (!stopProbes && Date.now() < probeEnd) { opens.push(await openOnce(p.port)); await sleep(100); }
  })();
  const r = await run;
  stopProbes = true;
  await probes;
  const c1 = pids.map(cpu), s1 = pids.map(sched), wall = (Date.now() - t0) / 1000;
  const gib = r.bytes / 2 ** 30;
  const each = c1.map((x, i) => (x - c0[i]) / gib);
  const rss = mid.map((m) => m.rssKiB);
  const answered = opens.filter((x): x is number => typeof x === 'number');
  const res: Result = {
    path: p.name, n, gbps: r.gbps, cpuPerGiB: each.reduce((a, b) => a + b, 0), cpuPerGiBEach: each, rssKiB: rss, idleRssKiB: idle.map((m) => m.rssKiB),
    rssPerTunnelKiB: (rss.reduce((a, b) => a + b, 0) - idle.reduce((a, m) => a + m.rssKiB, 0)) / n, threads: mid.map((m) => m.threads),
    openP50ms: pct(answered, 0.5), openP99ms: pct(answered, 0.99), openMaxMs: Math.max(...answered), opens: opens.length,
    openFailed: opens.length - answered.length, openReset: opens.filter((x) => x === 'reset').length, openTimedOut: opens.filter((x) => x === 'timeout').length,
    jain: jain(r.perStream),
    cpuBusyCores: c1.reduce((a, x, i) => a + x - c0[i], 0) / wall,
    schedWaitPerRun: waitPerRun(s0, s1),
  };
  process.stderr.write(`  N=${n} ${p.name}: ${r.gbps.toFixed(2)} Gbit/s, ${res.cpuPerGiB.toFixed(2)} s/GiB, open p50/p99/max ${res.openP50ms.toFixed(1)}/${res.openP99ms.toFixed(1)}/${res.openMaxMs.toFixed(1)} ms (${res.opens} probes, ${res.openReset} reset, ${res.openTimedOut} timed out), Jain ${res.jain.toFixed(3)}\n`);
  await sleep(500); // let the streams' sockets close before the next measurement
  return res;
}

/** What limits a row, from its numbers: the cores, one proxy process's core, or neither (the load generator). */
function limit(r: Result): string {
  const maxEach = Math.max(...r.cpuPerGiBEach) * (r.gbps * 1e9 / 8 / 2 ** 30);
  if (maxEach > 0.9) return `one proxy process at ${maxEach.toFixed(2)} cores`;
  if (r.cpuBusyCores > 1.2) return `proxies ${r.cpuBusyCores.toFixed(2)} of 2 cores (iperf3 has the rest)`;
  return `iperf3 / kernel (proxies ${r.cpuBusyCores.toFixed(2)} cores)`;
}

async function main() {
  for (const bin of ['iperf3', 'haproxy', 'openssl']) if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) throw new Error(`${bin} is not installed (scripts/ensure-system-deps.js installs it as root)`);
  makeCerts();
  const dst = await freePort();
  await start('iperf3', ['-s', '-B', '127.0.0.1', '-p', String(dst)]);
  const defs: [string, () => Promise<Path>, string][] = [
    ['HAProxy splice', () => haproxy('HAProxy splice', dst, false), ''],
    ['HAProxy TLS middle hop', () => haproxy('HAProxy TLS middle hop', dst, true), ''],
    ['ours plaintext', () => ours('ours plaintext', dst, 'plaintext', POOL), 'HAProxy splice'],
    ['ours mTLS', () => ours('ours mTLS', dst, 'mtls', POOL), 'HAProxy TLS middle hop'],
    ['ours mtls-splice', () => ours('ours mtls-splice', dst, 'mtls-splice', POOL), 'HAProxy TLS middle hop'],
    // before the event pool (issue 52 item 2): the same gateways with a thread per spliced tunnel
    ['ours plaintext, thread per tunnel', () => ours('ours plaintext, thread per tunnel', dst, 'plaintext', 'thread'), 'HAProxy splice'],
    ['ours plaintext, pool of 1 thread', () => ours('ours plaintext, pool of 1 thread', dst, 'plaintext', 'pool:1'), 'HAProxy splice'],
    ['ours mtls-splice, thread per tunnel', () => ours('ours mtls-splice, thread per tunnel', dst, 'mtls-splice', 'thread'), 'HAProxy TLS middle hop'],
  ];
  const paths: Path[] = [];
  for (const [name, mk] of defs) if (!ONLY || ONLY.test(name) || name.startsWith('HAProxy')) paths.push(await mk());
  await sleep(500);
  const results: Result[] = [];
  for (const n of NS) for (const p of paths) results.push(await measure(p, n));
  const load = os.loadavg();
  const ref = new Map(defs.map(([n, , r]) => [n, r]));
  const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');
  const lines = [
    `Loopback, ${os.cpus().length} cores, load average ${load.map((x) => x.toFixed(1)).join(' ')} at the end; iperf3 -P N, ${SECONDS} s per cell; Node ${process.version}`,
    '', '| N | path | Gbit/s | x HAProxy | CPU s/GiB (gw A + gw B) | x HAProxy | RSS MiB per process | RSS KiB per tunnel | threads | open p50 / p99 ms (probes) | Jain | run-queue wait / CPU | limited by |',
    '|---|---|---|---|---|---|---|---|---|---|---|---|---|',
  ];
  for (const r of results) {
    const h = results.find((x) => x.n === r.n && x.path === ref.get(r.path));
    lines.push(`| ${r.n} | ${r.path} | ${f(r.gbps)} | ${h ? f(r.gbps / h.gbps) : '-'} | ${f(r.cpuPerGiB, 3)} (${r.cpuPerGiBEach.map((x) => f(x, 3)).join(' + ')}) | ${h ? f(r.cpuPerGiB / h.cpuPerGiB) : '-'} | ` +
      `${r.rssKiB.map((x) => f(x / 1024, 1)).join(' / ')} | ${f(r.rssPerTunnelKiB, 0)} | ${r.threads.join(' / ')} | ${f(r.openP50ms, 1)} / ${f(r.openP99ms, 1)} (${r.opens}${r.openReset ? `, ${r.openReset} reset without the byte` : ''}${r.openTimedOut ? `, ${r.openTimedOut} no byte in ${PROBE_MS / 1000} s` : ''}) | ${f(r.jain, 3)} | ${f(r.schedWaitPerRun)} | ${limit(r)} |`);
  }
  process.stdout.write(lines.join('\n') + '\n');
  const rev = spawnSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).stdout.trim();
  const out = path.resolve(__dirname, '../../../bench/results', 'concurrency.json');
  if (fs.existsSync(path.dirname(out))) fs.writeFileSync(out, JSON.stringify({ date: new Date().toISOString(), commit: rev, loadavg: load, seconds: SECONDS, streams: NS, results }, null, 1) + '\n');
  process.stderr.write(`raw: ${out}\n`);
}

const cleanup = () => { for (const c of children) { try { c.kill('SIGKILL'); } catch { /* gone */ } } fs.rmSync(tmp, { recursive: true, force: true }); };
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));
main().then(() => process.exit(0), (e) => { process.stderr.write(`bench failed: ${e.stack ?? e}\n`); process.exit(1); });
