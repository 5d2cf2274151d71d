/**
 * The VM migration lab (issue 30 parts 2 and 3), shared by test/vm-migration.netns.test.ts and
 * bench/vm-migration.bench.ts: two clusters of the synthesized three-sites-vlan example (ams-1 and fra-1;
 * `gateway.replicas: 1, failover: none` so no keepalived is needed) realized in network namespaces as
 * test/fleet.netns.test.ts realizes them (every pod attachment made by the real CNI plugins from the NAD
 * configs, the Deployment's setup-rules and run commands, the ConfigMap's config.json with only the TLS file
 * paths and the trust socket rewritten), plus the trust exchange as test/fleet-trust.netns.test.ts runs it
 * (a fake API server per cluster with virt-operator's merge modelled on it, reached over a pod network, and
 * the real trust container beside each runtime).
 *
 * Layout (`VmLabLayout`, test/support/vm-lab-sites.ts): `one-segment` (the default, above) or `routed-sites`:
 * ams-1 and fra-1 of the two-sites example, each site its own segment, joined only by a router namespace
 * (test/support/netns-sites.ts), and `direct` over the direct fleet's migration NAD across that router.
 *
 * One network setup serves every mode: the example is synthesized three times (`payload: splice`,
 * `payload: tls`, `tls: {plaintext: true}`), the addresses must come out identical, and switching modes
 * restarts the runtimes with that synthesis' config.json. `direct` is a veth pair between the two handler
 * namespaces (the shared migration network of a direct datapath).
 *
 * A "virt-handler" namespace per cluster holds the VMs' QEMUs (one VM, `boot`, or several moving at once, `bootMany`
 * and `migrateMany`: each with its own target QEMU and port on the same handler address); the target is addressed
 * as KubeVirt addresses it: its own address on the migration network (through the gateways: the source's route sends it to its gateway,
 * whose REDIRECT rule intercepts it) or its direct0 address. Each cluster has its own KubeVirt CA (openssl, its
 * own key; adopted by the virt-operator model as its current CA) and issues its handler's certificate; the
 * CA file each QEMU reads is the `ca-bundle` of that cluster's `kubevirt-ca` on its API server at the moment of
 * the migration, never a bundle assembled here.
 */
import { ChildProcess } from 'child_process';
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../../src/fleet/load';
import { synthesizeFleet } from '../../cli/synthesize-fleet';
import { FakeKubeApi } from '../../proxy/lib/testkit/fake-kube';
import { CaIssuer, VirtOperatorModel } from '../../proxy/lib/testkit/virt-operator-model';
import { ClusterTopology, NetnsLab, makeFleetPki, netnsSupport, topologyFromFiles, whereaboutsFirstFree, READY_MS } from './netns';
import { CniRunner, cniSupport, kernelHasBridgeVlanFiltering, multusDelegateConfig, whereaboutsAsStatic, withoutVlan } from './netns-cni';
import { RUNTIME_UID, agentCommand, clusterApi, runtimeCommand } from './netns-agents';
import {
  Guest, Hmp, MigrateInfo, qmpExecute, VmShape, buildGuest, guestTrouble, issueHandlerCert, lastTick, makeClusterCa, parseInfoMigrate, qemuCommand, qemuSupport,
  knownQemuDefect, qemuStacks, ramDiff, ramFileSha256, setMaxBandwidth, waitMigration, writeTlsCreds,
} from './qemu-guest';
import { RoutedSites } from './netns-sites';
import { GATEWAY_MODES, LAYOUT_FLEET, ONE_SEGMENT_DIRECT, VmLabLayout, addDirectPath, fleetForDatapath, labSegments, routedDirectVariant, type GatewayMode } from './vm-lab-sites';
import type { SitePlan } from '../../src/addressing/sites';

const ROOT = path.join(__dirname, '..', '..');
const PROXY_CLI = path.join(ROOT, 'proxy', 'lib', 'cli.js');
const H = 3600_000;

export type { GatewayMode } from './vm-lab-sites';
/**
 * `haproxy-chain`: what a user would run instead of the gateways (issue 52): HAProxy 2.6 in each gateway namespace in
 * place of the runtime, on the same listeners, behind the same REDIRECT rules (see `haproxyConfig`).
 */
type ChainMode = GatewayMode | 'haproxy-chain';
export type PathMode = ChainMode | 'direct';

export function vmLabSupport(): { ok: true } | { ok: false; reason: string } {
  const n = netnsSupport();
  if (!n.ok) return n;
  if (!fs.existsSync(PROXY_CLI)) return { ok: false, reason: `gateway runtime not built (${PROXY_CLI} missing: run npm run build)` };
  const c = cniSupport();
  if (!c.ok) return c;
  return qemuSupport();
}

interface LabCluster {
  name: string;
  topo: Record<GatewayMode, ClusterTopology>;
  node: string;
  handler: { ns: string; addr: string; direct: string; certDir: string };
  gw: { ns: string; cfgFile: string; log: string; trustLog: string; proc?: ChildProcess; trust?: ChildProcess; runDir: string };
  api: FakeKubeApi;
  model: VirtOperatorModel;
  kubeconfig: string;
  /** The key and certificate file of each CA the model issued, by the CA's sha256. */
  caKeys: Map<string, { key: string; cert: string }>;
  /** kubevirt-ca's bundle before any trust container ran: what the cluster holds with the exchange off. */
  bundleWithoutExchange: string;
}

interface Vm {
  at: number; proc: ChildProcess; hmp: Hmp; serial: string; qlog: string;
  /** Its QMP socket, for what HMP cannot tell (`query-yank`). */
  qmp: string;
  /** Where a copy of its RAM goes (pmemsave), or, with a shm-file RAM, the RAM itself: /dev/shm/<lab>-<id>.ram */
  ram: string; ramIsFile: boolean;
}

/** What explainQemu reads of a QEMU: its process, its monitor client and its stderr file. */
export type QemuProcess = Pick<Vm, 'proc' | 'hmp' | 'qlog'>;

export interface MigrationResult {
  mode: PathMode; from: string; to: string; target: string; info: MigrateInfo;
  ramEqual?: boolean; ramSha?: [string, string];
  /** With `pmemsave`: sha256 of QEMU's own pmemsave copy of the source's and the target's RAM. */
  pmemsaveSha?: [string, string];
  /** When RAM differs: how many 4 KiB pages, and the first few guest-physical addresses. */
  ramDiff?: string;
  /**
   * ms from `migrate` until the target's incoming migration reported completed (its RAM and device state all
   * loaded). The source's `total time` ends when the source has written everything into its sockets: with
   * gateways in the path, data still in their buffers is not counted there; this is counted here.
   */
  arrivedMs?: number;
  /** Target guest printed a tick after the source's last one within the bound. */
  resumed?: boolean; sourceLastTick?: number; targetTick?: number; trouble?: string;
  /** On failure: the source's VM status afterwards, and whether its guest kept ticking. */
  sourceStatus?: string; sourceKeptTicking?: boolean;
  wallMs: number;
  /** In a batch (`migrateMany`): ms from the batch's first `migrate` until this one's was issued, and until its target completed. */
  startOffsetMs?: number; completedAtMs?: number;
  /**
   * CPU the whole machine spent from `migrate` until the target completed (ms of busy CPU over every core,
   * from /proc/stat: user, system, irq and softirq; idle and iowait not counted), and the part of it the two
   * gateway runtimes' processes were charged (their own threads; the kernel's softirq work for their sockets
   * is charged to whichever process a core was running, so part of it lands on the QEMUs).
   */
  cpuMs?: number; gatewayCpuMs?: number;
  /** The same span's CPU by who used it (see `CpuParts`). */
  cpuParts?: CpuParts;
  /** Where the wall time went, ms per step in order (gateways, channels, target, creds, migrate, arrive, ram, resume, stop). */
  phases: Record<string, number>;
}

