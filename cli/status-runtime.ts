/**
 * `migration-mesh status`: the running side of one cluster, read-only through the API server. The
 * gateway pods of each generated gateway Deployment (its own selector) and, through the API server's
 * pod proxy, each pod's admin `/status` (proxy/src/runtime-status.ts: addresses held, tunnels per peer,
 * last errors) and, for `--moves`, its `/probe` (proxy/src/peer-probe.ts: each peer's gateways probed now);
 * and the virt-handler and sync controller pods (labels `kubevirt.io=virt-handler`,
 * `kubevirt.io=virt-synchronization-controller`) with the migration network in their
 * `k8s.v1.cni.cncf.io/network-status` annotation (interface `migration0`, as virt-operator reads it).
 */
import * as k8s from '@kubernetes/client-node';
import { AttachmentFacts, GatewayPodFacts, GatewayProbeView, GatewayRuntimeView } from '../src/report/status-facts';
import { GeneratedObject as Obj } from './generated-objects';

type Pod = k8s.V1Pod;
const isReady = (p: Pod) => !!p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
const selector = (labels: Record<string, string>) => Object.entries(labels).map(([k, v]) => `${k}=${v}`).join(',');

/** One short line for a failed request. */
export function why(e: unknown): string {
  const m = (e as Error)?.message ?? String(e);
  const body = (e as { body?: unknown })?.body;
  const json = (t: string) => { try { return JSON.parse(t) as { message?: string }; } catch { return undefined; } };
  const parsed = typeof body === 'string' ? json(body) : body as { message?: string } | undefined;
  const reason = parsed?.message ?? /"message":\s*"([^"]*)"/.exec(m)?.[1] ?? /reason: (.*)$/m.exec(m)?.[1]
    ?? /(ECONNREFUSED|ENOTFOUND|ETIMEDOUT|EHOSTUNREACH|ECONNRESET)[^\n]*/.exec(m)?.[0];
  return (reason ?? m.split('\n')[0]).slice(0, 200);
}

/** The runtime's /status, reduced to what status judges. */
function runtimeView(raw: unknown): GatewayRuntimeView {
  const r = (typeof raw === 'string' ? JSON.parse(raw) : raw) as {
    readiness?: string; addresses?: { address: string; held: boolean }[]; peers?: GatewayRuntimeView['peers']; lastErrors?: GatewayRuntimeView['lastErrors'];
  };
  if (!r || typeof r !== 'object' || !Array.isArray(r.addresses)) throw new Error('not a gateway /status answer');
  const held = r.addresses.filter((a) => a.held).map((a) => a.address);
  return { readiness: String(r.readiness), held, peers: r.peers ?? {}, lastErrors: r.lastErrors ?? [] };
}

/** The names of the generated gateway Deployments (one per replica). */
export const GATEWAY_DEPLOYMENT = /^migration-mesh-gateway-\d+$/;

/** The label selector of a generated Deployment's pods (its spec.selector.matchLabels). */
export function podSelector(d: Obj): string {
  return selector((d.spec as { selector?: { matchLabels?: Record<string, string> } } | undefined)?.selector?.matchLabels ?? {});
}

/** The admin port of the generated gateway Deployment (container port `metrics`). */
export function adminPort(d: Obj): number {
  type C = { name?: string; ports?: { name?: string; containerPort: number }[] };
  const cs = ((d.spec as { template?: { spec?: { containers?: C[] } } } | undefined)?.template?.spec?.containers) ?? [];
  return cs.flatMap((c) => c.ports ?? []).find((p) => p.name === 'metrics')?.containerPort ?? 15090;
}

/** The runtime's /probe, per peer (proxy/src/peer-probe.ts ProbeReport). */
function probeView(raw: unknown): Record<string, GatewayProbeView> {
  const r = (typeof raw === 'string' ? JSON.parse(raw) : raw) as { peers?: { peer: string; ok: boolean; ms: number; error?: string }[] };
  if (!r || typeof r !== 'object' || !Array.isArray(r.peers)) throw new Error('not a gateway /probe answer');
  return Object.fromEntries(r.peers.map((p) => [p.peer, { ok: p.ok === true, ms: Number(p.ms), ...(p.error ? { error: String(p.error) } : {}) }]));
}

