import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';

/**
 * Properties for `GatewayMetrics`.
 */
export interface GatewayMetricsProps {
  /** Namespace of the gateway pods. */
  readonly namespace: string;
  /** Labels selecting this cluster's gateway pods. */
  readonly podSelector: Record<string, string>;
  /** The runtime's admin port (/metrics, /healthz, /readyz). */
  readonly adminPort: number;
  /**
   * Also emit a Prometheus Operator `ServiceMonitor` (monitoring.coreos.com/v1) for the Service.
   *
   * @default false
   */
  readonly serviceMonitor?: boolean;
  /**
   * Scrape interval of the ServiceMonitor.
   *
   * @default 30s
   */
  readonly scrapeInterval?: string;
  /**
   * Labels for the Service and the ServiceMonitor.
   *
   * @default - none
   */
  readonly labels?: Record<string, string>;
}

/** Service port name of the admin endpoint. */
export const GATEWAY_METRICS_PORT_NAME = 'metrics';

/**
 * The metrics Service (ClusterIP on the pod network, port `metrics` = the runtime's admin port), and when
 * asked a `ServiceMonitor` that scrapes `/metrics` on every gateway replica.
 */
export class GatewayMetrics extends Construct {
  public readonly service: ApiObject;
  public readonly serviceMonitor?: ApiObject;

  constructor(scope: Construct, id: string, props: GatewayMetricsProps) {
    super(scope, id);
    const name = 'migration-mesh-gateway-metrics';
    const labels = { ...props.labels, 'app.kubernetes.io/component': 'metrics' };
    this.service = new ApiObject(this, 'Service', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: { name, namespace: props.namespace, labels },
      spec: {
        type: 'ClusterIP',
        selector: props.podSelector,
        ports: [{ name: GATEWAY_METRICS_PORT_NAME, port: props.adminPort, targetPort: GATEWAY_METRICS_PORT_NAME, protocol: 'TCP' }],
      },
    });
    if (props.serviceMonitor) {
      this.serviceMonitor = new ApiObject(this, 'ServiceMonitor', {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'ServiceMonitor',
        metadata: { name: 'migration-mesh-gateway', namespace: props.namespace, labels: props.labels },
        spec: {
          selector: { matchLabels: labels },
          namespaceSelector: { matchNames: [props.namespace] },
          endpoints: [{ port: GATEWAY_METRICS_PORT_NAME, path: '/metrics', interval: props.scrapeInterval ?? '30s', scheme: 'http' }],
        },
      });
    }
  }
}
