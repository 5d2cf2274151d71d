import { ApiObject, Size } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { GATEWAY_CONFIG_FILE, GATEWAY_CONFIG_MOUNT } from '../../src/gateway/config';
import { projectedVolume } from '../base/projected-volume';
import { refuseImage } from '../../src/base/image-reference';

/** What the trust container joins: one pod (a gateway replica, or a trust agent replica) with the runtime and its config volume. */
export interface TrustPod {
  /** The network-facing runtime container (it gets the shared socket directory). */
  readonly container: kplus.Container;
  /** The volume with `config.json` alone (no TLS file), mounted read-only into the trust container. */
  readonly configVolume: kplus.Volume;
  /** Add a container to the pod. */
  addSidecar(container: kplus.ContainerProps): kplus.Container;
}

/** Where the runtime and the trust container meet (an emptyDir both mount). */
const TRUST_RUN_DIR = '/run/migration-mesh';
/** Where client-node's in-cluster config looks for the token, CA and namespace. */
const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
/** The two ConfigMaps virt-operator owns (../shared/reference/kubevirt-ca-trust.md section 1.1). */
const KUBEVIRT_CA_CONFIGMAP = 'kubevirt-ca';
const KUBEVIRT_EXTERNAL_CA_CONFIGMAP = 'kubevirt-external-ca';

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
  /**
   * Name of the Role and RoleBinding.
   *
   * @default migration-mesh-gateway-trust
   */
  readonly name?: string;
  /** Image of the trust container (the gateway image: `migration-mesh-proxy trust`). */
  readonly image: string;
  /**
   * Image pull policy of the trust container.
   *
   * @default IfNotPresent
   */
  readonly imagePullPolicy?: kplus.ImagePullPolicy;
}

/**
 * What the gateway's trust container may do, and the pieces of the pod that give it (and only it) a
 * token. The Role in the KubeVirt namespace is limited by `resourceNames` to reading `kubevirt-ca`
 * (get, list, watch: list and watch work with resourceNames only through
 * `fieldSelector=metadata.name=kubevirt-ca`, which the trust container uses) and to reading and
 * updating `kubevirt-external-ca` (a PUT of the whole object read, labels and foreign entries kept: no
 * patch, create or delete). The pod keeps `automountServiceAccountToken: false`: the token is a
 * projected volume mounted into the trust container alone, so the network-facing runtime holds no
 * Kubernetes credentials. The two containers talk over a unix socket in a shared in-memory emptyDir.
 * Role and RoleBinding are plain `ApiObject`s: cdk8s-plus-28's Role takes resources, not resource names
 * of objects in another chart's namespace.
 */
export class GatewayTrust extends Construct {
  public readonly role: ApiObject;
  public readonly roleBinding: ApiObject;
  /** The trust container of each replica, in replica order (after `attach`). */
  public readonly containers: kplus.Container[] = [];

  constructor(scope: Construct, id: string, private readonly props: GatewayTrustProps) {
    super(scope, id);
    refuseImage(props.image);
    const name = props.name ?? 'migration-mesh-gateway-trust';
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
  }

  /** Add the trust container, its token and the shared socket directory to one replica's pods. */
  public attach(replica: TrustPod, index: number): kplus.Container {
    const run = kplus.Volume.fromEmptyDir(this, `Run${index}`, 'trust-run', { medium: kplus.EmptyDirMedium.MEMORY, sizeLimit: Size.mebibytes(1) });
    const token = projectedVolume(this, `Token${index}`, 'trust-token', {
      defaultMode: 0o440,
      sources: [
        { serviceAccountToken: { path: 'token', expirationSeconds: this.props.tokenExpirationSeconds ?? 3600 } },
        { configMap: { name: 'kube-root-ca.crt', items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
        // cdk8s's typed serializer spells it downwardApi (emitted as downwardAPI); downwardAPI here would be dropped
        { downwardApi: { items: [{ path: 'namespace', fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
      ],
    });
    replica.container.mount(TRUST_RUN_DIR, run);
    const c = replica.addSidecar({
      name: 'trust',
      image: this.props.image,
      imagePullPolicy: this.props.imagePullPolicy ?? kplus.ImagePullPolicy.IF_NOT_PRESENT,
      command: ['migration-mesh-proxy'],
      args: ['trust', '--config', `${GATEWAY_CONFIG_MOUNT}/${GATEWAY_CONFIG_FILE}`, '--namespace', this.props.kubevirtNamespace],
      securityContext: {
        ensureNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false,
        capabilities: { drop: [kplus.Capability.ALL] },
      },
      // client-node loads every generated API model at start: about 100 MB resident (measured by test/gateway-image.image.test.ts)
      resources: { cpu: { request: kplus.Cpu.millis(10) }, memory: { request: Size.mebibytes(112), limit: Size.mebibytes(192) } },
      volumeMounts: [
        { path: GATEWAY_CONFIG_MOUNT, volume: replica.configVolume, readOnly: true },
        { path: TRUST_RUN_DIR, volume: run },
        { path: SERVICE_ACCOUNT_DIR, volume: token, readOnly: true },
      ],
    });
    this.containers.push(c);
    return c;
  }
}
