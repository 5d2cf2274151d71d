/**
 * `validate` refuses exactly what `synth` refuses (issue #12): the same checks, the same problems, and
 * every layer's problems in one run. Each refusal below was reproduced on main first, where validate
 * said "valid" (exit 0) and synth refused.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as YAML from 'yaml';
import { FleetDocument } from '../src/fleet/schema';
import { baseFleet, mutate, runCli } from './support/fleets';


const run = runCli;

let dir: string;
beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-w12c-validate-')); });
afterEach(() => { fs.rmSync(dir, { recursive: true, force: true }); });

function write(name: string, doc: unknown): string {
  const f = path.join(dir, name);
  fs.writeFileSync(f, YAML.stringify(doc));
  return f;
}

/** The problem codes of `validate --output json` for one file (empty when valid). */
function validateCodes(f: string, ...flags: string[]): { code: number; codes: string[] } {
  const r = run(['validate', f, '--output', 'json', ...flags]);
  const [entry] = JSON.parse(r.out) as { problems: { code: string }[] }[];
  return { code: r.code, codes: entry.problems.map((p) => p.code) };
}

/** The problem codes synth prints (`- [code] path: ...`), and whether it wrote the output. */
function synthCodes(f: string, ...flags: string[]): { code: number; codes: string[]; wrote: boolean } {
  const out = path.join(dir, 'out');
  const r = run(['synth', f, '--out', out, ...flags]);
  const codes = [...r.err.matchAll(/^ {2}- \[([^\]]+)\]/gm)].map((m) => m[1]);
  return { code: r.code, codes, wrote: fs.existsSync(out) };
}

const harvesterFleet = (): FleetDocument => ({
  apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Fleet', metadata: { name: 'hv' },
  spec: {
    datapath: 'direct', kubevirt: { version: '1.8' },
    crossClusterNetwork: { attachment: { type: 'bridge', bridge: 'migration-br', vlan: 410 }, addresses: { pool: ['172.20.40.0/24'], prefixLength: 24 } },
    clusters: [{ name: 'hv-a', nodes: 5, harvester: { clusterNetwork: 'migration' } }, { name: 'kv-c', nodes: 4 }],
  },
});

describe('validate refuses what synth refuses', () => {
  test.each([
    ['a carved block too small for the cluster', mutate(baseFleet(), (d) => { d.spec.clusters[0].nodes = 300; }), ['cidr-too-small']],
    ['an exhausted supernet', mutate(baseFleet(), (d) => {
      d.spec.migrationNetwork.clusterPrefixLength = 17;
      d.spec.clusters.push({ name: 'c', nodes: 3 });
    }), ['supernet-exhausted']],
    ['Argo CD servers missing a cluster', mutate(baseFleet(), (d) => {
      d.spec.gitops = { repoURL: 'https://git.example.com/infra.git', argocd: { clusterServers: { a: 'https://a.example.com:6443' } } };
    }), ['gitops-server-missing']],
    ['a Harvester rule (ClusterNetwork name too long)', mutate(harvesterFleet(), (d) => { d.spec.clusters[0].harvester.clusterNetwork = 'migration-network-long'; }),
      ['harvester-cluster-network-name']],
    ['a huge node count', mutate(baseFleet(), (d) => { d.spec.clusters[1].nodes = 100_000; }), ['cidr-too-small']],
  ])('%s', (_what, doc, codes) => {
    const f = write('f.fleet.yaml', doc);
    const v = validateCodes(f);
    const s = synthCodes(f);
    expect(s).toEqual({ code: 1, codes, wrote: false });
    expect(v).toEqual({ code: 1, codes });
    // the text form says the same, on stderr
    const t = run(['validate', f]);
    expect(t.code).toBe(1);
    expect(t.out).toBe('');
    expect(t.err).toContain(`[${codes[0]}]`);
  });

  test('the ledger beside the fleet file, --ledger and --renamed-from count as they do for synth', () => {
    const f = write('prod.fleet.yaml', baseFleet({}, 'prod'));
    expect(run(['synth', f, '--out', path.join(dir, 'out')]).code).toBe(0);
    // renamed fleet: the ledger beside it belongs to 'prod'
    const renamed = write('prod.fleet.yaml', baseFleet({}, 'production'));
    expect(validateCodes(renamed)).toEqual({ code: 1, codes: ['ledger-other-fleet'] });
    expect(validateCodes(renamed, '--renamed-from', 'prod')).toEqual({ code: 0, codes: [] });
    // --ledger names another file
    const elsewhere = path.join(dir, 'elsewhere.ledger.yaml');
    fs.copyFileSync(path.join(dir, 'prod.ledger.yaml'), elsewhere);
    const other = write('other.fleet.yaml', baseFleet({}, 'other'));
    expect(validateCodes(other)).toEqual({ code: 0, codes: [] });
    expect(validateCodes(other, '--ledger', elsewhere)).toEqual({ code: 1, codes: ['ledger-other-fleet'] });
    // --frozen: a change to the ledger is refused
    const grown = write('prod.fleet.yaml', mutate(baseFleet({}, 'prod'), (d) => { d.spec.clusters.push({ name: 'c', nodes: 3 }); }));
    expect(validateCodes(grown)).toEqual({ code: 0, codes: [] });
    expect(validateCodes(grown, '--frozen')).toEqual({ code: 1, codes: ['ledger-would-change'] });
  });

  test('an unreadable ledger or moves file is refused as synth refuses it', () => {
    const f = write('m.fleet.yaml', baseFleet({}, 'm'));
    fs.writeFileSync(path.join(dir, 'm.moves.yaml'), 'apiVersion: migrationmesh.dev/v1alpha1\nkind: Moves\nmetadata: {name: other}\nmoves: []\n');
    const v = validateCodes(f);
    expect(v.code).toBe(1);
    expect(v.codes).toEqual(synthCodes(f).codes);
    fs.rmSync(path.join(dir, 'm.moves.yaml'));
    fs.writeFileSync(path.join(dir, 'm.ledger.yaml'), 'kind: Nope\n');
    expect(validateCodes(f)).toEqual({ code: 1, codes: ['ledger-malformed'] });
  });

  test('two fleet files of one name are refused, as synth refuses them', () => {
    const a = write('a.fleet.yaml', baseFleet({}, 'same'));
    const b = write('b.fleet.yaml', baseFleet({}, 'same'));
    expect(run(['synth', a, b, '--out', path.join(dir, 'out')]).code).toBe(1);
    const r = run(['validate', a, b, '--output', 'json']);
    expect(r.code).toBe(1);
    expect(JSON.parse(r.out).map((x: { valid: boolean; problems: { code: string }[] }) => [x.valid, x.problems.map((p) => p.code)]))
      .toEqual([[true, []], [false, ['duplicate-fleet-name']]]);
  });
});

