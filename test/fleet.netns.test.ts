/**
 * The fleet test: the synthesized manifests of a 3-cluster gateway-mode example, realized in Linux
 * network namespaces, carrying traffic through the real gateway runtime.
 *
 * Everything about the topology comes from the generated YAML: handler and sync-controller addresses
 * are the first ones whereabouts would hand out from the migration NAD's range/exclude, their routes
 * are the NAD's routes; gateway addresses and interface names come from each gateway Deployment's
 * pod-template Multus selection; the runtime config is the ConfigMap's `config.json`, of which only the
 * three TLS file paths are rewritten (to certificates made here with openssl, as cert-manager would
 * write them); the commands are the Deployment's init and main container commands.
 *
 * Pod attachments are made by the real CNI plugins (Debian containernetworking-plugins in /usr/lib/cni),
 * fed each NAD's config as Multus feeds it (runtimeConfig.ips from the pod's selection; whereabouts, not
 * packaged, replaced by static IPAM holding the address whereabouts would give), one node namespace per
 * cluster where the plugins run, and DEL after the test (test/support/netns-cni.ts).
 *
 * Simplifications (documented, not hidden): one node per cluster; the clusters' cross-cluster node
 * bridges are joined by one fabric bridge; pods have no pod network (eth0), so no default route; on a
 * kernel without bridge VLAN filtering (this CI kernel: `ip link add type bridge vlan_filtering 1`
 * fails) the NADs' `vlan` key is dropped, since the bridge plugin's ADD fails with it there; the
 * rule-setup step runs as root with only CAP_NET_ADMIN and the runtime as uid 65532 with no
 * capabilities, like the containers.
 *
 * Needs root, iproute2, iptables, openssl, setpriv (util-linux), the CNI plugins; iperf3 for the
 * throughput table. Skips with a message otherwise.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ChildProcess } from 'child_process';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { ClusterTopology, NetnsLab, cidr4, fmt4, hasCommand, inCidr4, makeFleetPki, netnsSupport, STARTUP_MS, topologyFromFiles, whereaboutsFirstFree, READY_MS } from './support/netns';
import { CNI_BIN, CniRunner, cniSupport, kernelHasBridgeVlanFiltering, multusDelegateConfig, whereaboutsAsStatic, withoutVlan } from './support/netns-cni';
import { AgentServers, agentClient, agentCommand, onJsonLines, retryClient, runtimeCommand } from './support/netns-agents';
import { loseNode, vipHolders as vipHoldersIn } from './support/netns-failover';

const ROOT = path.join(__dirname, '..');
const FLEET = path.join(ROOT, 'examples', 'three-sites-vlan.fleet.yaml');
const PROXY_CLI = path.join(ROOT, 'proxy', 'lib', 'cli.js');
const RUNTIME_UID = 65532;
/** A stand-in for the ephemeral ports the target virt-handler opens for migration data. */
const HIGH_PORT = 30000 + (process.pid % 30000);

const support = netnsSupport();
const runtimeBuilt = fs.existsSync(PROXY_CLI);
const cniOk = cniSupport();
const skipReason = !support.ok ? support.reason : !runtimeBuilt ? `gateway runtime not built (${PROXY_CLI} missing: run npm run build)` : !cniOk.ok ? cniOk.reason : undefined;
if (skipReason) {
  console.warn(`[fleet-netns] SKIPPED: ${skipReason}`);
}
const d = skipReason ? describe.skip : describe;

interface Host { ns: string; addr: string }
interface ClusterLab {
  topo: ClusterTopology;
  /** The cluster's node namespace: the bridges, and where the CNI plugins ran. */
  node: string;
  handlers: Host[];
  sync: Host;
  gateways: { ns: string; inAddr: string; xcAddr: string; ifname: string; proc?: ChildProcess; log: string; failoverArgs?: string[]; ka?: ChildProcess }[];
  /** The next hop of the handlers' routes when the replicas fail over (the VIP), from the NAD. */
  vip?: string;
}

/** Poll `fn` until it returns a value (bounded); undefined after `timeoutMs`. */
async function pollFor<T>(fn: () => T | undefined, timeoutMs: number, everyMs = 100): Promise<T | undefined> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

const bare = (a: string) => a.split('/')[0];

