/**
 * npm run bench:proxy — one table from one run, on loopback: iperf3 direct, HAProxy (tcp mode: default,
 * splice forced, TLS 1.3 on the middle hop) as a two-hop chain, and our two-gateway chain (plaintext, mTLS, and
 * mtls-splice: mutual TLS for the handshake and the header, then the already-encrypted payload spliced).
 * Gbit/s = median of BENCH_RUNS iperf3 runs of BENCH_SECONDS each (single stream); CPU s/GiB = user+system
 * CPU of the two proxy processes (all threads) per GiB carried.
 *
 * Interleaved: every path's processes are started first (idle ones cost nothing), then each round measures
 * every path once, the order rotating from round to round (A B C, B C A, ...), so a path's runs are spread
 * over the whole benchmark rather than bunched in one stretch of this machine's drifting speed. A ratio is
 * the median of the per-round ratios (the two paths of a round ran seconds apart), printed with the rounds'
 * range. Not pinned to CPUs: the iperf3 client and server and the two proxies of a chain are four busy
 * processes on this 2-core machine, so any affinity would serialize them rather than steady them.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { writePairConfigs } from './bench-pair';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const RUNS = Number(process.env.BENCH_RUNS ?? 3);
const STREAMS = Number(process.env.BENCH_STREAMS ?? 1);
const children = new Set<ChildProcess>();
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mmproxy-bench-'));

function have(bin: string): boolean { return spawnSync('sh', ['-c', `command -v ${bin}`]).status === 0; }
function sh(bin: string, args: string[]): string {
  const r = spawnSync(bin, args, { encoding: 'utf8', cwd: tmp });
  if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}
async function freePort(): Promise<number> {
  return new Promise((resolve) => { const s = net.createServer(); s.listen(0, '127.0.0.1', () => { const p = (s.address() as net.AddressInfo).port; s.close(() => resolve(p)); }); });
}
function start(bin: string, args: string[], marker?: string, env?: NodeJS.ProcessEnv): Promise<ChildProcess> {
  const c = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'], cwd: tmp, env: { ...process.env, ...env } });
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
function stop(c: ChildProcess): Promise<void> {
  return new Promise((r) => { if (c.exitCode !== null) return r(); c.once('exit', () => r()); c.kill('SIGTERM'); setTimeout(() => c.kill('SIGKILL'), 3000).unref(); });
}
/** user+system seconds of a process (all threads) */
function cpu(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const parts = f.slice(f.lastIndexOf(')') + 2).split(' ');
  return (Number(parts[11]) + Number(parts[12])) / 100; // clock ticks (USER_HZ = 100 on Linux)
}
async function sleep(ms: number) { return new Promise((r) => setTimeout(r, ms)); }

