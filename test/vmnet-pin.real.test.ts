/**
 * `migration-mesh pin-addresses` (issue 40 item 4, the API side) against two real kube-apiservers (RBAC on) with the
 * upstream IPAMClaim CRD (test/fixtures/upstream/ipamclaims) and KubeVirt's VirtualMachine CRD as virt-operator v1.8.4
 * generates it (real/kubevirt-bins mm-kubevirt-crds), run as the built CLI under a user bound only to the generated
 * Role (PinAddressesRole) in tenant-blue. The example fleet (examples/vm-networks.fleet.yaml, its ledger) moves
 * tenant-blue/web-1 fra-1 -> ams-1 over the primary Layer2 network blue; a moves file beside a copy adds db-1 (a
 * second mobile VM), app-7 (an address of fra-1's own slice) and ghost-1 (no VM).
 * What nobody runs here: ipam-extensions and OVN-Kubernetes (the claims and their status.ips are written as they
 * would write them), KubeVirt's controllers and Forklift (the move is simulated: the target VM and claim created,
 * the source VM set to runStrategy Halted as virt-controller does on completion).
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { App, Chart } from 'cdk8s';
import { KubeObject, installCrds, serverSideApply } from './support/real-apply';
import { kubevirtWorkloadCrds, upstreamCrds } from './support/real-crds';
import { Identity, RealCluster, RealFleet, kubeconfigFile, ensureBuiltCli } from './support/real-kube';
import { MovedVmGuard, PinAddressesRole } from '../index';

const ROOT = path.resolve(__dirname, '..');
const EXAMPLE = path.join(ROOT, 'examples', 'vm-networks.fleet.yaml');
const NS = 'tenant-blue';
const KEY = 'network.kubevirt.io/addresses';
const WEB1 = '{"default":["10.50.240.0","fd50::f000:0:0:0"]}';
const started = Date.now();

let real: RealFleet;
let fra: RealCluster;
let ams: RealCluster;
let dir: string;
let fleetFile: string;
let operatorKc: string;

/** A kubeconfig with one context per cluster (named as the cluster) for `who` on each. */
const kubeconfigFor = (file: string, who: Record<string, Identity>): string => kubeconfigFile(file, [...real.clusters.values()], who);

/**
 * The built CLI (lib/cli/cli.js), as the binary runs, with `--timeout 60`: the product's 10 s per request is meant for
 * real clusters, and a test of an answer must not rest on it beside two CPU hogs (cli-status met that in run t41).
 */
function cli(args: string[], kc = operatorKc, file = fleetFile, output = 'json'): Promise<{ code: number; out: string; err: string; json?: any }> {
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [path.join(ROOT, 'lib', 'cli', 'cli.js'), 'pin-addresses', file, '--kubeconfig', kc, '--output', output, '--timeout', '60', ...args]);
    let out = '';
    let err = '';
    p.stdout.on('data', (c) => { out += c; });
    p.stderr.on('data', (c) => { err += c; });
    p.on('close', (code) => {
      let json: any;
      try { json = JSON.parse(out); } catch { json = undefined; }
      resolve({ code: code ?? -1, out, err, json });
    });
  });
}

const codes = (r: { json?: any }) => (r.json?.moves ?? []).flatMap((m: any) => m.problems.map((p: any) => p.code));

const vmObject = (name: string, runStrategy = 'Always', annotations?: Record<string, string>): KubeObject => ({
  apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', metadata: { name, namespace: NS },
  spec: {
    runStrategy,
    template: {
      metadata: { labels: { app: name }, ...(annotations ? { annotations } : {}) },
      spec: { domain: { devices: { interfaces: [{ name: 'default', binding: { name: 'l2bridge' } }] }, memory: { guest: '1Gi' } }, networks: [{ name: 'default', pod: {} }] },
    },
  },
} as KubeObject);

const vmPath = (name: string) => `/apis/kubevirt.io/v1/namespaces/${NS}/virtualmachines/${name}`;
const claimPath = (name: string) => `/apis/k8s.cni.cncf.io/v1alpha1/namespaces/${NS}/ipamclaims/${name}`;

