/**
 * What a cluster's KubeVirt configuration already holds in the lists our objects take over.
 *
 * `spec.configuration.developerConfiguration.featureGates` and `spec.customizeComponents.patches` are
 * `x-kubernetes-list-type: atomic` in the KubeVirt CRD: under server-side apply the last applier owns
 * the whole list, a kustomize patch on a custom resource replaces the whole list, and the HCO
 * `kubevirt.kubevirt.io/jsonpatch` annotation holds one value. So whatever else the cluster needs in
 * those lists must be in our output too: the fleet declares it (`kubevirt.existing`, fleet-wide and per
 * cluster) and the output carries the union (docs/field-ownership.md). Pure, no cdk8s import.
 */
import { z } from 'zod';
import { DEFAULT_DELIVERY_FORM, DeliveryForm, deliveryForm, formsWhere } from './delivery-forms';

/** One KubeVirt `CustomizeComponentsPatch` (all four fields required by the CRD). */
export const customizeComponentsPatchSchema = z.object({
  /** Kind of the component object, e.g. `Deployment`, `DaemonSet`. */
  resourceType: z.string().min(1),
  /** Name of the component object, e.g. `virt-api`. */
  resourceName: z.string().min(1),
  /** Patch type. */
  type: z.enum(['json', 'strategic', 'merge']),
  /** The patch, as a JSON string. */
  patch: z.string().min(1),
}).strict();
export type CustomizeComponentsPatch = z.infer<typeof customizeComponentsPatchSchema>;

