/**
 * Synthesis to the GitOps layout: the whole fleet is built in memory first (so a validation error
 * writes nothing), then written as one directory per cluster with stable file names and a
 * kustomization.yaml listing the objects in rollout order.
 *
 *   <out>/<cluster>/<Kind>.<namespace>.<name>.yaml
 *   <out>/<cluster>/kustomization.yaml
 *   <out>/<cluster>/components/kubevirt/{kustomization.yaml,kubevirt-patch.yaml}   (kustomize-patch delivery)
 */
import * as os from 'os';
import * as YAML from 'yaml';
import { App } from 'cdk8s';
import { CrossClusterMigrationMesh, CrossClusterMigrationMeshProps } from '../constructs/mesh';
import { FleetProblem, FleetValidationError, InvalidPropsError, MigrationMeshError, ProblemCollector } from '../src/base/errors';
import { Ledger, LedgerChange } from '../src/addressing/ledger';
import { Manifest } from '../src/delivery/manifest';
import { FleetInput, FleetPlan, PlanOptions } from '../src/addressing/planner';
import { toFleetDocument } from '../src/fleet/document';
import { salvageFleetInput } from '../src/fleet/salvage';
import { checkHarvesterValues } from '../src/delivery/harvester';
import { GITOPS_DIR, ResolvedGitops, annotateForGitops, argocdApplicationSet, fluxKustomizations, resolveGitops } from '../src/delivery/gitops';
import { STAGES, StageName, kindWave, kubevirtNadKeys, rolloutWave, sortForRollout, stageOfWave } from '../src/delivery/rollout';
import { ForkliftOutput, forkliftOutput } from '../constructs/forklift-output';
import { MovesInput } from '../src/forklift/checks';

export interface SynthOptions extends PlanOptions, Pick<CrossClusterMigrationMeshProps, 'labels' | 'gatewayPod' | 'clusters'> {
  /** Called after each cluster is rendered (progress display for large fleets). */
  readonly onCluster?: (done: number, total: number) => void;
  /** Moves from the file beside the fleet (docs/migrations.md). @default - the fleet's `spec.forklift.moves` */
  readonly moves?: MovesInput;
  /**
   * Extend the constructs before anything is rendered: the mesh, its `MeshClusterChart` per cluster
   * (`mesh.charts`), the `MigrationProxy` gateways (`mesh.gateways`: `addSidecar`, `addToleration`,
   * `addPodLabel`, `deployments`...). What you add goes through the same ordering, GitOps annotations,
   * delivery forms and manifest as the rest.
   *
   * @default - no customization
   */
  readonly customize?: (mesh: CrossClusterMigrationMesh) => NotAPromise;
  /**
   * false: judge only (what `validate` needs): plan, ledger, objects, file names and every problem, but no
   * YAML is rendered and `files` stays empty (rendering was about half of the in-memory synthesis).
   *
   * @default true
   */
  readonly render?: boolean;
}

/**
 * What a `customize` hook may return: anything but a promise (synthesis is synchronous; an `async`
 * hook would finish after the tree is written). An `async` hook is a type error, and refused at run
 * time with `customize-async`.
 */
export type NotAPromise = void | null | string | number | boolean | bigint | symbol | readonly unknown[] | { then?: never; [k: string]: unknown };

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
  /** The constructs the files were rendered from. */
  readonly mesh: CrossClusterMigrationMesh;
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

