/**
 * The least privilege `migration-mesh pin-addresses` needs in each namespace a primary Layer2 VM network serves,
 * on every cluster (the same Role serves the source and the target side): read the VMs and their IPAMClaims, pin
 * the source VM's template (`patch`), and after the move delete the source VM and its claims (`delete`); `get` of
 * VirtualMachineInstances tells a halted VM from a running one. Nothing cluster-scoped, no Secrets, no create,
 * no update. Pure, no cdk8s import: constructs/vmnet/pin-addresses-role.ts emits it.
 */

/** The Role's name in each served namespace. */
export const PIN_ROLE_NAME = 'migration-mesh-pin-addresses';

/** One rule of a Role. */
export interface PinRoleRule {
  readonly apiGroups: readonly string[];
  readonly resources: readonly string[];
  readonly verbs: readonly string[];
}

/** The Role's rules (the CLI's only requests, verb for verb). */
export function pinAddressesRoleRules(): PinRoleRule[] {
  return [
    { apiGroups: ['kubevirt.io'], resources: ['virtualmachines'], verbs: ['get', 'list', 'patch', 'delete'] },
    { apiGroups: ['kubevirt.io'], resources: ['virtualmachineinstances'], verbs: ['get'] },
    { apiGroups: ['k8s.cni.cncf.io'], resources: ['ipamclaims'], verbs: ['get', 'list', 'delete'] },
  ];
}

/**
 * Who runs `migration-mesh pin-addresses` (a Layer2 network's `pinAddressesBy`): the fleet binds the Role to them
 * in each namespace the network serves, on every cluster that serves it.
 */
export interface PinSubject {
  readonly kind: 'User' | 'Group' | 'ServiceAccount';
  readonly name: string;
  /** The ServiceAccount's namespace (ServiceAccount only). */
  readonly namespace?: string;
}

/** A subject as a RoleBinding's `subjects[]` takes it (User and Group in the RBAC API group, a ServiceAccount in the core group). */
export function rbacSubject(s: PinSubject): { kind: string; name: string; apiGroup?: string; namespace?: string } {
  return s.kind === 'ServiceAccount' ? { kind: s.kind, name: s.name, namespace: s.namespace } : { apiGroup: 'rbac.authorization.k8s.io', kind: s.kind, name: s.name };
}

/**
 * The label `pin-addresses --after` puts on a halted source VM kept as the tombstone of an address of its
 * cluster's own slice: the cluster it moved to. `MovedVmGuard` keeps a VM with it Halted.
 */
export const MOVED_TO_LABEL = 'migrationmesh.dev/moved-to';

/** The ValidatingAdmissionPolicy (and its binding) of `MovedVmGuard`. */
export const MOVED_VM_GUARD_NAME = 'migration-mesh-moved-vm-halted';

/**
 * The CEL rule: an update of a VirtualMachine that carried `MOVED_TO_LABEL` must leave it Halted (runStrategy
 * Halted, `running` not true). `virtctl start` (virt-api's start subresource patches spec.runStrategy), a
 * GitOps sync or an edit are refused alike; status updates (a subresource) are not matched. Removing the label
 * while the VM stays Halted is allowed: the deliberate way to release the tombstone.
 */
export const MOVED_VM_GUARD_RULE = `!has(oldObject.metadata.labels) || !('${MOVED_TO_LABEL}' in oldObject.metadata.labels)`
  + ` || (has(object.spec.runStrategy) && object.spec.runStrategy == 'Halted' && !(has(object.spec.running) && object.spec.running))`;
