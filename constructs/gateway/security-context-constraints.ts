import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';

/** Name of the SCC (cluster-scoped) the gateway pods are admitted by on OpenShift. */
const GATEWAY_SCC_NAME = 'migration-mesh-gateway';

/**
 * The capabilities a gateway pod adds, all of them: NET_ADMIN for the rule-setup init container;
 * NET_ADMIN, NET_RAW, SETUID, SETGID for the keepalived failover sidecar. The runtime adds none.
 */
const GATEWAY_POD_CAPABILITIES = ['NET_ADMIN', 'NET_RAW', 'SETGID', 'SETUID'] as const;

/**
 * Properties for `GatewaySecurityContextConstraints`.
 */
export interface GatewaySecurityContextConstraintsProps {
  /** Namespace of the gateway (the Role and RoleBinding go there). */
  readonly namespace: string;
  /** ServiceAccount of the gateway pods: the only subject allowed to use the SCC. */
  readonly serviceAccountName: string;
  /**
   * The gateway pods' non-root uid/gid (runtime container, fsGroup).
   */
  readonly runAsId: number;
  /**
   * Name of the SCC.
   *
   * @default migration-mesh-gateway
   */
  readonly name?: string;
  /**
   * The capabilities the pods add, all of them (every other one is dropped). A trust agent's pods add none.
   *
   * @default ['NET_ADMIN', 'NET_RAW', 'SETGID', 'SETUID'] (the gateway pod's)
   */
  readonly allowedCapabilities?: readonly string[];
  /**
   * Labels for the three objects.
   *
   * @default - none
   */
  readonly labels?: Record<string, string>;
}

/**
 * What OpenShift needs to admit the gateway pods: OpenShift's `restricted-v2` SCC refuses added
 * capabilities beyond NET_BIND_SERVICE and uid 0, so without this the ReplicaSet never creates a pod.
 *
 * Least privilege, as `restricted-v2` plus exactly what the pod asks for: the four capabilities above
 * (everything else dropped), uids as the pod sets them (the init and sidecar containers run as uid 0
 * without privilege escalation, the runtime as `runAsId`), fsGroup pinned to `runAsId`, the
 * namespace's SELinux level, the RuntimeDefault seccomp profile only, read-only root filesystems,
 * `emptyDir` and `projected` volumes only, no host namespaces, ports or paths, never privileged.
 * No `users`/`groups` in the SCC: a namespaced Role grants `use` on this SCC alone (resourceNames) to
 * the gateway ServiceAccount alone, so no other pod of the cluster can pick it.
 */
export class GatewaySecurityContextConstraints extends Construct {
  public readonly name: string;
  public readonly scc: ApiObject;
  public readonly role: ApiObject;
  public readonly roleBinding: ApiObject;

  constructor(scope: Construct, id: string, props: GatewaySecurityContextConstraintsProps) {
    super(scope, id);
    this.name = props.name ?? GATEWAY_SCC_NAME;
    const labels = props.labels ?? {};
    // SCC fields sit at the top level of the object (no spec); every field the CRD requires is set
    this.scc = new ApiObject(this, 'Scc', {
      apiVersion: 'security.openshift.io/v1',
      kind: 'SecurityContextConstraints',
      metadata: { name: this.name, labels },
      allowHostDirVolumePlugin: false,
      allowHostIPC: false,
      allowHostNetwork: false,
      allowHostPID: false,
      allowHostPorts: false,
      allowPrivilegeEscalation: false,
      allowPrivilegedContainer: false,
      allowedCapabilities: [...(props.allowedCapabilities ?? GATEWAY_POD_CAPABILITIES)],
      defaultAddCapabilities: [],
      requiredDropCapabilities: ['ALL'],
      fsGroup: { type: 'MustRunAs', ranges: [{ min: props.runAsId, max: props.runAsId }] },
      priority: 0, // as unset; admission tries restricted-v2 first (more restrictive), which refuses the pod, then this one
      readOnlyRootFilesystem: true,
      runAsUser: { type: 'RunAsAny' },
      seLinuxContext: { type: 'MustRunAs' },
      seccompProfiles: ['runtime/default'],
      supplementalGroups: { type: 'RunAsAny' },
      users: [],
      groups: [],
      volumes: ['emptyDir', 'projected'],
    });
    this.role = new ApiObject(this, 'Role', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: `${this.name}-scc`, namespace: props.namespace, labels },
      rules: [{ apiGroups: ['security.openshift.io'], resources: ['securitycontextconstraints'], resourceNames: [this.name], verbs: ['use'] }],
    });
    this.roleBinding = new ApiObject(this, 'RoleBinding', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${this.name}-scc`, namespace: props.namespace, labels },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: `${this.name}-scc` },
      subjects: [{ kind: 'ServiceAccount', name: props.serviceAccountName, namespace: props.namespace }],
    });
  }
}
