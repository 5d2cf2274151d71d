/**
 * Issue #30 in network namespaces: a mixed fleet, one gateway cluster (`a`) and one direct cluster (`d`),
 * synthesized by the library; `d` has no gateway, so its trust agent exchanges. Each replica is a network
 * namespace running the real CLI processes of its Deployment (the runtime, `migration-mesh-proxy run`,
 * and the trust container, `migration-mesh-proxy trust`, uid 65532), reaching the other cluster only over
 * the shared network (a bridge, the addresses of the Multus selections) and its own fake API server over
 * a pod network (test/support/netns-agents.ts `clusterApi`, as the other trust tests). Real time: the
 * direct cluster's CA is rotated by virt-operator's model (`rotateNow`) once the first exchange converged.
 * What only this test shows: the trust-only runtime role of a trust agent (no gateway, no interception,
 * the Deployment of `TrustAgentDeployment`) exchanging with a gateway (test/vm-migration.netns.test.ts
 * exchanges between two gateway clusters). Needs root, iproute2, openssl, setpriv; skips with a message
 * otherwise. Run it under `flock /tmp/mm-net.lock`.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { ChildProcess } from 'child_process';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { FakeKubeApi } from '../proxy/lib/testkit/fake-kube';
import { VirtOperatorModel } from '../proxy/lib/testkit/virt-operator-model';
import { NetnsLab, makeFleetPki, netnsSupport, READY_MS } from './support/netns';
import { RUNTIME_UID, agentCommand, clusterApi } from './support/netns-agents';
import { baseFleet } from './support/fleets';

const ROOT = path.join(__dirname, '..');
const PROXY_CLI = path.join(ROOT, 'proxy', 'lib', 'cli.js');
const NODE = process.execPath;
const H = 3600_000;

const support = netnsSupport();
const skipReason = !support.ok ? support.reason : !fs.existsSync(PROXY_CLI) ? `gateway runtime not built (${PROXY_CLI} missing)` : undefined;
if (skipReason) console.warn(`[fleet-trust-agent-netns] SKIPPED: ${skipReason}`);
const d = skipReason ? describe.skip : describe;

interface Side { name: string; api: FakeKubeApi; model: VirtOperatorModel; procs: ChildProcess[]; logs: string[] }

const tail = (f: string) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').slice(-10).join('\n') : '(no log)');

async function until(fn: () => boolean, ms: number): Promise<boolean> {
  const end = Date.now() + ms;
  while (!fn()) {
    if (Date.now() > end) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
  return true;
}

d('trust agent of a direct cluster exchanges CAs with a gateway cluster (network namespaces, real CLI processes)', () => {
  let lab: NetnsLab;
  let tmp: string;
  const sides: Side[] = [];
  const own = (f: string) => fs.chownSync(f, RUNTIME_UID, RUNTIME_UID);
  const r = synthesizeFleet(baseFleet({ gateway: { replicas: 1 }, clusters: [{ name: 'a', nodes: 2 }, { name: 'd', nodes: 2, datapath: 'direct' }] }, 'mix'));

  beforeAll(async () => {
    NetnsLab.reapStale();
    lab = new NetnsLab(`mm${process.pid}-ta`);
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-trust-agent-'));
    fs.chmodSync(tmp, 0o755);
    const pki = makeFleetPki(tmp, 'mix', ['a', 'd'], 2);
    const fab = lab.addNs('fab');
    lab.addBridge(fab, 'br-xc');
    for (const [i, name] of ['a', 'd'].entries()) {
      const objs = r.objects.get(name)!;
      const dep = objs.find((o) => o.kind === 'Deployment') as any;
      const cm = objs.find((o) => o.kind === 'ConfigMap' && o.data?.['config.json']) as any;
      const pod = dep.spec.template.spec;
      const runtime = pod.containers[0];
      const trust = pod.containers.find((c: any) => c.name === 'trust');
      const xc = JSON.parse(dep.spec.template.metadata.annotations['k8s.v1.cni.cncf.io/networks']).find((e: any) => e.name === 'lm-crosscluster');
      const namespace = trust.args[trust.args.indexOf('--namespace') + 1];
      // the API server and virt-operator's model (our emitted 168h/96h; d's CA is rotated by the test)
      const node = lab.addNs(`c${i}-node`);
      const { api, relay, kubeconfig } = await clusterApi(lab, tmp, node, name, namespace);
      const model = new VirtOperatorModel(api, name, 168 * H, 96 * H, Date.now);
      model.install(0);
      const ns = lab.addNs(`c${i}-p0`);
      lab.addVeth({ hostNs: ns, ifname: 'eth0', addrs: ['10.244.0.10/24'], fabricNs: node, portName: 'pod0', bridge: 'br-pod' });
      lab.addVeth({ hostNs: ns, ifname: xc.interface, addrs: [xc.ips[0]], fabricNs: fab, portName: `c${i}p0`, bridge: 'br-xc' });
      // the gateway's other attachment (in-cluster), unused here but named by its intercept listener (bound to it: issue 49)
      for (const att of JSON.parse(dep.spec.template.metadata.annotations['k8s.v1.cni.cncf.io/networks']).filter((e: any) => e.interface !== xc.interface)) {
        lab.run(['ip', '-n', ns, 'link', 'add', att.interface, 'type', 'veth', 'peer', 'name', 'mmunused0']); // no dummy module here
        for (const a of att.ips) lab.run(['ip', '-n', ns, 'addr', 'add', a, 'dev', att.interface]);
        lab.run(['ip', '-n', ns, 'link', 'set', att.interface, 'up']);
      }
      const run = path.join(tmp, `${name}-run`);
      fs.mkdirSync(run, { mode: 0o700 });
      own(run);
      const base = JSON.parse(cm.data['config.json']);
      const cfgFile = path.join(tmp, `${name}.json`);
      fs.writeFileSync(cfgFile, JSON.stringify({
        ...base, tls: { mode: base.tls.mode, caFile: pki[name].ca, certFile: pki[name].cert, keyFile: pki[name].key }, trust: { ...base.trust, socket: path.join(run, 'trust.sock') },
      }));
      own(cfgFile);
      for (const f of [pki[name].key, pki[name].cert]) own(f);
      const cmd = (c: any) => [NODE, PROXY_CLI, ...[...c.command, ...c.args].slice(1).map((a: string) => (a.endsWith('/config.json') ? cfgFile : a))];
      const logs = [path.join(tmp, `${name}-runtime.log`), path.join(tmp, `${name}-trust.log`)];
      const rt = lab.spawn(ns, cmd(runtime), { asUser: RUNTIME_UID, logFile: logs[0] });
      const [p] = await lab.execJson(ns, agentCommand('probe', `http://127.0.0.1:${base.listen.admin.port}/readyz`, READY_MS), READY_MS);
      if (!p?.ok) throw new Error(`${name} runtime not ready: ${JSON.stringify(p)}\n${tail(logs[0])}`);
      const tr = lab.spawn(ns, [...cmd(trust), '--kubeconfig', kubeconfig], { asUser: RUNTIME_UID, logFile: logs[1] });
      sides.push({ name, api, model, procs: [relay, rt, tr], logs });
    }
  }, 240_000); // two runtimes, each up to READY_MS to become ready beside CPU hogs

  afterAll(async () => {
    for (const s of sides) for (const p of s.procs) lab.kill(p);
    lab?.cleanup();
    for (const s of sides) await s.api.close();
    if (tmp && !process.env.MM_NETNS_KEEP) fs.rmSync(tmp, { recursive: true, force: true });
  });

  const logs = () => sides.map((s) => `--- ${s.name}\n${tail(s.logs[0])}\n${tail(s.logs[1])}`).join('\n');

  test('the gateway and the trust agent trust each other\'s CA; a rotation in the direct cluster is trusted by the gateway cluster within 10 s', async () => {
    const [a, dd] = sides;
    const t0 = Date.now();
    const both = () => a.model.trusts(dd.model.ca.sha256) && dd.model.trusts(a.model.ca.sha256);
    // the initial exchange includes every process's start-up (the trust container took 27 s to start beside two CPU
    // hogs in a fresh-clone CI run, and 30 s was the bound): a hang bound here; the rotation below keeps its 10 s
    if (!await until(both, 120_000)) throw new Error(`initial exchange did not converge in 120 s\n${logs()}`);
    const initial = Date.now() - t0;
    const before = dd.model.ca.sha256;
    const t1 = Date.now();
    dd.model.rotateNow();
    expect(dd.model.ca.sha256).not.toBe(before);
    expect(a.model.trusts(dd.model.ca.sha256)).toBe(false);
    const ok = await until(() => a.model.trusts(dd.model.ca.sha256), 10_000);
    if (!ok) throw new Error(`the rotated CA of d was not trusted by a within 10 s\n${logs()}`);
    console.log(`[fleet-trust-agent-netns] gateway a <-> trust agent d: initial exchange ${initial} ms; d's rotation trusted by a ${Date.now() - t1} ms later`);
    expect(dd.model.trusts(a.model.ca.sha256)).toBe(true);
  }, 180_000);
});
