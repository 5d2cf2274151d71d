/**
 * `migration-mesh status --moves`: the facts of the five readiness checks of one move (src/report/readiness.ts
 * judges them), read-only. In the source: the VM's PVCs (or its DataVolume templates) and, for a running host-model
 * VM, its node's host-model labels. In the target: the Nodes and the pods' requests per node, the mapped storage
 * classes, CDI StorageProfiles and CSIStorageCapacity where they exist, the target namespace's ResourceQuotas and
 * LimitRanges. KubeVirt of both sides and the gateways' tunnel view come from what `status` read per cluster.
 * The ClusterRole this needs is in docs/migrations.md (Readiness).
 */
import * as k8s from '@kubernetes/client-node';
import { quantityValue } from '../src/base/quantity';
import { ClusterFacts } from '../src/report/status-facts';
import {
  CapacityFacts, KubevirtSide, LimitItemFacts, LimitRangeFacts, NodeFacts, QuotaFacts, ReadinessFacts, Resources, StorageClassFacts, TunnelFacts,
  VmNeeds, VolumeNeed,
} from '../src/report/readiness-facts';
import { why } from './status-runtime';

export interface StorageMapEntry { source: string; storageClass: string; accessMode?: string; volumeMode?: string }
interface Move { from: string; to: string; targetNamespace: string; vm: { namespace: string; name: string }; storageMap: StorageMapEntry[] }

type J = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const num = (q: unknown, milli = false): number => {
  const v = typeof q === 'string' || typeof q === 'number' ? quantityValue(String(q)) : undefined;
  return v === undefined ? 0 : milli ? Math.round(v * 1000) : v;
};
const sum = (a: Resources, b: Resources): Resources => ({ cpuMilli: a.cpuMilli + b.cpuMilli, memoryBytes: a.memoryBytes + b.memoryBytes });
const res = (r: J | undefined): Resources => ({ cpuMilli: num(r?.cpu, true), memoryBytes: num(r?.memory) });
const partial = (r: J | undefined, cpuMilli = true): Partial<Resources> => ({
  ...(r?.cpu !== undefined ? { cpuMilli: num(r.cpu, cpuMilli) } : {}), ...(r?.memory !== undefined ? { memoryBytes: num(r.memory) } : {}),
});
const notFound = (e: unknown) => (e as { code?: number }).code === 404 || /Unrecognized API version and kind/.test((e as Error).message);

async function get(api: k8s.KubernetesObjectApi, apiVersion: string, kind: string, name: string, namespace?: string): Promise<J | undefined> {
  try {
    return await api.read({ apiVersion, kind, metadata: { name, ...(namespace ? { namespace } : {}) } }) as J;
  } catch (e) {
    if (notFound(e)) return undefined;
    throw e;
  }
}
async function list(api: k8s.KubernetesObjectApi, apiVersion: string, kind: string, namespace?: string, fieldSelector?: string): Promise<J[]> {
  return ((await api.list(apiVersion, kind, namespace, undefined, undefined, undefined, fieldSelector)) as { items?: J[] }).items ?? [];
}

/** The VM's needs from its spec, its PVCs in the source and, when host-model and running, its node's labels. */
async function vmNeeds(src: k8s.KubernetesObjectApi, m: Move, vm: J): Promise<VmNeeds> {
  const t: J = vm.spec?.template?.spec ?? {};
  const d: J = t.domain ?? {};
  const cpu: J = d.cpu ?? {};
  const vcpus = Math.max(1, (cpu.cores ?? 1) * (cpu.sockets ?? 1) * (cpu.threads ?? 1));
  const req = d.resources?.requests ?? {};
  // KubeVirt's default CPU request is 1000m / cpuAllocationRatio (10) per vCPU
  const requests = { cpuMilli: req.cpu ? num(req.cpu, true) : 100 * vcpus, memoryBytes: num(req.memory ?? d.memory?.guest) };
  const volumes: VolumeNeed[] = [];
  for (const v of (t.volumes ?? []) as J[]) {
    const claim = v.persistentVolumeClaim?.claimName ?? v.dataVolume?.name;
    if (!claim) continue;
    const pvc = await get(src, 'v1', 'PersistentVolumeClaim', claim, m.vm.namespace);
    const tmpl = ((vm.spec?.dataVolumeTemplates ?? []) as J[]).find((x) => x.metadata?.name === claim)?.spec;
    const ps: J | undefined = pvc?.spec ?? tmpl?.storage ?? tmpl?.pvc;
    if (!ps) continue;
    const entry = m.storageMap.find((e) => e.source === ps.storageClassName) ?? m.storageMap[0];
    if (!entry) continue;
    volumes.push({
      name: v.name, storageClass: entry.storageClass, sizeBytes: num(pvc?.status?.capacity?.storage ?? ps.resources?.requests?.storage),
      accessModes: entry.accessMode ? [entry.accessMode] : ps.accessModes ?? [], volumeMode: entry.volumeMode ?? ps.volumeMode ?? 'Filesystem',
    });
  }
  const model: string | undefined = cpu.model;
  let hostModel: VmNeeds['hostModel'];
  if (!model || model === 'host-model') {
    const vmi = await get(src, 'kubevirt.io/v1', 'VirtualMachineInstance', m.vm.name, m.vm.namespace);
    const node = vmi?.status?.nodeName ? await get(src, 'v1', 'Node', vmi.status.nodeName) : undefined;
    const labels: Record<string, string> = node?.metadata?.labels ?? {};
    const hm = Object.keys(labels).find((k) => k.startsWith('host-model-cpu.node.kubevirt.io/'));
    if (hm) {
      const prefix = 'host-model-required-features.node.kubevirt.io/';
      hostModel = { model: hm.slice(hm.indexOf('/') + 1), requiredFeatures: Object.keys(labels).filter((k) => k.startsWith(prefix)).map((k) => k.slice(prefix.length)).sort() };
    }
  }
  const aff = t.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  return {
    ...(model ? { cpuModel: model } : {}), features: cpu.features ?? [], ...(d.machine?.type ? { machineType: d.machine.type } : {}),
    nodeSelector: t.nodeSelector ?? {}, ...(aff ? { requiredTerms: aff } : {}), tolerations: t.tolerations ?? [], vcpus, requests,
    cpuLimited: d.resources?.limits?.cpu !== undefined, limits: partial(d.resources?.limits), ...serialConsoleLog(d.devices),
    graphics: d.devices?.autoattachGraphicsDevice !== false, volumes, ...(hostModel ? { hostModel } : {}),
  };
}

