import { FleetProblem } from '../../src/base/errors';
import { FleetDocument } from '../../src/fleet/schema';
import { ResolvedGitops } from '../../src/delivery/gitops';
import { ClusterPlan } from '../../src/addressing/planner';
import { EmittedObject, featureGatesOf, nadsOf } from '../../src/forklift/gates';
import { gatesWrittenByProduct, kubevirtHas, libvirtHooksOn } from '../../src/kubevirt/capabilities';
import { deliveryForm } from '../../src/kubevirt/delivery-forms';
import { ClusterFacts, ForkliftHubPlan } from '../../src/forklift/model';
import { vmNetworkNadsOf } from '../../src/forklift/maps';
import { clusterCompletionTimeoutPerGiB } from '../../src/forklift/move-policy';
import {
  FORKLIFT_DIR, FORKLIFT_STAGES, ForkliftStageName, driftFiles, forkliftArgoApplication, forkliftFluxKustomizations, forkliftStageOf, orderForklift,
} from '../../src/forklift/delivery';
import { ForkliftHubChart } from './hub';

/** What the Forklift part of a synthesis adds. */
export interface ForkliftOutput {
  readonly plan?: ForkliftHubPlan;
  /** Relative to the fleet directory (`_forklift/...`). */
  readonly files: Map<string, string>;
  /** The hub's objects in rollout order. */
  readonly objects: Record<string, unknown>[];
  /** Argo CD Application / Flux Kustomizations for `_gitops/`. */
  readonly gitops: { readonly argocd: Record<string, unknown>[]; readonly flux: Record<string, unknown>[] };
  readonly warnings: FleetProblem[];
}

export interface ForkliftOutputInput {
  /** The Forklift hub's chart (`CrossClusterMigrationMesh.forklift`), when the fleet has `spec.forklift`. */
  readonly chart?: ForkliftHubChart;
  /** The warnings of the Forklift checks (`CrossClusterMigrationMesh.forkliftWarnings`). */
  readonly warnings: readonly FleetProblem[];
  readonly gitops?: ResolvedGitops;
}

/** How synthesis names and renders files (passed in so this layer does not import the writer). */
export interface FileRendering {
  readonly toYaml: (o: unknown) => string;
  readonly objectFileName: (o: { kind: string; metadata?: { name?: string; namespace?: string } }) => string;
}

/** The facts of each cluster the checks need, read from its generated objects. */
export function clusterFacts(
  document: FleetDocument, clusters: readonly ClusterPlan[], objects: ReadonlyMap<string, readonly EmittedObject[]>,
): ClusterFacts[] {
  const index = new Map(document.spec.clusters.map((c, i) => [c.name, i]));
  const harvester = new Set(document.spec.clusters.filter((c) => c.harvester).map((c) => c.name));
  return clusters.map((c) => {
    const objs = objects.get(c.name) ?? [];
    // the gates the product writes itself (HCO on OpenShift Virtualization 4.21.1+) are in the CR Forklift reads
    const featureGates = [...new Set([...featureGatesOf(objs), ...gatesWrittenByProduct(c.kubevirt.product)])].sort();
    const operatorDisabled = deliveryForm(c.kubevirt.configDelivery).operatorDisabledGates(c.kubevirt.version).gates;
    const libvirtHooksRisk = libvirtHooksOn(c.kubevirt, operatorDisabled); // issue #29: on by default in v1.9 (PR #18526)
    return {
      name: c.name, index: index.get(c.name) ?? 0, datapath: c.datapath, featureGates, meshNads: nadsOf(objs), libvirtHooksRisk,
      vmNetworkNads: vmNetworkNadsOf(objs), // issue 40: the Localnet VM networks' NADs map without hand edits
      kubevirtVersion: c.kubevirt.version.text, migrationCompression: kubevirtHas(c.kubevirt.version, 'migration-compression'), // issue #29: per-move compression
      harvester: harvester.has(c.name),
      completionTimeoutPerGiB: clusterCompletionTimeoutPerGiB(document, c.kubevirt.configDelivery, harvester.has(c.name)), // issue 51
    };
  });
}

/**
 * Lay the hub chart's objects out under `_forklift/` (flat with a kustomization in rollout order; one
 * directory per stage with Flux), plus the drift helpers. Returns no files for a fleet without
 * `spec.forklift`. The moves were checked and planned by the mesh (`CrossClusterMigrationMesh`).
 */
export function forkliftOutput(input: ForkliftOutputInput, render: FileRendering): ForkliftOutput {
  const files = new Map<string, string>();
  const chart = input.chart;
  const warnings = [...input.warnings];
  if (!chart) return { files, objects: [], gitops: { argocd: [], flux: [] }, warnings };
  const r = { plan: chart.plan };
  const objects = orderForklift(chart.toJson() as { kind: string; metadata?: Record<string, unknown> }[], input.gitops) as Record<string, unknown>[];
  const staged = !!input.gitops?.flux;
  const byDir = new Map<string, string[]>();
  for (const o of objects) {
    const kind = String(o.kind);
    const dir = staged ? forkliftStageOf(kind).dir : '';
    const f = render.objectFileName(o as { kind: string });
    files.set([FORKLIFT_DIR, dir, f].filter(Boolean).join('/'), render.toYaml(o));
    byDir.set(dir, [...(byDir.get(dir) ?? []), f]);
  }
  const kustomization = (resources: string[]): string => render.toYaml({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources });
  const present = FORKLIFT_STAGES.filter((s) => byDir.has(s.dir));
  if (staged) {
    for (const s of present) files.set(`${FORKLIFT_DIR}/${s.dir}/kustomization.yaml`, kustomization(byDir.get(s.dir)!));
    files.set(`${FORKLIFT_DIR}/kustomization.yaml`, kustomization(present.map((s) => s.dir)));
  } else {
    files.set(`${FORKLIFT_DIR}/kustomization.yaml`, kustomization(byDir.get('') ?? []));
  }
  for (const [rel, content] of driftFiles(r.plan)) {
    files.set(`${FORKLIFT_DIR}/${rel}`, rel.endsWith('.json') ? `${JSON.stringify(content, null, 2)}\n` : render.toYaml(content));
  }
  const g = input.gitops;
  const stageNames: ForkliftStageName[] = staged ? present.map((s) => s.name) : [...new Set(objects.map((o) => forkliftStageOf(String(o.kind)).name))];
  return {
    plan: r.plan,
    files,
    objects,
    gitops: {
      argocd: g?.argocd ? [forkliftArgoApplication(g, r.plan)] : [],
      flux: g?.flux ? forkliftFluxKustomizations(g, r.plan, stageNames) : [],
    },
    warnings,
  };
}
