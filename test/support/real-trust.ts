/**
 * The gateway's trust exchange on real API servers (test/support/real-kube.ts): per cluster the objects the
 * trust container depends on, applied from a synthesized tree as the example's output holds them (Namespace,
 * ServiceAccount, Role, RoleBinding), `kubevirt-ca` and `kubevirt-external-ca` created as virt-operator creates
 * them, then the REAL runtime (`migration-mesh-proxy run`) and the REAL trust container (`migration-mesh-proxy
 * trust`) as processes, the trust container with a ServiceAccount token from TokenRequest in a projected-volume
 * layout (token, ca.crt, namespace) named by a kubeconfig (`token-file`, `certificate-authority`).
 *
 * Also here: the API servers' audit events (written to their stdout, i.e. their log file), etcd compaction, and a
 * network namespace whose only way to its API server is a veth and a relay, so that packets to that server can be
 * dropped (iptables inside the namespace: nothing of it outlives the namespace). Every process started here is
 * killed at `stop()` or when the test process exits.
 */
import { ChildProcess, execFileSync } from 'node:child_process';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { parse } from 'yaml';
import { KubeObject, stagesOf } from './real-apply';
import { spawnLogged, type RealCluster } from './real-kube';
import { PROXY_CLI, gatewayNode } from './gateway-node';


/** SIGKILL and wait (at most 5 s) for the exit. */
export async function killProcess(p: ChildProcess | undefined): Promise<void> {
  if (!p || p.exitCode !== null || p.signalCode !== null) return;
  let timer: NodeJS.Timeout | undefined;
  const exited = new Promise<void>((r) => p.once('exit', () => r()));
  p.kill('SIGKILL');
  await Promise.race([exited, new Promise((r) => { timer = setTimeout(r, 5000); })]);
  clearTimeout(timer);
}

/** Open descriptors of a process (/proc/PID/fd). */
export const openFds = (pid: number): number => fs.readdirSync(`/proc/${pid}/fd`).length;

/** CPU seconds (user + system) a live process has used so far (/proc/PID/stat, clock ticks of 1/100 s). */
export function cpuSeconds(pid: number): number {
  const f = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(f[11]) + Number(f[12])) / 100;
}

// ------------------------------------------------------------------------------------------------
// what virt-operator and the example tree put on each cluster

/** The objects of a synthesized tree the trust container depends on, in its rollout order (kustomization). */
export function trustObjects(tree: string): KubeObject[] {
  const kinds = new Set(['Namespace', 'ServiceAccount', 'Role', 'RoleBinding']);
  const all = stagesOf(tree, () => { throw new Error(`${tree}: a tree rendered by kustomize is not expected here`); }).flatMap((s) => s.objects);
  return all.filter((o) => kinds.has(o.kind));
}

/** The trust container's Role and its subject, as the tree holds them. */
export function trustRole(objects: readonly KubeObject[]): { role: KubeObject; serviceAccount: { namespace: string; name: string } } {
  const role = objects.find((o) => o.kind === 'Role');
  const binding = objects.find((o) => o.kind === 'RoleBinding') as (KubeObject & { subjects: Array<{ kind: string; name: string; namespace: string }> }) | undefined;
  const sa = binding?.subjects.find((s) => s.kind === 'ServiceAccount');
  if (!role || !sa) throw new Error('the tree holds no trust Role bound to a ServiceAccount');
  return { role, serviceAccount: { namespace: sa.namespace, name: sa.name } };
}

/**
 * The metadata virt-operator v1.8.4 gives `kubevirt-ca` and `kubevirt-external-ca` when it creates them:
 * components.NewKubeVirtCAConfigMap (managed-by) and injectOperatorMetadata (apply/reconcile.go: component,
 * managed-by, the install-strategy annotations and the KubeVirt CR's generation). No ownerReferences.
 */
