/**
 * Identity: which fleet member a certificate names, and the one check every TLS path (origin and terminus)
 * applies to a peer gateway. Structured data is never flattened into delimited text: the
 * URI SANs are read from the certificate's DER (or handed over as an array by the native addon), and a
 * certificate names a fleet member only when it carries exactly one URI SAN and that URI is exactly
 * `spiffe://<fleet>/cluster/<cluster>` (DNS labels, lower case, nothing before or after).
 *
 * Key strength: RSA keys under 2048 bits and elliptic curves other than P-256, P-384 and P-521 (or
 * Ed25519/Ed448) are refused. The native TLS contexts also run at OpenSSL security level 2 (tlsrelay.c),
 * which refuses weak keys anywhere in the chain; this check names the problem.
 */
import * as crypto from 'node:crypto';
import type * as tls from 'node:tls';
import { peerIdentityUri, type ProxyConfig } from './config';

export type Identity = { cluster: string } | { error: string };

export const MIN_RSA_BITS = 2048;
export const ALLOWED_CURVES: readonly string[] = ['prime256v1', 'secp384r1', 'secp521r1'];

const LABEL = '[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?';
const SPIFFE_RE = new RegExp(`^spiffe://(${LABEL})/cluster/(${LABEL})$`);

/** The fleet member named by a certificate's URI SANs (all of them, in order). */
export function identityFromUris(uris: readonly string[], fleet: string): Identity {
  if (uris.length === 0) return { error: 'certificate has no URI SAN' };
  if (uris.length > 1) return { error: `certificate has ${uris.length} URI SANs; a gateway certificate carries exactly one` };
  const m = SPIFFE_RE.exec(uris[0]);
  if (!m) return { error: 'the URI SAN is not spiffe://<fleet>/cluster/<cluster>' };
  if (m[1] !== fleet) return { error: `certificate belongs to fleet '${m[1]}', not '${fleet}'` };
  if (uris[0] !== peerIdentityUri(fleet, m[2])) return { error: 'the URI SAN is not in canonical form' };
  return { cluster: m[2] };
}

/** One DER TLV: tag, content [start, end). */
interface Tlv { tag: number; start: number; end: number }

function readTlv(b: Buffer, off: number, limit: number): Tlv {
  if (off + 2 > limit) throw new Error('DER: truncated');
  const tag = b[off];
  let len = b[off + 1];
  let p = off + 2;
  if (len & 0x80) {
    const n = len & 0x7f;
    if (n === 0 || n > 4 || p + n > limit) throw new Error('DER: bad length');
    len = 0;
    for (let i = 0; i < n; i++) len = len * 256 + b[p + i];
    p += n;
  }
  if (p + len > limit) throw new Error('DER: length beyond the end');
  return { tag, start: p, end: p + len };
}

function children(b: Buffer, parent: Tlv): Tlv[] {
  const out: Tlv[] = [];
  for (let o = parent.start; o < parent.end;) {
    const t = readTlv(b, o, parent.end);
    out.push(t);
    o = t.end;
  }
  return out;
}

const SAN_OID = Buffer.from([0x55, 0x1d, 0x11]); // 2.5.29.17

/** The extensions' SubjectAltName values of a certificate (one per SAN extension; X.509 allows one). */
function sanExtensions(der: Buffer): Tlv[] {
  const cert = readTlv(der, 0, der.length);
  const tbs = children(der, cert)[0];
  if (!tbs || tbs.tag !== 0x30) throw new Error('DER: no tbsCertificate');
  const exts = children(der, tbs).find((t) => t.tag === 0xa3); // [3] EXPLICIT Extensions
  if (!exts) return [];
  const list = children(der, exts)[0];
  if (!list || list.tag !== 0x30) throw new Error('DER: Extensions is not a SEQUENCE');
  const out: Tlv[] = [];
  for (const ext of children(der, list)) {
    const parts = children(der, ext);
    if (parts[0]?.tag !== 0x06 || !der.subarray(parts[0].start, parts[0].end).equals(SAN_OID)) continue;
    const value = parts[parts.length - 1];
    if (value.tag !== 0x04) throw new Error('DER: SAN extension value is not an OCTET STRING');
    out.push(readTlv(der, value.start, value.end));
  }
  return out;
}

