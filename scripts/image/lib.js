// The gateway image, shared by `npm run image` (scripts/image/build.js) and test/gateway-image.image.test.ts: which engine
// builds it, the machine settings podman needs, the base images (official where a registry answers, local
// stand-ins from make-bases.sh where not), the build, its sizes and its OCI archive.
'use strict';
const { spawnSync } = require('child_process');
const crypto = require('crypto');
const fs = require('fs');
const path = require('path');

const ROOT = path.resolve(__dirname, '../..');
const DOCKERFILE = path.join(ROOT, 'proxy/Dockerfile');
const IGNOREFILE = path.join(ROOT, 'proxy/.dockerignore');
const OUT_DIR = path.join(ROOT, '.image');
const ARCHIVE = path.join(OUT_DIR, 'migration-mesh-proxy.oci.tar');
const MAKE_BASES = path.join(__dirname, 'make-bases.sh');
const STAND_IN_LABEL = 'dev.migration-mesh.stand-in';
const PROXY_VERSION = JSON.parse(fs.readFileSync(path.join(ROOT, 'proxy/package.json'), 'utf8')).version;
/** the local name `npm run image` gives the image (push it under your registry's name) */
const DEFAULT_TAG = `localhost/migration-mesh-proxy:${PROXY_VERSION}`;
const MiB = 1024 * 1024;

const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const isRoot = () => typeof process.getuid === 'function' && process.getuid() === 0;

