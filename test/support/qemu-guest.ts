/**
 * A real hypervisor for the VM migration test and bench: QEMU 10 (Debian's qemu-system-x86 from bookworm-backports,
 * which scripts/ensure-system-deps.js installs; TCG) running a small
 * Linux guest, driven over its HMP monitor, migrated as KubeVirt's virt-handlers migrate (mutual TLS with
 * `tls-creds-x509 ... verify-peer=on`, multifd channels). QEMU's documentation:
 * https://www.qemu.org/docs/master/system/tls.html (tls-creds-x509), https://www.qemu.org/docs/master/devel/migration/main.html.
 *
 * The guest: Debian's stock kernel (`apt-get download` of the package linux-image-amd64 depends on) and a
 * busybox-static initramfs whose /init fills a tmpfs file with `mm_fill` MiB from /dev/urandom (real data to
 * move: zero pages migrate almost for free), then prints `tick N` on the serial console once a second while it
 * rewrites `mm_dirty` MiB (dirty pages during the migration). Built once, cached under
 * node_modules/.cache/mm-vm-guest/<key>, the key a hash of the kernel package's version, busybox and the init
 * script, so the suite stays fast.
 */
import { spawnSync } from 'child_process';
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';

const has = (cmd: string): boolean => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
export const QEMU = 'qemu-system-x86_64';
const BUSYBOX = '/bin/busybox';

const INIT = `#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /bin /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t devtmpfs dev /dev
fill=64; dirty=4
for a in $(cat /proc/cmdline); do case "$a" in mm_fill=*) fill=\${a#mm_fill=};; mm_dirty=*) dirty=\${a#mm_dirty=};; esac; done
mount -t tmpfs -o size=$((fill + dirty + 8))m tmp /tmp
echo "mm-guest filling $fill MiB"
dd if=/dev/urandom of=/tmp/fill bs=1M count=$fill 2>/dev/null
echo "mm-guest ready"
i=0
while true; do
  i=$((i + 1))
  dd if=/dev/urandom of=/tmp/dirty bs=1M count=$dirty conv=notrunc 2>/dev/null
  echo "tick $i"
  sleep 1
done
`;

/** The lab is written against QEMU 10's migration (the HMP output, the yank and TLS clean-up named below). */
const QEMU_MIN_MAJOR = 10;

/** `qemu-system-x86_64 --version`'s version, e.g. `10.0.2`, or undefined when there is none. */
export function qemuVersion(): string | undefined {
  return /version (\d+\.\d+\.\d+)/.exec(spawnSync(QEMU, ['--version'], { encoding: 'utf8' }).stdout ?? '')?.[1];
}

/** Whether this machine can run the guest; `reason` says why not. */
export function qemuSupport(): { ok: true } | { ok: false; reason: string } {
  for (const [cmd, pkg] of [[QEMU, 'qemu-system-x86'], ['cpio', 'cpio'], ['dpkg-deb', 'dpkg'], ['apt-get', 'apt']]) {
    if (!has(cmd)) return { ok: false, reason: `'${cmd}' is not installed (${pkg}; node scripts/ensure-system-deps.js installs it as root)` };
  }
  const version = qemuVersion();
  if (!version || Number(version.split('.')[0]) < QEMU_MIN_MAJOR) {
    return { ok: false, reason: `QEMU ${version ?? '(version unknown)'} is installed, the VM lab needs ${QEMU_MIN_MAJOR} or later (node scripts/ensure-system-deps.js installs it from bookworm-backports as root)` };
  }
  if (!fs.existsSync(BUSYBOX)) return { ok: false, reason: `${BUSYBOX} missing (busybox-static)` };
  const ldd = spawnSync('ldd', [BUSYBOX], { encoding: 'utf8' });
  if (/=>/.test(ldd.stdout ?? '')) return { ok: false, reason: `${BUSYBOX} is dynamically linked: install busybox-static` };
  return { ok: true };
}

export interface Guest { kernel: string; initrd: string; kernelVersion: string }

