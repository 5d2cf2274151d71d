/**
 * Preloaded (`node -r`) into the built CLI by test/interrupt.lib.test.ts: counts the file system calls that
 * change something (in the writer, its lock and journal) and, at call number MM_KILL_AT, sends this
 * process MM_KILL_SIGNAL just before making it: an interrupt at an exact, reproducible instant of the
 * write. With MM_KILL_COUNT=FILE it only counts, and writes the total to FILE at exit. With
 * MM_PAUSE_AT=N and MM_PAUSE_FILE=FILE it creates FILE before call N and waits (at most 60 s) until the
 * test removes it: a writer held at an exact point, for test/concurrent-writers.lib.test.ts.
 */
const fs = require('fs');

const at = Number(process.env.MM_KILL_AT ?? -1);
const signal = process.env.MM_KILL_SIGNAL ?? 'SIGTERM';
const countFile = process.env.MM_KILL_COUNT;
const pauseAt = Number(process.env.MM_PAUSE_AT ?? -1);
const pauseFile = process.env.MM_PAUSE_FILE;
let n = 0;
// numeric flags count as a read when the access mode is read-only and nothing is created or truncated (the input
// reader opens with O_RDONLY | O_NONBLOCK | O_NOCTTY: src/base/input-file.ts)
const { O_RDONLY, O_CREAT, O_TRUNC } = fs.constants;
const readOnly = (flags) => flags === undefined || flags === 'r' || flags === 'rs'
  || (typeof flags === 'number' && (flags & 3) === O_RDONLY && (flags & (O_CREAT | O_TRUNC)) === 0);
const realWrite = fs.writeFileSync;
const realExists = fs.existsSync;
function pause() {
  realWrite(pauseFile, String(process.pid));
  const cell = new Int32Array(new SharedArrayBuffer(4));
  for (let i = 0; i < 600 && realExists(pauseFile); i++) Atomics.wait(cell, 0, 0, 100);
}
for (const name of ['writeFileSync', 'renameSync', 'linkSync', 'unlinkSync', 'mkdirSync', 'rmdirSync', 'openSync', 'writeSync', 'fsyncSync']) {
  const real = fs[name];
  fs[name] = function (...args) {
    // opening a file to read it (the fleet, the ledger) changes nothing: only writes are interrupt points
    if (name === 'openSync' && readOnly(args[1])) return real.apply(this, args);
    n++;
    if (n === at) process.kill(process.pid, signal);
    if (n === pauseAt && pauseFile) pause();
    return real.apply(this, args);
  };
}
if (countFile) process.on('exit', () => fs.writeFileSync(countFile, String(n)));
