/**
 * The package is importable from another project: npm pack the library (the only published package;
 * the gateway runtime in proxy/ ships as an image), install the tarball alone into a scratch project
 * (as a user would from the registry), type-check and run a consumer that
 * imports CrossClusterMigrationMesh and synthesizes.
 */
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { installedApp, npm, npmEnv, versionOf } from './support/packed';

const root = path.join(__dirname, '..');

/** The ```lang block right after the README line that contains `marker`. */
function readmeBlock(marker: string, lang: string): string {
  const readme = fs.readFileSync(path.join(root, 'README.md'), 'utf8');
  const at = readme.indexOf(marker);
  expect(at).toBeGreaterThan(0);
  const m = new RegExp(`^[^\\n]*\\n\`\`\`${lang}\\n([\\s\\S]*?)\\n\`\`\`\\n`).exec(readme.slice(at));
  expect(m).not.toBeNull();
  return `${m![1]}\n`;
}

test('npm pack -> install into a scratch project -> import and synth', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-pack-'));
  try {
    // the packed tarball (test/support/packed.ts: npm pack with prepack, once per source state), installed
    // alone with the cdk8s peers a user names
    const app = path.join(work, 'infra-repo');
    installedApp(app, [`cdk8s@${versionOf('cdk8s')}`, `constructs@${versionOf('constructs')}`]);

    // the tarball holds compiled JS and types, not sources, tests or manifests
    const pkgDir = path.join(app, 'node_modules', 'migration-mesh');
    expect(fs.existsSync(path.join(pkgDir, 'lib', 'index.js'))).toBe(true);
    expect(fs.existsSync(path.join(pkgDir, 'lib', 'index.d.ts'))).toBe(true);
    expect(fs.existsSync(path.join(pkgDir, 'test'))).toBe(false);
    expect(fs.existsSync(path.join(pkgDir, 'dist'))).toBe(false);

    // README's plain cdk8s quick start, verbatim, on README's smallest fleet, verbatim
    fs.writeFileSync(path.join(app, 'main.ts'), readmeBlock('<!-- plain cdk8s snippet:', 'ts'));
    fs.writeFileSync(path.join(app, 'prod.fleet.yaml'), readmeBlock('<!-- smallest fleet:', 'yaml'));
    fs.writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({ compilerOptions: { target: 'ES2022', module: 'commonjs', moduleResolution: 'node', strict: true, esModuleInterop: true, skipLibCheck: false, outDir: 'build', types: [] }, files: ['main.ts'] }));
    execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], { cwd: app, encoding: 'utf8', timeout: 120_000 });
    const out = execFileSync(process.execPath, ['build/main.js'], { cwd: app, encoding: 'utf8', timeout: 60_000 });
    // the addresses README's smallest-fleet paragraph states
    expect(out.trim().split('\n')).toEqual(['east-1: 192.168.50.10/24, 192.168.50.11/24', 'west-1: 192.168.50.12/24, 192.168.50.13/24']);
    const written = fs.readdirSync(path.join(app, 'out')).sort();
    expect(written).toEqual(['east-1.k8s.yaml', 'west-1.k8s.yaml']);
    expect(fs.readFileSync(path.join(app, 'out', 'east-1.k8s.yaml'), 'utf8')).toMatch(/kind: NetworkAttachmentDefinition[\s\S]*"range":"10.200.0.0\/24"/);
    expect(fs.readFileSync(path.join(app, 'out', 'west-1.k8s.yaml'), 'utf8')).toMatch(/kind: NetworkAttachmentDefinition[\s\S]*"range":"10.200.1.0\/24"/);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}, 300_000);

/**
 * What a tarball's file list holds that users do not need, or lacks that they do: only package.json, README.md,
 * CHANGELOG.md, LICENSE and lib/ (compiled JavaScript and declarations of the library's own layers and the two
 * proxy modules it compiles in); no tests, fixtures, benches, examples, sources (.ts other than .d.ts), source
 * maps or build info; and every path `exports`, `main`, `types` and `bin` name is in it.
 */