/** An IPAMClaim as ipam-extensions creates it (`<vm>.<network>`, label kubevirt.io/vm) with OVN-K's status.ips. */
async function claim(c: RealCluster, vm: string, ips: string[], name = `${vm}.default`): Promise<void> {
  await serverSideApply(c, { apiVersion: 'k8s.cni.cncf.io/v1alpha1', kind: 'IPAMClaim', metadata: { name, namespace: NS, labels: { 'kubevirt.io/vm': vm } },
    spec: { network: 'cluster_udn_blue', interface: 'ovn-udn1' } } as KubeObject, 'ipam-extensions');
  const r = await c.request('PATCH', `${claimPath(name)}/status`, { status: { ips } }, { contentType: 'application/merge-patch+json' });
  expect(r.status).toBe(200);
}

const get = async (c: RealCluster, p: string) => (await c.request('GET', p)).json;

/** Simulates the move's end: the target VM with the source's template, its claim on the pinned addresses, the source halted. */
async function completeMove(vm: string, ips: string[]): Promise<void> {
  const src = await get(fra, vmPath(vm));
  await serverSideApply(ams, vmObject(vm, 'Always', src.spec.template.metadata.annotations), 'forklift');
  await claim(ams, vm, ips);
  expect((await fra.request('PATCH', vmPath(vm), { spec: { runStrategy: 'Halted' } }, { contentType: 'application/merge-patch+json' })).status).toBe(200);
}

beforeAll(async () => {
  ensureBuiltCli('pin-addresses');
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-pin-'));
  fleetFile = path.join(dir, 'vm-networks.fleet.yaml');
  fs.copyFileSync(EXAMPLE, fleetFile);
  fs.copyFileSync(EXAMPLE.replace('.fleet.yaml', '.ledger.yaml'), path.join(dir, 'vm-networks.ledger.yaml'));
  fs.writeFileSync(path.join(dir, 'vm-networks.moves.yaml'), stringify({
    apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Moves', metadata: { name: 'vmnet' },
    moves: ['db-1', 'app-7', 'app-8', 'app-9', 'ghost-1'].map((vm) => ({ vm, namespace: NS, from: 'fra-1', to: 'ams-1', batch: 'wave-2' })),
  }));
  real = await RealFleet.start(['fra-1', 'ams-1']);
  [fra, ams] = [real.cluster('fra-1'), real.cluster('ams-1')];
  const crds = [...upstreamCrds().filter((c) => c.crd.metadata.name === 'ipamclaims.k8s.cni.cncf.io').map((c) => c.crd), ...kubevirtWorkloadCrds()];
  const app = new App();
  const role = new PinAddressesRole(new Chart(app, 'pin'), 'role', { namespaces: [NS] });
  const roles = role.roles.map((r) => r.toJson() as KubeObject);
  await Promise.all([fra, ams].map(async (c) => {
    await installCrds(c, crds as unknown as Parameters<typeof installCrds>[1]);
    for (const ns of [NS, 'tenant-red']) await serverSideApply(c, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } } as KubeObject, 'platform-installer');
    for (const r of roles) await serverSideApply(c, r, 'platform-installer');
    await serverSideApply(c, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata: { name: 'pin-operator', namespace: NS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'migration-mesh-pin-addresses' },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: 'pin-operator' }] } as KubeObject, 'platform-installer');
  }));
  // Established is not served yet: wait until each cluster lists both kinds
  for (const c of [fra, ams]) {
    for (const p of [`/apis/kubevirt.io/v1/namespaces/${NS}/virtualmachines`, `/apis/k8s.cni.cncf.io/v1alpha1/namespaces/${NS}/ipamclaims`]) {
      for (let i = 0; (await c.request('GET', p)).status !== 200; i++) {
        if (i > 300) throw new Error(`${c.name}: ${p} not served after 60 s`);
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }
  operatorKc = kubeconfigFor(path.join(dir, 'operator.kubeconfig'), { 'fra-1': fra.identity('pin-operator'), 'ams-1': ams.identity('pin-operator') });
  // the source: web-1 and db-1 (mobile, their claims on the ledger's addresses), app-7 (an address of fra-1's slice)
  for (const vm of ['web-1', 'db-1', 'app-7', 'app-8', 'app-9']) await serverSideApply(fra, vmObject(vm), 'user');
  await claim(fra, 'web-1', ['10.50.240.0/16', 'fd50::f000:0:0:0/64']);
  // db-1's claim holds another address than the ledger gives it (10.50.240.1, fd50::f000:0:0:1)
  await claim(fra, 'db-1', ['10.50.16.99/16', 'fd50::1000:0:0:99/64']);
  await claim(fra, 'app-7', ['10.50.16.20/16', 'fd50::1000:0:0:14/64']);
  await claim(fra, 'app-8', ['10.50.16.21/16', 'fd50::1000:0:0:15/64']);
  await claim(fra, 'app-9', ['10.50.16.22/16', 'fd50::1000:0:0:16/64']);
  // the target holds app-8's address in a claim (a stale one of an earlier move) and app-9's IPv4 address in another VM's pin
  await claim(ams, 'old-app', ['10.50.16.21/16', 'fd50::1000:0:0:15/64']);
  await serverSideApply(ams, vmObject('other-vm', 'Halted', { [KEY]: '{"default":["10.50.16.22"]}' }), 'user');
}, 240_000);

