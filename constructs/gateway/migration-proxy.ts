import { ApiObject } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { staticIpam } from '../../src/addressing/cni';
import { GATEWAY_CONFIG_FILE, formatGatewayConfig, gatewayConfigFor } from '../../src/gateway/config';
import { GATEWAY_KEEPALIVED_FILE, keepalivedConfigFor } from '../../src/gateway/failover';
import { DEFAULT_GATEWAY_INTERFACES, gatewayInClusterNadName, gatewayRestartHash, gatewaySetLabels } from '../../src/gateway/pod';
import { APP_NAME_LABEL, GATEWAY_NAME, NETWORK_LABEL, managedByLabels } from '../../src/base/names';
import { ClusterPlan, FleetPlan } from '../../src/addressing/planner';
import { GATEWAY_RUN_AS, GatewayDeployment } from './deployment';
import { GatewaySecurityContextConstraints } from './security-context-constraints';
import { GatewayAlerts } from './alerts';
import { GATEWAY_METRICS_SERVICE_NAME, GatewayMetrics } from './metrics';
import { GatewayPodOptions } from './pod-options';
import { GatewayCrossClusterPolicy } from './policy';
import { GatewayTls } from './tls';
import { GatewayTrust } from './trust';
import { NetworkAttachment } from '../addressing/network-attachment';
import { crossClusterNad, crossClusterPolicyFor, replicaSetDisruptionBudget } from './replica-parts';

/** Namespace the gateways run in. */
export const DEFAULT_GATEWAY_NAMESPACE = 'migration-mesh';

/**
 * Properties for `MigrationProxy`. The `GatewayPodOptions` fields (pod labels and annotations, resources,
 * image pull policy and secrets, priority class, tolerations) apply to every replica; they are sugar for
 * the `add...`/`set...` methods.
 */
export interface MigrationProxyProps extends GatewayPodOptions {
  /** The fleet plan (fleet-wide gateway settings, cross-cluster network). */
  readonly plan: FleetPlan;
  /** This cluster's plan: gateway replicas with their planned addresses, and the peer table. */
  readonly cluster: ClusterPlan;
  /**
   * Namespace for the gateway objects (created by this construct).
   *
   * @default migration-mesh
   */
  readonly namespace?: string;
  /**
   * Interface names of the two attachments inside the gateway pods (at most 15 characters, not `eth0`). The
   * intercept listener and every REDIRECT rule are bound to `inCluster`, the tunnel listener to `crossCluster`.
   *
   * @default {inCluster: 'mig0', crossCluster: 'xc0'}
   */
  readonly interfaces?: { readonly inCluster: string; readonly crossCluster: string };
  /**
   * Lifetime and renewal of the cert-manager Certificate (issuer TLS source only), Go durations.
   *
   * @default {duration: '2160h', renewBefore: '720h'}
   */
  readonly certificate?: { readonly duration?: string; readonly renewBefore?: string };
  /**
   * Emit the MultiNetworkPolicy for the cross-cluster attachment.
   *
   * @default - the cluster's `multiNetworkPolicy` flag from the fleet
   */
  readonly multiNetworkPolicy?: boolean;
  /**
   * Emit the OpenShift SCC and its Role/RoleBinding for the gateway ServiceAccount.
   *
   * @default - the cluster's `openshift` flag from the fleet (true for hco delivery)
   */
  readonly openshift?: boolean;
}

/** Name of the ConfigMap holding the runtime config (`config.json`). */
export const GATEWAY_CONFIGMAP_NAME = 'migration-mesh-gateway';

