import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { ObjectRef, StoragePair } from '../../src/forklift/model';

/**
 * Properties for `ForkliftStorageMap`.
 */
export interface ForkliftStorageMapProps {
  /** StorageMap name (one per ordered cluster pair). */
  readonly name: string;
  /** Its namespace (Forklift's namespace on the hub). */
  readonly namespace: string;
  /** The source cluster's Provider. */
  readonly source: ObjectRef;
  /** The destination cluster's Provider. */
  readonly destination: ObjectRef;
  /** Source storage class to destination storage class (access and volume mode optional). */
  readonly storage: readonly StoragePair[];
}

/** A Forklift `StorageMap` for one ordered cluster pair: the source is the storage class name. */
export class ForkliftStorageMap extends Construct {
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: ForkliftStorageMapProps) {
    super(scope, id);
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'forklift.konveyor.io/v1beta1',
      kind: 'StorageMap',
      metadata: { name: props.name, namespace: props.namespace },
      spec: {
        provider: { source: { ...props.source }, destination: { ...props.destination } },
        map: props.storage.map((s) => ({
          source: { name: s.source },
          destination: {
            storageClass: s.storageClass,
            ...(s.accessMode ? { accessMode: s.accessMode } : {}),
            ...(s.volumeMode ? { volumeMode: s.volumeMode } : {}),
          },
        })),
      },
    });
  }
}
