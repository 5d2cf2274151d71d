/**
 * Identity: which fleet member a certificate names (its spiffe://<fleet>/cluster/<cluster> URI SAN), and the
 * one check every TLS path (Node's tls, the native addon; origin and terminus) applies to a peer gateway.
 */
import type * as tls from 'node:tls';
import { parsePeerIdentityUri, peerIdentityUri, type ProxyConfig } from './config';

export type Identity = { cluster: string } | { error: string };

/** URI SANs of a peer certificate. */
function uriSans(cert: tls.PeerCertificate | undefined): string[] {
  const s = cert?.subjectaltname;
  if (!s) return [];
  return s.split(/,\s*/).filter((x) => x.startsWith('URI:')).map((x) => x.slice(4));
}

/** The fleet member a certificate names, or an explanation of why it names none. */
export function certificateCluster(cert: tls.PeerCertificate | undefined, fleet: string): Identity {
  const ids = uriSans(cert).map(parsePeerIdentityUri).filter((x): x is { fleet: string; cluster: string } => !!x);
  if (ids.length === 0) return { error: 'certificate has no spiffe://<fleet>/cluster/<cluster> URI SAN' };
  if (ids.length > 1) return { error: 'certificate names more than one cluster' };
  if (ids[0].fleet !== fleet) return { error: `certificate belongs to fleet '${ids[0].fleet}', not '${fleet}'` };
  return { cluster: ids[0].cluster };
}

/** The certificate as the native addon reports it (its URI SANs), in the shape `certificateCluster` reads. */
export function certificateOfUris(uris: string[]): tls.PeerCertificate {
  return { subjectaltname: uris.map((u) => `URI:${u}`).join(', ') } as tls.PeerCertificate;
}

/**
 * The peer gateway a certificate belongs to. Origin side: `expected` is the cluster we dialed, and the
 * certificate must name exactly it. Terminus side (no `expected`): it must name a peer of this cluster.
 */
export function identifyPeer(cert: tls.PeerCertificate | undefined, cfg: Pick<ProxyConfig, 'fleet' | 'peers'>, expected?: string): Identity {
  const who = certificateCluster(cert, cfg.fleet);
  if ('error' in who) return who;
  if (expected !== undefined) {
    if (who.cluster === expected) return who;
    return { error: `peer gateway presented ${peerIdentityUri(cfg.fleet, who.cluster)}, expected ${peerIdentityUri(cfg.fleet, expected)}` };
  }
  if (!cfg.peers.some((p) => p.cluster === who.cluster)) return { error: `'${who.cluster}' is not a peer` };
  return who;
}