afterAll(async () => {
  await real?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
  console.log(`vmnet-pin-real: ${((Date.now() - started) / 1000).toFixed(1)} s`);
});

const rvs = async (c: RealCluster, vms: string[]) => Promise.all(vms.map(async (vm) => (await get(c, vmPath(vm))).metadata.resourceVersion));
const byMove = (r: { json?: any }) => Object.fromEntries((r.json?.moves ?? []).map((m: any) => [m.move.split('/')[1], m]));
const APPS = ['web-1', 'db-1', 'app-7', 'app-8', 'app-9'];

describe('pin-addresses before the move', () => {
  test('one run over every listed move: the pins it would write, each refusal with its code, and nothing written', async () => {
    const before = await rvs(fra, APPS);
    const r = await cli(['--apply']);
    expect(r.code).toBe(1);
    expect(r.json.applied).toBe(false);
    const m = byMove(r);
    expect(m['web-1']).toMatchObject({ network: 'blue', addresses: ['10.50.240.0', 'fd50::f000:0:0:0'], source: 'ipamclaim', afterMove: 'delete-source', problems: [] });
    expect(m['web-1'].changes).toEqual([{ cluster: 'fra-1', verb: 'patch', object: `VirtualMachine ${NS}/web-1`, field: `spec.template.metadata.annotations["${KEY}"]`, to: WEB1 }]);
    expect(m['app-7']).toMatchObject({ addresses: ['10.50.16.20', 'fd50::1000:0:0:14'], source: 'ipamclaim', afterMove: 'keep-source-halted', problems: [] });
    expect(m['app-7'].warnings.map((w: any) => w.code)).toContain('vmnet-move-tombstone');
    // the claim and the ledger disagree: the claim is the one to trust
    expect(m['db-1'].problems.map((p: any) => p.code)).toEqual(['vmnet-pin-disagree']);
    expect(m['db-1'].problems[0].message).toContain('holds 10.50.16.99, fd50::1000:0:0:99, but the ledger gives tenant-blue/db-1 10.50.240.1, fd50::f000:0:0:1');
    expect(m['db-1'].problems[0].fix).toMatch(/^trust the claim/);
    // the target holds the address: named by its holder
    expect(m['app-8'].problems.map((p: any) => [p.code, p.message.split('; ')[0]])).toEqual([
      ['vmnet-pin-target-holds', `ams-1 already holds 10.50.16.21 on blue: IPAMClaim ${NS}/old-app.default`],
      ['vmnet-pin-target-holds', `ams-1 already holds fd50::1000:0:0:15 on blue: IPAMClaim ${NS}/old-app.default`],
    ]);
    expect(m['app-9'].problems.map((p: any) => p.code)).toEqual(['vmnet-pin-target-holds']);
    expect(m['app-9'].problems[0].message).toContain(`VirtualMachine ${NS}/other-vm (${KEY})`);
    expect(m['ghost-1'].problems).toEqual([expect.objectContaining({ code: 'vmnet-pin-vm-missing', message: `fra-1 has no VirtualMachine ${NS}/ghost-1: nothing to pin` })]);
    expect(await rvs(fra, APPS)).toEqual(before);
  }, 60_000);

  test('--apply writes exactly the annotation on the source template (web-1, app-7); a second run changes nothing', async () => {
    // only the moves that can go: web-1 (spec.forklift.moves) and app-7
    fs.writeFileSync(path.join(dir, 'vm-networks.moves.yaml'), stringify({ apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Moves', metadata: { name: 'vmnet' },
      moves: [{ vm: 'app-7', namespace: NS, from: 'fra-1', to: 'ams-1', batch: 'wave-2' }] }));
    const before = await get(fra, vmPath('web-1'));
    const r = await cli(['--apply']);
    expect(r.code).toBe(0);
    expect(r.json.applied).toBe(true);
    const after = await get(fra, vmPath('web-1'));
    expect(after.spec.template.metadata.annotations).toEqual({ [KEY]: WEB1 });
    expect((await get(fra, vmPath('app-7'))).spec.template.metadata.annotations).toEqual({ [KEY]: '{"default":["10.50.16.20","fd50::1000:0:0:14"]}' });
    // nothing else changed: the running VM's spec (runStrategy, template spec) is as it was
    expect({ ...after.spec, template: { ...after.spec.template, metadata: { labels: after.spec.template.metadata.labels } } }).toEqual(before.spec);

    const written = await rvs(fra, ['web-1', 'app-7']);
    const text = await cli(['--move', `${NS}/web-1`], operatorKc, fleetFile, 'text');
    // the localnet network tenant-blue is also on cannot keep its address: said with the pin
    expect(text.out).toBe(`pin-addresses: dry run, nothing written (--apply writes)\n${NS}/web-1 fra-1 -> ams-1 on blue: 10.50.240.0, fd50::f000:0:0:0 `
      + '(from the source IPAMClaim, the ledger agrees or has none; after the move: delete-source)\n  already pinned on fra-1\n'
      + '  warning [vmnet-ip-not-kept] spec.forklift.moves[0]: tenant-blue/web-1 may use localnet network vlan100, whose addresses come from OVN IPAM per cluster: '
      + 'on ams-1 it gets a new one (nothing upstream can pin a localnet address)\n');
    const again = await cli(['--apply']);
    expect(again.code).toBe(0);
    expect(again.json.moves.map((m: any) => [m.move, m.changes, m.note])).toEqual([
      [`${NS}/web-1`, [], 'already pinned on fra-1'], [`${NS}/app-7`, [], 'already pinned on fra-1'],
    ]);
    expect(await rvs(fra, ['web-1', 'app-7'])).toEqual(written);
  }, 60_000);

  test('a network that does not reach the target: refused by the pre-flight before any cluster is asked', async () => {
    const raw = parse(fs.readFileSync(fleetFile, 'utf8'));
    raw.spec.vmNetworks[0].reach = { type: 'none' };
    delete raw.spec.vmNetworks[0].clusters;
    const noReach = path.join(dir, 'no-reach.fleet.yaml');
    fs.writeFileSync(noReach, stringify(raw));
    // no ledger beside it (planned anew), and a kubeconfig without any context: the refusal comes before any request
    const empty = path.join(dir, 'empty.kubeconfig');
    fs.writeFileSync(empty, JSON.stringify({ apiVersion: 'v1', kind: 'Config', clusters: [], users: [], contexts: [] }));
    const r = await cli(['--move', `${NS}/web-1`], empty, noReach);
    expect(r.code).toBe(1);
    expect(codes(r)).toEqual(['vmnet-move-no-reach']);
  }, 30_000);
});