/** A directory the runtime (uid 65532) may create its trust socket in, as the pod's emptyDir. */
function runDirFor(tmp: string, cluster: string): string {
  const dir = path.join(tmp, `${cluster}-run`);
  fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
  fs.chownSync(dir, RUNTIME_UID, RUNTIME_UID);
  return dir;
}

d('fleet in network namespaces (three-sites-vlan, real gateway runtime)', () => {
  let lab: NetnsLab;
  let tmp: string;
  let clusters: ClusterLab[] = [];
  let cni: CniRunner;
  let vlanFiltering = false;
  let servers: AgentServers;
  const agent = agentCommand;
  const t0 = Date.now();



  const vipHolders = (c: ClusterLab): string[] => vipHoldersIn(lab, c);

  const client = (from: Host, to: string, port: number, bytes: number, timeoutMs = 15000) => agentClient(lab, from.ns, to, port, bytes, timeoutMs);

  beforeAll(async () => {
    NetnsLab.reapStale();
    lab = new NetnsLab();
    servers = new AgentServers(lab);
    cni = new CniRunner();
    vlanFiltering = kernelHasBridgeVlanFiltering(lab);
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-fleet-netns-'));
    fs.chmodSync(tmp, 0o755);

    // 1. synthesize the example, read back the generated YAML
    const result = synthesizeFleet(loadFleetFile(FLEET), { ledger: loadLedgerFile(ledgerPathFor(FLEET)) });
    const topo = topologyFromFiles(result.files);
    expect(topo.map((c) => c.name)).toEqual(['ams-1', 'fra-1', 'par-1']);

    // 2. PKI, as cert-manager would issue it from the fleet CA
    const fleet = topo[0].gatewayConfig.fleet;
    const pki = makeFleetPki(tmp, fleet, topo.map((c) => c.name));

    // 3. one node per cluster; the shared cross-cluster network is the node bridge of the NAD (br-xc,
    // created here as a node prerequisite, with an uplink into one fabric bridge joining the clusters);
    // the in-cluster bridge (br-mig) is created by the bridge plugin itself on the first ADD. Every pod
    // attachment is made by the real CNI plugins from the synthesized NAD config (test/support/netns-cni.ts).
    const fab = lab.addNs('fab');
    const xcMtu = topo[0].gateways[0].crossCluster.mtu;
    lab.addBridge(fab, 'br-xc', xcMtu);
    const vlanNote = vlanFiltering ? '' : ' (VLAN key dropped: this kernel has no bridge VLAN filtering)';
    const kernelCfg = (cfg: Record<string, unknown>) => (vlanFiltering ? cfg : withoutVlan(cfg));
    let seq = 0;
    clusters = topo.map((t, i) => {
      const node = lab.addNs(`c${i}-node`);
      const xcBridge = t.gateways[0].crossCluster.config.bridge;
      lab.addBridge(node, xcBridge, xcMtu);
      lab.addVeth({ hostNs: node, ifname: `xc-up${i}`, addrs: [], fabricNs: fab, portName: `c${i}xc`, bridge: 'br-xc', mtu: xcMtu });
      lab.run(['ip', '-n', node, 'link', 'set', `xc-up${i}`, 'master', xcBridge]);
      const attach = (podNs: string, pod: string, ifname: string, config: Record<string, unknown>) => cni.add({
        nodeNs: node, podNs, ifname, containerId: `mm-${process.pid}-${++seq}`, config: kernelCfg(config), pod: { namespace: 'kubevirt', name: pod },
      });
      // handlers and the sync controller: the migration NAD (KubeVirt's migration0) with static IPAM
      // holding the address whereabouts would hand out, and the NAD's routes
      const addrs = whereaboutsFirstFree(t.migrationNad.ipam, 3);
      const host = (short: string, addr: string): Host => {
        const ns = lab.addNs(`c${i}-${short}`);
        attach(ns, `${t.name}-${short}`, 'migration0', whereaboutsAsStatic(t.migrationNad.config, addr));
        return { ns, addr: bare(addr) };
      };
      const handlers = [host('h1', addrs[0]), host('h2', addrs[1])];
      const sync = host('sync', addrs[2]);
      // gateways: both attachments with the Multus-selected addresses, routes from each NAD
      const cfgDir = path.join(tmp, t.name);
      // the example's own mode (mtls-splice by default: KubeVirt's migration TLS is on), with this test's PKI
      const cfg = { ...t.gatewayConfig, tls: t.gatewayConfig.tls.mode !== 'plaintext' ? { mode: t.gatewayConfig.tls.mode, caFile: pki[t.name].ca, certFile: pki[t.name].cert, keyFile: pki[t.name].key } : t.gatewayConfig.tls };
      // the trust channel's socket (an emptyDir in the pod) in a directory of this test; no trust container
      // runs here (test/fleet-trust.netns.test.ts runs them), so the runtime's trust side stays idle
      if (cfg.trust) cfg.trust = { ...cfg.trust, socket: path.join(runDirFor(tmp, t.name), 'trust.sock') };
      const cfgFile = path.join(cfgDir, 'config.json');
      fs.writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
      for (const f of fs.readdirSync(cfgDir)) fs.chownSync(path.join(cfgDir, f), RUNTIME_UID, RUNTIME_UID);
      fs.chmodSync(pki[t.name].key, 0o600);
      const gateways = t.gateways.map((g, j) => {
        const ns = lab.addNs(`c${i}-g${j}`);
        // in the order of the pod's Multus selection, each NAD config with the selection's ips as runtimeConfig
        for (const att of [g.inCluster, g.crossCluster]) attach(ns, g.deployment, att.selection.interface, multusDelegateConfig(att.config, att.selection));
        return { ns, inAddr: bare(g.inCluster.address), xcAddr: bare(g.crossCluster.address), ifname: g.inCluster.ifname, log: path.join(tmp, `${t.name}-g${j}.log`), cfgFile, failoverArgs: g.failoverArgs };
      });
      // with failover the routes' next hop is the VIP, which no replica has statically
      const nextHops = [...new Set((t.migrationNad.ipam.routes ?? []).map((r) => r.gw))];
      const vip = t.keepalivedConf ? nextHops[0] : undefined;
      return { topo: t, node, handlers, sync, gateways, vip } as ClusterLab & { gateways: any[] };
    });

    console.log(`[fleet-netns] ${cni.all().length} pod attachments made by the CNI plugins in ${CNI_BIN}${vlanNote}`);

    // 4. the init step (root, CAP_NET_ADMIN only), then the runtime (uid 65532, no capabilities)
    for (const c of clusters) {
      for (const g of c.gateways as any[]) {
        const init = lab.exec(g.ns, runtimeCommand(c.topo.initArgs, g.cfgFile), { onlyCaps: ['net_admin'] });
        if (init.status !== 0) throw new Error(`setup-rules in ${g.ns} failed: ${init.stderr}`);
        g.proc = lab.spawn(g.ns, runtimeCommand(c.topo.runArgs, g.cfgFile), { asUser: RUNTIME_UID, logFile: g.log });
      }
    }
    await Promise.all(clusters.flatMap((c) => c.gateways.map(async (g) => {
      const port = c.topo.gatewayConfig.listen.admin.port;
      const [r] = await lab.execJson(g.ns, agent('probe', `http://127.0.0.1:${port}/readyz`, READY_MS), READY_MS);
      if (!r?.ok) throw new Error(`gateway ${g.ns} not ready: ${JSON.stringify(r)}\n${fs.existsSync(g.log) ? fs.readFileSync(g.log, 'utf8').slice(-2000) : ''}`);
    })));

    // 4b. the failover sidecars (keepalived, root with only the capabilities the container adds),
    // with the ConfigMap's keepalived.conf and the Deployment's own command line; then wait for the
    // election: exactly one replica per cluster holds the VIP
    for (const c of clusters) {
      if (!c.topo.keepalivedConf) continue;
      if (!hasCommand('keepalived') || !hasCommand('curl')) throw new Error('the fleet fails over with keepalived, which (or curl) is missing: run node scripts/ensure-system-deps.js as root');
      const conf = path.join(tmp, c.topo.name, 'keepalived.conf');
      fs.writeFileSync(conf, c.topo.keepalivedConf);
      for (const [j, g] of c.gateways.entries()) {
        const runDir = fs.mkdtempSync(path.join(tmp, `ka-${c.topo.name}-${j}-`));
        const args = g.failoverArgs!.map((a) => (a.endsWith('/keepalived.conf') ? conf : a.startsWith('/run/keepalived/') ? path.join(runDir, path.basename(a)) : a));
        const caps = (c.topo.failoverCaps ?? []).map((x) => x.toLowerCase());
        g.ka = lab.spawn(g.ns, args, { onlyCaps: caps, logFile: path.join(tmp, `${c.topo.name}-g${j}-keepalived.log`) });
      }
    }
    const electionStart = Date.now();
    for (const c of clusters.filter((x) => x.vip)) {
      const holders = await pollFor(() => { const h = vipHolders(c); return h.length === 1 ? h : undefined; }, 15_000);
      if (!holders) throw new Error(`${c.topo.name}: no single VIP holder after 15 s (holders: ${vipHolders(c).join(', ') || 'none'})`);
    }
    console.log(`[fleet-netns] VRRP elections done ${Date.now() - electionStart} ms after the sidecars started`);

    // 5. servers: an echo server at a high port on every handler h2, and on every sync controller's sync port
    for (const c of clusters) {
      await servers.start(c.handlers[1].ns, 'echo', HIGH_PORT);
      await servers.start(c.sync.ns, 'echo', c.topo.syncPort);
    }
    console.log(`[fleet-netns] ${lab.all().length} namespaces, ${clusters.reduce((n, c) => n + c.gateways.length, 0)} gateways ready in ${Date.now() - t0} ms`);
  }, 180_000); // ~20 s on an idle 2-core machine; 60 s was exceeded at load 15 (CI run beside other netns work)

  afterAll(() => {
    const failedLogs = clusters.flatMap((c) => c.gateways).filter((g) => fs.existsSync(g.log)).map((g) => `--- ${g.ns}\n${fs.readFileSync(g.log, 'utf8').split('\n').filter((l) => /"level":(40|50|60)/.test(l)).slice(-5).join('\n')}`);
    if (process.env.MM_NETNS_LOGS) console.log(failedLogs.join('\n'));
    for (const c of clusters) for (const g of c.gateways) { if (g.ka) lab.kill(g.ka); if (g.proc) lab.kill(g.proc); }
    const delFailures = cni?.delAll() ?? [];
    if (delFailures.length) console.warn(`[fleet-netns] CNI DEL failed: ${delFailures.join('; ')}`);
    lab?.cleanup();
    if (tmp && !process.env.MM_NETNS_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('the CNI plugins made every pod attachment from the NAD config: addresses from the Multus selection or whereabouts, MTU and routes from the NAD', () => {
    const link = (ns: string, dev: string) => JSON.parse(lab.exec(ns, ['ip', '-j', 'addr', 'show', 'dev', dev]).stdout)[0];
    for (const c of clusters) {
      for (const [j, g] of c.topo.gateways.entries()) {
        for (const att of [g.inCluster, g.crossCluster]) {
          const l = link(c.gateways[j].ns, att.ifname);
          // (the VIP keepalived adds to the elected replica aside)
          const addrs = l.addr_info.filter((a: any) => a.family === 'inet' && a.local !== c.vip).map((a: any) => `${a.local}/${a.prefixlen}`);
          expect({ ns: c.gateways[j].ns, dev: att.ifname, mtu: l.mtu, addrs })
            .toEqual({ ns: c.gateways[j].ns, dev: att.ifname, mtu: att.config.mtu, addrs: att.selection.ips });
        }
      }
      for (const h of [...c.handlers, c.sync]) {
        expect(link(h.ns, 'migration0').mtu).toBe(c.topo.migrationNad.mtu);
        const routes = JSON.parse(lab.exec(h.ns, ['ip', '-j', 'route', 'show', 'dev', 'migration0']).stdout);
        for (const r of c.topo.migrationNad.ipam.routes ?? []) expect(routes).toContainEqual(expect.objectContaining({ dst: r.dst, gateway: r.gw }));
      }
    }
    // the plugin created the in-cluster bridge on the node (no bridge existed), with the NAD's MTU
    for (const c of clusters) {
      const br = JSON.parse(lab.exec(c.node, ['ip', '-j', '-d', 'link', 'show', 'dev', c.topo.migrationNad.config.bridge]).stdout)[0];
      expect({ bridge: br.ifname, mtu: br.mtu }).toEqual({ bridge: c.topo.migrationNad.config.bridge, mtu: c.topo.migrationNad.mtu });
    }
  });

  test('the rule-setup step installed REDIRECT rules for exactly the peer CIDRs of the ConfigMap', () => {
    for (const c of clusters) {
      const rules = lab.exec(c.gateways[0].ns, ['iptables', '-w', '-t', 'nat', '-S']).stdout;
      const redirected = [...rules.matchAll(/-d (\S+) -i (\S+) -p tcp -j REDIRECT --to-ports (\d+)/g)];
      const peers = c.topo.gatewayConfig.peers.flatMap((p: any) => p.cidrs).sort();
      expect(redirected.map((m) => m[1]).sort()).toEqual(peers);
      expect(rules).toMatch(new RegExp(`--to-ports ${c.topo.gatewayConfig.listen.intercept.port}`));
      // issue 49: only what arrives on the in-cluster interface is intercepted, the jump and every REDIRECT
      const ifname = c.gateways[0].ifname;
      expect(c.topo.gatewayConfig.listen.intercept.interface).toBe(ifname);
      expect([...new Set(redirected.map((m) => m[2]))]).toEqual([ifname]);
      expect(rules.split('\n').filter((l) => /^-A PREROUTING .*-j MIGRATION_MESH$/.test(l))).toEqual([`-A PREROUTING -i ${ifname} -j MIGRATION_MESH`]);
      expect(redirected.length).toBe((rules.match(/REDIRECT/g) ?? []).length);
    }
  });

  test('a handler reaches every other cluster\'s handler at a high port, content intact, in both directions; the far side sees its own gateway as the source', async () => {
    const pairs = clusters.flatMap((a) => clusters.filter((b) => b !== a).map((b) => [a, b] as const));
    const results = await Promise.all(pairs.map(([a, b]) => client(a.handlers[0], b.handlers[1].addr, HIGH_PORT, 4 * 1024 * 1024)));
    results.forEach((r, i) => {
      const [a, b] = pairs[i];
      expect({ from: a.topo.name, to: b.topo.name, ok: r.ok, error: r.error }).toEqual({ from: a.topo.name, to: b.topo.name, ok: true, error: undefined });
      expect(r.recvSha).toBe(r.sentSha);
      expect(r.received).toBe(4 * 1024 * 1024);
    });
    // what the target-side server saw: connections from its own cluster's gateway in-cluster addresses only
    for (const b of clusters) {
      const server = servers.at(b.handlers[1].ns, HIGH_PORT);
      const conns = await servers.connsAtLeast(server, 2);
      expect(conns.length).toBeGreaterThanOrEqual(2);
      for (const cn of conns) expect(b.gateways.map((g) => g.inAddr)).toContain(cn.remote.replace('::ffff:', ''));
    }
  }, 40_000);

  test('a handler reaches the sync port of every other cluster\'s sync controller', async () => {
    const pairs = clusters.flatMap((a) => clusters.filter((b) => b !== a).map((b) => [a, b] as const));
    const results = await Promise.all(pairs.map(([a, b]) => client(a.handlers[1], b.sync.addr, b.topo.syncPort, 256 * 1024)));
    for (const [i, r] of results.entries()) {
      const pair = pairs[i].map((c) => c.topo.name);
      expect({ pair, ok: r.ok, error: r.error }).toEqual({ pair, ok: true, error: undefined });
      expect(r.recvSha).toBe(r.sentSha);
    }
    expect(clusters[0].topo.syncPort).toBe(9185);
  }, 30_000);

  test('handler hosts have no route to the cross-cluster network and hold no address on it', () => {
    const xc = clusters[0].topo.gateways[0].crossCluster.address;
    const xcNet = `${fmt4(cidr4(xc).base)}/${cidr4(xc).prefix}`;
    for (const c of clusters) {
      for (const h of [...c.handlers, c.sync]) {
        for (const g of clusters.flatMap((o) => o.gateways)) {
          const r = lab.exec(h.ns, ['ip', 'route', 'get', g.xcAddr]);
          expect({ ns: h.ns, to: g.xcAddr, status: r.status }).toEqual({ ns: h.ns, to: g.xcAddr, status: 2 });
          expect(r.stderr).toMatch(/unreachable/i);
        }
        const addrs = JSON.parse(lab.exec(h.ns, ['ip', '-j', 'addr', 'show']).stdout).flatMap((l: any) => l.addr_info.map((a: any) => a.local));
        expect(addrs.filter((a: string) => a.includes('.') && inCidr4(a, xcNet))).toEqual([]);
      }
    }
  });

  test('a connection to an address outside every member CIDR is not carried (even one the handler routes to its gateway)', async () => {
    const [a, b] = clusters;
    const memberCidrs = clusters.map((c) => c.topo.gatewayConfig.localCidrs[0]);
    // inside the routed supernet (so the handler sends it to its gateway), outside every member CIDR
    const routed = a.topo.migrationNad.ipam.routes![0].dst;
    let stray = '';
    for (let v = cidr4(routed).first + 1; v < cidr4(routed).last; v++) {
      if (!memberCidrs.some((m: string) => inCidr4(fmt4(v), m))) { stray = fmt4(v); break; }
    }
    expect(stray).not.toBe('');
    // a real listener at that address in B: reachable only if a gateway carried the connection
    lab.run(['ip', '-n', b.sync.ns, 'addr', 'add', `${stray}/32`, 'dev', 'migration0']);
    const server = await servers.start(b.sync.ns, 'echo', HIGH_PORT + 1);
    const r = await client(a.handlers[0], stray, HIGH_PORT + 1, 1024, 3000);
    expect(r.ok).toBe(false);
    expect(['timeout', 'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET']).toContain(r.error);
    expect(servers.connsOf(server)).toEqual([]);
    // and an address outside the supernet has no route at all from a handler
    const far = await client(a.handlers[0], '192.0.2.10', HIGH_PORT, 1024, 3000);
    expect(far).toMatchObject({ ok: false, error: 'ENETUNREACH' });
  }, 20_000);

  test('the cross-cluster network holds exactly gateways x clusters addresses, all gateway addresses from the Multus selections', () => {
    const fab = lab.name('fab');
    const ports = JSON.parse(lab.exec(fab, ['ip', '-j', 'link', 'show', 'master', 'br-xc']).stdout).map((l: any) => l.ifname).sort();
    expect(ports).toEqual(clusters.map((_, i) => `c${i}xc`));
    // on each node, the NAD's bridge holds the uplink and one plugin-made port per gateway replica
    for (const c of clusters) {
      const bridge = c.topo.gateways[0].crossCluster.config.bridge;
      const nodePorts = JSON.parse(lab.exec(c.node, ['ip', '-j', 'link', 'show', 'master', bridge]).stdout).map((l: any) => l.ifname);
      expect(nodePorts).toHaveLength(c.gateways.length + 1);
    }
    const xcPrefix = clusters[0].topo.gateways[0].crossCluster.address;
    const xcNet = `${fmt4(cidr4(xcPrefix).base)}/${cidr4(xcPrefix).prefix}`;
    const onXc: string[] = [];
    for (const ns of lab.all()) {
      const links = JSON.parse(lab.exec(ns, ['ip', '-j', 'addr', 'show']).stdout);
      for (const l of links) for (const a of l.addr_info ?? []) if (a.family === 'inet' && inCidr4(a.local, xcNet)) onXc.push(a.local);
    }
    const gatewayXc = clusters.flatMap((c) => c.gateways.map((g) => g.xcAddr));
    expect(onXc.sort()).toEqual(gatewayXc.sort());
    expect(onXc).toHaveLength(clusters.length * clusters[0].gateways.length);
    expect(new Set(onXc).size).toBe(onXc.length);
  });

  test('throughput handler -> gateway -> gateway -> handler vs a direct veth path (printed, written to bench/results)', async () => {
    if (!hasCommand('iperf3')) {
      console.warn('[fleet-netns] iperf3 missing: throughput not measured');
      return;
    }
    const [a, b] = clusters;
    // the check (data through both gateways at a useful rate) needs a second; the figures recorded for docs/performance.md
    // (MM_RECORD_BENCH=1) take 4 s per path: each second here keeps both cores busy for the whole suite
    const seconds = process.env.MM_RECORD_BENCH === '1' ? 4 : 1;
    const iperf = async (clientNs: string, serverNs: string, addr: string, port: number) => {
      // --forceflush: iperf3 buffers its stdout when it is a pipe; its 'Server listening' line is the sign it accepts
      const srv = lab.spawn(serverNs, ['iperf3', '-s', '-1', '-p', String(port), '--forceflush']);
      await lab.waitForLine(srv, /Server listening on/, STARTUP_MS, `iperf3 server in ${serverNs}`);
      const res = lab.exec(clientNs, ['iperf3', '-c', addr, '-p', String(port), '-t', String(seconds), '-J'], { timeoutMs: (seconds + 10) * 1000 });
      lab.kill(srv);
      const j = JSON.parse(res.stdout);
      if (j.error) throw new Error(`iperf3 ${clientNs} -> ${addr}: ${j.error}`);
      return { gbps: j.end.sum_received.bits_per_second / 1e9, bytes: j.end.sum_received.bytes, retransmits: j.end.sum_sent.retransmits };
    };
    const viaGateways = await iperf(a.handlers[0].ns, b.handlers[1].ns, b.handlers[1].addr, HIGH_PORT + 2);
    // direct path: two namespaces joined by one veth pair, same MTU as the migration network
    const mtu = a.topo.migrationNad.mtu;
    const da = lab.addNs('direct-a');
    const db = lab.addNs('direct-b');
    lab.addVeth({ hostNs: db, ifname: 'migration0', addrs: ['192.0.2.2/30'], fabricNs: da, portName: 'migration0', mtu, peerAddrs: ['192.0.2.1/30'] });
    const direct = await iperf(da, db, '192.0.2.2', HIGH_PORT + 3);
    const tlsMode = a.topo.gatewayConfig.tls.mode;
    const rows = [
      { path: `handler -> gateway -> ${tlsMode} tunnel -> gateway -> handler`, gbps: +viaGateways.gbps.toFixed(2), bytes: viaGateways.bytes, retransmits: viaGateways.retransmits },
      { path: 'direct veth pair', gbps: +direct.gbps.toFixed(2), bytes: direct.bytes, retransmits: direct.retransmits },
    ];
    console.log(`[fleet-netns] throughput (iperf3, 1 stream, ${seconds} s each, MTU ${mtu ?? 'default'}, ${os.cpus().length} CPUs)\n${rows.map((r) => `  ${r.path.padEnd(64)} ${r.gbps.toFixed(2).padStart(7)} Gbit/s`).join('\n')}\n  ratio: ${(viaGateways.gbps / direct.gbps * 100).toFixed(1)}% of direct`);
    // record into the repo only when asked (MM_RECORD_BENCH=1), so a test run leaves the tree clean
    const outDir = process.env.MM_RECORD_BENCH === '1' ? path.join(ROOT, 'bench', 'results') : os.tmpdir();
    fs.mkdirSync(outDir, { recursive: true });
    fs.writeFileSync(path.join(outDir, 'fleet-netns.json'), `${JSON.stringify({
      test: 'test/fleet.netns.test.ts', fleet: 'examples/three-sites-vlan.fleet.yaml', tool: 'iperf3 -c (1 TCP stream)', seconds, mtu, tls: tlsMode,
      cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, kernel: os.release(), node: process.version, date: new Date().toISOString(), rows,
    }, null, 2)}\n`);
    expect(viaGateways.gbps).toBeGreaterThan(0.05);
    expect(direct.gbps).toBeGreaterThan(0);
  }, 40_000);

  test('failover: the handlers\' next hop is the VIP of keepalived.conf, held by exactly one replica (whichever won the election)', () => {
    for (const c of clusters) {
      expect(c.vip).toBeDefined();
      // the VIP in keepalived.conf is the route's next hop, and it is no replica's own address
      expect(c.topo.keepalivedConf).toContain(`    ${c.vip}/`);
      expect(c.gateways.map((g) => g.inAddr)).not.toContain(c.vip);
      expect(c.topo.migrationNad.ipam.exclude).toContain(`${c.vip}/32`);
      // nopreempt: the first replica whose BACKUP timer expires wins, replica 0 usually but not always
      // (its higher priority only shortens its timer); which one holds it does not matter, that one does
      const holders = vipHolders(c);
      expect(holders).toHaveLength(1);
      expect(c.gateways.map((g) => g.ns)).toContain(holders[0]);
      // every replica keeps its own address: inbound tunnels are served by all of them
      for (const g of c.gateways) expect(lab.exec(g.ns, ['ip', '-o', 'addr', 'show', 'dev', g.ifname]).stdout).toContain(`${g.inAddr}/`);
    }
  });

  // after the VIP test: the kill leaves the far cluster without a live replica, and keepalived, tracking /readyz,
  // then drops its VIP (a quiet fresh-clone CI run saw the VIP test, placed after it, find no holder there)
  test('killing the far gateways mid-stream closes the near client side within a bounded time', async () => {
    const [a, b] = clusters;
    await servers.start(b.handlers[0].ns, 'source', HIGH_PORT + 4);
    const sink = lab.spawn(a.handlers[0].ns, agent('sink', b.handlers[0].addr, HIGH_PORT + 4, 20000));
    const events: any[] = [];
    onJsonLines(sink, (o) => events.push(o));
    const closed = new Promise<void>((resolve) => sink.on('exit', () => resolve()));
    await lab.waitForLine(sink, /"flowing"/, 10000, 'sink through the gateways');
    const killedAt = Date.now();
    for (const g of b.gateways) lab.kill(g.proc!);
    let guard: NodeJS.Timeout | undefined;
    await Promise.race([closed, new Promise((r) => { guard = setTimeout(r, 15000); })]);
    clearTimeout(guard);
    const end = events.find((e) => e.event === 'closed' || e.event === 'timeout');
    // what the sink said, and whether it still runs, when it said nothing of its end (seen once beside two CPU hogs)
    expect({ end: end?.event, ...(end ? {} : { events: events.map((e) => e.event), sinkRunning: sink.exitCode === null, waitedMs: Date.now() - killedAt }) })
      .toEqual({ end: 'closed' });
    const ms = end.t - killedAt;
    console.log(`[fleet-netns] far gateways killed mid-stream: near client closed after ${ms} ms (${end.error ?? 'FIN'}), ${end.bytes} bytes received`);
    expect(ms).toBeLessThan(5000);
    // a cut-off stream must not look complete: the dead peer (TLS EOF without close_notify) is a reset
    expect(end.error).toBe('ECONNRESET');
  }, 30_000);

  test('losing the VIP holder (node lost: its processes killed, its links down) moves the next hop; new connections flow through the other replica', async () => {
    const [a, , c] = clusters;
    const holder = a.gateways.find((g) => vipHolders(a).includes(g.ns))!;
    const other = a.gateways.find((g) => g !== holder)!;
    expect((await client(a.handlers[0], c.handlers[1].addr, HIGH_PORT, 64 * 1024, 5000)).ok).toBe(true);
    const retry = await retryClient(lab, a.handlers[0].ns, c.handlers[1].addr, HIGH_PORT, 15_000);
    const killedAt = Date.now();
    loseNode(lab, holder, a.topo.gateways[0].crossCluster.ifname);
    const r = await retry.go(killedAt);
    console.log(`[fleet-netns] ${a.topo.name}: VIP holder lost; first new connection through the other replica after ${r.ms} ms (${r.tries} tries)`);
    expect({ ok: r.last?.ok, error: r.last?.error }).toEqual({ ok: true, error: undefined });
    expect(r.ms).toBeLessThan(15_000);
    expect(vipHolders(a)).toEqual([other.ns]);
    // and the handler's neighbour entry for the next hop now names the survivor's MAC (gratuitous ARP)
    const mac = JSON.parse(lab.exec(other.ns, ['ip', '-j', 'link', 'show', 'dev', other.ifname]).stdout)[0].address;
    const neigh = JSON.parse(lab.exec(a.handlers[0].ns, ['ip', '-j', 'neigh', 'show', a.vip!]).stdout);
    expect(neigh.map((n: any) => n.lladdr)).toContain(mac);
  }, 30_000);

  test('a replica whose runtime dies while its pod lives gives the VIP up (keepalived tracks /readyz)', async () => {
    const [a, , c] = clusters;
    const holder = c.gateways.find((g) => vipHolders(c).includes(g.ns))!;
    const other = c.gateways.find((g) => g !== holder)!;
    const retry = await retryClient(lab, c.handlers[0].ns, a.handlers[1].addr, HIGH_PORT, 15_000);
    const killedAt = Date.now();
    lab.kill(holder.proc!); // the runtime only: keepalived lives on, as in a pod whose gateway container crashed
    const moved = await pollFor(() => (vipHolders(c).join() === other.ns ? true : undefined), 15_000);
    const movedMs = Date.now() - killedAt;
    expect(moved).toBe(true);
    const r = await retry.go(killedAt);
    console.log(`[fleet-netns] ${c.topo.name}: runtime of the VIP holder killed; VIP moved after ${movedMs} ms, first new connection after ${r.ms} ms`);
    expect({ ok: r.last?.ok, error: r.last?.error }).toEqual({ ok: true, error: undefined });
  }, 30_000);
});
