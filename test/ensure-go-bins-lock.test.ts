/**
 * scripts/ensure-go-bins.js takes turns per module: two runs at once (the README's set-up and a suite's
 * `--print-dir`, or two checkouts sharing ~/.cache/migration-mesh/go-bins) both built the same binaries cold and
 * renamed over each other's cache directory. Here the lock function runs against a temp cache dir, in real
 * processes that hold it, wait for it and die: no Go build.
 */
import { spawn, spawnSync, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const script = path.join(__dirname, '..', 'scripts', 'ensure-go-bins.js');
const { withLock } = require(script) as {
  withLock<T>(cacheDir: string, name: string, fn: () => T, o?: { waitMs?: number; pollMs?: number; log?: (l: string) => void }): T;
};

let dir: string;
beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-go-bins-lock-')); });
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Poll `ok` every 20 ms for at most `ms` (a loaded machine starts a node process in seconds, not ms). */
async function until(ok: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * A process that takes the lock on module `mod`, appends "<tag> in" to the order file, waits (at most 60 s) for
 * the file `<tag>.go` to appear, appends "<tag> out" and returns. Its stderr is collected.
 */
function locker(tag: string): { child: ChildProcess; stderr: () => string; exited: Promise<number | null> } {
  const code = `
    const fs = require('fs'), path = require('path');
    const { withLock } = require(${JSON.stringify(script)});
    const dir = ${JSON.stringify(dir)}, order = path.join(dir, 'order');
    withLock(path.join(dir, 'cache'), 'mod', () => {
      fs.appendFileSync(order, '${tag} in\\n');
      const end = Date.now() + 60000;
      while (!fs.existsSync(path.join(dir, '${tag}.go')) && Date.now() < end) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
      fs.appendFileSync(order, '${tag} out\\n');
    }, { pollMs: 50 });`;
  const child = spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => { err += d; });
  const exited = new Promise<number | null>((r) => child.on('exit', (c) => r(c)));
  return { child, stderr: () => err, exited };
}

const order = () => (fs.existsSync(path.join(dir, 'order')) ? fs.readFileSync(path.join(dir, 'order'), 'utf8').trim().split('\n') : []);
const lockFile = () => path.join(dir, 'cache', 'mod.lock');

test('a second run waits for the first, saying "waiting for pid N building mod", and runs only after it', async () => {
  const a = locker('a');
  const b = locker('b');
  try {
    await until(() => order().includes('a in') || order().includes('b in'), 60_000, 'one of the two to hold the lock');
    const [first, second] = order()[0] === 'a in' ? [a, b] : [b, a];
    const [ft, st] = first === a ? ['a', 'b'] : ['b', 'a'];
    expect(fs.readFileSync(lockFile(), 'utf8').trim()).toBe(String(first.child.pid));
    await until(() => second.stderr().includes('waiting for pid'), 60_000, 'the second one to say it waits');
    expect(second.stderr()).toContain(`[ensure-go-bins] waiting for pid ${first.child.pid} building mod`);
    expect(order()).toEqual([`${ft} in`]); // the second is still outside
    fs.writeFileSync(path.join(dir, `${ft}.go`), '');
    await until(() => order().includes(`${st} in`), 60_000, 'the second one to get the lock');
    expect(fs.readFileSync(lockFile(), 'utf8').trim()).toBe(String(second.child.pid));
    fs.writeFileSync(path.join(dir, `${st}.go`), '');
    expect([await first.exited, await second.exited]).toEqual([0, 0]);
    expect(order()).toEqual([`${ft} in`, `${ft} out`, `${st} in`, `${st} out`]);
    expect(fs.existsSync(lockFile())).toBe(false); // released
  } finally { for (const p of [a, b]) if (p.child.exitCode === null) p.child.kill(); }
}, 120_000);

test('a lock whose pid is dead is taken over at once, and said so', () => {
  const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
  fs.mkdirSync(path.join(dir, 'cache'));
  fs.writeFileSync(lockFile(), `${dead}\n`);
  const lines: string[] = [];
  const t0 = Date.now();
  const got = withLock(path.join(dir, 'cache'), 'mod', () => fs.readFileSync(lockFile(), 'utf8').trim(), { waitMs: 30_000, log: (l) => lines.push(l) });
  expect(got).toBe(String(process.pid));
  expect(Date.now() - t0).toBeLessThan(10_000); // no waiting on a dead pid
  expect(lines).toEqual([expect.stringContaining(`taking over the lock of pid ${dead}, which is gone`)]);
  expect(fs.existsSync(lockFile())).toBe(false);
});

test('the wait is bounded: a live holder past waitMs is an error naming its pid and the lock file, and the lock stays its', () => {
  const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
  try {
    fs.mkdirSync(path.join(dir, 'cache'));
    fs.writeFileSync(lockFile(), `${holder.pid}\n`);
    const lines: string[] = [];
    let ran = false;
    expect(() => withLock(path.join(dir, 'cache'), 'mod', () => { ran = true; }, { waitMs: 300, pollMs: 50, log: (l) => lines.push(l) }))
      .toThrow(expect.objectContaining({ code: 'MM_GO_BINS_LOCK_TIMEOUT', message: expect.stringContaining(`pid ${holder.pid} still holds ${lockFile()}`) }));
    expect(ran).toBe(false);
    expect(lines).toEqual([`[ensure-go-bins] waiting for pid ${holder.pid} building mod (${lockFile()})`]); // once, not per poll
    expect(fs.readFileSync(lockFile(), 'utf8').trim()).toBe(String(holder.pid));
  } finally { holder.kill(); }
});

test('fn throwing releases the lock', () => {
  expect(() => withLock(path.join(dir, 'cache'), 'mod', () => { throw new Error('go build failed'); })).toThrow('go build failed');
  expect(fs.existsSync(lockFile())).toBe(false);
});

/**
 * The script itself, twice at once on one module, with a stand-in `go` first on PATH (it answers `go env
 * GOVERSION` and makes each `go build -o OUT` a file after 300 ms, counting the builds) and MM_GO_BINS_CACHE in
 * a temp dir: no Go toolchain runs. Before the lock both runs built every binary and renamed over each other.
 */
test('two `--print-dir argo-bins` at once: each binary is built once, both print the same complete directory, no temp left', async () => {
  const bin = path.join(dir, 'fakebin');
  fs.mkdirSync(bin);
  fs.writeFileSync(path.join(bin, 'go'), `#!/bin/sh
if [ "$1" = env ]; then echo go1.99-fake; exit 0; fi
out=""; while [ $# -gt 0 ]; do [ "$1" = -o ] && out="$2"; shift; done
sleep 0.3; echo "$out" >> ${JSON.stringify(path.join(dir, 'builds'))}; echo fake > "$out"
`, { mode: 0o755 });
  const env = { ...process.env, PATH: `${bin}:${process.env.PATH}`, MM_GO_BINS_CACHE: path.join(dir, 'cache') };
  const runs = [0, 1].map(() => new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const c = spawn(process.execPath, [script, '--print-dir', 'argo-bins'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    c.stdout.on('data', (d) => { out += d; });
    c.stderr.on('data', (d) => { err += d; });
    c.on('exit', (code) => resolve({ code, out, err }));
  }));
  const [r1, r2] = await Promise.all(runs);
  expect([r1.code, r2.code]).toEqual([0, 0]);
  expect(r1.out.trim()).toBe(r2.out.trim());
  const binDir = r1.out.trim();
  expect(fs.readdirSync(binDir).sort()).toEqual(['argocd-applicationset-controller', 'mm-argo-sync']);
  const builds = fs.readFileSync(path.join(dir, 'builds'), 'utf8').trim().split('\n');
  expect(builds.map((b) => path.basename(b)).sort()).toEqual(['argocd-applicationset-controller', 'mm-argo-sync']); // once each
  expect(builds.every((b) => b.includes('.tmp-'))).toBe(true); // built under a temp name, renamed into place
  expect(fs.readdirSync(path.join(dir, 'cache')).filter((e) => e.includes('.tmp-') || e.endsWith('.lock'))).toEqual([]);
}, 120_000);
