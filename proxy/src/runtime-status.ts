/**
 * The admin `/status` route (issue 28): what one gateway replica knows about itself, for
 * `migration-mesh status`, which reads it through the API server's pod proxy (no extra network path):
 * readiness, which planned addresses this pod holds (its own, the VIP), tunnels open now per peer, the
 * trust channel's last publication to each peer, and the last errors (refusals and resets), newest first.
 */
import type { Readiness } from './admin';
import type { Side, Tunnel } from './tunnel-table';

/** One refusal or reset, as the runtime counted it in `mm_proxy_refusals_total` / `mm_proxy_tunnel_resets_total`. */
export interface RuntimeError {
  /** ISO time. */
  readonly at: string;
  readonly side: Side;
  /** The refusal reason (the metric's `reason` label), or `reset` for an established tunnel that ended in a reset. */
  readonly reason: string;
  /** The peer cluster, when known (resets). */
  readonly peer?: string;
}

export interface PeerStatus {
  /** Established tunnels open now, by side (origin: we dialed the peer). */
  readonly tunnels: { readonly origin: number; readonly terminus: number };
  /**
   * The trust channel's last PUBLISH to each gateway of this peer (trust exchange on only): `accepted`, a
   * refusal name, or `unreachable` (no TLS session to that gateway: tunnels to it fail too).
   */
  readonly publications?: { readonly gateway: string; readonly at: string; readonly status: string }[];
}

export interface RuntimeStatus {
  readonly cluster: string;
  readonly readiness: Readiness;
  /** The planned addresses of this cluster's gateways (config `ownAddresses`) and whether this pod holds each now. */
  readonly addresses: { readonly address: string; readonly held: boolean }[];
  /** Every configured peer cluster. */
  readonly peers: Record<string, PeerStatus>;
  /** At most `RECENT_ERRORS`, newest first. */
  readonly lastErrors: RuntimeError[];
}

/** How many errors `/status` keeps. */
export const RECENT_ERRORS = 20;

/** A bounded list of the latest errors. */
export class RecentErrors {
  private readonly ring: RuntimeError[] = [];
  constructor(private readonly now: () => number = Date.now) {}

  record(side: Side, reason: string, peer?: string): void {
    this.ring.unshift({ at: new Date(this.now()).toISOString(), side, reason, ...(peer !== undefined ? { peer } : {}) });
    if (this.ring.length > RECENT_ERRORS) this.ring.length = RECENT_ERRORS;
  }

  list(): RuntimeError[] { return this.ring.map((e) => ({ ...e })); }
}

export interface RuntimeStatusInput {
  readonly cluster: string;
  readonly readiness: Readiness;
  readonly ownAddresses: readonly string[];
  /** Addresses on this pod's interfaces now (lower case). */
  readonly here: Set<string>;
  readonly peers: readonly string[];
  readonly tunnels: readonly Tunnel[];
  /** The trust table's `own.lastPublished`: `PEER/HOST:PORT` -> last publication. */
  readonly published?: Record<string, { at: string; status: string }>;
  readonly errors: RecentErrors;
}

export function runtimeStatus(i: RuntimeStatusInput): RuntimeStatus {
  const peers: Record<string, PeerStatus> = {};
  for (const p of i.peers) {
    const open = i.tunnels.filter((t) => t.peer === p && t.established && !t.finished);
    const pubs = Object.entries(i.published ?? {}).filter(([k]) => k.startsWith(`${p}/`))
      .map(([k, v]) => ({ gateway: k.slice(p.length + 1), at: v.at, status: v.status }));
    peers[p] = {
      tunnels: { origin: open.filter((t) => t.side === 'origin').length, terminus: open.filter((t) => t.side === 'terminus').length },
      ...(i.published ? { publications: pubs } : {}),
    };
  }
  return {
    cluster: i.cluster,
    readiness: i.readiness,
    addresses: i.ownAddresses.map((a) => ({ address: a, held: i.here.has(a.toLowerCase()) })),
    peers,
    lastErrors: i.errors.list(),
  };
}
