/**
 * `migration-mesh status --moves`: the facts behind each planned move, read from the generated Forklift
 * Plans, NetworkMaps and StorageMaps (`<out>/<fleet>/_forklift/`) and from the source and target
 * clusters (read-only): the moving VM and its MACs in the source; in the target the namespace, a VM of
 * the same name, the mapped NADs and storage classes, and every VM's MACs. src/report/status-moves.ts judges.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as k8s from '@kubernetes/client-node';
import { FORKLIFT_DIR } from '../src/forklift/delivery';
import { MoveFacts } from '../src/report/status-moves';
import { GeneratedObject as Obj, generatedObjects } from './generated-objects';
import { why } from './status-runtime';
import { readinessFacts, StorageMapEntry } from './readiness';
import { ClusterFacts } from '../src/report/status-facts';

type Iface = { macAddress?: string };
type Vm = { metadata?: { name?: string; namespace?: string }; spec?: { template?: { spec?: { domain?: { devices?: { interfaces?: Iface[] } } } } } };
const macsOf = (vm: Vm) => (vm.spec?.template?.spec?.domain?.devices?.interfaces ?? []).map((i) => i.macAddress).filter((m): m is string => !!m);

export interface PlannedMove {
  plan: string; from: string; to: string; targetNamespace: string; vm: { namespace: string; name: string };
  /** `namespace/name` of the NADs and the storage classes the pair's maps send the VM to. */
  networks: string[]; storageClasses: string[];
  /** The pair's StorageMap entries: source class to target class, with the access and volume modes it sets. */
  storageMap: StorageMapEntry[];
}

/** Every VM of every generated live Plan, with the destinations of its pair's maps. */
export function plannedMoves(fleetDir: string): PlannedMove[] {
  const dir = path.join(fleetDir, FORKLIFT_DIR);
  if (!fs.existsSync(dir)) return [];
  const objs = generatedObjects(dir);
  const find = (kind: string, ref?: { name: string; namespace: string }) => objs
    .find((o) => o.kind === kind && ref && o.metadata.name === ref.name && o.metadata.namespace === ref.namespace);
  type Destination = { type?: string; name?: string; namespace?: string; storageClass?: string; accessMode?: string; volumeMode?: string };
  type MapSpec = { map?: { source?: { name?: string }; destination?: Destination }[] };
  return objs.filter((o) => o.kind === 'Plan').flatMap((p: Obj) => {
    type Ref = { name: string; namespace: string };
    const spec = p.spec as { targetNamespace: string; vms: Ref[]; map: { network?: Ref; storage?: Ref } };
    const labels = (p.metadata as { labels?: Record<string, string> }).labels ?? {};
    const nm = (find('NetworkMap', spec.map.network)?.spec as MapSpec | undefined)?.map ?? [];
    const sm = (find('StorageMap', spec.map.storage)?.spec as MapSpec | undefined)?.map ?? [];
    const networks = [...new Set(nm.filter((e) => e.destination?.type === 'multus').map((e) => `${e.destination!.namespace}/${e.destination!.name}`))];
    const storageClasses = [...new Set(sm.map((e) => e.destination?.storageClass).filter((s): s is string => !!s))];
    const storageMap = sm.filter((e) => e.source?.name && e.destination?.storageClass).map((e) => ({
      source: e.source!.name!, storageClass: e.destination!.storageClass!,
      ...(e.destination!.accessMode ? { accessMode: e.destination!.accessMode } : {}),
      ...(e.destination!.volumeMode ? { volumeMode: e.destination!.volumeMode } : {}),
    }));
    return spec.vms.map((vm) => ({
      plan: `${p.metadata.namespace}/${p.metadata.name}`, from: labels['migrationmesh.dev/from'], to: labels['migrationmesh.dev/to'],
      targetNamespace: spec.targetNamespace, vm: { namespace: vm.namespace, name: vm.name }, networks, storageClasses, storageMap,
    }));
  });
}

async function exists(api: k8s.KubernetesObjectApi, apiVersion: string, kind: string, name: string, namespace?: string): Promise<unknown> {
  try {
    return await api.read({ apiVersion, kind, metadata: { name, ...(namespace ? { namespace } : {}) } });
  } catch (e) {
    if ((e as { code?: number }).code === 404 || /Unrecognized API version and kind/.test((e as Error).message)) return undefined;
    throw e;
  }
}

async function targetSide(kc: k8s.KubeConfig, m: PlannedMove): Promise<MoveFacts['target']> {
  const api = k8s.KubernetesObjectApi.makeApiClient(kc);
  const namespacePresent = !!await exists(api, 'v1', 'Namespace', m.targetNamespace);
  const nameTaken = !!await exists(api, 'kubevirt.io/v1', 'VirtualMachine', m.vm.name, m.targetNamespace);
  const missingNetworks: string[] = [];
  for (const n of m.networks) {
    const [ns, name] = n.split('/');
    if (!await exists(api, 'k8s.cni.cncf.io/v1', 'NetworkAttachmentDefinition', name, ns)) missingNetworks.push(n);
  }
  const missingStorageClasses: string[] = [];
  for (const sc of m.storageClasses) if (!await exists(api, 'storage.k8s.io/v1', 'StorageClass', sc)) missingStorageClasses.push(sc);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const list = await custom.listClusterCustomObject({ group: 'kubevirt.io', version: 'v1', plural: 'virtualmachines' }) as { items?: Vm[] };
  const macs: Record<string, string> = {};
  for (const vm of list.items ?? []) for (const mac of macsOf(vm)) macs[mac.toLowerCase()] = `${vm.metadata?.namespace}/${vm.metadata?.name}`;
  return { namespacePresent, nameTaken, missingNetworks, missingStorageClasses, macs };
}

/** Read the facts of every planned move; `kcOf(cluster)` is undefined for a cluster that did not answer. */
export async function moveFacts(
  moves: PlannedMove[], kcOf: (cluster: string) => k8s.KubeConfig | undefined, clusters: readonly ClusterFacts[] = [],
): Promise<MoveFacts[]> {
  return Promise.all(moves.map(async (m): Promise<MoveFacts> => {
    const base = { plan: m.plan, from: m.from, to: m.to, vm: m.vm, targetNamespace: m.targetNamespace };
    const src = kcOf(m.from);
    const dst = kcOf(m.to);
    let source: MoveFacts['source'];
    let sourceError: string | undefined = src ? undefined : `${m.from} unreachable`;
    let sourceVm: Vm | undefined;
    if (src) {
      try {
        const vm = await exists(k8s.KubernetesObjectApi.makeApiClient(src), 'kubevirt.io/v1', 'VirtualMachine', m.vm.name, m.vm.namespace) as Vm | undefined;
        source = vm && { macs: macsOf(vm) };
        sourceVm = vm;
      } catch (e) { sourceError = why(e); }
    }
    let target: MoveFacts['target'] = { error: `${m.to} unreachable` };
    if (dst) { try { target = await targetSide(dst, m); } catch (e) { target = { error: why(e) }; } }
    const readiness = src && dst && sourceVm && !('error' in target) ? { readiness: await readinessFacts(src, dst, m, sourceVm, clusters) } : {};
    return { ...base, ...(source ? { source } : {}), ...(sourceError ? { sourceError } : {}), target, ...readiness };
  }));
}
