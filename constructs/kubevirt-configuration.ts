import { ApiObject, ApiObjectProps, Lazy } from 'cdk8s';
import { Construct } from 'constructs';
import { ConfigDelivery } from '../src/fleet-schema';
import { HCO_JSONPATCH_ANNOTATION, JsonObject, hcoFormOf, mergeSpec } from '../src/kubevirt-config';

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
      this.apiObject = new HyperConvergedObject(this, 'Resource', () => this.spec, {
        apiVersion: 'hco.kubevirt.io/v1beta1',
        kind: 'HyperConverged',
        metadata: { name: props.name, namespace: props.namespace },
        spec: Lazy.any({ produce: () => hcoFormOf(this.spec).spec }),
      });
    } else {
      this.apiObject = new ApiObject(this, 'Resource', {
        apiVersion: 'kubevirt.io/v1',
        kind: 'KubeVirt',
        metadata: { name: props.name, namespace: props.namespace },
        spec: Lazy.any({ produce: () => this.spec }),
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
  constructor(scope: Construct, id: string, private readonly kubevirtSpec: () => JsonObject, props: ApiObjectProps) {
    super(scope, id, props);
  }

  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- overrides cdk8s ApiObject.toJson(), typed any upstream
  public toJson(): any {
    const json = super.toJson();
    const ops = hcoFormOf(this.kubevirtSpec()).kubevirtJsonPatch;
    if (ops.length) json.metadata.annotations = { ...json.metadata.annotations, [HCO_JSONPATCH_ANNOTATION]: JSON.stringify(ops) };
    return json;
  }
}
