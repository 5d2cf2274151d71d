import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { ConfigDelivery } from '../../src/fleet/schema';
import { DEFAULT_DELIVERY_FORM, DELIVERY_FORM_NAMES } from '../../src/kubevirt/delivery-forms';
import { InvalidPropsError } from '../../src/base/errors';
import { HcoDisabledGates, JsonObject, mergeSpec } from '../../src/kubevirt/config';
import { DELIVERY_RENDERERS } from './delivery-renderers';

/**
 * Properties for `KubevirtConfiguration`.
 */
export interface KubevirtConfigurationProps {
  /** Namespace KubeVirt (or HCO) is installed in. */
  readonly namespace: string;
  /** Name of the KubeVirt CR, or of the HyperConverged CR for `hco`. */
  readonly name: string;
  /**
   * Delivery form (src/kubevirt/delivery-forms.ts): `kubevirt-cr` (partial KubeVirt for server-side apply),
   * `kustomize-patch` (the same partial object, written as a kustomize Component patch), or `hco`
   * (HyperConverged fields plus the `kubevirt.kubevirt.io/jsonpatch` annotation for what HCO lacks). Each
   * form's object is made by its renderer (./delivery-renderers.ts).
   *
   * @default kubevirt-cr
   */
  readonly delivery?: ConfigDelivery;
  /**
   * `hco` only: the operations the HyperConverged `kubevirt.kubevirt.io/jsonpatch` annotation already
   * holds. The annotation is one value, which our object owns: these come first, ours after them.
   *
   * @default - none
   */
  readonly existingJsonPatch?: readonly JsonObject[];
  /**
   * `hco` only: the feature gates the cluster's KubeVirt already has (HCO's own among them). The
   * annotation appends only the gates the list lacks, so none is there twice.
   *
   * @default - none
   */
  readonly existingFeatureGates?: readonly string[];
  /**
   * `hco` only: the `disabledFeatureGates` list HCO writes into the KubeVirt CR itself (from HCO
   * release-1.19: every KubeVirt Beta gate it does not enable). Where HCO writes it, our disabled gates
   * are appended to it; where not, the annotation adds the list.
   *
   * @default - HCO writes no such list
   */
  readonly hcoDisabledGates?: HcoDisabledGates;
}

/**
 * The cluster's KubeVirt configuration. Other constructs contribute fragments of a canonical partial
 * KubeVirt `spec` (`addSpec`); it is rendered lazily, at synth, in the chosen delivery form. Only
 * the fields we manage are present, so server-side apply leaves the rest to the KubeVirt operator.
 */
export class KubevirtConfiguration extends Construct {
  public readonly delivery: ConfigDelivery;
  public readonly apiObject: ApiObject;
  private spec: JsonObject = {};

  constructor(scope: Construct, id: string, props: KubevirtConfigurationProps) {
    super(scope, id);
    this.delivery = props.delivery ?? DEFAULT_DELIVERY_FORM;
    // a JavaScript caller can pass any string: an unknown form is refused, never rendered as another's object
    const render = Object.hasOwn(DELIVERY_RENDERERS, this.delivery) ? DELIVERY_RENDERERS[this.delivery] : undefined;
    if (!render) {
      throw new InvalidPropsError({ code: 'prop-invalid', path: 'delivery', message: `delivery '${String(this.delivery)}' is not a delivery form`, fix: `use one of ${DELIVERY_FORM_NAMES.join(', ')}` });
    }
    this.apiObject = render(this, {
      namespace: props.namespace, name: props.name, spec: () => this.spec,
      existingJsonPatch: props.existingJsonPatch ?? [], existingFeatureGates: props.existingFeatureGates, hcoDisabledGates: props.hcoDisabledGates,
    });
  }

  /** Merge a fragment of the KubeVirt `spec` (objects merge; string lists union). */
  public addSpec(fragment: JsonObject): void {
    this.spec = mergeSpec(this.spec, fragment);
  }

  /** The canonical partial KubeVirt spec so far. */
  public get kubevirtSpec(): JsonObject {
    return this.spec;
  }
}
