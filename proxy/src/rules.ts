/**
 * The init step: nat REDIRECT of TCP to every peer CIDR to the intercept port, in the current network
 * namespace (needs NET_ADMIN). Idempotent: everything lives in a dedicated chain that is flushed and
 * refilled, and the single jump from PREROUTING is added only when missing.
 */
import { spawnSync } from 'node:child_process';
import * as net from 'node:net';
import type { ProxyConfig } from './config';

export const RULES_CHAIN = 'MIGRATION_MESH';

export interface RuleCommand {
  bin: 'iptables' | 'ip6tables';
  args: string[];
  /** 'check-then-add': run `args` only when `check` fails; 'ensure-chain': ok when the chain exists. */
  kind: 'run' | 'ensure-chain' | 'check-then-add';
  check?: string[];
}

export function planRules(cfg: ProxyConfig, chain = RULES_CHAIN): RuleCommand[] {
  const port = String(cfg.listen.intercept.port);
  const out: RuleCommand[] = [];
  const cidrs = cfg.peers.flatMap((p) => p.cidrs);
  for (const bin of ['iptables', 'ip6tables'] as const) {
    const mine = cidrs.filter((c) => (net.isIP(c.split('/')[0]) === 6) === (bin === 'ip6tables'));
    if (mine.length === 0 && bin === 'ip6tables') continue; // no IPv6 peers: do not require ip6tables
    out.push({ bin, kind: 'ensure-chain', args: ['-w', '-t', 'nat', '-N', chain], check: ['-w', '-t', 'nat', '-S', chain] });
    out.push({ bin, kind: 'run', args: ['-w', '-t', 'nat', '-F', chain] });
    for (const c of mine) {
      out.push({ bin, kind: 'run', args: ['-w', '-t', 'nat', '-A', chain, '-p', 'tcp', '-d', c, '-j', 'REDIRECT', '--to-ports', port] });
    }
    out.push({ bin, kind: 'check-then-add', check: ['-w', '-t', 'nat', '-C', 'PREROUTING', '-j', chain], args: ['-w', '-t', 'nat', '-A', 'PREROUTING', '-j', chain] });
  }
  return out;
}

/** Shell rendering (what --dry-run prints; also a valid idempotent script). */
export function renderRules(cmds: RuleCommand[]): string {
  const q = (a: string[]) => a.join(' ');
  return cmds.map((c) => {
    if (c.kind === 'ensure-chain') return `${c.bin} ${q(c.check!)} >/dev/null 2>&1 || ${c.bin} ${q(c.args)}`;
    if (c.kind === 'check-then-add') return `${c.bin} ${q(c.check!)} 2>/dev/null || ${c.bin} ${q(c.args)}`;
    return `${c.bin} ${q(c.args)}`;
  }).join('\n') + '\n';
}

export function applyRules(cmds: RuleCommand[], run = (bin: string, args: string[]) => spawnSync(bin, args, { encoding: 'utf8' })): void {
  for (const c of cmds) {
    if (c.kind !== 'run') {
      const r = run(c.bin, c.check!);
      if (r.error) throw new Error(`${c.bin} not available: ${r.error.message}`);
      if (r.status === 0) continue;
    }
    const r = run(c.bin, c.args);
    if (r.error) throw new Error(`${c.bin} not available: ${r.error.message}`);
    if (r.status !== 0) throw new Error(`${c.bin} ${c.args.join(' ')} failed (exit ${r.status}): ${(r.stderr || '').trim()}`);
  }
}
