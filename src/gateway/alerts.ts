/**
 * The alerting rules of one cluster's gateway (issue 28), from the runtime's own metrics only (names in
 * proxy/src/metrics.ts and proxy/src/trust/hub.ts). Pure: `constructs/gateway/alerts.ts` wraps them in a
 * Prometheus Operator `PrometheusRule`; the tests run them through `promtool check rules` and
 * `promtool test rules`. Each alert's runbook is a section of docs/alerts.md (anchor = alert name in
 * lower case).
 */

/** What the rules need to know about one cluster's gateway. */
export interface GatewayAlertsInput {
  /** The cluster (label `mesh_cluster` on every alert, so a shared Alertmanager can route by it). */
  readonly cluster: string;
  /** Namespace of the gateway pods and of the metrics Service. */
  readonly namespace: string;
  /** The scrape job: the ServiceMonitor's job label is the metrics Service's name. */
  readonly job: string;
  /** The cluster's gateway VIP (2+ replicas, failover `vip`): alert when no replica holds it. */
  readonly vip?: string;
  /** Trust exchange on for this cluster: the trust alerts, judged against this publication period. */
  readonly trust?: { readonly repushIntervalSeconds: number };
  /** Base of each alert's `runbook_url` (`<base>#<alert name in lower case>`). @default docs/alerts.md */
  readonly runbookBaseUrl?: string;
  /**
   * Whose pods `job` scrapes: the gateway replicas, or a trust agent's (a cluster without a gateway, issue
   * #30): its rules are `MigrationMeshTrustAgentDown` and the trust alerts, no VIP or tunnel alerts (it
   * carries no migration). @default gateway
   */
  readonly role?: 'gateway' | 'trust-agent';
}

