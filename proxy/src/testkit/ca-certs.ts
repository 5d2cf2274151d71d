/**
 * Test support: self-signed X.509 certificates (ECDSA P-256) with any validity window, built in DER
 * here because the openssl 3.0 CLI cannot set notBefore. Good enough for Node's X509Certificate and
 * for the gateway's checks: version 3, basicConstraints (CA:TRUE critical, or absent for a leaf).
 */
import * as crypto from 'node:crypto';

const len = (n: number): Buffer => {
  if (n < 0x80) return Buffer.from([n]);
  const b: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) b.unshift(v & 0xff);
  return Buffer.from([0x80 | b.length, ...b]);
};
const tlv = (tag: number, ...content: Buffer[]): Buffer => {
  const c = Buffer.concat(content);
  return Buffer.concat([Buffer.from([tag]), len(c.length), c]);
};
const seq = (...c: Buffer[]) => tlv(0x30, ...c);
const oid = (text: string): Buffer => {
  const p = text.split('.').map(Number);
  const out = [40 * p[0] + p[1]];
  for (const v of p.slice(2)) {
    const b: number[] = [v & 0x7f];
    for (let x = Math.floor(v / 128); x > 0; x = Math.floor(x / 128)) b.unshift(0x80 | (x & 0x7f));
    out.push(...b);
  }
  return tlv(0x06, Buffer.from(out));
};
const int = (n: bigint): Buffer => {
  let hex = n.toString(16);
  if (hex.length % 2) hex = `0${hex}`;
  let b = Buffer.from(hex, 'hex');
  if (b[0] & 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
};
const time = (ms: number): Buffer => {
  const d = new Date(Math.floor(ms / 1000) * 1000);
  const iso = d.toISOString().replace(/[-:T]/g, '').slice(0, 14);
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(`${iso.slice(2)}Z`)) : tlv(0x18, Buffer.from(`${iso}Z`));
};
const name = (cn: string) => seq(tlv(0x31, seq(oid('2.5.4.3'), tlv(0x0c, Buffer.from(cn, 'utf8')))));

export interface TestCert { der: Buffer; pem: string; notBefore: number; notAfter: number; cn: string }

let serial = BigInt(Date.now()) * 1000n;
/** One EC key for all test certificates: generation is the slow part, and identity comes from the serial. */
const KEY = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });

/** A test certificate; `issuer`: another issuer name (the certificate is then not self-issued, though signed by the same key). */
export function makeCert(cn: string, notBefore: number, notAfter: number, opts: { ca?: boolean; padBytes?: number; issuer?: string } = {}): TestCert {
  const sigAlg = seq(oid('1.2.840.10045.4.3.2'));
  const exts: Buffer[] = [];
  if (opts.ca !== false) exts.push(seq(oid('2.5.29.19'), tlv(0x01, Buffer.from([0xff])), tlv(0x04, seq(tlv(0x01, Buffer.from([0xff]))))));
  // padding in a non-critical private extension, to build oversized certificates
  if (opts.padBytes) exts.push(seq(oid('1.3.6.1.4.1.55555.1'), tlv(0x04, Buffer.alloc(opts.padBytes, 0x41))));
  const tbs = seq(
    tlv(0xa0, int(2n)), int(serial++), sigAlg, name(opts.issuer ?? cn), seq(time(notBefore), time(notAfter)), name(cn),
    KEY.publicKey.export({ type: 'spki', format: 'der' }),
    ...(exts.length ? [tlv(0xa3, seq(...exts))] : []),
  );
  const sig = crypto.sign('sha256', tbs, KEY.privateKey);
  const der = seq(tbs, sigAlg, tlv(0x03, Buffer.from([0]), sig));
  const b64 = der.toString('base64').replace(/(.{64})/g, '$1\n').replace(/\n$/, '');
  return { der, pem: `-----BEGIN CERTIFICATE-----\n${b64}\n-----END CERTIFICATE-----\n`, notBefore: Math.floor(notBefore / 1000) * 1000, notAfter: Math.floor(notAfter / 1000) * 1000, cn };
}