/** KubeVirt's isSerialConsoleLogEnabled, the VM's part (serialconsolelog.go): undefined leaves it to the KubeVirt CR. */
function serialConsoleLog(devices: J | undefined): { serialConsoleLog?: boolean } {
  if (devices?.autoattachSerialConsole === false) return { serialConsoleLog: false };
  return typeof devices?.logSerialConsole === 'boolean' ? { serialConsoleLog: devices.logSerialConsole } : {};
}

async function nodes(dst: k8s.KubernetesObjectApi): Promise<NodeFacts[]> {
  const pods = await list(dst, 'v1', 'Pod', undefined, 'status.phase!=Succeeded,status.phase!=Failed');
  const used = new Map<string, Resources>();
  for (const p of pods) {
    const n = p.spec?.nodeName;
    if (!n) continue;
    const r = ((p.spec.containers ?? []) as J[]).map((c) => res(c.resources?.requests)).reduce(sum, { cpuMilli: 0, memoryBytes: 0 });
    used.set(n, sum(used.get(n) ?? { cpuMilli: 0, memoryBytes: 0 }, r));
  }
  return (await list(dst, 'v1', 'Node')).map((n) => ({
    name: n.metadata.name, labels: n.metadata.labels ?? {}, taints: n.spec?.taints ?? [], unschedulable: !!n.spec?.unschedulable,
    allocatable: res(n.status?.allocatable), requested: used.get(n.metadata.name) ?? { cpuMilli: 0, memoryBytes: 0 },
  })).sort((a, b) => a.name.localeCompare(b.name));
}

async function storage(dst: k8s.KubernetesObjectApi, classes: string[], note: (check: string, why: string) => void) {
  const storageClasses: Record<string, StorageClassFacts> = {};
  for (const c of classes) {
    const sc = await get(dst, 'storage.k8s.io/v1', 'StorageClass', c);
    let profile: J | undefined;
    try { profile = sc && await get(dst, 'cdi.kubevirt.io/v1beta1', 'StorageProfile', c); } catch (e) { note('storage', `StorageProfile ${c}: ${why(e)}`); }
    const sets = profile?.status?.claimPropertySets as StorageClassFacts['claimPropertySets'] | undefined;
    storageClasses[c] = { exists: !!sc, ...(sets ? { claimPropertySets: sets } : {}) };
  }
  let capacities: CapacityFacts[] | undefined;
  try {
    capacities = (await list(dst, 'storage.k8s.io/v1', 'CSIStorageCapacity')).map((c) => ({
      storageClassName: c.storageClassName, ...(c.capacity ? { capacity: num(c.capacity) } : {}),
      ...(c.maximumVolumeSize ? { maximumVolumeSize: num(c.maximumVolumeSize) } : {}),
    }));
  } catch (e) { note('storage', `CSIStorageCapacity: ${why(e)}`); }
  return { storageClasses, ...(capacities ? { capacities } : {}) };
}


