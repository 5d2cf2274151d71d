/**
 * Network-namespace lab for the fleet test: namespaces, bridges in a dedicated "fabric" namespace, veth
 * pairs, tracked background processes, and complete cleanup (also on process exit). Plus the reading of
 * a synthesized fleet directory into the topology to realize: everything comes from the generated YAML
 * (NAD IPAM ranges/excludes/routes, gateway addresses from the pod-template Multus selection, the
 * peer-table ConfigMap), nothing is hand-written.
 */
import { ChildProcess, spawn, spawnSync, SpawnSyncReturns } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';

// ------------------------------------------------------------------------------------------------
// environment

const has = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;

/** Whether this machine can run the lab; `reason` says why not. */
export function netnsSupport(): { ok: true } | { ok: false; reason: string } {
  if (process.platform !== 'linux') return { ok: false, reason: `not Linux (${process.platform})` };
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return { ok: false, reason: 'not root (creating network namespaces needs CAP_SYS_ADMIN/CAP_NET_ADMIN)' };
  for (const cmd of ['ip', 'iptables', 'openssl', 'setpriv']) if (!has(cmd)) return { ok: false, reason: `'${cmd}' is not installed` };
  const probe = `mmprobe${process.pid}`;
  const r = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (r.status !== 0) return { ok: false, reason: `'ip netns add' failed: ${(r.stderr || '').trim()}` };
  const t = spawnSync('ip', ['netns', 'exec', probe, 'iptables', '-w', '-t', 'nat', '-S'], { encoding: 'utf8' });
  spawnSync('ip', ['netns', 'del', probe]);
  if (t.status !== 0) return { ok: false, reason: `iptables nat does not work in a namespace: ${(t.stderr || '').trim()}` };
  return { ok: true };
}

export const hasCommand = has;

/**
 * `describe` when this machine can run the lab (netnsSupport), else `describe.skip` after one
 * "[tag] SKIPPED: reason" line: never a silent skip.
 */
export function describeWithNetns(tag: string): jest.Describe {
  const support = netnsSupport();
  if (support.ok) return describe;
  console.warn(`[${tag}] SKIPPED: ${support.reason}`);
  return describe.skip;
}

// ------------------------------------------------------------------------------------------------
// the lab

export interface SpawnOpts {
  /** Run as this uid/gid with no capabilities (setpriv), like a non-root container. */
  readonly asUser?: number;
  /** Keep only these capabilities (e.g. ['net_admin']), uid 0, like a root container with `drop: [ALL], add: [...]`. */
  readonly onlyCaps?: string[];
  /** Append stdout+stderr here. */
  readonly logFile?: string;
}

function privWrap(cmd: string[], o: SpawnOpts): string[] {
  if (o.asUser !== undefined) {
    return ['setpriv', `--reuid=${o.asUser}`, `--regid=${o.asUser}`, '--clear-groups', '--inh-caps=-all', '--bounding-set=-all', '--no-new-privs', ...cmd];
  }
  if (o.onlyCaps) {
    const caps = o.onlyCaps.map((c) => `+${c}`).join(',');
    return ['setpriv', '--inh-caps=-all', `--bounding-set=-all,${caps}`, '--no-new-privs', ...cmd];
  }
  return cmd;
}

/**
 * How long a background process may take to start and say so (a node process printing "listening"): 5 s
 * was once not enough in CI with both cores busy. Only a process that never starts waits this long.
 */
export const STARTUP_MS = 30_000;

/**
 * How long a gateway runtime may take from its start until its /readyz answers 200: 15 s was not enough in a
 * fresh-clone CI run beside two CPU hogs (`npm test` 948 s), and a trust container once took 27 s to start. A
 * hang bound: readiness is timed nowhere.
 */
export const READY_MS = 60_000;

export class NetnsLab {
  public readonly prefix: string;
  private readonly namespaces: string[] = [];
  private readonly procs = new Set<ChildProcess>();
  private cleaned = false;
  private readonly onExit = () => this.cleanup();

  constructor(prefix = `mm${process.pid}`) {
    this.prefix = prefix;
    process.on('exit', this.onExit);
  }

