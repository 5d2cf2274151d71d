/**
 * The library as a user gets it, built once per source state and shared by the pack tests.
 *
 * `npm pack` runs prepack (a full `tsc -p .`, about 13 s of one core) and `npm install` of the tarball with
 * the cdk8s peers about 9 s more; three suites did both each. Here the tarball is packed once for the
 * current sources (key: sha256 over every file git would track outside dist/ and test/, so an edit to any
 * source, package.json, tsconfig or README packs anew) and each scratch project is installed once per
 * tarball and dependency set, then copied with hard links (`cp -al`) so each test has its own project
 * directory to write into. The tests only add files beside node_modules, never change it.
 *
 * Concurrency: results land in the cache by rename, so two suites racing pack twice and one wins; no
 * reader ever sees a half-written tarball or project. Old entries (other keys) are removed. The cache is this
 * checkout's own (`packCacheDir`: keyed by the realpath of its root), so two checkouts on one machine running pack
 * tests at once never remove each other's tarballs: one cache shared by every checkout, whose cleanup removed
 * every other key, did.
 */
import { createHash } from 'crypto';
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const root = path.join(__dirname, '..', '..');

/** The pack cache of the checkout at `checkout`: one directory per checkout (its root's realpath), in the temp dir. */
export function packCacheDir(checkout: string): string {
  const id = createHash('sha256').update(fs.realpathSync(checkout)).digest('hex').slice(0, 12);
  return path.join(os.tmpdir(), `mm-packed-${id}`);
}
const cacheDir = packCacheDir(root);
export const npmEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

/** Runs npm in cwd; its stdout. */
export function npm(args: string[], cwd: string): string {
  return execFileSync('npm', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 240_000, env: npmEnv });
}

/** The version of a package installed in the repository (so a scratch project gets the same). */
export function versionOf(pkg: string): string {
  return require(path.join(root, 'node_modules', pkg, 'package.json')).version;
}

/** sha256 over the paths and contents of the files that make the packed library. */
function sourceKey(): string {
  const files = execFileSync('git', ['ls-files', '-co', '--exclude-standard', '-z'], { cwd: root, encoding: 'utf8' })
    .split('\0').filter((f) => f && !/^(dist|test)\//.test(f) && fs.existsSync(path.join(root, f))).sort();
  const h = createHash('sha256');
  for (const f of files) h.update(f).update('\0').update(fs.readFileSync(path.join(root, f))).update('\0');
  return h.digest('hex').slice(0, 16);
}

/** Removes the entries of cache `dir` (this checkout's) whose names do not start with key; nothing outside it. */
export function dropOthers(dir: string, key: string): void {
  for (const e of fs.readdirSync(dir)) {
    if (!e.startsWith(key) && !e.startsWith('.tmp-')) fs.rmSync(path.join(dir, e), { recursive: true, force: true });
  }
}

let memo: string | undefined;

/** The path of `npm pack` of the repository's current sources (prepack included), packed at most once per key. */
export function packedLibrary(): string {
  if (memo && fs.existsSync(memo)) return memo;
  fs.mkdirSync(cacheDir, { recursive: true });
  const key = sourceKey();
  const tgz = path.join(cacheDir, `${key}.tgz`);
  if (!fs.existsSync(tgz)) {
    dropOthers(cacheDir, key);
    const tmp = fs.mkdtempSync(path.join(cacheDir, '.tmp-'));
    try {
      const name = npm(['pack', '--silent', '--pack-destination', tmp], root).trim().split('\n').pop()!;
      if (!fs.existsSync(tgz)) fs.renameSync(path.join(tmp, name), tgz);
    } finally { fs.rmSync(tmp, { recursive: true, force: true }); }
  }
  return (memo = tgz);
}

/**
 * A fresh scratch project at `into` (created; must not exist) with `package.json` and node_modules as
 * `npm install <the packed library> ...deps` leaves them. The install runs once per tarball and deps.
 */
export function installedApp(into: string, deps: string[]): void {
  const tgz = packedLibrary();
  const key = path.basename(tgz, '.tgz');
  const app = path.join(cacheDir, `${key}-app-${createHash('sha256').update(deps.join('\0')).digest('hex').slice(0, 8)}`);
  if (!fs.existsSync(app)) {
    const tmp = fs.mkdtempSync(path.join(cacheDir, '.tmp-'));
    try {
      fs.writeFileSync(path.join(tmp, 'package.json'), JSON.stringify({ name: 'infra-repo', private: true, version: '1.0.0' }));
      npm(['install', '--no-audit', '--no-fund', '--prefer-offline', tgz, ...deps], tmp);
      fs.renameSync(tmp, app);
    } catch (e) {
      fs.rmSync(tmp, { recursive: true, force: true });
      if (!fs.existsSync(app)) throw e; // else another suite installed it first
    }
  }
  execFileSync('cp', ['-al', app, into]);
  // the project's own files become copies, so a test that rewrites one never changes the cached project
  for (const e of fs.readdirSync(into, { withFileTypes: true })) {
    if (!e.isFile()) continue;
    const f = path.join(into, e.name);
    const text = fs.readFileSync(f);
    fs.unlinkSync(f);
    fs.writeFileSync(f, text);
  }
}