/** One RFC 6902 operation on the KubeVirt CR, as HCO's jsonpatch annotation carries them. */
export const kubevirtJsonPatchOpSchema = z.object({
  op: z.enum(['add', 'remove', 'replace', 'move', 'copy', 'test']),
  path: z.string().regex(/^\//, { message: 'must be a JSON pointer starting with "/"' }),
  value: z.unknown().optional(),
  from: z.string().optional(),
}).strict();
export type KubevirtJsonPatchOp = z.infer<typeof kubevirtJsonPatchOpSchema>;

/**
 * `kubevirt.existing`: what the cluster already has in the fields our KubeVirt object owns. Fleet-wide
 * and per-cluster lists are joined (fleet first, duplicates dropped).
 */
export const existingKubevirtSchema = z.object({
  /**
   * Feature gates the cluster enables besides ours (`Snapshot`, `HotplugVolumes`, ...).
   * @default - none
   */
  featureGates: z.array(z.string().regex(/^[A-Za-z0-9]+$/, { message: 'must be a KubeVirt feature gate name such as Snapshot' })).optional(),
  /**
   * `spec.customizeComponents.patches` the cluster already has besides ours.
   * @default - none
   */
  customizeComponentsPatches: z.array(customizeComponentsPatchSchema).optional(),
  /**
   * hco delivery: the operations already in the HyperConverged `kubevirt.kubevirt.io/jsonpatch`
   * annotation; ours are appended after them.
   * @default - none
   */
  kubevirtJsonPatch: z.array(kubevirtJsonPatchOpSchema).optional(),
}).strict();
export type ExistingKubevirtSpec = z.infer<typeof existingKubevirtSchema>;

/** The resolved union for one cluster. */
export interface ExistingKubevirt {
  readonly featureGates: string[];
  readonly customizeComponentsPatches: CustomizeComponentsPatch[];
  readonly kubevirtJsonPatch: KubevirtJsonPatchOp[];
}

const uniqueBy = <T>(xs: T[], key: (x: T) => string): T[] => [...new Map(xs.map((x) => [key(x), x])).values()];

/** Fleet-wide then per-cluster, duplicates dropped (first occurrence kept). */
export function resolveExistingKubevirt(fleet?: ExistingKubevirtSpec, cluster?: ExistingKubevirtSpec): ExistingKubevirt {
  const join = <K extends keyof ExistingKubevirtSpec>(k: K) => [...(fleet?.[k] ?? []), ...(cluster?.[k] ?? [])] as NonNullable<ExistingKubevirtSpec[K]>;
  return {
    featureGates: uniqueBy(join('featureGates'), (g) => g),
    customizeComponentsPatches: uniqueBy(join('customizeComponentsPatches'), (p) => JSON.stringify(p)),
    kubevirtJsonPatch: uniqueBy(join('kubevirtJsonPatch'), (o) => JSON.stringify(o)),
  };
}

interface KubevirtSection { readonly configDelivery?: DeliveryForm; readonly existing?: ExistingKubevirtSpec }
interface DocLike {
  readonly spec: { readonly kubevirt?: KubevirtSection; readonly clusters: readonly { readonly name: string; readonly kubevirt?: KubevirtSection }[] };
}

/**
 * The API server's limit on an object's annotations (256 KiB: `TotalAnnotationSizeLimitB`, the sum of
 * len(key) + len(value)), less what our own operations and annotations take.
 */
const ANNOTATION_ROOM = 256 * 1024 - 32 * 1024;

/** Problems with `kubevirt.existing`: patches that are not JSON, jsonpatch ops for a cluster not delivered through HCO. */
export function existingKubevirtProblems(doc: DocLike): { path: string; message: string; fix: string }[] {
  const out: { path: string; message: string; fix: string }[] = [];
  const checkPatches = (base: string, e?: ExistingKubevirtSpec) => (e?.customizeComponentsPatches ?? []).forEach((p, j) => {
    let parsed: unknown;
    try { parsed = JSON.parse(p.patch); } catch { parsed = undefined; }
    const okShape = p.type === 'json' ? Array.isArray(parsed) : typeof parsed === 'object' && parsed !== null && !Array.isArray(parsed);
    if (!okShape) {
      out.push({
        path: `${base}.existing.customizeComponentsPatches[${j}].patch`,
        message: `is not a JSON ${p.type === 'json' ? 'array of operations' : 'object'}, which a ${p.type} patch must be (virt-operator would fail to apply it)`,
        fix: 'copy the patch string exactly as it is in the cluster\'s KubeVirt spec.customizeComponents.patches',
      });
    }
  });
  checkPatches('spec.kubevirt', doc.spec.kubevirt?.existing);
  doc.spec.clusters.forEach((c, i) => {
    checkPatches(`spec.clusters[${i}].kubevirt`, c.kubevirt?.existing);
    const delivery = c.kubevirt?.configDelivery ?? doc.spec.kubevirt?.configDelivery ?? DEFAULT_DELIVERY_FORM;
    if (deliveryForm(delivery).jsonPatchAnnotation) {
      // the API server refuses an object whose annotations total more than 256 KiB; ours need a few KiB. HCO's
      // jsonpatch annotation carries the declared operations and, as one operation, the customizeComponents
      // patches (HyperConverged has no field for them): both count (issue #39)
      const both = <K extends 'kubevirtJsonPatch' | 'customizeComponentsPatches'>(k: K) => [...(doc.spec.kubevirt?.existing?.[k] ?? []), ...(c.kubevirt?.existing?.[k] ?? [])];
      const bytes = (list: unknown[]): number => (list.length ? Buffer.byteLength(JSON.stringify(list), 'utf8') : 0);
      const ops = bytes(both('kubevirtJsonPatch'));
      const patches = bytes(both('customizeComponentsPatches'));
      if (ops + patches > ANNOTATION_ROOM) {
        out.push({
          path: `spec.clusters[${i}].kubevirt.existing.${patches > ops ? 'customizeComponentsPatches' : 'kubevirtJsonPatch'}`,
          message: `cluster ${c.name} is delivered through HCO, whose kubevirt.kubevirt.io/jsonpatch annotation carries its declared customizeComponentsPatches (${patches} bytes) and kubevirtJsonPatch (${ops} bytes) beside ours: past the API server's 256 KiB annotation limit (262144 bytes for all of an object's annotations; room for declared ones: ${ANNOTATION_ROOM})`,
          fix: `keep only the patches and operations the cluster really has (copied from its KubeVirt spec.customizeComponents.patches and its kubevirt.kubevirt.io/jsonpatch annotation), or deliver this cluster as ${formsWhere((f) => !f.jsonPatchAnnotation)}, which carry them in the spec`,
        });
      }
      return;
    }
    for (const [src, base] of [[c.kubevirt, `spec.clusters[${i}].kubevirt`], [doc.spec.kubevirt, 'spec.kubevirt']] as const) {
      if (src?.existing?.kubevirtJsonPatch?.length) {
        out.push({
          path: `${base}.existing.kubevirtJsonPatch`,
          message: `${base === 'spec.kubevirt' ? 'a cluster' : `cluster ${c.name}`} delivers its KubeVirt configuration as ${delivery}, which has no HCO jsonpatch annotation to keep these operations in`,
          fix: `remove kubevirtJsonPatch, or set configDelivery: ${formsWhere((f) => f.jsonPatchAnnotation)} for the cluster`,
        });
      }
    }
  });
  return [...new Map(out.map((x) => [`${x.path}\n${x.message}`, x])).values()];
}
