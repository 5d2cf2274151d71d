/** Odd gateway certificates for the security tests: forged SANs, several URIs, weak keys (openssl CLI). */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Pki } from './helpers';

export type KeyKind = 'p256' | 'rsa1024' | 'rsa2048' | 'p192';

const KEY_ARGS: Record<KeyKind, string[]> = {
  p256: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256'],
  p192: ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime192v1'],
  rsa1024: ['-newkey', 'rsa:1024'],
  rsa2048: ['-newkey', 'rsa:2048'],
};

function openssl(args: string[], cwd: string): void {
  const r = spawnSync('openssl', args, { cwd, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`openssl ${args.join(' ')}: ${r.stderr}`);
}

/**
 * Issue a certificate from the fleet CA of `pki` with exactly the given URI SANs (each one SAN entry,
 * written through an openssl config section so a comma inside a URI stays inside that URI).
 */
export function issueOdd(pki: Pki, name: string, uris: string[], key: KeyKind = 'p256'): { cert: string; key: string; ca: string } {
  const dir = pki.dir;
  openssl(['req', ...KEY_ARGS[key], '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`], dir);
  const alt = uris.map((u, i) => `URI.${i + 1}=${u}`).join('\n');
  const san = uris.length ? 'subjectAltName=@alt\n' : 'subjectAltName=DNS:gateway.example\n';
  fs.writeFileSync(path.join(dir, `${name}.ext`), `${san}extendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n[alt]\n${alt}\n`);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`], dir);
  return { cert: path.join(dir, `${name}.pem`), key: path.join(dir, `${name}.key`), ca: pki.ca };
}