/** A short name in FROM resolves to docker.io/library/<name> (docker.io/<org>/<name> with one slash). */
function qualify(name) {
  const slashes = name.split('/').length - 1;
  if (slashes >= 2 || (slashes === 1 && /[.:]|^localhost\//.test(name.split('/')[0]))) return name;
  return slashes === 1 ? `docker.io/${name}` : `docker.io/library/${name}`;
}

/** The FROM images: the Dockerfile's ARG defaults. */
function baseImages() {
  const text = fs.readFileSync(DOCKERFILE, 'utf8');
  const arg = (n) => {
    const m = new RegExp(`^ARG ${n}=(\\S+)`, 'm').exec(text);
    if (!m) throw new Error(`proxy/Dockerfile: no ARG ${n}=... default`);
    return m[1];
  };
  return { build: arg('NODE_IMAGE'), runtime: arg('NODE_SLIM_IMAGE') };
}

/** This process's hard limit from /proc/self/limits ('Max open files', 'Max processes'); Infinity if unlimited. */
function hardLimit(label) {
  const line = fs.readFileSync('/proc/self/limits', 'utf8').split('\n').find((l) => l.startsWith(label));
  const hard = line ? line.slice(label.length).trim().split(/\s+/)[1] : 'unlimited';
  return hard === 'unlimited' ? Infinity : Number(hard);
}

/**
 * Our own containers.conf, passed to podman as CONTAINERS_CONF (the machine's and the user's files stay
 * untouched; podman 4.3 then reads only this file). What it sets, and why:
 *  - default_ulimits: podman asks for nofile 1048576 by default, which root cannot raise to on machines with a
 *    lower hard limit ("setrlimit: operation not permitted"): ask for what this process may have.
 *  - runtime runc (when installed): crun refuses hybrid cgroup v1/v2 hierarchies such as this kernel's.
 *  - cgroup_manager cgroupfs unless systemd runs as PID 1: the systemd manager needs a systemd to talk to.
 * A CONTAINERS_CONF already set by the user wins (we then add nothing).
 */
function podmanEnv() {
  if (process.env.CONTAINERS_CONF) return { env: { ...process.env }, conf: process.env.CONTAINERS_CONF, ours: false };
  const nofile = Math.min(hardLimit('Max open files'), 1048576);
  const nproc = Math.min(hardLimit('Max processes'), 32768);
  const systemdPid1 = (() => {
    try {
      return fs.readFileSync('/proc/1/comm', 'utf8').trim() === 'systemd';
    } catch {
      return false;
    }
  })();
  const lines = [
    '# written by scripts/image/lib.js for `npm run image` and test/gateway-image.image.test.ts (CONTAINERS_CONF=this file)',
    '[containers]',
    `default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=${nproc}:${nproc}"]`,
    '[engine]',
    ...(have('runc') ? ['runtime = "runc"'] : []),
    ...(systemdPid1 ? [] : ['cgroup_manager = "cgroupfs"']),
  ];
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const conf = path.join(OUT_DIR, 'containers.conf');
  fs.writeFileSync(conf, lines.join('\n') + '\n');
  return { env: { ...process.env, CONTAINERS_CONF: conf }, conf, ours: true };
}

/**
 * The engine that builds here: podman when it is installed and answers, else docker with a running daemon.
 * Returns { name, bin, env, conf? } or { skip: reason }.
 */
function findEngine() {
  const reasons = [];
  if (have('podman')) {
    const pe = podmanEnv();
    const r = spawnSync('podman', ['info', '--format', '{{.Host.OCIRuntime.Name}}'], { env: pe.env, encoding: 'utf8', timeout: 60000 });
    if (r.status === 0) return { name: 'podman', bin: 'podman', env: pe.env, conf: pe.conf, ownConf: pe.ours, runtime: r.stdout.trim() };
    reasons.push(`podman info failed: ${(r.stderr || String(r.error)).trim().split('\n').pop()}`);
  } else {
    reasons.push('podman not installed');
  }
  if (have('docker')) {
    const r = spawnSync('docker', ['info', '--format', '{{.ServerVersion}}'], { encoding: 'utf8', timeout: 30000 });
    if (r.status === 0) return { name: 'docker', bin: 'docker', env: { ...process.env } };
    reasons.push('docker installed but no engine answers');
  }
  return { skip: reasons.join('; ') };
}

/** Runs the engine; throws with the tail of its output on failure. */
function engineRun(engine, args, { timeoutMs = 120000, stdio = 'pipe', input } = {}) {
  const r = spawnSync(engine.bin, args, { env: engine.env, encoding: 'utf8', timeout: timeoutMs, stdio, input, maxBuffer: 256 * MiB });
  if (r.status !== 0) {
    const why = r.error ? String(r.error) : `exit ${r.status}`;
    const tail = `${r.stdout || ''}${r.stderr || ''}`.trim().split('\n').slice(-15).join('\n');
    throw new Error(`${engine.bin} ${args.join(' ')}: ${why}\n${tail}`);
  }
  return r.stdout || '';
}

function imageInspect(engine, name) {
  const r = spawnSync(engine.bin, ['image', 'inspect', name], { env: engine.env, encoding: 'utf8', timeout: 60000 });
  if (r.status !== 0) return undefined;
  const [img] = JSON.parse(r.stdout);
  const labels = (img.Config && img.Config.Labels) || img.Labels || {};
  return { id: img.Id, size: img.Size, labels, standIn: labels[STAND_IN_LABEL] === 'true', repoDigests: img.RepoDigests || [] };
}

/**
 * How the build names a base (issue 49): by digest (`docker.io/library/node:24-bookworm-slim@sha256:...`) when the
 * local image came from a registry (its RepoDigests hold one for that repository), so the build uses exactly
 * those bytes and the image's label dev.migration-mesh.base-image records which; a name already pinned stays as
 * it is. A local stand-in (label dev.migration-mesh.stand-in=true, made by make-bases.sh) has no registry digest:
 * it is named by its tag, and says it is a stand-in. Returns { ref, pinned }.
 */
function baseRef(name, info) {
  const q = qualify(name);
  if (q.includes('@sha256:')) return { ref: q, pinned: true };
  if (!info || info.standIn) return { ref: q, pinned: false };
  const repo = q.replace(/:[^/:@]+$/, '');
  const d = (info.repoDigests || []).find((r) => r.startsWith(`${repo}@sha256:`));
  return d ? { ref: `${q}@${d.slice(repo.length + 1)}`, pinned: true } : { ref: q, pinned: false };
}

/** The Dockerfile's build arguments that name the bases as baseRef does (from ensureBases' result). */
function baseBuildArgs(bases) {
  const ref = (role) => { const b = bases.find((x) => x.role === role); if (!b) throw new Error(`no ${role} base`); return b.ref; };
  return { NODE_IMAGE: ref('build'), NODE_SLIM_IMAGE: ref('runtime') };
}

/**
 * Makes sure both FROM images exist locally: present, else pulled, else (podman, root, debootstrap) made by
 * make-bases.sh. Returns [{ role, name, source: 'local'|'pulled'|'stand-in made', standIn, size }].
 */
function ensureBases(engine, log = console.log) {
  const bases = baseImages();
  const missing = Object.values(bases).filter((b) => !imageInspect(engine, qualify(b)));
  const made = new Set();
  for (const b of missing) {
    if (made.size > 0 && imageInspect(engine, qualify(b))) continue; // make-bases.sh made both
    log(`base ${b}: not here, pulling`);
    const r = spawnSync(engine.bin, ['pull', qualify(b)], { env: engine.env, encoding: 'utf8', timeout: 300000 });
    if (r.status === 0) continue;
    log(`base ${b}: pull failed (${(r.stderr || '').trim().split('\n').pop()})`);
    if (engine.name !== 'podman' || !isRoot() || !have('debootstrap')) {
      throw new Error(`base image ${b} is neither here nor pullable, and stand-ins need podman, root and debootstrap ` +
        '(node scripts/ensure-system-deps.js installs them on Debian): see docs/gateway-image.md');
    }
    if (made.size === 0) {
      log(`making local stand-ins for ${bases.runtime} and ${bases.build} (scripts/image/make-bases.sh)`);
      const env = { ...engine.env, NODE_IMAGE: bases.build, NODE_SLIM_IMAGE: bases.runtime };
      const t0 = Date.now();
      const m = spawnSync('sh', [MAKE_BASES], { env, encoding: 'utf8', timeout: 1200000, stdio: ['ignore', 'pipe', 'pipe'] });
      if (m.status !== 0) throw new Error(`make-bases.sh failed:\n${(m.stdout + m.stderr).trim().split('\n').slice(-20).join('\n')}`);
      log(`stand-ins made in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
      made.add(b);
    }
  }
  return Object.entries(bases).map(([role, name]) => {
    const info = imageInspect(engine, qualify(name));
    if (!info) throw new Error(`base image ${name} still missing after pull/make-bases`);
    const source = !missing.includes(name) ? 'local' : made.size > 0 && info.standIn ? 'stand-in made' : 'pulled';
    return { role, name: qualify(name), source, standIn: info.standIn, size: info.size, ...baseRef(name, info) };
  });
}

/** Files the build reads (the Dockerfile, its ignore file and what the context allowlist sends), sorted. */
function contextFiles() {
  const files = ['proxy/Dockerfile', 'proxy/.dockerignore', 'package.json', 'package-lock.json',
    'proxy/package.json', 'proxy/tsconfig.json', 'proxy/binding.gyp'];
  const walk = (rel) => {
    for (const e of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const r = path.posix.join(rel, e.name);
      if (e.isDirectory()) walk(r);
      else if (e.isFile()) files.push(r);
    }
  };
  walk('proxy/src');
  walk('proxy/native');
  walk('proxy/scripts');
  walk('proxy/image');
  return files.sort();
}

/** Content hash of the build inputs (plus the base image ids): the cache key for a built image. */
function contextHash(baseIds = []) {
  const h = crypto.createHash('sha256');
  for (const f of contextFiles()) {
    h.update(`${f}\0`);
    h.update(fs.readFileSync(path.join(ROOT, f)));
    h.update('\0');
  }
  for (const id of baseIds) h.update(`base ${id}\0`);
  return h.digest('hex').slice(0, 16);
}

/**
 * `<engine> build` of proxy/Dockerfile from the repository root, FROM the bases as ensureBases found them (by
 * digest where a registry gave them: baseRef), when given. Host networking for the RUN steps: the build
 * stage fetches npm packages and the runtime stage Debian packages, and host networking needs no container
 * network plugins or NAT rules on the build machine. Returns { seconds, id }.
 */
function buildImage(engine, { tags, logFile, noCache = false, dockerfile = DOCKERFILE, timeoutMs = 900000, bases }) {
  const iid = path.join(OUT_DIR, `iid.${process.pid}`);
  fs.mkdirSync(OUT_DIR, { recursive: true });
  const args = ['build', '-f', dockerfile, '--network', 'host', '--iidfile', iid, ...tags.flatMap((t) => ['-t', t])];
  for (const [k, v] of Object.entries(bases ? baseBuildArgs(bases) : {})) args.push('--build-arg', `${k}=${v}`);
  if (engine.name === 'podman') args.push('--ignorefile', IGNOREFILE, '--layers');
  if (noCache) args.push('--no-cache');
  args.push(ROOT);
  const out = logFile ? fs.openSync(logFile, 'w') : 'inherit';
  const t0 = process.hrtime.bigint();
  const r = spawnSync(engine.bin, args, { env: engine.env, stdio: ['ignore', out, out], timeout: timeoutMs });
  const seconds = Number(process.hrtime.bigint() - t0) / 1e9;
  if (logFile) fs.closeSync(out);
  if (r.status !== 0) {
    const tail = logFile ? fs.readFileSync(logFile, 'utf8').trim().split('\n').slice(-25).join('\n') : '';
    throw new Error(`${engine.bin} build failed (${r.error ? String(r.error) : `exit ${r.status}`}) after ${seconds.toFixed(0)} s\n${tail}`);
  }
  const id = fs.readFileSync(iid, 'utf8').trim();
  fs.rmSync(iid, { force: true });
  return { seconds, id };
}

/** Layers of an image, newest first: { size, createdBy }. */
function imageLayers(engine, name) {
  const out = engineRun(engine, ['history', '--no-trunc', '--format', '{{json .}}', name]).trim();
  // podman 4 prints one JSON array, docker one object a line
  const rows = out.startsWith('[') ? JSON.parse(out) : out.split('\n').filter(Boolean).map((l) => JSON.parse(l));
  return rows.map((l) => ({
    size: typeof l.Size === 'number' ? l.Size : Number(l.size ?? l.Size ?? 0),
    createdBy: String(l.CreatedBy ?? l.createdBy ?? '').replace(/\s+/g, ' '),
  }));
}

/** Writes the OCI archive (podman save --format oci-archive, or docker save, an OCI layout since Docker 25). */
function saveArchive(engine, name, file = ARCHIVE) {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.rmSync(file, { force: true });
  const args = engine.name === 'podman' ? ['save', '--format', 'oci-archive', '-o', file, name] : ['save', '-o', file, name];
  engineRun(engine, args, { timeoutMs: 600000 });
  return fs.statSync(file).size;
}

module.exports = {
  ROOT, DOCKERFILE, IGNOREFILE, OUT_DIR, ARCHIVE, DEFAULT_TAG, STAND_IN_LABEL, MiB,
  have, isRoot, qualify, baseImages, podmanEnv, findEngine, engineRun, imageInspect, baseRef, baseBuildArgs, ensureBases,
  contextFiles, contextHash, buildImage, imageLayers, saveArchive,
};
