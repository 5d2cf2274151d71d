import { ApiObject } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { GATEWAY_CONFIG_FILE, formatGatewayConfig, trustAgentConfigFor } from '../../src/gateway/config';
import { APP_NAME_LABEL, TRUST_AGENT_NAME, TRUST_AGENT_SET_LABEL, managedByLabels } from '../../src/base/names';
import { ClusterPlan, FleetPlan } from '../../src/addressing/planner';
import { GatewayAlerts } from '../gateway/alerts';
import { GatewayMetrics } from '../gateway/metrics';
import { GatewayCrossClusterPolicy } from '../gateway/policy';
import { GATEWAY_RUN_AS } from '../gateway/deployment';
import { GatewaySecurityContextConstraints } from '../gateway/security-context-constraints';
import { GatewayTls } from '../gateway/tls';
import { GatewayTrust } from '../gateway/trust';
import { DEFAULT_GATEWAY_NAMESPACE } from '../gateway/migration-proxy';
import { NetworkAttachment } from '../addressing/network-attachment';
import { TrustAgentDeployment } from './agent-deployment';
import { crossClusterNad, crossClusterPolicyFor, replicaSetDisruptionBudget } from '../gateway/replica-parts';

/** Name of the trust agent's metrics Service (also the scrape job's name under its ServiceMonitor). */
export const TRUST_AGENT_METRICS_SERVICE_NAME = 'migration-mesh-trust-metrics';

// the names live in src/base/names.ts (planning selects the agents' pods too); re-exported for the library API
export { TRUST_AGENT_NAME, TRUST_AGENT_SET_LABEL };

/**
 * Properties for `TrustAgent`.
 */
export interface TrustAgentProps {
  /** The fleet plan (runtime image, TLS source, tunnel port, cross-cluster network). */
  readonly plan: FleetPlan;
  /** This cluster's plan: its trust agent replicas (`trustAgents`) and its peer table. */
  readonly cluster: ClusterPlan;
  /**
   * Namespace for the trust agent's objects (created by this construct).
   *
   * @default migration-mesh
   */
  readonly namespace?: string;
  /**
   * Namespace KubeVirt runs in (the trust container's Role and RoleBinding go there).
   *
   * @default - the cluster's `kubevirt.namespace`
   */
  readonly kubevirtNamespace?: string;
  /**
   * Image pull policy of both containers.
   *
   * @default IfNotPresent
   */
  readonly imagePullPolicy?: kplus.ImagePullPolicy;
  /**
   * Emit the MultiNetworkPolicy for the cross-cluster attachment (PUBLISH admitted only from the peers).
   *
   * @default - the cluster's `multiNetworkPolicy` flag from the fleet
   */
  readonly multiNetworkPolicy?: boolean;
  /**
   * Emit an OpenShift SCC (no capabilities; the pods' fixed uid and fsGroup, which `restricted-v2`'s
   * namespace uid range refuses) and its Role/RoleBinding for the trust agent's ServiceAccount.
   *
   * @default - the cluster's `openshift` flag from the fleet (true for hco delivery)
   */
  readonly openshift?: boolean;
}

