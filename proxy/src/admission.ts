/** The terminus's decision on a decoded OPEN: which peer asks, and may this gateway dial for it now. */
import type { PeerConfig } from './config';
import type { GatewayContext } from './context';
import { CONNECTION_ID_BYTES, ProtocolError, RefusalCode, decodeProbeBody, refusalName, type OpenHeader } from './protocol';

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

/** The terminus's answer to a PROBE frame (PROTOCOL.md section 9): the REPLY's status, reason and connection id. */
export interface ProbeVerdict { readonly status: number; readonly reason: string; readonly connectionId: Buffer }

/**
 * Checks on a PROBE, the same as OPEN's up to the destination: the body's source matches the certificate
 * (`certCluster`, mTLS), the source is a peer, the gateway is not draining. Nothing is dialed, nothing kept;
 * counted in `mm_proxy_probes_answered_total{peer,result}`.
 */
export function checkProbe(ctx: GatewayContext, body: Buffer, certCluster: string | undefined): ProbeVerdict {
  const verdict = (): ProbeVerdict & { peer?: string } => {
    let p;
    try { p = decodeProbeBody(body); } catch (e) {
      const status = e instanceof ProtocolError ? e.code : RefusalCode.MALFORMED;
      return { status, reason: (e as Error).message, connectionId: Buffer.alloc(CONNECTION_ID_BYTES) };
    }
    const { connectionId } = p;
    if (certCluster !== undefined && p.sourceCluster !== certCluster) {
      return { status: RefusalCode.SOURCE_MISMATCH, reason: `probe says '${p.sourceCluster}' but the certificate names '${certCluster}'`, connectionId, peer: certCluster };
    }
    if (!ctx.cfg.peers.some((x) => x.cluster === p.sourceCluster)) {
      return { status: RefusalCode.UNKNOWN_PEER, reason: `'${p.sourceCluster}' is not a peer of '${ctx.cfg.cluster}'`, connectionId };
    }
    if (ctx.stopping) return { status: RefusalCode.DRAINING, reason: 'gateway is draining', connectionId, peer: p.sourceCluster };
    return { status: RefusalCode.ACCEPTED, reason: '', connectionId, peer: p.sourceCluster };
  };
  const v = verdict();
  // an unverified claim is never a label: only a configured peer (or the certificate's cluster) is
  ctx.metrics.probesAnswered.inc({ peer: v.peer ?? 'unknown', result: v.status === RefusalCode.ACCEPTED ? 'accepted' : refusalName(v.status) });
  return { status: v.status, reason: v.reason, connectionId: v.connectionId };
}
