/**
 * One writer for both entry points: the library snippets, taken verbatim from README.md and docs/library.md, compiled
 * against the built package and run, writes byte for byte the tree (and ledger) the CLI writes for the
 * same fleet; a `customize` hook's additions go through the same order, GitOps annotations, delivery
 * forms and manifest.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as YAML from 'yaml';
import * as kplus from 'cdk8s-plus-28';
import { main } from '../cli/cli';
import { synthesizeFleetToDirectory } from '../cli/fleet-directory';
import { MANIFEST_FILE } from '../cli/write-tree';
import { movesPathFor } from '../src/forklift/moves';
import { ledgerPathFor } from '../src/fleet/load';

const root = path.join(__dirname, '..');

/** The ```ts block right after the line of `file` (README.md, docs/library.md) that contains `marker`. */
function docBlock(file: string, marker: string): string {
  const readme = fs.readFileSync(path.join(root, file), 'utf8');
  const at = readme.indexOf(marker);
  expect(at).toBeGreaterThan(0);
  const m = /^[^\n]*\n```ts\n([\s\S]*?)\n```\n/.exec(readme.slice(at));
  expect(m).not.toBeNull();
  return `${m![1]}\n`;
}

/** Every file under dir with its bytes, sorted by path. */
function tree(dir: string): [string, string][] {
  const out: [string, string][] = [];
  const walk = (d: string, rel: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path.join(d, e.name), r);
      else out.push([r, fs.readFileSync(path.join(d, e.name), 'latin1')]);
    }
  };
  walk(dir, '');
  return out.sort(([a], [b]) => (a < b ? -1 : 1));
}

/** A project directory holding an example fleet as prod.fleet.yaml (and its moves file), no ledger yet. */
function project(work: string, name: string, example: string): string {
  const dir = path.join(work, name);
  fs.mkdirSync(dir);
  const src = path.join(root, 'examples', example);
  fs.copyFileSync(src, path.join(dir, 'prod.fleet.yaml'));
  if (fs.existsSync(movesPathFor(src))) fs.copyFileSync(movesPathFor(src), movesPathFor(path.join(dir, 'prod.fleet.yaml')));
  return dir;
}

function cli(dir: string): void {
  let err = '';
  const code = main(['synth', path.join(dir, 'prod.fleet.yaml'), '--out', path.join(dir, 'dist')], () => undefined, (s) => { err += s; });
  expect(err).toBe('');
  expect(code).toBe(0);
}

// kustomize-patch delivery (the Component), Flux + Argo CD wiring, Forklift moves from a moves file
const EXAMPLES = ['three-sites-vlan.fleet.yaml', 'gitops.fleet.yaml', 'metro-moves.fleet.yaml'];

