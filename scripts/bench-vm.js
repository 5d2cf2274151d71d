#!/usr/bin/env node
/**
 * `npm run bench:vm [-- --vms N]`: bench/vm-migration.bench.ts under jest, holding /tmp/mm-net.lock (beside other
 * network tests). `--vms N` (or MM_BENCH_VMS; default 4): how many guests migrate at once. Jest takes no options of
 * its own here, so the count travels as MM_BENCH_VMS.
 */
'use strict';
const { spawnSync } = require('child_process');
const path = require('path');

const args = process.argv.slice(2);
const env = { ...process.env };
for (let i = 0; i < args.length; i++) {
  const m = /^--vms(?:=(.*))?$/.exec(args[i]);
  if (!m) { console.error(`bench:vm: unknown argument ${args[i]} (known: --vms N)`); process.exit(2); }
  env.MM_BENCH_VMS = m[1] ?? args[++i];
  if (!/^[1-9]\d*$/.test(env.MM_BENCH_VMS ?? '')) { console.error(`bench:vm: --vms takes a whole number >= 1, not ${env.MM_BENCH_VMS}`); process.exit(2); }
}
const config = JSON.stringify({ preset: 'ts-jest', testEnvironment: 'node', roots: ['<rootDir>/bench'], testMatch: ['**/*.bench.ts'] });
const jest = path.join(__dirname, '..', 'node_modules', '.bin', 'jest');
const r = spawnSync('flock', ['/tmp/mm-net.lock', jest, '--config', config, '--runInBand', '--forceExit'], { stdio: 'inherit', env, cwd: path.join(__dirname, '..') });
process.exit(r.status ?? 1);
