/**
 * watch-moves' byte meter: for a running move, virt-handler's /metrics on the source VMI's node and the source
 * cluster's gateways' admin /metrics, each read through its API server's pod proxy
 * (`/api/v1/namespaces/NS/pods/[https:]POD:PORT/proxy/metrics`, as `status` reads the gateways' /status), within a
 * timeout, at most once per pod per interval; src/forklift/move-bytes.ts reads the text. A refused or failed read
 * never ends the watch: the move's bytes are unknown with the reason.
 *
 * virt-handler's pods: label `kubevirt.io=virt-handler` in the KubeVirt namespace, container port `metrics` 8443,
 * TLS (kubevirt.io/kubevirt v1.8.4,
 * https://github.com/kubevirt/kubevirt/blob/v1.8.4/pkg/virt-operator/resource/generate/components/daemonsets.go,
 * `NewHandlerDaemonSet`: selector `kubevirt.io: virt-handler`, `--port 8443`, `--max-metric-requests 3`;
 * cmd/virt-handler/virt-handler.go serves /metrics with ListenAndServeTLS). The source node: the source VMIM's
 * `status.migrationState.sourceNode`, else the VMI's `status.nodeName`.
 */
import * as http from 'node:http';
import * as https from 'node:https';
import * as path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { parsePromText } from '../src/base/prom-text';
import { DELIVERY_KINDS } from '../src/kubevirt/delivery-forms';
import { MigrationReading, MoveBytes, TUNNEL_BYTES_METRIC, TunnelBytes, TunnelReading, migrationReading, moveBytes, tunnelBytes, tunnelCounters } from '../src/forklift/move-bytes';
import { VmimStatus } from '../src/forklift/progress';
import { GeneratedObject, generatedObjects } from './generated-objects';
import { readBoundedBody } from './bounded-body';
import { PlannedMove } from './move-clients';
import { ReuseWindow } from './reuse-window';
import { GATEWAY_DEPLOYMENT, adminPort, podSelector, why } from './status-runtime';

/** What a body through the pod proxy may be at most, in bytes as received (virt-handler's /metrics on a node with many VMIs is a few MiB). */
const MAX_BODY_BYTES = 32 * 1024 * 1024;
const VIRT_HANDLER_SELECTOR = 'kubevirt.io=virt-handler';
const VIRT_HANDLER_PORT = 8443;