test('the library snippets of README.md and docs/library.md compile against the package; the plain one writes exactly the CLI\'s tree and ledger', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-w12a-readme-'));
  try {
    const app = path.join(work, 'app');
    fs.mkdirSync(path.join(app, 'node_modules'), { recursive: true });
    // the package as a user's project resolves it (package.json main/types -> lib/), and cdk8s-plus for the hook
    fs.symlinkSync(root, path.join(app, 'node_modules', 'migration-mesh'));
    fs.symlinkSync(path.join(root, 'node_modules', 'cdk8s-plus-28'), path.join(app, 'node_modules', 'cdk8s-plus-28'));
    fs.writeFileSync(path.join(app, 'plain.ts'), docBlock('README.md', '<!-- library snippet:'));
    fs.writeFileSync(path.join(app, 'custom.ts'), docBlock('docs/library.md', '<!-- customize snippet:'));
    fs.writeFileSync(path.join(app, 'tsconfig.json'), JSON.stringify({
      compilerOptions: { target: 'ES2022', module: 'commonjs', moduleResolution: 'node', strict: true, esModuleInterop: true, skipLibCheck: true, outDir: 'build', types: [] },
      files: ['plain.ts', 'custom.ts'],
    }));
    execFileSync(process.execPath, [path.join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', '.'], { cwd: app, encoding: 'utf8', timeout: 120_000 });
    for (const example of EXAMPLES) {
      const byLib = project(work, `lib-${example}`, example);
      const byCli = project(work, `cli-${example}`, example);
      execFileSync(process.execPath, [path.join(app, 'build', 'plain.js')], { cwd: byLib, encoding: 'utf8', timeout: 60_000 });
      cli(byCli);
      const [lib, ours] = [tree(byLib), tree(byCli)];
      expect(lib.map(([f]) => f)).toEqual(ours.map(([f]) => f));
      expect(lib).toEqual(ours);
      // the ledger was written back, and the tree has everything the GitOps layout needs
      expect(lib.map(([f]) => f)).toContain('prod.ledger.yaml');
      const files = lib.map(([f]) => f);
      expect(files.filter((f) => f.endsWith(MANIFEST_FILE) || f.endsWith('/fleet.svg'))).toHaveLength(2);
      if (example.startsWith('three')) expect(files).toContain('dist/sites/ams-1/components/kubevirt/kubevirt-patch.yaml');
      if (example.startsWith('gitops')) expect(files.some((f) => f.startsWith('dist/gitops/_gitops/argocd/'))).toBe(true);
      if (example.startsWith('metro')) expect(files.some((f) => f.startsWith('dist/metro/_forklift/'))).toBe(true);
    }
    // the customize snippet runs and its toleration and sidecar land in every gateway Deployment
    const custom = project(work, 'custom', 'three-sites-vlan.fleet.yaml');
    execFileSync(process.execPath, [path.join(app, 'build', 'custom.js')], { cwd: custom, encoding: 'utf8', timeout: 60_000 });
    const deps = tree(path.join(custom, 'dist')).filter(([f]) => /\/Deployment\.migration-mesh\.migration-mesh-gateway-\d\.yaml$/.test(f));
    expect(deps).toHaveLength(6);
    for (const [f, text] of deps) {
      const d = YAML.parse(text);
      expect(d.metadata.labels['example.org/owner']).toBe('netops');
      // the mesh's own containers as the CLI writes them (gateway, failover, trust...), then the sidecar
      const own = YAML.parse(fs.readFileSync(path.join(root, 'dist', f), 'utf8')).spec.template.spec.containers.map((c: any) => c.name);
      expect(own).toContain('gateway');
      expect(d.spec.template.spec.containers.map((c: any) => c.name)).toEqual([...own, 'tcpdump']);
      expect(d.spec.template.spec.tolerations).toEqual([{ key: 'migration-only', operator: 'Exists', effect: 'NoSchedule' }]);
    }
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}, 300_000);

describe('a customize hook goes through the same writer as the CLI', () => {
  test.each(['gitops.fleet.yaml', 'three-sites-vlan.fleet.yaml'])('%s: the sidecar is in every gateway Deployment; order, annotations and every other file are the CLI\'s', (example) => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-w12a-customize-'));
    try {
      const byCli = project(work, 'cli', example);
      cli(byCli);
      const byLib = project(work, 'lib', example);
      const seen: string[] = [];
      const r = synthesizeFleetToDirectory({
        fleetFile: path.join(byLib, 'prod.fleet.yaml'),
        outdir: path.join(byLib, 'dist'),
        customize: (mesh) => {
          for (const gw of mesh.gateways) {
            seen.push(gw.node.path);
            gw.addSidecar({ name: 'tcpdump', image: 'example.org/tcpdump:4.99', imagePullPolicy: kplus.ImagePullPolicy.IF_NOT_PRESENT, securityContext: { user: 1000, group: 1000 } });
          }
        },
      });
      expect(seen).toHaveLength(r.plan.clusters.filter((c) => c.datapath === 'gateway').length);
      const [ours, theirs] = [new Map(tree(byCli)), new Map(tree(byLib))];
      expect([...theirs.keys()]).toEqual([...ours.keys()]);
      const differ = [...ours.keys()].filter((f) => ours.get(f) !== theirs.get(f));
      const gatewayDeps = [...ours.keys()].filter((f) => /\/Deployment\.migration-mesh\.migration-mesh-gateway-\d\.yaml$/.test(f));
      expect(gatewayDeps.length).toBeGreaterThan(0);
      // only the gateway Deployments changed (and the manifest's hashes of them)
      expect(differ.sort()).toEqual([...gatewayDeps, `dist/${r.plan.fleet}/${MANIFEST_FILE}`].sort());
      for (const f of gatewayDeps) {
        const [a, b] = [YAML.parse(ours.get(f)!), YAML.parse(theirs.get(f)!)];
        expect(b.metadata).toEqual(a.metadata); // same GitOps annotations (sync wave) and labels
        expect(b.spec.template.spec.containers.map((c: any) => c.name)).toEqual([...a.spec.template.spec.containers.map((c: any) => c.name), 'tcpdump']);
        b.spec.template.spec.containers.pop();
        expect(b).toEqual(a);
      }
      // the manifest lists the customized bytes
      const manifest = theirs.get(`dist/${r.plan.fleet}/${MANIFEST_FILE}`)!;
      for (const f of gatewayDeps) {
        const hash = require('crypto').createHash('sha256').update(theirs.get(f)!).digest('hex');
        expect(manifest).toContain(`${hash}  ${f.slice(`dist/${r.plan.fleet}/`.length)}`);
      }
      expect(fs.readFileSync(ledgerPathFor(path.join(byLib, 'prod.fleet.yaml')), 'utf8')).toBe(fs.readFileSync(ledgerPathFor(path.join(byCli, 'prod.fleet.yaml')), 'utf8'));
    } finally {
      fs.rmSync(work, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('an async customize hook is refused, never half applied', () => {
  test('a type error at compile time, and at run time customize-async before anything is written, without an unhandled rejection', async () => {
    const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-async-customize-'));
    const rejections: unknown[] = [];
    const onRejection = (e: unknown): void => { rejections.push(e); };
    process.on('unhandledRejection', onRejection);
    try {
      const dir = project(work, 'lib', 'three-sites-vlan.fleet.yaml');
      let added = 0;
      let err: unknown;
      try {
        synthesizeFleetToDirectory({
          fleetFile: path.join(dir, 'prod.fleet.yaml'),
          outdir: path.join(dir, 'dist'),
          // @ts-expect-error an async hook does not type-check: synthesis would not wait for it
          customize: async (mesh) => {
            mesh.gateways[0].addPodLabel('first', 'yes');
            added++;
            await new Promise((r) => setTimeout(r, 10));
            mesh.gateways[1].addPodLabel('second', 'yes');
            throw new Error('the hook fails after its await');
          },
        });
      } catch (e) { err = e; }
      expect((err as { problems: { code: string; path: string }[] }).problems).toEqual([expect.objectContaining({ code: 'customize-async', path: 'customize' })]);
      expect((err as Error).message).toMatch(/make the hook synchronous/);
      expect(added).toBe(1);
      expect(fs.existsSync(path.join(dir, 'dist'))).toBe(false);
      expect(fs.existsSync(ledgerPathFor(path.join(dir, 'prod.fleet.yaml')))).toBe(false);
      await new Promise((r) => setTimeout(r, 50));
      expect(rejections).toEqual([]);
    } finally {
      process.removeListener('unhandledRejection', onRejection);
      fs.rmSync(work, { recursive: true, force: true });
    }
  }, 60_000);
});