export function virtOperatorConfigMap(name: string, namespace: string, bundle: string): KubeObject {
  return {
    apiVersion: 'v1', kind: 'ConfigMap',
    metadata: {
      name, namespace,
      labels: { 'app.kubernetes.io/component': 'kubevirt', 'app.kubernetes.io/managed-by': 'virt-operator' },
      annotations: {
        'kubevirt.io/install-strategy-version': 'v1.8.4', 'kubevirt.io/install-strategy-registry': 'quay.io/kubevirt',
        'kubevirt.io/install-strategy-identifier': '2b1bd5d4e1b8a5d0c9a3f2e7b6c4d8e9f0a1b2c3', 'kubevirt.io/generation': '1',
      },
    },
    data: { 'ca-bundle': bundle },
  };
}

/** SHA-256 fingerprints (as node:crypto writes them) of the certificates in a PEM bundle. */
export function fingerprints(pem: string | undefined): string[] {
  return (pem ?? '').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g)?.map((b) => new crypto.X509Certificate(b).fingerprint256) ?? [];
}

// ------------------------------------------------------------------------------------------------
// one cluster's gateway: runtime and trust container

export interface GatewayPorts { intercept: number; tunnel: number; admin: number }

/** The runtime's config: the example's fleet, cluster and trust settings, on loopback with the test's gateway certificates. */
export function runtimeConfig(o: {
  fleet: string; cluster: string; ports: GatewayPorts; peers: Array<{ cluster: string; tunnel: number; cidr: string }>; cidr: string;
  tls: { ca: string; cert: string; key: string }; socket: string; repushIntervalMs: number;
}): object {
  return {
    version: 1, fleet: o.fleet, cluster: o.cluster,
    listen: { intercept: { host: '127.0.0.1', port: o.ports.intercept }, tunnel: { host: '127.0.0.1', port: o.ports.tunnel }, admin: { host: '127.0.0.1', port: o.ports.admin } },
    localCidrs: [o.cidr],
    peers: o.peers.map((p) => ({ cluster: p.cluster, cidrs: [p.cidr], gateways: [{ host: '127.0.0.1', port: p.tunnel }] })),
    tls: { mode: 'mtls', caFile: o.tls.ca, certFile: o.tls.cert, keyFile: o.tls.key },
    limits: { handshakeTimeoutMs: 2000, dialTimeoutMs: 2000 },
    trust: { socket: o.socket, repushIntervalMs: o.repushIntervalMs, retryMs: 200 },
  };
}

/** The repush interval and fleet name of a tree's gateway config (its ConfigMap's config.json). */
export function treeGatewayConfig(tree: string): { fleet: string; cluster: string; repushIntervalMs: number } {
  const file = fs.readdirSync(tree).find((f) => /^ConfigMap\..*migration-mesh-gateway\.yaml$/.test(f));
  if (!file) throw new Error(`${tree}: no gateway ConfigMap`);
  const cfg = JSON.parse((parse(fs.readFileSync(path.join(tree, file), 'utf8')) as { data: Record<string, string> }).data['config.json']);
  return { fleet: cfg.fleet, cluster: cfg.cluster, repushIntervalMs: cfg.trust.repushIntervalMs };
}

/** A kubeconfig naming a projected token and CA file (re-read by nothing: the token is valid for the hour). */
export function tokenKubeconfig(file: string, server: string, saDir: string, tlsServerName?: string): string {
  fs.writeFileSync(file, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': 'c',
    clusters: [{ name: 'c', cluster: { server, 'certificate-authority': path.join(saDir, 'ca.crt'), ...(tlsServerName ? { 'tls-server-name': tlsServerName } : {}) } }],
    users: [{ name: 'trust', user: { 'token-file': path.join(saDir, 'token') } }],
    contexts: [{ name: 'c', context: { cluster: 'c', user: 'trust' } }],
  }));
  return file;
}

/** `migration-mesh-proxy run` (the addon must load: the product refuses to start half-working otherwise). */
export function startRuntime(configFile: string, log: string): ChildProcess {
  return spawnLogged(gatewayNode(), [PROXY_CLI, 'run', '--config', configFile], log);
}

