/**
 * How the Forklift objects reach the hub, in the order Forklift needs them: Providers (and the
 * ForkliftController setting) first, then the maps, then the Plans, the Migrations last. The same
 * order becomes the kustomization order, Argo CD sync waves, or Flux stages chained with dependsOn.
 * Also the drift helpers for the moved VMs. Objects and file contents only; pure, no cdk8s import.
 */
import { ResolvedGitops, ARGOCD_SYNC_OPTIONS_ANNOTATION, ARGOCD_WAVE_ANNOTATION, FLUX_PRUNE_ANNOTATION, nameTooLong } from '../delivery/gitops';
import { FleetValidationError } from '../base/errors';
import { ForkliftHubPlan } from './model';

export const FORKLIFT_DIR = '_forklift';
const DRIFT_DIR = 'drift';
const FLUX_RECONCILE_ANNOTATION = 'kustomize.toolkit.fluxcd.io/reconcile';

export type ForkliftStageName = 'providers' | 'maps' | 'plans' | 'migrations';

export interface ForkliftStage {
  readonly name: ForkliftStageName;
  /** Directory in the staged (Flux) layout. */
  readonly dir: string;
  readonly wave: number;
  /** Flux waits for the stage's objects to be Ready (their `Ready` condition) before the next starts. */
  readonly wait: boolean;
}

export const FORKLIFT_STAGES: readonly ForkliftStage[] = [
  { name: 'providers', dir: '10-providers', wave: 0, wait: true },
  { name: 'maps', dir: '20-maps', wave: 1, wait: true },
  { name: 'plans', dir: '30-plans', wave: 2, wait: true },
  // a Migration is Ready only when its run ends: never hold the Kustomization on it
  { name: 'migrations', dir: '40-migrations', wave: 3, wait: false },
];

/** Kinds that must never be pruned or deleted from Git: the operator's CR, and a run in progress. */
const KEEP = new Set(['ForkliftController', 'Migration']);

export function forkliftStageOf(kind: string): ForkliftStage {
  switch (kind) {
    case 'Provider': case 'ForkliftController': return FORKLIFT_STAGES[0];
    case 'NetworkMap': case 'StorageMap': return FORKLIFT_STAGES[1];
    case 'Plan': return FORKLIFT_STAGES[2];
    default: return FORKLIFT_STAGES[3];
  }
}

interface Obj { readonly kind: string; readonly metadata?: { readonly annotations?: Record<string, string> } & Record<string, unknown> }

/** Stable sort into rollout order, with the GitOps annotations (returns copies). */
export function orderForklift<T extends Obj>(objs: readonly T[], g: ResolvedGitops | undefined): T[] {
  return objs.map((o, i) => ({ o, i, w: forkliftStageOf(o.kind).wave }))
    .sort((a, b) => (a.w - b.w) || (a.i - b.i))
    .map(({ o, w }) => {
      if (!g || (!g.argocd && !g.flux)) return o;
      const annotations: Record<string, string> = { ...(o.metadata?.annotations ?? {}) };
      if (g.argocd) {
        annotations[ARGOCD_WAVE_ANNOTATION] = String(w);
        // removing `start` from Git must not delete a Migration that is running
        if (KEEP.has(o.kind)) annotations[ARGOCD_SYNC_OPTIONS_ANNOTATION] = 'Prune=false,Delete=false';
      }
      if (g.flux && KEEP.has(o.kind)) annotations[FLUX_PRUNE_ANNOTATION] = 'disabled';
      return { ...o, metadata: { ...o.metadata, annotations } };
    });
}

const labels = (fleet: string): Record<string, string> => ({ 'app.kubernetes.io/managed-by': 'migration-mesh', 'migrationmesh.dev/fleet': fleet });

/** The Argo CD Application that syncs `_forklift/` to the hub (waves inside). */
export function forkliftArgoApplication(g: ResolvedGitops, plan: ForkliftHubPlan): Record<string, unknown> {
  const a = g.argocd!;
  refuseLongNames('argocd', [`${g.fleet}-forklift`], g.fleet);
  const server = a.clusterServers?.[plan.hub.cluster];
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Application',
    metadata: { name: `${g.fleet}-forklift`, namespace: a.namespace, labels: { ...labels(g.fleet), 'migrationmesh.dev/cluster': plan.hub.cluster } },
    spec: {
      project: a.project,
      source: { repoURL: a.repoURL, targetRevision: g.targetRevision, path: `${g.path}/${FORKLIFT_DIR}` },
      destination: server ? { server } : { name: plan.hub.cluster },
      syncPolicy: {
        ...(a.automated ? { automated: { prune: true, selfHeal: true } } : {}),
        syncOptions: ['ServerSideApply=true'],
        retry: { limit: 5, backoff: { duration: '10s', factor: 2, maxDuration: '5m' } },
      },
    },
  };
}

