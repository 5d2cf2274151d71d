/**
 * The VM lab's HMP client (test/support/qemu-guest.ts) against a monitor that answers as QEMU's does (each command's
 * output, then the `(qemu) ` prompt, in order) but late: a busy target QEMU on a loaded machine answered `info
 * migrate` after the lab's 5 s timeout, and the next command read that late answer as its own (in CI the lab then
 * took a live target for gone). Unix sockets only.
 */
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { Hmp } from './support/qemu-guest';

/** A monitor answering each command `c` with `answer to c`, after the delay `delays[c]` (ms). */
function fakeMonitor(file: string, delays: Record<string, number>): net.Server {
  return net.createServer((s) => {
    s.write('QEMU 10.0.2 monitor - type \'help\' for more information\r\n(qemu) ');
    let buf = '';
    let queue = Promise.resolve();
    s.on('data', (d) => {
      buf += d.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i).trim();
        buf = buf.slice(i + 1);
        // in order, as HMP does: a command is answered only after the one before it
        queue = queue.then(() => new Promise((r) => setTimeout(() => { if (!s.destroyed) s.write(`${line}\r\nanswer to ${line}\r\n(qemu) `); r(); }, delays[line] ?? 0)));
      }
    });
  }).listen(file);
}

let dir: string;
beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-hmp-')); });
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

test('a command that timed out does not hand its late answer to the next one', async () => {
  const server = fakeMonitor(path.join(dir, 'm.sock'), { slow: 400 });
  const hmp = new Hmp(path.join(dir, 'm.sock'));
  try {
    await hmp.connect(20_000);
    await expect(hmp.cmd('slow', 100)).rejects.toThrow(/no prompt after 100 ms/);
    expect(hmp.isClosed).toBe(false);
    expect(await hmp.cmd('fast', 20_000)).toBe('answer to fast');
    expect(await hmp.cmd('info migrate', 20_000)).toBe('answer to info migrate');
  } finally {
    hmp.close();
    server.close();
  }
});

test('a monitor QEMU closed fails the waiting command at once and says so', async () => {
  const file = path.join(dir, 'm.sock');
  const sockets: net.Socket[] = [];
  const server = fakeMonitor(file, { hang: 60_000 }).on('connection', (s) => sockets.push(s));
  const hmp = new Hmp(file);
  try {
    await hmp.connect(20_000);
    const pending = hmp.cmd('hang', 30_000);
    setTimeout(() => sockets.forEach((s) => s.destroy()), 50);
    // the close, not the 30 s timeout, ends it: the error says which
    await expect(pending).rejects.toThrow(/closed by QEMU/);
    expect(hmp.isClosed).toBe(true);
  } finally {
    hmp.close();
    server.close();
  }
});