  /** Remove namespaces left behind by earlier runs whose test process is gone. */
  static reapStale(): string[] {
    const r = spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' });
    const gone: string[] = [];
    for (const line of (r.stdout || '').split('\n')) {
      const name = line.split(' ')[0];
      const m = /^mm(\d+)-/.exec(name);
      if (!m || Number(m[1]) === process.pid) continue;
      let alive = true;
      try { process.kill(Number(m[1]), 0); } catch { alive = false; }
      if (alive) continue;
      const pids = spawnSync('ip', ['netns', 'pids', name], { encoding: 'utf8' }).stdout.split('\n').filter(Boolean).map(Number);
      for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
      spawnSync('ip', ['netns', 'del', name]);
      gone.push(name);
    }
    return gone;
  }

  /** Full name of a namespace of this run. */
  name(short: string): string { return `${this.prefix}-${short}`; }

  addNs(short: string): string {
    const ns = this.name(short);
    this.run(['ip', 'netns', 'add', ns]);
    this.namespaces.push(ns);
    this.run(['ip', '-n', ns, 'link', 'set', 'lo', 'up']);
    return ns;
  }

  /** Run a command synchronously; throw with its stderr when it fails. */
  run(cmd: string[], timeoutMs = 15_000): SpawnSyncReturns<string> {
    const r = spawnSync(cmd[0], cmd.slice(1), { encoding: 'utf8', timeout: timeoutMs });
    if (r.status !== 0) throw new Error(`${cmd.join(' ')} failed (${r.status ?? r.signal}): ${(r.stderr || r.error?.message || '').trim()}`);
    return r;
  }

  /** Run a command in a namespace synchronously (no throw). */
  exec(ns: string, cmd: string[], opts: SpawnOpts & { timeoutMs?: number } = {}): SpawnSyncReturns<string> {
    return spawnSync('ip', ['netns', 'exec', ns, ...privWrap(cmd, opts)], { encoding: 'utf8', timeout: opts.timeoutMs ?? 30_000 });
  }

  /**
   * Run a command in a namespace and resolve with its stdout lines parsed as JSON. Bounded in time: `timeoutMs` for
   * its work, plus STARTUP_MS for the process to start: a hang bound, the callers' own timeouts carry the meaning.
   * (A try that must not wait for a slow start is made by a process started beforehand: retryClient.)
   */
  execJson(ns: string, cmd: string[], timeoutMs: number, opts: SpawnOpts = {}): Promise<any[]> {
    timeoutMs += STARTUP_MS;
    return new Promise((resolve, reject) => {
      const p = this.spawn(ns, cmd, opts);
      let stdout = '';
      let stderr = '';
      p.stdout?.on('data', (d) => { stdout += d; });
      p.stderr?.on('data', (d) => { stderr += d; });
      const timer = setTimeout(() => { this.kill(p); reject(new Error(`${cmd.join(' ')} in ${ns}: no result after ${timeoutMs} ms; stderr: ${stderr}`)); }, timeoutMs);
      p.on('close', (code) => {
        clearTimeout(timer);
        this.procs.delete(p);
        try {
          resolve(stdout.split('\n').filter((l) => l.trim().startsWith('{')).map((l) => JSON.parse(l)));
        } catch (e) {
          reject(new Error(`${cmd.join(' ')} in ${ns} (exit ${code}): bad output ${stdout} ${stderr}`));
        }
      });
    });
  }

  /** Start a tracked background process in a namespace (its own process group). */
  spawn(ns: string, cmd: string[], opts: SpawnOpts = {}): ChildProcess {
    const full = ['netns', 'exec', ns, ...privWrap(cmd, opts)];
    let stdio: any = ['ignore', 'pipe', 'pipe'];
    let fd: number | undefined;
    if (opts.logFile) {
      fd = fs.openSync(opts.logFile, 'a');
      stdio = ['ignore', fd, fd];
    }
    const p = spawn('ip', full, { stdio, detached: true });
    if (fd !== undefined) fs.closeSync(fd); // the child holds its own copy
    this.procs.add(p);
    p.on('exit', () => this.procs.delete(p));
    return p;
  }

  /** SIGKILL a tracked process group. */
  kill(p: ChildProcess, signal: NodeJS.Signals = 'SIGKILL'): void {
    if (p.pid === undefined) return;
    try { process.kill(-p.pid, signal); } catch { /* already gone */ }
  }

