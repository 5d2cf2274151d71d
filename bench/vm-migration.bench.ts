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
import { MigrationResult, PathMode, VmMigrationLab, vmLabSupport } from '../test/support/vm-lab';

const ROUNDS = Number(process.env.MM_VM_ROUNDS ?? 3);
const PERF_WINDOWS = process.env.MM_VM_PERF_WINDOWS;
const PREALLOC = process.env.MM_VM_PREALLOC === '1';
// MM_VM_MODES=mtls-splice,plaintext: direct and those only (default: every mode)
const PATHS: PathMode[] = ['direct', ...(process.env.MM_VM_MODES?.split(',') as PathMode[] ?? ['mtls-splice', 'mtls', 'plaintext']).filter((m) => m !== 'direct')];
const AB = process.env.MM_VM_AB ? process.env.MM_VM_AB.split(',') : [];
/** The runs of a round: each path mode, and with MM_VM_AB the levers' arm `mtls-splice+ab` after the plain one. */
type Arm = PathMode | 'mtls-splice+ab';
const MODES: Arm[] = AB.length ? [...PATHS.filter((m) => m !== 'mtls-splice'), 'mtls-splice', 'mtls-splice+ab'] : PATHS;
const pathOf = (a: Arm): PathMode => (a === 'mtls-splice+ab' ? 'mtls-splice' : a);
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
  // every QEMU's RAM faulted in (and zeroed) at its start, outside the measured window: a fresh target's first
  // touches were at times ten times dearer on this machine, in every mode, and the slowest migrations' CPU was mostly that
  if (PREALLOC) lab.qemuArgs = () => ['-overcommit', 'mem-lock=on'];
  afterAll(async () => { await lab.cleanup(); }, 60_000);

  test('interleaved rounds, medians and ratios', async () => {
    await lab.setup();
    await lab.boot(0);
    // one warm-up migration per mode, not counted: the run's first migrations (the freshly booted guest, the
    // first gateways) took 1.1-2.5 s where later ones of the same mode took 0.5-1.1 s, and the first is always
    // direct's, which flattered every gateway mode's first-round ratio
    const windows: object[] = [];
    const completed = async (m: Arm, what: string): Promise<MigrationResult> => {
      if (AB.length) levers(lab, AB, m === 'mtls-splice+ab');
      const t0 = process.hrtime.bigint();
      const source = lab.vm?.proc.pid;
      const sent0 = AB.length ? labLinks(lab, true) : [];
      const r = await lab.migrate(pathOf(m));
      if (r.info.status !== 'completed') throw new Error(`${m} ${what}: ${r.info.status} ${r.info.reason ?? ''}`);
      if (AB.length) console.log(`[bench:vm] ${what} ${m}: sent ${linkDeltas(sent0, labLinks(lab, true))}`);
      if (PERF_WINDOWS) windows.push({ ...perfWindow(lab, r, what, t0, source), arm: m });
      return r;
    };
    for (const m of MODES) {
      const r = await completed(m, 'warm-up');
      console.log(`[bench:vm] warm-up ${m}: total ${r.info.totalMs} ms, arrived ${r.arrivedMs} ms (not counted)`);
    }
    const runs: Record<string, MigrationResult[]> = Object.fromEntries(MODES.map((m) => [m, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // with MM_VM_AB the two mtls-splice arms swap places every other round, so a drift in load favours neither
      const order = AB.length && round % 2 ? [...MODES.slice(0, -2), ...MODES.slice(-2).reverse()] : MODES;
      for (const m of order) {
        const r = await completed(m, `round ${round}`);
        runs[m].push(r);
        console.log(`[bench:vm] round ${round + 1} ${m}: total ${r.info.totalMs} ms, arrived ${r.arrivedMs} ms, CPU ${r.cpuMs} ms (gateways ${r.gatewayCpuMs}), downtime ${r.info.downtimeMs} ms, ${((r.info.transferredKiB ?? 0) / 1024).toFixed(1)} MiB, RAM equal ${r.ramEqual}${r.ramDiff ? ` (${r.ramDiff})` : ''}`);
      }
    }
    // each round's ratio to that round's direct run (the load on this shared machine drifts between rounds), then
    // the median of those ratios and their spread; times, downtime and MiB as medians over the rounds
    const perRound = (m: Arm, f: (r: MigrationResult) => number) => runs[m].map((r, i) => f(r) / f(runs.direct[i]));
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
    const cpu = cpuPerGib(runs);
    const load = os.loadavg().map((l) => l.toFixed(1)).join(' ');
    console.log([
      `[bench:vm] ${new Date().toISOString()}, load average ${load}; ${ROUNDS} interleaved rounds (${MODES.join(', ')}), medians; ratios: median of the per-round ratios to that round's direct run (min-max)`,
      `  QEMU ${qemuVersion()}, guest ${shape.memMiB} MiB (${shape.fillMiB} MiB random, ${shape.dirtyMiB} MiB rewritten per second), TCG ${shape.cpu}, TLS + ${lab.channels} multifd channels, ${os.cpus().length} CPUs (shared)` +
        `; ${split ? 'QEMUs on CPU 0, gateways on CPU 1 (MM_VM_CPUS=split)' : 'every process on every CPU'}${PREALLOC ? '; RAM locked and faulted in at start (MM_VM_PREALLOC=1)' : ''}`,
      `  ${'mode'.padEnd(12)} ${'total ms'.padStart(9)} ${'total x direct'.padStart(18)} ${'arrived ms'.padStart(10)} ${'arrived x direct'.padStart(18)} ${'CPU ms'.padStart(7)} ${'gateways'.padStart(8)} ${'downtime ms'.padStart(11)} ${'MiB'.padStart(7)}  RAM equal  resumed`,
      ...rows.map((r) => `  ${r.mode.padEnd(12)} ${String(r.totalMs).padStart(9)} ${x(r.totalRatio).padStart(18)} ${String(r.arrivedMs).padStart(10)} ${x(r.arrivedRatio).padStart(18)} ${String(r.cpuMs).padStart(7)} ${String(r.gatewayCpuMs).padStart(8)} ${String(r.downtimeMs).padStart(11)} ${String(r.mib).padStart(7)}  ${r.ramEqual.padStart(9)}  ${r.resumed.padStart(7)}`),
      ...cpuTable(cpu),
    ].join('\n'));
    if (PERF_WINDOWS) fs.writeFileSync(PERF_WINDOWS, `${JSON.stringify(windows, null, 2)}\n`);
    const outDir = process.env.MM_RECORD_BENCH === '1' ? path.join(__dirname, 'results') : os.tmpdir();
    fs.writeFileSync(path.join(outDir, 'vm-migration.json'), `${JSON.stringify({
      bench: 'bench/vm-migration.bench.ts', rounds: ROUNDS, shape, prealloc: PREALLOC, layout: split ? 'split' : 'all', channels: lab.channels, cpus: os.cpus().length, kernel: os.release(), qemu: qemuVersion(), guestKernel: lab.guest.kernelVersion, date: new Date().toISOString(), loadavg: os.loadavg(), rows, cpuPerGib: cpu,
    }, null, 2)}\n`);
  }, 1_800_000);
});