const run = (cmd: string, args: string[], opts: { cwd?: string; input?: Buffer } = {}): string => {
  const r = spawnSync(cmd, args, { cwd: opts.cwd, input: opts.input, encoding: 'utf8', timeout: 300_000, maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}): ${(r.stderr || r.error?.message || '').trim()}`);
  return r.stdout;
};

/**
 * What a guest adds to its initramfs beyond /init and busybox: it writes files under `root` (the kernel package is
 * unpacked at `unpacked`) and returns their paths relative to `root`, for cpio.
 */
export type GuestExtras = (root: string, unpacked: string) => string[];

/**
 * A guest kernel (the package linux-image-amd64 depends on) + busybox initramfs with `init` as /init, built on first
 * use and cached under `cacheRoot/<key>` (the key: the kernel package's version, busybox, `keyParts`, the init).
 */
export function buildGuestImage(o: { cacheRoot: string; init: string; keyParts?: string; extras?: GuestExtras }): Guest {
  // the versioned kernel package linux-image-amd64 points at (apt's own metadata, no download)
  const dep = /Depends:\s*(linux-image-[^\s]+)/.exec(run('apt-cache', ['depends', 'linux-image-amd64']))?.[1];
  if (!dep) throw new Error('apt-cache depends linux-image-amd64 names no linux-image-* package (apt-get update?)');
  const version = run('apt-cache', ['policy', dep]).match(/Candidate:\s*(\S+)/)?.[1] ?? 'unknown';
  const bb = crypto.createHash('sha256').update(fs.readFileSync(BUSYBOX)).digest('hex');
  const key = crypto.createHash('sha256').update(`${dep} ${version}\n${bb}\n${o.keyParts !== undefined ? `${o.keyParts}\n` : ''}${o.init}`).digest('hex').slice(0, 16);
  const dir = path.join(o.cacheRoot, key);
  const guest = { kernel: path.join(dir, 'vmlinuz'), initrd: path.join(dir, 'initrd.cpio'), kernelVersion: `${dep} ${version}` };
  if (fs.existsSync(guest.kernel) && fs.existsSync(guest.initrd)) return guest;
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-guest-build-'));
  try {
    run('apt-get', ['download', dep], { cwd: work });
    const deb = fs.readdirSync(work).find((f) => f.endsWith('.deb'));
    if (!deb) throw new Error(`apt-get download ${dep} left no .deb`);
    run('dpkg-deb', ['-x', deb, 'x'], { cwd: work });
    const vmlinuz = fs.readdirSync(path.join(work, 'x', 'boot')).find((f) => f.startsWith('vmlinuz-'));
    if (!vmlinuz) throw new Error(`${deb} has no boot/vmlinuz-*`);
    const root = path.join(work, 'root');
    fs.mkdirSync(path.join(root, 'bin'), { recursive: true });
    fs.copyFileSync(BUSYBOX, path.join(root, 'bin', 'busybox'));
    fs.chmodSync(path.join(root, 'bin', 'busybox'), 0o755);
    fs.writeFileSync(path.join(root, 'init'), o.init, { mode: 0o755 });
    const list = ['init', 'bin', 'bin/busybox', ...(o.extras?.(root, path.join(work, 'x')) ?? [])].join('\n');
    const cpio = spawnSync('cpio', ['-o', '-H', 'newc', '--quiet'], { cwd: root, input: `${list}\n`, maxBuffer: 64 << 20 });
    if (cpio.status !== 0) throw new Error(`cpio: ${cpio.stderr}`);
    fs.mkdirSync(`${dir}.tmp`, { recursive: true });
    fs.copyFileSync(path.join(work, 'x', 'boot', vmlinuz), path.join(`${dir}.tmp`, 'vmlinuz'));
    fs.writeFileSync(path.join(`${dir}.tmp`, 'initrd.cpio'), cpio.stdout);
    fs.rmSync(dir, { recursive: true, force: true });
    fs.renameSync(`${dir}.tmp`, dir);
    return guest;
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}

/** The VM lab's guest: the kernel and busybox with the /init above, cached by content key. */
export function buildGuest(cacheRoot = path.join(__dirname, '..', '..', 'node_modules', '.cache', 'mm-vm-guest')): Guest {
  return buildGuestImage({ cacheRoot, init: INIT });
}

/** The guest's machine: the same on source and target (a migration needs identical devices). */
export interface VmShape {
  memMiB: number; fillMiB: number; dirtyMiB: number; cpu: string; append?: string;
  /**
   * Where the guest's RAM lives: `shm-file`, a shared memory-backend file in /dev/shm that a test reads whole
   * in well under a second; `anonymous`, ordinary process memory as a VM's (@default 'shm-file'). Benchmarks
   * take `anonymous`: a file-backed target loads incoming pages slower (on this machine a direct migration
   * arrived in 1.5 s instead of 0.6 s), which would hide the gateways' cost behind the target's.
   */
  ram?: 'shm-file' | 'anonymous';
}

/**
 * QEMU's command line for the guest; `incoming` starts it paused (-S), waiting for `migrate_incoming`. The TLS
 * credentials are added over the monitor right before each migration (`object_add tls-creds-x509,...`), so each
 * migration reads the CA bundle its cluster holds at that moment.
 */
export function qemuCommand(g: Guest, shape: VmShape, o: { monitor: string; qmp?: string; serial: string; incoming?: boolean; ramFile?: string }): string[] {
  // `ramFile`: the guest's RAM is that file (a shared memory backend, best in /dev/shm), so a test reads the
  // whole RAM of a paused VM there instead of asking QEMU for a pmemsave copy. It migrates like any RAM.
  const machine = o.ramFile
    ? ['-machine', 'q35,memory-backend=mm-ram', '-object', `memory-backend-file,id=mm-ram,size=${shape.memMiB}M,mem-path=${o.ramFile},share=on`]
    : ['-machine', 'q35'];
  return [QEMU, ...machine, '-cpu', shape.cpu, '-m', String(shape.memMiB), '-smp', '1', '-kernel', g.kernel, '-initrd', g.initrd,
    '-append', `console=ttyS0 quiet panic=-1 mm_fill=${shape.fillMiB} mm_dirty=${shape.dirtyMiB}${shape.append ? ` ${shape.append}` : ''}`,
    '-display', 'none', '-vga', 'none', '-nic', 'none', '-no-user-config', '-nodefaults', '-serial', `file:${o.serial}`,
    '-monitor', `unix:${o.monitor},server,nowait`, ...(o.qmp ? ['-qmp', `unix:${o.qmp},server=on,wait=off`] : []),
    ...(o.incoming ? ['-incoming', 'defer', '-S'] : [])];
}

/** One HMP monitor connection (the monitor takes one client at a time): commands in order, each answered at the next prompt. */
export class Hmp {
  private sock?: net.Socket;
  private buf = '';
  private waiter?: () => void;
  private closed = false;
  constructor(readonly path: string) {}

  async connect(timeoutMs = 10_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      try {
        this.sock = await new Promise<net.Socket>((resolve, reject) => {
          const s = net.connect(this.path);
          s.once('connect', () => resolve(s));
          s.once('error', reject);
        });
        break;
      } catch (e) {
        if (Date.now() > end) throw new Error(`monitor ${this.path}: ${(e as Error).message}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    this.sock.on('data', (d) => { this.buf += d.toString('latin1'); this.waiter?.(); });
    this.sock.on('error', () => { /* the process died: 'close' follows */ });
    // QEMU exited (or closed the monitor): the command waiting for a prompt fails now, not at its timeout
    this.sock.on('close', () => { this.closed = true; this.waiter?.(); });
    await this.untilPrompt(timeoutMs);
  }

  private untilPrompt(timeoutMs: number): Promise<string> {
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => { this.waiter = undefined; reject(new Error(`monitor ${this.path}: no prompt after ${timeoutMs} ms; got ${JSON.stringify(this.buf.slice(-300))}`)); }, timeoutMs);
      const check = () => {
        const i = this.buf.indexOf('(qemu) ');
        if (i < 0 && this.closed) {
          clearTimeout(timer);
          this.waiter = undefined;
          reject(new Error(`monitor ${this.path}: closed by QEMU (exited?); got ${JSON.stringify(this.buf.slice(-300))}`));
        }
        if (i < 0) return;
        const out = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 7);
        clearTimeout(timer);
        this.waiter = undefined;
        resolve(out);
      };
      this.waiter = check;
      check();
    });
  }

  /** Prompts still owed by commands that timed out: each answer is read and dropped before the next command's. */
  private owed = 0;

  /** Has QEMU closed the monitor (exited)? A command that timed out on an open monitor only met a busy QEMU. */
  get isClosed(): boolean { return this.closed; }

  /**
   * Run one command; its output without the echo and terminal escapes. A command that timed out still gets its
   * answer later (HMP answers in order): the next command first reads and drops it, so it never takes that late
   * answer for its own.
   */
  async cmd(line: string, timeoutMs = 30_000): Promise<string> {
    if (!this.sock) throw new Error('monitor not connected');
    for (; this.owed > 0; this.owed--) await this.untilPrompt(timeoutMs);
    this.sock.write(`${line}\n`);
    const raw = await this.untilPrompt(timeoutMs).catch((e: Error) => { if (!this.closed) this.owed++; throw e; });
    const text = raw.replace(/\x1b\[[0-9;]*[A-Za-z]/g, '').replace(/\r/g, '');
    const lines = text.split('\n');
    return lines.filter((l, i) => !(i === 0 && l.trim().endsWith(line.trim()))).join('\n').trim();
  }

  close(): void { this.sock?.destroy(); this.sock = undefined; }
}

