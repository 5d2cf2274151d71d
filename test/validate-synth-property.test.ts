/**
 * Property (issue #12): over generated fleets, valid ones and ones broken on purpose (pools too small,
 * supernets exhausted, huge node counts, VLANs out of range, clashing CIDRs, Argo CD servers missing,
 * Harvester rules broken, required values unreadable, ...), `validate` succeeds exactly when `synth`
 * does, and reports the same problem codes in the same order. Both run through the CLI, each fleet in
 * its own directory (synth writes a ledger beside the fleet file). A second property: a problem in one
 * place never hides the problems of any layer elsewhere. Deterministic: fixed seed, bounded runs.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as YAML from 'yaml';
import * as fc from 'fast-check';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { MigrationMeshError } from '../src/base/errors';
import { FleetDocument } from '../src/fleet/schema';
import { runCli } from './support/fleets';

const SEED = 1212;
const RUNS = 120;

const NAMES = ['ams', 'fra', 'par', 'lis', 'osl'];

/** What a generated fleet breaks on purpose (each at cluster `at` modulo the cluster count where it is per cluster). */
const DEFECTS = [
  'pool-small', 'supernet-small', 'nodes-big', 'nodes-huge', 'nodes-zero', 'vlan-shared', 'vlan-cluster', 'cidr-clash', 'cidr-tiny',
  'replicas-zero', 'kubevirt-old', 'argocd-missing', 'argocd-unknown', 'harvester-name', 'harvester-mgmt', 'harvester-gateway',
  'duplicate-name', 'nodes-unreadable',
] as const;
type Defect = typeof DEFECTS[number];

const fleetArb = fc.record({
  // a valid fleet of some shape...
  clusters: fc.array(
    fc.record({ nodes: fc.integer({ min: 1, max: 20 }), explicitCidr: fc.boolean(), harvester: fc.boolean() }),
    { minLength: 1, maxLength: 5 },
  ),
  datapath: fc.constantFrom('gateway', 'direct'),
  replicas: fc.constantFrom(undefined, 1, 3),
  clusterPrefixLength: fc.constantFrom(24, 25),
  gitops: fc.constantFrom('none', 'argocd', 'flux'),
  // ...with no defect (about a third of the fleets), or one to three
  defects: fc.oneof(
    { weight: 1, arbitrary: fc.constant<{ defect: Defect; at: number }[]>([]) },
    { weight: 2, arbitrary: fc.array(fc.record({ defect: fc.constantFrom(...DEFECTS), at: fc.nat(4) }), { minLength: 1, maxLength: 3 }) },
  ),
});

type FleetParams = typeof fleetArb extends fc.Arbitrary<infer T> ? T : never;

