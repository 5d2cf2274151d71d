/**
 * Reading one input file (a fleet, a ledger, a moves file, a context map or kubeconfig, a generated
 * file read back) whatever the path turns out to be, in bounded size and time (issue #39):
 *
 * - a regular file larger than the cap is refused from its size, before it is read; any other file is
 *   read in chunks and cut off at the cap + 1 byte, so /dev/zero, /dev/urandom or a block device cannot
 *   make the CLI read for good (a /proc file, whose stat says 0 bytes, is read to its end);
 * - it is opened non-blocking: a FIFO with no writer no longer blocks in open(). A FIFO or pipe is read as
 *   its writer sends, and given up on with `file-stalled` when nothing arrives within `noWriterMs` (no
 *   writer), when its writer goes silent for `idleMs` without closing it, or after `totalMs` in all.
 *   Pipes are read rather than refused, since `validate <(git show HEAD:prod.fleet.yaml)` is a pipe;
 * - a socket or a directory is refused at once, with what it is.
 *
 * Every refusal carries its code and names the file. The planning side's only file reader (src/fleet/load.ts
 * and src/forklift/moves.ts read through it); the bytes go on to src/base/yaml-input.ts.
 */
import * as fs from 'fs';
import { FleetValidationError, MigrationMeshError } from './errors';
import { ProblemCode } from './problem-codes';
import { MAX_INPUT_BYTES, decodeInput } from './yaml-input';

/** How long a FIFO, pipe or device input is waited for. */
export interface InputWait {
  /** Nothing read and no writer (a FIFO nobody opened for writing). */
  readonly noWriterMs: number;
  /** A writer holds it open and sends nothing. */
  readonly idleMs: number;
  /** The whole read. */
  readonly totalMs: number;
}

/**
 * The CLI's bounds. 3 s covers a writer started right after migration-mesh (`validate f & cat x > f`);
 * a writer that is there but slow (`<(kubectl get ... | yq ...)`) gets 30 s between two chunks.
 */
const INPUT_WAIT: InputWait = { noWriterMs: 3000, idleMs: 30_000, totalMs: 120_000 };

const CHUNK = 64 * 1024;
const POLL_MS = 10;
const SLEEPER = new Int32Array(new SharedArrayBuffer(4));
const sleep = (ms: number): void => { Atomics.wait(SLEEPER, 0, 0, ms); };
const seconds = (ms: number): string => `${Number((ms / 1000).toFixed(1))} s`;

function kindOf(st: fs.Stats): string {
  if (st.isCharacterDevice()) return 'character device';
  if (st.isBlockDevice()) return 'block device';
  if (st.isFIFO()) return 'FIFO (or pipe)';
  return 'file';
}

/**
 * The bytes of `file`. `what` names the kind of input in messages (`fleet file`, `ledger`, ...); `at`
 * is the problems' path (the fleet's problems sit at `(document)`, another input's at its file).
 */
export function readInputBytes(file: string, what: string, at?: string, wait: InputWait = INPUT_WAIT): Uint8Array {
  const docPath = at ?? '(document)';
  const refuse = (code: ProblemCode, message: string, fix: string): never => {
    throw new FleetValidationError([{ code, path: docPath, message, fix }], file, what);
  };
  const unreadable = (why: string, fix: string): never => {
    const message = `cannot read ${what} ${file}: ${why}`;
    throw new MigrationMeshError(message, [{ code: 'file-unreadable', path: file, message, fix }]);
  };
  const itself = `give the path of the ${what} itself`;
  let st: fs.Stats;
  try { st = fs.statSync(file); } catch (e) { return unreadable((e as Error).message, 'check the path and its permissions'); }
  if (st.isDirectory()) unreadable('it is a directory', `give the ${what} in it`);
  if (st.isSocket()) unreadable('it is a Unix socket, not a file', itself);
  if (st.isFile() && st.size > MAX_INPUT_BYTES) {
    refuse('file-too-large', `the file has ${st.size} bytes; inputs are limited to ${MAX_INPUT_BYTES} (4 MiB)`,
      'check that this is the right file (a fleet or ledger is a few KiB); split a huge fleet into several fleets');
  }
  let fd: number;
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | (fs.constants.O_NONBLOCK ?? 0) | (fs.constants.O_NOCTTY ?? 0));
  } catch (e) {
    return unreadable((e as Error).message, 'check the path and its permissions');
  }
  try {
    // what was opened, not what the path named a moment before
    const opened = fs.fstatSync(fd);
    if (opened.isDirectory()) unreadable('it is a directory', `give the ${what} in it`);
    const regular = opened.isFile();
    const fifo = opened.isFIFO();
    const chunks: Buffer[] = [];
    let total = 0;
    const start = Date.now();
    let lastData = start;
    while (total <= MAX_INPUT_BYTES) {
      const buf = Buffer.allocUnsafe(Math.min(CHUNK, MAX_INPUT_BYTES + 1 - total));
      let n: number;
      try {
        n = fs.readSync(fd, buf, 0, buf.length, null);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        if (code !== 'EAGAIN' && code !== 'EWOULDBLOCK') return unreadable((e as Error).message, 'check the path and its permissions');
        n = -1; // a writer holds it open, nothing to read yet
      }
      // 0: the end; but on a FIFO with nothing read yet, only that no one has opened it for writing (yet)
      const ended = n === 0 && (regular || !fifo || total > 0);
      if (ended) break;
      if (n > 0) {
        chunks.push(buf.subarray(0, n));
        total += n;
        lastData = Date.now();
        if (regular || lastData - start < wait.totalMs) continue;
      }
      const now = Date.now();
      if (n === 0 && now - start >= wait.noWriterMs) {
        refuse('file-stalled', `the ${what} is a FIFO (or pipe) and nothing was written to it within ${seconds(wait.noWriterMs)}: no process has it open for writing, or its writer closed it without writing`,
          `start what writes it before or right after migration-mesh (e.g. \`cat prod.fleet.yaml > ${file} &\`), or ${itself}`);
      }
      if (n < 0 && now - lastData >= wait.idleMs) {
        refuse('file-stalled', `the ${what} is a ${kindOf(opened)} whose writer sent ${total} bytes, then nothing for ${seconds(wait.idleMs)} without closing it`,
          `check the process writing to it (it must close the pipe when it is done), or ${itself}`);
      }
      if (now - start >= wait.totalMs) {
        refuse('file-stalled', `the ${what} is a ${kindOf(opened)} still being written after ${seconds(wait.totalMs)} (${total} bytes so far)`,
          `check the process writing to it, or ${itself}`);
      }
      sleep(POLL_MS);
    }
    if (total > MAX_INPUT_BYTES) {
      refuse('file-too-large', `the ${what} is a ${kindOf(opened)} that gave more than ${MAX_INPUT_BYTES} bytes; inputs are limited to ${MAX_INPUT_BYTES} (4 MiB)`,
        opened.isCharacterDevice() ? `${itself}: a device such as /dev/zero or /dev/urandom never ends` : `check what it holds: a ${what} is a few KiB; or ${itself}`);
    }
    return Buffer.concat(chunks, total);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * A file's text: readInputBytes, then UTF-8 (refused with `file-encoding` otherwise). `what` names the
 * kind of input in messages and in the refusal's headline; a fleet's problems sit at `(document)`,
 * another input's at its file.
 */
export function readInputText(file: string, what = 'fleet file'): string {
  const at = what === 'fleet file' ? undefined : file;
  return decodeInput(readInputBytes(file, what, at), file, at, what);
}