const PARTS = ['source', 'sourceStaying', 'target', 'gateways', 'kernelThreads', 'unattributed', 'total', 'perByte'] as const;
type Part = typeof PARTS[number];
type Spread = { median: number; min: number; max: number };
interface CpuRow {
  mode: Arm; gib: number; perRound: Record<Part, number>[]; part: Record<Part, Spread>; ratio: Record<Part, Spread | null>;
  extra: Spread; extraPerByte: Spread;
}

const spreadOf = (xs: number[]): Spread => ({ median: +median(xs).toFixed(3), min: +Math.min(...xs).toFixed(3), max: +Math.max(...xs).toFixed(3) });

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
function partsPerGib(r: MigrationResult): Record<Part, number> {
  const c = r.cpuParts!;
  const gib = (r.info.transferredKiB ?? NaN) / 1024 ** 2;
  const gateways = c.gatewaysMs.reduce((a, b) => a + b, 0);
  const p = {
    source: c.sourceMs - c.sourceStayingMs, sourceStaying: c.sourceStayingMs, target: c.targetMs, gateways, kernelThreads: c.kernelThreadsMs,
    unattributed: Math.max(0, c.unattributedMs),
  };
  const perByte = p.source + p.target + p.gateways + p.kernelThreads;
  return Object.fromEntries(Object.entries({ ...p, total: perByte + p.sourceStaying, perByte }).map(([k, v]) => [k, v / 1000 / gib])) as Record<Part, number>;
}

