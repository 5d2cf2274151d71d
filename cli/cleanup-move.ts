/**
 * `migration-mesh cleanup-move FLEET.yaml --move NS/VM [--apply]`: what a failed or cancelled move left on
 * the target (issue 51 item 5). Reads the Plan's UID and its Migrations' UIDs on the hub, lists the target
 * namespace's VMs, VMIs, DataVolumes, PVCs and pods, and src/forklift/cleanup.ts picks exactly the move's
 * (Forklift's `plan`/`migration` UID labels, then ownerReferences). A dry run unless --apply; nothing is
 * deleted while the source VM is not Running, or when the Plan succeeded (then the target copy is the VM).
 */
import * as k8s from '@kubernetes/client-node';
import { CLEANUP_KINDS, CleanupKind, CleanupSelection, SourceVmState, TargetObject, renderCleanup, selectLeftovers, sourceVmProblem } from '../src/forklift/cleanup';
import { MoveClientOptions, moveClients } from './move-clients';

export interface CleanupOptions extends MoveClientOptions {
  /** `namespace/name` of the moving VM. */
  readonly move: string;
  /** Delete; without it, only list. @default false */
  readonly apply?: boolean;
}

export interface CleanupReport {
  readonly ok: boolean;
  readonly applied: boolean;
  readonly refusal?: string;
  readonly selection: CleanupSelection;
}

const API: Record<CleanupKind, { apiVersion: string; plural: string }> = {
  VirtualMachine: { apiVersion: 'kubevirt.io/v1', plural: 'virtualmachines' },
  VirtualMachineInstance: { apiVersion: 'kubevirt.io/v1', plural: 'virtualmachineinstances' },
  DataVolume: { apiVersion: 'cdi.kubevirt.io/v1beta1', plural: 'datavolumes' },
  PersistentVolumeClaim: { apiVersion: 'v1', plural: 'persistentvolumeclaims' },
  Pod: { apiVersion: 'v1', plural: 'pods' },
};

type Meta = { name: string; namespace: string; uid: string; labels?: Record<string, string>; ownerReferences?: { uid: string; kind: string; name: string }[] };

async function listKind(api: k8s.KubernetesObjectApi, kind: CleanupKind, namespace: string): Promise<TargetObject[]> {
  try {
    const l = await api.list(API[kind].apiVersion, kind, namespace);
    return (l.items as { metadata: Meta }[]).map(({ metadata: m }) => ({
      kind, name: m.name, namespace: m.namespace, uid: m.uid, labels: m.labels, ownerReferences: m.ownerReferences,
    }));
  } catch (e) {
    // a kind the cluster does not serve (no CDI) holds nothing of the move
    if ((e as { code?: number }).code === 404 || /Unrecognized API version and kind/.test((e as Error).message)) return [];
    throw e;
  }
}

type Live = { metadata: Meta; status?: Record<string, unknown> };

async function read(api: k8s.KubernetesObjectApi, apiVersion: string, kind: string, namespace: string, name: string): Promise<Live | undefined> {
  try {
    return await api.read({ apiVersion, kind, metadata: { name, namespace } }) as Live;
  } catch (e) {
    if ((e as { code?: number }).code === 404) return undefined;
    throw e;
  }
}

/** The Plan's UID, its Migrations' UIDs, and whether it succeeded. */
async function hubFacts(kc: k8s.KubeConfig, plan: string) {
  const [ns, name] = plan.split('/');
  const api = k8s.KubernetesObjectApi.makeApiClient(kc);
  const p = await read(api, 'forklift.konveyor.io/v1beta1', 'Plan', ns, name);
  if (!p) return undefined;
  const migs = await api.list('forklift.konveyor.io/v1beta1', 'Migration', ns);
  const uids = (migs.items as { metadata: Meta; spec?: { plan?: { name?: string; uid?: string } } }[])
    .filter((m) => m.spec?.plan?.name === name || m.spec?.plan?.uid === p.metadata.uid).map((m) => m.metadata.uid);
  const conds = (p.status?.conditions ?? []) as { type: string; status: string }[];
  return { planUid: p.metadata.uid, migrationUids: uids, succeeded: conds.some((c) => c.type === 'Succeeded' && c.status === 'True') };
}

export async function cleanupMove(o: CleanupOptions): Promise<CleanupReport> {
  const { moves, hub, kcOf } = moveClients(o);
  const [vns, vname] = o.move.split('/');
  const m = moves.find((x) => x.vm.namespace === vns && x.vm.name === vname);
  const empty: CleanupSelection = { delete: [], refused: [] };
  const refuse = (refusal: string, selection = empty): CleanupReport => ({ ok: false, applied: false, refusal, selection });
  if (!m) return refuse(`no planned move of ${o.move} in the generated Forklift Plans`);
  const h = await hubFacts(kcOf(hub), m.plan);
  if (!h) return refuse(`Plan ${m.plan} not found on the hub ${hub}: its UID marks what it created, so nothing can be told apart`);
  const dst = k8s.KubernetesObjectApi.makeApiClient(kcOf(m.to));
  const objs = (await Promise.all(CLEANUP_KINDS.map((k) => listKind(dst, k, m.targetNamespace)))).flat();
  const selection = selectLeftovers(objs, { planUid: h.planUid, migrationUids: h.migrationUids, vmName: m.vm.name });
  if (h.succeeded) return refuse(`Plan ${m.plan} succeeded: the target VM is the moved VM, not a leftover`, selection);
  const vm = await read(k8s.KubernetesObjectApi.makeApiClient(kcOf(m.from)), 'kubevirt.io/v1', 'VirtualMachine', m.vm.namespace, m.vm.name);
  const state: SourceVmState = vm ? { found: true, printableStatus: vm.status?.printableStatus as string | undefined } : { found: false };
  const problem = sourceVmProblem(state, o.move);
  if (problem) return refuse(problem, selection);
  if (!o.apply) return { ok: true, applied: false, selection };
  for (const x of selection.delete) {
    try {
      await dst.delete({ apiVersion: API[x.kind].apiVersion, kind: x.kind, metadata: { name: x.name, namespace: x.namespace } }, undefined, undefined, undefined, undefined, 'Background');
    } catch (e) {
      // gone already: the garbage collector took it after its owner
      if ((e as { code?: number }).code !== 404) throw e;
    }
  }
  return { ok: true, applied: true, selection };
}

export function renderCleanupReport(r: CleanupReport): string {
  return `${renderCleanup(r.selection, r.applied)}${r.refusal ? `refused: ${r.refusal}\n` : ''}`;
}