/**
 * One QMP command on a fresh connection to QEMU's `-qmp` socket: the greeting, `qmp_capabilities`, the command;
 * resolves with its `return`, rejects with its `error` or after `timeoutMs`. For what HMP cannot tell (`query-yank`).
 */
export function qmpExecute(socketPath: string, execute: string, timeoutMs = 10_000): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const s = net.connect(socketPath);
    let buf = '';
    let step = 0; // 0: greeting, 1: capabilities answered, 2: the command answered
    const end = (f: () => void) => { clearTimeout(timer); s.destroy(); f(); };
    const timer = setTimeout(() => end(() => reject(new Error(`qmp ${socketPath} ${execute}: no answer after ${timeoutMs} ms`))), timeoutMs);
    s.on('error', (e) => end(() => reject(new Error(`qmp ${socketPath}: ${e.message}`))));
    s.on('data', (d) => {
      buf += d.toString('utf8');
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const msg = JSON.parse(buf.slice(0, i)) as { QMP?: unknown; return?: unknown; error?: { desc?: string }; event?: string };
        buf = buf.slice(i + 1);
        if (msg.event) continue;
        if (msg.error) return end(() => reject(new Error(`qmp ${execute}: ${msg.error?.desc}`)));
        if (step === 0 && msg.QMP) { step = 1; s.write('{"execute":"qmp_capabilities"}\n'); continue; }
        if (step === 1 && 'return' in msg) { step = 2; s.write(`${JSON.stringify({ execute })}\n`); continue; }
        if (step === 2 && 'return' in msg) return end(() => resolve(msg.return));
      }
    });
  });
}