async function iperf(port: number): Promise<{ gbps: number; bytes: number }> {
  const out = await new Promise<string>((resolve, reject) => {
    const c = spawn('iperf3', ['-c', '127.0.0.1', '-p', String(port), '-t', String(SECONDS), '-P', String(STREAMS), '-J'], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(c);
    let o = '';
    c.stdout.on('data', (d) => { o += d; });
    const t = setTimeout(() => c.kill('SIGKILL'), (SECONDS + 20) * 1000);
    c.on('exit', () => { clearTimeout(t); children.delete(c); resolve(o); });
    c.on('error', reject);
  });
  const j = JSON.parse(out);
  if (j.error) throw new Error(`iperf3: ${j.error}`);
  return { gbps: j.end.sum_received.bits_per_second / 1e9, bytes: j.end.sum_received.bytes };
}

interface Row { name: string; gbps: number[]; cpuPerGiB: number[]; note?: string }

const ONLY = process.env.BENCH_ONLY ? new RegExp(process.env.BENCH_ONLY) : undefined;
/** A path under test: its entry port and proxy processes (running for the whole benchmark), and its runs. */
interface Path { row: Row; port: number; procs: ChildProcess[] }
const wanted = (name: string) => !ONLY || ONLY.test(name) || name.startsWith('direct');
async function measureOnce(p: Path, round: number): Promise<void> {
  const c0 = p.procs.reduce((s, x) => s + cpu(x.pid!), 0);
  const r = await iperf(p.port);
  const c1 = p.procs.reduce((s, x) => s + cpu(x.pid!), 0);
  p.row.gbps.push(r.gbps);
  if (p.procs.length) p.row.cpuPerGiB.push((c1 - c0) / (r.bytes / 2 ** 30));
  process.stderr.write(`  round ${round + 1}/${RUNS}: ${p.row.name}: ${r.gbps.toFixed(2)} Gbit/s\n`);
}

const median = (xs: number[]) => { if (!xs.length) return NaN; const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };
/** Per-round ratios a[i] / b[i] (both paths measured in the same round). */
const ratios = (a: number[], b: number[]) => a.map((x, i) => x / b[i]).filter(Number.isFinite);
/** Median of the per-round ratios. */
const mr = (a: number[], b: number[]) => median(ratios(a, b));
/** "median (min-max)" of the per-round ratios. */
const spread = (a: number[], b: number[]) => {
  const r = ratios(a, b);
  if (!r.length) return '-';
  return r.length > 1 ? `${median(r).toFixed(2)} (${Math.min(...r).toFixed(2)}-${Math.max(...r).toFixed(2)})` : median(r).toFixed(2);
};

function makeCerts() {
  const ext = (n: string, san: string) => fs.writeFileSync(path.join(tmp, `${n}.ext`), `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  sh('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=bench-ca',
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign']);
  for (const c of ['east', 'west']) {
    sh('openssl', ['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${c}.key`, '-out', `${c}.csr`, '-subj', `/CN=${c}`]);
    ext(c, `URI:spiffe://bench/cluster/${c}`);
    sh('openssl', ['x509', '-req', '-in', `${c}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${c}.pem`, '-days', '2', '-extfile', `${c}.ext`]);
    fs.writeFileSync(path.join(tmp, `${c}.bundle.pem`), fs.readFileSync(path.join(tmp, `${c}.pem`), 'utf8') + fs.readFileSync(path.join(tmp, `${c}.key`), 'utf8'));
  }
}

function haproxyCfg(file: string, listen: number, to: number, opts: { splice?: boolean; bindTls?: boolean; serverTls?: boolean }) {
  const lines = [
    'global', '  maxconn 1000', '  nbthread 1', 'defaults', '  mode tcp', '  timeout connect 5s', '  timeout client 60s', '  timeout server 60s',
    ...(opts.splice ? ['  option splice-request', '  option splice-response'] : []),
    'listen hop',
    `  bind 127.0.0.1:${listen}${opts.bindTls ? ` ssl crt ${tmp}/west.bundle.pem ca-file ${tmp}/ca.pem verify required ssl-min-ver TLSv1.3` : ''}`,
    `  server s 127.0.0.1:${to}${opts.serverTls ? ` ssl crt ${tmp}/east.bundle.pem ca-file ${tmp}/ca.pem verify required ssl-min-ver TLSv1.3 sni str(west)` : ''}`,
  ];
  fs.writeFileSync(file, lines.join('\n') + '\n');
}

async function haproxyChain(name: string, dst: number, opts: { splice?: boolean; tls?: boolean }): Promise<Path> {
  const row: Row = { name, gbps: [], cpuPerGiB: [] };
  if (!wanted(name)) return { row, port: 0, procs: [] };
  const [p1, p2] = [await freePort(), await freePort()];
  haproxyCfg(path.join(tmp, `${p2}.cfg`), p2, dst, { splice: opts.splice, bindTls: opts.tls });
  haproxyCfg(path.join(tmp, `${p1}.cfg`), p1, p2, { splice: opts.splice, serverTls: opts.tls });
  const h2 = await start('haproxy', ['-db', '-f', path.join(tmp, `${p2}.cfg`)]);
  const h1 = await start('haproxy', ['-db', '-f', path.join(tmp, `${p1}.cfg`)]);
  await sleep(300);
  return { row, port: p1, procs: [h1, h2] };
}

