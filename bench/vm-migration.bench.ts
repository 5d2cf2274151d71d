/**
 * `npm run bench:vm` (issue 30 part 3, issue 52 item 4): real QEMU 10 live migrations of VMS guests at once (`--vms N`
 * or MM_BENCH_VMS, default 4; 1 is the single-VM bench of before, the same code) (TCG guest, mutual TLS, 4 multifd channels)
 * between two clusters' handler namespaces, through each gateway mode and over a direct veth pair, from one
 * run: several interleaved rounds (direct, mtls-splice, mtls, plaintext, then again), the median of each
 * mode's total time, downtime and MiB moved, and its total (and arrival) time as a ratio to direct: the median
 * of the per-round ratios (each mode against the same round's direct run, so load drifting across rounds on
 * this shared machine cancels out) with their min-max spread, after one warm-up migration per mode. The lab is the test's
 * (test/support/vm-lab.ts); run as root, under `flock /tmp/mm-net.lock` beside other network tests.
 * MM_VM_ROUNDS (default 3) sets the rounds. MM_VM_CPUS=split runs the two QEMUs on CPU 0 and the two gateway
 * runtimes on CPU 1 (the gateways on a core of their own, as on gateway nodes; direct then has its two QEMUs
 * on CPU 0 alike); default: every process on every CPU. Each mode's CPU column is what the whole machine
 * spent during the migration (/proc/stat), and the gateways' own share of it. A second table gives the cost that
 * holds on any machine (issue 39 part 4): CPU-seconds per GiB migrated, from `migrate` until the target completed,
 * counted apart for the source QEMU (its migration threads, and apart the threads that stayed: vCPU and main
 * loop), the target QEMU, the two gateways and kernel threads, each per round against that round's direct run
 * (see partsPerGib for what is left out and why). Writes both tables to bench/results/vm-migration.json only
 * with MM_RECORD_BENCH=1. MM_VM_MODES (e.g. `mtls-splice`) runs direct and those modes only;
 * MM_VM_PERF_WINDOWS=<file> writes when each migration ran and its pids, for `perf record -a -k CLOCK_MONOTONIC`.
 * MM_VM_PREALLOC=1 starts every QEMU with its RAM locked and faulted in (`-overcommit mem-lock=on`), so the
 * target's first touches of its RAM, whose cost varied tenfold here from one migration to the next in every
 * mode, fall outside the measured window (not what a KubeVirt target does; default off).
 * Every round also runs `haproxy-chain`: HAProxy in both gateway namespaces in place of the runtimes (test/support/vm-lab.ts
 * haproxyConfig), the peer a user would pick instead; each gateway mode's gateway CPU per GiB is also a ratio to it.
 * MM_VM_MEM_MIB (default 128 with several VMs, 256 with one) sets each guest's RAM, a quarter of it random.
 * MM_VM_AB=<lever,...> (issue 39 section 4) adds a second mtls-splice run to every round, `mtls-splice+ab`, with the
 * levers on, every other run with them off (the two arms swap places every other round): `notrack`, the tunnels
 * taken out of conntrack; `bigtcp`, BIG TCP sizes on the gateways' links (see `levers`; docs/dev/lab/2026-11-28-gateway-cpu-per-gib.md tells
 * of a copying relay tried with it, whose levers are not in the tree). Every migration then prints,
 * per link of the gateway and handler namespaces that sent more than 100 packets, the packets it sent and their mean size.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { qemuVersion } from '../test/support/qemu-guest';
import { BatchResult, PathMode, VmMigrationLab, vmLabSupport } from '../test/support/vm-lab';

const ROUNDS = Number(process.env.MM_VM_ROUNDS ?? 3);
const VMS = Number(process.env.MM_BENCH_VMS ?? 4);
const PERF_WINDOWS = process.env.MM_VM_PERF_WINDOWS;
const PREALLOC = process.env.MM_VM_PREALLOC === '1';
// MM_VM_MODES=mtls-splice,plaintext: direct and those only (default: every mode and the HAProxy chain)
const PATHS: PathMode[] = ['direct', ...(process.env.MM_VM_MODES?.split(',') as PathMode[] ?? ['mtls-splice', 'mtls', 'plaintext', 'haproxy-chain']).filter((m) => m !== 'direct')];
const AB = process.env.MM_VM_AB ? process.env.MM_VM_AB.split(',') : [];
/** The runs of a round: each path mode, and with MM_VM_AB the levers' arm `mtls-splice+ab` after the plain one. */
type Arm = PathMode | 'mtls-splice+ab';
const MODES: Arm[] = AB.length ? [...PATHS.filter((m) => m !== 'mtls-splice'), 'mtls-splice', 'mtls-splice+ab'] : PATHS;
const pathOf = (a: Arm): PathMode => (a === 'mtls-splice+ab' ? 'mtls-splice' : a);
const support = vmLabSupport();
const d = support.ok ? describe : describe.skip;
if (!support.ok) console.warn(`[bench:vm] SKIPPED: ${support.reason}`);
if (!(Number.isInteger(VMS) && VMS >= 1)) throw new Error(`MM_BENCH_VMS / --vms: a whole number of VMs >= 1, not ${process.env.MM_BENCH_VMS}`);

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const GiB = 1024 ** 3;
const bytesOf = (b: BatchResult) => b.results.reduce((s, r) => s + (r.info.transferredKiB ?? NaN) * 1024, 0);