describe('RBAC: the generated Role is all it takes, and nothing more', () => {
  test('without the binding the CLI is refused (403, the fix names the Role); under it, anything outside it is 403', async () => {
    const nobody = kubeconfigFor(path.join(dir, 'nobody.kubeconfig'), { 'fra-1': fra.identity('nobody'), 'ams-1': ams.identity('nobody') });
    const r = await cli(['--move', `${NS}/web-1`], nobody);
    expect(r.code).toBe(1);
    expect(codes(r)).toEqual(['vmnet-pin-api']);
    expect(r.json.moves[0].problems[0].message).toMatch(/forbidden/);
    expect(r.json.moves[0].problems[0].fix).toContain('bind the Role migration-mesh-pin-addresses');

    const as = { as: fra.identity('pin-operator') };
    const outside: Array<[string, string, unknown?]> = [
      ['GET', '/apis/kubevirt.io/v1/namespaces/tenant-red/virtualmachines'],
      ['POST', `/apis/kubevirt.io/v1/namespaces/${NS}/virtualmachines`, vmObject('new-vm')],
      ['PUT', vmPath('db-1'), await get(fra, vmPath('db-1'))],
      ['PATCH', claimPath('db-1.default'), { metadata: { labels: { x: 'y' } } }],
      ['POST', `/apis/k8s.cni.cncf.io/v1alpha1/namespaces/${NS}/ipamclaims`, { apiVersion: 'k8s.cni.cncf.io/v1alpha1', kind: 'IPAMClaim', metadata: { name: 'x' }, spec: { network: 'n', interface: 'i' } }],
      ['GET', `/api/v1/namespaces/${NS}/secrets`],
      ['GET', `/api/v1/namespaces/${NS}/pods`],
      ['GET', '/api/v1/namespaces'],
      ['GET', `/apis/kubevirt.io/v1/namespaces/${NS}/virtualmachineinstances`],
    ];
    for (const [method, p, body] of outside) {
      const res = await fra.request(method, p, body, { ...as, contentType: method === 'PATCH' ? 'application/merge-patch+json' : undefined });
      expect([method, p, res.status]).toEqual([method, p, 403]);
    }
    // inside it: what the CLI uses
    expect((await fra.request('GET', vmPath('db-1'), undefined, as)).status).toBe(200);
    expect((await fra.request('GET', `/apis/k8s.cni.cncf.io/v1alpha1/namespaces/${NS}/ipamclaims`, undefined, as)).status).toBe(200);
  }, 30_000);
});

