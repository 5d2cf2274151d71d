import { managedByLabels } from '../../src/base/names';
import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { PIN_ROLE_NAME, PinSubject, pinAddressesRoleRules, rbacSubject } from '../../src/vmnet/pin-role';

/**
 * Properties for `PinAddressesRole`.
 */
export interface PinAddressesRoleProps {
  /**
   * The namespaces the primary Layer2 VM networks serve (`spec.vmNetworks[].namespaces`): one Role in each.
   * Required: the Role grants nothing anywhere else.
   */
  readonly namespaces: readonly string[];
  /**
   * Who runs `migration-mesh pin-addresses`, per namespace: a RoleBinding `migration-mesh-pin-addresses` to the Role
   * with these subjects in each namespace listed here with at least one (a namespace not in `namespaces` is ignored).
   * @default - none: every Role unbound; bind it to the identity of your kubeconfig context yourself
   */
  readonly bindings?: Readonly<Record<string, readonly PinSubject[]>>;
}

/**
 * The Role `migration-mesh-pin-addresses` in each served namespace: what `migration-mesh pin-addresses` needs on
 * a cluster and nothing more (get/list/patch/delete VirtualMachines, get VirtualMachineInstances, get/list/delete
 * IPAMClaims). A Role, not a ClusterRole, so no binding can widen it beyond the namespace. Bound where `bindings`
 * names subjects; otherwise bind it to the identity of your kubeconfig context with a RoleBinding of your own in
 * each namespace, on every cluster; docs/vm-networks.md.
 */
export class PinAddressesRole extends Construct {
  /** The Roles, one per namespace, in the order given. */
  public readonly roles: ApiObject[];
  /** The RoleBindings, one per namespace with subjects in `bindings`, in the order of `namespaces`. */
  public readonly bindings: ApiObject[];

  constructor(scope: Construct, id: string, props: PinAddressesRoleProps) {
    super(scope, id);
    this.roles = [...new Set(props.namespaces)].map((namespace) => new ApiObject(this, `Role-${namespace}`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: PIN_ROLE_NAME, namespace, labels: managedByLabels() },
      rules: pinAddressesRoleRules().map((r) => ({ apiGroups: [...r.apiGroups], resources: [...r.resources], verbs: [...r.verbs] })),
    }));
    this.bindings = [...new Set(props.namespaces)].filter((ns) => (props.bindings?.[ns] ?? []).length > 0).map((namespace) => new ApiObject(this, `RoleBinding-${namespace}`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: PIN_ROLE_NAME, namespace, labels: managedByLabels() },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: PIN_ROLE_NAME },
      subjects: uniqueSubjects(props.bindings![namespace]).map(rbacSubject),
    }));
  }
}

/** The subjects once each (kind, namespace and name), in the order given. */
function uniqueSubjects(subjects: readonly PinSubject[]): PinSubject[] {
  const seen = new Set<string>();
  return subjects.filter((x) => {
    const key = JSON.stringify([x.kind, x.namespace ?? '', x.name]);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