function toYamlText(o: unknown): string {
  return YAML.stringify(o, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** Plan (of the part of the fleet without problems), Harvester values and GitOps wiring: every problem of the three at once. */
function checkSynthesis(fleet: FleetInput, opts: PlanOptions): FleetProblem[] {
  const p = new ProblemCollector();
  // the plan of the part of the fleet without problems, so its Harvester rules are checked too
  const planned = salvageFleetInput(fleet, opts);
  const result = planned.value;
  p.addAll(planned.problems);
  if (result) p.take(checkHarvesterValues(result.document, result.plan));
  p.addAll(resolveGitops(toFleetDocument(fleet)).problems);
  return [...p.problems];
}

/**
 * The mesh, each cluster's chart in an App of its own (rendering chart by chart from one App is
 * quadratic), and the GitOps wiring. A fleet with problems is checked once more, layer by layer
 * (`checkSynthesis`), so the error lists every problem of the plan, Harvester values, moves and GitOps at once.
 */
function buildMesh(fleet: FleetInput, opts: SynthOptions): { mesh: CrossClusterMigrationMesh; gitops?: ResolvedGitops } {
  const { gitops, problems } = resolveGitops(toFleetDocument(fleet));
  const app = (): App => new App({ outdir: os.tmpdir() });
  let mesh: CrossClusterMigrationMesh;
  try {
    mesh = new CrossClusterMigrationMesh(app(), 'mesh', {
      fleet, ledger: opts.ledger, frozen: opts.frozen, renamedFrom: opts.renamedFrom, moves: opts.moves,
      labels: opts.labels, gatewayPod: opts.gatewayPod, clusters: opts.clusters, chartScope: app,
    });
  } catch (e) {
    if (!(e instanceof FleetValidationError)) throw e;
    const all = checkSynthesis(fleet, opts);
    // the plan and Harvester layers found nothing: the mesh's own (Forklift moves) problems, with GitOps'
    throw new FleetValidationError(all.length > problems.length ? all : [...e.problems, ...problems]);
  }
  if (problems.length) throw new FleetValidationError(problems);
  return { mesh, gitops };
}

/**
 * Build every cluster's objects and files in memory: the mesh (`CrossClusterMigrationMesh`), your
 * `customize` hook, then one rendering into the GitOps layout. Throws FleetValidationError before
 * anything is rendered.
 */
export function synthesizeFleet(fleet: FleetInput, opts: SynthOptions = {}): SynthResult {
  const { mesh, gitops } = buildMesh(fleet, opts);
  const hooked: unknown = opts.customize?.(mesh);
  if (typeof (hooked as PromiseLike<unknown> | undefined)?.then === 'function') {
    Promise.resolve(hooked).catch(() => undefined); // refused below: its own failure must not end the process later
    throw new InvalidPropsError({ code: 'customize-async', path: 'customize', message: 'the customize hook returned a promise (an async function?): synthesis is synchronous, so it would finish after the tree is rendered and written',
      fix: 'make the hook synchronous (no async / await): the construct methods it calls (addSidecar, addPodLabel, ...) are all synchronous' });
  }
  return renderMesh(mesh, gitops, opts.onCluster, opts.render !== false);
}

function renderMesh(mesh: CrossClusterMigrationMesh, gitops: ResolvedGitops | undefined, onCluster: SynthOptions['onCluster'], render: boolean): SynthResult {
  // judging only: every file name (and its collisions) as in synth, but no YAML text
  const toYaml = render ? toYamlText : (): string => '';
  const kustomization = render ? kustomizationText : (): string => '';
  // Flux has no waves inside one Kustomization: the staged layout gives each stage its own directory
  const staged = !!gitops?.flux;
  const files = new Map<string, string>();
  const objects = new Map<string, Manifest[]>();
  const stagesOf: { name: string; stages: StageName[] }[] = [];
  mesh.charts.forEach((chart, n) => {
    const name = chart.cluster.name;
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
    onCluster?.(n + 1, mesh.charts.length);
  });
  const forklift = forkliftOutput({ chart: mesh.forklift, warnings: mesh.forkliftWarnings, gitops }, { toYaml, objectFileName });
  for (const [k, v] of forklift.files) files.set(k, v);
  const clusters = mesh.plan.clusters.map((c) => c.name);
  if (gitops?.argocd) {
    const apps = [argocdApplicationSet(gitops, clusters), ...forklift.gitops.argocd];
    for (const a of apps) files.set(`${GITOPS_DIR}/argocd/${objectFileName(a)}`, toYaml(a));
    files.set(`${GITOPS_DIR}/argocd/kustomization.yaml`, kustomization(apps.map(objectFileName)));
  }
  if (gitops?.flux) {
    const ks = [...fluxKustomizations(gitops, stagesOf), ...forklift.gitops.flux];
    for (const k of ks) files.set(`${GITOPS_DIR}/flux/${objectFileName(k)}`, toYaml(k));
    files.set(`${GITOPS_DIR}/flux/kustomization.yaml`, kustomization(ks.map(objectFileName)));
  }
  return { files: render ? files : new Map(), plan: mesh.plan, ledger: mesh.ledger, changes: mesh.changes, objects, gitops, forklift, mesh };
}

function kustomizationText(resources: string[]): string {
  return toYamlText({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources });
}