/** The hub's Application and Kustomizations are named after the fleet: over 63 characters, refused (gitops-name-too-long). */
function refuseLongNames(kind: 'argocd' | 'flux', names: readonly string[], fleet: string): void {
  const problems = names.flatMap((n) => nameTooLong(kind, n, { path: 'metadata.name', shorten: `metadata.name '${fleet}'` }));
  if (problems.length) throw new FleetValidationError(problems);
}

/** Flux: one Kustomization per non-empty stage of `_forklift/`, chained with dependsOn. */
export function forkliftFluxKustomizations(g: ResolvedGitops, plan: ForkliftHubPlan, present: readonly ForkliftStageName[]): Record<string, unknown>[] {
  const f = g.flux!;
  const hub = plan.hub.cluster;
  let prev: string | undefined;
  const stages = FORKLIFT_STAGES.filter((s) => present.includes(s.name));
  refuseLongNames('flux', stages.map((s) => `${g.fleet}-forklift-${s.name}`), g.fleet);
  return stages.map((s) => {
    const name = `${g.fleet}-forklift-${s.name}`;
    const k = {
      apiVersion: 'kustomize.toolkit.fluxcd.io/v1',
      kind: 'Kustomization',
      metadata: { name, namespace: f.namespace, labels: { ...labels(g.fleet), 'migrationmesh.dev/cluster': hub, 'migrationmesh.dev/stage': `forklift-${s.name}` } },
      spec: {
        interval: f.interval,
        timeout: f.timeout,
        path: `./${g.path}/${FORKLIFT_DIR}/${s.dir}`,
        prune: true,
        wait: s.wait,
        sourceRef: f.sourceRef,
        ...(prev ? { dependsOn: [{ name: prev }] } : {}),
        ...(f.inCluster ? {} : { kubeConfig: { secretRef: { name: f.kubeConfigSecrets[hub] ?? `${hub}-kubeconfig` } } }),
      },
    };
    prev = name;
    return k;
  });
}

/** Moved VMs by source cluster (`namespace/name`, sorted). */
function movedVmsBySource(plan: ForkliftHubPlan): Map<string, { name: string; namespace: string }[]> {
  const out = new Map<string, { name: string; namespace: string }[]>();
  for (const p of plan.plans) out.set(p.from, [...(out.get(p.from) ?? []), ...p.vms]);
  for (const [k, v] of out) out.set(k, [...new Map(v.map((x) => [`${x.namespace}/${x.name}`, x])).values()].sort((a, b) => (`${a.namespace}/${a.name}` < `${b.namespace}/${b.name}` ? -1 : 1)));
  return new Map([...out.entries()].sort(([a], [b]) => (a < b ? -1 : 1)));
}

/**
 * Per source cluster, a kustomize Component for the repository that holds its VMs: it annotates each
 * moving VM with `kustomize.toolkit.fluxcd.io/reconcile: disabled` so Flux stops re-applying it (after
 * the move KubeVirt sets the source VM to Halted; Flux would start it again). For Argo CD, the
 * `ignoreDifferences` entries (JSON) for the Application that syncs those VMs.
 */
export function driftFiles(plan: ForkliftHubPlan): Map<string, unknown> {
  const files = new Map<string, unknown>();
  for (const [cluster, vms] of movedVmsBySource(plan)) {
    files.set(`${DRIFT_DIR}/${cluster}/kustomization.yaml`, {
      apiVersion: 'kustomize.config.k8s.io/v1alpha1',
      kind: 'Component',
      patches: vms.map((vm) => ({
        target: { group: 'kubevirt.io', version: 'v1', kind: 'VirtualMachine', name: vm.name, namespace: vm.namespace },
        patch: `apiVersion: kubevirt.io/v1\nkind: VirtualMachine\nmetadata:\n  name: ${vm.name}\n  namespace: ${vm.namespace}\n  annotations:\n    ${FLUX_RECONCILE_ANNOTATION}: disabled\n`,
      })),
    });
    files.set(`${DRIFT_DIR}/${cluster}/argocd-ignore-differences.json`, vms.map((vm) => ({
      group: 'kubevirt.io', kind: 'VirtualMachine', name: vm.name, namespace: vm.namespace, jsonPointers: ['/spec/runStrategy', '/spec/running'],
    })));
  }
  return files;
}