/**
 * The cluster's migration gateway, everything it needs to run:
 * - the Namespace (PSA `privileged`: the rule-setup init container adds NET_ADMIN);
 * - the two NADs its replicas attach (the shared cross-cluster network and the in-cluster migration
 *   network, both static IPAM with per-pod `ips`, so one NAD serves every replica);
 * - the peer-table ConfigMap written through the runtime's own config schema (one per cluster: the
 *   runtime binds the wildcard on each network's own interface, so every replica reads the same file, and lists
 *   every replica's addresses as its own);
 * - one Deployment per replica (`GatewayDeployment`), a ServiceAccount, a PodDisruptionBudget;
 * - cdk8s-plus-28 constructs for the Namespace, ConfigMap, ServiceAccount, Deployments and Service (typed
 *   handles below, `add...` methods for every replica); cdk8s `ApiObject`s where cdk8s-plus-28 has no
 *   construct (PodDisruptionBudget, NADs, Certificate, ServiceMonitor, MultiNetworkPolicy);
 * - the mTLS material (`GatewayTls`: cert-manager Certificate, an existing Secret, or none);
 * - the metrics Service and optional ServiceMonitor (`GatewayMetrics`);
 * - a MultiNetworkPolicy on the cross-cluster attachment when the cluster runs the controller.
 *
 * Reload vs restart: the runtime watches its mounted config directory and reloads the peer table and
 * rotated certificates in place, so no hash of the peer table is put on the pod template (that would
 * restart every gateway, cutting migrations in flight, whenever a cluster joins). Only the fields the
 * runtime refuses to reload (fleet, cluster, listen endpoints, tls mode) are hashed into the
 * `migrationmesh.dev/restart-hash` pod annotation.
 */
export class MigrationProxy extends Construct {
  /** Name of the gateway namespace. */
  public readonly namespace: string;
  /** The gateway Namespace (cdk8s-plus-28). */
  public readonly namespaceObject: kplus.Namespace;
  /** The cross-cluster NAD (L1: cdk8s-plus-28 has no NetworkAttachmentDefinition). */
  public readonly crossClusterNad: NetworkAttachment;
  /** The in-cluster NAD of the gateways (L1). */
  public readonly inClusterNad: NetworkAttachment;
  /** The ConfigMap holding `config.json` (and `keepalived.conf`); reloaded in place, so not immutable. */
  public readonly configMap: kplus.ConfigMap;
  /** The gateway runtime configuration (validated by the runtime's schema). */
  public readonly config: ReturnType<typeof gatewayConfigFor>;
  /** keepalived.conf of the failover sidecars; undefined when the cluster has no gateway VIP. */
  public readonly keepalivedConfig?: string;
  /** The pods' ServiceAccount (no token mounted: the network-facing process holds no API credentials). */
  public readonly serviceAccount: kplus.ServiceAccount;
  /** One per replica, in replica order. */
  public readonly deployments: GatewayDeployment[];
  /** L1: cdk8s-plus-28 has no PodDisruptionBudget construct. */
  public readonly podDisruptionBudget: ApiObject;
  /** The mTLS material (cert-manager Certificate, a user Secret, or none). */
  public readonly tls: GatewayTls;
  /** The metrics Service (`metrics.service`, cdk8s-plus-28) and optional ServiceMonitor. */
  public readonly metrics: GatewayMetrics;
  /** The PrometheusRule with the gateway's alerts (`spec.gateway.alerts`, by default with the ServiceMonitor). */
  public readonly alerts?: GatewayAlerts;
  /** The MultiNetworkPolicy; undefined unless the cluster runs the multi-networkpolicy controller. */
  public readonly crossClusterPolicy?: GatewayCrossClusterPolicy;
  /** The trust container's Role, RoleBinding and containers, when the fleet exchanges CAs (`spec.trust`). */
  public readonly trust?: GatewayTrust;
  /** OpenShift only: the SCC admitting the gateway pods, and its binding. */
  public readonly securityContextConstraints?: GatewaySecurityContextConstraints;

