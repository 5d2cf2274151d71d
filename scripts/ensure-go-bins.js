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
//
// Two runs at once (the README's set-up and a suite that calls `--print-dir`, or two checkouts sharing the cache)
// take turns per module: a lock file `<cache>/<module>.lock` holds the builder's pid; the other prints "waiting for
// pid N building MODULE" and waits (at most LOCK_WAIT_MS), takes over a lock whose pid is dead, and once it holds
// the lock uses what the first one built. A module is built into `<dir>.tmp-<pid>` and renamed into place, so no
// reader ever sees half a build.
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

/** Whether process `pid` exists (EPERM: it does, as another user's). */
function pidAlive(pid) {
  try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; }
}

/** The pid a lock file names; null while it is empty (its creator has not written it yet) or unreadable. */
function lockHolder(lock) {
  try { const pid = Number.parseInt(fs.readFileSync(lock, 'utf8'), 10); return pid > 0 ? pid : null; } catch { return null; }
}

const sleepSync = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);

/** A cold build of the slowest module takes about 70 min on a loaded 2-core machine: wait twice that at most. */
const LOCK_WAIT_MS = 150 * 60 * 1000;
/** A lock file still empty after this long lost its creator between create and write. */
const EMPTY_LOCK_STALE_MS = 10_000;

/**
 * Run fn() holding `<cacheDir>/<name>.lock` (created with O_EXCL, holding this process' pid; removed after fn).
 * While another live process holds it: print "waiting for pid N building NAME" (once per holder) and poll every
 * pollMs; a lock whose pid is dead (or empty for EMPTY_LOCK_STALE_MS) is taken over. After waitMs, throws an
 * Error with code MM_GO_BINS_LOCK_TIMEOUT naming the holder and the lock file. Takeover re-reads the lock before
 * removing it, so of two waiters that saw the same dead pid one removes it and the other sees the new holder
 * (unless both re-read within the same microseconds: then both build, each into its own temp directory).
 */
function withLock(cacheDir, name, fn, { waitMs = LOCK_WAIT_MS, pollMs = 1000, log = (line) => process.stderr.write(`${line}\n`) } = {}) {
  fs.mkdirSync(cacheDir, { recursive: true });
  const lock = path.join(cacheDir, `${name}.lock`);
  const until = Date.now() + waitMs;
  let told = null;
  for (;;) {
    try { fs.writeFileSync(lock, `${process.pid}\n`, { flag: 'wx' }); break; } catch (e) { if (e.code !== 'EEXIST') throw e; }
    const holder = lockHolder(lock);
    let stale = holder !== null && !pidAlive(holder);
    if (holder === null) { try { stale = Date.now() - fs.statSync(lock).mtimeMs > EMPTY_LOCK_STALE_MS; } catch { continue; } }
    if (stale) {
      if (lockHolder(lock) === holder) fs.rmSync(lock, { force: true });
      log(`[ensure-go-bins] ${name}: taking over the lock of pid ${holder ?? '(none written)'}, which is gone (${lock})`);
      continue;
    }
    if (Date.now() >= until) {
      throw Object.assign(new Error(`[ensure-go-bins] ${name}: pid ${holder ?? '?'} still holds ${lock} after ${Math.round(waitMs / 1000)} s: wait for it to end, or remove the file if that process is not building (ps -p ${holder ?? '?'})`), { code: 'MM_GO_BINS_LOCK_TIMEOUT' });
    }
    if (holder !== told) { log(`[ensure-go-bins] waiting for pid ${holder ?? '?'} building ${name} (${lock})`); told = holder; }
    sleepSync(Math.min(pollMs, Math.max(1, until - Date.now())));
  }
  try { return fn(); } finally { if (lockHolder(lock) === process.pid) fs.rmSync(lock, { force: true }); }
}

/** Temp directories `<out>.tmp-<pid>` of builds whose process is gone (a killed run): removed under the lock. */
function dropDeadTemps(out) {
  const dir = path.dirname(out), prefix = `${path.basename(out)}.tmp-`;
  for (const e of fs.readdirSync(dir)) {
    const pid = e.startsWith(prefix) ? Number(e.slice(prefix.length)) : NaN;
    if (pid > 0 && pid !== process.pid && !pidAlive(pid)) fs.rmSync(path.join(dir, e), { recursive: true, force: true });
  }
}

const built = (spec, binDir) => spec.bins.every(([b]) => fs.existsSync(path.join(binDir, b)));

function build(name) {
  const spec = MODULES[name];
  const dir = path.join(ROOT, 'real', name);
  const go = goVersion();
  if (!go) {
    fail(`[ensure-go-bins] no Go toolchain on PATH: install Go 1.25 or newer (https://go.dev/dl) and make sure the Go module proxy is reachable; the real-API lane needs ${spec.bins.map((b) => b[0]).join(', ')}`);
  }
  const out = path.join(CACHE, `${name}-${moduleHash(dir)}-${go}`);
  const binDir = path.join(out, 'bin');
  if (built(spec, binDir)) return binDir;
  try {
    return withLock(CACHE, name, () => (built(spec, binDir) ? binDir : buildLocked(name, spec, dir, out)));
  } catch (e) {
    if (e.code === 'MM_GO_BINS_LOCK_TIMEOUT') fail(e.message);
    throw e;
  }
}

/** Build module `name` into `<out>.tmp-<pid>` and rename it to `out` (the caller holds the module's lock). */
function buildLocked(name, spec, dir, out) {
  dropDeadTemps(out);
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
  fs.rmSync(out, { recursive: true, force: true }); // an incomplete one (a binary removed by hand): never half-used
  fs.renameSync(tmp, out);
  return path.join(out, 'bin');
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

if (require.main === module) main(process.argv.slice(2));
else module.exports = { withLock, LOCK_WAIT_MS };
