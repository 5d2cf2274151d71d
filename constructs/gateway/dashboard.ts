import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { gatewayDashboard } from '../../src/gateway/dashboard';

/**
 * Properties for `GatewayDashboard`.
 */
export interface GatewayDashboardProps {
  /** The cluster whose gateway the dashboard shows (its title and uid). */
  readonly cluster: string;
  /** Namespace of the gateway pods (the `namespace` label of their series). */
  readonly namespace: string;
  /** The metrics Service's name: the job label of the gateway's series. */
  readonly job: string;
  /**
   * The cluster's gateway VIP (bare address): adds the VIP holder panel.
   *
   * @default - no VIP panel
   */
  readonly vip?: string;
  /**
   * The cluster exchanges CAs: adds the trust panels (untrusted for, CA lifetime left, last write).
   *
   * @default false
   */
  readonly trust?: boolean;
  /**
   * Namespace of the ConfigMap: where your Grafana dashboard sidecar looks.
   *
   * @default - the gateway namespace
   */
  readonly configMapNamespace?: string;
}

/** The label Grafana's dashboard sidecar (kube-prometheus-stack, grafana Helm chart) selects by default. */
const SIDECAR_LABEL = 'grafana_dashboard';

/**
 * A ConfigMap `migration-mesh-gateway-dashboard` labelled `grafana_dashboard: "1"` holding the Grafana
 * dashboard of one cluster's gateway (`gateway.json`): tunnels, bytes and resets per peer, refusals by
 * reason, the VIP holder and, with the trust exchange, the trust age per peer. Opt-in with
 * `spec.operatorView.dashboard`; docs/status.md.
 */
export class GatewayDashboard extends Construct {
  /** The ConfigMap (plain core object). */
  public readonly configMap: ApiObject;
  /** The dashboard, as written into `data["gateway.json"]`. */
  public readonly dashboard: Record<string, unknown>;

  constructor(scope: Construct, id: string, props: GatewayDashboardProps) {
    super(scope, id);
    this.dashboard = gatewayDashboard({ cluster: props.cluster, namespace: props.namespace, job: props.job, vip: props.vip, trust: props.trust ?? false });
    this.configMap = new ApiObject(this, 'ConfigMap', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: 'migration-mesh-gateway-dashboard', namespace: props.configMapNamespace ?? props.namespace, labels: { [SIDECAR_LABEL]: '1' } },
      data: { 'gateway.json': `${JSON.stringify(this.dashboard, null, 2)}\n` },
    });
  }
}