/** GET `urlPath` on the context's API server as its user; rejects after `timeoutMs` or on a status other than 200. */
async function apiGetText(kc: k8s.KubeConfig, urlPath: string, timeoutMs: number): Promise<string> {
  const server = kc.getCurrentCluster()?.server;
  if (!server) throw new Error('the context names no cluster server');
  const opts: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(opts);
  return new Promise((resolve, reject) => {
    // appended, not resolved: a server URL may carry a path (an API proxy's /k8s/clusters/<id>)
    const url = new URL(`${server.replace(/\/+$/, '')}${urlPath}`);
    const req = (url.protocol === 'http:' ? http : https).request(url, { ...opts, method: 'GET', timeout: timeoutMs }, (res) => {
      readBoundedBody(res, MAX_BODY_BYTES,
        (body) => (res.statusCode === 200 ? resolve(body) : reject(new Error(`HTTP ${res.statusCode}: ${proxyMessage(body)}`))),
        (e) => req.destroy(e));
      res.on('error', reject);
    });
    const timer = setTimeout(() => req.destroy(new Error(`no answer in ${timeoutMs} ms`)), timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('timeout', () => req.destroy(new Error(`no answer in ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}

/** The message of an API server Status body, else the body's first line. */
function proxyMessage(body: string): string {
  try { return String((JSON.parse(body) as { message?: string }).message ?? body).slice(0, 160); } catch { return body.split('\n')[0].slice(0, 160); }
}

/** A cluster's parts the meter reads, from the objects synth wrote for it. */
interface ClusterParts { kubevirtNamespace: string; gateways: GeneratedObject[] }

function clusterParts(dir: string): ClusterParts {
  const objects = generatedObjects(dir);
  return {
    kubevirtNamespace: objects.find((o) => DELIVERY_KINDS.has(o.kind))?.metadata.namespace ?? 'kubevirt',
    gateways: objects.filter((o) => o.kind === 'Deployment' && GATEWAY_DEPLOYMENT.test(o.metadata.name)),
  };
}

export interface MeterOptions {
  readonly kcOf: (cluster: string) => k8s.KubeConfig;
  /** dist/<fleet>: where each cluster's generated objects are. */
  readonly fleetDir: string;
  /** At most one read per pod per this many ms. @default 5000 (virt-handler polls libvirt every 5 s) */
  readonly intervalMs?: number;
  /** @default 4000 */
  readonly timeoutMs?: number;
  readonly now?: () => number;
}

/** Reads and remembers, per move, what it needs for rates: the previous reading of each source. */
export class MoveMeter {
  private readonly parts = new Map<string, ClusterParts>();
  /** The reads of the current interval (older ones are dropped, not kept for the whole watch). */
  private readonly cache: ReuseWindow<Promise<string>>;
  /** Per move: the newest migration reading and the one before it (the rate's base). */
  private readonly readings = new Map<string, { cur: MigrationReading; prev?: MigrationReading }>();
  /** Per source->target: the last gateway reading and what it gave (one per interval, shared by the moves on that tunnel). */
  private readonly tunnels = new Map<string, { reading: TunnelReading; bytes: TunnelBytes }>();
  private readonly now: () => number;

  constructor(private readonly o: MeterOptions) {
    this.now = o.now ?? Date.now;
    this.cache = new ReuseWindow(o.intervalMs ?? 5000);
  }

  private part(cluster: string): ClusterParts {
    if (!this.parts.has(cluster)) this.parts.set(cluster, clusterParts(path.join(this.o.fleetDir, cluster)));
    return this.parts.get(cluster)!;
  }

  /** A GET through `cluster`'s API server, served from the last one when younger than the interval (one read per pod per interval). */
  private get(cluster: string, urlPath: string): Promise<string> {
    return this.cache.get(`${cluster} ${urlPath}`, this.now(), () => {
      const text = apiGetText(this.o.kcOf(cluster), urlPath, this.o.timeoutMs ?? 4000);
      text.catch(() => undefined);
      return text;
    });
  }

  /** The source node of the move's VMI: the source VMIM's migrationState, else the VMI's status. */
  private async sourceNode(m: PlannedMove, vmim?: VmimStatus): Promise<string> {
    if (vmim?.migrationState?.sourceNode) return vmim.migrationState.sourceNode;
    const vmi = JSON.parse(await this.get(m.from, `/apis/kubevirt.io/v1/namespaces/${m.vm.namespace}/virtualmachineinstances/${m.vm.name}`)) as { status?: { nodeName?: string } };
    if (!vmi.status?.nodeName) throw new Error(`VMI ${m.vm.namespace}/${m.vm.name} has no node yet`);
    return vmi.status.nodeName;
  }

  /** virt-handler's bytes of the move's migration, or why they are unknown. */
  async migration(m: PlannedMove, vmim?: VmimStatus): Promise<MoveBytes> {
    const key = `${m.plan} ${m.vm.namespace}/${m.vm.name}`;
    try {
      const node = await this.sourceNode(m, vmim);
      const ns = this.part(m.from).kubevirtNamespace;
      const pods = JSON.parse(await this.get(m.from, `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(VIRT_HANDLER_SELECTOR)}&fieldSelector=${encodeURIComponent(`spec.nodeName=${node}`)}`)) as k8s.V1PodList;
      const pod = pods.items?.[0]?.metadata?.name;
      if (!pod) return { source: 'virt-handler', unknown: `no virt-handler pod on ${m.from}'s node ${node}` };
      const text = await this.get(m.from, `/api/v1/namespaces/${ns}/pods/https:${pod}:${VIRT_HANDLER_PORT}/proxy/metrics`);
      const r = migrationReading(parsePromText(text), m.vm, this.now());
      if (!r) return { source: 'virt-handler', unknown: `virt-handler ${pod} has no migration metrics for ${m.vm.namespace}/${m.vm.name} yet` };
      const h = this.readings.get(key);
      const next = !h ? { cur: r } : r.atMs > h.cur.atMs || r.processed !== h.cur.processed ? { cur: r, prev: h.cur } : h;
      this.readings.set(key, next);
      return moveBytes(next.cur, next.prev);
    } catch (e) {
      return { source: 'virt-handler', unknown: `virt-handler metrics on ${m.from}: ${why(e)}` };
    }
  }

  /** What the source cluster's gateways carried to the target, or why it is unknown. */
  async tunnel(m: PlannedMove): Promise<TunnelBytes> {
    const key = `${m.from}->${m.to}`;
    const last = this.tunnels.get(key);
    if (last && this.now() - last.reading.atMs < (this.o.intervalMs ?? 5000)) return last.bytes;
    try {
      const gateways = this.part(m.from).gateways;
      if (gateways.length === 0) return { peer: m.to, source: 'gateway', unknown: `${m.from} has no gateways (datapath without them)` };
      const pods: Record<string, { tx: number; rx: number }> = {};
      const errors: string[] = [];
      for (const d of gateways) {
        const ns = d.metadata.namespace ?? 'default';
        const list = JSON.parse(await this.get(m.from, `/api/v1/namespaces/${ns}/pods?labelSelector=${encodeURIComponent(podSelector(d))}`)) as k8s.V1PodList;
        for (const p of list.items ?? []) {
          const name = p.metadata?.name ?? '?';
          const c = await this.get(m.from, `/api/v1/namespaces/${ns}/pods/${name}:${adminPort(d)}/proxy/metrics`)
            .then((t) => tunnelCounters(parsePromText(t), m.to), (e) => { errors.push(`${name}: ${why(e)}`); return undefined; });
          if (c) pods[name] = c;
        }
      }
      if (Object.keys(pods).length === 0) return { peer: m.to, source: 'gateway', unknown: errors[0] ?? `no gateway pod of ${m.from} exports ${TUNNEL_BYTES_METRIC}` };
      const reading: TunnelReading = { pods, atMs: this.now() };
      const bytes = tunnelBytes(m.to, reading, last?.reading);
      this.tunnels.set(key, { reading, bytes });
      return bytes;
    } catch (e) {
      return { peer: m.to, source: 'gateway', unknown: `gateway metrics on ${m.from}: ${why(e)}` };
    }
  }
}
