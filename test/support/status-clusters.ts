/**
 * Fake clusters for `migration-mesh status` tests: one contract fake API server per cluster
 * (proxy/src/testkit/fake-kube-cluster.ts) holding the cluster's generated objects, its kubevirt-ca,
 * virt-handler and sync controller pods with their network-status annotation, and a gateway pod per
 * generated gateway Deployment whose admin endpoint, behind the fake's pod proxy, is a real gateway
 * runtime started from the generated config.json (listeners moved to loopback, plaintext, no trust).
 */
import { spawn } from 'child_process';
import * as fs from 'fs';
import * as net from 'net';
import * as path from 'path';
import * as yaml from 'yaml';
import { startGateway, type GatewayHandle } from '../../proxy/src/gateway';
import { makeCert } from '../../proxy/src/testkit/ca-certs';
import { FakeClusterApi } from '../../proxy/src/testkit/fake-kube-cluster';
import { freePort, silent } from '../../proxy/src/testkit/helpers';

export type Cert = ReturnType<typeof makeCert>;

export interface FakeCluster { api: FakeClusterApi; gateways: GatewayHandle[]; close(): Promise<void> }

export interface ClusterOptions {
  /** Change a live object before it is stored (drift). */
  edit?: (o: any) => void;
  /** No gateway pod holds the VIP. */
  vipUnheld?: boolean;
  /** This virt-handler pod has no migration0 in its network-status. */
  detachedHandler?: string;
  /** Extra live objects (VMs, namespaces, NADs, storage classes). */
  extra?: any[];
  /** HCO delivery: change the KubeVirt CR HCO wrote (from `hcoWrites`) before it is stored. */
  editHcoKubevirt?: (kv: any) => void;
}

/** KubeVirt gates HCO always writes (hyperconverged-cluster-operator controllers/handlers/kubevirt.go `hardCodeKvFgs`). */
const HCO_OWN_GATES = ['CPUManager', 'Snapshot', 'ExpandDisks', 'HostDevices', 'VMExport', 'KubevirtSeccompProfile'];

/** JSON patch `add` (the only op our HCO form writes) on a plain object; anything else is a test error. */
function jsonPatchAdd(doc: any, op: { op: string; path: string; value: unknown }): void {
  if (op.op !== 'add') throw new Error(`this model applies only add, not ${op.op}`);
  const keys = op.path.split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
  const last = keys.pop()!;
  const parent = keys.reduce((o, k) => o[k], doc);
  if (Array.isArray(parent)) parent.splice(last === '-' ? parent.length : Number(last), 0, op.value);
  else parent[last] = op.value;
}

/**
 * The KubeVirt CR HCO writes from a HyperConverged CR, modelled from its code (not from ours):
 * `kubevirt-<name>` in the HyperConverged's namespace, liveMigrationConfig copied to
 * configuration.migrations, HCO's own gates, then the jsonpatch annotation applied.
 */
export function hcoWrites(hc: any): any {
  const kv: any = {
    apiVersion: 'kubevirt.io/v1', kind: 'KubeVirt',
    metadata: { name: `kubevirt-${hc.metadata.name}`, namespace: hc.metadata.namespace, labels: { 'app.kubernetes.io/managed-by': 'hco-operator' } },
    spec: { configuration: { migrations: { ...hc.spec?.liveMigrationConfig }, developerConfiguration: { featureGates: [...HCO_OWN_GATES] } } },
  };
  for (const op of JSON.parse(hc.metadata.annotations?.['kubevirt.kubevirt.io/jsonpatch'] ?? '[]')) jsonPatchAdd(kv, op);
  return kv;
}

