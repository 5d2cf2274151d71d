#!/usr/bin/env node
// Before a build (`build` and `build:lib`, so also npm pack's prepack and `npm test`'s pretest): the dependencies it
// compiles against must be installed. On a fresh clone, before `npm ci`, the build failed deep in npm's log
// with `sh: 1: tsc: not found` (issue #39); this says what to do in one line and exits non-zero, so npm
// stops there (nothing is packed). Checks every dependency and devDependency of package.json is present in
// node_modules (where `npm ci` puts them, the workspace's included), not their versions.
'use strict';
const fs = require('fs');
const path = require('path');

const root = path.resolve(__dirname, '..');
const pkg = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
const wanted = Object.keys({ ...pkg.dependencies, ...pkg.devDependencies });
const missing = wanted.filter((name) => !fs.existsSync(path.join(root, 'node_modules', name, 'package.json')));
if (missing.length > 0) {
  const which = missing.length === wanted.length ? 'none is installed'
    : `${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ` and ${missing.length - 3} more` : ''} ${missing.length === 1 ? 'is' : 'are'} not installed`;
  process.stderr.write(`migration-mesh: the build needs the dependencies of package.json, and ${which}: run \`npm ci\` first\n`);
  process.exit(1);
}