/** One `migrateMany`: each VM's result, and the batch's wall time (first `migrate` until the last target completed) and CPU. */
export interface BatchResult {
  mode: PathMode; results: MigrationResult[]; wallMs: number; cpuMs: number; gatewayCpuMs: number; cpuParts: CpuParts;
  /** The first `migrate` and the last target's completion, CLOCK_MONOTONIC ns (process.hrtime), as `perf record -k CLOCK_MONOTONIC` stamps. */
  startNs: bigint; endNs: bigint;
}

/** One VM's migration between `prepare` and `conclude`. */
interface Prepared {
  vi: number; src: Vm; dst: Vm; host: string; port: number; res: MigrationResult; mark: (name: string) => void; t0: number; startedAt: number;
  stop: boolean; arrived: Promise<{ st: string; ms: number; at?: number }>;
}

/**
 * CPU (ms) used from `migrate` until the target completed (in a batch: the first `migrate` until the last target), by who
 * used it; each process counted with its whole
 * process group (utime + stime of /proc/<pid>/stat, which the kernel scales to the exact run time of its threads).
 * This kernel has no IRQ time accounting: softirq work (a veth's receive side, TCP's ACKs) is charged to the
 * process it interrupted, mostly the sender whose `local_bh_enable` ran it; what ran in ksoftirqd or kworkers is
 * `kernelThreadsMs`, and what ran over an idle CPU (and processes that ended in between) is `unattributedMs`.
 */
export interface CpuParts {
  /** The source QEMUs' and the target QEMUs' process groups, summed over a batch's VMs. */
  sourceMs: number; targetMs: number;
  /**
   * The part of `sourceMs` its threads that lived through the whole span used: its vCPU running the guest (TCG),
   * which grows with the migration's duration rather than its bytes, and the main loop. The rest of `sourceMs`
   * is the migration's own threads (the migration thread and the multifd channels, started by `migrate`).
   */
  sourceStayingMs: number;
  /** Each gateway runtime's process group, in cluster order (none for `direct`). */
  gatewaysMs: number[];
  /** Kernel threads (children of kthreadd: ksoftirqd, kworkers, ...). */
  kernelThreadsMs: number;
  /** Every other process on the machine (on a shared machine: other people's work, nothing of the migration's). */
  othersMs: number;
  /** /proc/stat's busy time minus every process's: softirq and irq work over an idle CPU, processes gone in between. */
  unattributedMs: number;
  /** /proc/stat's softirq time over the span: softirq work wherever it ran (overlaps the processes' counts). */
  softirqMs: number;
  machineMs: number;
}

/**
 * `pausedSource`: `stop` the source right before `migrate` (default false: a live migration, the guest
 * rewriting memory throughout). Why the RAM check needs it: on this machine (QEMU 7.2.22, TCG, loaded to
 * 10-20), a LIVE migration leaves 1-16 pages of 4 KiB in the target different from the source, over
 * loopback too (no netns, no gateway), with multifd off as well as on: 3 of 5 (TLS, no multifd) and 1 of 5
 * (TLS + 4 multifd channels) in one run under two `nice -n -5 yes` hogs. Neither side's RAM changes after
 * `completed` (pmemsave twice, 1 s apart: identical) and the target had reported its own `completed`
 * before the first read, so it is not a completion or read-timing race, nor a multifd one: the source never
 * resent pages the guest rewrote after their last send (TCG's dirty tracking loses a write now and then
 * under load; the resumed guest then often oopses). With the source paused there are no such writes:
 * every page crosses the transport (TLS, multifd) once and the whole RAM must arrive byte for byte.
 *
 * What was tried to make LIVE migrations RAM-equal (issue 30 A; loopback, the lab's guest and shape, TLS +
 * 4 multifd channels, two `nice -n -5 yes` hogs, RAM compared when the source reports `completed` (QEMU
 * has paused it: postmigrate) and the target, started with -S, reports its own `completed`):
 * - default (MTTCG, `-smp 1`, `-cpu qemu64`): 1 of 9 completed live migrations differed (16 pages);
 * - `-accel tcg,thread=single` (no MTTCG: one round-robin TCG thread): 2 of 4 differed (4 and 11 pages),
 *   stopped there: MTTCG races are not the cause (with `-smp 1` there was one vCPU thread anyway, and
 *   QEMU's `tcg_log_global_after_sync` already waits for the vCPU to leave its TB after each bitmap sync);
 * - guest `pti=on` (a CR3 write, so a full TCG TLB flush, on every kernel entry and exit from user mode:
 *   a test of stale fast-path TLB entries surviving a bitmap sync): 8 equal, then the 9th differed
 *   (12 pages) and the resumed guest hit `BUG: TASK stack guard page was hit`; stopped there.
 * - `-cpu max` (instead of qemu64): 11 equal (migrations 2-3x shorter: less time for a lost write), then
 *   the 12th differed (2 pages, 0xf8de000 and 0xfdfa000) and the resumed guest hit `BUG: Bad page map in
 *   process dd`; stopped there.
 * So none made live migrations RAM-equal under load, and the RAM-checked migrations keep a paused source.
 * A clue for whoever goes on: differing pages recur at the same guest-physical addresses across
 * independent boots and settings (0x1970000-0x1985000 in three of the four, 0x29c1000-0x29f7000 in two;
 * the others lie at 0x72xxxxx-0x8cxxxxx), likely inside the kernel image (loaded at 16 MiB): kernel static
 * data written in kernel mode, which `pti=on` does not make flush, rather than the workload's buffers.
 * Without the hogs (load average about 11 from other jobs) the 12 live migrations of one `npm run bench:vm`
 * run were all RAM-equal. Resumption: every RAM-equal
 * migration of these runs resumed and ticked on; of the 5 that differed, 3 ticked on within 15 s and two
 * (`pti=on`, `-cpu max`) hit the BUGs above: damage follows the lost pages, it was not seen without them.
 */
export interface MigrateOptions {
  /** The source's bandwidth limit in bytes per second (default: the fleet's bandwidthPerMigration, 2Gi). */
  maxBandwidth?: number;
  withoutExchange?: boolean; whileRunning?: (src: Hmp) => Promise<void>; timeoutMs?: number; pausedSource?: boolean;
  /**
   * Also have each QEMU copy its guest RAM out with `pmemsave 0 <size>` (into /dev/shm) and record its sha256 in
   * `pmemsaveSha`: the RAM the memory-backend files hold must be the bytes QEMU itself reports (default false:
   * about 2-3 s more).
   */
  pmemsave?: boolean;
}

