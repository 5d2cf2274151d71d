/**
 * The Grafana dashboard of one cluster's gateway (issue 28), from the runtime's own metrics only (names
 * in proxy/src/metrics.ts and proxy/src/trust/hub.ts; test/gateway-dashboard.test.ts checks each against
 * a running gateway's /metrics): tunnels, bytes and resets per peer, handshake refusals by reason, trust
 * age per peer, the VIP holder. Pure: constructs/gateway/dashboard.ts ships it in a ConfigMap for the
 * Grafana sidecar.
 */

export interface GatewayDashboardInput {
  readonly cluster: string;
  /** Namespace of the gateway pods (label `namespace` of the scraped series). */
  readonly namespace: string;
  /** The scrape job (the metrics Service's name). */
  readonly job: string;
  /** The cluster's VIP, when it has one. */
  readonly vip?: string;
  /** Trust exchange on: the trust panels. */
  readonly trust: boolean;
}

interface Target { expr: string; legendFormat: string; refId: string }
interface Panel {
  id: number; type: string; title: string; description: string;
  gridPos: { x: number; y: number; w: number; h: number }; targets: Target[]; [k: string]: unknown;
}

const esc = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"');

/** The dashboard JSON (Grafana schemaVersion 39) for one cluster's gateway. */
export function gatewayDashboard(i: GatewayDashboardInput): Record<string, unknown> {
  const sel = (extra = '') => `{job="${esc(i.job)}",namespace="${esc(i.namespace)}"${extra}}`;
  const panels: Panel[] = [];
  const add = (type: string, title: string, description: string, targets: [string, string][], unit: string) => {
    const n = panels.length;
    panels.push({
      id: n + 1, type, title, description, gridPos: { x: (n % 2) * 12, y: Math.floor(n / 2) * 8, w: 12, h: 8 },
      datasource: { type: 'prometheus', uid: '${datasource}' },
      fieldConfig: { defaults: { unit }, overrides: [] },
      targets: targets.map(([expr, legendFormat], k) => ({ expr, legendFormat, refId: String.fromCharCode(65 + k) })),
    });
  };
  add('timeseries', 'Tunnels open per peer', 'Established tunnels open now, both sides (origin: this cluster dialed the peer).',
    [[`sum by (peer) (mm_proxy_active_tunnels${sel()})`, '{{peer}}']], 'short');
  add('timeseries', 'Bytes per peer', 'Bytes per second through the tunnels; tx towards the peer, rx from it.',
    [[`sum by (peer, direction) (rate(mm_proxy_tunnel_bytes_total${sel()}[5m]))`, '{{peer}} {{direction}}']], 'Bps');
  add('timeseries', 'Tunnel resets per peer', 'Established tunnels that ended in a reset, per 10 minutes (alert MigrationMeshTunnelResetsRising above 5).',
    [[`sum by (peer) (increase(mm_proxy_tunnel_resets_total${sel()}[10m]))`, '{{peer}}']], 'short');
  add('timeseries', 'Refusals by reason', 'Connections and handshakes refused, per 10 minutes, by reason (docs/errors.md of the proxy: PROTOCOL.md codes).',
    [[`sum by (reason) (increase(mm_proxy_refusals_total${sel()}[10m]))`, '{{reason}}'],
      [`sum (increase(mm_proxy_tls_handshake_failures_total${sel()}[10m]))`, 'tls handshake failures']], 'short');
  if (i.vip) {
    add('table', `VIP holder (${i.vip})`, 'The gateway pod that holds the VIP, the next hop of the handlers\' routes; none is an outage, two is a split brain.',
      [[`max by (pod) (mm_proxy_address_held${sel(`,address="${esc(i.vip)}"`)}) == 1`, '{{pod}}']], 'short');
  }
  if (i.trust) {
    add('timeseries', 'Peer CA untrusted for', 'How long each peer\'s current CA has been missing from this cluster\'s kubevirt-ca (0: trusted).',
      [[`max by (peer) (mm_trust_peer_ca_untrusted_seconds${sel()})`, '{{peer}}']], 's');
    add('timeseries', 'Peer CA lifetime left', 'Time until the earliest NotAfter of the CA bundle last accepted from each peer.',
      [[`min by (peer) (mm_trust_peer_ca_not_after_seconds${sel()}) - time()`, '{{peer}}']], 's');
    add('timeseries', 'Since the last kubevirt-external-ca write', 'Age of the trust container\'s last write of the peers\' CAs.',
      [[`time() - max (mm_trust_last_write_timestamp_seconds${sel()})`, 'age']], 's');
  }
  return {
    title: `Migration Mesh gateway: ${i.cluster}`,
    uid: `migration-mesh-${i.cluster}`.slice(0, 40),
    tags: ['migration-mesh'],
    schemaVersion: 39,
    editable: true,
    time: { from: 'now-6h', to: 'now' },
    refresh: '30s',
    templating: { list: [{ name: 'datasource', type: 'datasource', query: 'prometheus', label: 'Prometheus' }] },
    panels,
  };
}
