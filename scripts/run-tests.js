#!/usr/bin/env node
// `npm test`: runs every suite whatever the result of the others, so one failing suite never hides another's
// results, in three lanes:
//   - library (jest): every jest suite but the image test, one after another (jest's one worker on 2 cores;
//     the network-namespace suites among them never overlap each other),
//   - image (jest): test/image.test.ts alone. Its cold start (stand-in bases, podman build) waits mostly on
//     downloads and disk, so it overlaps the CPU-bound lanes instead of following them,
//   - proxy (node:test): the proxy's suites, one file at a time.
// The lanes share no network namespace or port: namespaces are named per process (mm<pid>-, mmimg<pid>,
// mmp<random>- for the proxy's testkit, which the library's stale-namespace reaper never matches), fixed ports
// are bound only inside those namespaces, and only the image lane runs podman. Each lane's output goes to a
// file and is printed whole when the lane ends (no interleaved lines).
// By default the image lane runs beside the other two, which run one after the other: both hold network-namespace
// suites whose setup hooks have fixed time budgets, and on a loaded 2-core machine (load average 17+) running them
// side by side made those hooks time out. MM_TEST_LANES=all runs all three at once; MM_TEST_SERIAL=1 runs the lanes one
// after another instead. Arguments are passed to jest; with arguments there is one jest lane (no image lane).
// Ends with one summary line per lane, the slowest ten tests and suites, and the combined closing line
// "N passed, N failed" (N counts tests, not suites). Exit code: non-zero when any test failed or a runner
// could not run at all.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const root = path.resolve(__dirname, '..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-tests-'));
const extra = process.argv.slice(2);
const serial = process.env.MM_TEST_SERIAL === '1';
const allAtOnce = process.env.MM_TEST_LANES === 'all';
const IMAGE_TEST = 'test/image\\.test\\.ts$';

/** Runs one lane's command with its output in a file; resolves with exit status, output and seconds. */
function run(name, cmd, args, cwd) {
  const logFile = path.join(tmp, `${name.replace(/\W+/g, '-')}.log`);
  const fd = fs.openSync(logFile, 'w');
  const t0 = Date.now();
  console.log(`[run-tests] ${name}: started`);
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, stdio: ['ignore', fd, fd] });
    const done = (status) => {
      fs.closeSync(fd);
      const seconds = (Date.now() - t0) / 1000;
      console.log(`\n[run-tests] ===== ${name}: ended (exit ${status}) after ${seconds.toFixed(0)} s =====`);
      process.stdout.write(fs.readFileSync(logFile, 'utf8'));
      resolve({ status, seconds });
    };
    child.on('error', (e) => { fs.writeSync(fd, `[run-tests] could not start ${cmd}: ${e.message}\n`); done(-1); });
    child.on('exit', (code, signal) => done(code ?? (signal ? 128 : -1)));
  });
}

/** A jest lane, with a JSON result file so counts and times come from jest itself, not from its text. */
async function jestLane(name, args) {
  const out = path.join(tmp, `${name.replace(/\W+/g, '-')}.json`);
  const r = await run(name, 'npx', ['jest', '--json', '--forceExit', `--outputFile=${out}`, ...args], root);
  let passed = 0; let failed = 0; let ok = false; const tests = []; const suites = [];
  try {
    const j = JSON.parse(fs.readFileSync(out, 'utf8'));
    passed = j.numPassedTests; failed = j.numFailedTests + j.numRuntimeErrorTestSuites;
    ok = r.status === 0 && failed === 0;
    for (const s of j.testResults) {
      const file = path.relative(root, s.name);
      const ms = s.perfStats && s.perfStats.end ? s.perfStats.end - s.perfStats.start : (s.endTime || 0) - (s.startTime || 0);
      suites.push({ name: file, ms });
      for (const a of s.assertionResults) tests.push({ name: `${file}: ${a.fullName}`, ms: a.duration || 0 });
    }
  } catch (e) {
    failed = 1; // jest did not even write its result: count the runner as one failure
    console.error(`[run-tests] ${name}: jest wrote no result (${e.message}); exit ${r.status}`);
  }
  return { name, passed, failed, ok, status: r.status, seconds: r.seconds, tests, suites };
}