export class VmMigrationLab {
  lab!: NetnsLab;
  tmp = '';
  clusters: LabCluster[] = [];
  guest!: Guest;
  /** The running VMs (`bootMany`); `vm` is the first. */
  vms: Vm[] = [];
  get vm(): Vm | undefined { return this.vms[0]; }
  mode?: ChainMode;
  private cni = new CniRunner();
  private seq = 0;
  /**
   * The next migrate_incoming port, above Linux's ephemeral range (32768-60999, what a new network namespace
   * gets): inside it, an outgoing connection from the handler's address (a migration's source side, the
   * intercept) could hold the port first, and QEMU's listen then fails with "Address already in use" (seen once in
   * a loaded run, 2026-12-03). At most about 40 ports per run, so 61000-64999 plus the run's ports stays valid.
   */
  private port = 61000 + (process.pid % 4000);
  private readonly qemus = new Set<ChildProcess>();
  /** The running migration's source QEMU (for `openStreams`). */
  private sourcePid?: number;
  /** The guests' RAM files in /dev/shm, removed when their QEMU exits and at cleanup whatever happened. */
  private readonly ramFiles = new Set<string>();
  exchangeMs = 0;
  /** The router and the sites' segments (`routed-sites` layout only). */
  routed?: RoutedSites;
  /**
   * More QEMU arguments for a QEMU in cluster `ci`'s handler namespace, after the lab's own (e.g. a NIC:
   * `-netdev tap,...` and `-device virtio-net-pci,...`, test/support/vm-l2-lab.ts). Source and target must
   * give the guest identical devices. @default - none (the guest has no NIC)
   */
  qemuArgs?: (ci: number) => string[];
  /**
   * More environment for the gateway runtimes started from now on (bench:vm's A/B levers: jest's process.env is a
   * copy the lab's children never see). @default - none
   */
  gatewayEnv: Record<string, string> = {};

  /**
   * `layout`: see vm-lab-sites.ts (default `one-segment`: three-sites-vlan on one segment). `cpus`: where the
   * QEMUs and the gateway runtimes run (`taskset -c` lists); default everywhere. `{ qemu: '0', gateway: '1' }`
   * gives the gateways a core of their own, as on gateway nodes, while the two guests share the other.
   */
  constructor(readonly shape: VmShape, readonly channels = 4, readonly log: (s: string) => void = console.log, readonly layout: VmLabLayout = 'one-segment',
    readonly cpus: { qemu?: string; gateway?: string } = {}) {}

  private async killWait(p: ChildProcess | undefined, ms = 10_000): Promise<void> {
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise<void>((r) => p.once('exit', () => r()));
    this.lab.kill(p, 'SIGKILL');
    let t: NodeJS.Timeout | undefined;
    await Promise.race([gone, new Promise((r) => { t = setTimeout(r, ms); })]);
    clearTimeout(t);
  }

