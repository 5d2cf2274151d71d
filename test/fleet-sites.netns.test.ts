/**
 * Fleets across sites in network namespaces (issue #24's proof): the synthesized two-sites example, two
 * sites each on its own L2 segment (one fabric bridge per site), joined by a router namespace with real
 * IPv4 forwarding, clusters in both sites, every pod attachment made by the real CNI plugins from the
 * generated NAD config (static IPAM with the site routes), the real gateway runtime and keepalived.
 *
 * As test/fleet.netns.test.ts (whose conventions and simplifications this follows: one node per
 * cluster, no pod network, the NADs' `vlan` key dropped on a kernel without bridge VLAN filtering), with
 * the sites' segments apart: nothing but the router joins them. The router's addresses are the sites'
 * `router` of the plan. Needs root, iproute2, iptables, openssl, setpriv, keepalived, the CNI plugins.
 * Run under `flock /tmp/mm-net.lock`.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ChildProcess } from 'child_process';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { ClusterTopology, NetnsLab, hasCommand, inCidr4, makeFleetPki, netnsSupport, topologyFromFiles, whereaboutsFirstFree, READY_MS } from './support/netns';
import { CniRunner, cniSupport, kernelHasBridgeVlanFiltering, multusDelegateConfig, whereaboutsAsStatic, withoutVlan } from './support/netns-cni';
import { AgentServers, agentClient, agentCommand, retryClient, runtimeCommand } from './support/netns-agents';
import { RoutedSites, SiteLeg } from './support/netns-sites';
import { loseNode, vipHolders as vipHoldersIn } from './support/netns-failover';

const ROOT = path.join(__dirname, '..');
const FLEET = path.join(ROOT, 'examples', 'two-sites.fleet.yaml');
const PROXY_CLI = path.join(ROOT, 'proxy', 'lib', 'cli.js');
const RUNTIME_UID = 65532;
const HIGH_PORT = 30000 + (process.pid % 30000);

const support = netnsSupport();
const cniOk = cniSupport();
const skipReason = !support.ok ? support.reason : !fs.existsSync(PROXY_CLI) ? `gateway runtime not built (${PROXY_CLI} missing)` : !cniOk.ok ? cniOk.reason
  : !hasCommand('keepalived') ? 'keepalived missing (node scripts/ensure-system-deps.js as root)' : undefined;
if (skipReason) console.warn(`[fleet-sites-netns] SKIPPED: ${skipReason}`);
const d = skipReason ? describe.skip : describe;

interface Host { ns: string; addr: string }
interface Gw {
  ns: string; xcAddr: string; ifname: string; xcIfname: string; cfgFile: string; failoverArgs?: string[]; proc?: ChildProcess; ka?: ChildProcess; log: string;
}
interface ClusterLab { topo: ClusterTopology; site: string; node: string; handlers: Host[]; gateways: Gw[]; vip?: string }

const bare = (a: string) => a.split('/')[0];

async function pollFor<T>(fn: () => T | undefined, timeoutMs: number, everyMs = 100): Promise<T | undefined> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v !== undefined || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

d('fleet across two sites in network namespaces (two-sites: a router between the sites\' segments)', () => {
  let lab: NetnsLab;
  let tmp: string;
  let cni: CniRunner;
  let servers: AgentServers;
  let clusters: ClusterLab[] = [];
  let routed: RoutedSites;
  let sites: SiteLeg[] = [];
  const t0 = Date.now();

  const vipHolders = (c: ClusterLab): string[] => vipHoldersIn(lab, c);
  const client = (from: Host, to: string, port: number, bytes: number, timeoutMs = 15000) => agentClient(lab, from.ns, to, port, bytes, timeoutMs);
  /** Bytes the router forwarded out of each site's interface. */
  const routerTx = () => routed.txBytes();

  beforeAll(async () => {
    const step = (what: string) => { if (process.env.MM_NETNS_LOGS) console.log(`[fleet-sites-netns] ${what} at ${Date.now() - t0} ms`); };
    step('beforeAll starts');
    NetnsLab.reapStale();
    lab = new NetnsLab();
    servers = new AgentServers(lab);
    cni = new CniRunner();
    const vlanFiltering = kernelHasBridgeVlanFiltering(lab);
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-sites-netns-'));
    fs.chmodSync(tmp, 0o755);

    const result = synthesizeFleet(loadFleetFile(FLEET), { ledger: loadLedgerFile(ledgerPathFor(FLEET)) });
    const topo = topologyFromFiles(result.files);
    step('synthesized');
    const pki = makeFleetPki(tmp, topo[0].gatewayConfig.fleet, topo.map((c) => c.name));

    // the sites: one fabric bridge each (its own L2 segment), and one router namespace with a leg on each,
    // holding the site's router address from the plan; nothing else joins the segments
    step('PKI made');
    routed = new RoutedSites(lab, result.plan.sites);
    sites = routed.sites;
    const siteOf = (cluster: string) => result.plan.clusters.find((c) => c.name === cluster)!.site;

    const kernelCfg = (cfg: Record<string, unknown>) => (vlanFiltering ? cfg : withoutVlan(cfg));
    let seq = 0;
    clusters = topo.map((t, i) => {
      const site = siteOf(t.name);
      const node = lab.addNs(`c${i}-node`);
      routed.uplink(site.name, node, t.gateways[0].crossCluster.config.bridge, `xc-up${i}`, `c${i}xc`);
      const attach = (podNs: string, pod: string, ifname: string, config: Record<string, unknown>) => cni.add({
        nodeNs: node, podNs, ifname, containerId: `mm-${process.pid}-${++seq}`, config: kernelCfg(config), pod: { namespace: 'kubevirt', name: pod },
      });
      const addrs = whereaboutsFirstFree(t.migrationNad.ipam, 2);
      const handlers = addrs.map((a, j) => {
        const ns = lab.addNs(`c${i}-h${j}`);
        attach(ns, `${t.name}-h${j}`, 'migration0', whereaboutsAsStatic(t.migrationNad.config, a));
        return { ns, addr: bare(a) };
      });
      const cfgDir = path.join(tmp, t.name);
      const cfg = { ...t.gatewayConfig, tls: { mode: t.gatewayConfig.tls.mode, caFile: pki[t.name].ca, certFile: pki[t.name].cert, keyFile: pki[t.name].key } };
      if (cfg.trust) {
        const run = path.join(tmp, `${t.name}-run`);
        fs.mkdirSync(run, { mode: 0o700 });
        fs.chownSync(run, RUNTIME_UID, RUNTIME_UID);
        cfg.trust = { ...cfg.trust, socket: path.join(run, 'trust.sock') };
      }
      const cfgFile = path.join(cfgDir, 'config.json');
      fs.writeFileSync(cfgFile, JSON.stringify(cfg, null, 2));
      for (const f of fs.readdirSync(cfgDir)) fs.chownSync(path.join(cfgDir, f), RUNTIME_UID, RUNTIME_UID);
      fs.chmodSync(pki[t.name].key, 0o600);
      const gateways = t.gateways.map((g, j): Gw => {
        const ns = lab.addNs(`c${i}-g${j}`);
        for (const att of [g.inCluster, g.crossCluster]) attach(ns, g.deployment, att.selection.interface, multusDelegateConfig(att.config, att.selection));
        return { ns, xcAddr: bare(g.crossCluster.address), ifname: g.inCluster.ifname, xcIfname: g.crossCluster.ifname, cfgFile, failoverArgs: g.failoverArgs, log: path.join(tmp, `${t.name}-g${j}.log`) };
      });
      const vip = t.keepalivedConf ? [...new Set((t.migrationNad.ipam.routes ?? []).map((r) => r.gw))][0] : undefined;
      return { topo: t, site: site.name, node, handlers, gateways, vip };
    });

    step(`${cni.all().length} CNI attachments made`);
    // every replica's init step (root, CAP_NET_ADMIN only) then its runtime (uid 65532): the replicas in parallel, as pods start
    await Promise.all(clusters.flatMap((c) => c.gateways.map(async (g) => {
      const init = lab.spawn(g.ns, runtimeCommand(c.topo.initArgs, g.cfgFile), { onlyCaps: ['net_admin'], logFile: `${g.log}.init` });
      const code = await new Promise<number | null>((resolve) => init.on('exit', resolve));
      if (code !== 0) throw new Error(`setup-rules in ${g.ns} failed (${code}): ${fs.readFileSync(`${g.log}.init`, 'utf8').slice(-1000)}`);
      g.proc = lab.spawn(g.ns, runtimeCommand(c.topo.runArgs, g.cfgFile), { asUser: RUNTIME_UID, logFile: g.log });
    })));
    await Promise.all(clusters.flatMap((c) => c.gateways.map(async (g) => {
      const [r] = await lab.execJson(g.ns, agentCommand('probe', `http://127.0.0.1:${c.topo.gatewayConfig.listen.admin.port}/readyz`, READY_MS), READY_MS);
      if (!r?.ok) throw new Error(`gateway ${g.ns} not ready: ${JSON.stringify(r)}\n${fs.existsSync(g.log) ? fs.readFileSync(g.log, 'utf8').slice(-2000) : ''}`);
    })));
    step('gateways ready (init steps run, runtimes answer /readyz)');
    for (const c of clusters) {
      const conf = path.join(tmp, c.topo.name, 'keepalived.conf');
      fs.writeFileSync(conf, c.topo.keepalivedConf!);
      for (const [j, g] of c.gateways.entries()) {
        const runDir = fs.mkdtempSync(path.join(tmp, `ka-${c.topo.name}-${j}-`));
        const args = g.failoverArgs!.map((a) => (a.endsWith('/keepalived.conf') ? conf : a.startsWith('/run/keepalived/') ? path.join(runDir, path.basename(a)) : a));
        g.ka = lab.spawn(g.ns, args, { onlyCaps: (c.topo.failoverCaps ?? []).map((x) => x.toLowerCase()), logFile: path.join(tmp, `${c.topo.name}-g${j}-keepalived.log`) });
      }
    }
    for (const c of clusters) {
      const holders = await pollFor(() => { const h = vipHolders(c); return h.length === 1 ? h : undefined; }, 15_000);
      if (!holders) throw new Error(`${c.topo.name}: no single VIP holder after 15 s`);
    }
    step('VRRP elections done');
    for (const c of clusters) await servers.start(c.handlers[1].ns, 'echo', HIGH_PORT);
    console.log(`[fleet-sites-netns] ${sites.length} sites, ${clusters.length} clusters, ${lab.all().length} namespaces, ${cni.all().length} CNI attachments; ready in ${Date.now() - t0} ms`);
  }, 120_000); // 35 s measured on the shared 2-core machine; 118 s once beside a synth run, hence the margin

  afterAll(() => {
    for (const c of clusters) for (const g of c.gateways) { if (g.ka) lab.kill(g.ka); if (g.proc) lab.kill(g.proc); }
    const delFailures = cni?.delAll() ?? [];
    if (delFailures.length) console.warn(`[fleet-sites-netns] CNI DEL failed: ${delFailures.join('; ')}`);
    lab?.cleanup();
    if (tmp && !process.env.MM_NETNS_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('the fleet has clusters in both sites, on segments only the router joins', () => {
    expect(clusters.map((c) => `${c.topo.name}@${c.site}`).sort()).toEqual(['ams-1@ams', 'fra-1@fra', 'fra-2@fra']);
    // a fabric bridge per site: its ports are that site's clusters' uplinks and the router's leg, nothing else
    for (const [k, s] of sites.entries()) {
      const ports = JSON.parse(lab.exec(s.fab, ['ip', '-j', 'link', 'show', 'master', 'br-xc']).stdout).map((l: any) => l.ifname).sort();
      expect(ports).toEqual([...clusters.map((c, i) => (c.site === s.name ? `c${i}xc` : '')).filter(Boolean), `rtr${k}`].sort());
    }
  });

  test('the CNI plugins applied the site routes: every gateway reaches the other site via its own site\'s router, on-link', () => {
    for (const c of clusters) {
      const own = sites.find((s) => s.name === c.site)!;
      const other = sites.find((s) => s.name !== c.site)!;
      for (const g of c.gateways) {
        expect(inCidr4(g.xcAddr, own.subnet)).toBe(true);
        const routes = JSON.parse(lab.exec(g.ns, ['ip', '-j', 'route', 'show', 'dev', g.xcIfname]).stdout);
        expect(routes).toContainEqual(expect.objectContaining({ dst: other.subnet, gateway: own.router }));
        const far = clusters.find((o) => o.site !== c.site)!.gateways[0].xcAddr;
        const via = routed.routeGet(g.ns, far);
        expect({ from: g.ns, gateway: via.gateway, dev: via.dev }).toEqual({ from: g.ns, gateway: own.router, dev: g.xcIfname });
      }
    }
  });

  test('bytes are sha256-equal between every pair of clusters, across the router and within a site; the router forwarded the cross-site streams', async () => {
    const before = routerTx();
    const pairs = clusters.flatMap((a) => clusters.filter((b) => b !== a).map((b) => [a, b] as const));
    const size = 2 * 1024 * 1024;
    const results = await Promise.all(pairs.map(([a, b]) => client(a.handlers[0], b.handlers[1].addr, HIGH_PORT, size)));
    results.forEach((r, i) => {
      const [a, b] = pairs[i];
      expect({ from: a.topo.name, to: b.topo.name, ok: r.ok, error: r.error, received: r.received, sha: r.recvSha === r.sentSha })
        .toEqual({ from: a.topo.name, to: b.topo.name, ok: true, error: undefined, received: size, sha: true });
    });
    const after = routerTx();
    // 2 cross-site pairs each way (fra-1/fra-2 <-> ams-1), echoed: at least 4 x size left the router into each site
    const crossPairs = pairs.filter(([a, b]) => a.site !== b.site).length;
    for (const s of sites) expect(after[s.name] - before[s.name]).toBeGreaterThan(crossPairs * size);
    console.log(`[fleet-sites-netns] ${pairs.length} pairs, ${crossPairs} across the router; router forwarded ${sites.map((s) => `${s.name} ${((after[s.name] - before[s.name]) / 1e6).toFixed(1)} MB`).join(', ')}`);
  }, 40_000);

  test('each gateway holds the budget of its pair toward each peer it sent to: the example\'s per-pair budgets, from its /metrics', () => {
    // examples/two-sites.fleet.yaml: default 1250M (within fra), fra-ams 250M, fra-2-ams-1 125M; each direction
    const expected: Record<string, Record<string, number>> = {
      'ams-1': { 'fra-1': 250e6, 'fra-2': 125e6 }, 'fra-1': { 'ams-1': 250e6, 'fra-2': 1250e6 }, 'fra-2': { 'ams-1': 125e6, 'fra-1': 1250e6 },
    };
    for (const c of clusters) {
      const holder = c.gateways.find((g) => vipHolders(c).includes(g.ns))!; // the origin of the previous test's tunnels
      const url = `http://127.0.0.1:${c.topo.gatewayConfig.listen.admin.port}/metrics`;
      const text = lab.exec(holder.ns, [process.execPath, '-e', `require('http').get('${url}', (r) => { let b = ''; r.on('data', (d) => b += d); r.on('end', () => process.stdout.write(b)); })`], { timeoutMs: 10_000 }).stdout;
      const got = Object.fromEntries([...text.matchAll(/^mm_proxy_peer_bandwidth_budget_bytes_per_second\{peer="([^"]+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
      expect({ cluster: c.topo.name, budgets: got }).toEqual({ cluster: c.topo.name, budgets: expected[c.topo.name] });
    }
  });

  test('failover within a site: losing fra-1\'s VIP holder (node lost) moves the next hop to the other replica; new connections cross the router again', async () => {
    const a = clusters.find((c) => c.topo.name === 'fra-1')!;
    const b = clusters.find((c) => c.site !== a.site)!;
    const holder = a.gateways.find((g) => vipHolders(a).includes(g.ns))!;
    const other = a.gateways.find((g) => g !== holder)!;
    const retry = await retryClient(lab, a.handlers[0].ns, b.handlers[1].addr, HIGH_PORT, 15_000);
    const killedAt = Date.now();
    loseNode(lab, holder, holder.xcIfname);
    const { ms, tries, last } = await retry.go(killedAt);
    console.log(`[fleet-sites-netns] fra-1 VIP holder lost; first new connection to ams-1 through the other replica after ${ms} ms (${tries} tries)`);
    expect({ ok: last?.ok, error: last?.error }).toEqual({ ok: true, error: undefined });
    expect(vipHolders(a)).toEqual([other.ns]);
    // the reply came back over the router to the surviving replica's own site address
    const back = routed.routeGet(b.gateways[0].ns, other.xcAddr);
    expect(back.gateway).toBe(sites.find((s) => s.name === b.site)!.router);
  }, 30_000);
});
