import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';

/**
 * Properties for `ForkliftControllerSetting`.
 */
export interface ForkliftControllerSettingProps {
  /** Name of the existing ForkliftController. */
  readonly name: string;
  /** Its namespace: where Forklift runs on the hub (`spec.forklift.namespace`). */
  readonly namespace: string;
  /** `feature_ocp_live_migration`: without it Forklift runs a live Plan as a cold one. */
  readonly liveMigration: boolean;
}

/**
 * A partial `ForkliftController` (for server-side apply) setting only `feature_ocp_live_migration`,
 * a string in the CRD ("true"/"false"). The operator owns the rest of the object.
 */
export class ForkliftControllerSetting extends Construct {
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: ForkliftControllerSettingProps) {
    super(scope, id);
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'forklift.konveyor.io/v1beta1',
      kind: 'ForkliftController',
      metadata: { name: props.name, namespace: props.namespace },
      spec: { feature_ocp_live_migration: props.liveMigration ? 'true' : 'false' },
    });
  }
}
