import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { runCli } from './support/fleets';
import { suiteTmpDir } from './support/tmp';

const root = path.join(__dirname, '..');

const run = runCli;

function tmp(): string {
  return suiteTmpDir('mm-cli-');
}

describe('migration-mesh CLI', () => {
  test('synth writes one directory per cluster and the ledger beside the fleet file; --frozen then passes', () => {
    const dir = tmp();
    fs.copyFileSync(path.join(root, 'examples', 'three-sites-vlan.fleet.yaml'), path.join(dir, 'sites.fleet.yaml'));
    const r = run(['synth', path.join(dir, 'sites.fleet.yaml'), '--out', path.join(dir, 'out')]);
    expect(r.err).toBe('');
    expect(r.code).toBe(0);
    expect(fs.readdirSync(path.join(dir, 'out', 'sites')).sort()).toEqual(['.migration-mesh.manifest', 'ams-1', 'fleet.svg', 'fra-1', 'par-1']);
    const ledger = YAML.parse(fs.readFileSync(path.join(dir, 'sites.ledger.yaml'), 'utf8'));
    expect(ledger.clusters['par-1'].migrationCidr).toBe('10.80.0.128/25');
    expect(run(['synth', path.join(dir, 'sites.fleet.yaml'), '--out', path.join(dir, 'out'), '--frozen']).code).toBe(0);
  });

  test('--frozen fails when the ledger would change and writes nothing', () => {
    const dir = tmp();
    const fleet = path.join(dir, 'f.fleet.yaml');
    fs.copyFileSync(path.join(root, 'examples', 'three-sites-vlan.fleet.yaml'), fleet);
    expect(run(['synth', fleet, '--out', path.join(dir, 'out')]).code).toBe(0);
    const ledgerBefore = fs.readFileSync(path.join(dir, 'f.ledger.yaml'), 'utf8');
    fs.appendFileSync(fleet, '    - {name: lis-1, nodes: 4}\n');
    const r = run(['synth', fleet, '--out', path.join(dir, 'out2'), '--frozen']);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/frozen: the plan would change the ledger/);
    expect(r.err).toMatch(/lis-1.gateways\[0\].crossCluster: \+ 172.30.8.98/);
    expect(fs.existsSync(path.join(dir, 'out2'))).toBe(false);
    expect(fs.readFileSync(path.join(dir, 'f.ledger.yaml'), 'utf8')).toBe(ledgerBefore);
  });

  test('a bad fleet lists every problem and leaves the existing output untouched', () => {
    const dir = tmp();
    const fleet = path.join(dir, 'f.fleet.yaml');
    fs.copyFileSync(path.join(root, 'examples', 'three-sites-vlan.fleet.yaml'), fleet);
    expect(run(['synth', fleet, '--out', path.join(dir, 'out')]).code).toBe(0);
    const snapshot = fs.readFileSync(path.join(dir, 'out', 'sites', 'fra-1', 'kustomization.yaml'), 'utf8');
    fs.writeFileSync(fleet, fs.readFileSync(fleet, 'utf8').replace('vlan: 310', 'vlan: 5000').replace('supernet: 10.80.0.0/20', 'supernet: 10.80.1.0/20'));
    const r = run(['synth', fleet, '--out', path.join(dir, 'out')]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/fleet is invalid \(2 problems\); nothing was written/);
    expect(r.err).toMatch(/spec.crossClusterNetwork.attachment.vlan: must be 1-4094/);
    expect(r.err).toMatch(/spec.migrationNetwork.supernet: '10.80.1.0\/20' has host bits set\n {4}fix: use the masked network address '10.80.0.0\/20'/);
    expect(fs.readFileSync(path.join(dir, 'out', 'sites', 'fra-1', 'kustomization.yaml'), 'utf8')).toBe(snapshot);
  });

  test('validate names the YAML line and column of a syntax error', () => {
    const dir = tmp();
    const f = path.join(dir, 'broken.fleet.yaml');
    fs.writeFileSync(f, 'apiVersion: migrationmesh.dev/v1alpha1\nkind: Fleet\nmetadata: {name: x\nspec: {}\n');
    const r = run(['validate', f]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/broken.fleet.yaml: fleet is invalid[\s\S]*line \d+, column \d+: not valid YAML/);
  });

  test('unknown commands exit 2 with usage', () => {
    const r = run(['frobnicate']);
    expect(r.code).toBe(2);
    expect(r.err).toMatch(/usage:/);
  });
});

test('planning modules import nothing from cdk8s (constructs only translate a plan)', () => {
  const walkTs = (d: string): string[] => fs.readdirSync(d, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? walkTs(path.join(d, e.name)) : [path.join(d, e.name)])).filter((x) => x.endsWith('.ts'));
  const pure = walkTs(path.join(root, 'src'));
  expect(pure.length).toBeGreaterThan(30);
  for (const m of pure) {
    const text = fs.readFileSync(m, 'utf8');
    expect(`${m}: ${/from ['"](cdk8s|constructs)['"]|require\(['"]cdk8s/.test(text)}`).toBe(`${m}: false`);
  }
  const proxySrc = path.join(root, 'proxy', 'src');
  const walk = (d: string): string[] => fs.readdirSync(d, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
  for (const f of walk(proxySrc).filter((x) => x.endsWith('.ts'))) {
    expect(`${f}: ${/from ['"](cdk8s|constructs)['"]/.test(fs.readFileSync(f, 'utf8'))}`).toBe(`${f}: false`);
  }
});
