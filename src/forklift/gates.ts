/**
 * What the generated configuration of a cluster says, read from the objects synthesis emits (not from
 * the fleet): the feature gates its KubeVirt configuration lists in every delivery form, and the NADs
 * it creates. Forklift reads only the explicit `featureGates` list of each cluster's KubeVirt CR, so
 * the check looks at exactly what we deliver. Pure, no cdk8s import.
 */

/** A synthesized Kubernetes object, as far as these readers need it. */
export interface EmittedObject {
  readonly kind: string;
  readonly metadata?: { readonly name?: string; readonly namespace?: string; readonly annotations?: Readonly<Record<string, string>> };
  readonly spec?: unknown;
}

const HCO_JSONPATCH = 'kubevirt.kubevirt.io/jsonpatch';
const GATES_PATH = '/spec/configuration/developerConfiguration/featureGates';

const field = (o: unknown, ...keys: string[]): unknown =>
  keys.reduce<unknown>((x, k) => (x && typeof x === 'object' ? (x as Record<string, unknown>)[k] : undefined), o);

/** Gates added to the KubeVirt CR by an HCO jsonpatch annotation (`add` to the list, or the whole list). */
function hcoGates(annotation: string | undefined): string[] {
  if (!annotation) return [];
  let ops: unknown;
  try { ops = JSON.parse(annotation); } catch { return []; }
  if (!Array.isArray(ops)) return [];
  const out: string[] = [];
  for (const op of ops as { op?: string; path?: string; value?: unknown }[]) {
    if (op.op !== 'add' && op.op !== 'replace') continue;
    if (op.path === `${GATES_PATH}/-` && typeof op.value === 'string') out.push(op.value);
    if (op.path === GATES_PATH && Array.isArray(op.value)) out.push(...op.value.filter((v): v is string => typeof v === 'string'));
  }
  return out;
}

/** Feature gates the cluster's emitted KubeVirt / HyperConverged objects list explicitly, sorted. */
export function featureGatesOf(objects: readonly EmittedObject[]): string[] {
  const gates = new Set<string>();
  for (const o of objects) {
    if (o.kind === 'KubeVirt') {
      const list = field(o.spec, 'configuration', 'developerConfiguration', 'featureGates');
      if (Array.isArray(list)) for (const g of list) if (typeof g === 'string') gates.add(g);
    } else if (o.kind === 'HyperConverged') {
      for (const g of hcoGates(o.metadata?.annotations?.[HCO_JSONPATCH])) gates.add(g);
    }
  }
  return [...gates].sort();
}

/** `namespace/name` of every NetworkAttachmentDefinition the cluster's output creates, sorted. */
export function nadsOf(objects: readonly EmittedObject[]): string[] {
  return objects.filter((o) => o.kind === 'NetworkAttachmentDefinition')
    .map((o) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`).sort();
}