/** `migration-mesh-proxy trust`, optionally inside a network namespace (`ip netns exec` execs, so the pid is node's). */
export function startTrust(configFile: string, namespace: string, kubeconfig: string, log: string, netns?: string): ChildProcess {
  const args = [PROXY_CLI, 'trust', '--config', configFile, '--namespace', namespace, '--kubeconfig', kubeconfig];
  return netns ? spawnLogged('ip', ['netns', 'exec', netns, gatewayNode(), ...args], log) : spawnLogged(gatewayNode(), args, log);
}

/** The JSON lines of a pino log. */
export function logLines(file: string): Array<Record<string, any>> {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, 'utf8').split('\n').filter((l) => l.startsWith('{')).flatMap((l) => { try { return [JSON.parse(l)]; } catch { return []; } });
}

// ------------------------------------------------------------------------------------------------
// audit

/** The audit policy: metadata of every request from a ServiceAccount of `namespace`; one event per request stage after RequestReceived. */
export function auditPolicy(file: string, namespace: string): string {
  fs.writeFileSync(file, JSON.stringify({
    apiVersion: 'audit.k8s.io/v1', kind: 'Policy', omitStages: ['RequestReceived'],
    rules: [{ level: 'Metadata', userGroups: [`system:serviceaccounts:${namespace}`] }, { level: 'None' }],
  }));
  return file;
}

/** kube-apiserver flags that write audit events to its stdout (the harness's log file of the cluster). */
export const auditFlags = (policy: string) => [`--audit-policy-file=${policy}`, '--audit-log-path=-'];

export interface AuditEvent {
  auditID: string; stage: string; verb: string; requestURI: string; stageTimestamp: string;
  user: { username: string; extra?: Record<string, string[]> };
  objectRef?: { resource?: string; namespace?: string; name?: string };
  responseStatus?: { code?: number; reason?: string };
  annotations?: Record<string, string>;
}

/** The audit events a cluster's API server wrote so far (every start of it: the log file is appended to). */
export function auditEvents(cluster: RealCluster): AuditEvent[] {
  const log = path.join(cluster.dir, 'kube-apiserver.log');
  return fs.readFileSync(log, 'utf8').split('\n').filter((l) => l.startsWith('{"kind":"Event"')).map((l) => JSON.parse(l) as AuditEvent);
}

/** The credential id the API server records for a bound ServiceAccount token (`JTI=<its jti claim>`). */
export function credentialId(token: string): string {
  const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString('utf8')) as { jti?: string };
  if (!claims.jti) throw new Error('the token has no jti claim');
  return `JTI=${claims.jti}`;
}

export const byCredential = (events: readonly AuditEvent[], id: string) =>
  events.filter((e) => e.user.extra?.['authentication.kubernetes.io/credential-id']?.includes(id));

// ------------------------------------------------------------------------------------------------
// etcd

async function etcdPost(url: string, api: string, body: object): Promise<any> {
  const r = await fetch(`${url}/v3/${api}`, { method: 'POST', body: JSON.stringify(body), signal: AbortSignal.timeout(10_000) });
  if (!r.ok) throw new Error(`etcd ${api}: HTTP ${r.status} ${await r.text()}`);
  return r.json();
}

/** Compacts etcd's whole keyspace (every cluster of the fleet) up to its current revision; resolves that revision. */
export async function compactEtcd(url: string): Promise<number> {
  const range = await etcdPost(url, 'kv/range', { key: Buffer.from('/').toString('base64'), limit: 1 });
  const revision = Number(range.header.revision);
  await etcdPost(url, 'kv/compaction', { revision: String(revision), physical: true });
  return revision;
}

// ------------------------------------------------------------------------------------------------
// a network namespace with a droppable path to one API server

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 15_000 });

function iptablesCommand(): string {
  for (const c of ['iptables-legacy', 'iptables']) {
    try { sh('sh', ['-c', `command -v ${c}`]); return c; } catch { /* next */ }
  }
  throw new Error('neither iptables-legacy nor iptables is installed (Debian package iptables)');
}

