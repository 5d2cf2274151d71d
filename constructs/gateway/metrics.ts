import { ApiObject } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
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
  /**
   * Name of the metrics Service: Prometheus Operator names the scrape job after it, and the alerts select that job.
   *
   * @default migration-mesh-gateway-metrics (`GATEWAY_METRICS_SERVICE_NAME`)
   */
  readonly serviceName?: string;
  /**
   * Name of the ServiceMonitor.
   *
   * @default migration-mesh-gateway
   */
  readonly serviceMonitorName?: string;
}

/** Name of the metrics Service (also the scrape job's name under a ServiceMonitor). */
export const GATEWAY_METRICS_SERVICE_NAME = 'migration-mesh-gateway-metrics';

/** Service port name of the admin endpoint. */
export const GATEWAY_METRICS_PORT_NAME = 'metrics';

/**
 * The metrics Service (ClusterIP on the pod network, port `metrics` = the runtime's admin port), and when
 * asked a `ServiceMonitor` that scrapes `/metrics` on every selected pod: the gateway replicas
 * (`MigrationProxy`), or a trust agent's replicas (`TrustAgent`, with its own names).
 */
export class GatewayMetrics extends Construct {
  /** The metrics Service (cdk8s-plus-28). */
  public readonly service: kplus.Service;
  /** The ServiceMonitor (L1: a Prometheus Operator CRD, no cdk8s-plus construct). */
  public readonly serviceMonitor?: ApiObject;

  constructor(scope: Construct, id: string, props: GatewayMetricsProps) {
    super(scope, id);
    const name = props.serviceName ?? GATEWAY_METRICS_SERVICE_NAME;
    const labels = { ...props.labels, 'app.kubernetes.io/component': 'metrics' };
    // targetPort is the admin port's number: cdk8s-plus-28 takes numeric target ports only
    this.service = new kplus.Service(this, 'Service', {
      metadata: { name, namespace: props.namespace, labels },
      type: kplus.ServiceType.CLUSTER_IP,
      ports: [{ name: GATEWAY_METRICS_PORT_NAME, port: props.adminPort, targetPort: props.adminPort, protocol: kplus.Protocol.TCP }],
    });
    for (const [k, v] of Object.entries(props.podSelector)) this.service.selectLabel(k, v);
    if (props.serviceMonitor) {
      this.serviceMonitor = new ApiObject(this, 'ServiceMonitor', {
        apiVersion: 'monitoring.coreos.com/v1',
        kind: 'ServiceMonitor',
        metadata: { name: props.serviceMonitorName ?? 'migration-mesh-gateway', namespace: props.namespace, labels: props.labels },
        spec: {
          selector: { matchLabels: labels },
          namespaceSelector: { matchNames: [props.namespace] },
          endpoints: [{ port: GATEWAY_METRICS_PORT_NAME, path: '/metrics', interval: props.scrapeInterval ?? '30s', scheme: 'http' }],
        },
      });
    }
  }
}
