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
import { ApiObject, App } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { CrossClusterMigrationMesh, CrossClusterMigrationMeshProps } from '../constructs/fleet/mesh';
import { MeshClusterChart } from '../constructs/fleet/mesh-cluster';
import { HarvesterClusterChart } from '../constructs/delivery/harvester-cluster';
import { FleetProblem, FleetValidationError, InvalidPropsError, MigrationMeshError, ProblemCollector } from '../src/base/errors';
import { Ledger, LedgerChange } from '../src/addressing/ledger';
import { Manifest } from '../src/delivery/manifest';
import { FleetInput, FleetPlan, PlanOptions } from '../src/addressing/planner';
import { toFleetDocument } from '../src/fleet/document';
import { salvageFleetInput } from '../src/fleet/salvage';
import { checkHarvesterValues } from '../src/delivery/harvester';
import { GITOPS_DIR, ResolvedGitops, annotateForGitops, argocdApplicationSet, fluxKustomizations, resolveGitops } from '../src/delivery/gitops';
import { STAGES, StageName, kindWave, kubevirtNadKeys, rolloutWave, sortForRollout, stageOfWave } from '../src/delivery/rollout';
import { ForkliftOutput, forkliftOutput } from '../constructs/forklift/output';
import { MovesInput } from '../src/forklift/checks';
import { yamlText } from '../src/base/yaml-text';
import { apiLimitProblems } from '../src/delivery/api-limits';
import { DeliveryFormSpec, deliveryForm } from '../src/kubevirt/delivery-forms';
import { assertNever } from '../src/base/never';

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
   * Extend one cluster's constructs before they are rendered: its `MeshClusterChart` (or
   * `HarvesterClusterChart`), with `chart.proxy` the cluster's `MigrationProxy` in gateway mode. Called
   * once per cluster, in cluster order. Unlike `customize`, it lets the writer
   * (`synthesizeFleetToDirectory`, the CLI's `synth`) build, render, write and release one cluster at a
   * time: memory stays one cluster plus the plan. `customize` needs every cluster's constructs at once
   * (about 0.8 KiB per object held until the write, ~600 MiB at 1000 clusters); prefer this form for
   * large fleets. When both are given, this one runs first, on every chart.
   *
   * @default - no customization
   */
  readonly customizeCluster?: (chart: MeshClusterChart | HarvesterClusterChart) => NotAPromise;
  /**
   * false: judge only (what `validate` needs): plan, ledger, constructs, file names and every problem, but
   * no YAML is rendered (nor a workload's spec: its metadata is read from its constructs) and `files` stays
   * empty; `objects` is rendered when first read.
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

export function objectFileName(o: Manifest): string {
  const ns = o.metadata?.namespace ? `${fileSafe(o.metadata.namespace)}.` : '';
  return `${fileSafe(o.kind)}.${ns}${fileSafe(o.metadata?.name ?? 'unnamed')}.yaml`;
}

const toYamlText = yamlText;

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
 * `build` (the mesh, or the plan the streaming writer builds from) and the GitOps wiring. A fleet with
 * problems is checked once more, layer by layer (`checkSynthesis`), so the error lists every problem of
 * the plan, Harvester values, moves and GitOps at once.
 */
export function checkedBuild<T>(fleet: FleetInput, opts: PlanOptions, build: () => T): { value: T; gitops?: ResolvedGitops } {
  const { gitops, problems } = resolveGitops(toFleetDocument(fleet));
  let value: T;
  try {
    value = build();
  } catch (e) {
    if (!(e instanceof FleetValidationError)) throw e;
    const all = checkSynthesis(fleet, opts);
    // the plan and Harvester layers found nothing: the mesh's own (Forklift moves) problems, with GitOps'
    throw new FleetValidationError(all.length > problems.length ? all : [...e.problems, ...problems]);
  }
  if (problems.length) throw new FleetValidationError(problems);
  return { value, gitops };
}

/** The mesh with each cluster's chart in an App of its own (rendering chart by chart from one App is quadratic). */
function buildMesh(fleet: FleetInput, opts: SynthOptions): { mesh: CrossClusterMigrationMesh; gitops?: ResolvedGitops } {
  const app = (): App => new App({ outdir: os.tmpdir() });
  const { value: mesh, gitops } = checkedBuild(fleet, opts, () => new CrossClusterMigrationMesh(app(), 'mesh', {
    fleet, ledger: opts.ledger, frozen: opts.frozen, renamedFrom: opts.renamedFrom, moves: opts.moves,
    labels: opts.labels, gatewayPod: opts.gatewayPod, clusters: opts.clusters, chartScope: app,
  }));
  return { mesh, gitops };
}

/**
 * Build every cluster's objects and files in memory: the mesh (`CrossClusterMigrationMesh`), your
 * `customize` hook, then one rendering into the GitOps layout. Throws FleetValidationError before
 * anything is rendered.
 */
export function synthesizeFleet(fleet: FleetInput, opts: SynthOptions = {}): SynthResult {
  const { mesh, gitops } = buildMesh(fleet, opts);
  if (opts.customizeCluster) for (const chart of mesh.charts) refuseAsync(opts.customizeCluster(chart), 'customizeCluster');
  refuseAsync(opts.customize?.(mesh), 'customize');
  return renderMesh(mesh, gitops, opts.onCluster, opts.render !== false);
}

/** A hook that returned a promise (an `async` hook) is refused: synthesis is synchronous. */
export function refuseAsync(hooked: unknown, hook: 'customize' | 'customizeCluster'): void {
  if (typeof (hooked as PromiseLike<unknown> | undefined)?.then !== 'function') return;
  Promise.resolve(hooked).catch(() => undefined); // refused here: its own failure must not end the process later
  throw new InvalidPropsError({ code: 'customize-async', path: hook, message: `the ${hook} hook returned a promise (an async function?): synthesis is synchronous, so it would finish after the tree is rendered and written`,
    fix: 'make the hook synchronous (no async / await): the construct methods it calls (addSidecar, addPodLabel, ...) are all synchronous' });
}

function renderMesh(mesh: CrossClusterMigrationMesh, gitops: ResolvedGitops | undefined, onCluster: SynthOptions['onCluster'], render: boolean): SynthResult {
  const r = rendering(gitops, render, mesh.plan.fleet);
  const files = new Map<string, string>();
  const objects = new Map<string, Manifest[]>();
  const stagesOf: ClusterStages[] = [];
  mesh.charts.forEach((chart, n) => {
    const done = clusterFiles(chart, r, (rel, text) => files.set(rel, text));
    objects.set(done.name, done.objects);
    stagesOf.push(done);
    onCluster?.(n + 1, mesh.charts.length);
  });
  const forklift = forkliftOutput({ chart: mesh.forklift, warnings: mesh.forkliftWarnings, gitops }, { toYaml: r.toYaml, objectFileName });
  for (const [k, v] of forklift.files) files.set(k, v);
  fleetFiles(mesh.plan, forklift, stagesOf, r, (rel, text) => files.set(rel, text));
  throwRefused(r);
  const { plan, ledger, changes } = mesh;
  const result = { files: render ? files : new Map<string, string>(), plan, ledger, changes, objects, gitops, forklift, mesh };
  if (render) return result;
  // judging only: file names came from each object's kind, namespace and name; the objects themselves when asked for
  let whole: Map<string, Manifest[]> | undefined;
  return Object.defineProperty(result, 'objects', {
    enumerable: true, get: () => (whole ??= new Map(mesh.charts.map((c) => [c.cluster.name, clusterObjects(c, gitops)]))),
  });
}

/** One cluster's objects as synth writes them: rollout order, GitOps annotations. */
function clusterObjects(chart: MeshClusterChart | HarvesterClusterChart, gitops: ResolvedGitops | undefined): Manifest[] {
  const nads = kubevirtNadKeys(chart.cluster);
  return sortForRollout(chart.toJson() as Manifest[], nads).map((o) => annotateForGitops(o, rolloutWave(o, nads), gitops));
}

/**
 * A chart's objects as far as judging needs them (validate): what names their files and what the API
 * server's limits read (src/delivery/api-limits.ts), with their GitOps annotations. A workload
 * (cdk8s-plus: its spec is most of the rendering's cost) is read from its constructs, its metadata and its
 * pod template's, without rendering the spec; every other object is rendered (a few per cluster, and
 * one may add to its metadata when rendered, as the HyperConverged's jsonpatch annotation does).
 */
function judgedObjects(chart: MeshClusterChart | HarvesterClusterChart, gitops: ResolvedGitops | undefined): Manifest[] {
  const nads = kubevirtNadKeys(chart.cluster);
  const judged = chart.node.findAll().filter((c): c is ApiObject => c instanceof ApiObject).map((o): Manifest => {
    const owner = o.node.scope;
    return owner instanceof kplus.Workload
      ? { apiVersion: o.apiVersion, kind: o.kind, metadata: o.metadata.toJson(), spec: { template: { metadata: owner.podMetadata.toJson() } } }
      : o.toJson();
  });
  // the order synth renders them in, so both find the same problems in the same order
  return sortForRollout(judged, nads).map((o) => annotateForGitops(o, rolloutWave(o, nads), gitops));
}

/** How files are rendered: YAML text (or none, judging only) and the GitOps layout. */
export interface Rendering {
  readonly toYaml: (o: unknown) => string;
  /** Only file names and the API server's limits are needed (validate): workloads are judged from their constructs, not rendered. */
  readonly judgeOnly: boolean;
  /** The fleet's name, for the paths of problems found in the objects (`(output) <fleet>/<cluster>/<file>`). */
  readonly fleet: string;
  /** What the API server would refuse of the objects rendered so far (`clusterFiles` adds; the caller throws them once). */
  readonly refused: FleetProblem[];
  readonly kustomization: (resources: string[]) => string;
  readonly gitops?: ResolvedGitops;
  /** Flux has no waves inside one Kustomization: the staged layout gives each stage its own directory. */
  readonly staged: boolean;
}

export function rendering(gitops: ResolvedGitops | undefined, render: boolean, fleet: string): Rendering {
  // judging only: every file name (and its collisions) as in synth, but no YAML text
  return { toYaml: render ? toYamlText : () => '', judgeOnly: !render, fleet, refused: [], kustomization: render ? kustomizationText : () => '', gitops, staged: !!gitops?.flux };
}

/** The problems `clusterFiles` found, thrown once for every cluster (nothing is written). */
export function throwRefused(r: Rendering): void {
  if (r.refused.length) throw new FleetValidationError(r.refused);
}

export interface ClusterStages { readonly name: string; readonly stages: StageName[] }

/**
 * One cluster's objects (rollout order, GitOps annotations) and its files, each passed to `emit`:
 * `<cluster>/<Kind>.<namespace>.<name>.yaml`, the kustomize-patch Component, the kustomizations.
 */
export function clusterFiles(
  chart: MeshClusterChart | HarvesterClusterChart, r: Rendering, emit: (rel: string, text: string) => void,
): ClusterStages & { objects: Manifest[] } {
  const name = chart.cluster.name;
  const nads = kubevirtNadKeys(chart.cluster);
  const objs = r.judgeOnly ? judgedObjects(chart, r.gitops) : clusterObjects(chart, r.gitops);
  const resources = new Map<string, string[]>();
  const seen = new Set<string>();
  const form = deliveryForm(chart.cluster.kubevirt.configDelivery);
  const asComponent = writtenAsComponent(form.file);
  for (const o of objs) {
    if (asComponent && o.kind === form.kind) {
      emit(`${name}/components/kubevirt/kubevirt-patch.yaml`, r.toYaml(o));
      emit(`${name}/components/kubevirt/kustomization.yaml`, r.toYaml({
        apiVersion: 'kustomize.config.k8s.io/v1alpha1',
        kind: 'Component',
        patches: [{ path: 'kubevirt-patch.yaml', target: { group: 'kubevirt.io', version: 'v1', kind: 'KubeVirt', name: o.metadata.name, namespace: o.metadata.namespace } }],
      }));
      continue;
    }
    const dir = r.staged ? stageOfWave(rolloutWave(o, nads)).dir : '';
    const f = objectFileName(o);
    const rel = dir ? `${name}/${dir}/${f}` : `${name}/${f}`;
    if (seen.has(rel)) {
      const message = `two objects of cluster ${name} map to one file ${f}`;
      throw new MigrationMeshError(message, [{ code: 'plan-inconsistent', path: `${name}/${f}`, message }]);
    }
    seen.add(rel);
    r.refused.push(...apiLimitProblems(o, `(output) ${r.fleet}/${rel}`));
    emit(rel, r.toYaml(o));
    resources.set(dir, [...(resources.get(dir) ?? []), f]);
  }
  if (!r.staged) {
    emit(`${name}/kustomization.yaml`, r.kustomization(resources.get('') ?? []));
    return { name, stages: [], objects: objs };
  }
  const present = STAGES.filter((st) => resources.has(st.dir));
  for (const st of present) emit(`${name}/${st.dir}/kustomization.yaml`, r.kustomization(resources.get(st.dir)!));
  // plain `kubectl apply -k <cluster>` still applies everything, stage directories in order
  emit(`${name}/kustomization.yaml`, r.kustomization(present.map((st) => st.dir)));
  return { name, stages: present.map((st) => st.name), objects: objs };
}

/** Whether a delivery form's object is written as a kustomize Component (`components/kubevirt/`) instead of an object file. */
function writtenAsComponent(file: DeliveryFormSpec['file']): boolean {
  switch (file) {
    case 'object': return false;
    case 'kustomize-component': return true;
    default: return assertNever(file, 'delivery form file');
  }
}

/** The GitOps wiring's files (`_gitops/`): an ApplicationSet or Flux Kustomizations over every cluster. */
export function fleetFiles(
  plan: FleetPlan, forklift: ForkliftOutput, stagesOf: readonly ClusterStages[], r: Rendering, emit: (rel: string, text: string) => void,
): void {
  const { gitops } = r;
  const checked = (rel: string, o: Manifest): void => { r.refused.push(...apiLimitProblems(o, `(output) ${r.fleet}/${rel}`)); emit(rel, r.toYaml(o)); };
  if (gitops?.argocd) {
    const apps = [argocdApplicationSet(gitops, plan.clusters.map((c) => c.name)), ...forklift.gitops.argocd];
    for (const a of apps) checked(`${GITOPS_DIR}/argocd/${objectFileName(a)}`, a);
    emit(`${GITOPS_DIR}/argocd/kustomization.yaml`, r.kustomization(apps.map(objectFileName)));
  }
  if (gitops?.flux) {
    const ks = [...fluxKustomizations(gitops, stagesOf), ...forklift.gitops.flux];
    for (const k of ks) checked(`${GITOPS_DIR}/flux/${objectFileName(k)}`, k);
    emit(`${GITOPS_DIR}/flux/kustomization.yaml`, r.kustomization(ks.map(objectFileName)));
  }
}

function kustomizationText(resources: string[]): string {
  return toYamlText({ apiVersion: 'kustomize.config.k8s.io/v1beta1', kind: 'Kustomization', resources });
}
