/**
 * The construct side of the delivery-form registry (src/kubevirt/delivery-forms.ts): how each form turns the
 * cluster's canonical partial KubeVirt spec into its API object. `Record<DeliveryForm, ...>`: a form added
 * to the registry and missing here is a compile error, so no form falls through to another's object.
 */
import { ApiObject, ApiObjectProps, Lazy } from 'cdk8s';
import { Construct } from 'constructs';
import { DeliveryForm } from '../../src/kubevirt/delivery-forms';
import { HCO_JSONPATCH_ANNOTATION, HcoDisabledGates, JsonObject, dedupePatches, hcoFormWithExisting } from '../../src/kubevirt/config';

/** What a form's renderer reads: the object's place, what the cluster already has, and the spec (read lazily, at synth). */
export interface DeliveryRenderInput {
  readonly namespace: string;
  readonly name: string;
  /** The canonical partial KubeVirt spec as it stands at synth (fragments are added after the object is made). */
  readonly spec: () => JsonObject;
  readonly existingJsonPatch: readonly JsonObject[];
  readonly existingFeatureGates?: readonly string[];
  readonly hcoDisabledGates?: HcoDisabledGates;
}

/** Makes the form's object, `Resource`, under `scope`. */
type DeliveryRenderer = (scope: Construct, x: DeliveryRenderInput) => ApiObject;

/** A partial KubeVirt object holding only the fields we manage (server-side apply, or the writer's kustomize patch). */
const partialKubevirt: DeliveryRenderer = (scope, x) => new ApiObject(scope, 'Resource', {
  apiVersion: 'kubevirt.io/v1',
  kind: 'KubeVirt',
  metadata: { name: x.name, namespace: x.namespace },
  spec: Lazy.any({ produce: () => dedupePatches(x.spec()) }),
});

/** HyperConverged fields, and the jsonpatch annotation for what HCO lacks (src/kubevirt/config.ts `hcoFormWithExisting`). */
const hyperConverged: DeliveryRenderer = (scope, x) => {
  const form = () => hcoFormWithExisting(x.spec(), x.existingJsonPatch, x.existingFeatureGates, x.hcoDisabledGates);
  return new HyperConvergedObject(scope, 'Resource', () => form().kubevirtJsonPatch, {
    apiVersion: 'hco.kubevirt.io/v1beta1',
    kind: 'HyperConverged',
    metadata: { name: x.name, namespace: x.namespace },
    spec: Lazy.any({ produce: () => form().spec }),
  });
};

/** Every form's renderer. The kustomize-patch form is the partial KubeVirt: the writer files it as a Component (its entry's `file`). */
export const DELIVERY_RENDERERS: Record<DeliveryForm, DeliveryRenderer> = {
  'kubevirt-cr': partialKubevirt,
  'kustomize-patch': partialKubevirt,
  hco: hyperConverged,
};

/** A HyperConverged object whose jsonpatch annotation is computed from the final spec at synth. */
class HyperConvergedObject extends ApiObject {
  constructor(scope: Construct, id: string, private readonly jsonPatch: () => JsonObject[], props: ApiObjectProps) {
    super(scope, id, props);
  }

  public toJson(): { metadata: { annotations?: Record<string, string> } } {
    const json = super.toJson();
    const ops = this.jsonPatch();
    if (ops.length) json.metadata.annotations = { ...json.metadata.annotations, [HCO_JSONPATCH_ANNOTATION]: JSON.stringify(ops) };
    return json;
  }
}