/** Leaf tests of node:test's TAP output with their durations ("parent > child" names). */
function tapTests(t) {
  const stack = []; const tests = [];
  const lines = t.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const sub = /^(\s*)# Subtest: (.*)$/.exec(lines[i]);
    if (sub) { stack.length = sub[1].length / 4; stack.push(sub[2]); continue; }
    const res = /^(\s*)(?:not )?ok \d+ - /.exec(lines[i]);
    if (!res) continue;
    const depth = res[1].length / 4;
    let ms = 0; let suite = false;
    for (let k = i + 1; k < lines.length && !/^\s*\.\.\.$/.test(lines[k]); k++) {
      const d = /duration_ms: ([\d.]+)/.exec(lines[k]);
      if (d) ms = Number(d[1]);
      if (/type: 'suite'/.test(lines[k])) suite = true;
    }
    if (!suite) tests.push({ name: `proxy: ${stack.slice(0, depth + 1).join(' > ')}`, ms });
  }
  return tests;
}

/** node --test (proxy), reporter output teed: spec for people, tap for the counts and times. */
async function proxyLane() {
  const name = 'proxy (node:test)';
  const tap = path.join(tmp, 'proxy.tap');
  const r = await run(name, 'node', ['--test', '--test-concurrency=1', '--test-reporter=spec', '--test-reporter-destination=stdout',
    '--test-reporter=tap', `--test-reporter-destination=${tap}`, 'lib/test/'], path.join(root, 'proxy'));
  let passed = 0; let failed = 0; let tests = [];
  try {
    const t = fs.readFileSync(tap, 'utf8');
    passed = Number((/^# pass (\d+)/m.exec(t) || [])[1] || 0);
    failed = Number((/^# fail (\d+)/m.exec(t) || [])[1] || 0) + Number((/^# cancelled (\d+)/m.exec(t) || [])[1] || 0);
    tests = tapTests(t);
  } catch (e) {
    failed = 1;
    console.error(`[run-tests] node --test wrote no result (${e.message}); exit ${r.status}`);
  }
  if (r.status !== 0 && failed === 0) failed = 1; // a crash outside any test still fails the run
  return { name, passed, failed, ok: r.status === 0 && failed === 0, status: r.status, seconds: r.seconds, tests, suites: [] };
}

async function main() {
  const t0 = Date.now();
  const lanes = extra.length > 0
    ? [() => jestLane('library (jest)', extra), proxyLane]
    : [() => jestLane('image (jest)', [IMAGE_TEST]),
      () => jestLane('library (jest)', [`--testPathIgnorePatterns=${IMAGE_TEST}`]), proxyLane];
  let results = [];
  const inTurn = async (ls) => { const rs = []; for (const lane of ls) rs.push(await lane()); return rs; };
  if (serial || lanes.length < 3) results = await inTurn(lanes);
  else if (allAtOnce) results = await Promise.all(lanes.map((lane) => lane()));
  else results = (await Promise.all([inTurn([lanes[0]]), inTurn(lanes.slice(1))])).flat();

  const fmt = (ms) => `${(ms / 1000).toFixed(1).padStart(6)} s`;
  const top = (xs) => xs.slice().sort((a, b) => b.ms - a.ms).slice(0, 10);
  console.log('\n[run-tests] slowest ten tests (the test body; hooks such as beforeAll count to the suite)');
  for (const t of top(results.flatMap((x) => x.tests))) console.log(`  ${fmt(t.ms)}  ${t.name}`);
  console.log('[run-tests] slowest ten jest suites (whole file, hooks included)');
  for (const s of top(results.flatMap((x) => x.suites))) console.log(`  ${fmt(s.ms)}  ${s.name}`);
  console.log(`\n[run-tests] summary (${serial || lanes.length < 3 ? 'lanes one after another' : allAtOnce ? 'lanes at once' : 'image lane beside the other two in turn'}, ${((Date.now() - t0) / 1000).toFixed(0)} s in all)`);
  for (const x of results) {
    console.log(`  ${x.ok ? 'ok  ' : 'FAIL'} ${x.name}: ${x.passed} passed, ${x.failed} failed (exit ${x.status}, ${x.seconds.toFixed(0)} s)`);
  }
  const passed = results.reduce((a, x) => a + x.passed, 0);
  const failed = results.reduce((a, x) => a + x.failed, 0);
  fs.rmSync(tmp, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(results.every((x) => x.ok) ? 0 : 1);
}

main();