function fleetOf(f: FleetParams): unknown {
  const has = (d: Defect): boolean => f.defects.some((x) => x.defect === d);
  const direct = f.datapath === 'direct';
  const clusters: any[] = f.clusters.map((c, i) => ({
    name: NAMES[i], nodes: c.nodes,
    ...(c.explicitCidr ? { migrationNetwork: { cidr: `10.99.${i}.0/24` } } : {}),
    // Harvester's form fits direct mode only
    ...(c.harvester && direct ? { harvester: { clusterNetwork: 'migration' } } : {}),
  }));
  const shared: any = { attachment: { type: 'bridge', bridge: 'br-shared', vlan: 100 }, addresses: { pool: ['192.168.50.0/24'], prefixLength: 24 } };
  const spec: any = {
    datapath: f.datapath,
    crossClusterNetwork: shared,
    migrationNetwork: { attachment: { type: 'bridge', bridge: 'br-mig', vlan: 100 }, supernet: '10.200.0.0/16', clusterPrefixLength: f.clusterPrefixLength },
    ...(f.replicas !== undefined ? { gateway: { replicas: f.replicas } } : {}),
    clusters,
  };
  const servers: Record<string, string> = Object.fromEntries(clusters.map((c) => [c.name, `https://${c.name}.example.com:6443`]));
  for (const { defect, at } of f.defects) {
    const c = clusters[at % clusters.length];
    const mn = (): any => (c.migrationNetwork ??= {});
    switch (defect) {
      case 'pool-small': shared.addresses.pool = ['192.168.50.10-192.168.50.12']; break;
      case 'supernet-small': // one /24 block for two or more clusters that carve theirs
        spec.migrationNetwork.supernet = '10.200.0.0/24';
        spec.migrationNetwork.clusterPrefixLength = 24;
        clusters.push({ name: 'x1', nodes: 2, datapath: 'gateway' }, { name: 'x2', nodes: 2, datapath: 'gateway' });
        break;
      case 'nodes-big': c.nodes = 300; break;
      case 'nodes-huge': c.nodes = 100_000; break;
      case 'nodes-zero': c.nodes = 0; break;
      case 'vlan-shared': shared.attachment.vlan = 5000; break;
      case 'vlan-cluster': mn().attachment = { type: 'bridge', bridge: 'br-mig', vlan: 5000 }; break;
      case 'cidr-clash': mn().cidr = '10.99.100.0/24'; clusters[0].migrationNetwork = { ...clusters[0].migrationNetwork, cidr: '10.99.100.0/24' }; break;
      case 'cidr-tiny': mn().cidr = `10.99.${50 + (at % clusters.length)}.0/29`; break;
      case 'replicas-zero': spec.gateway = { replicas: 0 }; break;
      case 'kubevirt-old': spec.kubevirt = { version: '1.5' }; break;
      case 'argocd-missing': delete servers[c.name]; break;
      case 'argocd-unknown': servers.nowhere = 'https://nowhere.example.com:6443'; break;
      case 'harvester-name': c.harvester = { clusterNetwork: 'migration-network-long' }; break;
      case 'harvester-mgmt': c.harvester = { clusterNetwork: 'mgmt', vlan: 1 }; break;
      case 'harvester-gateway': c.harvester = { clusterNetwork: 'migration' }; c.datapath = 'gateway'; break;
      case 'duplicate-name': c.name = clusters[0].name; break;
      case 'nodes-unreadable': c.nodes = 'three'; break; // a required value of the wrong type: the cluster is left out
    }
  }
  const argocd = f.gitops === 'argocd' || has('argocd-missing') || has('argocd-unknown');
  if (argocd) spec.gitops = { repoURL: 'https://git.example.com/infra.git', argocd: { clusterServers: servers } };
  else if (f.gitops === 'flux') spec.gitops = { flux: {} };
  return { apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Fleet', metadata: { name: 'prop' }, spec };
}

const run = runCli;

test('validate succeeds exactly when synth does, with the same problem codes', () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-w12c-prop-'));
  const seen = new Map<string, number>();
  let valid = 0;
  let n = 0;
  try {
    fc.assert(fc.property(fleetArb, (params) => {
      const dir = path.join(root, String(n++));
      fs.mkdirSync(dir);
      const file = path.join(dir, 'prop.fleet.yaml');
      fs.writeFileSync(file, YAML.stringify(fleetOf(params)));
      const v = run(['validate', file, '--output', 'json']);
      const [entry] = JSON.parse(v.out) as { valid: boolean; problems: { code: string }[] }[];
      const out = path.join(dir, 'out');
      const s = run(['synth', file, '--out', out, '--no-svg']);
      const synthCodes = [...s.err.matchAll(/^ {2}- \[([^\]]+)\]/gm)].map((m) => m[1]);
      expect({ exit: v.code, valid: entry.valid, codes: entry.problems.map((p) => p.code) })
        .toEqual({ exit: s.code, valid: s.code === 0, codes: synthCodes });
      // synth refuses with problems (never an unexplained error) and then writes nothing
      if (s.code !== 0) {
        expect(s.err).toMatch(/fleet is invalid/);
        expect(fs.existsSync(out)).toBe(false);
      }
      if (v.code === 0) valid++;
      for (const c of new Set(synthCodes)) seen.set(c, (seen.get(c) ?? 0) + 1);
    }), { seed: SEED, numRuns: RUNS, endOnFailure: true });
  } finally {
    fs.rmSync(root, { recursive: true, force: true });
  }
  // the generator reaches both outcomes and every kind of refusal it aims at (so the property is not vacuous)
  expect(valid).toBeGreaterThan(RUNS / 10);
  expect(RUNS - valid).toBeGreaterThan(RUNS / 10);
  const wanted = [
    'cidr-overlap', 'cidr-too-small', 'duplicate-cluster-name', 'gitops-server-missing', 'gitops-unknown-cluster', 'harvester-cluster-network-name',
    'harvester-needs-direct', 'harvester-vlan', 'kubevirt-too-old', 'pool-too-small', 'schema-invalid', 'supernet-exhausted',
  ];
  expect(wanted.filter((c) => !seen.has(c))).toEqual([]);
}, 120_000);