/**
 * Every URI SAN of a DER certificate, exactly as encoded. A URI that is not printable ASCII (0x20-0x7e) is returned as
 * '' (so it still counts, and never names anyone). Throws on malformed DER or a repeated SAN extension.
 */
export function uriSansOfDer(der: Buffer): string[] {
  const sans = sanExtensions(der);
  if (sans.length > 1) throw new Error('certificate has more than one SubjectAltName extension');
  if (sans.length === 0) return [];
  return children(der, sans[0]).filter((g) => g.tag === 0x86).map((g) => {
    const bytes = der.subarray(g.start, g.end);
    return bytes.every((c) => c >= 0x20 && c <= 0x7e) ? bytes.toString('latin1') : '';
  });
}

/** Why a certificate's public key is too weak for a gateway, or undefined. */
export function keyWeakness(der: Buffer): string | undefined {
  const key = new crypto.X509Certificate(der).publicKey;
  const d = key.asymmetricKeyDetails ?? {};
  const type = key.asymmetricKeyType;
  if (type === 'rsa' || type === 'rsa-pss') {
    return (d.modulusLength ?? 0) < MIN_RSA_BITS ? `RSA key of ${d.modulusLength} bits; at least ${MIN_RSA_BITS} are required` : undefined;
  }
  if (type === 'ec') return ALLOWED_CURVES.includes(d.namedCurve ?? '') ? undefined : `elliptic curve ${d.namedCurve} is not allowed (P-256, P-384, P-521)`;
  if (type === 'ed25519' || type === 'ed448') return undefined;
  return `key type ${type} is not allowed`;
}

/** The fleet member a DER certificate names (exactly one well-formed URI SAN, strong key), or why not. */
export function certificateIdentity(der: Buffer | undefined, fleet: string): Identity {
  if (!der || der.length === 0) return { error: 'no certificate' };
  let uris: string[];
  try { uris = uriSansOfDer(der); } catch (e) { return { error: (e as Error).message }; }
  const weak = keyWeakness(der);
  if (weak) return { error: weak };
  return identityFromUris(uris, fleet);
}

/** What a TLS path knows of the peer's certificate: Node's certificate (its DER is read), or the addon's URI SAN array. */
export type PeerCert = Pick<tls.PeerCertificate, 'raw'> | readonly string[] | undefined;

/** The fleet member a certificate names, or an explanation of why it names none. */
export function certificateCluster(cert: PeerCert, fleet: string): Identity {
  if (Array.isArray(cert)) return identityFromUris(cert, fleet);
  return certificateIdentity((cert as Pick<tls.PeerCertificate, 'raw'> | undefined)?.raw, fleet);
}

/**
 * The peer gateway a certificate belongs to. Origin side: `expected` is the cluster we dialed, and the
 * certificate must name exactly it. Terminus side (no `expected`): it must name a peer of this cluster.
 */
export function identifyPeer(cert: PeerCert, cfg: Pick<ProxyConfig, 'fleet' | 'peers'>, expected?: string): Identity {
  const who = certificateCluster(cert, cfg.fleet);
  if ('error' in who) return who;
  if (expected !== undefined) {
    if (who.cluster === expected) return who;
    return { error: `peer gateway presented ${peerIdentityUri(cfg.fleet, who.cluster)}, expected ${peerIdentityUri(cfg.fleet, expected)}` };
  }
  if (!cfg.peers.some((p) => p.cluster === who.cluster)) return { error: `'${who.cluster}' is not a peer` };
  return who;
}
