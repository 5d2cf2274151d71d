/**
 * Issue 49, item 5: the gateway's attack surface, vantage point by vantage point (the table: testkit/attack-matrix.ts,
 * the same table as README.md's security model). For IPv4 and for IPv6, a lab of network namespaces:
 *
 *   [x] stranger, c's two shared addresses ─┐                         ┌─ [gb] gateway b ─mig0─ [hb] b's handler
 *                                            ├─ [sw] bridge (shared) ─┤         (eth0: a veth)
 *                                            │                         └─ [ga] gateway a (under test)
 *   [l] a's handler + a non-handler host ───mig0── [ga] ──eth0── [p] pod + the node's address (sink :10250)
 *
 * The gateway configs are the library's: `gatewayConfigFor` (src/gateway/config.ts) run on a three-cluster
 * fleet plan (`planFleetDocument`), loaded from the root package's built lib/ (the proxy's sources import nothing
 * of the library: its layering; `npm test` builds both first). Every address of the lab's gateways, their CIDRs,
 * ownAddresses, peers, ports, listeners, tls mode (mtls-splice, the default) and limits are what the library
 * wrote; only the four file paths of the pod's mounts (CA, certificate, key, trust socket) point into the test's
 * temp directory. The namespaces run the real runtime (`lib/cli.js run`) and the real init step
 * (`lib/cli.js setup-rules`) in each gateway namespace, with the interface names of the gateway pod (mig0, xc0,
 * eth0). Forwarding stays off in the gateway namespaces, as in a pod.
 *
 * Every attempt is bounded (testkit/attack-probe.ts: 1.5 s where no connection may be made, else 5 s); what was
 * measured (RST, ICMP, timeout, refusal frame, reset) is printed with each cell. The cells expected to make no
 * connection run at once; the others one at a time, each reading both gateways' refusal counters before and
 * after, so a refusal is the cell's own.
 */
import assert from 'node:assert/strict';
import { spawnSync, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { after, before, describe, it } from 'node:test';
import { NetnsLab, netnsUnavailable } from '../testkit/netns';
import { HANG_GUARD_MS, makePki, tmpDir, type Pki } from '../testkit/helpers';
import { MATRIX, VANTAGES, type Expect, type Row, type Vantage } from '../testkit/attack-matrix';

const CLI = path.join(__dirname, '..', 'cli.js');
const PROBE = path.join(__dirname, '..', 'testkit', 'attack-probe.js');
const ROOT_LIB = path.join(__dirname, '..', '..', '..', 'lib', 'src');
const node = process.execPath;
const skip = netnsUnavailable();
/** The bound of an attempt that must make no connection (a silent drop costs all of it), and of any other. */
const SILENT_MS = 1500;
const ATTEMPT_MS = 5000;

type Family = 4 | 6;
type Json = Record<string, unknown>;
/** The parts of the library's types this test reads (the proxy's sources cannot import the library's). */
interface GatewayConfig { listen: Json; localCidrs: string[]; ownAddresses: string[]; tls: Json; trust?: Json }
interface ClusterPlan {
  name: string; gateways: { inCluster: string; crossCluster: string }[]; gatewayVip?: string;
  migrationNetwork: { cidr: string; ipam: { routes: { dst: string; gw: string }[] } };
}
interface Library {
  planFleetDocument(doc: unknown): { plan: { fleet: string; clusters: ClusterPlan[] } };
  gatewayConfigFor(plan: unknown, cluster: ClusterPlan): GatewayConfig;
}

/**
 * The library's planner and config writer, from the root package's built lib/. In `npm test` the unit lane may
 * be rebuilding that lib/ (npm pack's prepack) at this moment, and tsc rewrites a file in place: a require that
 * fails is tried again, three times, 2 s apart, with the module cache cleared.
 */
async function library(): Promise<Library> {
  const file = (f: string) => path.join(ROOT_LIB, f);
  if (!fs.existsSync(file('gateway/config.js'))) throw new Error(`${file('gateway/config.js')} is missing: run \`npm run build\` at the repository root first`);
  for (let i = 1; ; i++) {
    try {
      return { ...require(file('addressing/planner.js')), ...require(file('gateway/config.js')) } as Library;
    } catch (e) {
      if (i === 3) throw e;
      for (const k of Object.keys(require.cache)) if (k.startsWith(ROOT_LIB)) delete require.cache[k];
      await new Promise((r) => setTimeout(r, 2000));
    }
  }
}

/** A three-cluster gateway-mode fleet, both networks of one family (the shapes of examples/ and test/support/fleets.ts). */
function fleetDocument(f: Family): unknown {
  return {
    apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Fleet', metadata: { name: 'lab' },
    spec: {
      crossClusterNetwork: {
        attachment: { type: 'macvlan', master: 'eth2' },
        addresses: f === 4 ? { pool: ['192.168.50.0/24'], prefixLength: 24 } : { pool: ['fd00:5::100-fd00:5::1ff'], prefixLength: 64 },
      },
      migrationNetwork: { attachment: { type: 'bridge', bridge: 'br-mig' }, supernet: f === 4 ? '10.200.0.0/16' : 'fd00:200::/56' },
      clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3 }, { name: 'c', nodes: 3 }],
    },
  };
}

