#!/usr/bin/env node
// Image build step (proxy/Dockerfile, "files" stage): remove from the production node_modules what the
// Kubernetes client (@kubernetes/client-node, used only by the trust container) ships but the gateway's
// code never loads. Determined by tracing the static module graph from the CLI entry point:
// `import`/`export ... from` and `require('literal')`, resolved as Node resolves them.
//   - inside @kubernetes/client-node/dist: every .js file the graph does not reach. The package is pure
//     ESM with static imports only (no `import()`, no `require`), so its graph is exact;
//   - packages of the client's own dependency tree that the graph never reaches at all (e.g. the bare-*
//     packages tar-fs needs only on the Bare runtime), whole.
// Nothing else is touched: other packages may load files by computed paths (pino's worker transports).
// The image test runs the trust container from the built image (test/gateway-image.image.test.ts).
//   node prune-node-modules.js APP_DIR ENTRY... [--dry-run]
'use strict';
const fs = require('fs');
const path = require('path');
const { createRequire, builtinModules } = require('module');

const args = process.argv.slice(2);
const dry = args.includes('--dry-run');
const [appDir, ...entries] = args.filter((a) => a !== '--dry-run').map((a) => path.resolve(a));
const nm = path.join(appDir, 'node_modules');
const CLIENT = '@kubernetes/client-node';
const builtin = new Set(builtinModules);

const SPEC_RE = /(?:^|[\s;}])(?:import|export)\s+(?:[^'"`;]*?\sfrom\s*)?['"]([^'"]+)['"]|\brequire\(\s*['"]([^'"]+)['"]\s*\)/g;
const pkgOf = (spec) => (spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]);

/** The directory of package `name` as Node finds it from `fromDir` (node_modules lookup upwards). */
function packageDir(name, fromDir) {
  for (let d = fromDir; ; d = path.dirname(d)) {
    const c = path.join(d, 'node_modules', name);
    if (fs.existsSync(path.join(c, 'package.json'))) return c;
    if (d === path.dirname(d)) return undefined;
  }
}

/** A package's entry for `import` (conditions node, import, default), for dual packages whose require entry differs. */
function importEntry(dir, spec, name) {
  const p = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  const sub = `.${spec.slice(name.length)}` || '.';
  const pick = (e) => {
    if (typeof e === 'string') return e;
    if (Array.isArray(e)) return e.map(pick).find(Boolean);
    if (e && typeof e === 'object') for (const k of ['node', 'import', 'default']) if (k in e) { const r = pick(e[k]); if (r) return r; }
    return undefined;
  };
  let target;
  if (p.exports !== undefined) {
    const ex = typeof p.exports === 'string' || Array.isArray(p.exports) || !Object.keys(p.exports).some((k) => k.startsWith('.')) ? { '.': p.exports } : p.exports;
    target = pick(ex[sub === '.' ? '.' : sub]);
  } else if (sub === '.') target = p.module ?? p.main ?? 'index.js';
  const f = target && path.join(dir, target);
  return f && fs.existsSync(f) && fs.statSync(f).isFile() ? f : undefined;
}

/** Files reached from the entries (both require and import resolution), and the package directories bare specifiers name. */
function trace() {
  const files = new Set();
  const dirs = new Set();
  const stack = [...entries];
  while (stack.length) {
    const f = stack.pop();
    if (files.has(f)) continue;
    files.add(f);
    if (!/\.(c|m)?js$/.test(f)) continue;
    const src = fs.readFileSync(f, 'utf8');
    for (const m of src.matchAll(SPEC_RE)) {
      const spec = m[1] ?? m[2];
      if (spec.startsWith('node:') || builtin.has(spec)) continue;
      if (!spec.startsWith('.') && !spec.startsWith('/')) {
        const dir = packageDir(pkgOf(spec), path.dirname(f));
        if (!dir) continue; // an optional dependency that is not installed
        dirs.add(dir);
        const esm = importEntry(dir, spec, pkgOf(spec));
        if (esm) stack.push(esm);
      }
      try {
        const r = createRequire(f).resolve(spec);
        if (path.isAbsolute(r)) stack.push(r);
      } catch { /* ESM-only or optional: the import entry above is followed */ }
    }
  }
  return { files, dirs };
}

/** The client's dependency tree: package directories, as Node resolves each dependency from its dependent. */
function clientTree() {
  const root = packageDir(CLIENT, appDir);
  const seen = new Set();
  const stack = [root];
  while (stack.length) {
    const dir = stack.pop();
    if (!dir || seen.has(dir)) continue;
    seen.add(dir);
    const p = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
    for (const n of [...Object.keys(p.dependencies ?? {}), ...Object.keys(p.optionalDependencies ?? {})]) stack.push(packageDir(n, dir));
  }
  return seen;
}

function du(p) {
  const st = fs.lstatSync(p);
  return st.isDirectory() ? fs.readdirSync(p).reduce((n, e) => n + du(path.join(p, e)), 0) : st.size;
}

const { files, dirs } = trace();
const clientDir = packageDir(CLIENT, appDir);
if (!clientDir || !dirs.has(clientDir)) throw new Error(`${CLIENT} is not reached from ${entries.join(', ')}: nothing to prune against`);
let removed = 0;
const remove = (p) => { removed += du(p); if (!dry) fs.rmSync(p, { recursive: true, force: true }); };
// 1. the client's own unreached modules
const walk = (d) => fs.readdirSync(d, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
const dist = path.join(clientDir, 'dist');
const js = walk(dist).filter((f) => f.endsWith('.js'));
for (const f of js) if (!files.has(f)) remove(f);
// 2. packages of the client's tree that nothing reaches
const unreached = [...clientTree()].filter((d) => d !== clientDir && !dirs.has(d)).sort();
for (const d of unreached) remove(d);
const names = unreached.map((d) => path.relative(nm, d)).join(', ');
console.log(`prune-node-modules: ${CLIENT} keeps ${js.filter((f) => files.has(f)).length} of ${js.length} modules of dist/; removed ${(removed / 1e6).toFixed(1)} MB` +
  ` (unreached modules, and packages ${names || 'none'})${dry ? ' [dry run]' : ''}`);