/**
 * Set the migration's bandwidth limit to `bytesPerSecond` and read it back. HMP's `migrate_set_parameter
 * max-bandwidth` takes a bare number as MiB/s (QEMU's hmp_migrate_set_parameter: qemu_strtosz_MiB), so the
 * value goes with a `B` suffix; the lab once passed bare byte counts and its "8 MiB/s" was 8 TiB/s.
 */
export async function setMaxBandwidth(hmp: Hmp, bytesPerSecond: number): Promise<void> {
  const out = await hmp.cmd(`migrate_set_parameter max-bandwidth ${bytesPerSecond}B`);
  if (out) throw new Error(`max-bandwidth: ${out}`);
  const now = /max-bandwidth:\s*(\d+) bytes\/second/.exec(await hmp.cmd('info migrate_parameters'))?.[1];
  if (Number(now) !== bytesPerSecond) throw new Error(`max-bandwidth set to ${bytesPerSecond} B/s, QEMU reports ${now ?? 'nothing'}`);
}

export interface MigrateInfo { status: string; reason?: string; totalMs?: number; downtimeMs?: number; transferredKiB?: number; raw: string }

export function parseInfoMigrate(text: string): MigrateInfo {
  const status = /Migration status:\s*([a-z-]+)(?:\s*\((.*)\))?/.exec(text);
  const num = (re: RegExp) => { const m = re.exec(text); return m ? Number(m[1]) : undefined; };
  return {
    status: status?.[1] ?? 'none', reason: status?.[2],
    totalMs: num(/total time:\s*(\d+)/), downtimeMs: num(/downtime:\s*(\d+)/), transferredKiB: num(/transferred ram:\s*(\d+)/), raw: text,
  };
}

