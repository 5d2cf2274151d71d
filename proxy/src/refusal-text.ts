/**
 * What a tunnel listener's REPLY says to the peer it refuses (PROTOCOL.md section 3, "What a refusal says").
 *
 * A plaintext tunnel port has authenticated no one: whoever reaches it on the shared network can send an OPEN
 * or a PROBE. Such a peer gets the code and one fixed text per code, never this gateway's cluster name, its
 * CIDRs, limits, TLS mode or an error message. A peer whose fleet certificate the mTLS handshake verified (a
 * configured peer) gets the full reason, so its operator can act on it from the origin's log. Either way the
 * full reason is logged here with the connection id. A failed destination dial says only the errno code
 * (`ECONNREFUSED`), as the protocol has always said, never the error's message.
 */
import { RefusalCode, refusalName } from './protocol';

/** The reason a peer we have not authenticated reads, per refusal code. */
export const UNAUTHENTICATED_REFUSAL_TEXT: Readonly<Record<number, string>> = {
  [RefusalCode.MALFORMED]: 'malformed header',
  [RefusalCode.UNSUPPORTED_VERSION]: 'unsupported protocol version',
  [RefusalCode.HEADER_TOO_LARGE]: 'header too large',
  [RefusalCode.SOURCE_MISMATCH]: 'source cluster does not match the certificate',
  [RefusalCode.UNKNOWN_PEER]: 'source cluster is not a peer of this gateway',
  [RefusalCode.DESTINATION_OUTSIDE_CIDR]: 'destination outside this cluster',
  [RefusalCode.DESTINATION_FORBIDDEN]: 'destination forbidden',
  [RefusalCode.PEER_LIMIT]: 'too many tunnels from this peer',
  [RefusalCode.TOTAL_LIMIT]: 'too many tunnels',
  [RefusalCode.DIAL_FAILED]: 'dial failed',
  [RefusalCode.DIAL_TIMEOUT]: 'dial timed out',
  [RefusalCode.DRAINING]: 'gateway is draining',
  [RefusalCode.PAYLOAD_MODE_REFUSED]: 'payload mode refused',
  [RefusalCode.TRUST_UNAUTHENTICATED]: 'the trust exchange needs mutual TLS (tls.mode mtls or mtls-splice)',
};

/** The reason to send: the full one to an authenticated peer, the fixed text (else the code's name) to any other. */
export function refusalText(code: number, why: string, authenticated: boolean): string {
  if (authenticated) return why;
  return UNAUTHENTICATED_REFUSAL_TEXT[code] ?? refusalName(code);
}

/** A failed dial's reason for the REPLY: its errno code only (`ECONNREFUSED`, `ETIMEDOUT_DIAL`), else the refusal's name. */
export function dialFailureText(e: NodeJS.ErrnoException, code: number): string {
  return typeof e.code === 'string' && /^E[A-Z0-9_]{1,40}$/.test(e.code) ? e.code : refusalName(code);
}
