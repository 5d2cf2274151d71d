/**
 * A second thread that creates the files of new (staged) directories while the main thread goes on
 * building and rendering the next cluster.
 *
 * Creating a file costs this machine about 0.3 ms of kernel time (ext4), half of synth's time at 100
 * clusters; done on the main thread it adds to the build, done here it overlaps it on a second core (on
 * one core it costs about what it did). Only files and directories inside a staging directory this write
 * created come here (nobody else can see or write there before the commit renames it), in the order queued,
 * so a directory exists before the files queued after it; files beside existing ones and the staging
 * directories themselves stay on the main thread. The main thread never waits on an event: it counts what it queued, and `drain` blocks on a
 * shared counter (Atomics) until the thread has written all of it, with a bound. A write that fails is
 * reported with its final path (as the synchronous path reports it) at the next `take` or at `drain`.
 *
 * Memory: at most `MAX_PENDING_BYTES` of content waits in the queue; beyond that `queue` waits for the
 * thread to catch up, so a fleet of any size holds a bounded amount.
 */
import { MessageChannel, MessagePort, Worker, receiveMessageOnPort } from 'worker_threads';

/**
 * What the thread runs: make each directory (size -1) and write each file ('wx': never over anything, its bytes
 * from the batch's one buffer of UTF-8) of a batch in order, count them, report failures.
 */
const THREAD = `
const { parentPort, workerData } = require('worker_threads');
const fs = require('fs');
const state = new Int32Array(workerData.state);
const errors = workerData.errors;
parentPort.on('message', (b) => {
  const data = Buffer.from(b.data);
  let at = 0;
  for (let i = 0; i < b.files.length; i++) {
    const [file, target] = b.files[i];
    const size = b.sizes[i];
    try {
      if (size < 0) fs.mkdirSync(file);
      else fs.writeFileSync(file, data.subarray(at, at + size), { flag: 'wx' });
    } catch (e) { errors.postMessage({ target, code: e.code, message: e.message }); }
    if (size > 0) at += size;
  }
  Atomics.sub(state, 1, b.chars);
  Atomics.add(state, 0, b.files.length);
  Atomics.notify(state, 0);
});
`;

/** Content queued and not yet written, at most (characters). */
export const MAX_PENDING_BYTES = 32 * 1024 * 1024;
/** Files sent to the thread together (fewer messages), or fewer at the end. */
const BATCH = 32;
/** How long `drain` waits for the thread without any progress before it gives up. */
const STALL_MS = 120_000;

/** A failed write the thread reported: the error's code and message, at the file's final path. */
export interface ThreadWriteError { target: string; code?: string; message: string }

export class FileWriterThread {
  private readonly state = new Int32Array(new SharedArrayBuffer(8)); // [files written, bytes pending]
  private readonly worker: Worker;
  private readonly errors: MessagePort;
  /** [path, final path, content: null for a directory] */
  private batch: [string, string, string | null][] = [];
  private batchChars = 0;
  private queued = 0;

  constructor() {
    const { port1, port2 } = new MessageChannel();
    this.errors = port1;
    this.worker = new Worker(THREAD, { eval: true, workerData: { state: this.state.buffer, errors: port2 }, transferList: [port2] });
    this.worker.unref();
  }

  /** Write `content` into `file` (a new path inside a staging directory); `target` names it in errors. */
  queue(file: string, target: string, content: string): void {
    this.batch.push([file, target, content]);
    this.batchChars += content.length;
    Atomics.add(this.state, 1, content.length);
    if (this.batch.length >= BATCH) this.send();
    while (Atomics.load(this.state, 1) > MAX_PENDING_BYTES) this.waitForProgress();
  }

  /**
   * Make directory `dir` (a new path inside a staging directory) before anything queued after it; `target`
   * names it in errors. The thread works in order, so files queued after it go into it.
   */
  mkdir(dir: string, target: string): void {
    this.batch.push([dir, target, null]);
    if (this.batch.length >= BATCH) this.send();
  }

  /** The first failure reported so far, if any (does not wait). */
  take(): ThreadWriteError | undefined {
    const m = receiveMessageOnPort(this.errors);
    return m ? m.message as ThreadWriteError : undefined;
  }

  /** Wait until every queued file is written; returns the first failure, if any. */
  drain(): ThreadWriteError | undefined {
    this.send();
    while (Atomics.load(this.state, 0) < this.queued) this.waitForProgress();
    return this.take();
  }

  /** Wait for what is queued, then end the thread (the process need not wait for it); returns the first failure, if any. */
  close(): ThreadWriteError | undefined {
    try { return this.drain(); } finally {
      this.errors.close();
      void this.worker.terminate();
    }
  }

  /**
   * The batch to the thread: its contents encoded into one buffer whose memory is moved, not copied (cloning the
   * strings cost the main thread about 20 µs per file, 28 ms at 100 clusters; encoding ASCII costs a tenth of that).
   */
  private send(): void {
    if (!this.batch.length) return;
    const sizes = this.batch.map(([, , content]) => (content === null ? -1 : Buffer.byteLength(content, 'utf8')));
    const data = Buffer.allocUnsafeSlow(sizes.reduce((a, b) => a + Math.max(b, 0), 0)); // its own ArrayBuffer (not the pool's): transferable
    let at = 0;
    for (const [, , content] of this.batch) if (content !== null) at += data.write(content, at, 'utf8');
    this.queued += this.batch.length;
    this.worker.postMessage({ files: this.batch.map(([file, target]) => [file, target]), sizes, data: data.buffer, chars: this.batchChars }, [data.buffer]);
    this.batch = [];
    this.batchChars = 0;
  }

  private waitForProgress(): void {
    this.send();
    const seen = Atomics.load(this.state, 0);
    if (seen >= this.queued) return;
    if (Atomics.wait(this.state, 0, seen, STALL_MS) === 'timed-out') {
      throw Object.assign(new Error(`the file writer thread made no progress in ${STALL_MS / 1000} s`), { code: 'ETIMEDOUT' });
    }
  }
}
