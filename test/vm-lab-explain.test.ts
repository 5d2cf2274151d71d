/**
 * When a migration step times out on a QEMU's monitor, the VM lab names the QEMU that does not answer, not always
 * the source: a CI run (two CPU hogs) reported "the source QEMU does not answer its monitor" with the source's
 * threads, idle in the main loop, when it was the new target that had not answered `object_add` for 30 s, and its
 * threads were never read. Shown on two real QEMUs (no guest: `-machine none`), one of them stopped (SIGSTOP).
 */
import { spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { Hmp, QEMU, qemuSupport } from './support/qemu-guest';
import { explainQemu, type QemuProcess } from './support/vm-lab';
import { suiteTmpDir } from './support/tmp';

const support = qemuSupport();
const d = support.ok ? describe : describe.skip;
if (!support.ok) console.warn(`[vm-lab-explain] SKIPPED: ${support.reason}`);

const started: ChildProcess[] = [];
afterAll(() => { for (const p of started) p.kill('SIGKILL'); });

async function qemu(dir: string, name: string): Promise<QemuProcess> {
  const qlog = path.join(dir, `${name}.log`);
  const mon = path.join(dir, `${name}.mon`);
  const proc = spawn(QEMU, ['-machine', 'none', '-display', 'none', '-nodefaults', '-S', '-monitor', `unix:${mon},server,nowait`],
    { stdio: ['ignore', 'ignore', fs.openSync(qlog, 'w')] });
  started.push(proc);
  const hmp = new Hmp(mon);
  await hmp.connect(20_000);
  return { proc, hmp, qlog };
}

d('the VM lab explains a monitor that does not answer', () => {
  test('a stopped target is named as the target, with its state, its CPU and its threads; a step on the source names the source', async () => {
    const dir = suiteTmpDir('mm-vm-explain-');
    const src = await qemu(dir, 'src');
    const dst = await qemu(dir, 'dst');
    try {
      dst.proc.kill('SIGSTOP');
      const timedOut = await dst.hmp.cmd('info status', 500).then(() => undefined, (e: Error) => e);
      expect(timedOut?.message).toMatch(/no prompt after 500 ms/);
      const explained = await explainQemu(src, timedOut!, dst);
      expect(explained.message).toMatch(/^the target QEMU does not answer its monitor: monitor .*dst\.mon: no prompt after 500 ms/);
      expect(explained.message).toMatch(/\nstate T, 0 ms of CPU in the last second/);
      expect(explained.message).toContain(`QEMU ${dst.proc.pid} threads:`);
      expect(explained.message).not.toContain(`QEMU ${src.proc.pid} threads:`);

      src.proc.kill('SIGSTOP');
      const onSource = await src.hmp.cmd('info status', 500).then(() => undefined, (e: Error) => e);
      expect((await explainQemu(src, onSource!, dst)).message).toMatch(/^the source QEMU does not answer its monitor: monitor .*src\.mon/);
    } finally {
      for (const q of [src, dst]) { q.hmp.close(); q.proc.kill('SIGKILL'); }
    }
  }, 120_000);
});
