/**
 * Synthesis benchmark: wall time and peak memory to validate, plan and synthesize fleets of 10, 100
 * and 1000 clusters (gateway mode, 10 nodes each), each size in a fresh child process so the peak RSS
 * is that run's own. Baseline in the same run: plain cdk8s synthesizing the same objects (precomputed,
 * no validation or planning): what a user writing the YAML with cdk8s by hand would pay.
 *
 *   npm run bench            (prints tables; writes bench/results/synth.json, unless BENCH_SIZES is set)
 *   BENCH_SIZES=100 BENCH_ROUNDS=5 npm run bench
 *   BENCH_CPU=1 npm run bench   (every child on CPU 1 only: the single-core comparison; writes synth-1cpu.json)
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { PARTS, busyMs, profileBreakdown } from './profile';

export function fleetOfSize(n: number): any {
  return {
    apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Fleet', metadata: { name: `bench${n}` },
    spec: {
      crossClusterNetwork: { attachment: { type: 'macvlan', master: 'eth2' }, addresses: { pool: ['172.16.0.0/20'], prefixLength: 20 } },
      migrationNetwork: { attachment: { type: 'bridge', bridge: 'br-mig', vlan: 100 }, supernet: '10.0.0.0/10' },
      clusters: Array.from({ length: n }, (_, i) => ({ name: `c${String(i).padStart(4, '0')}`, nodes: 10 })),
    },
  };
}

interface Round { ours: Row; base: Row; validate: Row }
interface Row {
  clusters: number; tool: string; ms: number; peakMiB: number; files: number; outMiB: number;
  /** ours only: planning the fleet (validation, addresses) and the writer's transaction (build, render, write, cluster by cluster) */
  renderMs?: number; writeMs?: number;
}
type Mode = 'ours' | 'baseline' | 'validate';

/** How many files under `dir` and their bytes (read from their sizes: holding them would count in the peak RSS). */
function treeSize(dir: string, skip = ''): { files: number; bytes: number } {
  let files = 0;
  let bytes = 0;
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) {
        walk(path.join(d, e.name));
      } else if (e.name !== skip) {
        files++;
        bytes += fs.statSync(path.join(d, e.name)).size;
      }
    }
  };
  walk(dir);
  return { files, bytes };
}

/**
 * Where the children run. Default (`BENCH_CPU` unset or `all`): every child on every CPU of the machine, as a
 * user's synth runs; each path gets the same CPUs (plain cdk8s uses one, synth also its writer thread, which
 * creates files on a second core while the main thread builds the next cluster). `BENCH_CPU=1` pins every
 * child to that one CPU (`taskset -c`): the single-core comparison, where synth starts no writer thread.
 * Unpinned where `taskset` is missing or refuses.
 */
function pinning(): string[] {
  const cpu = process.env.BENCH_CPU ?? 'all';
  if (cpu === 'all' || cpu === 'none') return [];
  return spawnSync('taskset', ['-c', cpu, 'true']).status === 0 ? ['taskset', '-c', cpu] : [];
}
const PIN = pinning();

/** Children's output trees, removed when the whole bench has run (see runChild). */
const written: string[] = [];
const KEEP_MARK = 'mm-bench-keep ';
process.on('exit', () => { for (const d of written) fs.rmSync(d, { recursive: true, force: true }); });

/** Run a child (`cmd`, then its arguments); its output tree is kept for the end, its other stderr passed on. Its last stdout line. */
function runChildProcess(cmd: string[], env: NodeJS.ProcessEnv = process.env): string {
  const r = spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8', maxBuffer: 1 << 24, timeout: 900_000, env });
  for (const line of (r.stderr ?? '').split('\n')) {
    if (line.startsWith(KEEP_MARK)) written.push(line.slice(KEEP_MARK.length));
    else if (line.trim()) process.stderr.write(`${line}\n`);
  }
  if (r.status !== 0) throw new Error(`bench child ${cmd.slice(-3).join(' ')}: ${r.error?.message ?? `exit ${r.status}`}`);
  return r.stdout.trim().split('\n').pop() ?? '';
}

function child(mode: Mode, n: number, objectsFile = ''): Row {
  // the previous child's written files to disk first (untimed): synth's one flush then pays for its own writes, not
  // for the dirty pages plain cdk8s (which never flushes) left behind a moment before
  spawnSync('sync', { stdio: 'ignore' });
  return JSON.parse(runChildProcess([...PIN, process.execPath, '--max-old-space-size=8192', __filename, '--child', mode, String(n), objectsFile]));
}