/** One gateway pod's admin /status and, with `probe`, its /probe, both through the API server's pod proxy. */
async function podFacts(core: k8s.CoreV1Api, p: Pod, namespace: string, port: number, probe: boolean): Promise<GatewayPodFacts> {
  const name = p.metadata?.name ?? '?';
  const read = (path: string) => core.connectGetNamespacedPodProxyWithPath({ name: `${name}:${port}`, namespace, path });
  const [status, probed] = await Promise.all([
    read('status').then((b) => ({ runtime: runtimeView(b) }), (e) => ({ error: why(e) })),
    probe ? read('probe').then((b) => ({ probe: probeView(b) }), (e) => ({ probeError: why(e) })) : {},
  ]);
  return { pod: name, ready: isReady(p), ...status, ...probed };
}

/**
 * The gateway pods of the generated gateway Deployments, each with its admin /status (or why not); with `probe`
 * (`status --moves`) also its /probe: each pod probes its peers' gateways now, the pods in parallel.
 */
export async function gatewayPods(kc: k8s.KubeConfig, deployments: Obj[], probe = false): Promise<GatewayPodFacts[]> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const asks: Promise<GatewayPodFacts>[] = [];
  for (const d of deployments) {
    const namespace = d.metadata.namespace ?? 'default';
    const pods = await core.listNamespacedPod({ namespace, labelSelector: podSelector(d) });
    for (const p of pods.items) asks.push(podFacts(core, p, namespace, adminPort(d), probe));
  }
  return Promise.all(asks);
}

/** The VIP in the generated keepalived.conf (`virtual_ipaddress { ADDR/PREFIX dev IF }`). */
export function vipOf(objects: Obj[]): string | undefined {
  const conf = objects.filter((o) => o.kind === 'ConfigMap').map((o) => (o.data as Record<string, string> | undefined)?.['keepalived.conf']).find((x) => x);
  return conf ? /virtual_ipaddress\s*\{\s*([0-9A-Fa-f:.]+)/.exec(conf)?.[1] : undefined;
}

type NetworkStatus = { name?: string; interface?: string; ips?: string[] };

/** The virt-handler and sync controller pods in `namespace` and whether `network` (namespace/name) is on their migration0. */
export async function attachments(kc: k8s.KubeConfig, namespace: string, network: string): Promise<AttachmentFacts> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const full = network.includes('/') ? network : `${namespace}/${network}`;
  const pods: AttachmentFacts['pods'][number][] = [];
  // virt-operator labels the pod templates `kubevirt.io: <component>` (kubevirt/kubevirt
  // pkg/virt-operator/resource/generate/components/deployments.go: `newPodTemplateSpec` sets
  // `virtv1.AppLabel: podName`; `NewSynchronizationControllerDeployment` passes
  // `VirtSynchronizationControllerName = "virt-synchronization-controller"`; `NewHandlerDaemonSet` of the same package likewise for `virt-handler`)
  for (const [role, app] of [['virt-handler', 'virt-handler'], ['sync-controller', 'virt-synchronization-controller']] as const) {
    const list = await core.listNamespacedPod({ namespace, labelSelector: `kubevirt.io=${app}` });
    for (const p of list.items) {
      let entries: NetworkStatus[] = [];
      try { entries = JSON.parse(p.metadata?.annotations?.['k8s.v1.cni.cncf.io/network-status'] ?? '[]') as NetworkStatus[]; } catch { /* unparseable: not attached */ }
      const hit = (Array.isArray(entries) ? entries : []).find((x) => x.interface === 'migration0' && (x.name === full || `${namespace}/${x.name}` === full));
      const ips = hit?.ips ?? [];
      pods.push({ pod: p.metadata?.name ?? '?', role, attached: ips.length > 0, ips });
    }
  }
  return { network: full, pods };
}
