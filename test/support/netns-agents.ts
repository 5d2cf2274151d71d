/**
 * What the fleet tests in network namespaces run inside them: the test agent (`netns-agent.js`: echo and
 * source servers, clients, probes), the gateway runtime's CLI in place of the container image's
 * `migration-mesh-proxy` command, and a cluster's API server for the trust containers (`clusterApi`).
 * Shared by the fleet-netns, fleet-trust(-agent)-netns and VM migration tests.
 */
import * as fs from 'fs';
import * as path from 'path';
import { ChildProcess } from 'child_process';
import * as YAML from 'yaml';
import { FakeKubeApi } from '../../proxy/lib/testkit/fake-kube';
import { NetnsLab, STARTUP_MS } from './netns';
import { PROXY_CLI, gatewayNode } from './gateway-node';

const AGENT = path.join(__dirname, 'netns-agent.js');

/** The agent's command line: `node netns-agent.js MODE ARGS...`. */
export const agentCommand = (...args: (string | number)[]): string[] => [process.execPath, AGENT, ...args.map(String)];

/** What the agent's `client` mode reports: `ok` when its bytes came back equal; `error` otherwise (netns-agent.js). */
export interface ClientResult {
  readonly ok: boolean; readonly error?: string;
  readonly sent?: number; readonly received?: number; readonly sentSha?: string; readonly recvSha?: string;
  /** The client's own address (set when the echo came back). */
  readonly local?: string;
  readonly ms?: number;
}

/**
 * One echo client in namespace `ns`: `bytes` random bytes to `to:port`, half-close, the echo read back within
 * `timeoutMs` (and STARTUP_MS for its process to start: execJson).
 */
export async function agentClient(lab: NetnsLab, ns: string, to: string, port: number, bytes: number, timeoutMs = 15_000): Promise<ClientResult> {
  const [r] = await lab.execJson(ns, agentCommand('client', to, port, bytes, timeoutMs), timeoutMs);
  return r;
}

/** What a failover's retrying client reports: `ms` from `since` to its first success (undefined: none). */
export interface FirstSuccess { readonly ms?: number; readonly tries: number; readonly last?: ClientResult }

/**
 * A client for the time a failover takes, started before the failure: `go(since)` (call it right after the failure
 * at `since`) makes it try new connections of 64 KiB from `ns` to `to:port`, one after another (1.5 s
 * each, 100 ms apart, in the one agent process), until one carries its bytes or `deadlineMs` has passed. It used to
 * start a process per try; beside CPU hogs a node process took more than 5 s to start, and a fresh-clone run of
 * fleet-sites-netns had 3 tries in 15 s, none of which reached the network (2026-12-03).
 */
export async function retryClient(lab: NetnsLab, ns: string, to: string, port: number, deadlineMs: number)
  : Promise<{ go(since: number): Promise<FirstSuccess> }> {
  const p = lab.spawn(ns, agentCommand('retry', to, port, 64 * 1024, 1500, deadlineMs));
  const lines: any[] = [];
  onJsonLines(p, (o) => lines.push(o));
  await lab.waitForLine(p, /"ready"/, STARTUP_MS, `retrying client in ${ns}`);
  return {
    async go(since: number): Promise<FirstSuccess> {
      process.kill(p.pid!, 'SIGUSR2');
      // the agent's last try may begin just before the deadline: 1.5 s more, and a little for its line
      const end = since + deadlineMs + 3_000;
      for (;;) {
        const r = lines.find((l) => l.tries !== undefined) as (ClientResult & { tries: number; at: number }) | undefined;
        if (r) return { ms: r.ok ? r.at - since : undefined, tries: r.tries, last: r };
        if (Date.now() > end || p.exitCode !== null) {
          lab.kill(p);
          return { ms: undefined, tries: 0, last: { ok: false, error: `the retrying client reported nothing ${Date.now() - since} ms after the failure` } };
        }
        await new Promise((res) => setTimeout(res, 50));
      }
    },
  };
}

/** A container command of the generated Deployment, run with the built runtime (on the gateway's Node) and this test's config file. */
export function runtimeCommand(cmd: string[], configFile: string): string[] {
  const c = cmd.map((a) => (a.endsWith('/config.json') ? configFile : a));
  if (c[0] !== 'migration-mesh-proxy') throw new Error(`unexpected container command ${c[0]}`);
  return [gatewayNode(), PROXY_CLI, ...c.slice(1)];
}

