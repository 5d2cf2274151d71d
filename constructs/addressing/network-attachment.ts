import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { Attachment } from '../../src/fleet/schema';
import { cniConfigJson, CniConfig } from '../../src/addressing/cni';
import { managedByLabels } from '../../src/base/names';

/**
 * Properties for `NetworkAttachment`.
 */
export interface NetworkAttachmentProps {
  /** NAD name (a DNS-1123 label; Multus refuses others). */
  readonly name: string;
  /** Namespace the NAD lives in: the namespace of the pods that select it. */
  readonly namespace: string;
  /** The CNI main plugin (macvlan, bridge, ipvlan, host-device) and its keys. */
  readonly attachment: Attachment;
  /** The CNI `ipam` section (whereabouts or static). */
  readonly ipam: CniConfig;
  /**
   * Accept per-pod addresses from the Multus selection element (`ips`), for static IPAM.
   *
   * @default false
   */
  readonly ipsCapability?: boolean;
  /**
   * Extra labels on the NAD.
   *
   * @default - the Migration Mesh labels only
   */
  readonly labels?: Record<string, string>;
}

/**
 * One Multus `NetworkAttachmentDefinition` (k8s.cni.cncf.io/v1) whose `spec.config` is built from a
 * fleet attachment and a planned IPAM section.
 */
export class NetworkAttachment extends Construct {
  /** The NAD name, as pods and KubeVirt reference it. */
  public readonly name: string;
  public readonly namespace: string;
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: NetworkAttachmentProps) {
    super(scope, id);
    this.name = props.name;
    this.namespace = props.namespace;
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: {
        name: props.name,
        namespace: props.namespace,
        labels: { ...managedByLabels(), ...props.labels },
      },
      spec: { config: cniConfigJson(props.name, props.attachment, props.ipam, { ipsCapability: props.ipsCapability }) },
    });
  }
}