const bare = (a: string) => a.replace(/\/\d+$/, '');
const len = (a: string) => a.split('/')[1];
/** Host number n of a CIDR the plan gave (10.200.0.0/24, 10 -> 10.200.0.10; fd00:200::/64, 10 -> fd00:200::a). */
function host(cidr: string, n: number): string {
  const base = bare(cidr);
  return base.includes(':') ? `${base.replace(/::$/, '')}::${n.toString(16)}` : base.replace(/\.\d+$/, `.${n}`);
}

/** Every address of one lab, from the plan, plus the lab's own hosts (pod network, handlers, stranger). */
function addressesOf(plan: { clusters: ClusterPlan[] }, f: Family) {
  const [a, b, c] = plan.clusters;
  const v6 = f === 6;
  return {
    aMig: a.gateways[0].inCluster, aVip: a.gatewayVip!, aXc: a.gateways[0].crossCluster,
    bMig: b.gateways[0].inCluster, bVip: b.gatewayVip!, bXc: b.gateways[0].crossCluster,
    cXc: [c.gateways[0].crossCluster, c.gateways[1].crossCluster],
    aCidr: a.migrationNetwork.cidr, bCidr: b.migrationNetwork.cidr, supernetA: a.migrationNetwork.ipam.routes[0], supernetB: b.migrationNetwork.ipam.routes[0],
    handler: host(a.migrationNetwork.cidr, 10), migHost: host(a.migrationNetwork.cidr, 11), peerHandler: host(b.migrationNetwork.cidr, 10),
    aPod: v6 ? 'fd00:244::5/64' : '10.244.0.5/24', pod: v6 ? 'fd00:244::9/64' : '10.244.0.9/24', node: v6 ? 'fd00:244::1/64' : '10.244.0.1/24',
    bPod: v6 ? 'fd00:244:1::5/64' : '10.244.1.5/24',
    stranger: v6 ? `fd00:5::ee/${len(a.gateways[0].crossCluster)}` : `192.168.50.200/${len(a.gateways[0].crossCluster)}`,
  };
}
type Addrs = ReturnType<typeof addressesOf>;

interface ProbeReq {
  op: 'tcp' | 'http' | 'tunnel'; host: string; port: number; src?: string; timeoutMs: number; path?: string; body?: boolean;
  creds?: { ca: string; cert: string; key: string }; send?: 'open' | 'publish' | 'garbage'; dstHost?: string; dstPort?: number; claim?: string; bundle?: string;
}
interface ProbeRes { how: string; connected: boolean; ms: number; body?: string }

/** One long-lived probe process in a namespace: a request a line, an answer a line. */
class Probe {
  private next = 1;
  private readonly waiting = new Map<number, (r: ProbeRes) => void>();
  constructor(private readonly child: ChildProcess) {
    readline.createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.startsWith('{')) return;
      const r = JSON.parse(line) as ProbeRes & { id: number };
      this.waiting.get(r.id)?.(r);
      this.waiting.delete(r.id);
    });
  }
  ask(req: ProbeReq): Promise<ProbeRes> {
    const id = this.next++;
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`probe ${JSON.stringify(req)}: no answer in ${req.timeoutMs + 3000} ms`)), req.timeoutMs + 3000);
      this.waiting.set(id, (r) => { clearTimeout(t); resolve(r); });
      this.child.stdin!.write(`${JSON.stringify({ id, ...req })}\n`);
    });
  }
}

