#!/usr/bin/env node
// `npm test`: runs every suite (the library's jest suites, then the proxy's node:test suites) whatever
// the result of the one before, so one failing suite never hides another's results. Prints each
// runner's own output, then one summary line per runner and the combined closing line
// "N passed, N failed" (N counts tests, not suites). Exit code: non-zero when any test failed or a
// runner could not run at all.
'use strict';
const { spawnSync } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const root = path.resolve(__dirname, '..');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-tests-'));
const extra = process.argv.slice(2);

/** jest, with a JSON result file so the counts come from jest itself, not from parsing its text. */
function runJest() {
  const out = path.join(tmp, 'jest.json');
  const r = spawnSync('npx', ['jest', '--json', `--outputFile=${out}`, ...extra], { cwd: root, stdio: 'inherit' });
  let passed = 0; let failed = 0; let ok = false;
  try {
    const j = JSON.parse(fs.readFileSync(out, 'utf8'));
    passed = j.numPassedTests; failed = j.numFailedTests + j.numRuntimeErrorTestSuites;
    ok = r.status === 0 && failed === 0;
  } catch (e) {
    failed = 1; // jest did not even write its result: count the runner as one failure
    console.error(`[run-tests] jest wrote no result (${e.message}); exit ${r.status}`);
  }
  return { name: 'library (jest)', passed, failed, ok, status: r.status };
}

/** node --test (proxy), reporter output teed: spec for people, tap counts for the summary. */
function runProxy() {
  const tap = path.join(tmp, 'proxy.tap');
  const r = spawnSync('node', ['--test', '--test-concurrency=1', '--test-reporter=spec', '--test-reporter-destination=stdout',
    '--test-reporter=tap', `--test-reporter-destination=${tap}`, 'lib/test/'], { cwd: path.join(root, 'proxy'), stdio: 'inherit' });
  let passed = 0; let failed = 0;
  try {
    const t = fs.readFileSync(tap, 'utf8');
    passed = Number((/^# pass (\d+)/m.exec(t) || [])[1] || 0);
    failed = Number((/^# fail (\d+)/m.exec(t) || [])[1] || 0) + Number((/^# cancelled (\d+)/m.exec(t) || [])[1] || 0);
  } catch (e) {
    failed = 1;
    console.error(`[run-tests] node --test wrote no result (${e.message}); exit ${r.status}`);
  }
  if (r.status !== 0 && failed === 0) failed = 1; // a crash outside any test still fails the run
  return { name: 'proxy (node:test)', passed, failed, ok: r.status === 0 && failed === 0, status: r.status };
}

const results = [runJest(), runProxy()];
console.log('\n[run-tests] summary');
for (const x of results) console.log(`  ${x.ok ? 'ok  ' : 'FAIL'} ${x.name}: ${x.passed} passed, ${x.failed} failed (exit ${x.status})`);
const passed = results.reduce((a, x) => a + x.passed, 0);
const failed = results.reduce((a, x) => a + x.failed, 0);
fs.rmSync(tmp, { recursive: true, force: true });
console.log(`${passed} passed, ${failed} failed`);
process.exit(results.every((x) => x.ok) ? 0 : 1);