describe('pin-addresses --after', () => {
  test('refused until the move completed and the target holds the pinned address; then a mobile address\'s source VM and claim are deleted, a source-slice address\'s halted VM stays labelled; a second run changes nothing', async () => {
    const early = await cli(['--after', '--apply']);
    expect(early.code).toBe(1);
    expect(early.json.moves.map((m: any) => m.problems.map((p: any) => [p.code, p.message]))).toEqual([
      [['vmnet-pin-not-moved', `ams-1 has no VirtualMachine ${NS}/web-1: the move has not run`]],
      [['vmnet-pin-not-moved', `ams-1 has no VirtualMachine ${NS}/app-7: the move has not run`]],
    ]);

    await completeMove('web-1', ['10.50.240.0/16', 'fd50::f000:0:0:0/64']);
    // app-7: the target gave the VM another address (the pin did not hold): refused, and web-1 is not touched either
    await completeMove('app-7', ['10.50.32.5/16', 'fd50::2000:0:0:5/64']);
    const halted = await rvs(fra, ['web-1', 'app-7']);
    const wrong = await cli(['--after', '--apply']);
    expect(wrong.code).toBe(1);
    expect(byMove(wrong)['app-7'].problems.map((p: any) => p.code)).toEqual(['vmnet-pin-not-moved']);
    expect(byMove(wrong)['app-7'].problems[0].message).toContain('the moved VM holds 10.50.32.5, fd50::2000:0:0:5 on ams-1');
    expect(await rvs(fra, ['web-1', 'app-7'])).toEqual(halted);

    await claim(ams, 'app-7', ['10.50.16.20/16', 'fd50::1000:0:0:14/64']);
    const dry = await cli(['--after']);
    expect(dry.code).toBe(0);
    const dryText = await cli(['--after', '--move', `${NS}/app-7`], operatorKc, fleetFile, 'text');
    expect(dryText.out.split('\n').slice(2, 5)).toEqual([
      `  patch fra-1 VirtualMachine ${NS}/app-7 metadata.labels["migrationmesh.dev/moved-to"]`, '    - (none)', '    + ams-1',
    ]);
    expect(dry.json.moves.map((m: any) => m.changes)).toEqual([
      [{ cluster: 'fra-1', verb: 'delete', object: `VirtualMachine ${NS}/web-1` }, { cluster: 'fra-1', verb: 'delete', object: `IPAMClaim ${NS}/web-1.default` }],
      [{ cluster: 'fra-1', verb: 'patch', object: `VirtualMachine ${NS}/app-7`, field: 'metadata.labels["migrationmesh.dev/moved-to"]', to: 'ams-1' }],
    ]);
    expect(await rvs(fra, ['web-1', 'app-7'])).toEqual(halted);

    const done = await cli(['--after', '--apply']);
    expect(done.code).toBe(0);
    expect((await fra.request('GET', vmPath('web-1'))).status).toBe(404);
    expect((await fra.request('GET', claimPath('web-1.default'))).status).toBe(404);
    const tomb = await get(fra, vmPath('app-7'));
    expect(tomb.metadata.labels).toEqual({ 'migrationmesh.dev/moved-to': 'ams-1' });
    expect(tomb.spec.runStrategy).toBe('Halted');
    expect((await get(fra, claimPath('app-7.default'))).status.ips).toEqual(['10.50.16.20/16', 'fd50::1000:0:0:14/64']);
    // the moved VMs and their claims on the target are untouched
    expect((await get(ams, claimPath('web-1.default'))).status.ips).toEqual(['10.50.240.0/16', 'fd50::f000:0:0:0/64']);
    expect((await get(ams, vmPath('web-1'))).spec.template.metadata.annotations[KEY]).toBe(WEB1);

    const again = await cli(['--after', '--apply']);
    expect(again.code).toBe(0);
    expect(again.json.moves.map((m: any) => [m.source, m.changes, m.note])).toEqual([
      ['ledger', [], 'nothing left on fra-1'], ['ipamclaim', [], 'the halted VM on fra-1 is the tombstone already'],
    ]);
    expect((await get(fra, vmPath('app-7'))).metadata.resourceVersion).toBe(tomb.metadata.resourceVersion);
  }, 90_000);
});

