/**
 * Synthesis to the GitOps layout: the whole fleet is built in memory first (so a validation error
 * writes nothing), then written as one directory per cluster with stable file names and a
 * kustomization.yaml listing the objects in rollout order.
 *
 *   <out>/<cluster>/<Kind>.<namespace>.<name>.yaml
 *   <out>/<cluster>/kustomization.yaml
 *   <out>/<cluster>/components/kubevirt/{kustomization.yaml,kubevirt-patch.yaml}   (kustomize-patch delivery)
 */
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { App } from 'cdk8s';
import * as os from 'os';
import { clusterChart, clusterOptionsFor } from '../constructs/mesh';
import { Checked, MigrationMeshError, ProblemCollector, orThrow } from '../src/errors';
import { FleetDocument } from '../src/fleet-schema';
import { HarvesterMigrationNetworkValue, checkHarvesterValues } from '../src/harvester';
import { Ledger, LedgerChange } from '../src/ledger';
import { Manifest } from '../src/manifest';
import { FleetInput, FleetPlan, PlanOptions, PlanResult, salvageFleetInput, toFleetDocument } from '../src/planner';
import { GITOPS_DIR, ResolvedGitops, annotateForGitops, argocdApplicationSet, fluxKustomizations, resolveGitops } from '../src/gitops';
import { STAGES, StageName, kindWave, kubevirtNadKeys, rolloutWave, sortForRollout, stageOfWave } from '../src/rollout';
import { ForkliftOutput, forkliftOutput } from '../constructs/forklift-output';
import { MovesInput } from '../src/forklift/checks';

export interface SynthOptions extends PlanOptions {
  /** Called after each cluster is synthesized (progress display for large fleets). */
  readonly onCluster?: (done: number, total: number) => void;
  /** Moves from the file beside the fleet (docs/migrations.md). @default - the fleet's `spec.forklift.moves` */
  readonly moves?: MovesInput;
}

export interface SynthResult {
  /** Relative path -> file content. */
  readonly files: Map<string, string>;
  readonly plan: FleetPlan;
  readonly ledger: Ledger;
  readonly changes: LedgerChange[];
  /** Every object, per cluster, in rollout order. */
  readonly objects: Map<string, Manifest[]>;
  /** The GitOps wiring, when the fleet has `spec.gitops`. */
  readonly gitops?: ResolvedGitops;
  /** The Forklift hub objects (`_forklift/`), their plan and warnings. */
  readonly forklift: ForkliftOutput;
}

/**
 * Rollout rank by kind: lower applies first (NADs before the KubeVirt config that names it). The full
 * ordering (the NADs KubeVirt names come after the gateway) is `rolloutWave` in rollout.ts.
 */
export function rolloutRank(kind: string): number {
  return kindWave(kind);
}

const fileSafe = (s: string): string => s.replace(/[^0-9A-Za-z._-]/g, '_');

function objectFileName(o: Manifest): string {
  const ns = o.metadata?.namespace ? `${fileSafe(o.metadata.namespace)}.` : '';
  return `${fileSafe(o.kind)}.${ns}${fileSafe(o.metadata?.name ?? 'unnamed')}.yaml`;
}