function runChild(mode: Mode, n: number): void {
  const { renderFleetDirectory, writeFleetDirectories } = require('../cli/fleet-directory');
  const { synthesizeFleet } = require('../cli/synthesize-fleet');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-bench-'));
  const doc = fleetOfSize(n);
  let size = { files: 0, bytes: 0 };
  let ms: number;
  let renderMs: number | undefined;
  let writeMs: number | undefined;
  if (mode === 'ours') {
    const t0 = process.hrtime.bigint();
    // what synthesizeFleetToDirectory (and the CLI's synth) does, in its two halves: plan the fleet once, then the
    // writer's transaction, which builds, renders and writes one cluster at a time (temp files, one flush, renames)
    const pending = renderFleetDirectory({ fleet: doc, outdir: path.join(tmp, 'out'), svg: false });
    const t1 = process.hrtime.bigint();
    const written = writeFleetDirectories([pending])[0];
    const t2 = process.hrtime.bigint();
    ms = Number(t2 - t0) / 1e6; renderMs = Number(t1 - t0) / 1e6; writeMs = Number(t2 - t1) / 1e6;
    if (process.env.MM_BENCH_PROFILED) { // profiled (printProfiles): the timed part only; the parent removes the tree
      process.stderr.write(`${KEEP_MARK}${tmp}\n`);
      return;
    }
    size = treeSize(written.dir, '.migration-mesh.manifest'); // outside the timed part: what was written (the manifest not counted)
  } else if (mode === 'validate') {
    // what `migration-mesh validate` does for one fleet: synth's synthesis in memory without rendering YAML
    const t0 = process.hrtime.bigint();
    synthesizeFleet(doc, { render: false });
    ms = Number(process.hrtime.bigint() - t0) / 1e6;
  } else {
    // the same objects, precomputed by the parent and read outside the timed section; then time plain cdk8s
    const objects = new Map<string, any[]>(JSON.parse(fs.readFileSync(process.argv[5], 'utf8')));
    const { App, Chart, ApiObject, YamlOutputType } = require('cdk8s');
    const t0 = process.hrtime.bigint();
    const app = new App({ outdir: path.join(tmp, 'out'), yamlOutputType: YamlOutputType.FOLDER_PER_CHART_FILE_PER_RESOURCE });
    for (const [cluster, objs] of objects) {
      const chart = new Chart(app, cluster, { disableResourceNameHashes: true });
      objs.forEach((o: any, i: number) => new ApiObject(chart, `o${i}`, o));
    }
    app.synth();
    ms = Number(process.hrtime.bigint() - t0) / 1e6;
    size = treeSize(path.join(tmp, 'out'));
  }
  const peakMiB = process.resourceUsage().maxRSS / 1024;
  // the tree stays until the whole bench has run (the parent removes it): ext4 steps over inodes deleted in the
  // last 60-300 s when it allocates new ones (recently_deleted), so removing 15000 files here made the next
  // children's file creation slower by an amount that depended on what ran before them
  if (mode === 'validate') fs.rmSync(tmp, { recursive: true, force: true });
  else process.stderr.write(`${KEEP_MARK}${tmp}\n`);
  const tool = { ours: 'migration-mesh synth', validate: 'migration-mesh validate', baseline: 'plain cdk8s (same objects)' }[mode];
  const row: Row = { clusters: n, tool, ms, peakMiB, files: size.files, outMiB: size.bytes / 1048576, renderMs, writeMs };
  console.log(JSON.stringify(row));
}

const median = (xs: number[]): number => {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};
/** "median (min-max of the rounds)" */
const spread = (xs: number[], digits = 2): string => (xs.length > 1
  ? `${median(xs).toFixed(digits)} (${Math.min(...xs).toFixed(digits)}-${Math.max(...xs).toFixed(digits)})`
  : median(xs).toFixed(digits));

/**
 * Every size in rounds; each round runs the three paths one after another (ours, plain cdk8s, validate), the
 * order rotating from round to round so no path always runs first, warm or cold. A ratio is the median of the
 * per-round ratios (the two paths of one round ran seconds apart, under the same load), with the rounds'
 * range beside it: the spread says how much to trust it. BENCH_SIZES (10,100,1000), BENCH_ROUNDS (3).
 */
