/**
 * Two things the VM lab does with QEMU's monitor, on real QEMUs (no guest: `-machine none`):
 *   - when a migration step times out on a monitor, the lab names the QEMU that does not answer, not always the
 *     source: a CI run (two CPU hogs) reported "the source QEMU does not answer its monitor" with the source's
 *     threads, idle in the main loop, when it was the new target that had not answered `object_add` of its TLS
 *     server credentials for 30 s, and its threads were never read. Shown with one QEMU stopped (SIGSTOP);
 *   - the target's TLS server credentials load DH parameters from the lab's dh-params.pem instead of generating
 *     them in QEMU's main loop (writeTlsCreds in test/support/qemu-guest.ts: 50-1150 ms of CPU per object_add
 *     without it, the monitor silent meanwhile). Told by QEMU's own trace event `qcrypto_tls_creds_load_dh`, which
 *     names the file or says `<generated>`.
 */
import { spawn, type ChildProcess } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { Hmp, QEMU, issueHandlerCert, makeClusterCa, qemuSupport, writeTlsCreds } from './support/qemu-guest';
import { explainQemu, type QemuProcess } from './support/vm-lab';
import { suiteTmpDir } from './support/tmp';

const support = qemuSupport();
const d = support.ok ? describe : describe.skip;
if (!support.ok) console.warn(`[vm-lab-explain] SKIPPED: ${support.reason}`);

const started: ChildProcess[] = [];
afterAll(() => { for (const p of started) p.kill('SIGKILL'); });

async function qemu(dir: string, name: string, extra: string[] = []): Promise<QemuProcess> {
  const qlog = path.join(dir, `${name}.log`);
  const mon = path.join(dir, `${name}.mon`);
  const proc = spawn(QEMU, ['-machine', 'none', '-display', 'none', '-nodefaults', '-S', '-monitor', `unix:${mon},server,nowait`, ...extra],
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

  test('a target\'s TLS server credentials, written as the lab writes them, load DH parameters from a file: QEMU generates none', async () => {
    const dir = suiteTmpDir('mm-vm-dh-');
    const ca = makeClusterCa(path.join(dir, 'ca'), 'kv-a');
    issueHandlerCert(ca.key, ca.cert, path.join(dir, 'handler'), 'virt-handler.kv-a', '10.0.0.1');
    const q = await qemu(dir, 'dst', ['-trace', 'qcrypto_tls_creds_load_dh']);
    try {
      for (const [id, endpoint] of [['tls1', 'server'], ['tls2', 'client']] as const) {
        writeTlsCreds(path.join(dir, 'handler'), path.join(dir, id), endpoint, ca.pem);
        expect(await q.hmp.cmd(`object_add tls-creds-x509,id=${id},dir=${path.join(dir, id)},endpoint=${endpoint},verify-peer=on`)).toBe('');
      }
      q.hmp.close();
      q.proc.kill('SIGTERM');
      await new Promise((r) => q.proc.once('exit', r));
      const loads = fs.readFileSync(q.qlog, 'utf8').split('\n').filter((l) => l.startsWith('qcrypto_tls_creds_load_dh'));
      // the server's credentials only (a client loads no DH parameters), from the file
      expect(loads).toHaveLength(1);
      expect(loads[0]).toMatch(new RegExp(`filename=${path.join(dir, 'tls1', 'dh-params.pem').replace(/[.]/g, '\\.')}$`));
    } finally {
      q.hmp.close();
      q.proc.kill('SIGKILL');
    }
  }, 60_000);
});
