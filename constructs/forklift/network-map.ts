import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { NetworkPair, ObjectRef } from '../../src/forklift/model';

/**
 * Properties for `ForkliftNetworkMap`.
 */
export interface ForkliftNetworkMapProps {
  /** NetworkMap name (one per ordered cluster pair). */
  readonly name: string;
  /** Its namespace (Forklift's namespace on the hub). */
  readonly namespace: string;
  /** The source cluster's Provider. */
  readonly source: ObjectRef;
  /** The destination cluster's Provider. */
  readonly destination: ObjectRef;
  /** Entries: the pod network first, then each VM network to its counterpart. */
  readonly networks: readonly NetworkPair[];
}

/** A Forklift `NetworkMap` for one ordered cluster pair. */
export class ForkliftNetworkMap extends Construct {
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: ForkliftNetworkMapProps) {
    super(scope, id);
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'forklift.konveyor.io/v1beta1',
      kind: 'NetworkMap',
      metadata: { name: props.name, namespace: props.namespace },
      spec: {
        provider: { source: { ...props.source }, destination: { ...props.destination } },
        map: props.networks.map((n) => ({ source: { ...n.source }, destination: { ...n.destination } })),
      },
    });
  }
}