/** Per mode: each part's median over the rounds, its per-round ratio to the same round's direct run, and the totals' extra CPU-s/GiB over direct. */
function cpuPerGib(runs: Record<string, MigrationResult[]>): CpuRow[] {
  const direct = runs.direct.map(partsPerGib);
  return MODES.map((mode) => {
    const perRound = runs[mode].map(partsPerGib);
    const part = Object.fromEntries(PARTS.map((k) => [k, spreadOf(perRound.map((r) => r[k]))])) as Record<Part, Spread>;
    const ratioOf = (k: Part) => (direct.every((d) => d[k] > 0) ? spreadOf(perRound.map((r, i) => r[k] / direct[i][k])) : null);
    const ratio = Object.fromEntries(PARTS.map((k) => [k, ratioOf(k)])) as Record<Part, Spread | null>;
    const gib = +median(runs[mode].map((r) => (r.info.transferredKiB ?? NaN) / 1024 ** 2)).toFixed(3);
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
    `  ${'mode'.padEnd(12)} ${'source'.padStart(11)} ${'guest+main'.padStart(11)} ${'target'.padStart(11)} ${'gateways'.padStart(8)} ${'kthreads'.padStart(8)} ` +
      `${'no process'.padStart(10)}  ${'per byte x direct, extra'.padEnd(42)} total x direct, extra`,
    ...rows.map((r) => `  ${r.mode.padEnd(12)} ${cell(r, 'source').padStart(11)} ${cell(r, 'sourceStaying').padStart(11)} ${cell(r, 'target').padStart(11)} ` +
      `${r.part.gateways.median.toFixed(2).padStart(8)} ${r.part.kernelThreads.median.toFixed(2).padStart(8)} ${r.part.unattributed.median.toFixed(2).padStart(10)}  ` +
      `${tot(r, 'perByte', r.extraPerByte).padEnd(42)} ${tot(r, 'total', r.extra)}`),
  ];
}

/**
 * For profiling (MM_VM_PERF_WINDOWS=<file>, beside `perf record -a -k CLOCK_MONOTONIC`): when each migration ran, in
 * CLOCK_MONOTONIC ns as perf stamps its samples (libuv's hrtime is that clock), and the pids it involved. `start`
 * is `migrate`'s start as the lab's phases place it (gateway restart, wait, target, credentials before it; the
 * few ms of migrate_incoming and the bandwidth setting not counted), `end` when the target reported completed.
 */
function perfWindow(lab: VmMigrationLab, r: MigrationResult, what: string, t0: bigint, source?: number): object {
  const ms = (n: number) => BigInt(Math.round(n * 1e6));
  const p = r.phases;
  const start = t0 + ms((p.gateways ?? 0) + (p.released ?? 0) + (p.target ?? 0) + (p.creds ?? 0));
  const end = start + ms((p.migrate ?? 0) + (p.arrive ?? 0));
  const gateways = r.mode === 'direct' ? [] : lab.clusters.map((c) => c.gw.proc?.pid);
  const pids = { source, target: lab.vm?.proc.pid, gateways };
  return { mode: r.mode, what, start: String(start), end: String(end), ...pids, cpuParts: r.cpuParts, kib: r.info.transferredKiB };
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