  /**
   * Wait (bounded) until a background process prints a line matching `re`. For a process that only has to
   * start, pass STARTUP_MS: a bound that bites only when it never does.
   */
  waitForLine(p: ChildProcess, re: RegExp, timeoutMs: number, what: string): Promise<string> {
    return new Promise((resolve, reject) => {
      let buf = '';
      const timer = setTimeout(() => reject(new Error(`${what}: no line matching ${re} after ${timeoutMs} ms; got: ${buf.slice(-500)}`)), timeoutMs);
      const onData = (d: Buffer) => {
        buf += d.toString();
        const line = buf.split('\n').find((l) => re.test(l));
        if (line) { clearTimeout(timer); p.stdout?.off('data', onData); resolve(line); }
      };
      p.stdout?.on('data', onData);
      p.on('exit', (code) => { clearTimeout(timer); reject(new Error(`${what}: exited (${code}) before ${re}; got: ${buf.slice(-500)}`)); });
    });
  }

  /** A Linux bridge in `ns`. */
  addBridge(ns: string, bridge: string, mtu?: number): void {
    this.run(['ip', '-n', ns, 'link', 'add', bridge, 'type', 'bridge']);
    if (mtu) this.run(['ip', '-n', ns, 'link', 'set', bridge, 'mtu', String(mtu)]);
    this.run(['ip', '-n', ns, 'link', 'set', bridge, 'up']);
  }

  /**
   * A veth from `hostNs` (named `ifname`, with `addrs`) to a port `portName` of `bridge` in `fabricNs`,
   * or straight into `peerNs` when no bridge is given.
   */
  addVeth(opts: {
    hostNs: string; ifname: string; addrs: string[]; fabricNs: string; portName: string; bridge?: string; mtu?: number; peerAddrs?: string[];
  }): void {
    const { hostNs, ifname, fabricNs, portName } = opts;
    this.run(['ip', '-n', fabricNs, 'link', 'add', portName, 'type', 'veth', 'peer', 'name', ifname, 'netns', hostNs]);
    if (opts.mtu) {
      this.run(['ip', '-n', fabricNs, 'link', 'set', portName, 'mtu', String(opts.mtu)]);
      this.run(['ip', '-n', hostNs, 'link', 'set', ifname, 'mtu', String(opts.mtu)]);
    }
    if (opts.bridge) this.run(['ip', '-n', fabricNs, 'link', 'set', portName, 'master', opts.bridge]);
    for (const a of opts.peerAddrs ?? []) this.run(['ip', '-n', fabricNs, 'addr', 'add', a, 'dev', portName]);
    this.run(['ip', '-n', fabricNs, 'link', 'set', portName, 'up']);
    for (const a of opts.addrs) this.run(['ip', '-n', hostNs, 'addr', 'add', a, 'dev', ifname]);
    this.run(['ip', '-n', hostNs, 'link', 'set', ifname, 'up']);
  }

  /** Every namespace of this run. */
  all(): string[] { return [...this.namespaces]; }

  /** Kill every process, delete every namespace (and with them the veths and bridges). Idempotent. */
  cleanup(): void {
    if (this.cleaned) return;
    this.cleaned = true;
    for (const p of this.procs) this.kill(p);
    this.procs.clear();
    for (const ns of [...this.namespaces].reverse()) {
      const pids = spawnSync('ip', ['netns', 'pids', ns], { encoding: 'utf8' }).stdout?.split('\n').filter(Boolean).map(Number) ?? [];
      for (const pid of pids) { try { process.kill(pid, 'SIGKILL'); } catch { /* gone */ } }
      spawnSync('ip', ['netns', 'del', ns]);
    }
    this.namespaces.length = 0;
    process.off('exit', this.onExit);
  }
}

// ------------------------------------------------------------------------------------------------
// IPv4 arithmetic (kept independent of the library's own address code on purpose)

export function ip4(a: string): number {
  const p = a.split('.').map(Number);
  if (p.length !== 4 || p.some((x) => !Number.isInteger(x) || x < 0 || x > 255)) throw new Error(`not an IPv4 address: ${a}`);
  return ((p[0] << 24) >>> 0) + (p[1] << 16) + (p[2] << 8) + p[3];
}
export const fmt4 = (n: number): string => [24, 16, 8, 0].map((s) => (n >>> s) & 255).join('.');
export function cidr4(c: string): { base: number; prefix: number; first: number; last: number } {
  const [a, l] = c.split('/');
  const prefix = Number(l);
  const mask = prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
  const base = (ip4(a) & mask) >>> 0;
  return { base, prefix, first: base, last: (base | (~mask >>> 0)) >>> 0 };
}
export const inCidr4 = (a: string, c: string): boolean => { const r = cidr4(c); const v = ip4(a); return v >= r.first && v <= r.last; };

