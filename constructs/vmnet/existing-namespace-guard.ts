import { vmPruneGuardAnnotations } from '../../src/vmnet/prune-guard';
import { managedByLabels } from '../../src/base/names';
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { SERVED_NAMESPACE_GUARD_NAME, servedNamespaceRule } from '../../src/vmnet/namespaces';

/**
 * Properties for `ExistingNamespaceGuard`.
 */
export interface ExistingNamespaceGuardProps {
  /** The cluster the guard is for: its name is in the refusal's words. */
  readonly cluster: string;
  /** Per primary network the cluster serves, its name and the namespaces it serves (`spec.vmNetworks[].namespaces`). */
  readonly networks: readonly { readonly name: string; readonly namespaces: readonly string[] }[];
}

/**
 * A ValidatingAdmissionPolicy (Kubernetes 1.30+) and its binding that refuse, for every applier (Argo CD, Flux,
 * kubectl), an UPDATE of a served Namespace of a primary VM network that adds `k8s.ovn.org/primary-user-defined-network`
 * while the old object lacks it: OVN-Kubernetes reads the label only at creation, so applying the fleet's
 * `PrimaryNetworkNamespace` over an existing unlabelled namespace would patch a label that changes nothing. The
 * refusal names the namespace, the problem and the fix (src/vmnet/namespaces.ts, the same words as
 * `migration-mesh status`). Creating a served namespace with the label, keeping or removing the label, and every
 * other namespace are left alone. The rollout places both before the Namespaces (docs/vm-networks.md).
 */
export class ExistingNamespaceGuard extends Construct {
  /** The ValidatingAdmissionPolicy `migration-mesh-served-namespace-label`, one validation per primary network. */
  public readonly policy: ApiObject;
  /** Its binding (Deny). */
  public readonly binding: ApiObject;

  constructor(scope: Construct, id: string, props: ExistingNamespaceGuardProps) {
    super(scope, id);
    const names = [...new Set(props.networks.flatMap((n) => n.namespaces))].sort();
    this.policy = new ApiObject(this, 'Policy', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: SERVED_NAMESPACE_GUARD_NAME, labels: managedByLabels(), annotations: vmPruneGuardAnnotations() },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['UPDATE'], resources: ['namespaces'], resourceNames: names }] },
        validations: props.networks.map((n) => ({ ...servedNamespaceRule(props.cluster, n.name, n.namespaces), reason: 'Forbidden' })),
      },
    });
    this.binding = new ApiObject(this, 'Binding', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: SERVED_NAMESPACE_GUARD_NAME, labels: managedByLabels(), annotations: vmPruneGuardAnnotations() },
      spec: { policyName: SERVED_NAMESPACE_GUARD_NAME, validationActions: ['Deny'] },
    });
  }
}