/**
 * A network namespace `mm<pid>-trust` (netns.ts's reaper removes it if this process dies) joined to this one by a
 * veth pair on a /30 of 10.253.0.0/16; a relay in this process on the host side forwards to an API server on
 * 127.0.0.1 (its serving certificate names 127.0.0.1 and localhost: clients in the namespace use
 * tls-server-name localhost). `blackHole(true)` drops, inside the namespace, every packet to and from the relay:
 * connections hang, new ones never complete, nothing answers or resets.
 */
export class DroppableLink {
  readonly ns = `mm${process.pid}-trust`;
  private readonly hostIf = `mmt${process.pid % 1_000_000}`;
  readonly hostAddr: string;
  private readonly nsAddr: string;
  private relay?: net.Server;
  private readonly piped = new Set<net.Socket>();
  private readonly iptables = iptablesCommand();
  private rules: string[][] = [];
  port = 0;

  constructor() {
    const taken = sh('ip', ['-4', '-o', 'addr', 'show']);
    let base = '';
    for (let i = 0; i < 50 && !base; i++) {
      const b = `10.253.${Math.floor(Math.random() * 256)}.${4 * Math.floor(Math.random() * 64)}`;
      const prefix = b.split('.').slice(0, 3).join('.');
      if (!taken.includes(` ${prefix}.`)) base = b;
    }
    if (!base) throw new Error('no free /30 in 10.253.0.0/16');
    const [a, b, c, d] = base.split('.').map(Number);
    this.hostAddr = `${a}.${b}.${c}.${d + 1}`;
    this.nsAddr = `${a}.${b}.${c}.${d + 2}`;
    process.once('exit', () => { try { sh('ip', ['netns', 'del', this.ns]); } catch { /* gone */ } });
    sh('ip', ['netns', 'add', this.ns]);
    sh('ip', ['-n', this.ns, 'link', 'set', 'lo', 'up']);
    sh('ip', ['link', 'add', this.hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', this.ns]);
    sh('ip', ['addr', 'add', `${this.hostAddr}/30`, 'dev', this.hostIf]);
    sh('ip', ['link', 'set', this.hostIf, 'up']);
    sh('ip', ['-n', this.ns, 'addr', 'add', `${this.nsAddr}/30`, 'dev', 'eth0']);
    sh('ip', ['-n', this.ns, 'link', 'set', 'eth0', 'up']);
  }

  /** Relays hostAddr:port (chosen here) to 127.0.0.1:target; resolves the URL the namespace uses. */
  async relayTo(target: number): Promise<string> {
    this.relay = net.createServer((down) => {
      const up = net.connect(target, '127.0.0.1');
      for (const s of [down, up]) {
        this.piped.add(s);
        s.on('close', () => { this.piped.delete(s); down.destroy(); up.destroy(); });
        s.on('error', () => s.destroy());
      }
      down.pipe(up).pipe(down);
    });
    await new Promise<void>((r, j) => this.relay!.once('error', j).listen(0, this.hostAddr, () => r()));
    this.port = (this.relay.address() as net.AddressInfo).port;
    return `https://${this.hostAddr}:${this.port}`;
  }

  /** Drop (or stop dropping) every packet between the namespace and the relay. */
  blackHole(on: boolean): void {
    if (on && !this.rules.length) {
      this.rules = [
        ['OUTPUT', '-d', this.hostAddr, '-p', 'tcp', '--dport', String(this.port), '-j', 'DROP'],
        ['INPUT', '-s', this.hostAddr, '-p', 'tcp', '--sport', String(this.port), '-j', 'DROP'],
      ];
      for (const r of this.rules) sh('ip', ['netns', 'exec', this.ns, this.iptables, '-w', '-A', ...r]);
    } else if (!on) {
      for (const r of this.rules) sh('ip', ['netns', 'exec', this.ns, this.iptables, '-w', '-D', ...r]);
      this.rules = [];
    }
  }

  /** Connections the relay holds (each one the namespace's client still has open). */
  get relayed(): number { return this.piped.size / 2; }

  async close(): Promise<void> {
    for (const s of this.piped) s.destroy();
    if (this.relay) await new Promise<void>((r) => this.relay!.close(() => r()));
    try { sh('ip', ['netns', 'del', this.ns]); } catch { /* already gone */ }
  }
}