export interface AlertRule {
  alert: string;
  expr: string;
  for: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

export interface RuleGroup { name: string; rules: AlertRule[] }

/** Alert names, in the order docs/alerts.md lists them. */
export const GATEWAY_ALERTS = [
  'MigrationMeshGatewayDown', 'MigrationMeshGatewayVipUnheld', 'MigrationMeshTunnelRefusalsRising', 'MigrationMeshTunnelResetsRising',
  'MigrationMeshPeerCaUntrusted', 'MigrationMeshPeerCaExpiring', 'MigrationMeshTrustWriteFailing',
] as const;

/** A trust agent's alerts (`role: 'trust-agent'`), in the order docs/alerts.md lists them. */
export const TRUST_AGENT_ALERTS = ['MigrationMeshTrustAgentDown', 'MigrationMeshPeerCaUntrusted', 'MigrationMeshPeerCaExpiring', 'MigrationMeshTrustWriteFailing'] as const;

/** A peer's CA may stay missing from kubevirt-ca this many publication periods (at least 15 minutes). */
const UNTRUSTED_PERIODS = 3;

/** Where `runbook_url` points unless told: the runbook in this repository (not in the npm package; set runbookBaseUrl to your copy). */
const DEFAULT_RUNBOOK = 'docs/alerts.md';

/** Prometheus duration for whole seconds (`90` -> `1m30s`). */
export function promDuration(seconds: number): string {
  const s = Math.max(0, Math.round(seconds));
  if (s === 0) return '0s';
  const h = Math.floor(s / 3600); const m = Math.floor((s % 3600) / 60); const r = s % 60;
  return `${h ? `${h}h` : ''}${m ? `${m}m` : ''}${r ? `${r}s` : ''}`;
}

const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"');

/** The rule groups for one cluster's gateway, or its trust agent (`role`). */
export function gatewayAlertGroups(i: GatewayAlertsInput): RuleGroup[] {
  const sel = (extra = '') => `{job="${esc(i.job)}",namespace="${esc(i.namespace)}"${extra}}`;
  const rule: RuleOf = (alert, expr, forDuration, severity, summary, description) => ({
    alert, expr, for: forDuration,
    labels: { severity, mesh_cluster: i.cluster },
    annotations: { summary, description, runbook_url: `${i.runbookBaseUrl ?? DEFAULT_RUNBOOK}#${alert.toLowerCase()}` },
  });
  if (i.role === 'trust-agent') {
    const down = rule('MigrationMeshTrustAgentDown', `absent(up${sel()} == 1)`, '10m', 'warning',
      `No trust agent replica of cluster ${i.cluster} is ready`,
      `No ready trust agent replica has been scraped in namespace ${i.namespace} for 10 minutes: ${i.cluster} neither publishes its KubeVirt CA nor takes in its peers' rotations.`);
    return [{ name: 'migration-mesh-trust-agent', rules: [down] }, ...(i.trust ? [trustGroup(i, i.trust.repushIntervalSeconds, rule)] : [])];
  }
  const gateway: AlertRule[] = [
    // Service endpoints hold ready pods only, so no target with up == 1 means no ready replica
    rule('MigrationMeshGatewayDown', `absent(up${sel()} == 1)`, '5m', 'critical',
      `No migration gateway replica of cluster ${i.cluster} is ready`,
      `No ready gateway replica has been scraped in namespace ${i.namespace} for 5 minutes: cross-cluster migrations to and from ${i.cluster} fail.`),
  ];
  if (i.vip) {
    gateway.push(rule('MigrationMeshGatewayVipUnheld', `max(mm_proxy_address_held${sel(`,address="${esc(i.vip)}"`)}) == 0`, '2m', 'critical',
      `No gateway replica of cluster ${i.cluster} holds the VIP ${i.vip}`,
      `The handlers' next hop ${i.vip} has been on no ready replica for 2 minutes: outgoing migrations from ${i.cluster} cannot reach a gateway.`));
  }
  gateway.push(
    rule('MigrationMeshTunnelRefusalsRising',
      `sum by (namespace, reason) (increase(mm_proxy_refusals_total${sel(',reason!="draining"')}[10m])) > 5`
        + ` or label_replace(sum by (namespace) (increase(mm_proxy_tls_handshake_failures_total${sel()}[10m])) > 5, "reason", "tls_handshake", "", "")`,
      '5m', 'warning',
      `Gateway of ${i.cluster} refuses connections ({{ $labels.reason }})`,
      `More than 5 connections refused in 10 minutes for reason {{ $labels.reason }} ({{ $value | humanize }}): a peer outside the fleet or with a wrong identity or CA, a destination outside the migration CIDR, or a cap reached.`),
    rule('MigrationMeshTunnelResetsRising',
      `sum by (namespace, peer) (increase(mm_proxy_tunnel_resets_total${sel()}[10m])) > 5`,
      '5m', 'warning',
      `Tunnels between ${i.cluster} and {{ $labels.peer }} keep being reset`,
      `More than 5 established tunnels with {{ $labels.peer }} ended in a reset in 10 minutes ({{ $value | humanize }}): migrations in flight fail.`),
  );
  return [{ name: 'migration-mesh-gateway', rules: gateway }, ...(i.trust ? [trustGroup(i, i.trust.repushIntervalSeconds, rule)] : [])];
}

type RuleOf = (alert: (typeof GATEWAY_ALERTS)[number] | (typeof TRUST_AGENT_ALERTS)[number], expr: string, forDuration: string, severity: 'critical' | 'warning', summary: string, description: string) => AlertRule;

/** The trust exchange's alerts (gateway or trust agent alike: the same runtime serves mm_trust_*). */
function trustGroup(i: GatewayAlertsInput, repushIntervalSeconds: number, rule: RuleOf): RuleGroup {
  const sel = (extra = '') => `{job="${esc(i.job)}",namespace="${esc(i.namespace)}"${extra}}`;
  const limit = Math.max(900, UNTRUSTED_PERIODS * repushIntervalSeconds);
  return {
    name: 'migration-mesh-trust',
    rules: [
      rule('MigrationMeshPeerCaUntrusted', `min by (namespace, peer) (mm_trust_peer_ca_untrusted_seconds${sel()}) > ${limit}`, '1m', 'critical',
        `Cluster ${i.cluster} does not trust the current CA of {{ $labels.peer }}`,
        `The current KubeVirt CA of {{ $labels.peer }} has been missing from ${i.cluster}'s kubevirt-ca for more than ${promDuration(limit)} (${UNTRUSTED_PERIODS} publication periods): migrations between them fail in the TLS handshake once its leaf certificates use it.`),
      rule('MigrationMeshPeerCaExpiring', `max by (namespace, peer) (mm_trust_peer_ca_expiring${sel()}) == 1`, '5m', 'warning',
        `A CA of {{ $labels.peer }} expires before its next publication to ${i.cluster}`,
        `The CA bundle last accepted from {{ $labels.peer }} expires before the next publication expected from it: that peer stopped publishing or stopped rotating.`),
      rule('MigrationMeshTrustWriteFailing', `sum by (namespace, pod) (increase(mm_trust_write_failures_total${sel()}[15m])) > 0`, '10m', 'critical',
        `The trust container of ${i.cluster} cannot write kubevirt-external-ca`,
        `Pod {{ $labels.pod }} has failed to write kubevirt-external-ca for 10 minutes: new peer CAs do not reach ${i.cluster}'s kubevirt-ca.`),
    ],
  };
}
