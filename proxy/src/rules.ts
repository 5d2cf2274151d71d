/**
 * The init step: nat REDIRECT of TCP to every peer CIDR to the intercept port, in the current network
 * namespace (needs NET_ADMIN). Idempotent: everything lives in a dedicated chain that is flushed and
 * refilled, and the single jump from PREROUTING is added only when missing.
 *
 * Never an open relay (issue 49): every rule names the migration network's interface
 * (`listen.intercept.interface`), the jump and each REDIRECT, in both families, so a connection that arrives on
 * any other interface (the shared cross-cluster network, the pod network) is never intercepted. A jump without
 * an interface (what versions before issue 49 installed) is removed.
 */
import { spawnSync } from 'node:child_process';
import * as net from 'node:net';
import type { ProxyConfig } from './config';

export const RULES_CHAIN = 'MIGRATION_MESH';

export interface RuleCommand {
  bin: 'iptables' | 'ip6tables';
  args: string[];
  /**
   * 'check-then-add': run `args` only when `check` fails; 'ensure-chain': ok when the chain exists;
   * 'delete-while-present': run `args` (a delete) as long as `check` succeeds (bounded).
   */
  kind: 'run' | 'ensure-chain' | 'check-then-add' | 'delete-while-present';
  check?: string[];
}

/** The interface the rules match: the intercept listener's (the migration network's), or a clear error. */
export function interceptInterface(cfg: ProxyConfig): string {
  const ifname = cfg.listen.intercept.interface;
  if (!ifname) {
    throw new Error('setup-rules: listen.intercept.interface is not set; the REDIRECT rules must name the migration network\'s interface '
      + '(without it a connection from any interface, the shared network too, would be intercepted and tunnelled: issue 49). '
      + 'Set listen.intercept.interface (e.g. mig0; the library writes it)');
  }
  return ifname;
}

export function planRules(cfg: ProxyConfig, chain = RULES_CHAIN): RuleCommand[] {
  const port = String(cfg.listen.intercept.port);
  const ifname = interceptInterface(cfg);
  const out: RuleCommand[] = [];
  const cidrs = cfg.peers.flatMap((p) => p.cidrs);
  for (const bin of ['iptables', 'ip6tables'] as const) {
    const mine = cidrs.filter((c) => (net.isIP(c.split('/')[0]) === 6) === (bin === 'ip6tables'));
    if (mine.length === 0 && bin === 'ip6tables') continue; // no IPv6 peers: do not require ip6tables
    out.push({ bin, kind: 'ensure-chain', args: ['-w', '-t', 'nat', '-N', chain], check: ['-w', '-t', 'nat', '-S', chain] });
    out.push({ bin, kind: 'run', args: ['-w', '-t', 'nat', '-F', chain] });
    for (const c of mine) {
      out.push({ bin, kind: 'run', args: ['-w', '-t', 'nat', '-A', chain, '-i', ifname, '-p', 'tcp', '-d', c, '-j', 'REDIRECT', '--to-ports', port] });
    }
    const unrestricted = ['-w', '-t', 'nat', '-C', 'PREROUTING', '-j', chain];
    out.push({ bin, kind: 'delete-while-present', check: unrestricted, args: ['-w', '-t', 'nat', '-D', 'PREROUTING', '-j', chain] });
    const jump = ['PREROUTING', '-i', ifname, '-j', chain];
    out.push({ bin, kind: 'check-then-add', check: ['-w', '-t', 'nat', '-C', ...jump], args: ['-w', '-t', 'nat', '-A', ...jump] });
  }
  return out;
}

/** Shell rendering (what --dry-run prints; also a valid idempotent script). */
export function renderRules(cmds: RuleCommand[]): string {
  const q = (a: string[]) => a.join(' ');
  return cmds.map((c) => {
    if (c.kind === 'ensure-chain') return `${c.bin} ${q(c.check!)} >/dev/null 2>&1 || ${c.bin} ${q(c.args)}`;
    if (c.kind === 'check-then-add') return `${c.bin} ${q(c.check!)} 2>/dev/null || ${c.bin} ${q(c.args)}`;
    if (c.kind === 'delete-while-present') return `while ${c.bin} ${q(c.check!)} 2>/dev/null; do ${c.bin} ${q(c.args)} || exit 1; done`;
    return `${c.bin} ${q(c.args)}`;
  }).join('\n') + '\n';
}

/** At most this many copies of a stale rule are deleted (a bound on the loop; iptables keeps duplicates). */
const MAX_STALE_COPIES = 64;

export function applyRules(cmds: RuleCommand[], run = (bin: string, args: string[]) => spawnSync(bin, args, { encoding: 'utf8' })): void {
  const exec = (bin: string, args: string[]) => {
    const r = run(bin, args);
    if (r.error) throw new Error(`${bin} not available: ${r.error.message}`);
    return r;
  };
  const must = (bin: string, args: string[]) => {
    const r = exec(bin, args);
    if (r.status !== 0) throw new Error(`${bin} ${args.join(' ')} failed (exit ${r.status}): ${(r.stderr || '').trim()}`);
  };
  for (const c of cmds) {
    if (c.kind === 'delete-while-present') {
      let n = 0;
      while (exec(c.bin, c.check!).status === 0) {
        if (++n > MAX_STALE_COPIES) throw new Error(`${c.bin} ${c.check!.join(' ')}: still present after ${MAX_STALE_COPIES} deletions`);
        must(c.bin, c.args);
      }
      continue;
    }
    if (c.kind !== 'run' && exec(c.bin, c.check!).status === 0) continue;
    must(c.bin, c.args);
  }
}