/** The first `n` addresses whereabouts could hand out: inside range (or range_start..range_end), not excluded, not network/broadcast. */
export function whereaboutsFirstFree(ipam: { range: string; range_start?: string; range_end?: string; exclude?: string[] }, n: number): string[] {
  const r = cidr4(ipam.range);
  const lo = ipam.range_start ? ip4(ipam.range_start) : r.first + 1;
  const hi = ipam.range_end ? ip4(ipam.range_end) : r.last - 1;
  const out: string[] = [];
  for (let v = lo; v <= hi && out.length < n; v++) {
    const a = fmt4(v);
    if ((ipam.exclude ?? []).some((e) => inCidr4(a, e))) continue;
    out.push(`${a}/${r.prefix}`);
  }
  if (out.length < n) throw new Error(`whereabouts range ${ipam.range} has fewer than ${n} free addresses`);
  return out;
}

// ------------------------------------------------------------------------------------------------
// topology from the generated YAML

/** One gateway attachment: what the pod gets, the NAD's CNI config and the Multus selection element naming it. */
export interface GatewayAttachment {
  readonly ifname: string;
  readonly address: string;
  readonly routes: { dst: string; gw: string }[];
  readonly mtu?: number;
  /** The NAD's `spec.config`, parsed. */
  readonly config: any;
  /** The pod's Multus selection element (`name`, `namespace`, `interface`, `ips`). */
  readonly selection: { name: string; namespace: string; interface: string; ips: string[] };
}

export interface GatewayHost {
  readonly deployment: string;
  /** interface name, address/prefix, routes from its NAD. */
  readonly inCluster: GatewayAttachment;
  readonly crossCluster: GatewayAttachment;
  /** The failover sidecar's command line (keepalived), when the Deployment has one. */
  readonly failoverArgs?: string[];
  /** The trust container's command line (`migration-mesh-proxy trust ...`), when the Deployment has one. */
  readonly trustArgs?: string[];
}

export interface ClusterTopology {
  readonly name: string;
  /** The whereabouts NAD KubeVirt attaches as migration0 (what handlers and sync controllers get). */
  readonly migrationNad: {
    name: string;
    ipam: { range: string; range_start?: string; range_end?: string; exclude?: string[]; routes?: { dst: string; gw: string }[] };
    mtu?: number;
    /** The NAD's `spec.config`, parsed. */
    config: any;
  };
  readonly syncPort: number;
  readonly gateways: GatewayHost[];
  /** The runtime config text from the ConfigMap. */
  readonly gatewayConfig: any;
  readonly initArgs: string[];
  readonly runArgs: string[];
  /** keepalived.conf from the ConfigMap (gateway failover), when there is one. */
  readonly keepalivedConf?: string;
  /** Capabilities the failover container adds (its securityContext). */
  readonly failoverCaps?: string[];
}