function main(): void {
  const sizes = (process.env.BENCH_SIZES ?? '10,100,1000').split(',').map(Number);
  const rounds = Number(process.env.BENCH_ROUNDS ?? 3);
  const startLoad = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  const out: { clusters: number; rounds: Round[] }[] = [];
  for (const n of sizes) {
    const objectsFile = path.join(os.tmpdir(), `mm-bench-objects-${process.pid}.json`);
    const { synthesizeFleet } = require('../cli/synthesize-fleet');
    fs.writeFileSync(objectsFile, JSON.stringify([...synthesizeFleet(fleetOfSize(n)).objects.entries()]));
    const rs: Round[] = [];
    for (let r = 0; r < rounds; r++) {
      const order: Mode[] = (['ours', 'baseline', 'validate'] as Mode[]).map((_, i, a) => a[(i + r) % a.length]);
      const got: Partial<Record<Mode, Row>> = {};
      for (const m of order) got[m] = child(m, n, m === 'baseline' ? objectsFile : '');
      rs.push({ ours: got.ours!, base: got.baseline!, validate: got.validate! });
      process.stderr.write(`  ${n} clusters, round ${r + 1}/${rounds}: ours ${got.ours!.ms.toFixed(0)} ms, cdk8s ${got.baseline!.ms.toFixed(0)} ms, validate ${got.validate!.ms.toFixed(0)} ms\n`);
    }
    fs.rmSync(objectsFile, { force: true });
    out.push({ clusters: n, rounds: rs });
  }
  const med = (rs: Round[], f: (x: Round) => number, d = 0): string => median(rs.map(f)).toFixed(d);
  console.log(`Synthesis benchmark, ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC (node ${process.version}, ${os.cpus().length} cores, ` +
    `load average ${startLoad} at the start, ${os.loadavg().map((l) => l.toFixed(2)).join(' ')} at the end; children ${PIN.length ? `pinned to CPU ${PIN[2]} (no writer thread)` : `on all ${os.availableParallelism()} CPUs`}; ` +
    `gateway mode, 10 nodes/cluster; ${rounds} interleaved rounds, each path in a fresh process; times are medians, ratios the median of per-round ratios (min-max))`);
  console.log([
    '| clusters | files | output MiB | migration-mesh ms | peak MiB | plain cdk8s ms | peak MiB | synth / cdk8s | validate ms | validate / synth |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|',
    ...out.map(({ clusters, rounds: rs }) => `| ${clusters} | ${rs[0].ours.files} | ${rs[0].ours.outMiB.toFixed(1)} | ${med(rs, (x) => x.ours.ms)} | ${med(rs, (x) => x.ours.peakMiB)} | ` +
      `${med(rs, (x) => x.base.ms)} | ${med(rs, (x) => x.base.peakMiB)} | ${spread(rs.map((x) => x.ours.ms / x.base.ms))} | ${med(rs, (x) => x.validate.ms)} | ${spread(rs.map((x) => x.validate.ms / x.ours.ms))} |`),
  ].join('\n'));
  console.log('\nsynth\'s two halves (medians): planning the fleet once (validation, addresses, GitOps wiring), then the writer\'s ' +
    'transaction, which builds, renders and writes one cluster at a time, flushes once and renames');
  console.log([
    '| clusters | plan ms | build + render + write ms |',
    '|---:|---:|---:|',
    ...out.map(({ clusters, rounds: rs }) => `| ${clusters} | ${med(rs, (x) => x.ours.renderMs!)} | ${med(rs, (x) => x.ours.writeMs!)} |`),
  ].join('\n'));
  printProfiles(sizes.filter((n) => (process.env.BENCH_PROFILE ?? '100,1000').split(',').map(Number).includes(n)));
  if (process.env.BENCH_SIZES) return; // a partial run does not replace the recorded one
  const resDir = path.join(__dirname, '..', '..', 'bench', 'results');
  fs.mkdirSync(resDir, { recursive: true });
  fs.writeFileSync(path.join(resDir, PIN.length ? 'synth-1cpu.json' : 'synth.json'), `${JSON.stringify(out, null, 2)}\n`);
}

/**
 * One more `synth` run per size under `node --cpu-prof`, its samples split into the pipeline's parts
 * (bench/profile.ts). The profiler slows the run down by a few percent; the shares are what counts.
 */
function printProfiles(sizes: number[]): void {
  if (!sizes.length) return;
  const cols = sizes.map((n) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-bench-prof-'));
    runChildProcess([process.execPath, '--max-old-space-size=8192', '--cpu-prof', '--cpu-prof-dir', dir, __filename, '--child', 'ours', String(n)],
      { ...process.env, MM_BENCH_PROFILED: '1' });
    // one profile per thread, named CPU.<date>.<time>.<pid>.<thread id>.<seq>.cpuprofile: the main thread is 0
    const profiles = fs.readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
    const main = profiles.find((f) => f.split('.')[4] === '0')!;
    const parts = profileBreakdown(path.join(dir, main));
    const threadMs = profiles.filter((f) => f !== main).reduce((sum, f) => sum + busyMs(path.join(dir, f)), 0);
    fs.rmSync(dir, { recursive: true, force: true });
    return { n, parts, threadMs, total: [...parts.values()].reduce((a, b) => a + b, 0) };
  });
  console.log('\nWhere synth\'s time goes: a CPU profile (node --cpu-prof) of one synth run per size, each sample given to the innermost ' +
    'frame that names a part (bench/profile.ts); the whole process (module loading included) up to the end of the write');
  console.log([
    `| part | ${cols.map((c) => `${c.n} clusters ms | share`).join(' | ')} |`,
    `|---|${cols.map(() => '---:|---:').join('|')}|`,
    ...PARTS.map((part) => `| ${part} | ${cols.map((c) => `${c.parts.get(part)!.toFixed(0)} | ${(100 * c.parts.get(part)! / c.total).toFixed(1)}%`).join(' | ')} |`),
    `| total | ${cols.map((c) => `${c.total.toFixed(0)} | 100%`).join(' | ')} |`,
    `| ${['writer thread, beside the total (files it created on another core)', ...cols.flatMap((c) => [c.threadMs.toFixed(0), ''])].join(' | ')} |`,
  ].join('\n'));
}

if (require.main === module) {
  if (process.argv[2] === '--child') runChild(process.argv[3] as Mode, Number(process.argv[4]));
  else main();
}