describe('MovedVmGuard on the real server', () => {
  test('a tombstone labelled moved-to cannot be started (as virt-api\'s start patches runStrategy), not even by an admin; removing the label while Halted releases it', async () => {
    const app = new App();
    const guard = new MovedVmGuard(new Chart(app, 'guard'), 'guard', { namespaces: [NS] });
    for (const o of [guard.policy, guard.binding]) await serverSideApply(fra, o.toJson() as KubeObject, 'platform-installer');
    const start = (vm: string) => fra.request('PATCH', vmPath(vm), { spec: { runStrategy: 'Always' } }, { contentType: 'application/merge-patch+json' });
    // a policy takes effect a moment after it is created: probe with a VM of its own until it is refused (at most 20 s)
    await serverSideApply(fra, { ...vmObject('probe', 'Halted'), metadata: { name: 'probe', namespace: NS, labels: { 'migrationmesh.dev/moved-to': 'ams-1' } } } as KubeObject, 'user');
    for (const deadline = Date.now() + 20_000; (await start('probe')).status === 200;) {
      await fra.request('PATCH', vmPath('probe'), { spec: { runStrategy: 'Halted' } }, { contentType: 'application/merge-patch+json' });
      if (Date.now() > deadline) throw new Error('the moved-VM guard is not active after 20 s');
      await new Promise((r) => setTimeout(r, 200));
    }
    const refused = await start('app-7');
    expect(refused.status).toBe(403);
    expect(refused.json.message).toContain(`VirtualMachine ${NS}/app-7 moved to ams-1 and stays Halted here`);
    expect((await get(fra, vmPath('app-7'))).spec.runStrategy).toBe('Halted');
    // an unlabelled VM is not concerned
    expect((await start('db-1')).status).toBe(200);
    // the deliberate release: drop the label (still Halted), then start
    expect((await fra.request('PATCH', vmPath('app-7'), { metadata: { labels: { 'migrationmesh.dev/moved-to': null } } }, { contentType: 'application/merge-patch+json' })).status).toBe(200);
    expect((await start('app-7')).status).toBe(200);
  }, 60_000);
});