type PackageEntries = { main: string; types: string; bin: Record<string, string>; exports: Record<string, string | Record<string, string>> };
function packContentProblems(files: string[], pkg: PackageEntries): string[] {
  const problems: string[] = [];
  const top = ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE'];
  for (const t of top) if (!files.includes(t)) problems.push(`missing ${t}`);
  const proxyModules = ['lib/proxy/src/config.js', 'lib/proxy/src/config.d.ts', 'lib/proxy/src/trust/config.js', 'lib/proxy/src/trust/config.d.ts'];
  for (const f of files) {
    if (top.includes(f)) continue;
    if (!/^lib\/(index|(src|constructs|cli)\/.+)\.(js|d\.ts)$/.test(f) && !proxyModules.includes(f)) problems.push(`not for users: ${f}`);
    else if (/(^|\/)(test|tests|fixtures|testkit|bench)\//.test(f) || /\.(test|bench)\.(js|d\.ts)$/.test(f)) problems.push(`a test or bench: ${f}`);
  }
  const named = [pkg.main, pkg.types, ...Object.values(pkg.bin), ...Object.values(pkg.exports).flatMap((e) => (typeof e === 'string' ? [e] : Object.values(e)))];
  for (const n of named) if (!files.includes(n.replace(/^\.\//, ''))) problems.push(`package.json names ${n}, not in the tarball`);
  return problems;
}

/** The tracked files only, as `git clone` gives them (no node_modules, no lib/), in dir/clone. */
function freshClone(dir: string): string {
  const clone = path.join(dir, 'clone');
  const tracked = execFileSync('git', ['ls-files', '-z'], { cwd: root, encoding: 'utf8' }).split('\0').filter((f) => f && fs.existsSync(path.join(root, f)));
  for (const f of tracked) {
    fs.mkdirSync(path.dirname(path.join(clone, f)), { recursive: true });
    fs.copyFileSync(path.join(root, f), path.join(clone, f));
  }
  return clone;
}

test('npm pack of a fresh clone (no lib/ yet) builds in prepack: the tarball carries lib/ and the CLI', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-pack-fresh-'));
  try {
    // node_modules as `npm ci` would leave it
    const clone = freshClone(work);
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(clone, 'node_modules'));
    expect(fs.existsSync(path.join(clone, 'lib'))).toBe(false);
    const packed = JSON.parse(npm(['pack', '--json', '--pack-destination', work], clone).replace(/^[^[]*/, ''))[0] as { files: { path: string }[] };
    const files = packed.files.map((f) => f.path);
    expect(files).toEqual(expect.arrayContaining(['lib/index.js', 'lib/index.d.ts', 'lib/cli/cli.js', 'lib/cli/write-tree.js', 'lib/proxy/src/config.js', 'README.md', 'package.json']));
    expect(packContentProblems(files, JSON.parse(fs.readFileSync(path.join(clone, 'package.json'), 'utf8')))).toEqual([]);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}, 300_000);

test('npm pack of a fresh clone before `npm ci`: one line says to run npm ci first, and nothing is packed (issue #39)', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-pack-noci-'));
  try {
    const clone = freshClone(work);
    const r = spawnSync('npm', ['pack', '--pack-destination', work], { cwd: clone, encoding: 'utf8', timeout: 120_000, env: npmEnv });
    expect(r.status).not.toBe(0);
    const said = `${r.stdout}\n${r.stderr}`;
    // one line of ours, not tsc's "not found" deep in npm's log
    expect(said.split('\n').filter((l) => /npm ci/.test(l))).toEqual([
      'migration-mesh: the build needs the dependencies of package.json, and none is installed: run `npm ci` first',
    ]);
    expect(said).not.toMatch(/tsc: not found|command not found|Cannot find module/);
    expect(fs.readdirSync(work).filter((f) => f.endsWith('.tgz'))).toEqual([]);
    expect(fs.existsSync(path.join(clone, 'lib'))).toBe(false);
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}, 120_000);

test('the tarball check refuses what users do not need and names what package.json points at but lacks', () => {
  const pkg = { main: 'lib/index.js', types: 'lib/index.d.ts', bin: { 'migration-mesh': 'lib/cli/cli.js' }, exports: { '.': { types: './lib/index.d.ts', default: './lib/index.js' }, './cli': './lib/cli/cli.js' } };
  const good = ['package.json', 'README.md', 'CHANGELOG.md', 'LICENSE', 'lib/index.js', 'lib/index.d.ts', 'lib/cli/cli.js', 'lib/src/fleet/schema.js', 'lib/proxy/src/config.js'];
  expect(packContentProblems(good, pkg)).toEqual([]);
  expect(packContentProblems([...good.filter((f) => f !== 'LICENSE' && f !== 'lib/cli/cli.js'), 'lib/src/fleet/schema.ts', 'lib/src/fleet/schema.js.map', 'test/fixtures/crds/x.yaml',
    'lib/test/cli.test.js', 'lib/bench/synth.js', 'lib/proxy/src/test/x.test.js', 'lib/src/testkit/fake.js', 'bench/results/synth.json', 'lib/.tsbuildinfo'], pkg)).toEqual([
    'missing LICENSE',
    'not for users: lib/src/fleet/schema.ts', 'not for users: lib/src/fleet/schema.js.map', 'not for users: test/fixtures/crds/x.yaml', 'not for users: lib/test/cli.test.js',
    'not for users: lib/bench/synth.js', 'not for users: lib/proxy/src/test/x.test.js', 'a test or bench: lib/src/testkit/fake.js', 'not for users: bench/results/synth.json',
    'not for users: lib/.tsbuildinfo',
    'package.json names lib/cli/cli.js, not in the tarball', 'package.json names ./lib/cli/cli.js, not in the tarball',
  ]);
});
