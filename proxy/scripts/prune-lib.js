#!/usr/bin/env node
// Before an incremental `tsc`: removes compiled files whose source is gone, so a deleted test or module
// never runs or ships from a stale lib/ (the build used to delete lib/ whole and compile everything, about
// 10 s of a core per build, twice per CI run). And if any source's output is missing (someone deleted a
// file from lib/), drops tsc's build-info so the next compile emits everything: incremental tsc trusts its
// build-info and would not re-emit it. A source newer than the build-info is new or changed since the last
// compile, so its missing output is no sign of a deletion (tsc compiles it anyway).
// Usage: node prune-lib.js <outDir> <rootDir> [<regex of rootDir-relative paths that tsc does not compile>]
// (paths relative to the cwd; directories matching the regex are not even entered).
'use strict';
const fs = require('fs');
const path = require('path');

const [outDir, rootDir, skipRe] = process.argv.slice(2);
if (!outDir || !rootDir) { console.error('usage: prune-lib.js <outDir> <rootDir> [skip-regex]'); process.exit(2); }
const skip = skipRe ? new RegExp(skipRe) : undefined;
if (!fs.existsSync(outDir)) process.exit(0); // nothing compiled yet: tsc compiles everything anyway
const OUT = /\.(d\.ts|js\.map|js)$/;

/** Files under dir, relative to it, not entering paths that match skip (tested with a trailing '/' for directories). */
function walk(dir, rel = '', into = []) {
  if (!fs.existsSync(path.join(dir, rel))) return into;
  for (const e of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) { if (!(skip && skip.test(`${r}/`)) && !e.name.startsWith('.')) walk(dir, r, into); }
    else if (e.isFile()) into.push(r);
  }
  return into;
}

let pruned = 0;
for (const f of walk(outDir).filter((x) => OUT.test(x))) {
  const base = f.replace(OUT, '');
  if (!fs.existsSync(path.join(rootDir, `${base}.ts`)) && !fs.existsSync(path.join(rootDir, `${base}.tsx`))) {
    fs.rmSync(path.join(outDir, f));
    pruned++;
  }
}
const sources = walk(rootDir).filter((f) => /\.tsx?$/.test(f) && !f.endsWith('.d.ts') && !(skip && skip.test(f)));
// a source newer than the build-info is new or changed since the last compile: tsc compiles it anyway
const info = path.join(outDir, '.tsbuildinfo');
const built = fs.existsSync(info) ? fs.statSync(info).mtimeMs : 0;
const missing = sources.filter((f) => fs.statSync(path.join(rootDir, f)).mtimeMs < built
  && !fs.existsSync(path.join(outDir, f.replace(/\.tsx?$/, '.js'))));
if (missing.length) fs.rmSync(info, { force: true });
if (pruned || missing.length) {
  console.error(`[prune-lib] ${outDir}: ${pruned} stale file(s) removed; ${missing.length} source(s) without output${missing.length ? ` (${missing[0]}...): full compile` : ''}`);
}