/** One LimitRange item as stored (the API server has defaulted it); ratios as plain numbers. */
const limitItem = (i: J): LimitItemFacts => ({
  type: String(i.type), max: partial(i.max), min: partial(i.min), default: partial(i.default), defaultRequest: partial(i.defaultRequest),
  maxLimitRequestRatio: partial(i.maxLimitRequestRatio, false),
  ...(i.type === 'PersistentVolumeClaim' ? { storage: { ...(i.min?.storage ? { min: num(i.min.storage) } : {}), ...(i.max?.storage ? { max: num(i.max.storage) } : {}) } } : {}),
});

async function namespaceLimits(dst: k8s.KubernetesObjectApi, ns: string): Promise<{ quotas: QuotaFacts[]; limits: LimitRangeFacts[] }> {
  const asNumbers = (r: J | undefined) => Object.fromEntries(Object.entries(r ?? {}).map(([k, v]) => [k, num(v, /cpu$/.test(k))]));
  const quotas = (await list(dst, 'v1', 'ResourceQuota', ns)).map((q) => ({ name: q.metadata.name, hard: asNumbers(q.status?.hard ?? q.spec?.hard), used: asNumbers(q.status?.used) }));
  const limits = (await list(dst, 'v1', 'LimitRange', ns)).map((l) => ({ name: String(l.metadata.name), items: ((l.spec?.limits ?? []) as J[]).map(limitItem) }));
  return { quotas, limits };
}

/** What one cluster's gateways say about the tunnel to `peer` (pods whose admin /status was read, and their /probe). */
function tunnelFacts(c: ClusterFacts | undefined, peer: string): TunnelFacts | undefined {
  if (!c?.reachable || !c.gateway?.pods) return undefined;
  const read = c.gateway.pods.filter((p) => p.runtime);
  const views = read.map((p) => p.runtime!.peers[peer]).filter((v) => v);
  const pubs = views.flatMap((v) => v.publications ?? []);
  const probes = c.gateway.pods.flatMap((p) => (p.probe?.[peer] ? [{ pod: p.pod, ...p.probe[peer] }] : []));
  return {
    probed: probes.length, probesOk: probes.filter((x) => x.ok).length, probeErrors: probes.filter((x) => !x.ok).map((x) => `${x.pod}: ${x.error ?? 'no answer'}`),
    read: read.length, tunnelsOpen: views.reduce((a, v) => a + v.tunnels.origin + v.tunnels.terminus, 0),
    publicationsOk: pubs.filter((p) => p.status === 'accepted').length, publicationsFailed: pubs.filter((p) => p.status !== 'accepted').length,
  };
}

const kubevirtSide = (c: ClusterFacts | undefined): KubevirtSide => {
  const kv = c?.reachable ? c.kubevirt : undefined;
  return {
    found: !!kv?.found, featureGates: kv?.featureGates ?? [],
    ...(kv?.version ? { version: kv.version } : {}), ...(kv?.migrationNetwork ? { migrationNetwork: kv.migrationNetwork } : {}),
    ...(kv?.serialConsoleLogDisabled ? { serialConsoleLogDisabled: true } : {}), ...(kv?.guestConsoleLog ? { guestConsoleLog: kv.guestConsoleLog } : {}),
  };
};

/** Read the readiness facts of one move; a read the identity may not make is named in `unread`, not fatal. */
export async function readinessFacts(srcKc: k8s.KubeConfig, dstKc: k8s.KubeConfig, m: Move, vm: J, clusters: readonly ClusterFacts[]): Promise<ReadinessFacts> {
  const src = k8s.KubernetesObjectApi.makeApiClient(srcKc);
  const dst = k8s.KubernetesObjectApi.makeApiClient(dstKc);
  const unread: Record<string, string> = {};
  const note = (check: string, w: string) => { unread[check] = [unread[check], w].filter((x) => x).join('; '); };
  const attempt = async <T>(check: string, f: () => Promise<T>, fallback: T): Promise<T> => {
    try { return await f(); } catch (e) { note(check, why(e)); return fallback; }
  };
  const needs = await attempt('compute', () => vmNeeds(src, m, vm), undefined);
  const nodeList = await attempt('compute', () => nodes(dst), undefined);
  const st = await attempt('storage', () => storage(dst, [...new Set(m.storageMap.map((e) => e.storageClass))], note), { storageClasses: {} });
  const ns = await attempt('capacity', () => namespaceLimits(dst, m.targetNamespace), { quotas: [], limits: [] });
  const by = (n: string) => clusters.find((c) => c.cluster === n);
  const source = tunnelFacts(by(m.from), m.to);
  const target = tunnelFacts(by(m.to), m.from);
  return {
    ...(needs ? { vm: needs } : {}), tunnel: { ...(source ? { source } : {}), ...(target ? { target } : {}) }, ...st,
    ...(nodeList ? { nodes: nodeList } : {}), ...ns,
    source: kubevirtSide(by(m.from)), target: kubevirtSide(by(m.to)), ...(Object.keys(unread).length ? { unread } : {}),
  };
}
