#!/usr/bin/env node
// `node scripts/step-cpu.js OUT.json CMD ARGS...`: runs CMD with this process's stdio and, when it has exited,
// writes to OUT.json the CPU seconds (user, sys) of CMD and of every process under it that was waited for
// (the kernel's cutime/cstime of this process, /proc/self/stat): what one step of `npm test` cost the machine,
// whatever else was running (scripts/run-tests.js prints it beside the step's wall time, issue 53: on a shared
// 2-core machine the wall time says how loaded it was, the CPU time what the step costs). A process left
// running when its parent died (reparented to init) is not counted; the harnesses stop what they start.
// Exits as CMD did (a signal's death as 128 + its number).
'use strict';
const { spawn } = require('child_process');
const fs = require('fs');
const os = require('os');

const [out, cmd, ...args] = process.argv.slice(2);

/** user and sys CPU seconds of this process's waited-for descendants (fields 16 and 17 of /proc/self/stat, in clock ticks). */
function childrenCpu() {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from field 3 (state) on
  const tick = 100; // USER_HZ: 100 on every Linux architecture Node runs on (sysconf(_SC_CLK_TCK))
  return { user: Number(fields[13]) / tick, sys: Number(fields[14]) / tick };
}

const child = spawn(cmd, args, { stdio: 'inherit' });
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => child.kill(sig));
child.on('error', (e) => { console.error(`[step-cpu] could not start ${cmd}: ${e.message}`); process.exit(127); });
child.on('exit', (code, signal) => {
  try { fs.writeFileSync(out, JSON.stringify(childrenCpu())); } catch (e) { console.error(`[step-cpu] ${e.message}`); }
  process.exit(code ?? 128 + (os.constants.signals[signal] ?? 0));
});
