import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';

/**
 * Properties for `ForkliftMigration`.
 */
export interface ForkliftMigrationProps {
  /** Migration name (`<plan>-run-<n>`): a new name is a new run. */
  readonly name: string;
  /** Namespace of the Migration and of its Plan (Forklift's namespace on the hub). */
  readonly namespace: string;
  /** The Plan it runs. */
  readonly plan: string;
}

/** A Forklift `Migration`: creating it starts one run of its Plan (the go button). */
export class ForkliftMigration extends Construct {
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: ForkliftMigrationProps) {
    super(scope, id);
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'forklift.konveyor.io/v1beta1',
      kind: 'Migration',
      metadata: { name: props.name, namespace: props.namespace },
      spec: { plan: { name: props.plan, namespace: props.namespace } },
    });
  }
}
