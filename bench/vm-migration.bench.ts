/**
 * `npm run bench:vm` (issue 30 part 3): real QEMU 10 live migrations (TCG guest, mutual TLS, 4 multifd channels)
 * between two clusters' handler namespaces, through each gateway mode and over a direct veth pair, from one
 * run: several interleaved rounds (direct, mtls-splice, mtls, plaintext, then again), the median of each
 * mode's total time, downtime and MiB moved, and its total (and arrival) time as a ratio to direct: the median
 * of the per-round ratios (each mode against the same round's direct run, so load drifting across rounds on
 * this shared machine cancels out) with their min-max spread, after one warm-up migration per mode. The lab is the test's
 * (test/support/vm-lab.ts); run as root, under `flock /tmp/mm-net.lock` beside other network tests.
 * MM_VM_ROUNDS (default 3) sets the rounds. MM_VM_CPUS=split runs the two QEMUs on CPU 0 and the two gateway
 * runtimes on CPU 1 (the gateways on a core of their own, as on gateway nodes; direct then has its two QEMUs
 * on CPU 0 alike); default: every process on every CPU. Each mode's CPU column is what the whole machine
 * spent during the migration (/proc/stat), and the gateways' own share of it. Writes the table to
 * bench/results/vm-migration.json only with MM_RECORD_BENCH=1.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { qemuVersion } from '../test/support/qemu-guest';
import { MigrationResult, PathMode, VmMigrationLab, vmLabSupport } from '../test/support/vm-lab';

const ROUNDS = Number(process.env.MM_VM_ROUNDS ?? 3);
const MODES: PathMode[] = ['direct', 'mtls-splice', 'mtls', 'plaintext'];
const support = vmLabSupport();
const d = support.ok ? describe : describe.skip;
if (!support.ok) console.warn(`[bench:vm] SKIPPED: ${support.reason}`);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};

d('bench: VM live migration per datapath mode vs a direct veth pair', () => {
  // anonymous RAM, as a VM's: a file-backed target loads pages slower and would hide the gateways' cost (VmShape.ram)
  const shape = { memMiB: 256, fillMiB: 64, dirtyMiB: 2, cpu: 'qemu64', ram: 'anonymous' as const };
  const split = process.env.MM_VM_CPUS === 'split';
  const lab = new VmMigrationLab(shape, 4, console.log, 'one-segment', split ? { qemu: '0', gateway: '1' } : {});
  afterAll(async () => { await lab.cleanup(); }, 60_000);

  test('interleaved rounds, medians and ratios', async () => {
    await lab.setup();
    await lab.boot(0);
    // one warm-up migration per mode, not counted: the run's first migrations (the freshly booted guest, the
    // first gateways) took 1.1-2.5 s where later ones of the same mode took 0.5-1.1 s, and the first is always
    // direct's, which flattered every gateway mode's first-round ratio
    const completed = async (m: PathMode, what: string): Promise<MigrationResult> => {
      const r = await lab.migrate(m);
      if (r.info.status !== 'completed') throw new Error(`${m} ${what}: ${r.info.status} ${r.info.reason ?? ''}`);
      return r;
    };
    for (const m of MODES) {
      const r = await completed(m, 'warm-up');
      console.log(`[bench:vm] warm-up ${m}: total ${r.info.totalMs} ms, arrived ${r.arrivedMs} ms (not counted)`);
    }
    const runs: Record<string, MigrationResult[]> = Object.fromEntries(MODES.map((m) => [m, []]));
    for (let round = 0; round < ROUNDS; round++) {
      for (const m of MODES) {
        const r = await completed(m, `round ${round}`);
        runs[m].push(r);
        console.log(`[bench:vm] round ${round + 1} ${m}: total ${r.info.totalMs} ms, arrived ${r.arrivedMs} ms, CPU ${r.cpuMs} ms (gateways ${r.gatewayCpuMs}), downtime ${r.info.downtimeMs} ms, ${((r.info.transferredKiB ?? 0) / 1024).toFixed(1)} MiB, RAM equal ${r.ramEqual}${r.ramDiff ? ` (${r.ramDiff})` : ''}`);
      }
    }
    // each round's ratio to that round's direct run (the load on this shared machine drifts between rounds), then
    // the median of those ratios and their spread; times, downtime and MiB as medians over the rounds
    const perRound = (m: PathMode, f: (r: MigrationResult) => number) => runs[m].map((r, i) => f(r) / f(runs.direct[i]));
    const spread = (xs: number[]) => ({ median: +median(xs).toFixed(2), min: +Math.min(...xs).toFixed(2), max: +Math.max(...xs).toFixed(2) });
    const rows = MODES.map((m) => ({
      mode: m,
      totalMs: median(runs[m].map((r) => r.info.totalMs ?? NaN)),
      totalRatio: spread(perRound(m, (r) => r.info.totalMs ?? NaN)),
      arrivedMs: median(runs[m].map((r) => r.arrivedMs ?? NaN)),
      arrivedRatio: spread(perRound(m, (r) => r.arrivedMs ?? NaN)),
      downtimeMs: median(runs[m].map((r) => r.info.downtimeMs ?? NaN)),
      cpuMs: median(runs[m].map((r) => r.cpuMs ?? NaN)),
      gatewayCpuMs: median(runs[m].map((r) => r.gatewayCpuMs ?? NaN)),
      mib: +median(runs[m].map((r) => (r.info.transferredKiB ?? NaN) / 1024)).toFixed(1),
      ramEqual: `${runs[m].filter((r) => r.ramEqual).length}/${runs[m].length}`,
      resumed: `${runs[m].filter((r) => r.resumed).length}/${runs[m].length}`,
    }));
    const x = (s: { median: number; min: number; max: number }) => `${s.median.toFixed(2)} (${s.min.toFixed(2)}-${s.max.toFixed(2)})`;
    const load = os.loadavg().map((l) => l.toFixed(1)).join(' ');
    console.log([
      `[bench:vm] ${new Date().toISOString()}, load average ${load}; ${ROUNDS} interleaved rounds (${MODES.join(', ')}), medians; ratios: median of the per-round ratios to that round's direct run (min-max)`,
      `  QEMU ${qemuVersion()}, guest ${shape.memMiB} MiB (${shape.fillMiB} MiB random, ${shape.dirtyMiB} MiB rewritten per second), TCG ${shape.cpu}, TLS + ${lab.channels} multifd channels, ${os.cpus().length} CPUs (shared)` +
        `; ${split ? 'QEMUs on CPU 0, gateways on CPU 1 (MM_VM_CPUS=split)' : 'every process on every CPU'}`,
      `  ${'mode'.padEnd(12)} ${'total ms'.padStart(9)} ${'total x direct'.padStart(18)} ${'arrived ms'.padStart(10)} ${'arrived x direct'.padStart(18)} ${'CPU ms'.padStart(7)} ${'gateways'.padStart(8)} ${'downtime ms'.padStart(11)} ${'MiB'.padStart(7)}  RAM equal  resumed`,
      ...rows.map((r) => `  ${r.mode.padEnd(12)} ${String(r.totalMs).padStart(9)} ${x(r.totalRatio).padStart(18)} ${String(r.arrivedMs).padStart(10)} ${x(r.arrivedRatio).padStart(18)} ${String(r.cpuMs).padStart(7)} ${String(r.gatewayCpuMs).padStart(8)} ${String(r.downtimeMs).padStart(11)} ${String(r.mib).padStart(7)}  ${r.ramEqual.padStart(9)}  ${r.resumed.padStart(7)}`),
    ].join('\n'));
    const outDir = process.env.MM_RECORD_BENCH === '1' ? path.join(__dirname, 'results') : os.tmpdir();
    fs.writeFileSync(path.join(outDir, 'vm-migration.json'), `${JSON.stringify({
      bench: 'bench/vm-migration.bench.ts', rounds: ROUNDS, shape, layout: split ? 'split' : 'all', channels: lab.channels, cpus: os.cpus().length, kernel: os.release(), qemu: qemuVersion(), guestKernel: lab.guest.kernelVersion, date: new Date().toISOString(), loadavg: os.loadavg(), rows,
    }, null, 2)}\n`);
  }, 1_800_000);
});