/** The uid the runtime and trust containers run as (the image's `nonroot`). */
export const RUNTIME_UID = 65532;
/** The API server's address on a cluster's pod network (a bridge `br-pod` in the node namespace). */
export const API_ADDR = '10.244.0.1';
const API_PORT = 6443;

/** A cluster's API server as its trust containers reach it. */
export interface ClusterApi {
  /** The fake API server (in this process, on a unix socket). */
  api: FakeKubeApi;
  /** The relay serving it at API_ADDR:6443 in the node namespace. */
  relay: ChildProcess;
  /** A kubeconfig for `--kubeconfig` (that address, a bearer token, `namespace`), owned by RUNTIME_UID. */
  kubeconfig: string;
}

/**
 * The API server of cluster `name` for its trust containers: a fake API server serving `namespace` (where
 * KubeVirt's ConfigMaps are), reached over a pod network (the bridge `br-pod` in `node` holding API_ADDR;
 * give each pod an `eth0` on it, e.g. 10.244.0.10/24) through a relay, never over the shared network.
 * Plain HTTP (client-node wants insecure-skip-tls-verify for that); the image test runs the in-cluster
 * HTTPS form. Install virt-operator's model on `api` before starting trust containers.
 */
export async function clusterApi(lab: NetnsLab, tmp: string, node: string, name: string, namespace: string): Promise<ClusterApi> {
  lab.addBridge(node, 'br-pod');
  lab.run(['ip', '-n', node, 'addr', 'add', `${API_ADDR}/24`, 'dev', 'br-pod']);
  const api = new FakeKubeApi(namespace);
  await api.listenPath(path.join(tmp, `${name}-api.sock`));
  const relay = lab.spawn(node, agentCommand('forward', API_ADDR, API_PORT, api.path!));
  await lab.waitForLine(relay, /"listening"/, STARTUP_MS, `API relay of ${name}`);
  const kubeconfig = path.join(tmp, `${name}-kubeconfig.yaml`);
  fs.writeFileSync(kubeconfig, YAML.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'trust',
    clusters: [{ name, cluster: { server: `http://${API_ADDR}:${API_PORT}`, 'insecure-skip-tls-verify': true } }],
    users: [{ name: 'trust', user: { token: `token-of-${name}` } }],
    contexts: [{ name: 'trust', context: { cluster: name, user: 'trust', namespace } }],
  }), { mode: 0o600 });
  fs.chownSync(kubeconfig, RUNTIME_UID, RUNTIME_UID);
  return { api, relay, kubeconfig };
}

/**
 * Calls `each` with every JSON line (one starting with `{`) a process prints. A line can arrive split over two
 * reads of the pipe: the unfinished tail waits for the next one.
 */
export function onJsonLines(p: ChildProcess, each: (o: any) => void): void {
  let tail = '';
  p.stdout!.setEncoding('utf8').on('data', (text: string) => {
    const parts = (tail + text).split('\n');
    tail = parts.pop()!;
    for (const l of parts) if (l.startsWith('{')) each(JSON.parse(l));
  });
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
    onJsonLines(p, (o) => lines.push(o));
    await this.lab.waitForLine(p, /"listening"/, STARTUP_MS, `${mode} server in ${ns}`);
    this.byPlace.set(`${ns}:${port}`, p);
    return p;
  }

  /** The connections a server has finished (`{event: 'conn', remote, bytes}`). */
  connsOf(p: ChildProcess): any[] {
    return (this.lines.get(p) ?? []).filter((l) => l.event === 'conn');
  }

  /**
   * The connections a server has finished, once it has reported at least `n` or `ms` passed. The agent reports a
   * connection on its socket's 'close', which can come after its client has read the whole echo and exited, and
   * the line then crosses a pipe: reading `connsOf` right after the clients ended missed one (a fresh-clone run of
   * fleet-netns, 2026-12-03).
   */
  async connsAtLeast(p: ChildProcess, n: number, ms = 10_000): Promise<any[]> {
    for (const t0 = Date.now(); this.connsOf(p).length < n && Date.now() - t0 < ms && p.exitCode === null;) await new Promise((r) => setTimeout(r, 20));
    return this.connsOf(p);
  }

  /** The server started on `port` in `ns`. */
  at(ns: string, port: number): ChildProcess {
    const p = this.byPlace.get(`${ns}:${port}`);
    if (!p) throw new Error(`no agent server on ${ns}:${port}`);
    return p;
  }
}