  constructor(scope: Construct, id: string, props: MigrationProxyProps) {
    super(scope, id);
    const { plan, cluster } = props;
    if (cluster.datapath !== 'gateway') throw new InvalidPropsError({ code: 'wrong-datapath', path: 'cluster', message: `cluster ${cluster.name}: MigrationProxy needs datapath gateway, got ${cluster.datapath}` });
    if (cluster.gateways.length === 0) throw new InvalidPropsError({ code: 'plan-inconsistent', path: 'cluster', message: `cluster ${cluster.name}: no gateway replicas planned` });
    this.namespace = props.namespace ?? DEFAULT_GATEWAY_NAMESPACE;
    const labels = { [APP_NAME_LABEL]: GATEWAY_NAME, ...managedByLabels() };

    this.namespaceObject = new kplus.Namespace(this, 'Namespace', {
      metadata: { name: this.namespace, labels: { ...labels, 'pod-security.kubernetes.io/enforce': 'privileged' } },
    });
    [this.crossClusterNad, this.inClusterNad] = this.buildAttachments(props);
    this.config = gatewayConfigFor(plan, cluster, props.interfaces ?? DEFAULT_GATEWAY_INTERFACES);
    this.keepalivedConfig = keepalivedConfigFor(plan, cluster, {
      inClusterInterface: (props.interfaces ?? DEFAULT_GATEWAY_INTERFACES).inCluster,
      adminPort: this.config.listen.admin.port,
    });
    this.configMap = new kplus.ConfigMap(this, 'Config', {
      metadata: { name: GATEWAY_CONFIGMAP_NAME, namespace: this.namespace, labels },
      data: {
        [GATEWAY_CONFIG_FILE]: formatGatewayConfig(this.config),
        ...(this.keepalivedConfig ? { [GATEWAY_KEEPALIVED_FILE]: this.keepalivedConfig } : {}),
      },
    });
    this.serviceAccount = new kplus.ServiceAccount(this, 'ServiceAccount', {
      metadata: { name: 'migration-mesh-gateway', namespace: this.namespace, labels },
      automountToken: false,
    });
    this.tls = new GatewayTls(this, 'Tls', {
      namespace: this.namespace,
      fleet: plan.fleet,
      cluster: cluster.name,
      source: plan.gateway.tls,
      duration: props.certificate?.duration,
      renewBefore: props.certificate?.renewBefore,
      labels,
    });
    this.deployments = this.buildReplicas(props);
    this.trust = this.buildTrust(props, labels);
    const setLabels = gatewaySetLabels(cluster.name);
    this.podDisruptionBudget = replicaSetDisruptionBudget(this, 'migration-mesh-gateway', this.namespace, labels, setLabels);
    this.metrics = new GatewayMetrics(this, 'Metrics', {
      namespace: this.namespace,
      podSelector: setLabels,
      adminPort: this.config.listen.admin.port,
      serviceMonitor: plan.gateway.serviceMonitor,
      labels,
    });
    if (plan.gateway.alerts) {
      this.alerts = new GatewayAlerts(this, 'Alerts', {
        cluster: cluster.name,
        namespace: this.namespace,
        job: GATEWAY_METRICS_SERVICE_NAME,
        vip: cluster.gatewayVip?.replace(/\/\d+$/, ''),
        trustRepushIntervalSeconds: plan.trust.clusters[cluster.name]?.exchange ? plan.trust.repushIntervalSeconds : undefined,
        labels,
      });
    }
    if (props.openshift ?? cluster.openshift) {
      this.securityContextConstraints = new GatewaySecurityContextConstraints(this, 'OpenShift', {
        namespace: this.namespace, serviceAccountName: 'migration-mesh-gateway', runAsId: GATEWAY_RUN_AS, labels,
      });
    }
    if (props.multiNetworkPolicy ?? cluster.multiNetworkPolicy) {
      this.crossClusterPolicy = crossClusterPolicyFor(this, cluster, {
        namespace: this.namespace, crossClusterNad: this.crossClusterNad.name, setLabels, tunnelPort: this.config.listen.tunnel.port, labels,
      });
    }
  }

  /** The gateway's two attachments: the shared network (planned static addresses, routes) and the in-cluster one. */
  private buildAttachments(props: MigrationProxyProps): [NetworkAttachment, NetworkAttachment] {
    const { plan, cluster } = props;
    const shared = crossClusterNad(this, plan, cluster, this.namespace);
    const inCluster = new NetworkAttachment(this, 'InClusterNad', {
      name: gatewayInClusterNadName(cluster.migrationNetwork.nadName),
      namespace: this.namespace,
      attachment: cluster.migrationNetwork.attachment,
      ipam: staticIpam(),
      ipsCapability: true,
      labels: { [NETWORK_LABEL]: 'migration' },
    });
    return [shared, inCluster];
  }