/** Poll `info migrate` on the source until it leaves the running states (bounded). */
export async function waitMigration(src: Hmp, timeoutMs: number, onTick?: (i: MigrateInfo) => void): Promise<MigrateInfo> {
  const end = Date.now() + timeoutMs;
  let last = parseInfoMigrate('');
  while (Date.now() < end) {
    last = parseInfoMigrate(await src.cmd('info migrate'));
    onTick?.(last);
    if (['completed', 'failed', 'cancelled'].includes(last.status)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { ...last, status: `timeout (last ${last.status})` };
}

/**
 * sha256 of a paused VM's whole RAM read from its shared memory backend file (`qemuCommand`'s ramFile): the
 * same bytes `pmemsave 0 <size>` writes (checked on this machine: 0 of 65,536 pages differ), without the copy
 * through the monitor and the disk (pmemsave + reading its file back took 4-7 s of each migration test).
 */
export function ramFileSha256(file: string, bytes: number): string {
  const st = fs.statSync(file);
  if (st.size !== bytes) throw new Error(`${file} holds ${st.size} bytes of RAM, expected ${bytes}`);
  // read in 8 MiB pieces: one readFileSync of 256 MiB took 2.7 s here, these reads and the hash 0.4 s
  const h = crypto.createHash('sha256');
  const buf = Buffer.allocUnsafe(8 << 20);
  const fd = fs.openSync(file, 'r');
  try {
    for (let n = fs.readSync(fd, buf, 0, buf.length, null); n > 0; n = fs.readSync(fd, buf, 0, buf.length, null)) h.update(buf.subarray(0, n));
  } finally { fs.closeSync(fd); }
  return h.digest('hex');
}

/** Two RAM images compared by 4 KiB page: how many differ and the first few guest-physical addresses. */
export function ramDiff(a: string, b: string): string {
  const [x, y] = [fs.readFileSync(a), fs.readFileSync(b)];
  const pages: number[] = [];
  for (let o = 0; o < Math.max(x.length, y.length); o += 4096) if (!x.subarray(o, o + 4096).equals(y.subarray(o, o + 4096))) pages.push(o);
  return `${pages.length} pages of 4 KiB differ, first at ${pages.slice(0, 6).map((p) => `0x${p.toString(16)}`).join(', ')}`;
}

/** gdb's `thread apply all bt` output: each thread's named frames by its tid (LWP), innermost first (`??` frames dropped). */
export function gdbFrames(bt: string): Map<string, string[]> {
  const frames = new Map<string, string[]>();
  let cur: string[] | undefined;
  for (const line of bt.split('\n')) {
    const th = /^Thread \d+ \(Thread 0x[0-9a-f]+ \(LWP (\d+)\)/.exec(line);
    if (th) { cur = []; frames.set(th[1], cur); continue; }
    const fn = /^#\d+\s+(?:0x[0-9a-f]+ in )?([A-Za-z_][\w.]*) \(/.exec(line)?.[1];
    if (fn && cur && cur[cur.length - 1] !== fn) cur.push(fn);
  }
  return frames;
}

/**
 * What each thread of a live QEMU is in: `tid comm wchan` from /proc, and with gdb installed the named frames
 * of its stack (Debian's QEMU keeps only its global symbols). `mainFrames`: the main loop thread's (tid = pid).
 * For a failure that names why QEMU is stuck.
 */
export function qemuStacks(pid: number): { text: string; mainFrames: string[] } {
  let tasks: string[];
  try { tasks = fs.readdirSync(`/proc/${pid}/task`).sort((a, b) => Number(a) - Number(b)); } catch (e) { return { text: `QEMU ${pid}: ${(e as Error).message}`, mainFrames: [] }; }
  const at = (t: string, f: string) => { try { return fs.readFileSync(`/proc/${pid}/task/${t}/${f}`, 'utf8').trim(); } catch { return '?'; } };
  const frames = has('gdb') ? gdbFrames(spawnSync('gdb', ['-p', String(pid), '-batch', '-ex', 'thread apply all bt 24'], { encoding: 'utf8', timeout: 60_000 }).stdout ?? '') : new Map<string, string[]>();
  const text = `QEMU ${pid} threads:\n${tasks.map((t) => `  ${t} ${at(t, 'comm')} in ${at(t, 'wchan') || 'running'}${frames.get(t)?.length ? `: ${frames.get(t)!.join(' < ')}` : ''}`).join('\n')}`;
  return { text, mainFrames: frames.get(String(pid)) ?? [] };
}

/**
 * QEMU defects the lab has met, told by what a source QEMU left (its stderr; its main thread's frames, `qemuStacks`), so that a
 * failure they cause is not taken for the gateways' or the lab's. Undefined when nothing matches.
 *
 * QEMU 10.0's TLS bye race. When a TLS + multifd migration fails, its clean-up (`migration_cleanup` ->
 * `multifd_send_shutdown`, migration/multifd.c) sends the TLS close_notify (`gnutls_bye`) on every multifd
 * channel before it shuts the channels down and joins their threads. A channel thread still inside
 * `gnutls_record_send` (blocked on a full socket) then shares its GnuTLS session with the main loop thread,
 * which GnuTLS does not support: the main loop blocks in the bye holding the BQL (QEMU answers neither monitor
 * nor guest), and when both writes fail, the two threads race on the session's one write error
 * (`qcrypto_tls_session_push`, crypto/tlssession.c frees and refills `session->werr`) and error_setg aborts.
 * Seen here on 10.0.2 (Debian 1:10.0.2+ds-2+deb13u1~bpo12+1): the abort once in 220 target-gateway kills
 * at random moments of an unthrottled migration, and the hang every time (6 of 6) over loopback with
 * the target stopped (SIGSTOP) and one multifd connection destroyed (`ss -K`); gdb showed the main thread in
 * `multifd_send_shutdown < ... < gnutls_bye < sendmsg` beside a multifd thread in `gnutls_record_send` on the
 * same fd. Upstream sends the bye only after a successful migration, after the threads have stopped writing
 * ("migration/multifd/tls: Cleanup BYE message processing on sender side", Peter Xu, 2025-09-25).
 */
export function knownQemuDefect(left: { log?: string; mainFrames?: string[] }): string | undefined {
  const main = left.mainFrames ?? [];
  const aborted = /error_setv: Assertion `\*errp == NULL' failed/.test(left.log ?? '');
  const hung = main.includes('gnutls_bye') && main.includes('multifd_send_shutdown');
  if (!aborted && !hung) return undefined;
  return `QEMU's defect, not the gateways' or the lab's: the TLS bye race of QEMU 10.0 (${aborted ? 'the abort' : 'the main loop blocked in gnutls_bye'}): ` +
    'a failed TLS + multifd migration\'s clean-up (multifd_send_shutdown) sends the TLS bye on each multifd channel while its thread may still be ' +
    'writing to the same GnuTLS session; the main loop then blocks in the bye holding the BQL, and when both writes fail the two threads race on ' +
    'the session\'s write error (qcrypto_tls_session_push) and error_setg aborts. Fixed upstream by "migration/multifd/tls: Cleanup BYE message ' +
    'processing on sender side" (2025-09-25); see knownQemuDefect in test/support/qemu-guest.ts';
}

/** The highest `tick N` the guest printed on its serial console (0 before the first). */
export function lastTick(serialLog: string): number {
  if (!fs.existsSync(serialLog)) return 0;
  const m = [...fs.readFileSync(serialLog, 'latin1').matchAll(/tick (\d+)/g)];
  return m.length ? Number(m[m.length - 1][1]) : 0;
}

/** Kernel trouble on the serial console (an oops, a BUG, a panic). */
export function guestTrouble(serialLog: string): string | undefined {
  if (!fs.existsSync(serialLog)) return undefined;
  const t = fs.readFileSync(serialLog, 'latin1');
  const m = /(BUG:|Oops|general protection fault|Kernel panic|list_(add|del) corruption)[^\n]*/.exec(t);
  return m?.[0];
}

/**
 * A handler's migration certificate issued by its cluster's CA (openssl): serverAuth + clientAuth, an IP SAN
 * of its address on the migration network (the source checks the target's certificate against the host of
 * the migration URI). Files as tls-creds-x509 reads them: server-* and client-* (the same leaf), ca-cert.pem
 * written by the caller from the cluster's kubevirt-ca.
 */
export function issueHandlerCert(caKey: string, caCert: string, dir: string, name: string, ip: string): void {
  fs.mkdirSync(dir, { recursive: true });
  const ossl = (args: string[]) => run('openssl', args, { cwd: dir });
  ossl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'key.pem', '-out', 'req.csr', '-subj', `/CN=${name}`]);
  fs.writeFileSync(path.join(dir, 'ext'), `subjectAltName=IP:${ip}\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n`);
  ossl(['x509', '-req', '-in', 'req.csr', '-CA', caCert, '-CAkey', caKey, '-CAcreateserial', '-out', 'cert.pem', '-days', '2', '-extfile', 'ext']);
  for (const side of ['server', 'client']) {
    fs.copyFileSync(path.join(dir, 'cert.pem'), path.join(dir, `${side}-cert.pem`));
    fs.copyFileSync(path.join(dir, 'key.pem'), path.join(dir, `${side}-key.pem`));
  }
  ossl(['genpkey', '-genparam', '-algorithm', 'DH', '-pkeyopt', 'group:ffdhe2048', '-out', 'dh-params.pem']);
}

/**
 * One migration's TLS credentials for QEMU's `object_add tls-creds-x509,dir=<dir>`: the handler's certificate and key
 * for `endpoint` from `certDir` (issueHandlerCert), `caBundle` as ca-cert.pem and, for a server, dh-params.pem.
 *
 * Why dh-params.pem: without it QEMU 10.0 generates 2048-bit DH parameters when server credentials load
 * (crypto/tlscreds.c, qcrypto_tls_creds_get_dh_params_file -> gnutls_dh_params_generate2), in its main loop, so
 * the monitor does not answer meanwhile: 50-1150 ms of CPU per `object_add` measured here (GnuTLS 3.7.9, 2048 bits:
 * median 0.24 s, p90 0.76 s over 60 draws), a random prime search repeated for every migration's target, many
 * seconds on a loaded machine. The file holds RFC 7919's ffdhe2048 group (openssl writes it at once); TLS 1.3
 * does not use DH parameters at all, and QEMU 10.2 deprecates the file and no longer generates any.
 */
export function writeTlsCreds(certDir: string, dir: string, endpoint: 'client' | 'server', caBundle: string): void {
  fs.mkdirSync(dir, { recursive: true });
  const files = [`${endpoint}-cert.pem`, `${endpoint}-key.pem`, ...(endpoint === 'server' ? ['dh-params.pem'] : [])];
  for (const f of files) fs.copyFileSync(path.join(certDir, f), path.join(dir, f));
  fs.writeFileSync(path.join(dir, 'ca-cert.pem'), caBundle);
}

/** A cluster's own KubeVirt CA (its own key), made with openssl: what virt-operator keeps in kubevirt-ca. */
export function makeClusterCa(dir: string, cluster: string): { key: string; cert: string; pem: string } {
  fs.mkdirSync(dir, { recursive: true });
  run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '7',
    '-subj', `/CN=kubevirt.io@${cluster}`, '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign'], { cwd: dir });
  return { key: path.join(dir, 'ca.key'), cert: path.join(dir, 'ca.crt'), pem: fs.readFileSync(path.join(dir, 'ca.crt'), 'utf8') };
}
