/**
 * Preloaded (`node -r`) into the built CLI by test/interrupt.test.ts: counts the file system calls that
 * change something (in the writer, its lock and journal) and, at call number MM_KILL_AT, sends this
 * process MM_KILL_SIGNAL just before making it: an interrupt at an exact, reproducible instant of the
 * write. With MM_KILL_COUNT=FILE it only counts, and writes the total to FILE at exit.
 */
const fs = require('fs');

const at = Number(process.env.MM_KILL_AT ?? -1);
const signal = process.env.MM_KILL_SIGNAL ?? 'SIGTERM';
const countFile = process.env.MM_KILL_COUNT;
let n = 0;
for (const name of ['writeFileSync', 'renameSync', 'linkSync', 'unlinkSync', 'mkdirSync', 'rmdirSync', 'openSync', 'writeSync', 'fsyncSync']) {
  const real = fs[name];
  fs[name] = function (...args) {
    n++;
    if (n === at) process.kill(process.pid, signal);
    return real.apply(this, args);
  };
}
if (countFile) process.on('exit', () => fs.writeFileSync(countFile, String(n)));