/** mm_proxy_refusals_total by reason (both sides summed). */
function refusals(metrics: string): Map<string, number> {
  const m = new Map<string, number>();
  for (const x of metrics.matchAll(/^mm_proxy_refusals_total\{([^}]*)\} (\d+)/gm)) {
    const reason = /reason="([^"]+)"/.exec(x[1])?.[1] ?? '?';
    m.set(reason, (m.get(reason) ?? 0) + Number(x[2]));
  }
  return m;
}
const delta = (before: Map<string, number>, after: Map<string, number>) =>
  [...after].filter(([k, v]) => v > (before.get(k) ?? 0)).map(([k]) => k);

/**
 * Whether what a cell got is its expectation: the same words, or for a refusal, the expected gateway's reason
 * among those counted (a refusal at b is also counted by a's origin as `peer_<reason>`).
 */
function matches(expect: Expect, got: string): boolean {
  if (!expect.startsWith('refused ') || !got.startsWith('refused ')) return expect === got;
  return got.slice('refused '.length).split(',').includes(expect.slice('refused '.length));
}

/** One PKI for both families (openssl takes seconds on a loaded machine). */
let sharedPki: Pki | undefined;
const pkiFor = (fleet: string): Pki => (sharedPki ??= makePki(fleet, ['a', 'b', 'c']));

