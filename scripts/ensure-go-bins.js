#!/usr/bin/env node
// Builds the real components the real-API test lane runs (etcd, kube-apiserver, kube-controller-manager,
// kube-scheduler, kubectl, and the project's own Go harnesses) from the Go module proxy, through the wrapper
// modules under real/ (only their go.mod and go.sum are committed). Binaries go to a cache outside the
// repository, one directory per wrapper keyed by the hash of its go.mod, go.sum and Go sources, so a
// second run (and CI on the same machine) reuses them. Prints where they are; `--print-dir MODULE` prints only
// that module's bin directory (what test/support/real-kube.ts reads).
//
// Never silently skipped: without Go or the module proxy it prints one line naming what is missing and exits 1,
// so the real-API lane fails rather than skips. `--warn-only` (npm test's pretest) prints the same line and exits
// 0, so the other lanes still run; the real-API suites then fail, each naming what is missing.
'use strict';
const { spawnSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const os = require('os');
const path = require('path');

const ROOT = path.resolve(__dirname, '..');
// Go's own installer puts it in /usr/local/go/bin, which a non-login shell's PATH may lack
if (fs.existsSync('/usr/local/go/bin/go') && !(process.env.PATH || '').split(':').includes('/usr/local/go/bin')) {
  process.env.PATH = `${process.env.PATH}:/usr/local/go/bin`;
}
const CACHE = process.env.MM_GO_BINS_CACHE || path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'migration-mesh', 'go-bins');

/**
 * What each wrapper module builds, from its own `real/<module>/bins.json`: `bins` lists [output name, Go package
 * path]; `stamp` (optional) names the module whose version goes into Kubernetes' version ldflags. A new wrapper
 * module is a directory with go.mod, go.sum and bins.json, and nothing here changes.
 */
const MODULES = Object.fromEntries(fs.readdirSync(path.join(ROOT, 'real'), { withFileTypes: true })
  .filter((e) => e.isDirectory() && fs.existsSync(path.join(ROOT, 'real', e.name, 'bins.json')))
  .map((e) => [e.name, JSON.parse(fs.readFileSync(path.join(ROOT, 'real', e.name, 'bins.json'), 'utf8'))]));

function moduleHash(dir) {
  const h = crypto.createHash('sha256');
  const walk = (d) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => a.name.localeCompare(b.name))) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else if (/^go\.(mod|sum)$|^bins\.json$|\.go$/.test(e.name)) h.update(path.relative(dir, p)).update('\0').update(fs.readFileSync(p)).update('\0');
    }
  };
  walk(dir);
  return h.digest('hex').slice(0, 16);
}

function goVersion() {
  const r = spawnSync('go', ['env', 'GOVERSION'], { encoding: 'utf8' });
  return r.status === 0 ? r.stdout.trim() : null;
}

/** Kubernetes' own version ldflags (hack/lib/version.sh): `--version` and /version tell the truth. */
function stampFlags(dir, modulePath) {
  const gomod = fs.readFileSync(path.join(dir, 'go.mod'), 'utf8');
  const m = new RegExp(`${modulePath.replace(/\./g, '\\.')} (v(\\d+)\\.(\\d+)\\.\\d+\\S*)`).exec(gomod);
  if (!m) throw new Error(`${dir}/go.mod does not require ${modulePath}`);
  const [, v, major, minor] = m;
  const flags = [];
  for (const p of ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version']) {
    flags.push(`-X ${p}.gitVersion=${v}`, `-X ${p}.gitMajor=${major}`, `-X ${p}.gitMinor=${minor}`,
      `-X ${p}.gitTreeState=clean`, `-X ${p}.gitCommit=module-proxy-${v}`, `-X ${p}.buildDate=1970-01-01T00:00:00Z`);
  }
  return flags.join(' ');
}

let warnOnly = false;
function fail(line) {
  console.error(line);
  process.exit(warnOnly ? 0 : 1);
}

function build(name) {
  const spec = MODULES[name];
  const dir = path.join(ROOT, 'real', name);
  const go = goVersion();
  if (!go) {
    fail(`[ensure-go-bins] no Go toolchain on PATH: install Go 1.25 or newer (https://go.dev/dl) and make sure the Go module proxy is reachable; the real-API lane needs ${spec.bins.map((b) => b[0]).join(', ')}`);
  }
  const out = path.join(CACHE, `${name}-${moduleHash(dir)}-${go}`);
  const binDir = path.join(out, 'bin');
  if (spec.bins.every(([b]) => fs.existsSync(path.join(binDir, b)))) return binDir;
  const tmp = `${out}.tmp-${process.pid}`;
  fs.rmSync(tmp, { recursive: true, force: true });
  fs.mkdirSync(path.join(tmp, 'bin'), { recursive: true });
  const env = { ...process.env, GOTOOLCHAIN: 'local', CGO_ENABLED: '0', GOFLAGS: '-trimpath -mod=readonly' };
  const ldflags = `-s -w${spec.stamp ? ' ' + stampFlags(dir, spec.stamp) : ''}`;
  for (const [bin, pkg] of spec.bins) {
    const t0 = Date.now();
    process.stderr.write(`[ensure-go-bins] building ${bin} (${pkg}) from the Go module proxy; a cold build takes minutes\n`);
    const r = spawnSync('go', ['build', '-ldflags', ldflags, '-o', path.join(tmp, 'bin', bin), pkg], { cwd: dir, env, stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' });
    if (r.status !== 0) {
      fs.rmSync(tmp, { recursive: true, force: true });
      const proxy = /dial tcp|lookup |proxy\.golang|connection refused|i\/o timeout/.test(r.stderr) ? ' (the Go module proxy could not be reached: check GOPROXY and the network)' : '';
      fail(`[ensure-go-bins] building ${bin} in real/${name} failed${proxy}:\n${r.stderr.trim().split('\n').slice(-15).join('\n')}`);
    }
    process.stderr.write(`[ensure-go-bins] ${bin} built in ${((Date.now() - t0) / 1000).toFixed(0)} s\n`);
  }
  fs.rmSync(out, { recursive: true, force: true });
  fs.renameSync(tmp, out);
  return binDir;
}

function main(argv) {
  warnOnly = argv[0] === '--warn-only';
  if (warnOnly) argv = argv.slice(1);
  if (argv[0] === '--print-dir') {
    process.stdout.write(build(argv[1]) + '\n');
    return;
  }
  for (const name of argv.length ? argv : Object.keys(MODULES)) {
    if (!MODULES[name]) { console.error(`[ensure-go-bins] no wrapper module real/${name}: one of ${Object.keys(MODULES).join(', ')}`); process.exit(2); }
    console.log(`[ensure-go-bins] ${name}: ${build(name)}`);
  }
}

main(process.argv.slice(2));