describe('every layer in one run', () => {
  test('a VLAN out of range no longer hides a capacity problem, a Harvester rule or missing Argo CD servers', () => {
    const doc = mutate(harvesterFleet(), (d) => {
      d.spec.crossClusterNetwork.attachment.vlan = 5000; // schema
      d.spec.clusters[0].harvester.clusterNetwork = 'migration-network-long'; // Harvester
      d.spec.clusters.push({ name: 'big', nodes: 300 }); // the shared pool (direct mode: one address per node)
      d.spec.gitops = { repoURL: 'https://git.example.com/infra.git', argocd: { clusterServers: { 'hv-a': 'https://a:6443' } } }; // GitOps
    });
    const f = write('f.fleet.yaml', doc);
    const expected = ['schema-invalid', 'pool-too-small', 'gitops-server-missing'];
    // the pool is a fleet-level planning field: with it too small no plan (nor Harvester check) is made
    expect(validateCodes(f)).toEqual({ code: 1, codes: expected });
    const fits = write('g.fleet.yaml', mutate(doc, (d) => { d.spec.clusters[2].nodes = 30; }));
    // hv-a's Harvester VLAN is the shared attachment's (5000): Harvester's own rule refuses it too
    const all = ['schema-invalid', 'harvester-vlan', 'harvester-cluster-network-name', 'gitops-server-missing'];
    expect(validateCodes(fits)).toEqual({ code: 1, codes: all });
    expect(synthCodes(fits).codes).toEqual(all);
  });

  test('a cluster with a VLAN problem leaves the capacity and GitOps of the others checked', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.clusters[0].migrationNetwork = { attachment: { type: 'bridge', bridge: 'br-a', vlan: 5000 } };
      d.spec.clusters[1].nodes = 300;
      d.spec.gitops = { repoURL: 'https://git.example.com/infra.git', argocd: { clusterServers: { a: 'https://a:6443' } } };
    });
    const f = write('f.fleet.yaml', doc);
    const r = JSON.parse(run(['validate', f, '--output', 'json']).out)[0];
    expect(r.problems.map((p: { code: string; path: string }) => [p.code, p.path])).toEqual([
      ['schema-invalid', 'spec.clusters[0].migrationNetwork.attachment.vlan'],
      ['cidr-too-small', 'spec.clusters[1].nodes'],
      ['gitops-server-missing', 'spec.gitops.argocd.clusterServers'],
    ]);
    expect(synthCodes(f).codes).toEqual(['schema-invalid', 'cidr-too-small', 'gitops-server-missing']);
  });

  test('a value of the wrong type: the other clusters are still checked (planned, when the value is optional)', () => {
    // an optional field of the wrong type is set aside: cluster a is left out of planning, b is planned
    const optional = write('t.fleet.yaml', mutate(baseFleet(), (d) => { d.spec.clusters[0].multiNetworkPolicy = 'yes'; d.spec.clusters[1].nodes = 300; }));
    expect(validateCodes(optional).codes).toEqual(['schema-invalid', 'cidr-too-small']);
    // a required one (nodes): cluster a is left out, the cross-field rules still check the others, with their own paths
    const required = write('u.fleet.yaml', mutate(baseFleet(), (d) => {
      d.spec.clusters[0].nodes = 'three';
      d.spec.clusters.push({ name: 'b', nodes: 3 }, { name: 'c', nodes: 3, migrationNetwork: { cidr: '10.99.0.0/29' } });
    }));
    const r = JSON.parse(run(['validate', required, '--output', 'json']).out)[0];
    expect(r.problems.map((p: { code: string; path: string; message: string }) => [p.code, p.path, p.message.replace(/:.*/, '')])).toEqual([
      ['schema-invalid', 'spec.clusters[0].nodes', expect.any(String)],
      ['duplicate-cluster-name', 'spec.clusters[2].name', "'b' is also the name of spec.clusters[1]"],
      ['cidr-too-small', 'spec.clusters[3].migrationNetwork.cidr', '10.99.0.0/29 is too small for cluster c'],
    ]);
    expect(synthCodes(required).codes).toEqual(['schema-invalid', 'duplicate-cluster-name', 'cidr-too-small']);
    // a fleet-level required value unreadable: the schema's problems alone (no document to read)
    const fleetLevel = write('v.fleet.yaml', mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses = 'all'; d.spec.clusters[0].nodes = 'three'; }));
    expect(validateCodes(fleetLevel).codes).toEqual(['schema-invalid', 'schema-invalid']);
  });

  test('a fleet-level value out of range stops planning (no guessed problems), but not when planning never reads it', () => {
    // a gateway replica count out of range changes what every cluster needs: no plan, so no capacity problem is guessed
    const replicas = write('r.fleet.yaml', mutate(baseFleet(), (d) => { d.spec.gateway = { replicas: 0 }; d.spec.clusters[0].nodes = 300; }));
    expect(validateCodes(replicas).codes).toEqual(['schema-invalid']);
    // the KubeVirt version is never read by the planner: the capacity problem is still found
    const old = write('o.fleet.yaml', mutate(baseFleet(), (d) => { d.spec.kubevirt = { version: '1.5' }; d.spec.clusters[0].nodes = 300; }));
    // (kubevirt-too-old is reported once per cluster the fleet-wide version applies to)
    expect(validateCodes(old).codes).toEqual(['kubevirt-too-old', 'kubevirt-too-old', 'cidr-too-small']);
  });
});

