/**
 * What the fleet tests in network namespaces run inside them: the test agent (`netns-agent.js`: echo and
 * source servers, clients, probes) and the gateway runtime's CLI in place of the container image's
 * `migration-mesh-proxy` command. Shared by test/fleet-netns.test.ts and test/fleet-netns-ipv6.test.ts.
 */
import * as path from 'path';
import { ChildProcess } from 'child_process';
import { NetnsLab } from './netns';

const AGENT = path.join(__dirname, 'netns-agent.js');
const PROXY_CLI = path.join(__dirname, '..', '..', 'proxy', 'lib', 'cli.js');

/** The agent's command line: `node netns-agent.js MODE ARGS...`. */
export const agentCommand = (...args: (string | number)[]): string[] => [process.execPath, AGENT, ...args.map(String)];

/** A container command of the generated Deployment, run with the built runtime and this test's config file. */
export function runtimeCommand(cmd: string[], configFile: string): string[] {
  const c = cmd.map((a) => (a.endsWith('/config.json') ? configFile : a));
  if (c[0] !== 'migration-mesh-proxy') throw new Error(`unexpected container command ${c[0]}`);
  return [process.execPath, PROXY_CLI, ...c.slice(1)];
}

/** Agent servers started in namespaces, with every JSON line each one printed. */
export class AgentServers {
  private readonly lines = new Map<ChildProcess, any[]>();
  private readonly byPlace = new Map<string, ChildProcess>();

  /** `host`: the wildcard the servers listen on (the agent's default is 0.0.0.0; '::' for IPv6). */
  constructor(private readonly lab: NetnsLab, private readonly host?: string) {}

  /** An echo or source server on `port` in `ns`, once it says it listens. */
  async start(ns: string, mode: 'echo' | 'source', port: number): Promise<ChildProcess> {
    const p = this.lab.spawn(ns, agentCommand(mode, port, ...(this.host ? [this.host] : [])));
    const lines: any[] = [];
    this.lines.set(p, lines);
    p.stdout!.on('data', (b) => { for (const l of b.toString().split('\n')) if (l.startsWith('{')) lines.push(JSON.parse(l)); });
    await this.lab.waitForLine(p, /"listening"/, 5000, `${mode} server in ${ns}`);
    this.byPlace.set(`${ns}:${port}`, p);
    return p;
  }

  /** The connections a server has finished (`{event: 'conn', remote, bytes}`). */
  connsOf(p: ChildProcess): any[] {
    return (this.lines.get(p) ?? []).filter((l) => l.event === 'conn');
  }

  /** The server started on `port` in `ns`. */
  at(ns: string, port: number): ChildProcess {
    const p = this.byPlace.get(`${ns}:${port}`);
    if (!p) throw new Error(`no agent server on ${ns}:${port}`);
    return p;
  }
}
