#!/usr/bin/env node
// Builds the gateway's native addon (binding.gyp, native/*.c) with node-gyp, in the current directory
// (npm runs package scripts in proxy/). node-gyp needs a C toolchain: a C compiler ($CC, else cc), a C++
// driver to link ($CXX, else g++: the Makefile node-gyp generates links with it), make ($MAKE, else make)
// and Python 3.6+ (npm_config_python, $PYTHON, python3 or python). Nothing in npm installs them, and
// node-gyp's own report of a missing one is a wall of text: so they are checked first, and what is missing
// is named on one line with the command that installs it. `--check`: check only, build nothing.
// Other arguments go to `node-gyp rebuild` (run with --loglevel=error: its errors show, its chatter does not).
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const INSTALL = 'install a C toolchain: apt-get install build-essential python3 (Debian, Ubuntu); '
  + 'dnf install gcc gcc-c++ make python3 (Fedora, RHEL); apk add build-base python3 (Alpine)';

/** The path of an executable named like a shell would find it (a name with a '/' is taken as is). */
function which(cmd) {
  const isExe = (p) => { try { fs.accessSync(p, fs.constants.X_OK); return fs.statSync(p).isFile(); } catch { return false; } };
  if (cmd.includes('/')) return isExe(cmd) ? cmd : undefined;
  for (const dir of (process.env.PATH || '').split(path.delimiter)) if (dir && isExe(path.join(dir, cmd))) return path.join(dir, cmd);
  return undefined;
}

/** `$CC` may carry a wrapper or flags (`ccache gcc`): the words, the first one the program. */
const words = (s) => s.trim().split(/\s+/).filter(Boolean);

/** Can the C compiler compile a file that includes the libc headers the addon uses? */
function compilerProblem() {
  const [cc, ...flags] = words(process.env.CC || 'cc');
  if (!which(cc)) return `${cc} (C compiler)`;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-addon-check-'));
  try {
    const src = '#include <stdio.h>\n#include <sys/socket.h>\nint mm_check(void) { return 0; }\n';
    const r = spawnSync(which(cc), [...flags, '-x', 'c', '-c', '-o', path.join(dir, 'check.o'), '-'], { input: src, encoding: 'utf8', timeout: 60000 });
    if (r.status === 0) return undefined;
    const first = `${r.stderr || ''}`.split('\n').find((l) => /error/i.test(l)) || (r.error ? r.error.message : `exit ${r.status}`);
    return `a working C compiler (${cc} cannot compile a file that includes <stdio.h>: ${first.trim()})`;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

function pythonProblem() {
  const candidates = [process.env.npm_config_python, process.env.PYTHON, 'python3', 'python'].filter(Boolean);
  for (const py of candidates) {
    const exe = which(py);
    if (!exe) continue;
    const r = spawnSync(exe, ['-c', 'import sys; sys.exit(0 if sys.version_info >= (3, 6) else 1)'], { stdio: 'ignore', timeout: 30000 });
    if (r.status === 0) return undefined;
  }
  return 'python3 (3.6 or later, for node-gyp)';
}

/** What node-gyp needs and does not find, each named by what to install. */
function missingToolchain() {
  const cxx = words(process.env.CXX || 'g++')[0];
  const make = process.env.MAKE || 'make';
  return [compilerProblem(), which(cxx) ? undefined : `${cxx} (C++ driver, links the addon)`, which(make) ? undefined : make, pythonProblem()]
    .filter(Boolean);
}

/** node-gyp: the project's own (a devDependency), else the one npm carries, else whatever is on PATH. */
function nodeGyp() {
  try {
    return [process.execPath, require.resolve('node-gyp/bin/node-gyp.js', { paths: [process.cwd(), __dirname] })];
  } catch {
    const bundled = process.env.npm_config_node_gyp;
    return bundled && fs.existsSync(bundled) ? [process.execPath, bundled] : ['node-gyp'];
  }
}

/**
 * Build against the headers of the running Node when it has them (distribution packages and the official
 * tarballs and images do: <prefix>/include/node), so the build needs no download of them; a nodedir
 * given to npm or on the command line wins.
 */
function nodedirArgs(args) {
  if (process.env.npm_config_nodedir || args.some((a) => a.startsWith('--nodedir'))) return [];
  const prefix = path.resolve(path.dirname(process.execPath), '..');
  const headers = path.join(prefix, 'include', 'node');
  return fs.existsSync(path.join(headers, 'node_api.h')) && fs.existsSync(path.join(headers, 'common.gypi')) ? [`--nodedir=${prefix}`] : [];
}

const args = process.argv.slice(2);
const missing = missingToolchain();
if (missing.length) {
  console.error(`[build-addon] cannot build the gateway's native addon: missing ${missing.join(', ')}; ${INSTALL}`);
  process.exit(1);
}
if (args.includes('--check')) {
  console.log('[build-addon] C toolchain found (C compiler, C++ driver, make, python3)');
  process.exit(0);
}
const [cmd, ...pre] = nodeGyp();
const r = spawnSync(cmd, [...pre, 'rebuild', '--loglevel=error', ...nodedirArgs(args), ...args], { stdio: 'inherit' });
if (r.status !== 0) {
  console.error(`[build-addon] node-gyp rebuild failed (${r.error ? r.error.message : `exit ${r.status}`}); its messages are above`);
  process.exit(r.status || 1);
}