function toYaml(o: unknown): string {
  return YAML.stringify(o, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** Plan, Harvester values and GitOps wiring: every problem of the three at once. */
function checkSynthesis(fleet: FleetInput, opts: PlanOptions): Checked<{
  result: PlanResult & { document: FleetDocument }; harvester: Map<string, HarvesterMigrationNetworkValue>; gitops?: ResolvedGitops;
}> {
  const p = new ProblemCollector();
  // the plan of the part of the fleet without problems, so its Harvester rules are checked too
  const planned = salvageFleetInput(fleet, opts);
  const result = planned.value;
  p.addAll(planned.problems);
  const harvester = result && p.take(checkHarvesterValues(result.document, result.plan));
  const { gitops, problems } = resolveGitops(toFleetDocument(fleet));
  p.addAll(problems);
  return p.result(() => ({ result: result!, harvester: harvester!, gitops }));
}

/** Build every cluster's objects and files in memory. Throws FleetValidationError before anything is written. */
export function synthesizeFleet(fleet: FleetInput, opts: SynthOptions = {}): SynthResult {
  const { result, harvester, gitops } = orThrow(checkSynthesis(fleet, opts));
  // Flux has no waves inside one Kustomization: the staged layout gives each stage its own directory
  const staged = !!gitops?.flux;
  const files = new Map<string, string>();
  const objects = new Map<string, Manifest[]>();
  const stagesOf: { name: string; stages: StageName[] }[] = [];
  result.plan.clusters.forEach((cluster, n) => {
    // one App per cluster: cdk8s prepares the whole app for every chart it synthesizes, so a shared
    // App makes synthesis quadratic in the number of clusters
    const options = clusterOptionsFor(result.document, cluster.name);
    const chart = clusterChart(new App({ outdir: os.tmpdir() }), result.plan, cluster, harvester.get(cluster.name), options);
    const name = cluster.name;
    const nads = kubevirtNadKeys(chart.cluster);
    const objs = sortForRollout(chart.toJson() as Manifest[], nads).map((o) => annotateForGitops(o, rolloutWave(o, nads), gitops));
    objects.set(name, objs);
    const resources = new Map<string, string[]>();
    const patchForm = chart.cluster.kubevirt.configDelivery === 'kustomize-patch';
    for (const o of objs) {
      if (patchForm && o.kind === 'KubeVirt') {
        files.set(`${name}/components/kubevirt/kubevirt-patch.yaml`, toYaml(o));
        files.set(`${name}/components/kubevirt/kustomization.yaml`, toYaml({
          apiVersion: 'kustomize.config.k8s.io/v1alpha1',
          kind: 'Component',
          patches: [{ path: 'kubevirt-patch.yaml', target: { group: 'kubevirt.io', version: 'v1', kind: 'KubeVirt', name: o.metadata.name, namespace: o.metadata.namespace } }],
        }));
        continue;
      }
      const dir = staged ? stageOfWave(rolloutWave(o, nads)).dir : '';
      const f = objectFileName(o);
      const rel = dir ? `${name}/${dir}/${f}` : `${name}/${f}`;
      if (files.has(rel)) {
        const message = `two objects of cluster ${name} map to one file ${f}`;
        throw new MigrationMeshError(message, [{ code: 'plan-inconsistent', path: `${name}/${f}`, message }]);
      }
      files.set(rel, toYaml(o));
      resources.set(dir, [...(resources.get(dir) ?? []), f]);
    }
    if (staged) {
      const present = STAGES.filter((st) => resources.has(st.dir));
      for (const st of present) files.set(`${name}/${st.dir}/kustomization.yaml`, kustomization(resources.get(st.dir)!));
      // plain `kubectl apply -k <cluster>` still applies everything, stage directories in order
      files.set(`${name}/kustomization.yaml`, kustomization(present.map((st) => st.dir)));
      stagesOf.push({ name, stages: present.map((st) => st.name) });
    } else {
      files.set(`${name}/kustomization.yaml`, kustomization(resources.get('') ?? []));
      stagesOf.push({ name, stages: [] });
    }
    opts.onCluster?.(n + 1, result.plan.clusters.length);
  });
  const fkInput = { document: result.document, clusters: result.plan.clusters, objects, gitops, moves: opts.moves };
  const forklift = forkliftOutput(fkInput, { toYaml, objectFileName });
  for (const [k, v] of forklift.files) files.set(k, v);
  if (gitops?.argocd) {
    const apps = [argocdApplicationSet(gitops, result.plan.clusters.map((c) => c.name)), ...forklift.gitops.argocd];
    for (const a of apps) files.set(`${GITOPS_DIR}/argocd/${objectFileName(a)}`, toYaml(a));
    files.set(`${GITOPS_DIR}/argocd/kustomization.yaml`, kustomization(apps.map(objectFileName)));
  }
  if (gitops?.flux) {
    const ks = [...fluxKustomizations(gitops, stagesOf), ...forklift.gitops.flux];
    for (const k of ks) files.set(`${GITOPS_DIR}/flux/${objectFileName(k)}`, toYaml(k));
    files.set(`${GITOPS_DIR}/flux/kustomization.yaml`, kustomization(ks.map(objectFileName)));
  }
  return { files, plan: result.plan, ledger: result.ledger, changes: result.changes, objects, gitops, forklift };
}

function kustomization(resources: string[]): string {
  return toYaml({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources });
}

/**
 * Replace `outdir` with exactly `files`, atomically per directory: written to a sibling temp dir,
 * then swapped in, so a crash never leaves half a tree.
 */
export function writeFiles(outdir: string, files: Map<string, string>): void {
  const parent = path.dirname(path.resolve(outdir));
  fs.mkdirSync(parent, { recursive: true });
  const tmp = fs.mkdtempSync(path.join(parent, `.${path.basename(outdir)}.tmp-`));
  try {
    for (const rel of [...files.keys()].sort()) {
      const full = path.join(tmp, rel);
      fs.mkdirSync(path.dirname(full), { recursive: true });
      fs.writeFileSync(full, files.get(rel)!);
    }
    const old = `${tmp}.old`;
    if (fs.existsSync(outdir)) fs.renameSync(outdir, old);
    fs.renameSync(tmp, outdir);
    if (fs.existsSync(old)) fs.rmSync(old, { recursive: true, force: true });
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}
