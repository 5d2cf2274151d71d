import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { gatewayAlertGroups, RuleGroup } from '../../src/gateway/alerts';

/**
 * Properties for `GatewayAlerts`.
 */
export interface GatewayAlertsProps {
  /** The cluster whose gateway the rules watch (label `mesh_cluster` on every alert). */
  readonly cluster: string;
  /** Namespace of the gateway pods, their metrics Service and this rule. */
  readonly namespace: string;
  /** The metrics Service's name: the job label Prometheus Operator gives the ServiceMonitor's targets. */
  readonly job: string;
  /**
   * The cluster's gateway VIP (bare address): adds `MigrationMeshGatewayVipUnheld`.
   *
   * @default - no VIP alert (one replica, or failover `none`)
   */
  readonly vip?: string;
  /**
   * The trust exchange's publication period, when this cluster exchanges CAs: adds the three trust alerts.
   *
   * @default - no trust alerts
   */
  readonly trustRepushIntervalSeconds?: number;
  /**
   * Base of each alert's `runbook_url` (`<base>#<alert name in lower case>`).
   *
   * @default docs/alerts.md
   */
  readonly runbookBaseUrl?: string;
  /**
   * Labels for the PrometheusRule (your Prometheus' `ruleSelector` picks rules by label).
   *
   * @default - none
   */
  readonly labels?: Record<string, string>;
  /**
   * Whose pods `job` scrapes: `trust-agent` (a cluster without a gateway) gives `MigrationMeshTrustAgentDown`
   * and the trust alerts only.
   *
   * @default gateway
   */
  readonly role?: 'gateway' | 'trust-agent';
  /**
   * Name of the PrometheusRule.
   *
   * @default migration-mesh-gateway
   */
  readonly ruleName?: string;
}

/**
 * A Prometheus Operator `PrometheusRule` (monitoring.coreos.com/v1) with the gateway's alerts: no replica
 * ready, VIP unheld, refusals and resets rising, a peer CA untrusted too long or expiring, the trust
 * container unable to write `kubevirt-external-ca`; for a trust agent (`role`), no replica ready and the
 * trust alerts. Runbook: docs/alerts.md.
 */
export class GatewayAlerts extends Construct {
  /** The PrometheusRule (L1: a Prometheus Operator CRD, no cdk8s-plus construct). */
  public readonly rule: ApiObject;
  /** The rule groups, as written into `spec.groups`. */
  public readonly groups: RuleGroup[];

  constructor(scope: Construct, id: string, props: GatewayAlertsProps) {
    super(scope, id);
    this.groups = gatewayAlertGroups({
      cluster: props.cluster, namespace: props.namespace, job: props.job, vip: props.vip, runbookBaseUrl: props.runbookBaseUrl, role: props.role,
      trust: props.trustRepushIntervalSeconds !== undefined ? { repushIntervalSeconds: props.trustRepushIntervalSeconds } : undefined,
    });
    this.rule = new ApiObject(this, 'PrometheusRule', {
      apiVersion: 'monitoring.coreos.com/v1',
      kind: 'PrometheusRule',
      metadata: { name: props.ruleName ?? 'migration-mesh-gateway', namespace: props.namespace, labels: props.labels },
      spec: { groups: this.groups },
    });
  }
}
