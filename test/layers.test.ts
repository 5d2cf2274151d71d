/**
 * The layers are one way and the folders show them:
 *
 *   src/ (pure planning)  <-  constructs/ (cdk8s)  <-  cli/ (CLI and writer)  <-  index.ts (package entry)
 *
 * src/ and constructs/ share their concern folders (fleet, addressing, kubevirt, gateway, ...).
 *
 * Every import of every file is read (TypeScript's own pre-processor: static imports, re-exports,
 * `require` and `import()`), resolved to a folder, and checked against what that layer may use.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';

const root = path.join(__dirname, '..');

type Layer = 'src' | 'constructs' | 'cli' | 'entry';

/** Packages that bring cdk8s in: the planning layer must not load them. */
const CDK8S_PACKAGES = /^(cdk8s|cdk8s-plus-\d+|constructs)(\/|$)/;

/** Which layers each layer may import (its own included). */
const ALLOWED: Record<Layer, readonly Layer[]> = {
  src: ['src'],
  constructs: ['src', 'constructs'],
  cli: ['src', 'constructs', 'cli'],
  entry: ['src', 'constructs', 'cli'],
};

/**
 * The gateway runtime's config schema (pure zod, shared so the ConfigMap and the runtime never disagree):
 * compiled into the library as planning code, entered through one door only.
 */
const RUNTIME_CONFIG = { door: 'src/gateway/runtime-config', modules: ['proxy/src/config', 'proxy/src/trust/config'] };
const relNoExt = (file: string): string => path.relative(root, file).split(path.sep).join('/').replace(/\.(ts|js)$/, '');

function layerOf(file: string): Layer | undefined {
  if (RUNTIME_CONFIG.modules.includes(relNoExt(file))) return 'src';
  const rel = path.relative(root, file).split(path.sep);
  if (rel.length === 1 && rel[0].replace(/\.(ts|js)$/, '') === 'index') return 'entry';
  if (rel[0] === 'src' || rel[0] === 'constructs' || rel[0] === 'cli') return rel[0];
  return undefined;
}

/** Every module specifier a source text imports, re-exports or requires. */
function importsOf(text: string): string[] {
  const info = ts.preProcessFile(text, true, true);
  return info.importedFiles.map((f) => f.fileName);
}

/** The layering violations of one file (empty when it keeps to its layer). */
function violations(file: string, text: string): string[] {
  const layer = layerOf(file);
  if (!layer) return [];
  const out: string[] = [];
  for (const spec of importsOf(text)) {
    if (!spec.startsWith('.')) {
      if (layer === 'src' && CDK8S_PACKAGES.test(spec)) out.push(`${path.relative(root, file)}: planning imports '${spec}'`);
      continue;
    }
    const resolved = path.resolve(path.dirname(file), spec);
    const into = RUNTIME_CONFIG.modules.includes(relNoExt(resolved));
    const from = relNoExt(file);
    if (into && from !== RUNTIME_CONFIG.door && !RUNTIME_CONFIG.modules.includes(from)) {
      out.push(`${path.relative(root, file)}: imports the runtime's config ('${spec}') other than through ${RUNTIME_CONFIG.door}.ts`);
      continue;
    }
    const target = layerOf(resolved);
    if (!target) out.push(`${path.relative(root, file)}: imports '${spec}', outside the layer folders`);
    else if (!ALLOWED[layer].includes(target)) out.push(`${path.relative(root, file)}: ${layer} imports ${target} ('${spec}')`);
  }
  return out;
}

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) out.push(...sourceFiles(p));
    else if (e.name.endsWith('.ts') && !e.name.endsWith('.d.ts')) out.push(p);
  }
  return out;
}

const allFiles = [...['src', 'constructs', 'cli'].flatMap((d) => sourceFiles(path.join(root, d))), path.join(root, 'index.ts'),
  ...RUNTIME_CONFIG.modules.map((m) => path.join(root, `${m}.ts`))];

/** The files a file imports (relative imports only, resolved to existing .ts files; types included). */
function edgesOf(file: string): string[] {
  return importsOf(fs.readFileSync(file, 'utf8')).filter((s) => s.startsWith('.'))
    .map((s) => path.resolve(path.dirname(file), s))
    .flatMap((p) => [`${p}.ts`, path.join(p, 'index.ts')].filter((c) => fs.existsSync(c)).slice(0, 1));
}