/**
 * The CA exchange of a cluster without a gateway (direct, native, Harvester; issue #30): the gateway
 * runtime in its trust-only role beside the same trust container a gateway has, so the cluster keeps
 * every peer's KubeVirt CA trusted and publishes its own:
 * - the Namespace (PSA `restricted`: nothing in these pods needs more);
 * - the shared network's NAD (static IPAM, `ips` capability: each replica its planned address);
 * - the runtime config (`trustAgentConfigFor`: PUBLISH only, every tunnel refused, peers trust only);
 * - one Deployment per replica (`TrustAgentDeployment`), a ServiceAccount without token, a PDB
 *   (`maxUnavailable: 1`), as the gateway has;
 * - the fleet mTLS identity of the cluster (`GatewayTls`: the same `spiffe://<fleet>/cluster/<cluster>`);
 * - `GatewayTrust`: the trust container in each pod, the only one with a token, and its Role limited by
 *   `resourceNames` to `kubevirt-ca` and `kubevirt-external-ca`;
 * - the metrics Service (`migration-mesh-trust-metrics`, port `metrics` = the runtime's admin port, which
 *   serves the `mm_trust_*` metrics) and, when the fleet sets `gateway.serviceMonitor`, its ServiceMonitor;
 *   when the fleet sets `gateway.alerts` (default: `serviceMonitor`), a PrometheusRule with
 *   `MigrationMeshTrustAgentDown` and the trust alerts, as the gateway has;
 * - a MultiNetworkPolicy on the attachment when the cluster runs the controller;
 * - on OpenShift, an SCC without capabilities admitting the pods' fixed uid and fsGroup (`restricted-v2`
 *   assigns uids from the namespace's range and refuses 65532), usable by this ServiceAccount alone.
 * The Certificate (`GatewayTls`) and the MultiNetworkPolicy keep the gateway's object names: a cluster runs
 * gateways (datapath `gateway`) or a trust agent (every other datapath), never both, so the names never
 * meet in one namespace; and the Certificate is the same identity (`spiffe://<fleet>/cluster/<cluster>`).
 */
export class TrustAgent extends Construct {
  /** Name of the namespace. */
  public readonly namespace: string;
  /** The Namespace (cdk8s-plus-28). */
  public readonly namespaceObject: kplus.Namespace;
  /** The shared network's NAD (L1). */
  public readonly crossClusterNad: NetworkAttachment;
  /** The runtime config (validated by the runtime's schema). */
  public readonly config: ReturnType<typeof trustAgentConfigFor>;
  /** The ConfigMap holding `config.json`. */
  public readonly configMap: kplus.ConfigMap;
  /** The pods' ServiceAccount (no token mounted into the pod). */
  public readonly serviceAccount: kplus.ServiceAccount;
  /** The mTLS identity (cert-manager Certificate, a user Secret, or none). */
  public readonly tls: GatewayTls;
  /** One per replica, in replica order. */
  public readonly deployments: TrustAgentDeployment[];
  /** The trust containers, their Role and RoleBinding. */
  public readonly trust: GatewayTrust;
  /** L1: cdk8s-plus-28 has no PodDisruptionBudget construct. */
  public readonly podDisruptionBudget: ApiObject;
  /** The metrics Service (`metrics.service`) and, when the fleet enables it, the ServiceMonitor. */
  public readonly metrics: GatewayMetrics;
  /** The PrometheusRule; undefined unless the fleet enables `gateway.alerts`. */
  public readonly alerts?: GatewayAlerts;
  /** The MultiNetworkPolicy; undefined unless the cluster runs the multi-networkpolicy controller. */
  public readonly crossClusterPolicy?: GatewayCrossClusterPolicy;
  /** OpenShift only: the SCC admitting the trust agent's pods, and its binding. */
  public readonly securityContextConstraints?: GatewaySecurityContextConstraints;

