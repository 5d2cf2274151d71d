/**
 * Adversarial load for the security tests and `npm run adversarial`: a gateway in its own process (the real
 * CLI, so its RSS is its own), TLS floods without a client certificate, idle TCP floods, RSS sampling.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import * as tls from 'node:tls';
import type { ProxyConfigInput } from '../config';
import { HANG_GUARD_MS, tmpDir } from './helpers';

export interface GatewayProcess { child: ChildProcess; pid: number; rssMb(): number; fds(): number; stop(): Promise<void> }

const CLI = path.join(__dirname, '..', 'cli.js');

/** Run `migration-mesh-proxy run` on a config (env: extra variables, e.g. MM_PROXY_ADDON). */
export async function spawnGateway(cfg: ProxyConfigInput, env: NodeJS.ProcessEnv = {}): Promise<GatewayProcess> {
  const file = path.join(tmpDir('mmproxy-adv-'), 'config.json');
  fs.writeFileSync(file, JSON.stringify(cfg));
  const child = spawn(process.execPath, [CLI, 'run', '--config', file, '--log-level', 'warn'], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let out = '';
  child.stdout!.on('data', (d) => { out += d; });
  child.stderr!.on('data', (d) => { out += d; });
  const admin = cfg.listen!.admin!;
  const port = admin.port;
  const host = 'host' in admin ? admin.host : '127.0.0.1';
  const until = Date.now() + HANG_GUARD_MS; // a process's start is CPU work: a hang guard
  for (;;) {
    if (child.exitCode !== null) throw new Error(`gateway exited ${child.exitCode}: ${out}`);
    if (await canConnect(host, port)) break;
    if (Date.now() > until) { child.kill('SIGKILL'); throw new Error(`gateway did not listen: ${out}`); }
    await new Promise((r) => setTimeout(r, 50));
  }
  const pid = child.pid!;
  return {
    child, pid,
    rssMb: () => Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))![1]) / 1024,
    fds: () => fs.readdirSync(`/proc/${pid}/fd`).length,
    stop: () => new Promise<void>((resolve) => {
      if (child.exitCode !== null) { resolve(); return; }
      child.once('exit', () => resolve());
      child.kill('SIGKILL');
    }),
  };
}

function canConnect(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect(port, host);
    s.on('connect', () => { s.destroy(); resolve(true); });
    s.on('error', () => resolve(false));
  });
}

/**
 * `total` TLS connections that present no client certificate (the gateway requires one), `concurrency` at
 * a time. Resolves with how many the gateway ended (all of them, unless it hangs).
 */
export async function certlessFlood(port: number, caPem: Buffer, total: number, concurrency = 64, host = '127.0.0.1'): Promise<number> {
  let started = 0, ended = 0;
  const secureContext = tls.createSecureContext({ ca: caPem, minVersion: 'TLSv1.3' }); // once, not per connection
  const one = () => new Promise<void>((resolve) => {
    const s = tls.connect({ port, host, secureContext, checkServerIdentity: () => undefined });
    const t = setTimeout(() => s.destroy(), 10_000);
    s.on('error', () => undefined);
    s.on('secureConnect', () => s.write('x'));
    s.on('close', () => { clearTimeout(t); ended++; resolve(); });
  });
  const worker = async () => { while (started < total) { started++; await one(); } };
  await Promise.all(Array.from({ length: concurrency }, worker));
  return ended;
}

/** Keep `n` idle connections open from `localAddress`, re-opening each one the gateway closes. */
export function persistentFlood(port: number, n: number, localAddress: string): { open(): number; stop(): void } {
  let stopped = false;
  const live = new Set<net.Socket>();
  const one = () => {
    if (stopped) return;
    const s = net.connect({ port, host: '127.0.0.1', localAddress });
    live.add(s);
    s.on('error', () => undefined);
    s.on('close', () => { live.delete(s); setTimeout(one, 1000); }); // the attacker re-opens what the gateway closes
  };
  for (let i = 0; i < n; i++) one();
  return { open: () => live.size, stop: () => { stopped = true; for (const s of live) s.destroy(); } };
}

