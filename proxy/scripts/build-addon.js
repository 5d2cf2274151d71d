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

// The MMPROXY_TLS_TEST_* switches (native/tlshandshake.c, tlsrelay.c) exist only in a test build: every
// build but the shipped one (MM_PROXY_SHIPPED=1, set by proxy/Dockerfile) passes mm_test_hooks=1 to gyp.
const args = [...process.argv.slice(2), ...(process.env.MM_PROXY_SHIPPED === '1' ? [] : ['--mm_test_hooks=1'])];
const missing = missingToolchain();
if (missing.length) {
  console.error(`[build-addon] cannot build the gateway's native addon: missing ${missing.join(', ')}; ${INSTALL}`);
  process.exit(1);
}
if (args.includes('--check')) {
  console.log('[build-addon] C toolchain found (C compiler, C++ driver, make, python3)');
  process.exit(0);
}
/**
 * `rebuild` (clean, configure, compile everything: ~15 s of a core) only when the last configuration is not
 * this one (another Node, other arguments, binding.gyp changed since, or MM_ADDON_REBUILD=1); otherwise
 * `build`, i.e. make, whose dependency files recompile exactly the changed sources and headers. `npm test`
 * builds again after CI's build, so this makes the second build nearly free.
 */
function verb(stampFile, stamp) {
  if (process.env.MM_ADDON_REBUILD === '1') return 'rebuild';
  try {
    if (fs.readFileSync(stampFile, 'utf8') !== stamp) return 'rebuild';
    const made = fs.statSync(path.join('build', 'Makefile')).mtimeMs;
    return fs.statSync('binding.gyp').mtimeMs < made ? 'build' : 'rebuild';
  } catch {
    return 'rebuild';
  }
}

const [cmd, ...pre] = nodeGyp();
const stampFile = path.join('build', '.mm-configured');
const stamp = JSON.stringify({ node: process.version, execPath: process.execPath, args: [...nodedirArgs(args), ...args], cc: process.env.CC || '', cxx: process.env.CXX || '' });
const how = verb(stampFile, stamp);
const r = spawnSync(cmd, [...pre, how, '--loglevel=error', ...nodedirArgs(args), ...args], { stdio: 'inherit' });
if (r.status !== 0) {
  try { fs.rmSync(stampFile, { force: true }); } catch { /* the next build rebuilds anyway */ }
  console.error(`[build-addon] node-gyp ${how} failed (${r.error ? r.error.message : `exit ${r.status}`}); its messages are above`);
  process.exit(r.status || 1);
}
fs.writeFileSync(stampFile, stamp);
