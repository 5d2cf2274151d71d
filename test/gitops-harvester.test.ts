/**
 * Harvester form: the vm-migration-network value computed from the plan, Harvester's webhook rules
 * and ours enforced before anything is written, and no NAD / KubeVirt patch for Harvester clusters.
 */
import * as path from 'path';
import { FleetValidationError } from '../src/base/errors';
import { FleetDocument } from '../src/fleet/schema';
import { checkHarvesterValue, harvesterValueJson } from '../src/delivery/harvester';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import * as YAML from 'yaml';

const FILE = path.join(__dirname, '..', 'examples', 'harvester.fleet.yaml');
const doc = loadFleetFile(FILE);
const ledger = loadLedgerFile(ledgerPathFor(FILE));
const clone = (): FleetDocument => JSON.parse(JSON.stringify(doc));
const problemsOf = (d: FleetDocument): { path: string; message: string; fix?: string }[] => {
  try { synthesizeFleet(d); } catch (e) { if (e instanceof FleetValidationError) return [...e.problems]; throw e; }
  return [];
};

describe('Harvester setting value', () => {
  const r = synthesizeFleet(doc, { ledger });

  test('a Harvester cluster gets the vm-migration-network Setting and its trust agent: no KubeVirt NAD, no KubeVirt patch', () => {
    const agent = ['Namespace/migration-mesh', 'NetworkAttachmentDefinition/lm-crosscluster', 'ConfigMap/migration-mesh-trust', 'ServiceAccount/migration-mesh-trust',
      'Certificate/migration-mesh-gateway', 'Role/migration-mesh-trust', 'RoleBinding/migration-mesh-trust', 'Deployment/migration-mesh-trust-0',
      'Deployment/migration-mesh-trust-1', 'PodDisruptionBudget/migration-mesh-trust', 'Service/migration-mesh-trust-metrics'];
    for (const name of ['hv-a', 'hv-b']) {
      const objs = r.objects.get(name)!;
      expect(objs.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([...agent, 'Setting/vm-migration-network']);
      // the trust agent's objects live in migration-mesh, its Role where Harvester runs KubeVirt; nothing in KubeVirt's own config
      expect(objs.filter((o) => o.kind === 'NetworkAttachmentDefinition').map((o) => o.metadata.namespace)).toEqual(['migration-mesh']);
      expect(objs.find((o) => o.kind === 'Role')!.metadata.namespace).toBe('harvester-system');
      expect(objs.some((o) => o.kind === 'KubeVirt')).toBe(false);
    }
    // the plain KubeVirt cluster of the same fleet keeps NAD + KubeVirt (and its trust agent)
    expect(r.objects.get('kv-c')!.map((o) => o.kind).filter((k) => k === 'NetworkAttachmentDefinition' || k === 'KubeVirt')).toEqual(['NetworkAttachmentDefinition', 'NetworkAttachmentDefinition', 'KubeVirt']);
  });

  test('value = the cluster slice as range + excludes, Harvester struct key order, compact JSON', () => {
    const setting = YAML.parse(r.files.get('hv-a/Setting.vm-migration-network.yaml')!);
    expect(setting.apiVersion).toBe('harvesterhci.io/v1beta1');
    expect(setting.kind).toBe('Setting');
    expect(setting.metadata.namespace).toBeUndefined(); // cluster-scoped
    // hv-a holds 172.20.40.10-18 (5 nodes + 2 sync controllers + 2 surge = 9)
    expect(setting.value).toBe('{"clusterNetwork":"migration","vlan":410,"range":"172.20.40.0/24","exclude":["172.20.40.0/29","172.20.40.8/31","172.20.40.19/32","172.20.40.20/30","172.20.40.24/29","172.20.40.32/27","172.20.40.64/26","172.20.40.128/25"]}');
    const v = JSON.parse(setting.value);
    expect(Object.keys(v)).toEqual(['clusterNetwork', 'vlan', 'range', 'exclude']);
    // what Harvester's webhook will count as usable is exactly the slice
    expect(checkHarvesterValue(v, 5, 9, { path: 'spec.clusters[0]', datapathPath: 'spec.datapath' })).toEqual({ usable: 9, problems: [] });
    const b = JSON.parse(YAML.parse(r.files.get('hv-b/Setting.vm-migration-network.yaml')!).value);
    expect(checkHarvesterValue(b, 3, 7, { path: 'x', datapathPath: 'y' }).usable).toBe(7);
  });

  test('omitempty like the Go struct: no vlan key for 0, no exclude key when empty', () => {
    expect(harvesterValueJson({ clusterNetwork: 'mig', vlan: 0, range: '10.0.0.0/24', exclude: [] })).toBe('{"clusterNetwork":"mig","range":"10.0.0.0/24"}');
  });
});

describe("Harvester's webhook rules and ours", () => {
  const ctx = { path: 'spec.clusters[0]', datapathPath: 'spec.datapath' };

  test('usable addresses below non-witness nodes: refused (Harvester rule)', () => {
    const r = checkHarvesterValue({ clusterNetwork: 'mig', vlan: 10, range: '10.0.0.0/29', exclude: ['10.0.0.0/30'] }, 4, 8, ctx);
    expect(r.usable).toBe(3); // .4 .5 .6 (.7 is broadcast)
    expect(r.problems).toHaveLength(1);
    expect(r.problems[0].path).toBe('spec.clusters[0].nodes');
    expect(r.problems[0].message).toContain('3 usable addresses < 4 non-witness nodes');
  });

  test('enough for the nodes but not for sync controllers + surge: refused by our rule, which Harvester forgets', () => {
    const r = checkHarvesterValue({ clusterNetwork: 'mig', vlan: 10, range: '10.0.0.0/29' }, 4, 8, ctx);
    expect(r.usable).toBe(6);
    expect(r.problems.map((p) => p.message)).toEqual([expect.stringContaining('needs 8 = nodes + sync controllers + surge')]);
  });

  test('range larger than /16, excludes outside or as large as the range, VLAN on mgmt', () => {
    const big = checkHarvesterValue({ clusterNetwork: 'mig', range: '10.0.0.0/15' }, 1, 1, ctx);
    expect(big.problems.map((p) => p.path)).toContain('spec.crossClusterNetwork.addresses.prefixLength');
    const ex = checkHarvesterValue({ clusterNetwork: 'mig', range: '10.0.0.0/24', exclude: ['10.0.1.0/28', '10.0.0.0/24'] }, 1, 1, ctx);
    expect(ex.problems.map((p) => p.message).join('\n')).toMatch(/10\.0\.1\.0\/28 is outside the range/);
    expect(ex.problems.map((p) => p.message).join('\n')).toMatch(/10\.0\.0\.0\/24 is not smaller than the range/);
    const mgmt = checkHarvesterValue({ clusterNetwork: 'mgmt', vlan: 1, range: '10.0.0.0/24' }, 1, 1, ctx);
    expect(mgmt.problems.map((p) => p.path)).toEqual(['spec.clusters[0].harvester.vlan']);
    const v6 = checkHarvesterValue({ clusterNetwork: 'mig', range: 'fd00::/64' }, 1, 1, ctx);
    expect(v6.problems[0].message).toContain('IPv4 only');
  });

  test('a Harvester cluster in gateway mode is refused at its datapath field, nothing synthesized', () => {
    const d = clone();
    d.spec.clusters[0].datapath = 'gateway';
    d.spec.migrationNetwork = { attachment: { type: 'bridge', bridge: 'br-mig' }, supernet: '10.90.0.0/16' };
    const p = problemsOf(d);
    expect(p).toHaveLength(1);
    expect(p[0].path).toBe('spec.clusters[0].datapath');
    expect(p[0].message).toContain('supports only direct');
    expect(p[0].fix).toContain('datapath: direct');
  });

  test('a shared network wider than /16 is refused for Harvester clusters with the field to change', () => {
    const d = clone();
    d.spec.crossClusterNetwork.addresses = { pool: ['172.20.40.0/24'], prefixLength: 15 };
    const p = problemsOf(d);
    expect(p.map((x) => x.path)).toEqual(['spec.crossClusterNetwork.addresses.prefixLength']);
    expect(p[0].message).toContain('/16 or smaller');
  });

  test('explicit VLAN wins over the attachment VLAN', () => {
    const d = clone();
    d.spec.clusters[0].harvester = { clusterNetwork: 'migration', vlan: 77 };
    const r = synthesizeFleet(d);
    expect(JSON.parse(YAML.parse(r.files.get('hv-a/Setting.vm-migration-network.yaml')!).value).vlan).toBe(77);
  });
});