  /** Add a container to every replica's pods; returns one Container per replica (see `GatewayDeployment.addSidecar`). */
  public addSidecar(container: kplus.ContainerProps): kplus.Container[] {
    return this.deployments.map((d) => d.addSidecar(container));
  }

  /** Add a volume to every replica's pods. */
  public addVolume(volume: kplus.Volume): void {
    for (const d of this.deployments) d.addVolume(volume);
  }

  /** Tolerate node taints on every replica. */
  public addToleration(...queries: kplus.NodeTaintQuery[]): void {
    for (const d of this.deployments) d.addToleration(...queries);
  }

  /** Add a label to every replica's pod template (the gateway's selector labels are refused). */
  public addPodLabel(key: string, value: string): void {
    for (const d of this.deployments) d.addPodLabel(key, value);
  }

  /** Add an annotation to every replica's pod template (the Multus selection and restart hash are refused). */
  public addPodAnnotation(key: string, value: string): void {
    for (const d of this.deployments) d.addPodAnnotation(key, value);
  }

  /** Pull the gateway images with the credentials in this Secret, on every replica. */
  public addImagePullSecret(secret: string | kplus.ISecret): void {
    for (const d of this.deployments) d.addImagePullSecret(secret);
  }

  /** Set the PriorityClass of every replica's pods. */
  public setPriorityClassName(name: string): void {
    for (const d of this.deployments) d.setPriorityClassName(name);
  }

  /** issue #10: the trust container beside each runtime (constructs/gateway/trust.ts), when the config has `trust`. */
  private buildTrust(props: MigrationProxyProps, labels: Record<string, string>): GatewayTrust | undefined {
    if (!this.config.trust) return undefined;
    const trust = new GatewayTrust(this, 'Trust', {
      namespace: this.namespace, serviceAccountName: this.serviceAccount.name, kubevirtNamespace: props.cluster.kubevirt.namespace, labels,
      image: props.plan.gateway.image, imagePullPolicy: props.imagePullPolicy,
    });
    this.deployments.forEach((d, i) => trust.attach(d, i));
    return trust;
  }

  private buildReplicas(props: MigrationProxyProps): GatewayDeployment[] {
    const { plan, cluster } = props;
    // keepalived reads its file once: a change of it (replicas added or removed) restarts the pods
    const restartHash = gatewayRestartHash(this.config, this.keepalivedConfig);
    return cluster.gateways.map((g) => new GatewayDeployment(this, `Replica${g.replica}`, {
      namespace: this.namespace,
      replica: g,
      setLabels: gatewaySetLabels(cluster.name),
      labels: { 'app.kubernetes.io/managed-by': 'migration-mesh' },
      image: plan.gateway.image,
      inClusterNad: this.inClusterNad.name,
      crossClusterNad: this.crossClusterNad.name,
      configMapName: GATEWAY_CONFIGMAP_NAME,
      serviceAccount: this.serviceAccount,
      ports: { intercept: this.config.listen.intercept.port, tunnel: this.config.listen.tunnel.port, admin: this.config.listen.admin.port },
      tlsSecretName: this.tls.secretName,
      restartHash,
      placement: plan.gateway.placement,
      interfaces: props.interfaces,
      terminationGracePeriodSeconds: Math.ceil(this.config.limits.drainTimeoutMs / 1000) + 5,
      failover: this.keepalivedConfig !== undefined,
      podLabels: props.podLabels,
      podAnnotations: props.podAnnotations,
      resources: props.resources,
      imagePullPolicy: props.imagePullPolicy,
      imagePullSecrets: props.imagePullSecrets,
      priorityClassName: props.priorityClassName,
      tolerations: props.tolerations,
    }));
  }
}
