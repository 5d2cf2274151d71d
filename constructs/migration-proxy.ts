import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { staticIpam } from '../src/cni';
import { GATEWAY_CONFIG_FILE, formatGatewayConfig, gatewayConfigFor } from '../src/gateway-config';
import { ClusterPlan, FleetPlan } from '../src/planner';
import { NetworkAttachment } from './network-attachment';

/** Namespace the gateways run in. */
export const DEFAULT_GATEWAY_NAMESPACE = 'migration-mesh';

/**
 * Properties for `MigrationProxy`.
 */
export interface MigrationProxyProps {
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
}

/**
 * The cluster's migration gateway: the two NADs its replicas attach (the shared cross-cluster network
 * and the in-cluster migration network, both static IPAM with per-pod `ips`, so one NAD serves every
 * replica), and the peer table ConfigMap written through the runtime's own config schema.
 */
export class MigrationProxy extends Construct {
  public readonly namespace: string;
  public readonly crossClusterNad: NetworkAttachment;
  public readonly inClusterNad: NetworkAttachment;
  public readonly configMap: ApiObject;
  /** The gateway runtime configuration (validated by the runtime's schema). */
  public readonly config: ReturnType<typeof gatewayConfigFor>;

  constructor(scope: Construct, id: string, props: MigrationProxyProps) {
    super(scope, id);
    const { plan, cluster } = props;
    if (cluster.datapath !== 'gateway') throw new Error(`cluster ${cluster.name}: MigrationProxy needs datapath gateway, got ${cluster.datapath}`);
    if (cluster.gateways.length === 0) throw new Error(`cluster ${cluster.name}: no gateway replicas planned`);
    this.namespace = props.namespace ?? DEFAULT_GATEWAY_NAMESPACE;
    const labels = { 'app.kubernetes.io/name': 'migration-mesh-gateway', 'app.kubernetes.io/managed-by': 'migration-mesh' };

    new ApiObject(this, 'Namespace', {
      apiVersion: 'v1', kind: 'Namespace',
      metadata: { name: this.namespace, labels: { ...labels, 'pod-security.kubernetes.io/enforce': 'privileged' } },
    });
    this.crossClusterNad = new NetworkAttachment(this, 'CrossClusterNad', {
      name: plan.crossCluster.nadName,
      namespace: this.namespace,
      attachment: plan.crossCluster.attachment,
      ipam: staticIpam(plan.crossCluster.routes),
      ipsCapability: true,
      labels: { 'migrationmesh.dev/network': 'cross-cluster' },
    });
    this.inClusterNad = new NetworkAttachment(this, 'InClusterNad', {
      name: `${cluster.migrationNetwork.nadName}-gateway`,
      namespace: this.namespace,
      attachment: cluster.migrationNetwork.attachment,
      ipam: staticIpam(),
      ipsCapability: true,
      labels: { 'migrationmesh.dev/network': 'migration' },
    });
    this.config = gatewayConfigFor(plan, cluster);
    this.configMap = new ApiObject(this, 'Config', {
      apiVersion: 'v1', kind: 'ConfigMap',
      metadata: { name: 'migration-mesh-gateway', namespace: this.namespace, labels },
      data: { [GATEWAY_CONFIG_FILE]: formatGatewayConfig(this.config) },
    });
  }
}