  constructor(scope: Construct, id: string, props: TrustAgentProps) {
    super(scope, id);
    const { plan, cluster } = props;
    if (cluster.trustAgents.length === 0) {
      throw new InvalidPropsError({ code: 'plan-inconsistent', path: 'cluster.trustAgents', message: `cluster ${cluster.name}: no trust agent replicas planned` });
    }
    this.namespace = props.namespace ?? DEFAULT_GATEWAY_NAMESPACE;
    const labels = { [APP_NAME_LABEL]: TRUST_AGENT_NAME, ...managedByLabels() };
    const setLabels = { [APP_NAME_LABEL]: TRUST_AGENT_NAME, [TRUST_AGENT_SET_LABEL]: cluster.name };
    this.namespaceObject = new kplus.Namespace(this, 'Namespace', {
      metadata: { name: this.namespace, labels: { ...labels, 'pod-security.kubernetes.io/enforce': 'restricted' } },
    });
    this.crossClusterNad = crossClusterNad(this, plan, cluster, this.namespace);
    this.config = trustAgentConfigFor(plan, cluster);
    this.configMap = new kplus.ConfigMap(this, 'Config', {
      metadata: { name: TRUST_AGENT_NAME, namespace: this.namespace, labels },
      data: { [GATEWAY_CONFIG_FILE]: formatGatewayConfig(this.config) },
    });
    this.serviceAccount = new kplus.ServiceAccount(this, 'ServiceAccount', {
      metadata: { name: TRUST_AGENT_NAME, namespace: this.namespace, labels },
      automountToken: false,
    });
    this.tls = new GatewayTls(this, 'Tls', { namespace: this.namespace, fleet: plan.fleet, cluster: cluster.name, source: plan.gateway.tls, labels });
    this.deployments = cluster.trustAgents.map((r) => new TrustAgentDeployment(this, `Replica${r.replica}`, {
      namespace: this.namespace,
      replica: r,
      setLabels,
      image: plan.gateway.image,
      crossClusterNad: this.crossClusterNad.name,
      // the Multus selection names the interface the tunnel listener is bound to (issue 49)
      crossClusterInterface: this.config.listen.tunnel.interface,
      configMapName: TRUST_AGENT_NAME,
      serviceAccount: this.serviceAccount,
      ports: { tunnel: this.config.listen.tunnel.port, admin: this.config.listen.admin.port },
      tlsSecretName: this.tls.secretName,
      placement: plan.gateway.placement,
      imagePullPolicy: props.imagePullPolicy,
    }));
    this.trust = new GatewayTrust(this, 'Trust', {
      name: TRUST_AGENT_NAME, namespace: this.namespace, serviceAccountName: this.serviceAccount.name,
      kubevirtNamespace: props.kubevirtNamespace ?? cluster.kubevirt.namespace, labels, image: plan.gateway.image, imagePullPolicy: props.imagePullPolicy,
    });
    this.deployments.forEach((d, i) => this.trust.attach(d, i));
    this.podDisruptionBudget = replicaSetDisruptionBudget(this, TRUST_AGENT_NAME, this.namespace, labels, setLabels);
    this.metrics = new GatewayMetrics(this, 'Metrics', {
      namespace: this.namespace, podSelector: setLabels, adminPort: this.config.listen.admin.port, serviceMonitor: plan.gateway.serviceMonitor,
      labels, serviceName: TRUST_AGENT_METRICS_SERVICE_NAME, serviceMonitorName: TRUST_AGENT_NAME,
    });
    if (plan.gateway.alerts) {
      this.alerts = new GatewayAlerts(this, 'Alerts', {
        cluster: cluster.name, namespace: this.namespace, job: TRUST_AGENT_METRICS_SERVICE_NAME, role: 'trust-agent', ruleName: TRUST_AGENT_NAME, labels,
        trustRepushIntervalSeconds: plan.trust.clusters[cluster.name]?.exchange ? plan.trust.repushIntervalSeconds : undefined,
      });
    }
    if (props.openshift ?? cluster.openshift) {
      this.securityContextConstraints = new GatewaySecurityContextConstraints(this, 'OpenShift', {
        namespace: this.namespace, serviceAccountName: TRUST_AGENT_NAME, runAsId: GATEWAY_RUN_AS, name: TRUST_AGENT_NAME, allowedCapabilities: [], labels,
      });
    }
    if (props.multiNetworkPolicy ?? cluster.multiNetworkPolicy) {
      this.crossClusterPolicy = crossClusterPolicyFor(this, cluster, {
        namespace: this.namespace, crossClusterNad: this.crossClusterNad.name, setLabels, tunnelPort: this.config.listen.tunnel.port, labels,
      });
    }
  }
}
