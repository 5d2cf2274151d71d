/** Prometheus metrics of one gateway (prom-client, its own Registry). */
import * as os from 'node:os';
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export interface GatewayMetrics {
  registry: Registry;
  bytes: Counter<'peer' | 'direction'>;
  activeTunnels: Gauge<'peer' | 'side'>;
  tunnelDuration: Histogram<'peer' | 'side'>;
  tunnelsTotal: Counter<'peer' | 'side'>;
  tunnelResets: Counter<'peer' | 'side'>;
  refusals: Counter<'reason' | 'side'>;
  tlsHandshakeFailures: Counter<'side'>;
  dialLatency: Histogram<'target'>;
  configReloads: Counter<'result'>;
  draining: Gauge;
  addressHeld: Gauge<'address'>;
  budgetRate: Gauge<'peer'>;
  budgetSent: Counter<'peer'>;
  /** Probes of peer gateways this gateway made for the admin `/probe` (peer-probe.ts), by result. */
  probes: Counter<'peer' | 'result'>;
  /** PROBE frames this gateway's tunnel listener answered, by peer and result. */
  probesAnswered: Counter<'peer' | 'result'>;
}

/** A peer's bandwidth budget as the metrics read it: rate in bytes/s, bytes sent under it so far. */
export interface BudgetReading { peer: string; rate: number; sent: number }

/** The addresses on this pod's interfaces now (the runtime shares its network namespace with keepalived). */
export function interfaceAddresses(): Set<string> {
  return new Set(Object.values(os.networkInterfaces()).flatMap((l) => (l ?? []).map((a) => a.address.split('%')[0].toLowerCase())));
}

/**
 * `ownAddresses`: the planned addresses of this cluster's gateways (replica addresses and the VIP);
 * `mm_proxy_address_held{address}` says at each scrape which of them this pod holds (the VIP holder).
 */
export function createMetrics(
  registry = new Registry(), onCollect?: () => void, defaults = true, ownAddresses: () => readonly string[] = () => [],
  addressesHere: () => Set<string> = interfaceAddresses, budgets: () => BudgetReading[] = () => [],
): GatewayMetrics {
  if (defaults) collectDefaultMetrics({ register: registry, prefix: 'mm_proxy_' });
  const m: GatewayMetrics = {
    registry,
    bytes: new Counter({
      name: 'mm_proxy_tunnel_bytes_total', help: 'Bytes carried through tunnels, per peer cluster; direction=tx is towards the peer, rx from the peer.',
      labelNames: ['peer', 'direction'], registers: [registry],
      collect() { onCollect?.(); },
    }),
    activeTunnels: new Gauge({ name: 'mm_proxy_active_tunnels', help: 'Tunnels open now; side=origin (we dialed the peer) or terminus (the peer dialed us).', labelNames: ['peer', 'side'], registers: [registry] }),
    tunnelDuration: new Histogram({
      name: 'mm_proxy_tunnel_duration_seconds', help: 'Lifetime of finished tunnels.', labelNames: ['peer', 'side'], registers: [registry],
      buckets: [0.01, 0.1, 1, 10, 60, 300, 900, 3600, 14400],
    }),
    tunnelsTotal: new Counter({ name: 'mm_proxy_tunnels_total', help: 'Tunnels established.', labelNames: ['peer', 'side'], registers: [registry] }),
    tunnelResets: new Counter({
      name: 'mm_proxy_tunnel_resets_total', help: 'Established tunnels that ended in a reset (an error, idle timeout or dead peer on either side), not a clean close.',
      labelNames: ['peer', 'side'], registers: [registry],
    }),
    refusals: new Counter({ name: 'mm_proxy_refusals_total', help: 'Connections refused, by reason.', labelNames: ['reason', 'side'], registers: [registry] }),
    tlsHandshakeFailures: new Counter({ name: 'mm_proxy_tls_handshake_failures_total', help: 'Failed TLS handshakes (bad/unknown certificate, wrong identity, timeout).', labelNames: ['side'], registers: [registry] }),
    dialLatency: new Histogram({
      name: 'mm_proxy_dial_duration_seconds', help: 'Time to connect: target=peer (a peer gateway, TCP+TLS+header) or destination (in-cluster).',
      labelNames: ['target'], registers: [registry], buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
    }),
    configReloads: new Counter({ name: 'mm_proxy_config_reloads_total', help: 'Config reloads, result=success|failure.', labelNames: ['result'], registers: [registry] }),
    draining: new Gauge({ name: 'mm_proxy_draining', help: '1 while draining after SIGTERM.', registers: [registry] }),
    addressHeld: new Gauge({
      name: 'mm_proxy_address_held', help: "1 when this pod holds the planned gateway address (a replica's own, or the cluster's VIP while keepalived gives it this replica), else 0.",
      labelNames: ['address'], registers: [registry],
      collect() {
        const own = ownAddresses();
        if (own.length === 0) return;
        const here = addressesHere();
        this.reset();
        for (const a of own) this.set({ address: a }, here.has(a.toLowerCase()) ? 1 : 0);
      },
    }),
    budgetRate: new Gauge({
      name: 'mm_proxy_peer_bandwidth_budget_bytes_per_second', help: 'The bandwidth budget toward this peer (config peers[].bandwidth, else bandwidth), bytes per second, all its tunnels together.',
      labelNames: ['peer'], registers: [registry],
      collect() { this.reset(); for (const b of budgets()) this.set({ peer: b.peer }, b.rate); },
    }),
    budgetSent: new Counter({
      name: 'mm_proxy_peer_bandwidth_sent_bytes_total', help: 'Bytes sent toward this peer under its bandwidth budget (granted by the budget; a reload that changes the rate restarts it).',
      labelNames: ['peer'], registers: [registry],
      collect() { this.reset(); for (const b of budgets()) this.inc({ peer: b.peer }, b.sent); },
    }),
    probes: new Counter({
      name: 'mm_proxy_probes_total', help: 'Probes of a peer gateway (TLS handshake, identity, PROBE and its REPLY) made for the admin /probe, by peer and result (ok, timeout, tls_handshake: the handshake or the peer\'s identity failed, unreachable, or the name of the peer\'s refusal); an answer from the cache is not a probe.',
      labelNames: ['peer', 'result'], registers: [registry],
    }),
    probesAnswered: new Counter({
      name: 'mm_proxy_probes_answered_total', help: 'PROBE frames the tunnel listener answered, by peer and result (accepted or a refusal name).',
      labelNames: ['peer', 'result'], registers: [registry],
    }),
  };
  return m;
}
