/**
 * The prune-guard cases of the real GitOps suites (issue 50): fra-1's objects of the VM-network example that carry an
 * engine's prune guard, before and after a synth that drops both VM networks (with the explicit opt-in a removal
 * needs), and each dropped object as a control: renamed, without the guard (a binding names the renamed policy).
 * test/flux.real.test.ts (Flux's `kustomize.toolkit.fluxcd.io/prune: disabled`) and test/argocd-engine.real.test.ts
 * (Argo CD's sync option `Prune=false`) run them through the real engines.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import { synthesizeFleet } from '../../cli/synthesize-fleet';
import { parseFleetDocument } from '../../src/fleet/load';
import { KubeObject, objectKey } from './real-apply';

/** An engine's guard: the annotation that carries it, and whether an object's value of it keeps the object. */
export interface PruneGuard { readonly annotation: string; readonly holds: (value: string | undefined) => boolean }

const annotationsOf = (o: KubeObject) => (o.metadata.annotations ?? {}) as Record<string, string>;

/** fra-1's guarded objects of the VM-network example, synthesized with `edit` applied to the fleet. */
type RawFleetDoc = { spec: { vmNetworks: { name: string }[]; vmNetworkDeletions?: unknown[]; forklift?: { moves?: unknown[] } } };

export function guardedVmnetObjects(guard: PruneGuard, edit: (doc: RawFleetDoc) => void = () => undefined): KubeObject[] {
  const doc = parse(fs.readFileSync(path.resolve(__dirname, '..', '..', 'examples', 'vm-networks.fleet.yaml'), 'utf8'));
  edit(doc);
  return (synthesizeFleet(parseFleetDocument(doc), {}).objects.get('fra-1') as unknown as KubeObject[])
    .filter((o) => guard.holds(annotationsOf(o)[guard.annotation]))
    .map((o) => JSON.parse(JSON.stringify(o)) as KubeObject);
}

/** The object under another name, without the guard: the control, which the engine must prune. */
export function unguarded(guard: PruneGuard, o: KubeObject): KubeObject {
  const { [guard.annotation]: _guard, ...annotations } = annotationsOf(o);
  const policy = (o.spec as { policyName?: string } | undefined)?.policyName;
  const spec = o.kind === 'ValidatingAdmissionPolicyBinding' ? { ...(o.spec as object), policyName: `${policy}-unguarded` } : o.spec;
  return { ...o, metadata: { ...o.metadata, name: `${o.metadata.name}-unguarded`, annotations }, spec };
}

/** The guarded objects before and after the fleet drops both VM networks, the dropped ones, and their controls. */
export interface DropCase { before: KubeObject[]; after: KubeObject[]; dropped: KubeObject[]; kinds: string[]; controls: KubeObject[] }

export function vmnetDropCase(guard: PruneGuard): DropCase {
  const before = guardedVmnetObjects(guard);
  const after = guardedVmnetObjects(guard, (doc) => {
    doc.spec.vmNetworkDeletions = doc.spec.vmNetworks.map((n) => ({ network: n.name }));
    doc.spec.vmNetworks = [];
    if (doc.spec.forklift) doc.spec.forklift.moves = [];
  });
  const keep = new Set(after.map(objectKey));
  const dropped = before.filter((o) => !keep.has(objectKey(o)));
  return { before, after, dropped, kinds: dropped.map((o) => `${o.kind}/${o.metadata.name}`), controls: dropped.map((o) => unguarded(guard, o)) };
}
