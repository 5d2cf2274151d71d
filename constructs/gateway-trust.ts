import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';

/** Where the runtime and the trust container meet (an emptyDir both mount). */
export const TRUST_RUN_DIR = '/run/migration-mesh';
export const TRUST_SOCKET = `${TRUST_RUN_DIR}/trust.sock`;
/** Where client-node's in-cluster config looks for the token, CA and namespace. */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The two ConfigMaps virt-operator owns (../shared/reference/kubevirt-ca-trust.md section 1.1). */
export const KUBEVIRT_CA_CONFIGMAP = 'kubevirt-ca';
export const KUBEVIRT_EXTERNAL_CA_CONFIGMAP = 'kubevirt-external-ca';

/**
 * Properties for `GatewayTrust`.
 */
export interface GatewayTrustProps {
  /** Namespace of the gateway (its ServiceAccount lives there). */
  readonly namespace: string;
  /** The gateway's ServiceAccount, the subject of the RoleBinding. */
  readonly serviceAccountName: string;
  /** Namespace KubeVirt is installed in (the Role and RoleBinding go there). */
  readonly kubevirtNamespace: string;
  /**
   * Lifetime of the projected service-account token (the kubelet renews it before it ends).
   *
   * @default 3600
   */
  readonly tokenExpirationSeconds?: number;
  /**
   * Labels for the Role and RoleBinding.
   *
   * @default - none
   */
  readonly labels?: Record<string, string>;
}

/**
 * What the gateway's trust container may do, and the pieces of the pod that give it (and only it) a
 * token. The Role in the KubeVirt namespace is limited by `resourceNames` to reading `kubevirt-ca`
 * (get, list, watch: list and watch work with resourceNames only through
 * `fieldSelector=metadata.name=kubevirt-ca`, which the trust container uses) and to reading and
 * updating `kubevirt-external-ca`. The pod keeps `automountServiceAccountToken: false`: the token is a
 * projected volume mounted into the trust container alone, so the network-facing runtime holds no
 * Kubernetes credentials. The two containers talk over a unix socket in a shared in-memory emptyDir.
 */
export class GatewayTrust extends Construct {
  public readonly role: ApiObject;
  public readonly roleBinding: ApiObject;
  /** Pod volumes: the projected token (trust container only) and the socket directory (both). */
  public readonly volumes: Record<string, unknown>[];
  /** The runtime's mount of the socket directory. */
  public readonly runtimeMount: Record<string, unknown>;
  private readonly kubevirtNamespace: string;

  constructor(scope: Construct, id: string, props: GatewayTrustProps) {
    super(scope, id);
    this.kubevirtNamespace = props.kubevirtNamespace;
    const name = 'migration-mesh-gateway-trust';
    const metadata = { name, namespace: props.kubevirtNamespace, ...(props.labels ? { labels: props.labels } : {}) };
    this.role = new ApiObject(this, 'Role', {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata,
      rules: [
        { apiGroups: [''], resources: ['configmaps'], resourceNames: [KUBEVIRT_CA_CONFIGMAP], verbs: ['get', 'list', 'watch'] },
        { apiGroups: [''], resources: ['configmaps'], resourceNames: [KUBEVIRT_EXTERNAL_CA_CONFIGMAP], verbs: ['get', 'update'] },
      ],
    });
    this.roleBinding = new ApiObject(this, 'RoleBinding', {
      apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding', metadata,
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
      subjects: [{ kind: 'ServiceAccount', name: props.serviceAccountName, namespace: props.namespace }],
    });
    this.volumes = [
      {
        name: 'trust-token',
        projected: {
          defaultMode: 0o440,
          sources: [
            { serviceAccountToken: { path: 'token', expirationSeconds: props.tokenExpirationSeconds ?? 3600 } },
            { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
            { downwardAPI: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
          ],
        },
      },
      { name: 'trust-run', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
    ];
    this.runtimeMount = { name: 'trust-run', mountPath: TRUST_RUN_DIR };
  }

  /** The trust container: same image as the runtime, non-root, no capabilities, the token mounted here only. */
  public container(image: string, configPath: string, configMount: Record<string, unknown>, imagePullPolicy = 'IfNotPresent'): Record<string, unknown> {
    return {
      name: 'trust',
      image,
      imagePullPolicy,
      command: ['migration-mesh-proxy'],
      args: ['trust', '--config', configPath, '--namespace', this.kubevirtNamespace],
      securityContext: {
        runAsNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false, capabilities: { drop: ['ALL'] },
      },
      resources: { requests: { cpu: '10m', memory: '48Mi' }, limits: { memory: '128Mi' } },
      volumeMounts: [configMount, { name: 'trust-run', mountPath: TRUST_RUN_DIR }, { name: 'trust-token', mountPath: SERVICE_ACCOUNT_DIR, readOnly: true }],
    };
  }
}