/** Every problem synthesis reports for a fleet, as `code@path` (empty when it synthesizes). */
function problemsOf(doc: unknown): string[] {
  try {
    synthesizeFleet(doc as FleetDocument);
    return [];
  } catch (e) {
    if (!(e instanceof MigrationMeshError)) throw e;
    return e.problems.map((p) => `${p.code}@${p.path}`);
  }
}

/** Gateway-mode fleets whose only problems are carved blocks too small (big node counts) and GitOps wiring. */
const plainFleetArb = fc.record({
  nodes: fc.array(fc.oneof({ weight: 3, arbitrary: fc.integer({ min: 1, max: 20 }) }, { weight: 1, arbitrary: fc.integer({ min: 300, max: 100_000 }) }),
    { minLength: 2, maxLength: 5 }),
  argocdMissing: fc.array(fc.nat(4), { maxLength: 2 }),
  at: fc.nat(4),
});

test('a problem in one place never hides another layer\'s problems elsewhere', () => {
  let hidden = 0;
  fc.assert(fc.property(plainFleetArb, ({ nodes, argocdMissing, at }) => {
    const names = nodes.map((_, i) => NAMES[i]);
    const servers = Object.fromEntries(names.filter((_, i) => !argocdMissing.includes(i)).map((n) => [n, `https://${n}.example.com:6443`]));
    const fleet = {
      apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Fleet', metadata: { name: 'plain' },
      spec: {
        crossClusterNetwork: { attachment: { type: 'bridge', bridge: 'br-shared', vlan: 100 }, addresses: { pool: ['192.168.50.0/24'], prefixLength: 24 } },
        migrationNetwork: { attachment: { type: 'bridge', bridge: 'br-mig', vlan: 100 }, supernet: '10.200.0.0/16' },
        gitops: { repoURL: 'https://git.example.com/infra.git', argocd: { clusterServers: servers } },
        clusters: names.map((name, i) => ({ name, nodes: nodes[i] })),
      },
    };
    const before = problemsOf(fleet);
    // a VLAN out of range on cluster k: the schema says so, and every other problem but k's own plan is still there
    const k = at % names.length;
    const clusterVlan = JSON.parse(JSON.stringify(fleet));
    clusterVlan.spec.clusters[k].migrationNetwork = { attachment: { type: 'bridge', bridge: 'br-mig', vlan: 5000 } };
    const own = `spec.clusters[${k}]`;
    // on main these were hidden behind the schema's problem
    if (before.some((p) => !p.includes(`@${own}.`))) hidden++;
    expect(problemsOf(clusterVlan)).toEqual([`schema-invalid@${own}.migrationNetwork.attachment.vlan`, ...before.filter((p) => !p.includes(`@${own}.`))]);
    // a VLAN out of range on the shared attachment, which planning never reads: every problem is still there
    const sharedVlan = JSON.parse(JSON.stringify(fleet));
    sharedVlan.spec.crossClusterNetwork.attachment.vlan = 5000;
    expect(problemsOf(sharedVlan)).toEqual(['schema-invalid@spec.crossClusterNetwork.attachment.vlan', ...before]);
  }), { seed: SEED, numRuns: 60, endOnFailure: true });
  expect(hidden).toBeGreaterThan(20);
}, 60_000);