/** `env`: for both gateways (MMPROXY_TLS_RECORDS=openssl relays mTLS on OpenSSL's record layer, as before). */
async function oursChain(name: string, dst: number, tlsMode: 'plaintext' | 'mtls' | 'mtls-splice', env?: NodeJS.ProcessEnv): Promise<Path> {
  const row: Row = { name, gbps: [], cpuPerGiB: [] };
  if (!wanted(name)) return { row, port: 0, procs: [] };
  const ports = await Promise.all(Array.from({ length: 6 }, freePort));
  const { west, east } = writePairConfigs(tmp, ports, tlsMode);
  const runner = path.join(__dirname, 'gw-runner.js');
  const b = await start(process.execPath, [runner, west, String(dst)], 'ready', env);
  const a = await start(process.execPath, [runner, east, String(dst)], 'ready', env);
  return { row, port: ports[0], procs: [a, b] };
}

async function main() {
  for (const bin of ['iperf3', 'haproxy', 'openssl']) if (!have(bin)) throw new Error(`${bin} is not installed (scripts/ensure-system-deps.js installs it as root)`);
  makeCerts();
  const dst = await freePort();
  const server = await start('iperf3', ['-s', '-B', '127.0.0.1', '-p', String(dst)]);
  await sleep(300);
  const paths: Path[] = [
    { row: { name: 'direct (no proxy)', gbps: [], cpuPerGiB: [] }, port: dst, procs: [] },
    await haproxyChain('HAProxy chain, tcp mode (default)', dst, {}),
    await haproxyChain('HAProxy chain, splice-request/response', dst, { splice: true }),
    await haproxyChain('HAProxy chain, TLS 1.3 middle hop', dst, { tls: true }),
    await oursChain('migration-mesh chain, plaintext tunnel', dst, 'plaintext'),
    await oursChain('migration-mesh chain, mTLS 1.3 tunnel', dst, 'mtls'),
    await oursChain('migration-mesh chain, mtls-splice (authenticated, payload spliced)', dst, 'mtls-splice'),
    await oursChain('migration-mesh chain, mTLS 1.3 tunnel on OpenSSL\'s record layer (before)', dst, 'mtls', { MMPROXY_TLS_RECORDS: 'openssl' }),
  ];
  const active = paths.filter((p) => p.port !== 0);
  for (let round = 0; round < RUNS; round++) {
    for (let k = 0; k < active.length; k++) await measureOnce(active[(k + round) % active.length], round);
  }
  for (const p of paths) for (const c of p.procs) await stop(c);
  await stop(server);
  const rows = paths.map((p) => p.row);

  const f = (x: number, d = 2) => (Number.isFinite(x) ? x.toFixed(d) : '-');
  const cmp = (ours: Row, ref: Row, label: string) =>
    `${label}: ${spread(ours.gbps, ref.gbps)} tput, ${spread(ours.cpuPerGiB, ref.cpuPerGiB)} CPU/GiB`;
  const lines = [
    `Loopback, ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? ''}, load average ${os.loadavg()[0].toFixed(1)} at the end; iperf3 ${SECONDS} s x ${RUNS} interleaved rounds, ${STREAMS} stream(s); ratios: median of the per-round ratios (range); Node ${process.version}; ${spawnSync('haproxy', ['-v'], { encoding: 'utf8' }).stdout.split('\n')[0].replace(/ - https.*/, '')}`,
    '',
    '| path | Gbit/s (median) | rounds | x direct | ours / HAProxy (throughput, CPU per GiB; >1 tput and <1 CPU is better) | proxy CPU s per GiB |',
    '|---|---|---|---|---|---|',
  ];
  for (const [i, r] of rows.entries()) {
    const g = median(r.gbps);
    let vs = '';
    if (i === 4) vs = `${cmp(r, rows[2], 'vs splice')}; ${cmp(r, rows[1], 'vs default')}`;
    if (i === 5 || i === 6 || i === 7) vs = cmp(r, rows[3], 'vs TLS');
    lines.push(`| ${r.name} | ${f(g)} | ${r.gbps.map((x) => f(x, 1)).join(' / ')} | ${spread(r.gbps, rows[0].gbps)} | ${vs} | ${i === 0 ? '-' : f(median(r.cpuPerGiB), 3)} |`);
  }
  lines.push('', `Own TLS records vs OpenSSL's (mTLS tunnel): throughput x${spread(rows[5].gbps, rows[7].gbps)}, CPU per GiB x${spread(rows[5].cpuPerGiB, rows[7].cpuPerGiB)}`);
  lines.push(`TLS-in-TLS cost (ours, mTLS vs plaintext tunnel): throughput x${spread(rows[5].gbps, rows[4].gbps)}, CPU per GiB x${spread(rows[5].cpuPerGiB, rows[4].cpuPerGiB)}`);
  lines.push(...goals(rows), '', ...cipherCost(median(rows[5].cpuPerGiB)));
  process.stdout.write(lines.join('\n') + '\n');
}