/** Every import cycle between files, each as the list of files around it (depth-first, Tarjan-free: small graph). */
function cyclesOf(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (n: string): void => {
    state.set(n, 'open'); stack.push(n);
    for (const m of graph.get(n) ?? []) {
      if (state.get(m) === 'open') cycles.push([...stack.slice(stack.indexOf(m)), m].map((x) => path.relative(root, x)));
      else if (!state.has(m)) visit(m);
    }
    stack.pop(); state.set(n, 'done');
  };
  for (const n of [...graph.keys()].sort()) if (!state.has(n)) visit(n);
  return cycles;
}

describe('layers', () => {
  test('the cycle finder finds a circle of type-only imports (it can fail)', () => {
    const g = new Map([['a', ['b']], ['b', ['c']], ['c', ['a']], ['d', ['a']]].map(([k, v]) => [path.join(root, k as string), (v as string[]).map((x) => path.join(root, x))]));
    expect(cyclesOf(g)).toEqual([['a', 'b', 'c', 'a']]);
    expect(cyclesOf(new Map([[path.join(root, 'x'), [path.join(root, 'y')]]]))).toEqual([]);
  });

  test('no two files import each other, directly or in a circle (types included)', () => {
    const graph = new Map(allFiles.map((f) => [f, edgesOf(f)]));
    expect(cyclesOf(graph)).toEqual([]);
  });

  test('the checker sees each kind of import and each forbidden direction (it can fail)', () => {
    const f = (layer: string) => path.join(root, layer, 'x.ts');
    expect(violations(f('src'), "import { App } from 'cdk8s';")).toHaveLength(1);
    expect(violations(f('src'), "import { Construct } from 'constructs';")).toHaveLength(1);
    expect(violations(f('src'), "import { Deployment } from 'cdk8s-plus-28';")).toHaveLength(1);
    expect(violations(f('src'), "export * from '../constructs/fleet/mesh';")).toHaveLength(1);
    expect(violations(f('src'), "const m = require('../cli/cli');")).toHaveLength(1);
    expect(violations(f('src'), "const m = import('../constructs/fleet/mesh');")).toHaveLength(1);
    expect(violations(f('constructs/fleet'), "import { writeFiles } from '../../cli/synthesize-fleet';")).toHaveLength(1);
    expect(violations(f('constructs/fleet'), "import * as api from '../..';")).toHaveLength(1);
    expect(violations(f('cli'), "import * as api from '../index';")).toHaveLength(1);
    expect(violations(f('src'), "import { parseProxyConfig } from '../proxy/src/config';")).toHaveLength(1); // not the door
    expect(violations(f('src'), "import { startGateway } from '../proxy/src/gateway';")).toHaveLength(1);
    expect(violations(path.join(root, 'proxy', 'src', 'config.ts'), "import { App } from 'cdk8s';")).toHaveLength(1);
    expect(violations(path.join(root, 'src', 'gateway', 'runtime-config.ts'), "export { parseProxyConfig } from '../proxy/src/config';")).toEqual([]);
    // the allowed directions
    expect(violations(f('src'), "import { z } from 'zod';\nimport { parseAddr } from './ip';")).toEqual([]);
    expect(violations(f('constructs/gateway'), "import { Chart } from 'cdk8s';\nimport { ClusterPlan } from '../../src/addressing/planner';")).toEqual([]);
    expect(violations(f('cli'), "import { clusterChart } from '../constructs/fleet/mesh';\nimport { Ledger } from '../src/addressing/ledger';")).toEqual([]);
  });

  test('every file in src/, constructs/ and cli/ keeps to its layer', () => {
    expect(allFiles.length).toBeGreaterThan(30);
    const found = allFiles.flatMap((file) => violations(file, fs.readFileSync(file, 'utf8')));
    expect(found).toEqual([]);
  });

  test('constructs/ is grouped by the concerns of src/: each construct sits in a folder src/ has too', () => {
    const concerns = fs.readdirSync(path.join(root, 'src'), { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name);
    const misplaced = sourceFiles(path.join(root, 'constructs')).map((file) => path.relative(path.join(root, 'constructs'), file).split(path.sep))
      .filter((rel) => rel.length !== 2 || !concerns.includes(rel[0])).map((rel) => rel.join('/'));
    expect(misplaced).toEqual([]);
  });

  test('the package entry re-exports every layer (and no layer may import it: see above)', () => {
    const entryImports = importsOf(fs.readFileSync(path.join(root, 'index.ts'), 'utf8'));
    for (const layer of ['./src/', './constructs/', './cli/']) expect(entryImports.some((s) => s.startsWith(layer))).toBe(true);
  });
});
