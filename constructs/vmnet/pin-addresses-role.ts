import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { PIN_ROLE_NAME, pinAddressesRoleRules } from '../../src/vmnet/pin-role';

/**
 * Properties for `PinAddressesRole`.
 */
export interface PinAddressesRoleProps {
  /**
   * The namespaces the primary Layer2 VM networks serve (`spec.vmNetworks[].namespaces`): one Role in each.
   * Required: the Role grants nothing anywhere else.
   */
  readonly namespaces: readonly string[];
}

/**
 * The Role `migration-mesh-pin-addresses` in each served namespace: what `migration-mesh pin-addresses` needs on
 * a cluster and nothing more (get/list/patch/delete VirtualMachines, get VirtualMachineInstances, get/list/delete
 * IPAMClaims). A Role, not a ClusterRole, so no binding can widen it beyond the namespace. Bind it to the identity
 * of your kubeconfig context with a RoleBinding of your own in each namespace, on every cluster;
 * docs/vm-networks.md.
 */
export class PinAddressesRole extends Construct {
  /** The Roles, one per namespace, in the order given. */
  public readonly roles: ApiObject[];

  constructor(scope: Construct, id: string, props: PinAddressesRoleProps) {
    super(scope, id);
    this.roles = [...new Set(props.namespaces)].map((namespace) => new ApiObject(this, `Role-${namespace}`, {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: PIN_ROLE_NAME, namespace },
      rules: pinAddressesRoleRules().map((r) => ({ apiGroups: [...r.apiGroups], resources: [...r.resources], verbs: [...r.verbs] })),
    }));
  }
}