d(`bench: ${VMS} VM live migration(s) at once per datapath mode vs a direct veth pair and an HAProxy chain`, () => {
  // anonymous RAM, as a VM's: a file-backed target loads pages slower and would hide the gateways' cost (VmShape.ram).
  // Several VMs: 128 MiB each (32 MiB random), so 4 sources and 4 targets (1 GiB of guest RAM) and their TCG vCPUs
  // fit two shared cores and a run stays within minutes; one VM keeps the 256 MiB guest of the single-VM bench
  const memMiB = Number(process.env.MM_VM_MEM_MIB ?? (VMS > 1 ? 128 : 256));
  const shape = { memMiB, fillMiB: memMiB / 4, dirtyMiB: 2, cpu: 'qemu64', ram: 'anonymous' as const };
  const split = process.env.MM_VM_CPUS === 'split';
  const lab = new VmMigrationLab(shape, 4, console.log, 'one-segment', split ? { qemu: '0', gateway: '1' } : {});
  // every QEMU's RAM faulted in (and zeroed) at its start, outside the measured window: a fresh target's first
  // touches were at times ten times dearer on this machine, in every mode, and the slowest migrations' CPU was mostly that
  if (PREALLOC) lab.qemuArgs = () => ['-overcommit', 'mem-lock=on'];
  afterAll(async () => { await lab.cleanup(); }, 60_000);

  test('interleaved rounds, medians and ratios', async () => {
    await lab.setup();
    console.log(`[bench:vm] ${VMS} guest(s) booted in ${await lab.bootMany(VMS, 0)} ms`);
    // one warm-up batch per mode, not counted: the run's first migrations (the freshly booted guest, the
    // first gateways) took 1.1-2.5 s where later ones of the same mode took 0.5-1.1 s, and the first is always
    // direct's, which flattered every gateway mode's first-round ratio
    const windows: object[] = [];
    const completed = async (m: Arm, what: string): Promise<BatchResult> => {
      if (AB.length) levers(lab, AB, m === 'mtls-splice+ab');
      const sent0 = AB.length ? labLinks(lab, true) : [];
      const sources = lab.vms.map((v) => v.proc.pid!);
      const b = await lab.migrateMany(pathOf(m));
      const bad = b.results.filter((r) => r.info.status !== 'completed');
      if (bad.length) throw new Error(`${m} ${what}: ${bad.map((r) => `${r.target} ${r.info.status} ${r.info.reason ?? ''}`).join('; ')}`);
      if (AB.length) console.log(`[bench:vm] ${what} ${m}: sent ${linkDeltas(sent0, labLinks(lab, true))}`);
      if (PERF_WINDOWS) windows.push(perfWindow(lab, b, what, m, sources));
      return b;
    };
    for (const m of MODES) {
      const b = await completed(m, 'warm-up');
      console.log(`[bench:vm] warm-up ${m}: wall ${b.wallMs} ms (not counted)`);
    }
    const runs: Record<string, BatchResult[]> = Object.fromEntries(MODES.map((m) => [m, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // with MM_VM_AB the two mtls-splice arms swap places every other round, so a drift in load favours neither
      const order = AB.length && round % 2 ? [...MODES.slice(0, -2), ...MODES.slice(-2).reverse()] : MODES;
      for (const m of order) {
        const b = await completed(m, `round ${round}`);
        runs[m].push(b);
        const each = b.results.map((r) => `${r.completedAtMs}`).join('/');
        console.log(`[bench:vm] round ${round + 1} ${m}: wall ${b.wallMs} ms (per VM ${each}), ${(bytesOf(b) / 2 ** 20).toFixed(1)} MiB, CPU ${b.cpuMs} ms (gateways ${b.cpuParts.gatewaysMs.join('+')}), RAM equal ${b.results.filter((r) => r.ramEqual).length}/${VMS}${b.results.map((r) => (r.ramDiff ? ` (${r.ramDiff})` : '')).join('')}`);
      }
    }
    const rows = batchRows(runs, lab.clusters.map((c) => c.name));
    const cpu = cpuPerGib(runs);
    const load = os.loadavg().map((l) => l.toFixed(1)).join(' ');
    console.log([
      `[bench:vm] ${new Date().toISOString()}, load average ${load}; ${VMS} VM(s) at once, ${ROUNDS} interleaved rounds (${MODES.join(', ')}), medians; xN: median of the per-round ratios (min-max)`,
      `  QEMU ${qemuVersion()}, guests ${shape.memMiB} MiB (${shape.fillMiB} MiB random, ${shape.dirtyMiB} MiB rewritten per second), TCG ${shape.cpu}, TLS + ${lab.channels} multifd channels each, ${os.cpus().length} CPUs (shared)` +
        `; ${split ? 'QEMUs on CPU 0, gateways on CPU 1 (MM_VM_CPUS=split)' : 'every process on every CPU'}${PREALLOC ? '; RAM locked and faulted in at start (MM_VM_PREALLOC=1)' : ''}`,
      ...batchTable(rows),
      ...cpuTable(cpu),
    ].join('\n'));
    if (PERF_WINDOWS) fs.writeFileSync(PERF_WINDOWS, `${JSON.stringify(windows, null, 2)}\n`);
    const outDir = process.env.MM_RECORD_BENCH === '1' ? path.join(__dirname, 'results') : os.tmpdir();
    const file = VMS === 1 ? 'vm-migration.json' : `vm-migration-${VMS}vms.json`;
    fs.writeFileSync(path.join(outDir, file), `${JSON.stringify({
      bench: 'bench/vm-migration.bench.ts', vms: VMS, rounds: ROUNDS, shape, prealloc: PREALLOC, layout: split ? 'split' : 'all', channels: lab.channels, cpus: os.cpus().length, kernel: os.release(), qemu: qemuVersion(), guestKernel: lab.guest.kernelVersion, date: new Date().toISOString(), loadavg: os.loadavg(), rows, cpuPerGib: cpu,
      batches: Object.fromEntries(MODES.map((m) => [m, runs[m].map((b) => ({
        wallMs: b.wallMs, cpuMs: b.cpuMs, cpuParts: b.cpuParts,
        vms: b.results.map((r) => ({
          startOffsetMs: r.startOffsetMs, completedAtMs: r.completedAtMs, arrivedMs: r.arrivedMs, totalMs: r.info.totalMs, downtimeMs: r.info.downtimeMs,
          kib: r.info.transferredKiB, ramEqual: r.ramEqual, resumed: r.resumed,
        })),
      }))])),
    }, null, 2)}\n`);
  }, 3_600_000);
});

type Spread = { median: number; min: number; max: number };
const spreadOf = (xs: number[]): Spread => ({ median: +median(xs).toFixed(3), min: +Math.min(...xs).toFixed(3), max: +Math.max(...xs).toFixed(3) });

interface BatchRow {
  mode: Arm; gib: number; wallMs: number; wallRatio: Spread; gbps: number;
  /** Each VM's completion (ms from the batch's first `migrate`), medians over the rounds by VM order; fairness: slowest / fastest per batch. */
  perVmMs: number[]; spread: Spread;
  /** CPU-s per GiB of the source's gateway and the target's, and their sum; throughput and that sum as ratios to the same round's HAProxy chain. */
  gatewaysPerGib: number[]; gatewayPerGib: number; gbpsVsHaproxy: Spread | null; vsHaproxy: Spread | null;
  ramEqual: string; resumed: string;
}

/** Per mode, over the rounds: GiB moved, wall time (x direct), aggregate Gbit/s, per-VM completion and spread, each gateway's CPU-s/GiB (x HAProxy chain). */
function batchRows(runs: Record<string, BatchResult[]>, clusters: string[]): BatchRow[] {
  const perGib = (b: BatchResult, ms: number) => ms / 1000 / (bytesOf(b) / GiB);
  // the gateways in the batch's direction: its source cluster's, then its target's (every VM of a batch moves the same way)
  const side = (b: BatchResult, g: number) => b.cpuParts.gatewaysMs[g === 0 ? clusters.indexOf(b.results[0].from) : clusters.indexOf(b.results[0].to)];
  const gbps = (b: BatchResult) => (bytesOf(b) * 8) / 1e9 / (b.wallMs / 1000);
  const gwSum = (b: BatchResult) => perGib(b, b.cpuParts.gatewaysMs.reduce((s, x) => s + x, 0));
  const hap = runs['haproxy-chain'];
  return MODES.map((mode) => {
    const bs = runs[mode];
    const all = bs.flatMap((b) => b.results);
    const n = bs[0]?.results.length ?? 0;
    return {
      mode,
      gib: +median(bs.map((b) => bytesOf(b) / GiB)).toFixed(3),
      wallMs: median(bs.map((b) => b.wallMs)),
      wallRatio: spreadOf(bs.map((b, i) => b.wallMs / runs.direct[i].wallMs)),
      gbps: +median(bs.map(gbps)).toFixed(2),
      perVmMs: Array.from({ length: n }, (_, v) => median(bs.map((b) => b.results[v].completedAtMs ?? NaN))),
      spread: spreadOf(bs.map((b) => Math.max(...b.results.map((r) => r.completedAtMs ?? NaN)) / Math.min(...b.results.map((r) => r.completedAtMs ?? NaN)))),
      gatewaysPerGib: mode === 'direct' ? [] : [0, 1].map((g) => +median(bs.map((b) => perGib(b, side(b, g) ?? NaN))).toFixed(3)),
      gatewayPerGib: +median(bs.map(gwSum)).toFixed(3),
      gbpsVsHaproxy: hap ? spreadOf(bs.map((b, i) => gbps(b) / gbps(hap[i]))) : null,
      vsHaproxy: hap && mode !== 'direct' ? spreadOf(bs.map((b, i) => gwSum(b) / gwSum(hap[i]))) : null,
      ramEqual: `${all.filter((r) => r.ramEqual).length}/${all.length}`,
      resumed: `${all.filter((r) => r.resumed).length}/${all.length}`,
    };
  });
}

function batchTable(rows: BatchRow[]): string[] {
  const sp = (s: Spread | null) => (s ? `${s.median.toFixed(2)} (${s.min.toFixed(2)}-${s.max.toFixed(2)})` : '-');
  return [
    '  per batch: GiB moved by all VMs, wall = first `migrate` until the last target completed, Gbit/s = GiB / wall; per VM: each one\'s completion, ms from the first `migrate`;',
    '  slow/fast: slowest / fastest VM of a batch (1.00 = fair); gateways: CPU-s per GiB of the source side\'s gateway + the target side\'s; x haproxy: the same round\'s',
    '  HAProxy chain against, for Gbit/s and for the two gateways\' CPU-s/GiB summed',
    `  ${'mode'.padEnd(14)} ${'GiB'.padStart(6)} ${'wall ms'.padStart(8)} ${'wall x direct'.padStart(17)} ${'Gbit/s'.padStart(6)} ${'x haproxy'.padStart(17)}  ${'per VM ms'.padEnd(24)} ${'slow/fast'.padStart(17)} ${'gateways s/GiB'.padStart(14)} ${'x haproxy'.padStart(17)}  RAM equal  resumed`,
    ...rows.map((r) => `  ${r.mode.padEnd(14)} ${r.gib.toFixed(3).padStart(6)} ${String(r.wallMs).padStart(8)} ${sp(r.wallRatio).padStart(17)} ${r.gbps.toFixed(2).padStart(6)} ${sp(r.gbpsVsHaproxy).padStart(17)}  ${r.perVmMs.join(' ').padEnd(24)} ${sp(r.spread).padStart(17)} ` +
      `${(r.gatewaysPerGib.length ? r.gatewaysPerGib.map((x) => x.toFixed(2)).join(' + ') : '-').padStart(14)} ${sp(r.vsHaproxy).padStart(17)}  ${r.ramEqual.padStart(9)}  ${r.resumed.padStart(7)}`),
  ];
}

const PARTS = ['source', 'sourceStaying', 'target', 'gateways', 'kernelThreads', 'unattributed', 'total', 'perByte'] as const;
type Part = typeof PARTS[number];
interface CpuRow {
  mode: Arm; gib: number; perRound: Record<Part, number>[]; part: Record<Part, Spread>; ratio: Record<Part, Spread | null>;
  extra: Spread; extraPerByte: Spread;
}

/**
 * One migration's CPU-seconds per GiB migrated (the source's transferred bytes), by part: the source QEMU's
 * migration threads (`source`: the migration thread and the multifd channels, which `migrate` starts) and its
 * threads that lived through the migration (`sourceStaying`: the vCPU running the guest under TCG, which grows
 * with the migration's duration rather than its bytes, and the main loop), the target QEMU, both gateways, kernel
 * threads (ksoftirqd, kworkers: part of this is other people's on a shared machine). `total` is their sum and
 * `perByte` the same without `sourceStaying`. Left out of both: other processes (other people's work on this
 * machine) and `unattributed` (/proc/stat's busy time minus every live process's), which holds softirq over an
 * idle CPU but also every short-lived process of other people that ended in the span (a compiler, a test
 * worker): up to 2.8 CPU-s/GiB in one run, 0 in the next, so shown but not summed.
 */
function partsPerGib(b: BatchResult): Record<Part, number> {
  const c = b.cpuParts;
  const gib = bytesOf(b) / GiB;
  const gateways = c.gatewaysMs.reduce((a, b) => a + b, 0);
  const p = {
    source: c.sourceMs - c.sourceStayingMs, sourceStaying: c.sourceStayingMs, target: c.targetMs, gateways, kernelThreads: c.kernelThreadsMs,
    unattributed: Math.max(0, c.unattributedMs),
  };
  const perByte = p.source + p.target + p.gateways + p.kernelThreads;
  return Object.fromEntries(Object.entries({ ...p, total: perByte + p.sourceStaying, perByte }).map(([k, v]) => [k, v / 1000 / gib])) as Record<Part, number>;
}

/** Per mode: each part's median over the rounds, its per-round ratio to the same round's direct run, and the totals' extra CPU-s/GiB over direct. */
function cpuPerGib(runs: Record<string, BatchResult[]>): CpuRow[] {
  const direct = runs.direct.map(partsPerGib);
  return MODES.map((mode) => {
    const perRound = runs[mode].map(partsPerGib);
    const part = Object.fromEntries(PARTS.map((k) => [k, spreadOf(perRound.map((r) => r[k]))])) as Record<Part, Spread>;
    const ratioOf = (k: Part) => (direct.every((d) => d[k] > 0) ? spreadOf(perRound.map((r, i) => r[k] / direct[i][k])) : null);
    const ratio = Object.fromEntries(PARTS.map((k) => [k, ratioOf(k)])) as Record<Part, Spread | null>;
    const gib = +median(runs[mode].map((b) => bytesOf(b) / GiB)).toFixed(3);
    const extraOf = (k: Part) => spreadOf(perRound.map((r, i) => r[k] - direct[i][k]));
    return { mode, gib, perRound, part, ratio, extra: extraOf('total'), extraPerByte: extraOf('perByte') };
  });
}

function cpuTable(rows: CpuRow[]): string[] {
  // ratios for the QEMUs' migration work and the totals only: kernel threads', guest+main's and idle softirq's few ms per run make ratios of noise
  const withRatio: Part[] = ['source', 'target']; // guest+main: a few 10 ms ticks, no ratio
  const cell = (r: CpuRow, k: Part) => `${r.part[k].median.toFixed(2)}${withRatio.includes(k) && r.mode !== 'direct' && r.ratio[k] ? ` x${r.ratio[k]!.median.toFixed(2)}` : ''}`;
  const sp = (s: Spread, sign = '') => `${sign}${s.median.toFixed(2)} (${s.min.toFixed(2)}..${s.max.toFixed(2)})`;
  const tot = (r: CpuRow, k: 'total' | 'perByte', extra: Spread) =>
    `${r.part[k].median.toFixed(2)} x${r.ratio[k] ? sp(r.ratio[k]!) : '-'}${r.mode === 'direct' ? '' : `, ${sp(extra, '+')}`}`;
  return [
    '  CPU-seconds per GiB migrated, medians over the rounds; xN: median (min..max) of the per-round ratios to that round\'s direct run; +N: extra CPU-s/GiB',
    '  over that round\'s direct run. Each process with its process group; softirq work is charged to the process it interrupted (no IRQ time accounting',
    '  on this kernel). source: its migration threads; guest+main: its threads that stayed (the TCG vCPU runs the guest throughout: grows with duration).',
    '  per byte = source + target + gateways + kthreads; total = per byte + guest+main. Other processes (other people\'s) and "no process" left out.',
    `  ${'mode'.padEnd(14)} ${'source'.padStart(11)} ${'guest+main'.padStart(11)} ${'target'.padStart(11)} ${'gateways'.padStart(8)} ${'kthreads'.padStart(8)} ` +
      `${'no process'.padStart(10)}  ${'per byte x direct, extra'.padEnd(42)} total x direct, extra`,
    ...rows.map((r) => `  ${r.mode.padEnd(14)} ${cell(r, 'source').padStart(11)} ${cell(r, 'sourceStaying').padStart(11)} ${cell(r, 'target').padStart(11)} ` +
      `${r.part.gateways.median.toFixed(2).padStart(8)} ${r.part.kernelThreads.median.toFixed(2).padStart(8)} ${r.part.unattributed.median.toFixed(2).padStart(10)}  ` +
      `${tot(r, 'perByte', r.extraPerByte).padEnd(42)} ${tot(r, 'total', r.extra)}`),
  ];
}

/**
 * For profiling (MM_VM_PERF_WINDOWS=<file>, beside `perf record -a -k CLOCK_MONOTONIC`): when each batch ran, in
 * CLOCK_MONOTONIC ns as perf stamps its samples (libuv's hrtime is that clock), from its first `migrate` until its
 * last target reported completed, and the pids it involved.
 */
function perfWindow(lab: VmMigrationLab, b: BatchResult, what: string, arm: Arm, sources: number[]): object {
  const gateways = b.mode === 'direct' ? [] : lab.clusters.map((c) => c.gw.proc?.pid);
  const pids = { sources, targets: lab.vms.map((v) => v.proc.pid), gateways };
  return { mode: b.mode, arm, what, start: String(b.startNs), end: String(b.endNs), ...pids, cpuParts: b.cpuParts, kib: bytesOf(b) / 1024 };
}

interface LinkCount { ns: string; ifname: string; tx: number; txBytes: number }
/** The links of the gateway namespaces (and with `handlers` the handlers' too), loopback left out, with what each sent so far. */
function labLinks(lab: VmMigrationLab, handlers: boolean): LinkCount[] {
  const nss = lab.clusters.flatMap((c) => (handlers ? [c.gw.ns, c.handler.ns] : [c.gw.ns]));
  return nss.flatMap((ns) => (JSON.parse(lab.lab.run(['ip', '-n', ns, '-s', '-j', 'link', 'show']).stdout) as any[])
    .filter((l) => l.ifname !== 'lo').map((l) => ({ ns, ifname: l.ifname as string, tx: Number(l.stats64?.tx?.packets ?? 0), txBytes: Number(l.stats64?.tx?.bytes ?? 0) })));
}

/** Per link that sent more than 100 packets in the span: `ns-suffix/ifname packets (KiB per packet)`. */
function linkDeltas(before: LinkCount[], after: LinkCount[]): string {
  return after.map((a) => {
    const b = before.find((x) => x.ns === a.ns && x.ifname === a.ifname);
    const n = a.tx - (b?.tx ?? 0);
    return n > 100 ? `${a.ns.replace(/^.*-(c\d+-\w+)$/, '$1')}/${a.ifname} ${n} (${((a.txBytes - (b?.txBytes ?? 0)) / n / 1024).toFixed(1)} KiB)` : '';
  }).filter(Boolean).join(', ');
}

/**
 * MM_VM_AB's levers, on before the `mtls-splice+ab` run and off before every other run. `notrack` (a measurement, not
 * the product's: the init step installs no such rule): the gateway-to-gateway tunnels taken out of conntrack in both
 * gateway namespaces (raw table, chain MM_AB_NOTRACK from PREROUTING and OUTPUT): tunnels to this gateway's tunnel port
 * on a local address, tunnels it opens to the peer's gateways, and the answers of both; the REDIRECTed connections
 * stay tracked (NAT needs conntrack).
 */
function levers(lab: VmMigrationLab, names: string[], on: boolean): void {
  for (const n of names) {
    if (n === 'bigtcp') { bigTcp(lab, on); continue; }
    if (n !== 'notrack') throw new Error(`MM_VM_AB: unknown lever ${n} (known: notrack, bigtcp)`);
    for (const c of lab.clusters) {
      const cfg = c.topo['mtls-splice'].gatewayConfig;
      const port = String(cfg.listen.tunnel.port);
      const rules = [`-p tcp --dport ${port} -m addrtype --dst-type LOCAL`, `-p tcp --sport ${port}`,
        ...(cfg.peers as { gateways: { host: string; port: number }[] }[]).flatMap((p) => p.gateways).flatMap((g) => [`-p tcp -s ${g.host} --sport ${g.port}`, `-p tcp -d ${g.host} --dport ${g.port}`])];
      const ipt = 'iptables -w -t raw';
      const script = on
        ? [`${ipt} -N MM_AB_NOTRACK`, ...rules.map((r) => `${ipt} -A MM_AB_NOTRACK ${r} -j CT --notrack`), `${ipt} -A PREROUTING -j MM_AB_NOTRACK`, `${ipt} -A OUTPUT -j MM_AB_NOTRACK`]
        : [`if ${ipt} -S MM_AB_NOTRACK >/dev/null 2>&1; then ${ipt} -D PREROUTING -j MM_AB_NOTRACK && ${ipt} -D OUTPUT -j MM_AB_NOTRACK && ${ipt} -F MM_AB_NOTRACK && ${ipt} -X MM_AB_NOTRACK; fi`];
      const r = lab.lab.exec(c.gw.ns, ['sh', '-ec', script.join('\n')]);
      if (r.status !== 0) throw new Error(`MM_VM_AB notrack ${on ? 'on' : 'off'} in ${c.gw.ns}: ${r.stderr}`);
    }
  }
}

/** BIG TCP's netlink attributes: IFLA_GSO_MAX_SIZE, IFLA_GRO_MAX_SIZE, IFLA_GSO_IPV4_MAX_SIZE, IFLA_GRO_IPV4_MAX_SIZE. */
const BIGTCP_PY = `import socket, struct, sys
size = int(sys.argv[1])
for ifname in sys.argv[2:]:
    attrs = b''.join(struct.pack('HHI', 8, t, size) for t in (41, 58, 63, 64))
    body = struct.pack('BxHiII', socket.AF_UNSPEC, 0, socket.if_nametoindex(ifname), 0, 0) + attrs
    s = socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)
    s.send(struct.pack('IHHII', 16 + len(body), 16, 1 | 4, 1, 0) + body)
    err = struct.unpack('i', s.recv(4096)[16:20])[0]
    if err: sys.exit(f'{ifname}: errno {-err}')
`;

/**
 * `bigtcp` (lab-only): every link of both gateway namespaces (handler-facing mig0, the tunnel's xc0, the pod network's eth0): gso/gro
 * max sizes and their IPv4 twins at 524280 (the veths' tso_max_size), off: 65536, the veth default. Set through
 * rtnetlink because the iproute2 6.1 here cannot set the IPv4 sizes. A locally sent TCP skb takes its size limit from
 * its route's device, so this is what the gateways' own transmits see; forwarding through the lab's bridges checks
 * segments, not size.
 */
function bigTcp(lab: VmMigrationLab, on: boolean): void {
  for (const c of lab.clusters) {
    const links = labLinks(lab, false).filter((l) => l.ns === c.gw.ns).map((l) => l.ifname);
    const r = lab.lab.exec(c.gw.ns, ['python3', '-c', BIGTCP_PY, String(on ? 524280 : 65536), ...links]);
    if (r.status !== 0) throw new Error(`MM_VM_AB bigtcp ${on ? 'on' : 'off'} in ${c.gw.ns}: ${r.stderr}`);
  }
}