const KINDS = [
  { apiVersion: 'v1', kind: 'Namespace', namespaced: false },
  { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', namespaced: true },
  { apiVersion: 'storage.k8s.io/v1', kind: 'StorageClass', namespaced: false },
  { apiVersion: 'k8s.cni.cncf.io/v1', kind: 'NetworkAttachmentDefinition', namespaced: true },
];

const ready = (ip: string) => ({ phase: 'Running', podIP: ip, conditions: [{ type: 'Ready', status: 'True' }] });

function kubevirtPods(api: FakeClusterApi, ns: string, o: ClusterOptions): void {
  const pods = [['virt-handler-4xk2p', 'virt-handler', '10.200.0.11'], ['virt-handler-9fz7q', 'virt-handler', '10.200.0.12'], ['virt-synchronization-controller-5c8d-x2', 'virt-synchronization-controller', '10.200.0.13']];
  for (const [name, app, ip] of pods) {
    const status = [{ name: 'ovn-kubernetes', interface: 'eth0', ips: ['10.128.0.9'], default: true }];
    if (o.detachedHandler !== name) status.push({ name: `${ns}/lm-migration`, interface: 'migration0', ips: [ip], default: false });
    api.seed({
      apiVersion: 'v1', kind: 'Pod',
      metadata: { name, namespace: ns, labels: { 'kubevirt.io': app }, annotations: { 'k8s.v1.cni.cncf.io/network-status': JSON.stringify(status) } },
      status: ready('10.128.0.9'),
    } as any);
  }
}

/** A real gateway for replica `r` from the generated config.json; it "holds" `held`. */
async function gatewayFor(objects: any[], held: string[]): Promise<GatewayHandle> {
  const cm = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'migration-mesh-gateway');
  const cfg = JSON.parse(cm.data['config.json']);
  delete cfg.trust;
  const at = async () => ({ host: '127.0.0.1', port: await freePort() });
  cfg.listen = { intercept: await at(), tunnel: await at(), admin: await at() };
  cfg.tls = { mode: 'plaintext' };
  return startGateway(cfg, { logger: silent, interfaceAddresses: () => new Set(held) });
}

/**
 * Start one fake cluster: its generated objects (gateways ready), kubevirt-ca = own CA + `trusts`, in
 * the KubeVirt (or HyperConverged) namespace; with HCO delivery also the KubeVirt CR HCO writes.
 */
