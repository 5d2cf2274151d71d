/**
 * Network namespaces for tests: created with unique names per run, connected only to each other with veth
 * pairs created directly inside them (nothing is added to the host's own namespace), and removed, with
 * every child process killed, by `cleanup()` (call it from `after`/finally).
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import * as crypto from 'node:crypto';
import { HANG_GUARD_MS } from './helpers';

export function netnsUnavailable(): string | undefined {
  if (typeof process.getuid !== 'function' || process.getuid() !== 0) return 'needs root and ip netns';
  for (const bin of ['ip', 'iptables']) {
    if (spawnSync('sh', ['-c', `command -v ${bin}`]).status !== 0) return `needs root and ip netns (${bin} missing)`;
  }
  const probe = `mmprobe-${crypto.randomBytes(3).toString('hex')}`;
  const r = spawnSync('ip', ['netns', 'add', probe], { encoding: 'utf8' });
  if (r.status !== 0) return `needs root and ip netns (${r.stderr.trim()})`;
  spawnSync('ip', ['netns', 'del', probe]);
  return undefined;
}

export class NetnsLab {
  readonly id = crypto.randomBytes(3).toString('hex');
  private readonly made: string[] = [];
  private readonly children = new Set<ChildProcess>();

  name(short: string): string { return `mmp${this.id}-${short}`; }

  run(args: string[], ns?: string): string {
    const full = ns ? ['netns', 'exec', ns, ...args] : args;
    const bin = ns ? 'ip' : args[0];
    const r = spawnSync(bin, ns ? full : args.slice(1), { encoding: 'utf8', timeout: HANG_GUARD_MS });
    if (r.status !== 0) throw new Error(`${ns ? `[${ns}] ` : ''}${args.join(' ')} failed: ${r.stderr || r.error}`);
    return r.stdout;
  }

  addNs(short: string): string {
    const n = this.name(short);
    this.run(['ip', 'netns', 'add', n]);
    this.made.push(n);
    this.run(['ip', 'link', 'set', 'lo', 'up'], n);
    return n;
  }

  /** veth between two namespaces; addresses like '10.1.0.1/24' (IPv6 with nodad). */
  link(nsA: string, ifA: string, addrsA: string[], nsB: string, ifB: string, addrsB: string[]): void {
    this.run(['ip', 'link', 'add', ifA, 'netns', nsA, 'type', 'veth', 'peer', 'name', ifB, 'netns', nsB]);
    for (const [ns, ifn, addrs] of [[nsA, ifA, addrsA], [nsB, ifB, addrsB]] as const) {
      for (const a of addrs) this.run(['ip', 'addr', 'add', a, 'dev', ifn, ...(a.includes(':') ? ['nodad'] : [])], ns);
      this.run(['ip', 'link', 'set', ifn, 'up'], ns);
    }
  }

  /** A child inside `ns`; `stdin: 'pipe'` for one that takes requests on its standard input. */
  spawn(ns: string, args: string[], stdin: 'ignore' | 'pipe' = 'ignore'): ChildProcess {
    const c = spawn('ip', ['netns', 'exec', ns, ...args], { stdio: [stdin, 'pipe', 'pipe'] });
    this.children.add(c);
    c.on('exit', () => this.children.delete(c));
    return c;
  }

  /** Spawn and wait until stdout contains `marker`. */
  async start(ns: string, args: string[], marker: string, timeoutMs = HANG_GUARD_MS, stdin: 'ignore' | 'pipe' = 'ignore'): Promise<{ child: ChildProcess; out: () => string }> {
    const child = this.spawn(ns, args, stdin);
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => { out += d; });
    child.stderr!.on('data', (d) => { err += d; });
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`${args.join(' ')}: no '${marker}' within ${timeoutMs} ms\n${out}\n${err}`)), timeoutMs);
      const check = () => { if (out.includes(marker)) { clearTimeout(t); resolve(); } };
      child.stdout!.on('data', check);
      child.on('exit', (code) => { clearTimeout(t); reject(new Error(`${args.join(' ')} exited ${code}\n${out}\n${err}`)); });
    });
    return { child, out: () => out };
  }

  /** Run to completion (bounded), returning stdout. */
  async exec(ns: string, args: string[], timeoutMs = HANG_GUARD_MS): Promise<string> {
    const child = this.spawn(ns, args);
    let out = '', err = '';
    child.stdout!.on('data', (d) => { out += d; });
    child.stderr!.on('data', (d) => { err += d; });
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${args.join(' ')} timed out\n${out}\n${err}`)); }, timeoutMs);
      child.on('exit', (code) => { clearTimeout(t); if (code === 0) resolve(out); else reject(new Error(`${args.join(' ')} exited ${code}\n${out}\n${err}`)); });
    });
  }

  async cleanup(): Promise<void> {
    for (const c of this.children) { try { c.kill('SIGKILL'); } catch { /* gone */ } }
    await new Promise((r) => setTimeout(r, 100));
    for (const n of this.made.reverse()) {
      // kill anything still running inside (a grandchild of `ip netns exec`), then delete
      const pids = spawnSync('ip', ['netns', 'pids', n], { encoding: 'utf8' }).stdout.split(/\s+/).filter(Boolean);
      for (const p of pids) { try { process.kill(Number(p), 'SIGKILL'); } catch { /* gone */ } }
      spawnSync('ip', ['netns', 'del', n]);
    }
    this.made.length = 0;
  }
}
