/**
 * The test runner (scripts/run-tests.js) tells every failed test again just above its summary, with the head of
 * its message: CI keeps only the start and the end of a long log, and a failure that jest printed in the middle
 * (after a suite's console output) was lost that way (a CI run said "2 failed" in the VM suite and nothing more).
 * Fed here with what real jest and real node --test write for a failing test file.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const runner = require('../scripts/run-tests.js') as {
  jestResults(j: unknown): { passed: number; failed: number; failures: { name: string; message: string }[] };
  tapTests(t: string): { tests: { name: string }[]; failures: { name: string; message: string }[] };
  printFailures(f: { name: string; message: string }[]): void;
};

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-run-tests-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

const printed = (failures: { name: string; message: string }[]): string => {
  const lines: string[] = [];
  const log = jest.spyOn(console, 'log').mockImplementation((...a: unknown[]) => { lines.push(a.join(' ')); });
  try { runner.printFailures(failures); } finally { log.mockRestore(); }
  return lines.join('\n');
};

test('jest: the failed test, its expectation and the received value, above the summary; passing tests are not named', () => {
  fs.writeFileSync(path.join(dir, 'fixture.test.js'), [
    "test('passes', () => { expect(1).toBe(1); });",
    "test('the source keeps ticking', () => { console.log('x'.repeat(50)); expect({ ticking: false }).toEqual({ ticking: true }); });",
  ].join('\n'));
  const out = path.join(dir, 'jest.json');
  const r = spawnSync(process.execPath, [require.resolve('jest/bin/jest'), '--config', JSON.stringify({ rootDir: dir }), '--json', `--outputFile=${out}`, '--ci'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  expect(r.status).toBe(1);
  const res = runner.jestResults(JSON.parse(fs.readFileSync(out, 'utf8')));
  expect([res.passed, res.failed]).toEqual([1, 1]);
  expect(res.failures.map((f) => f.name)).toEqual([expect.stringMatching(/fixture\.test\.js: the source keeps ticking$/)]);
  const text = printed(res.failures);
  expect(text).toMatch(/failed tests \(1;/);
  expect(text).toMatch(/FAIL .*the source keeps ticking/);
  expect(text).toMatch(/"ticking": true/); // the expectation
  expect(text).toMatch(/"ticking": false/); // what came
  expect(text).not.toMatch(/\u001b\[/); // no colour codes
  expect(text).not.toMatch(/^\s+at /m); // no stack frames
  expect(text).not.toMatch(/passes/);
}, 150_000);

test('jest: a suite that fails before any test runs (a throwing hook body at load) is named by its file', () => {
  fs.writeFileSync(path.join(dir, 'broken.test.js'), "throw new Error('lab set-up failed: no qemu');\n");
  const out = path.join(dir, 'jest2.json');
  spawnSync(process.execPath, [require.resolve('jest/bin/jest'), '--config', JSON.stringify({ rootDir: dir }), '--json', `--outputFile=${out}`, '--ci', 'broken'], { cwd: dir, encoding: 'utf8', timeout: 120_000 });
  const res = runner.jestResults(JSON.parse(fs.readFileSync(out, 'utf8')));
  expect(res.failed).toBe(1);
  expect(res.failures).toHaveLength(1);
  expect(res.failures[0].name).toMatch(/broken\.test\.js$/);
  expect(printed(res.failures)).toMatch(/lab set-up failed: no qemu/);
}, 150_000);

test('node --test: the failed subtest by its parents\' names, with its error; passing ones are counted, not named', () => {
  const f = path.join(dir, 'fixture.test.js');
  fs.writeFileSync(f, [
    "const { test, describe } = require('node:test'); const assert = require('node:assert');",
    "describe('gateway', () => { test('relays', () => {}); test('refuses a stranger', () => { assert.strictEqual('accepted', 'refused'); }); });",
  ].join('\n'));
  const r = spawnSync(process.execPath, ['--test', '--test-reporter=tap', f], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status).toBe(1);
  const res = runner.tapTests(r.stdout);
  expect(res.tests.map((t) => t.name)).toEqual(['proxy: gateway > relays', 'proxy: gateway > refuses a stranger']);
  expect(res.failures.map((x) => x.name)).toEqual(['proxy: gateway > refuses a stranger']);
  const text = printed(res.failures);
  expect(text).toMatch(/FAIL proxy: gateway > refuses a stranger/);
  expect(text).toMatch(/accepted/);
  expect(text).toMatch(/refused/);
});

test('more than twelve failures: twelve told, the count of the rest given', () => {
  const text = printed(Array.from({ length: 15 }, (_, i) => ({ name: `t${i}`, message: `m${i}` })));
  expect(text.match(/^ {2}FAIL /gm)).toHaveLength(12);
  expect(text).toMatch(/and 3 more above/);
});

describe('lanes by name (issue 53): a test file says its lane in its name, and its contents agree', () => {
  const lanes = require('../scripts/run-tests.js') as { laneOf(f: string): string; laneAudit(base?: string): string[] };

  test('the suffix chooses the lane', () => {
    expect(['a.real.test.ts', 'b.netns.test.ts', 'c.lib.test.ts', 'd.image.test.ts', 'e.test.ts', 'lib/test/f.netns.test.js'].map(lanes.laneOf))
      .toEqual(['real', 'netns', 'li' + 'b', 'image', 'unit', 'netns']);
  });

  test('every test file in the repository is named for the lane its contents need', () => {
    expect(lanes.laneAudit()).toEqual([]);
  });

  test('a file whose contents need another lane than its name says is named with the fix', () => {
    const base = fs.mkdtempSync(path.join(dir, 'lanes-'));
    fs.mkdirSync(path.join(base, 'test'));
    fs.mkdirSync(path.join(base, 'proxy', 'src', 'test'), { recursive: true });
    // the markers are put together here, so that this file's own text carries none of them
    const realImport = `import { startRealCluster } from './support/${'real'}-kube';\n`;
    fs.writeFileSync(path.join(base, 'test', 'wrong.test.ts'), realImport);
    fs.writeFileSync(path.join(base, 'test', 'right.real.test.ts'), realImport);
    fs.writeFileSync(path.join(base, 'test', 'plain.netns.test.ts'), "test('x', () => {});\n");
    fs.writeFileSync(path.join(base, 'proxy', 'src', 'test', 'p.test.ts'), `import { ${'Netns'}Lab } from '../testkit/${'netns'}';\n`);
    expect(lanes.laneAudit(base).sort()).toEqual([
      'proxy/src/test/p.test.ts: needs the netns lane, named for unit',
      'test/plain.netns.test.ts: needs the unit lane, named for netns',
      'test/wrong.test.ts: needs the real lane, named for unit',
    ]);
  });
});

describe('what a step costs and in which order its files run (issue 53: measure CPU, not wall; longest first)', () => {
  const order = require('../scripts/run-tests.js') as { slowFirst(files: string[], list: string[]): string[]; SLOW_FIRST: Record<string, string[]> };
  const jestBin = require.resolve('jest/bin/jest');
  const scripts = path.join(__dirname, '..', 'scripts');
  /** A fixture test file that appends its name to `log` and burns `iterations` of arithmetic, padded to `bytes`. */
  const fixture = (d: string, name: string, log: string, iterations: number, bytes = 0) => fs.writeFileSync(path.join(d, name), [
    `test('${name}', () => { require('fs').appendFileSync(${JSON.stringify(log)}, '${name}\\n'); let x = 0; for (let i = 0; i < ${iterations}; i++) x += i % 7; expect(x).toBeGreaterThanOrEqual(0); });`,
    `// ${'x'.repeat(bytes)}`,
  ].join('\n'));

  test('jest runs the files in the order named on its command line (scripts/jest-order.js), not by file size', () => {
    const d = fs.mkdtempSync(path.join(dir, 'order-'));
    const log = path.join(d, 'ran.log');
    // jest's own order with no cache is the largest file first: c, b, a
    fixture(d, 'a.test.js', log, 0, 10); fixture(d, 'b.test.js', log, 0, 2000); fixture(d, 'c.test.js', log, 0, 40_000);
    const r = spawnSync(process.execPath, [jestBin, '--config', JSON.stringify({ rootDir: d }), '--ci', '--runInBand', '--no-cache',
      `--testSequencer=${path.join(scripts, 'jest-order.js')}`, '--runTestsByPath', 'b.test.js', 'a.test.js', 'c.test.js'], { cwd: d, encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(0);
    expect(fs.readFileSync(log, 'utf8').trim().split('\n')).toEqual(['b.test.js', 'a.test.js', 'c.test.js']);
  }, 150_000);

  test('each test file\'s CPU seconds (scripts/jest-cpu-env.js) and the whole step\'s, children included (scripts/step-cpu.js)', () => {
    const d = fs.mkdtempSync(path.join(dir, 'cpu-'));
    const log = path.join(d, 'ran.log');
    const perFile = path.join(d, 'suites.cpu');
    const step = path.join(d, 'step.json');
    fixture(d, 'idle.test.js', log, 0);
    fixture(d, 'busy.test.js', log, 1_500_000_000);
    const r = spawnSync(process.execPath, [path.join(scripts, 'step-cpu.js'), step, process.execPath, jestBin, '--config', JSON.stringify({ rootDir: d }), '--ci',
      '--runInBand', `--testEnvironment=${path.join(scripts, 'jest-cpu-env.js')}`], { cwd: d, encoding: 'utf8', timeout: 120_000, env: { ...process.env, MM_SUITE_CPU_FILE: perFile } });
    expect(r.status).toBe(0);
    const suites = Object.fromEntries(fs.readFileSync(perFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).map((x) => [x.file, x.cpu]));
    expect(Object.keys(suites).sort()).toEqual(['busy.test.js', 'idle.test.js']);
    // the loop costs about 2 s of one core; the idle file a few hundredths
    expect(suites['busy.test.js']).toBeGreaterThan(0.5);
    expect(suites['idle.test.js']).toBeLessThan(suites['busy.test.js'] / 4);
    const { user, sys } = JSON.parse(fs.readFileSync(step, 'utf8'));
    expect(user + sys).toBeGreaterThan(suites['busy.test.js']); // jest (a child of step-cpu) with its files
  }, 150_000);

  test('step-cpu counts a grandchild\'s CPU and exits as its command did', () => {
    const out = path.join(dir, 'grandchild.json');
    const burn = `require('child_process').execFileSync(process.execPath, ['-e', 'let x = 0; for (let i = 0; i < 1e9; i++) x += i % 7'], { stdio: 'inherit' }); process.exit(3)`;
    const r = spawnSync(process.execPath, [path.join(scripts, 'step-cpu.js'), out, process.execPath, '-e', burn], { encoding: 'utf8', timeout: 120_000 });
    expect(r.status).toBe(3);
    const { user, sys } = JSON.parse(fs.readFileSync(out, 'utf8'));
    expect(user + sys).toBeGreaterThan(0.3);
  }, 150_000);

  test('the longest-first lists name files that exist, in their lane', () => {
    const root = path.join(__dirname, '..');
    const stems = (dirName: string, ext: string) => fs.readdirSync(path.join(root, dirName)).filter((f) => f.endsWith(ext)).map((f) => f.slice(0, -ext.length));
    const library = stems('test', '.test.ts');
    const proxy = stems(path.join('proxy', 'src', 'test'), '.test.ts');
    expect(order.SLOW_FIRST.real.filter((s) => !library.includes(s) || !s.endsWith('.real'))).toEqual([]);
    expect(order.SLOW_FIRST.unit.filter((s) => !library.includes(s) || /\.(real|netns|lib|image)$/.test(s))).toEqual([]);
    expect([...order.SLOW_FIRST.proxy, ...order.SLOW_FIRST.waiting].filter((s) => !proxy.includes(s))).toEqual([]);
    expect(order.slowFirst(['test/b.real.test.ts', 'test/z.real.test.ts', 'test/kubevirt.real.test.ts', 'test/a.real.test.ts'], ['kubevirt.real', 'z.real']))
      .toEqual(['test/kubevirt.real.test.ts', 'test/z.real.test.ts', 'test/a.real.test.ts', 'test/b.real.test.ts']);
  });
});
