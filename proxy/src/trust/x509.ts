/**
 * What a gateway accepts as a peer's KubeVirt CA: self-signed CA certificates (basicConstraints
 * CA:TRUE), valid now, at most TRUST_MAX_CERTS of them. PEM/DER helpers. No I/O.
 */
import * as crypto from 'node:crypto';
import { RefusalCode, RefusalCodeValue, TRUST_MAX_CERTS } from '../protocol';

export interface CaInfo {
  /** SHA-256 of the DER, hex, lower case. */
  readonly sha256: string;
  readonly subject: string;
  /** ms since the epoch. */
  readonly notBefore: number;
  readonly notAfter: number;
  readonly der: Buffer;
}

export type BundleVerdict = { ok: true; certs: CaInfo[] } | { ok: false; code: RefusalCodeValue; why: string };

const PEM_RE = /-----BEGIN CERTIFICATE-----([A-Za-z0-9+/=\s]+?)-----END CERTIFICATE-----/g;

/** DER of every CERTIFICATE block of a PEM bundle, in order (other blocks and text are ignored). */
export function pemToDer(pem: string): Buffer[] {
  return [...pem.matchAll(PEM_RE)].map((m) => Buffer.from(m[1].replace(/\s+/g, ''), 'base64'));
}

export function derToPem(der: Buffer): string {
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`;
}

export function caInfo(der: Buffer): CaInfo {
  const x = new crypto.X509Certificate(der);
  return {
    sha256: crypto.createHash('sha256').update(der).digest('hex'),
    subject: x.subject.replace(/\n/g, ', '),
    notBefore: Date.parse(x.validFrom),
    notAfter: Date.parse(x.validTo),
    der: Buffer.from(der),
  };
}

function judge(der: Buffer, now: number): { code: RefusalCodeValue; why: string } | CaInfo {
  let x: crypto.X509Certificate;
  try { x = new crypto.X509Certificate(der); } catch (e) {
    return { code: RefusalCode.TRUST_NOT_VALID, why: `not an X.509 certificate (${(e as Error).message})` };
  }
  const info = caInfo(der);
  if (!x.ca) return { code: RefusalCode.TRUST_NOT_CA, why: `${info.subject} is not a CA (basicConstraints CA:TRUE missing)` };
  if (!x.checkIssued(x) || !x.verify(x.publicKey)) return { code: RefusalCode.TRUST_NOT_CA, why: `${info.subject} is not self-signed` };
  if (!(info.notBefore <= now)) return { code: RefusalCode.TRUST_NOT_VALID, why: `${info.subject} is not valid before ${x.validFrom}` };
  if (!(now < info.notAfter)) return { code: RefusalCode.TRUST_NOT_VALID, why: `${info.subject} expired ${x.validTo}` };
  return info;
}

/** Judge a published bundle: every certificate must pass, else the whole bundle is refused. */
export function checkBundle(ders: readonly Buffer[], now: number = Date.now()): BundleVerdict {
  if (ders.length < 1 || ders.length > TRUST_MAX_CERTS) {
    return { ok: false, code: RefusalCode.TRUST_COUNT, why: `${ders.length} certificates (1..${TRUST_MAX_CERTS} allowed)` };
  }
  const certs: CaInfo[] = [];
  for (const der of ders) {
    const r = judge(der, now);
    if ('code' in r) return { ok: false, ...r };
    if (!certs.some((c) => c.sha256 === r.sha256)) certs.push(r);
  }
  return { ok: true, certs };
}