function matrixSuite(f: Family): void {
  describe(`attack matrix, IPv${f} (library-written configs, real runtime and setup-rules, network namespaces)`, { timeout: 5 * HANG_GUARD_MS, skip }, () => {
    const lab = new NetnsLab();
    let pki: Pki;
    let A: Addrs;
    let trustSocket = '';
    const ns = { sw: '', ga: '', gb: '', x: '', l: '', p: '', hb: '' };
    const probes = {} as Record<'x' | 'l' | 'p' | 'ga' | 'gb', Probe>;
    const logs: Record<'a' | 'b', () => string> = { a: () => '', b: () => '' };
    const route = (nsName: string, dst: string, via: string) => lab.run(['ip', ...(f === 6 ? ['-6'] : []), 'route', 'add', dst, 'via', via], nsName);

    const buildLab = () => {
      for (const k of Object.keys(ns) as (keyof typeof ns)[]) ns[k] = lab.addNs(k);
      lab.run(['ip', 'link', 'add', 'br0', 'type', 'bridge'], ns.sw);
      lab.run(['ip', 'link', 'set', 'br0', 'up'], ns.sw);
      const shared = (n: string, port: string, addrs: string[]) => {
        lab.link(ns.sw, port, [], n, 'xc0', addrs);
        lab.run(['ip', 'link', 'set', port, 'master', 'br0'], ns.sw);
      };
      shared(ns.ga, 'to-ga', [A.aXc]);
      shared(ns.gb, 'to-gb', [A.bXc]);
      shared(ns.x, 'to-x', [A.stranger, ...A.cXc]);
      lab.link(ns.ga, 'mig0', [A.aMig, A.aVip], ns.l, 'mig0', [`${A.handler}/${len(A.aCidr)}`, `${A.migHost}/${len(A.aCidr)}`]);
      lab.link(ns.ga, 'eth0', [A.aPod], ns.p, 'eth0', [A.pod, A.node]);
      lab.link(ns.gb, 'mig0', [A.bMig, A.bVip], ns.hb, 'mig0', [`${A.peerHandler}/${len(A.bCidr)}`]);
      // b's pod network: a veth whose other end stays in b's namespace (no dummy module on every kernel)
      lab.run(['ip', 'link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth0p'], ns.gb);
      lab.run(['ip', 'addr', 'add', A.bPod, 'dev', 'eth0', ...(f === 6 ? ['nodad'] : [])], ns.gb);
      for (const i of ['eth0', 'eth0p']) lab.run(['ip', 'link', 'set', i, 'up'], ns.gb);
      // the handlers' route from the plan (the fleet supernet via the gateway VIP); the attackers point everything at gateway a
      route(ns.l, A.supernetA.dst, A.supernetA.gw);
      route(ns.hb, A.supernetB.dst, A.supernetB.gw);
      route(ns.l, 'default', bare(A.aVip));
      route(ns.x, 'default', bare(A.aXc));
      route(ns.p, 'default', bare(A.aPod));
    };

    /** The library's config for cluster `name`, with the pod's mounts pointed into the test's directory. */
    const writeConfig = (lib: Library, plan: { clusters: ClusterPlan[] }, name: 'a' | 'b', dir: string): string => {
      const cfg = lib.gatewayConfigFor(plan, plan.clusters.find((c) => c.name === name)!);
      const file = path.join(dir, `${name}.json`);
      const sock = path.join(dir, `${name}-trust.sock`);
      if (name === 'a') trustSocket = sock;
      fs.writeFileSync(file, JSON.stringify({
        ...cfg,
        tls: { ...cfg.tls, caFile: pki.ca, certFile: pki.certs[name].cert, keyFile: pki.certs[name].key },
        ...(cfg.trust ? { trust: { ...cfg.trust, socket: sock } } : {}),
      }));
      return file;
    };

    before(async () => {
      const t0 = Date.now();
      const lib = await library();
      const { plan } = lib.planFleetDocument(fleetDocument(f));
      A = addressesOf(plan, f);
      pki = pkiFor(plan.fleet);
      const dir = tmpDir('mm-matrix-');
      buildLab();
      const files = { a: writeConfig(lib, plan, 'a', dir), b: writeConfig(lib, plan, 'b', dir) };
      const tLab = Date.now();
      await Promise.all((['a', 'b'] as const).map(async (g) => {
        const where = g === 'a' ? ns.ga : ns.gb;
        await lab.exec(where, [node, CLI, 'setup-rules', '--config', files[g]], HANG_GUARD_MS);
        const started = await lab.start(where, [node, CLI, 'run', '--config', files[g]], 'gateway listening', HANG_GUARD_MS);
        logs[g] = started.out;
      }));
      const tGateways = Date.now();
      // the probes, and the destinations' sinks in the same processes: b's handler, a's handler, a's node
      const sinks: Record<'x' | 'l' | 'p' | 'ga' | 'gb' | 'hb', string[]> = {
        x: [], l: [`${A.handler}:9185`], p: [`${bare(A.node)}:10250`], ga: [], gb: [], hb: [`${A.peerHandler}:49152`, `${A.peerHandler}:9185`],
      };
      await Promise.all((Object.keys(sinks) as (keyof typeof sinks)[]).map(async (k) => {
        const child = (await lab.start(ns[k], [node, PROBE, ...sinks[k]], 'probe ready', 15_000, 'pipe')).child;
        if (k !== 'hb') probes[k] = new Probe(child);
      }));
      console.log(`# attack matrix IPv${f}: up in ${Date.now() - t0} ms (plan, pki and namespaces ${tLab - t0} ms, setup-rules and gateways ${tGateways - tLab} ms, probes ${Date.now() - tGateways} ms)`);
    });
    after(async () => { await lab.cleanup(); });

    const metricsOf = async (g: 'a' | 'b') => {
      const r = await probes[g === 'a' ? 'ga' : 'gb'].ask({ op: 'http', host: '127.0.0.1', port: 15090, path: '/metrics', timeoutMs: 3000, body: true });
      assert.equal(r.how, 'http:200', `gateway ${g}'s /metrics on loopback`);
      return refusals(r.body ?? '');
    };

    /** Where a vantage point stands: its probe process, its source address, its certificate. */
    const standing = (v: Vantage) => {
      const pk = (n: string) => ({ ca: pki.ca, cert: pki.certs[n].cert, key: pki.certs[n].key });
      switch (v) {
        case 'stranger': return { probe: probes.x, src: bare(A.stranger), creds: undefined };
        case 'peer-c': return { probe: probes.x, src: bare(A.cXc[0]), creds: pk('c') };
        case 'other-fleet': return { probe: probes.x, src: bare(A.cXc[1]), creds: pk('otherfleet') };
        case 'pod': return { probe: probes.p, src: bare(A.pod), creds: undefined };
        case 'mig-host': return { probe: probes.l, src: A.migHost, creds: undefined };
        case 'handler': return { probe: probes.l, src: A.handler, creds: undefined };
      }
    };

    /** The one attempt a cell makes (undefined: the cell has no network attempt). */
    const attempt = (row: Row, v: Vantage): ProbeReq | undefined => {
      const { src, creds } = standing(v);
      const tunnelTo = bare(A.aXc);
      const timeoutMs = row.expect[v] === 'no connection' ? SILENT_MS : ATTEMPT_MS;
      const tcp = (h: string, port: number): ProbeReq => ({ op: 'tcp', host: bare(h), port, src, timeoutMs });
      const get = (h: string, p: string): ProbeReq => ({ op: 'http', host: bare(h), port: 15090, path: p, src, timeoutMs });
      /** A tunnel frame to a's tunnel port: over TLS with the vantage point's certificate, else in the clear. */
      const frame = (send: 'open' | 'publish' | 'garbage', claim: string, dst = A.handler, port = 9185): ProbeReq =>
        ({ op: 'tunnel', host: tunnelTo, port: 15443, src, creds, send, claim, dstHost: bare(dst), dstPort: port, bundle: pki.ca, timeoutMs });
      const viaTunnel = creds !== undefined;
      const dest = (h: string, port: number) => (viaTunnel ? frame('open', 'c', h, port) : tcp(h, port));
      switch (row.key) {
        case 'peer-handler': return dest(A.peerHandler, 49152);
        case 'peer-gateway-in-cidr': return dest(A.bMig, 9185);
        case 'peer-gateway-shared': return tcp(A.bXc, 15443);
        case 'local-handler': return v === 'mig-host' || v === 'handler' ? undefined : dest(A.handler, 9185);
        case 'local-gateway-own': return dest(A.aMig, 15090);
        case 'node': return v === 'pod' ? undefined : dest(A.node, 10250);
        case 'intercept-mig': return tcp(A.aMig, 15001);
        case 'intercept-shared': return tcp(A.aXc, 15001);
        case 'intercept-pod': return tcp(A.aPod, 15001);
        case 'tunnel-shared': return tcp(A.aXc, 15443);
        case 'tunnel-mig': return tcp(A.aMig, 15443);
        case 'tunnel-pod': return tcp(A.aPod, 15443);
        case 'admin-healthz': return get(A.aPod, '/healthz');
        case 'admin-metrics': return get(A.aPod, '/metrics');
        case 'admin-probe': return get(A.aPod, '/probe');
        case 'admin-trust': return get(A.aPod, '/trust');
        case 'admin-shared': return get(A.aXc, '/healthz');
        case 'admin-mig': return get(A.aMig, '/healthz');
        case 'open-claim-b': return frame('open', 'b');
        case 'publish-claim-b': return frame('publish', 'b');
        case 'bad-frame': return frame('garbage', 'c');
        case 'trust-socket': return undefined;
        default: throw new Error(`row ${row.key}: no attempt written for it`);
      }
    };

    /** What a cell's attempt amounted to, in the table's words. */
    const outcome = (r: ProbeRes, refusedA: string[], refusedB: string[]): string => {
      if (r.how === 'flowed') return 'flows';
      if (r.how.startsWith('http:')) return `HTTP ${r.how.slice(5)}`;
      if (!r.connected) return 'no connection';
      const counted = [...refusedA.map((x) => `a:${x}`), ...refusedB.map((x) => `b:${x}`)];
      return counted.length ? `refused ${counted.join(',')}` : `connected, ${r.how}, nothing counted`;
    };

    it(`every cell's outcome is its expectation (IPv${f})`, async () => {
      const cells = MATRIX.flatMap((row) => VANTAGES.map((v) => ({ row, v, expect: row.expect[v] as Expect, req: attempt(row, v) })));
      const seen = new Map<string, { got: string; how: string; ms: number }>();
      const key = (row: Row, v: Vantage) => `${row.key}/${v}`;
      // the cells that must make no connection, at once (their bound is a timeout)
      await Promise.all(cells.filter((c) => c.req && c.expect === 'no connection').map(async (c) => {
        const r = await standing(c.v).probe.ask(c.req!);
        seen.set(key(c.row, c.v), { got: r.connected || r.how === 'flowed' ? `connected, ${r.how}` : 'no connection', how: r.how, ms: r.ms });
      }));
      // the others one by one, each with its own refusal counts
      const counts = async () => Promise.all([metricsOf('a'), metricsOf('b')]);
      let before = await counts();
      for (const c of cells.filter((x) => x.req && x.expect !== 'no connection')) {
        const r = await standing(c.v).probe.ask(c.req!);
        const now = await counts();
        seen.set(key(c.row, c.v), { got: outcome(r, delta(before[0], now[0]), delta(before[1], now[1])), how: r.how, ms: r.ms });
        before = now;
      }
      for (const c of cells.filter((x) => !x.req)) seen.set(key(c.row, c.v), { got: c.expect === 'no address' ? trustSocketHasNoAddress() : 'n/a', how: '-', ms: 0 });

      const lines = cells.map((c) => {
        const s = seen.get(key(c.row, c.v))!;
        const ok = matches(c.expect, s.got);
        return { ok, text: `${ok ? 'ok  ' : 'FAIL'} ${c.row.key.padEnd(21)} ${c.v.padEnd(11)} expected ${c.expect.padEnd(36)} got ${s.got} (${s.how}, ${s.ms} ms)` };
      });
      console.log(`# attack matrix IPv${f}: ${lines.filter((l) => l.ok).length}/${lines.length} cells as expected\n${lines.map((l) => `#   ${l.text}`).join('\n')}`);
      const wrong = lines.filter((l) => !l.ok).map((l) => l.text);
      assert.deepEqual(wrong, [], `cells not as expected:\n${wrong.join('\n')}\n--- gateway a:\n${logs.a().split('\n').slice(-15).join('\n')}`);
    });

    /** 'no address' when the trust socket is a unix socket no other user may open and the runtime listens on no other port. */
    const trustSocketHasNoAddress = (): string => {
      const st = fs.statSync(trustSocket);
      if (!st.isSocket() || (st.mode & 0o077) !== 0) return `trust socket mode ${(st.mode & 0o777).toString(8)}`;
      const asNobody = spawnSync('setpriv', ['--reuid=65534', '--regid=65534', '--clear-groups', node, '-e',
        `require('net').connect(${JSON.stringify(trustSocket)}).on('connect',()=>{console.log('connected');process.exit(0)}).on('error',e=>{console.log(e.code);process.exit(0)})`], { encoding: 'utf8', timeout: HANG_GUARD_MS });
      if (asNobody.stdout.trim() !== 'EACCES') return `another user connecting: ${asNobody.stdout.trim() || asNobody.stderr.trim()}`;
      const ports = listeningPorts(ns.ga);
      const extra = ports.filter((p) => !['15001', '15443', '15090'].includes(p));
      return extra.length ? `gateway a also listens on ${extra.join(', ')}` : 'no address';
    };

    const listeningPorts = (where: string): string[] => {
      const out = lab.run(['ss', '-Hltun'], where);
      return [...new Set(out.split('\n').filter(Boolean).map((l) => l.trim().split(/\s+/)[4].replace(/^.*:/, '')))];
    };

    it(`gateway a listens on exactly its three ports (IPv${f}), each where the table says`, () => {
      const out = lab.run(['ss', '-Hltn'], ns.ga);
      console.log(`# gateway a's listeners (IPv${f}):\n${out.split('\n').filter(Boolean).map((l) => `#   ${l.trim().split(/\s+/)[3]}`).join('\n')}`);
      assert.deepEqual(listeningPorts(ns.ga).sort(), ['15001', '15090', '15443']);
    });
  });
}

matrixSuite(4);
matrixSuite(6);
