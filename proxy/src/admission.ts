/** The terminus's decision on a decoded OPEN: which peer asks, and may this gateway dial for it now. */
import type { PeerConfig } from './config';
import type { GatewayContext } from './context';
import { RefusalCode, type OpenHeader } from './protocol';

export type OpenVerdict = { code: number; why: string } | { peer: PeerConfig };

/**
 * Checks on a decoded OPEN, in order: the header's source matches the certificate (`certCluster`, when the
 * tunnel is mTLS), the source is a peer, the gateway is not draining, the destination policy, the caps.
 */
export function checkOpen(ctx: GatewayContext, h: OpenHeader, certCluster: string | undefined): OpenVerdict {
  const { cfg } = ctx;
  if (certCluster !== undefined && h.sourceCluster !== certCluster) {
    return { code: RefusalCode.SOURCE_MISMATCH, why: `header says '${h.sourceCluster}' but the certificate names '${certCluster}'` };
  }
  const peer = cfg.peers.find((p) => p.cluster === h.sourceCluster);
  if (!peer) return { code: RefusalCode.UNKNOWN_PEER, why: `'${h.sourceCluster}' is not a peer of '${cfg.cluster}'` };
  if (ctx.stopping) return { code: RefusalCode.DRAINING, why: 'gateway is draining' };
  const verdict = ctx.policy.checkDestination(h.dstHost, h.dstPort);
  if (!verdict.ok) {
    return { code: verdict.code === 'forbidden' ? RefusalCode.DESTINATION_FORBIDDEN : RefusalCode.DESTINATION_OUTSIDE_CIDR, why: verdict.why };
  }
  const cap = ctx.table.capCheck(peer.cluster, cfg.limits);
  if (cap) return { code: cap, why: 'too many tunnels' };
  return { peer };
}
