/**
 * The incremental build's guard (proxy/scripts/prune-lib.js, run before each `tsc` by `npm run build` and
 * prepack): compiled files whose source is gone are removed (a deleted test must never run from lib/, a
 * deleted module never ship), and a source whose output is missing drops tsc's build-info so tsc emits
 * everything again instead of trusting it.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const SCRIPT = path.join(__dirname, '..', 'proxy', 'scripts', 'prune-lib.js');

function tree(files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-prune-'));
  for (const [f, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, f)), { recursive: true });
    fs.writeFileSync(path.join(dir, f), text);
  }
  return dir;
}
const prune = (cwd: string, ...args: string[]) => spawnSync(process.execPath, [SCRIPT, ...args], { cwd, encoding: 'utf8' });
const exists = (dir: string, f: string) => fs.existsSync(path.join(dir, f));

test('outputs without a source are removed; outputs of existing sources, other files and the build-info stay', () => {
  const d = tree({
    'src/a.ts': '', 'src/t/b.test.ts': '',
    'lib/a.js': '', 'lib/a.d.ts': '', 'lib/a.js.map': '', 'lib/t/b.test.js': '', 'lib/.tsbuildinfo': '{}',
    'lib/t/gone.test.js': '', 'lib/t/gone.test.js.map': '', 'lib/t/gone.d.ts': '', 'lib/data.json': '{}',
  });
  try {
    const r = prune(d, 'lib', 'src');
    expect(r.status).toBe(0);
    expect(r.stderr).toMatch(/3 stale file\(s\) removed; 0 source\(s\) without output/);
    for (const f of ['lib/t/gone.test.js', 'lib/t/gone.test.js.map', 'lib/t/gone.d.ts']) expect([f, exists(d, f)]).toEqual([f, false]);
    for (const f of ['lib/a.js', 'lib/a.d.ts', 'lib/a.js.map', 'lib/t/b.test.js', 'lib/.tsbuildinfo', 'lib/data.json']) expect([f, exists(d, f)]).toEqual([f, true]);
  } finally { fs.rmSync(d, { recursive: true, force: true }); }
});

test('a source without output drops the build-info (full compile); skipped paths count neither way', () => {
  const d = tree({
    'index.ts': '', 'src/a.ts': '', 'test/x.test.ts': '', 'bench/y.bench.ts': '', 'node_modules/m/z.ts': '',
    'lib/index.js': '', 'lib/.tsbuildinfo': '{}',
  });
  try {
    // the build-info is newer than the sources: src/a.ts was compiled once and its output deleted since
    const later = new Date(Date.now() + 60_000);
    fs.utimesSync(path.join(d, 'lib', '.tsbuildinfo'), later, later);
    let r = prune(d, 'lib', '.', '^(node_modules|lib|test)/|\\.bench\\.ts$');
    expect(r.stderr).toMatch(/1 source\(s\) without output \(src\/a\.ts\.\.\.\): full compile/);
    expect(exists(d, 'lib/.tsbuildinfo')).toBe(false);
    fs.mkdirSync(path.join(d, 'lib', 'src'));
    fs.writeFileSync(path.join(d, 'lib', 'src', 'a.js'), '');
    fs.writeFileSync(path.join(d, 'lib', '.tsbuildinfo'), '{}');
    fs.utimesSync(path.join(d, 'lib', '.tsbuildinfo'), later, later);
    r = prune(d, 'lib', '.', '^(node_modules|lib|test)/|\\.bench\\.ts$');
    expect(`${r.stdout}${r.stderr}`).toBe('');
    expect(exists(d, 'lib/.tsbuildinfo')).toBe(true);
  } finally { fs.rmSync(d, { recursive: true, force: true }); }
});

test('a source added since the last compile (newer than the build-info) keeps the build-info: tsc compiles it anyway', () => {
  const d = tree({ 'src/a.ts': '', 'lib/a.js': '', 'lib/.tsbuildinfo': '{}' });
  try {
    const earlier = new Date(Date.now() - 60_000);
    fs.utimesSync(path.join(d, 'lib', '.tsbuildinfo'), earlier, earlier);
    fs.writeFileSync(path.join(d, 'src', 'new.ts'), '');
    const r = prune(d, 'lib', 'src');
    expect([r.status, r.stderr]).toEqual([0, '']);
    expect(exists(d, 'lib/.tsbuildinfo')).toBe(true);
  } finally { fs.rmSync(d, { recursive: true, force: true }); }
});

test('a missing outDir (fresh clone) is no error', () => {
  const d = tree({ 'src/a.ts': '' });
  try {
    const r = prune(d, 'lib', 'src');
    expect([r.status, r.stderr]).toEqual([0, '']);
  } finally { fs.rmSync(d, { recursive: true, force: true }); }
});
