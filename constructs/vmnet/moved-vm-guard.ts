import { vmPruneGuardAnnotations } from '../../src/vmnet/prune-guard';
import { managedByLabels } from '../../src/base/names';
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { MOVED_TO_LABEL, MOVED_VM_GUARD_NAME, MOVED_VM_GUARD_RULE } from '../../src/vmnet/pin-role';

/**
 * Properties for `MovedVmGuard`.
 */
export interface MovedVmGuardProps {
  /** The namespaces the primary Layer2 VM networks serve (`spec.vmNetworks[].namespaces`): the binding matches only these. */
  readonly namespaces: readonly string[];
}

/**
 * A ValidatingAdmissionPolicy (Kubernetes 1.30+) and its binding that keep a moved VM's tombstone halted: a
 * VirtualMachine labelled `migrationmesh.dev/moved-to` (by `migration-mesh pin-addresses --after`, for an address
 * of its cluster's own slice) cannot be updated to anything but Halted, so starting it cannot bring back the
 * address the moved VM holds on the other cluster. Removing the label (with the VM still Halted) releases it.
 * docs/vm-networks.md.
 */
export class MovedVmGuard extends Construct {
  /** The ValidatingAdmissionPolicy `migration-mesh-moved-vm-halted`. */
  public readonly policy: ApiObject;
  /** Its binding (Deny), limited to the served namespaces. */
  public readonly binding: ApiObject;

  constructor(scope: Construct, id: string, props: MovedVmGuardProps) {
    super(scope, id);
    this.policy = new ApiObject(this, 'Policy', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name: MOVED_VM_GUARD_NAME, labels: managedByLabels(), annotations: vmPruneGuardAnnotations() },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: { resourceRules: [{ apiGroups: ['kubevirt.io'], apiVersions: ['*'], operations: ['UPDATE'], resources: ['virtualmachines'] }] },
        validations: [{
          expression: MOVED_VM_GUARD_RULE,
          messageExpression: `'VirtualMachine ' + object.metadata.namespace + '/' + object.metadata.name + ' moved to ' + oldObject.metadata.labels['${MOVED_TO_LABEL}']`
            + ` + ' and stays Halted here: its IPAMClaim keeps the address the moved VM holds there; remove the label ${MOVED_TO_LABEL} first to release it'`,
          reason: 'Forbidden',
        }],
      },
    });
    this.binding = new ApiObject(this, 'Binding', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name: MOVED_VM_GUARD_NAME, labels: managedByLabels(), annotations: vmPruneGuardAnnotations() },
      spec: {
        policyName: MOVED_VM_GUARD_NAME,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: [...new Set(props.namespaces)].sort() }] } },
      },
    });
  }
}
