import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';

/**
 * Properties for `ForkliftProvider`.
 */
export interface ForkliftProviderProps {
  /** Provider name (the cluster's fleet name). */
  readonly name: string;
  /** Namespace Forklift runs in on the hub. */
  readonly namespace: string;
  /** API server URL of the cluster. */
  readonly url: string;
  /** Secret (in `namespace`) with `token`, `ca.crt`, `insecureSkipVerify`; created by the user. */
  readonly secret: string;
  /**
   * Provider type.
   *
   * @default openshift (Forklift's type for a Kubernetes cluster running KubeVirt)
   */
  readonly type?: string;
}

/**
 * A Forklift `Provider` (forklift.konveyor.io/v1beta1) for one cluster: the API URL and the Secret by
 * name; never a token. The hub's own `host` provider is created by the Forklift operator, not here.
 */
export class ForkliftProvider extends Construct {
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: ForkliftProviderProps) {
    super(scope, id);
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'forklift.konveyor.io/v1beta1',
      kind: 'Provider',
      metadata: { name: props.name, namespace: props.namespace },
      spec: {
        type: props.type ?? 'openshift',
        url: props.url,
        secret: { name: props.secret, namespace: props.namespace },
      },
    });
  }
}
