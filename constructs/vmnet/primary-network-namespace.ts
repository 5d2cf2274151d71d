import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { managedByLabels } from '../../src/base/names';
import { PRIMARY_UDN_NAMESPACE_LABEL } from '../../src/vmnet/resolved';

/**
 * Properties for `PrimaryNetworkNamespace`.
 */
export interface PrimaryNetworkNamespaceProps {
  /** The namespace's name. */
  readonly name: string;
  /**
   * Extra labels.
   *
   * @default - the primary-network label and the Migration Mesh labels only
   */
  readonly labels?: Record<string, string>;
}

/**
 * A `Namespace` served by a primary user-defined network, created with `k8s.ovn.org/primary-user-defined-network`.
 *
 * Apply it only where the namespace does not exist yet: on a namespace that already exists without the label, an
 * apply would add the label and change nothing (OVN-Kubernetes reads it at creation only), so its VMs would stay
 * on the default network while the fleet says otherwise. Such a namespace must be refused before anything is
 * written, never patched; the way out is to create the namespace anew, with every VM moved off it. In a fleet,
 * `ExistingNamespaceGuard` (applied before it) makes the cluster refuse that apply, and `migration-mesh status`
 * reports such a namespace (`vmnet-namespace-label`); docs/vm-networks.md.
 */
export class PrimaryNetworkNamespace extends Construct {
  public readonly name: string;
  /** L1: a plain core/v1 Namespace. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: PrimaryNetworkNamespaceProps) {
    super(scope, id);
    this.name = props.name;
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: props.name, labels: { ...props.labels, ...managedByLabels(), [PRIMARY_UDN_NAMESPACE_LABEL]: '' } },
    });
  }
}
