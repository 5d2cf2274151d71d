/**
 * `migration-mesh status` on HCO-delivered clusters (kubevirt.configDelivery: hco), against the contract
 * fake API servers: the KubeVirt verdict (migration network, feature gates) and the KubeVirt pods'
 * attachment are judged from the KubeVirt CR HCO writes from our HyperConverged CR
 * (`kubevirt-<HyperConverged name>` in its namespace), modelled in test/support/status-clusters.ts.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as yaml from 'yaml';
import { execFileSync } from 'child_process';
import { generatedObjects } from '../cli/generated-objects';
import { makeCert } from '../proxy/src/testkit/ca-certs';
import { statusRoleRules } from '../src/report/status-role';
import { baseFleet, runCli } from './support/fleets';
import { FakeCluster, kubeconfig, runStatus, startCluster } from './support/status-clusters';

const H = 3600_000;
const ROOT = path.join(__dirname, '..');

describe('migration-mesh status: HCO-delivered clusters', () => {
  let dir: string;
  let file: string;
  const fakes: FakeCluster[] = [];
  const ca = { h: makeCert('kubevirt.io@h', Date.now() - H, Date.now() + 100 * H), k: makeCert('kubevirt.io@k', Date.now() - H, Date.now() + 100 * H) };
  const objs = (c: string) => generatedObjects(path.join(dir, 'dist', 'hc', c));
  const KV = 'kubevirt-hyperconverged/kubevirt-kubevirt-hyperconverged';
  beforeAll(() => {
    if (!fs.existsSync(path.join(ROOT, 'lib', 'cli', 'status.js'))) execFileSync('npx', ['tsc', '-p', '.'], { cwd: ROOT, stdio: 'inherit' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-status-hco-'));
    file = path.join(dir, 'hc.fleet.yaml');
    fs.writeFileSync(file, yaml.stringify(baseFleet({ kubevirt: { configDelivery: 'hco' }, clusters: [{ name: 'h', nodes: 3 }, { name: 'k', nodes: 3 }] }, 'hc')));
    expect(runCli(['synth', file, '--out', path.join(dir, 'dist'), '--no-svg']).code).toBe(0);
  });
  afterEach(async () => { for (const f of fakes.splice(0)) await f.close(); });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const run = async (edit?: (kv: any) => void) => {
    const h = await startCluster(objs('h'), ca.h, [ca.k]);
    const k = await startCluster(objs('k'), ca.k, [ca.h], { editHcoKubevirt: edit });
    fakes.push(h, k);
    const kc = path.join(dir, 'kubeconfig');
    kubeconfig(kc, { h: `http://127.0.0.1:${h.api.port}`, k: `http://127.0.0.1:${k.api.port}` });
    const map = path.join(dir, 'contexts.yaml');
    fs.writeFileSync(map, yaml.stringify({ h: 'ctx-h', k: 'ctx-k' }));
    return runStatus([file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc, '--context-map', map, '--output', 'json']);
  };

  test('a ready HCO pair: the KubeVirt CR HCO wrote holds our network and gates, the pods are attached, exit 0', async () => {
    expect(objs('h').find((o) => o.kind === 'HyperConverged')?.metadata).toMatchObject({ name: 'kubevirt-hyperconverged', namespace: 'kubevirt-hyperconverged' });
    const r = await run();
    expect(r.err).toBe('');
    const s = JSON.parse(r.out);
    const h = s.clusters.find((c: any) => c.cluster === 'h');
    expect(h.kubevirt).toMatchObject({ found: true, object: KV, migrationNetwork: 'lm-migration', wantNetwork: 'lm-migration', wantGates: ['DecentralizedLiveMigration'] });
    expect(h.kubevirt.featureGates).toContain('DecentralizedLiveMigration');
    expect(h.kubevirt.featureGates).toContain('CPUManager'); // HCO's own, read from the live CR
    expect(h.attachments.network).toBe('kubevirt-hyperconverged/lm-migration');
    expect(h.attachments.pods.map((p: any) => `${p.role} ${p.attached}`)).toEqual(['virt-handler true', 'virt-handler true', 'sync-controller true']);
    expect(s.findings).toEqual([]);
    expect(s.pairs.map((p: any) => `${p.from}>${p.to} ${p.ready}`)).toEqual(['h>k true', 'k>h true']);
    expect(r.code).toBe(0);
    const kc = path.join(dir, 'kubeconfig');
    const t = await runStatus([file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc, '--context-map', path.join(dir, 'contexts.yaml')]);
    expect(t.out).toMatch(new RegExp(`^h \\(context ctx-h\\): .*; KubeVirt ${KV} \\(HCO\\) migration network lm-migration, gates [^;]*DecentralizedLiveMigration[^;]*; on kubevirt-hyperconverged/lm-migration: virt-handler 2/2, sync controller 1/1;`, 'm'));
  }, 60_000);

  test('an HCO cluster whose KubeVirt CR lacks the migration network (or the gate): not ready, the reason names that CR, exit 1', async () => {
    const r = await run((kv) => { delete kv.spec.configuration.migrations.network; });
    const s = JSON.parse(r.out);
    expect(r.code).toBe(1);
    const why = `k: KubeVirt ${KV} (written by HCO) migration network is unset, want lm-migration`;
    expect(s.findings.map((f: any) => `${f.code} ${f.message}`)).toEqual([`status/kubevirt-network ${why}`]);
    expect(s.pairs).toEqual([
      { from: 'h', to: 'k', ready: false, code: 'status/kubevirt-network', reason: why },
      { from: 'k', to: 'h', ready: false, code: 'status/kubevirt-network', reason: why },
    ]);
    // the pods are still judged against the network we want
    expect(s.clusters.find((c: any) => c.cluster === 'k').attachments.network).toBe('kubevirt-hyperconverged/lm-migration');
    const g = await run((kv) => { kv.spec.configuration.developerConfiguration.featureGates = kv.spec.configuration.developerConfiguration.featureGates.filter((x: string) => x !== 'DecentralizedLiveMigration'); });
    expect(JSON.parse(g.out).findings.map((f: any) => f.message)).toEqual([`k: KubeVirt ${KV} (written by HCO) feature gate DecentralizedLiveMigration off`]);
    expect(g.code).toBe(1);
  }, 60_000);

  test('no KubeVirt CR where HCO writes it (kubevirt-<HyperConverged name>): kubevirt-missing, naming that CR', async () => {
    const r = await run((kv) => { kv.metadata.name = 'someone-else'; });
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out).findings.map((f: any) => f.message)).toEqual([`k: KubeVirt CR ${KV} (written by HCO) not found`]);
  }, 60_000);
});

describe('the status ClusterRole of an HCO cluster', () => {
  const can = (kinds: { apiVersion: string; kind: string }[], group: string, resource: string) => statusRoleRules(kinds)
    .some((r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes('get'));
  test('grants get on the KubeVirt CR HCO writes, and only where a HyperConverged is generated', () => {
    expect(can([{ apiVersion: 'hco.kubevirt.io/v1beta1', kind: 'HyperConverged' }], 'kubevirt.io', 'kubevirts')).toBe(true);
    expect(can([{ apiVersion: 'apps/v1', kind: 'Deployment' }], 'kubevirt.io', 'kubevirts')).toBe(false);
  });
});
