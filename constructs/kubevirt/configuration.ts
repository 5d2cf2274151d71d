import { ApiObject, ApiObjectProps, Lazy } from 'cdk8s';
import { Construct } from 'constructs';
import { ConfigDelivery } from '../../src/fleet/schema';
import { HCO_JSONPATCH_ANNOTATION, HcoDisabledGates, JsonObject, dedupePatches, hcoFormWithExisting, mergeSpec } from '../../src/kubevirt/config';

/**
 * Properties for `KubevirtConfiguration`.
 */
export interface KubevirtConfigurationProps {
  /** Namespace KubeVirt (or HCO) is installed in. */
  readonly namespace: string;
  /** Name of the KubeVirt CR, or of the HyperConverged CR for `hco`. */
  readonly name: string;
  /**
   * Delivery form: `kubevirt-cr` (partial KubeVirt for server-side apply), `kustomize-patch` (the same
   * partial object, written as a kustomize Component patch), or `hco` (HyperConverged fields plus the
   * `kubevirt.kubevirt.io/jsonpatch` annotation for what HCO lacks).
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
    this.delivery = props.delivery ?? 'kubevirt-cr';
    if (this.delivery === 'hco') {
      const form = () => hcoFormWithExisting(this.spec, props.existingJsonPatch ?? [], props.existingFeatureGates, props.hcoDisabledGates);
      this.apiObject = new HyperConvergedObject(this, 'Resource', () => form().kubevirtJsonPatch, {
        apiVersion: 'hco.kubevirt.io/v1beta1',
        kind: 'HyperConverged',
        metadata: { name: props.name, namespace: props.namespace },
        spec: Lazy.any({ produce: () => form().spec }),
      });
    } else {
      this.apiObject = new ApiObject(this, 'Resource', {
        apiVersion: 'kubevirt.io/v1',
        kind: 'KubeVirt',
        metadata: { name: props.name, namespace: props.namespace },
        spec: Lazy.any({ produce: () => dedupePatches(this.spec) }),
      });
    }
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
