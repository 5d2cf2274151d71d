/**
 * Building needs a C toolchain (node-gyp compiles the gateway's native addon). When part of it is
 * missing, the build says so on one line, names what is missing and the command that installs it,
 * and builds nothing. The proxy's own build script (proxy/package.json `scripts.build`, as npm runs
 * it: `sh -c` with node_modules/.bin on PATH) runs in a child process, in a scratch copy of the addon's
 * sources, with a PATH that holds only what the case allows.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const root = path.join(__dirname, '..');
const proxy = path.join(root, 'proxy');
const BUILD = JSON.parse(fs.readFileSync(path.join(proxy, 'package.json'), 'utf8')).scripts.build as string;

/** Where a program really is (through pyenv-style shims for python3), or undefined. */
function realPath(cmd: string): string | undefined {
  const r = cmd === 'python3'
    ? spawnSync('python3', ['-c', 'import sys; print(sys.executable)'], { encoding: 'utf8' })
    : spawnSync('/bin/sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  return r.status === 0 && r.stdout.trim() ? fs.realpathSync(r.stdout.trim()) : undefined;
}

/** Runs the proxy's build script in a scratch copy with only `tools` (and node, npm's .bin) on PATH. */
function buildWith(tools: string[], env: Record<string, string> = {}): { code: number | null; output: string[]; built: boolean } {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-toolchain-'));
  try {
    const pkg = path.join(work, 'proxy');
    fs.mkdirSync(pkg);
    for (const f of ['package.json', 'binding.gyp', 'tsconfig.json']) fs.copyFileSync(path.join(proxy, f), path.join(pkg, f));
    for (const d of ['native', 'scripts']) if (fs.existsSync(path.join(proxy, d))) fs.cpSync(path.join(proxy, d), path.join(pkg, d), { recursive: true });
    const bin = path.join(work, 'bin');
    fs.mkdirSync(bin);
    fs.symlinkSync(process.execPath, path.join(bin, 'node'));
    for (const t of tools) {
      const p = realPath(t);
      if (!p) throw new Error(`this machine has no ${t}; the build needs it anyway`);
      fs.symlinkSync(p, path.join(bin, t));
    }
    const PATH = [bin, path.join(root, 'node_modules', '.bin')].join(path.delimiter);
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^(CC|CXX|MAKE|PYTHON|npm_config_python|npm_config_node_gyp)$/.test(k)));
    const r = spawnSync('/bin/sh', ['-c', BUILD], { cwd: pkg, encoding: 'utf8', timeout: 120_000, env: { ...clean, ...env, PATH, HOME: work } });
    const output = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.trim() && !l.startsWith('npm warn '));
    return { code: r.status, output, built: fs.existsSync(path.join(pkg, 'build', 'Release', 'mmproxy.node')) };
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

const INSTALL = /install a C toolchain: apt-get install build-essential python3 \(Debian, Ubuntu\)/;

test('no C compiler: one line naming cc and build-essential, nothing built', () => {
  const r = buildWith(['g++', 'make', 'python3']);
  expect(r.output).toHaveLength(1);
  expect(r.output[0]).toMatch(/^\[build-addon\] cannot build the gateway's native addon: missing cc \(C compiler\); /);
  expect(r.output[0]).toMatch(INSTALL);
  expect(r.code).not.toBe(0);
  expect(r.built).toBe(false);
});

test('CC pointing at nothing is named as given', () => {
  const r = buildWith(['cc', 'g++', 'make', 'python3'], { CC: '/nonexistent/cc' });
  expect(r.output).toEqual([expect.stringMatching(/missing \/nonexistent\/cc \(C compiler\); install a C toolchain/)]);
  expect(r.code).not.toBe(0);
  expect(r.built).toBe(false);
});

test('nothing but node: every missing part named at once', () => {
  const r = buildWith([]);
  expect(r.output).toHaveLength(1);
  expect(r.output[0]).toMatch(/missing cc \(C compiler\), g\+\+ \(C\+\+ driver, links the addon\), make, python3 \(3\.6 or later, for node-gyp\); /);
  expect(r.output[0]).toMatch(INSTALL);
  expect(r.code).not.toBe(0);
});

test('no python: named, the rest found', () => {
  const r = buildWith(['cc', 'as', 'g++', 'make']); // gcc runs the assembler from PATH
  expect(r.output).toEqual([expect.stringMatching(/missing python3 \(3\.6 or later, for node-gyp\); install a C toolchain/)]);
});

test('a compiler that cannot compile (its assembler missing) is named with its own error', () => {
  const r = buildWith(['cc', 'g++', 'make', 'python3']);
  expect(r.output).toEqual([expect.stringMatching(/missing a working C compiler \(cc cannot compile a file that includes <stdio.h>: .*error.*\); install a C toolchain/)]);
  expect(r.built).toBe(false);
});

test('with the whole toolchain the check passes (the check can succeed)', () => {
  const r = spawnSync(process.execPath, [path.join(proxy, 'scripts', 'build-addon.js'), '--check'], { cwd: proxy, encoding: 'utf8' });
  expect(r.stderr).toBe('');
  expect(r).toMatchObject({ status: 0, stdout: '[build-addon] C toolchain found (C compiler, C++ driver, make, python3)\n' });
});
