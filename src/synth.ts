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
import { MeshClusterChart } from '../constructs/mesh-cluster';
import { Ledger, LedgerChange } from './ledger';
import { FleetInput, FleetPlan, PlanOptions, planFleetDocument } from './planner';

export type SynthOptions = PlanOptions;

export interface SynthResult {
  /** Relative path -> file content. */
  readonly files: Map<string, string>;
  readonly plan: FleetPlan;
  readonly ledger: Ledger;
  readonly changes: LedgerChange[];
  /** Every object, per cluster, in rollout order. */
  readonly objects: Map<string, any[]>;
}

/** Rollout rank: lower applies first (NADs before the KubeVirt config that names them). */
export function rolloutRank(kind: string): number {
  switch (kind) {
    case 'Namespace': return 0;
    case 'NetworkAttachmentDefinition': return 1;
    case 'ServiceAccount': case 'ConfigMap': case 'Secret': case 'Certificate': case 'Issuer': return 2;
    case 'Deployment': case 'Service': case 'PodDisruptionBudget': case 'NetworkPolicy': case 'MultiNetworkPolicy': case 'ServiceMonitor': return 3;
    case 'KubeVirt': case 'HyperConverged': return 4;
    default: return 5;
  }
}

const fileSafe = (s: string): string => s.replace(/[^0-9A-Za-z._-]/g, '_');

export function objectFileName(o: any): string {
  const ns = o.metadata?.namespace ? `${fileSafe(o.metadata.namespace)}.` : '';
  return `${fileSafe(o.kind)}.${ns}${fileSafe(o.metadata?.name ?? 'unnamed')}.yaml`;
}

export function toYaml(o: unknown): string {
  return YAML.stringify(o, { lineWidth: 0, aliasDuplicateObjects: false });
}

/** Build every cluster's objects and files in memory. Throws FleetValidationError before anything is written. */
export function synthesizeFleet(fleet: FleetInput, opts: SynthOptions = {}): SynthResult {
  const result = planFleetDocument(fleet, opts);
  const files = new Map<string, string>();
  const objects = new Map<string, any[]>();
  for (const cluster of result.plan.clusters) {
    // one App per cluster: cdk8s prepares the whole app for every chart it synthesizes, so a shared
    // App makes synthesis quadratic in the number of clusters
    const chart = new MeshClusterChart(new App({ outdir: os.tmpdir() }), cluster.name, { plan: result.plan, cluster });
    const name = cluster.name;
    const objs = (chart.toJson() as any[]).map((o, i) => ({ o, i }))
      .sort((a, b) => (rolloutRank(a.o.kind) - rolloutRank(b.o.kind)) || (a.i - b.i))
      .map((x) => x.o);
    objects.set(name, objs);
    const resources: string[] = [];
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
      const f = objectFileName(o);
      if (files.has(`${name}/${f}`)) throw new Error(`two objects of cluster ${name} map to one file ${f}`);
      files.set(`${name}/${f}`, toYaml(o));
      resources.push(f);
    }
    files.set(`${name}/kustomization.yaml`, toYaml({
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources,
    }));
  }
  return { files, plan: result.plan, ledger: result.ledger, changes: result.changes, objects };
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
