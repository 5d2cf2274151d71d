// The jest test environment of `npm test` (scripts/run-tests.js passes it with --testEnvironment): jest's node
// environment, which also appends one line per test file to the file named by MM_SUITE_CPU_FILE: the file's path
// and the CPU seconds (user + sys) its worker process spent from the environment's setup to its teardown, its own
// and that of every process it started and waited for (an API server, etcd, tsc, npm). So the runner can tell what
// each suite costs the machine, not only how long it took on a loaded one (issue 53). Without the variable it is
// jest's node environment and nothing more.
'use strict';
const fs = require('fs');
const path = require('path');
const NodeEnvironment = require('jest-environment-node').TestEnvironment;

/** CPU seconds of this process and of its waited-for children (/proc/self/stat fields 14-17, in clock ticks). */
function cpuSeconds() {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ').map(Number); // from field 3 (state) on
  return (f[11] + f[12] + f[13] + f[14]) / 100; // USER_HZ is 100 on every Linux architecture Node runs on
}

class CpuEnvironment extends NodeEnvironment {
  constructor(config, context) {
    super(config, context);
    this.file = path.relative(config.globalConfig.rootDir, context.testPath);
  }

  async setup() {
    this.cpu0 = cpuSeconds();
    await super.setup();
  }

  async teardown() {
    await super.teardown();
    const out = process.env.MM_SUITE_CPU_FILE;
    if (out) fs.appendFileSync(out, `${JSON.stringify({ file: this.file, cpu: cpuSeconds() - this.cpu0 })}\n`);
  }
}

module.exports = CpuEnvironment;