/**
 * What the cipher alone costs here: `openssl speed -evp` on 16 KiB blocks (one TLS record), as seconds of CPU to
 * encrypt and then decrypt one GiB (the chain does both, once each), next to the mTLS chain's proxy CPU.
 */
function cipherCost(mtlsCpu: number): string[] {
  const out = ['Cipher cost on this machine (openssl speed -evp, 16 KiB blocks; encrypt + decrypt 1 GiB once each):'];
  for (const c of ['aes-128-gcm', 'aes-256-gcm', 'chacha20-poly1305']) {
    const r = spawnSync('openssl', ['speed', '-seconds', '1', '-bytes', '16384', '-evp', c], { encoding: 'utf8' });
    const m = /\s([\d.]+)k\s*$/m.exec(r.stdout ?? '');
    if (!m) { out.push(`- ${c}: openssl speed gave no figure`); continue; }
    const bps = Number(m[1]) * 1000;
    const sPerGiB = 2 * 2 ** 30 / bps;
    out.push(`- ${c}: ${(bps * 8 / 1e9).toFixed(1)} Gbit/s per core, ${sPerGiB.toFixed(2)} s per GiB encrypted + decrypted` +
      (c === 'aes-128-gcm' ? ` (the tunnel's suite; the mTLS chain spends ${Number.isFinite(mtlsCpu) ? mtlsCpu.toFixed(2) : '-'} s/GiB in all)` : ''));
  }
  return out;
}

/** The issue-17 goals, as ratios measured in this run (each line says whether it is met). */
function goals(rows: Row[]): string[] {
  const [, , , hTls, plain, mtls, spl] = rows;
  const c = (r: Row) => median(r.cpuPerGiB);
  const chk = (ok: boolean) => (Number.isFinite(Number(ok)) && ok ? 'met' : 'NOT met');
  const f = (x: number) => (Number.isFinite(x) ? x.toFixed(2) : '-');
  return [
    '',
    'Goals (ratios from this run):',
    `- mtls-splice vs plaintext chain: throughput x${f(mr(spl.gbps, plain.gbps))} (goal >= 0.95: ${chk(mr(spl.gbps, plain.gbps) >= 0.95)}), ` +
      `CPU per GiB x${f(mr(spl.cpuPerGiB, plain.cpuPerGiB))} (goal <= 1.10: ${chk(mr(spl.cpuPerGiB, plain.cpuPerGiB) <= 1.1)})`,
    `- mtls-splice vs HAProxy TLS chain: throughput x${f(mr(spl.gbps, hTls.gbps))} (goal >= 3: ${chk(mr(spl.gbps, hTls.gbps) >= 3)})`,
    `- mTLS vs HAProxy TLS chain: throughput x${f(mr(mtls.gbps, hTls.gbps))} (goal >= 2: ${chk(mr(mtls.gbps, hTls.gbps) >= 2)}), ` +
      `proxy CPU ${f(c(mtls))} s/GiB (goal <= 1.8: ${chk(c(mtls) <= 1.8)})`,
  ];
}

const cleanup = () => { for (const c of children) { try { c.kill('SIGKILL'); } catch { /* gone */ } } fs.rmSync(tmp, { recursive: true, force: true }); };
process.on('exit', cleanup);
process.on('SIGINT', () => process.exit(130));
main().then(() => process.exit(0), (e) => { process.stderr.write(`bench failed: ${e.stack ?? e}\n`); process.exit(1); });