/** Parse the synthesized files (`<cluster>/<file>.yaml` -> text) of a fleet into what the lab builds. */
export function topologyFromFiles(files: Map<string, string>): ClusterTopology[] {
  const byCluster = new Map<string, any[]>();
  for (const [rel, text] of files) {
    if (!rel.endsWith('.yaml') || rel.endsWith('kustomization.yaml')) continue;
    const cluster = rel.split('/')[0];
    const docs = YAML.parseAllDocuments(text).map((d) => d.toJS()).filter(Boolean);
    byCluster.set(cluster, [...(byCluster.get(cluster) ?? []), ...docs]);
  }
  const out: ClusterTopology[] = [];
  for (const [name, objs] of [...byCluster].sort(([a], [b]) => a.localeCompare(b))) {
    const nads = objs.filter((o) => o.kind === 'NetworkAttachmentDefinition');
    const kv = objs.find((o) => o.kind === 'KubeVirt');
    const migName = kv?.spec?.configuration?.migrations?.network;
    const kvNs = kv?.metadata?.namespace;
    const migNad = nads.find((n) => n.metadata.name === migName && n.metadata.namespace === kvNs);
    if (!migNad) throw new Error(`${name}: no NAD ${kvNs}/${migName} (the KubeVirt migrations.network)`);
    const migCfg = JSON.parse(migNad.spec.config);
    if (migCfg.ipam?.type !== 'whereabouts') throw new Error(`${name}: migration NAD ipam is ${migCfg.ipam?.type}, expected whereabouts`);
    const cm = objs.find((o) => o.kind === 'ConfigMap' && o.data?.['config.json']);
    if (!cm) throw new Error(`${name}: no gateway ConfigMap with config.json`);
    const deps = objs.filter((o) => o.kind === 'Deployment' && o.spec?.template?.metadata?.annotations?.['k8s.v1.cni.cncf.io/networks']);
    const gateways: GatewayHost[] = deps.map((d) => {
      const sel = JSON.parse(d.spec.template.metadata.annotations['k8s.v1.cni.cncf.io/networks']);
      const att = (el: any) => {
        const nad = nads.find((n) => n.metadata.name === el.name && n.metadata.namespace === el.namespace);
        if (!nad) throw new Error(`${name}/${d.metadata.name}: selection names ${el.namespace}/${el.name}, which is not synthesized`);
        const cfg = JSON.parse(nad.spec.config);
        return { ifname: el.interface, address: el.ips[0], routes: cfg.ipam?.routes ?? [], mtu: cfg.mtu, role: nad.metadata.labels?.['migrationmesh.dev/network'], config: cfg, selection: el };
      };
      const els = sel.map(att);
      const inC = els.find((e: any) => e.role === 'migration');
      const xc = els.find((e: any) => e.role === 'cross-cluster');
      if (!inC || !xc) throw new Error(`${name}/${d.metadata.name}: expected one migration and one cross-cluster attachment`);
      const c0 = d.spec.template.spec.containers[0];
      const i0 = d.spec.template.spec.initContainers[0];
      const fo = d.spec.template.spec.containers.find((c: any) => c.name === 'failover');
      const tr = d.spec.template.spec.containers.find((c: any) => c.name === 'trust');
      return {
        deployment: d.metadata.name, inCluster: inC, crossCluster: xc,
        ...(tr ? { trustArgs: [...(tr.command ?? []), ...(tr.args ?? [])] } : {}),
        ...(fo ? { failoverArgs: [...(fo.command ?? []), ...(fo.args ?? [])], _caps: fo.securityContext?.capabilities?.add ?? [] } : {}),
        _init: [...(i0.command ?? []), ...(i0.args ?? [])], _run: [...(c0.command ?? []), ...(c0.args ?? [])],
      } as any;
    });
    out.push({
      name,
      migrationNad: { name: migNad.metadata.name, ipam: migCfg.ipam, mtu: migCfg.mtu, config: migCfg },
      syncPort: Number(kv?.spec?.synchronizationPort ?? 9185),
      gateways,
      gatewayConfig: JSON.parse(cm.data['config.json']),
      initArgs: (gateways[0] as any)?._init ?? [],
      runArgs: (gateways[0] as any)?._run ?? [],
      ...(cm.data['keepalived.conf'] ? { keepalivedConf: cm.data['keepalived.conf'], failoverCaps: (gateways[0] as any)?._caps } : {}),
    });
  }
  return out;
}

/**
 * Fleet CA and one certificate per cluster (URI SAN `spiffe://<fleet>/cluster/<cluster>`), as the
 * cert-manager Secret would hold them, valid for `days` from now (longer for tests in simulated time).
 */
export function makeFleetPki(dir: string, fleet: string, clusters: string[], days = 1): Record<string, { ca: string; cert: string; key: string }> {
  const ossl = (args: string[]) => {
    const r = spawnSync('openssl', args, { cwd: dir, encoding: 'utf8' });
    if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
  };
  ossl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', String(days),
    '-subj', `/CN=${fleet} fleet CA`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  const out: Record<string, { ca: string; cert: string; key: string }> = {};
  for (const c of clusters) {
    const d = path.join(dir, c);
    fs.mkdirSync(d, { recursive: true });
    ossl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${c}/tls.key`, '-out', `${c}/tls.csr`, '-subj', '/O=migration-mesh']);
    fs.writeFileSync(path.join(d, 'ext'), `subjectAltName=URI:spiffe://${fleet}/cluster/${c}\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n`);
    ossl(['x509', '-req', '-in', `${c}/tls.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${c}/tls.crt`, '-days', String(days), '-extfile', `${c}/ext`]);
    fs.copyFileSync(path.join(dir, 'ca.crt'), path.join(d, 'ca.crt'));
    out[c] = { ca: path.join(d, 'ca.crt'), cert: path.join(d, 'tls.crt'), key: path.join(d, 'tls.key') };
  }
  return out;
}