  async setup(): Promise<void> {
    NetnsLab.reapStale();
    this.lab = new NetnsLab(`mm${process.pid}-vm`);
    this.tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-vm-netns-'));
    fs.chmodSync(this.tmp, 0o755);
    this.guest = buildGuest();
    const vlanFiltering = kernelHasBridgeVlanFiltering(this.lab);
    const kernelCfg = (cfg: Record<string, unknown>) => (vlanFiltering ? cfg : withoutVlan(cfg));

    // the example, synthesized once per gateway mode; only ams-1 and fra-1 are realized
    const FLEET = LAYOUT_FLEET[this.layout];
    const base = loadFleetFile(FLEET) as any;
    const ledger = loadLedgerFile(ledgerPathFor(FLEET));
    const topos = {} as Record<GatewayMode, ClusterTopology[]>;
    let sites: SitePlan[] = [];
    for (const m of Object.keys(GATEWAY_MODES) as GatewayMode[]) {
      const synth = synthesizeFleet(fleetForDatapath(base, m), { ledger });
      sites = synth.plan.sites;
      topos[m] = topologyFromFiles(synth.files).filter((t) => t.name === 'ams-1' || t.name === 'fra-1');
      if (topos[m].map((t) => t.gatewayConfig.tls.mode).join() !== `${m},${m}`) throw new Error(`variant ${m}: tls.mode ${topos[m].map((t) => t.gatewayConfig.tls.mode)}`);
    }
    const addrs = (m: GatewayMode) => JSON.stringify(topos[m].map((t) => [
      t.migrationNad.config, t.gateways.map((g) => [g.inCluster.selection, g.crossCluster.selection]), t.gatewayConfig.listen, t.initArgs, t.runArgs]));
    if (addrs('mtls') !== addrs('mtls-splice') || addrs('plaintext') !== addrs('mtls-splice')) throw new Error('the mode variants differ in addresses, attachments or commands: one network setup cannot serve them');
    const first = topos['mtls-splice'];
    const fleet = first[0].gatewayConfig.fleet;
    const pki = makeFleetPki(this.tmp, fleet, first.map((t) => t.name));

    const xcMtu = first[0].gateways[0].crossCluster.mtu;
    const { uplink, routed } = labSegments(this.lab, this.layout, sites, xcMtu);
    this.routed = routed;
    const direct = this.layout === 'routed-sites' ? routedDirectVariant(base, first.map((t) => t.name)) : undefined;
    const H0 = Date.now();
    for (const [i, t] of first.entries()) {
      const lab = this.lab;
      const node = lab.addNs(`c${i}-node`);
      const g = t.gateways[0];
      uplink(t.name, i, node, g.crossCluster.config.bridge);
      const attach = (podNs: string, pod: string, ifname: string, config: Record<string, unknown>) => this.cni.add({
        nodeNs: node, podNs, ifname, containerId: `mm-${process.pid}-vm-${++this.seq}`, config: kernelCfg(config), pod: { namespace: 'kubevirt', name: pod },
      });
      // the virt-handler: migration0 from the migration NAD, the first address whereabouts hands out
      const [hAddr] = whereaboutsFirstFree(t.migrationNad.ipam, 1);
      const hns = lab.addNs(`c${i}-h`);
      attach(hns, `virt-handler-${t.name}`, 'migration0', whereaboutsAsStatic(t.migrationNad.config, hAddr));
      // the gateway: both attachments as its Multus selection asks, and eth0 on the pod network to the API server
      const gns = lab.addNs(`c${i}-g0`);
      for (const att of [g.inCluster, g.crossCluster]) attach(gns, g.deployment, att.selection.interface, multusDelegateConfig(att.config, att.selection));
      // the cluster's API server and virt-operator's model; its CAs are openssl CAs (own key) that issue the handler's certificate
      const namespace = g.trustArgs![g.trustArgs!.indexOf('--namespace') + 1];
      const { api, kubeconfig } = await clusterApi(lab, this.tmp, node, t.name, namespace);
      lab.addVeth({ hostNs: gns, ifname: 'eth0', addrs: ['10.244.0.10/24'], fabricNs: node, portName: 'pod0', bridge: 'br-pod' });
      const caKeys = new Map<string, { key: string; cert: string }>();
      const issueCa: CaIssuer = (id) => {
        const ca = makeClusterCa(path.join(this.tmp, `${id}`), id);
        const x = new crypto.X509Certificate(ca.pem);
        const sim = { id, nb: Date.parse(x.validFrom), na: Date.parse(x.validTo), pem: ca.pem, sha256: crypto.createHash('sha256').update(x.raw).digest('hex') };
        caKeys.set(sim.sha256, ca);
        return sim;
      };
      const model = new VirtOperatorModel(api, t.name, 168 * H, 96 * H, Date.now, { issueCa });
      model.install(0);
      const runDir = path.join(this.tmp, `${t.name}-run`);
      fs.mkdirSync(runDir, { mode: 0o700 });
      fs.chownSync(runDir, RUNTIME_UID, RUNTIME_UID);
      for (const f of [pki[t.name].key, pki[t.name].cert]) fs.chownSync(f, RUNTIME_UID, RUNTIME_UID);
      fs.chmodSync(pki[t.name].key, 0o600);
      const handler = { ns: hns, addr: hAddr.split('/')[0], direct: direct ? direct[t.name].address.split('/')[0] : ONE_SEGMENT_DIRECT[i], certDir: path.join(this.tmp, `${t.name}-handler-cert`) };
      this.clusters.push({
        name: t.name, topo: { 'mtls-splice': topos['mtls-splice'][i], mtls: topos.mtls[i], plaintext: topos.plaintext[i] }, node, handler, caKeys,
        gw: { ns: gns, cfgFile: path.join(this.tmp, `${t.name}-config.json`), log: path.join(this.tmp, `${t.name}-gw.log`), trustLog: path.join(this.tmp, `${t.name}-trust.log`), runDir },
        api, model, kubeconfig, bundleWithoutExchange: api.get('kubevirt-ca')!.data['ca-bundle'],
      });
      (this.clusters[i] as any).pki = pki[t.name];
      this.issueHandlerCert(this.clusters[i]);
    }
    addDirectPath(this.lab, this.cni, this.clusters, { mtu: first[0].migrationNad.mtu, direct, kernelCfg, containerId: () => `mm-${process.pid}-vm-${++this.seq}` });
    const [a, b] = this.clusters;

    // the rule-setup step once (its rules are the same in every variant), then the runtimes in mtls-splice
    for (const c of this.clusters) {
      this.writeConfig(c, 'mtls-splice');
      const init = this.lab.exec(c.gw.ns, runtimeCommand(c.topo['mtls-splice'].initArgs, c.gw.cfgFile), { onlyCaps: ['net_admin'] });
      if (init.status !== 0) throw new Error(`setup-rules in ${c.gw.ns} failed: ${init.stderr}`);
    }
    await this.setMode('mtls-splice');
    // the exchange: the trust containers (uid 65532, the API only over the pod network), until each kubevirt-ca holds the peer's CA
    const t0 = Date.now();
    for (const c of this.clusters) {
      c.gw.trust = this.lab.spawn(c.gw.ns, [...runtimeCommand(c.topo['mtls-splice'].gateways[0].trustArgs!, c.gw.cfgFile), '--kubeconfig', c.kubeconfig], { asUser: RUNTIME_UID, logFile: c.gw.trustLog });
    }
    const end = Date.now() + 30_000;
    while (!(a.model.trusts(b.model.ca.sha256) && b.model.trusts(a.model.ca.sha256))) {
      if (Date.now() > end) throw new Error(`the trust exchange did not converge in 30 s\n${this.tails()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    this.exchangeMs = Date.now() - t0;
    this.log(`[vm-lab] ${this.lab.all().length} namespaces, ${this.cni.all().length} CNI attachments; trust exchange converged in ${this.exchangeMs} ms (setup ${Date.now() - H0} ms)`);
  }

  tails(): string {
    const tail = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').slice(-6).join('\n') : '(no log)');
    return this.clusters.map((c) => `--- ${c.name} gateway\n${tail(c.gw.log)}\n--- trust\n${tail(c.gw.trustLog)}`).join('\n');
  }

  private writeConfig(c: LabCluster, m: GatewayMode): void {
    const t = c.topo[m];
    const pki = (c as any).pki;
    const cfg = {
      ...t.gatewayConfig,
      tls: m === 'plaintext' ? t.gatewayConfig.tls : { mode: t.gatewayConfig.tls.mode, caFile: pki.ca, certFile: pki.cert, keyFile: pki.key },
      ...(t.gatewayConfig.trust ? { trust: { ...t.gatewayConfig.trust, socket: path.join(c.gw.runDir, 'trust.sock') } } : {}),
    };
    fs.writeFileSync(c.gw.cfgFile, JSON.stringify(cfg, null, 2));
    fs.chownSync(c.gw.cfgFile, RUNTIME_UID, RUNTIME_UID);
  }

  /** (Re)start both runtimes with `m`'s config.json (or both HAProxies); ready when /readyz answers (HAProxy: when it listens). */
  async setMode(m: ChainMode): Promise<void> {
    // both clusters' gateways at once: each lives in its own namespace with its own config file and log
    await Promise.all(this.clusters.map((c) => this.startGateway(c, m)));
    this.mode = m;
  }

  async startGateway(c: LabCluster, m: ChainMode): Promise<void> {
    await this.killWait(c.gw.proc);
    if (m === 'haproxy-chain') return this.startHaproxy(c);
    this.writeConfig(c, m);
    const env = Object.entries(this.gatewayEnv).map(([k, v]) => `${k}=${v}`);
    const cmd = runtimeCommand(c.topo[m].runArgs, c.gw.cfgFile);
    c.gw.proc = this.lab.spawn(c.gw.ns, pinned(this.cpus.gateway, env.length ? ['env', ...env, ...cmd] : cmd), { asUser: RUNTIME_UID, logFile: c.gw.log });
    const port = c.topo[m].gatewayConfig.listen.admin.port;
    const [r] = await this.lab.execJson(c.gw.ns, agentCommand('probe', `http://127.0.0.1:${port}/readyz`, READY_MS), READY_MS);
    if (!r?.ok) throw new Error(`gateway ${c.gw.ns} (${m}) not ready: ${JSON.stringify(r)}\n${this.tails()}`);
  }

  /** HAProxy in place of cluster `c`'s runtime (`haproxyConfig`), as the runtime's user; ready once both its listeners listen. */
  private async startHaproxy(c: LabCluster): Promise<void> {
    const cfg = c.topo['mtls-splice'].gatewayConfig;
    const file = path.join(this.tmp, `${c.name}-haproxy.cfg`);
    fs.writeFileSync(file, haproxyConfig(cfg));
    c.gw.proc = this.lab.spawn(c.gw.ns, pinned(this.cpus.gateway, ['haproxy', '-db', '-f', file]), { asUser: RUNTIME_UID, logFile: c.gw.log });
    const ports = [cfg.listen.intercept.port, cfg.listen.tunnel.port];
    const end = Date.now() + READY_MS;
    for (;;) {
      const ss = this.lab.exec(c.gw.ns, ['ss', '-Hltn']).stdout;
      if (ports.every((p) => ss.includes(`:${p} `))) return;
      if (Date.now() > end || c.gw.proc.exitCode !== null) throw new Error(`haproxy in ${c.gw.ns} not listening on ${ports.join(', ')}\n${this.tails()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  async killGateway(c: LabCluster): Promise<void> { await this.killWait(c.gw.proc); }

  /** The handler's certificate, issued by its cluster's current CA (virt-operator reissues it in the reconcile that rotates the CA). */
  private issueHandlerCert(c: LabCluster): void {
    const ca = c.caKeys.get(c.model.ca.sha256);
    if (!ca) throw new Error(`${c.name}: no key for the current CA ${c.model.ca.id}`);
    issueHandlerCert(ca.key, ca.cert, c.handler.certDir, `virt-handler.${c.name}`, `${c.handler.addr},IP:${c.handler.direct}`);
  }

  /**
   * Rotate cluster `ci`'s KubeVirt CA ahead of schedule through virt-operator's model (`rotateNow`: a new
   * CA with its own key, merged into kubevirt-ca with the old one kept for the overlap) and reissue its
   * handler's certificate by the new CA. Nothing here touches the peer: resolves once the exchange has put
   * the new CA into the peer's kubevirt-ca, with how long that took, and the peer's bundle before.
   */
  async rotateCa(ci: number, timeoutMs = 30_000): Promise<{ sha256: string; trustedByPeerMs: number; peerBundleBefore: string }> {
    const c = this.clusters[ci];
    const peer = this.clusters[1 - ci];
    const peerBundleBefore = peer.api.get('kubevirt-ca')!.data['ca-bundle'];
    const t0 = Date.now();
    const ca = c.model.rotateNow();
    this.issueHandlerCert(c);
    while (!peer.model.trusts(ca.sha256)) {
      if (Date.now() - t0 > timeoutMs) throw new Error(`${peer.name} does not trust ${c.name}'s rotated CA after ${timeoutMs} ms\n${this.tails()}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    return { sha256: ca.sha256, trustedByPeerMs: Date.now() - t0, peerBundleBefore };
  }

  /** Spawn a QEMU in a handler namespace, connected to its monitor. */
  private async qemu(ci: number, incoming: boolean): Promise<Vm> {
    const id = `${this.clusters[ci].name}-${++this.seq}`;
    const monitor = path.join(this.tmp, `${id}.mon`);
    const qmp = path.join(this.tmp, `${id}.qmp`);
    const serial = path.join(this.tmp, `${id}.serial`);
    const qlog = path.join(this.tmp, `${id}.qemu.log`);
    const ram = path.join('/dev/shm', `${path.basename(this.tmp)}-${id}.ram`);
    const ramIsFile = this.shape.ram !== 'anonymous';
    const cmd = qemuCommand(this.guest, this.shape, { monitor, qmp, serial, incoming, ramFile: ramIsFile ? ram : undefined });
    cmd.push(...(this.qemuArgs?.(ci) ?? []));
    const proc = this.lab.spawn(this.clusters[ci].handler.ns, pinned(this.cpus.qemu, cmd), { logFile: qlog });
    this.qemus.add(proc);
    this.ramFiles.add(ram);
    proc.once('exit', () => { this.qemus.delete(proc); fs.rmSync(ram, { force: true }); this.ramFiles.delete(ram); });
    const hmp = new Hmp(monitor);
    // a QEMU that exits at start fails at once with what it said; one that is only slow (QEMU's start-up at load
    // 20+ took over 20 s beside bench:vm) is waited for: the bound only catches a hang
    let exited: (() => void) | undefined;
    const died = new Promise<never>((_, reject) => {
      exited = () => reject(new Error(`QEMU in ${this.clusters[ci].handler.ns} exited (${proc.exitCode ?? proc.signalCode}) before its monitor answered: ${fs.existsSync(qlog) ? fs.readFileSync(qlog, 'utf8').slice(-600) : ''}`));
      proc.once('exit', exited);
    });
    died.catch(() => undefined);
    const connected = hmp.connect(90_000);
    connected.catch(() => undefined); // when QEMU died first, the connect's own later failure is not news
    try {
      await Promise.race([connected, died]);
    } finally {
      proc.off('exit', exited!);
    }
    return { at: ci, proc, hmp, qmp, serial, qlog, ram, ramIsFile };
  }

  /** Boot the VM in cluster `ci`'s handler namespace; resolves once the guest ticks. */
  async boot(ci = 0, timeoutMs = 240_000): Promise<number> {
    return this.bootMany(1, ci, timeoutMs);
  }

  /** Boot `n` VMs at once in cluster `ci`'s handler namespace (in place of any running); resolves once every guest ticks. */
  async bootMany(n: number, ci = 0, timeoutMs = 240_000): Promise<number> {
    const t0 = Date.now();
    this.vms = [];
    for (let i = 0; i < n; i++) this.vms.push(await this.qemu(ci, false));
    for (const vm of this.vms) await ticking(vm, t0 + timeoutMs);
    return Date.now() - t0;
  }

  /** A fresh guest in place of the current one (one a migration left damaged), in the same handler namespace. */
  async reboot(): Promise<number> {
    const at = this.vm?.at ?? 0;
    if (this.vm) { this.vm.hmp.close(); await this.killWait(this.vm.proc); }
    const t0 = Date.now();
    this.vms[0] = await this.qemu(at, false);
    await ticking(this.vms[0], t0 + 240_000);
    return Date.now() - t0;
  }

  /**
   * TLS credentials for one migration, as the handler reads them now: its certificate, and as ca-cert.pem the
   * `ca-bundle` of its cluster's kubevirt-ca (or, `withoutExchange`, the bundle the cluster held before any
   * trust container ran). A fresh object id per migration: object_add reads the files at that moment.
   */
  private async tlsCreds(vm: Vm, endpoint: 'client' | 'server', withoutExchange: boolean): Promise<string> {
    const c = this.clusters[vm.at];
    const id = `tls${++this.seq}`;
    const dir = path.join(this.tmp, id);
    writeTlsCreds(c.handler.certDir, dir, endpoint, withoutExchange ? c.bundleWithoutExchange : c.api.get('kubevirt-ca')!.data['ca-bundle']);
    for (const cmd of [`object_add tls-creds-x509,id=${id},dir=${dir},endpoint=${endpoint},verify-peer=on`, 'migrate_set_capability multifd on',
      `migrate_set_parameter multifd-channels ${this.channels}`, `migrate_set_parameter tls-creds ${id}`]) {
      const out = await vm.hmp.cmd(cmd);
      if (out) throw new Error(`${cmd}: ${out}`);
    }
    return id;
  }

  /**
   * Migrate the VM (`vms[0]`) to the other cluster's handler over `mode`: `migrateMany` with that one VM, its
   * result with the batch's CPU as its own.
   */
  async migrate(mode: PathMode, o: MigrateOptions = {}): Promise<MigrationResult> {
    if (!this.vm) throw new Error('no VM');
    return (await this.migrateMany(mode, o, [0])).results[0];
  }

  /**
   * Migrate the VMs `which` (indexes into `vms`, default all) at once, each to the other cluster's handler over
   * `mode` (a gateway mode must be the running one): every target started and listening first, then each
   * `migrate` issued back to back, then all waited for together. Completed: RAM of both paused sides compared,
   * the target resumed, the source killed; the VM lives on. Failed: the source must still run; the target is
   * killed (SIGKILL: it ignores SIGTERM while incoming). The CPU is the batch's, from the first `migrate` until
   * the last target completed (with one VM: that migration's).
   */
  async migrateMany(mode: PathMode, o: MigrateOptions = {}, which = this.vms.map((_, i) => i)): Promise<BatchResult> {
    const t0 = Date.now();
    if (mode !== 'direct' && mode !== this.mode) await this.setMode(mode);
    const gatewaysMs = Date.now() - t0;
    const preps: Prepared[] = [];
    try {
      for (const i of which) preps.push(await this.prepare(i, mode, o));
      if (gatewaysMs) preps[0].res.phases.gateways = gatewaysMs;
      const gateways = mode === 'direct' ? [] : this.clusters.map((c) => c.gw.proc?.pid).filter((x): x is number => x !== undefined);
      const sources = preps.map((p) => p.src.proc.pid!);
      const cpu0 = { machine: machineBusyMs(), gateways: gateways.map(processCpuMs), snap: cpuSnapshot(sources) };
      const started = Date.now();
      const startNs = process.hrtime.bigint();
      for (const p of preps) await this.start(p, started);
      if (o.whileRunning) { await o.whileRunning(preps[0].src.hmp); preps[0].mark('whileRunning'); } // then `migrate`: until the source's end
      await Promise.all(preps.map((p) => this.await(p, o)));
      const endNs = process.hrtime.bigint();
      const cpuMs = machineBusyMs() - cpu0.machine;
      const gatewayCpuMs = gateways.reduce((sum, pid, i) => sum + processCpuMs(pid) - cpu0.gateways[i], 0);
      const cpu = cpuParts(cpu0.snap, cpuSnapshot(sources), sources, preps.map((p) => p.dst.proc.pid!), gateways);
      const wallMs = Math.max(...preps.map((p) => p.res.completedAtMs ?? 0));
      for (const p of preps) {
        if (p.res.info.status === 'completed') Object.assign(p.res, { cpuMs, gatewayCpuMs, cpuParts: cpu });
        await this.conclude(p, o);
      }
      return { mode, results: preps.map((p) => p.res), wallMs, cpuMs, gatewayCpuMs, cpuParts: cpu, startNs, endNs };
    } catch (e) {
      // the QEMU the error names (its monitor's path), before the targets are killed: it may be the one that hangs
      const names = (x: Prepared) => (e as Error).message.includes(x.dst.hmp.path) || (e as Error).message.includes(x.src.hmp.path);
      const p = preps.find(names) ?? preps[0];
      const explained = p ? await explainQemu(p.src, e as Error, p.dst) : e;
      for (const x of preps) { x.dst.hmp.close(); await this.killWait(x.dst.proc); }
      throw explained;
    }
  }

  /** One VM's migration up to `migrate`: the released wait, its target listening, TLS credentials, the bandwidth. */
  private async prepare(vi: number, mode: PathMode, o: MigrateOptions): Promise<Prepared> {
    const src = this.vms[vi];
    if (!src) throw new Error(`no VM ${vi}`);
    const t0 = Date.now();
    let tp = t0;
    const phases: Record<string, number> = {};
    const mark = (name: string) => { const now = Date.now(); phases[name] = (phases[name] ?? 0) + now - tp; tp = now; };
    const ti = 1 - src.at;
    const to = this.clusters[ti];
    const host = mode === 'direct' ? to.handler.direct : to.handler.addr;
    await migrationReleased(src, this.log).catch(async (e: Error) => { throw await explainQemu(src, e); });
    mark('released');
    const port = ++this.port;
    this.sourcePid = src.proc.pid;
    const dst = await this.qemu(ti, true);
    mark('target');
    const res: MigrationResult = { mode, from: this.clusters[src.at].name, to: to.name, target: `${host}:${port}`, info: parseInfoMigrate(''), wallMs: 0, phases };
    const p: Prepared = { vi, src, dst, host, port, res, mark, t0, startedAt: 0, stop: false, arrived: Promise.resolve({ st: '', ms: NaN }) };
    try {
      await this.tlsCreds(dst, 'server', !!o.withoutExchange);
      await this.tlsCreds(src, 'client', !!o.withoutExchange);
      mark('creds');
      const inc = await dst.hmp.cmd(`migrate_incoming tcp:${host}:${port}`);
      if (inc) throw new Error(`migrate_incoming: ${inc}`);
      // KubeVirt's bandwidthPerMigration of the fleet (2Gi) unless the caller limits it
      await setMaxBandwidth(src.hmp, o.maxBandwidth ?? 2 * 1024 ** 3);
      if (o.pausedSource) {
        const stop = await src.hmp.cmd('stop');
        if (stop) throw new Error(`stop: ${stop}`);
      }
    } catch (e) {
      const explained = await explainQemu(src, e as Error, dst);
      dst.hmp.close();
      await this.killWait(dst.proc);
      throw explained;
    }
    return p;
  }

  /**
   * `migrate` on the source, and the target's side polled alongside: its RAM is compared only once it has loaded
   * everything. A failed incoming migration may end the target QEMU (its monitor then never answers): that ends
   * the polling. `batchStart`: when the batch's first `migrate` went out (each VM's completion is counted from it).
   */
  private async start(p: Prepared, batchStart: number): Promise<void> {
    p.startedAt = Date.now();
    p.res.startOffsetMs = p.startedAt - batchStart;
    const mig = await p.src.hmp.cmd(`migrate -d tcp:${p.host}:${p.port}`);
    if (mig) throw new Error(`migrate: ${mig}`);
    p.arrived = (async () => {
      for (;;) {
        // a monitor that is slow to answer (a busy target on a loaded machine) is asked again; only a closed one
        // (the QEMU exited) is unreachable
        const st = await p.dst.hmp.cmd('info migrate', 5000).then((t) => parseInfoMigrate(t).status, () => (p.dst.hmp.isClosed ? 'unreachable' : 'not answering'));
        if (st === 'completed' || st === 'failed' || st === 'unreachable') return { st, ms: Date.now() - p.startedAt, at: Date.now() - batchStart };
        if (p.stop) return { st, ms: NaN };
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
  }

  /** Until the source's end and the target's arrival (bounded: 60 s after the source's end). */
  private async await(p: Prepared, o: MigrateOptions): Promise<void> {
    p.res.info = await waitMigration(p.src.hmp, o.timeoutMs ?? 180_000);
    p.mark('migrate');
    if (p.res.info.status !== 'completed') p.stop = true;
    const bound = setTimeout(() => { p.stop = true; }, 60_000);
    const target = await p.arrived;
    clearTimeout(bound);
    p.mark('arrive');
    if (p.res.info.status === 'completed') {
      if (target.st !== 'completed') throw new Error(`source completed, the target's incoming migration is ${target.st} after 60 s`);
      p.res.arrivedMs = target.ms;
      p.res.completedAtMs = target.at;
    }
  }

  /** After the batch: a completed migration's RAM compared, the target resumed, the source killed; a failed one's source checked, the target killed. */
  private async conclude(p: Prepared, o: MigrateOptions): Promise<void> {
    const { src, dst, res, mark } = p;
    if (res.info.status === 'completed') {
      // both paused: the source by the migration's end (postmigrate), the target (-S) until `cont` below
      await compareRam(res, src, dst, this.shape.memMiB * 1024 * 1024, !!o.pmemsave);
      mark('ram');
      res.sourceLastTick = lastTick(src.serial);
      const c = await dst.hmp.cmd('cont');
      if (c) throw new Error(`cont: ${c}`);
      const end = Date.now() + 30_000;
      while (Date.now() < end && lastTick(dst.serial) <= res.sourceLastTick && !guestTrouble(dst.serial)) await new Promise((r) => setTimeout(r, 200));
      res.targetTick = lastTick(dst.serial);
      res.resumed = res.targetTick > res.sourceLastTick;
      res.trouble = guestTrouble(dst.serial);
      mark('resume');
      src.hmp.close();
      await this.killWait(src.proc);
      mark('stop');
      this.vms[p.vi] = dst;
    } else {
      const before = lastTick(src.serial);
      res.sourceStatus = /VM status:\s*(\S+)/.exec(await src.hmp.cmd('info status'))?.[1];
      const end = Date.now() + 20_000;
      while (Date.now() < end && lastTick(src.serial) <= before) await new Promise((r) => setTimeout(r, 200));
      res.sourceKeptTicking = lastTick(src.serial) > before;
      mark('source');
      dst.hmp.close();
      await this.killWait(dst.proc);
      mark('stop');
    }
    res.wallMs = Date.now() - p.t0;
  }

  /**
   * The wait before each `migrate` (migrationReleased) on two QEMUs: the running VM, whose last migration is
   * over, and a paused target in cluster `ci` listening in `migrate_incoming`, which holds the migration yank
   * instance for sure (incoming and outgoing migrations share it). What the wait said for each, bounded at
   * 1 s; the target is killed after.
   */
  async yankWaitProbe(ci: number): Promise<{ idle: string; held: string }> {
    const said = (vm: Vm) => migrationReleased(vm, this.log, 1000).then(() => 'released', (e: Error) => e.message);
    const idle = await said(this.vm!);
    const vm = await this.qemu(ci, true);
    try {
      const inc = await vm.hmp.cmd(`migrate_incoming tcp:${this.clusters[ci].handler.addr}:${++this.port}`);
      if (inc) throw new Error(`migrate_incoming: ${inc}`);
      return { idle, held: await said(vm) };
    } finally {
      vm.hmp.close();
      await this.killWait(vm.proc);
    }
  }

  /**
   * Established TCP connections of the running migration's source QEMU (to its target, or in a gateway mode
   * to the gateway that intercepts them): the main channel and one per multifd channel once the migration is
   * fully under way (1 + `channels`).
   */
  openStreams(): number {
    const pid = this.sourcePid;
    if (!pid) return 0;
    // its socket inodes (/proc/<pid>/fd) against its namespace's TCP tables: `ss -p` reads every process's
    // fds to name owners, which took seconds on a loaded machine, long enough for the migration to end
    try {
      const inodes = new Set(fs.readdirSync(`/proc/${pid}/fd`).map((fd) => {
        try { return /^socket:\[(\d+)\]$/.exec(fs.readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1]; } catch { return undefined; }
      }).filter((x): x is string => !!x));
      let n = 0;
      for (const table of ['tcp', 'tcp6']) {
        for (const line of fs.readFileSync(`/proc/${pid}/net/${table}`, 'utf8').split('\n').slice(1)) {
          const col = line.trim().split(/\s+/);
          if (col[3] === '01' && inodes.has(col[9])) n++; // 01: ESTABLISHED; column 9: the socket's inode
        }
      }
      return n;
    } catch {
      return 0; // the process is gone
    }
  }

  async cleanup(): Promise<void> {
    for (const vm of this.vms) vm.hmp.close();
    for (const p of this.qemus) await this.killWait(p);
    for (const c of this.clusters) { await this.killWait(c.gw.trust); await this.killWait(c.gw.proc); }
    this.cni.delAll();
    this.lab?.cleanup();
    for (const c of this.clusters) await c.api.close();
    for (const f of this.ramFiles) fs.rmSync(f, { force: true });
    if (this.tmp && !process.env.MM_NETNS_KEEP) fs.rmSync(this.tmp, { recursive: true, force: true });
  }
}

/**
 * A failed migration is not over when `info migrate` says `failed`: QEMU drops the migration's yank instance
 * only at the end of its clean-up (10.0.2: the last step of `migration_cleanup`, after the migration thread and
 * the multifd channels are joined). On 7.2 that came seconds later under load (a CI run: the gateway killed
 * mid-migration), or once in about 40 kills not at all; on 10.0.2, 120 gateway kills under 0-2 CPU hogs
 * waited at most 321 ms. A `migrate` before that is refused with `duplicate yank instance`, and the refusal
 * is for good: `migrate_init` has already moved the state to `setup`, and the yank check that refuses comes
 * after it with nothing moving the state back (10.0.2 `qmp_migrate_finish`; 7.2 `qmp_migrate` alike), so
 * every later `migrate` is "in progress". Retrying the refused `migrate` cannot help. So before a migration
 * starts, wait (bounded) until the source's QMP `query-yank` lists no migration instance and its status is
 * not a running one; a wait that times out names what each QEMU thread is blocked in.
 */
const RELEASE_MS = 30_000;
const RUNNING = new Set(['setup', 'active', 'cancelling', 'pre-switchover', 'device', 'wait-unplug', 'postcopy-active', 'postcopy-paused', 'postcopy-recover']);

async function migrationReleased(src: Vm, log: (s: string) => void, boundMs = RELEASE_MS): Promise<void> {
  const t0 = Date.now();
  for (;;) {
    const yank = await qmpExecute(src.qmp, 'query-yank') as { type: string }[];
    const st = parseInfoMigrate(await src.hmp.cmd('info migrate')).status;
    const held = yank.some((y) => y.type === 'migration');
    if (!held && !RUNNING.has(st)) {
      if (Date.now() - t0 > 500) log(`[vm-lab] the source's last migration (${st}) held its yank instance ${Date.now() - t0} ms`);
      return;
    }
    if (Date.now() - t0 > boundMs) {
      const stacks = held ? qemuStacks(src.proc.pid!) : undefined;
      const defect = stacks && knownQemuDefect(stacks);
      throw new Error(`the source's last migration is ${st}${held ? ' and still holds its yank instance' : ''} after ${boundMs} ms${stacks ? `\n${stacks.text}` : ''}${defect ? `\n${defect}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/**
 * An error of a migration step, told apart when a QEMU is the cause: it exited (its monitor closed: QEMU's last
 * words on stderr), or it stopped answering its monitor (its state, the CPU it used in the next second, what each
 * of its threads is in, its stderr); with the name of the QEMU defect when it is one the lab has met
 * (knownQemuDefect). Which QEMU: the one whose monitor the error names (the target's, when a step on the target
 * timed out), else the source. Otherwise `e` as it was. (A target's timeout was once reported with the source's
 * threads, which were idle, and so told nothing.)
 */
export async function explainQemu(src: QemuProcess, e: Error, dst?: QemuProcess): Promise<Error> {
  const [vm, role] = dst && e.message.includes(dst.hmp.path) ? [dst, 'target'] : [src, 'source'];
  const p = vm.proc;
  const stderr = () => (fs.existsSync(vm.qlog) ? fs.readFileSync(vm.qlog, 'utf8').trim().split('\n').slice(-5).join('\n') : '');
  if (p.exitCode === null && p.signalCode === null) {
    let t: NodeJS.Timeout | undefined;
    await Promise.race([new Promise((r) => p.once('exit', r)), new Promise((r) => { t = setTimeout(r, 2000); })]);
    clearTimeout(t);
  }
  if (p.exitCode !== null || p.signalCode !== null) {
    const log = stderr();
    const defect = knownQemuDefect({ log });
    return new Error(`the ${role} QEMU exited during the migration (${p.signalCode ?? `exit code ${p.exitCode}`}): ${log || '(nothing on its stderr)'}` +
      `${defect ? `\n${defect}` : ''}\n(the lab's step: ${e.message})`);
  }
  if (!/no prompt after|no answer after/.test(e.message)) return e;
  const cpu0 = processCpuMs(p.pid!);
  await new Promise((r) => setTimeout(r, 1000));
  const state = (() => { try { const st = fs.readFileSync(`/proc/${p.pid}/stat`, 'utf8'); return st.slice(st.lastIndexOf(')') + 2).split(' ')[0]; } catch { return '?'; } })();
  const busy = `state ${state}, ${processCpuMs(p.pid!) - cpu0} ms of CPU in the last second, ${processCpuMs(p.pid!)} ms in all`;
  const stacks = qemuStacks(p.pid!);
  const defect = knownQemuDefect(stacks);
  const log = stderr();
  return new Error(`the ${role} QEMU does not answer its monitor: ${e.message}\n${busy}\n${stacks.text}\nits stderr: ${log || '(nothing)'}${defect ? `\n${defect}` : ''}`);
}

/**
 * HAProxy as a user would chain it in place of the two gateways (issue 52's peer: `mode tcp`, splice on, one thread):
 * one process per gateway with two sections on the runtime's own listeners. `out`: the intercept listener (behind the
 * same REDIRECT rules; HAProxy reads the original destination with SO_ORIGINAL_DST) to the peer's tunnel listener,
 * handing that destination over in a PROXY v2 header; `in`: the tunnel listener, which takes the header and connects
 * to the destination it names (`0.0.0.0:0`). No TLS on the hop (QEMU's own TLS runs end to end, as in mtls-splice).
 */
function haproxyConfig(cfg: ClusterTopology['gatewayConfig']): string {
  const { intercept, tunnel } = cfg.listen;
  const peer = (cfg.peers as { gateways: { host: string; port: number }[] }[])[0].gateways[0];
  const bind = (l: { host: string; port: number; interface?: string }) => `  bind ${l.host}:${l.port}${l.interface ? ` interface ${l.interface}` : ''}`;
  return [
    'global', '  maxconn 4000', '  nbthread 1', 'defaults', '  mode tcp', '  timeout connect 5s', '  timeout client 300s', '  timeout server 300s',
    '  option splice-request', '  option splice-response',
    'listen out', bind(intercept), `  server peer ${peer.host}:${peer.port} send-proxy-v2`,
    'listen in', `${bind(tunnel)} accept-proxy`, '  server dst 0.0.0.0:0',
  ].join('\n') + '\n';
}

/** Resolves once the guest has ticked; throws with its console's end past `deadline` or when its QEMU exited. */
async function ticking(vm: Vm, deadline: number): Promise<void> {
  while (lastTick(vm.serial) < 1) {
    if (Date.now() > deadline || vm.proc.exitCode !== null) throw new Error(`guest did not tick in time: ${fs.existsSync(vm.serial) ? fs.readFileSync(vm.serial, 'latin1').slice(-800) : ''}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** `cmd` under `taskset -c cpus`, or as it is. */
const pinned = (cpus: string | undefined, cmd: string[]): string[] => (cpus ? ['taskset', '-c', cpus, ...cmd] : cmd);

const TICK_MS = 1000 / 100; // USER_HZ: /proc's clock ticks are 1/100 s on Linux

/** Busy CPU of the whole machine since boot, ms: user, nice, system, irq, softirq and steal ticks of /proc/stat's `cpu` line. */
function machineBusyMs(): number {
  const f = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  const [user, nice, system, , , irq, softirq, steal] = f;
  return (user + nice + system + irq + softirq + (steal ?? 0)) * TICK_MS;
}

/** CPU a process (all its threads) has used, ms: utime + stime of /proc/<pid>/stat; 0 once it is gone. */
function processCpuMs(pid: number): number {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) * TICK_MS; // fields 14 and 15 of stat(5), counted after the command name
  } catch {
    return 0;
  }
}

interface CpuSnapshot { machineMs: number; softirqMs: number; procs: Map<number, { pgrp: number; ppid: number; ms: number }>; threads: Map<number, number> }

/** CPU (ms) of each thread of `pid`, by thread id. */
function threadCpuMs(pid: number): Map<number, number> {
  const m = new Map<number, number>();
  try {
    for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
      try {
        const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
        const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
        m.set(Number(tid), (Number(f[11]) + Number(f[12])) * TICK_MS);
      } catch { /* ended meanwhile */ }
    }
  } catch { /* the process is gone */ }
  return m;
}

/** /proc/stat's busy and softirq time, every process's CPU (utime + stime) and the threads of the `pids`, ms. */
function cpuSnapshot(pids: number[]): CpuSnapshot {
  const procs = new Map<number, { pgrp: number; ppid: number; ms: number }>();
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      procs.set(Number(d), { ppid: Number(f[1]), pgrp: Number(f[2]), ms: (Number(f[11]) + Number(f[12])) * TICK_MS });
    } catch { /* gone meanwhile */ }
  }
  const softirq = Number(fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/)[7]) * TICK_MS;
  const threads = new Map(pids.flatMap((pid) => [...threadCpuMs(pid)]));
  return { machineMs: machineBusyMs(), softirqMs: softirq, procs, threads };
}

/** Who used the CPU between two snapshots: the process groups of the QEMUs (sources, targets) and of each gateway, kernel threads, the rest. */
function cpuParts(a: CpuSnapshot, b: CpuSnapshot, sources: number[], targets: number[], gateways: number[]): CpuParts {
  const group = new Map<number, number>([...sources, ...targets, ...gateways].map((g): [number, number] => [g, 0]));
  const sum = (pids: number[]) => pids.reduce((s, pid) => s + group.get(pid)!, 0);
  let kernelThreadsMs = 0;
  let othersMs = 0;
  let all = 0;
  for (const [pid, p] of b.procs) {
    const d = p.ms - (a.procs.get(pid)?.ms ?? 0);
    all += d;
    if (group.has(p.pgrp)) group.set(p.pgrp, group.get(p.pgrp)! + d);
    else if (pid === 2 || p.ppid === 2) kernelThreadsMs += d;
    else othersMs += d;
  }
  const machineMs = b.machineMs - a.machineMs;
  let sourceStayingMs = 0;
  for (const [tid, ms] of b.threads) if (a.threads.has(tid)) sourceStayingMs += ms - a.threads.get(tid)!;
  return {
    sourceMs: sum(sources), targetMs: sum(targets), sourceStayingMs, gatewaysMs: gateways.map((g) => group.get(g)!), kernelThreadsMs, othersMs,
    unattributedMs: machineMs - all, softirqMs: b.softirqMs - a.softirqMs, machineMs,
  };
}

/**
 * A paused VM's whole RAM as a file: its memory-backend file, or (anonymous RAM, or `copy`) QEMU's own
 * `pmemsave` copy of guest-physical [0, bytes) in /dev/shm, which `done` removes.
 */
async function ramImage(vm: Vm, bytes: number, copy = !vm.ramIsFile): Promise<{ file: string; done(): void }> {
  if (!copy) return { file: vm.ram, done: () => undefined };
  const file = `${vm.ram}.pmemsave`;
  const done = () => fs.rmSync(file, { force: true });
  const out = await vm.hmp.cmd(`pmemsave 0 ${bytes} "${file}"`, 60_000);
  if (out) { done(); throw new Error(`pmemsave: ${out}`); }
  return { file, done };
}

/** Both paused sides' RAM into `res`: hashes, equality, the differing pages; with `pmemsave`, also the hashes of QEMU's own copies. */
async function compareRam(res: MigrationResult, src: Vm, dst: Vm, bytes: number, pmemsave: boolean): Promise<void> {
  const [a, b] = [await ramImage(src, bytes), await ramImage(dst, bytes)];
  try {
    res.ramSha = [ramFileSha256(a.file, bytes), ramFileSha256(b.file, bytes)];
    res.ramEqual = res.ramSha[0] === res.ramSha[1];
    if (!res.ramEqual) res.ramDiff = ramDiff(a.file, b.file);
  } finally { a.done(); b.done(); }
  if (!pmemsave) return;
  const sha: string[] = [];
  for (const vm of [src, dst]) {
    const c = await ramImage(vm, bytes, true);
    try { sha.push(ramFileSha256(c.file, bytes)); } finally { c.done(); }
  }
  res.pmemsaveSha = [sha[0], sha[1]];
}