describe('plan refuses what synth refuses', () => {
  test.each([
    ['Argo CD servers missing a cluster', mutate(baseFleet(), (d) => {
      d.spec.gitops = { repoURL: 'https://git.example.com/infra.git', argocd: { clusterServers: { a: 'https://a.example.com:6443' } } };
    }), 'gitops-server-missing'],
    ['a Harvester rule (ClusterNetwork name too long)', mutate(harvesterFleet(), (d) => { d.spec.clusters[0].harvester.clusterNetwork = 'migration-network-long'; }),
      'harvester-cluster-network-name'],
  ])('%s: exit 1 with the code, no picture written', (_what, doc, code) => {
    const f = write('f.fleet.yaml', doc);
    expect(synthCodes(f).codes).toContain(code);
    const svg = path.join(dir, 'plan.svg');
    const r = run(['plan', f, '--svg', svg]);
    expect(r.code).toBe(1);
    expect(r.err).toContain(`[${code}]`);
    expect(fs.existsSync(svg)).toBe(false);
  });

  test('the plan it prints is the plan synth writes (same addresses)', () => {
    const f = write('p.fleet.yaml', baseFleet({}, 'p'));
    const planned = JSON.parse(run(['plan', f, '--output', 'json']).out);
    expect(run(['synth', f, '--out', path.join(dir, 'out')]).code).toBe(0);
    expect(JSON.parse(run(['plan', f, '--output', 'json']).out)).toEqual(planned);
  });

  test('--svg into a path that cannot hold a file ends at once with the path and a fix', () => {
    const f = write('s.fleet.yaml', baseFleet({}, 's'));
    const t0 = Date.now();
    const r = run(['plan', f, '--svg', '/proc/mm-no-such/plan.svg']);
    expect(Date.now() - t0).toBeLessThan(10_000);
    expect(r.code).toBe(1);
    expect(r.err).toContain('/proc/mm-no-such');
  });
});