export async function startCluster(objects: any[], ca: Cert, trusts: Cert[], o: ClusterOptions = {}): Promise<FakeCluster> {
  const kvObj = objects.find((x) => x.kind === 'KubeVirt' || x.kind === 'HyperConverged');
  const ns: string = kvObj?.metadata.namespace ?? 'kubevirt';
  const api = new FakeClusterApi(ns);
  await api.listen();
  api.serveKinds([...objects.map((x) => ({ apiVersion: x.apiVersion, kind: x.kind, namespaced: x.metadata.namespace !== undefined })), ...KINDS]);
  for (const x of objects) {
    const live = JSON.parse(JSON.stringify(x));
    if (live.kind === 'Deployment') live.status = { replicas: 1, readyReplicas: 1 };
    o.edit?.(live);
    api.seed(live);
  }
  for (const x of o.extra ?? []) api.seed(x);
  api.put('kubevirt-ca', { 'ca-bundle': [ca, ...trusts].map((c) => c.pem).join('') });
  kubevirtPods(api, ns, o);
  if (kvObj?.kind === 'HyperConverged') {
    const kv = hcoWrites(kvObj);
    o.editHcoKubevirt?.(kv);
    api.seed(kv);
  }
  const conf: string | undefined = objects.find((x) => x.kind === 'ConfigMap' && x.data?.['keepalived.conf'])?.data['keepalived.conf'];
  const vip = conf && /virtual_ipaddress\s*\{\s*([0-9.]+)/.exec(conf)?.[1];
  const gateways: GatewayHandle[] = [];
  for (const d of objects.filter((x) => x.kind === 'Deployment' && /^migration-mesh-gateway-\d+$/.test(x.metadata.name))) {
    const r = Number(d.metadata.name.split('-').pop());
    const pod = `${d.metadata.name}-7d9f8-q${r}`;
    api.seed({ apiVersion: 'v1', kind: 'Pod', metadata: { name: pod, namespace: d.metadata.namespace, labels: d.spec.selector.matchLabels }, status: ready(`10.128.1.${r + 1}`) } as any);
    const g = await gatewayFor(objects, r === 0 && vip && !o.vipUnheld ? [vip] : []);
    gateways.push(g);
    api.podProxy(d.metadata.namespace, pod, 15090, { host: '127.0.0.1', port: g.addresses().admin.port });
  }
  return { api, gateways, close: async () => { for (const g of gateways) await g.close(); await api.close(); } };
}

/**
 * Point each fake cluster's gateways' peer table at the other clusters' real gateways (their tunnel listeners on
 * loopback, plaintext as these gateways run), so that a gateway's admin /probe reaches them and passes.
 */
export function linkGateways(clusters: Record<string, FakeCluster>): void {
  for (const c of Object.values(clusters)) {
    for (const g of c.gateways) {
      const cfg = g.config();
      const peers = cfg.peers.map((p) => (clusters[p.cluster]
        ? { ...p, gateways: clusters[p.cluster].gateways.map((x) => ({ host: '127.0.0.1', port: x.addresses().tunnel.port })) } : p));
      if (!g.reload({ ...cfg, peers })) throw new Error(`gateway of ${cfg.cluster}: the linked peer table was refused`);
    }
  }
}

/** A kubeconfig with one context `ctx-NAME` per server. */
export function kubeconfig(file: string, servers: Record<string, string>): void {
  fs.writeFileSync(file, yaml.stringify({
    apiVersion: 'v1', kind: 'Config',
    clusters: Object.entries(servers).map(([n, server]) => ({ name: n, cluster: { server, 'insecure-skip-tls-verify': true } })), // plain HTTP: client-node wants the flag
    users: [{ name: 'viewer', user: { token: 'read-only' } }],
    contexts: Object.keys(servers).map((n) => ({ name: `ctx-${n}`, context: { cluster: n, user: 'viewer' } })),
    'current-context': `ctx-${Object.keys(servers)[0]}`,
  }));
}

export async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
  const port = (s.address() as net.AddressInfo).port;
  await new Promise<void>((r) => s.close(() => r()));
  return port;
}

/**
 * The bound a test gives each cluster unless it passes `--timeout` itself. The product's default (10 s) is
 * meant for real clusters; a fake cluster in a loaded test process answered a whole status (about 25 requests)
 * in more than 10 s beside two CPU hogs (run t41: "no answer within 10 s" for a healthy cluster). A test of
 * a healthy answer must not rest on that bound; the tests of the bound pass `--timeout` and hold the server.
 */
export const STATUS_TEST_TIMEOUT = ['--timeout', '60'];

/** `args` with STATUS_TEST_TIMEOUT added unless they give `--timeout` (or are empty: a usage test). */
export const withTestTimeout = (args: string[]): string[] => (args.length === 0 || args.includes('--timeout') ? args : [...args, ...STATUS_TEST_TIMEOUT]);

/**
 * `migration-mesh status ARGV` from the built binary in a child process (client-node is an ES module:
 * Node 20.19+ requires it, jest's module loader cannot), asynchronously so the fake API servers in the
 * test's process keep answering; with STATUS_TEST_TIMEOUT unless ARGV gives `--timeout`.
 */
export function runStatus(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const bin = path.join(__dirname, '..', '..', 'lib', 'cli', 'cli.js');
  return new Promise((resolve) => {
    const p = spawn(process.execPath, [bin, 'status', ...withTestTimeout(argv)], { env: { ...process.env, CI: '1' } });
    let out = '';
    let err = '';
    p.stdout.on('data', (c) => { out += c; });
    p.stderr.on('data', (c) => { err += c; });
    p.on('close', (code) => resolve({ code: code ?? -1, out, err }));
  });
}
