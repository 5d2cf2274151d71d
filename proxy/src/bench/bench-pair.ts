/**
 * The two runtime configs of a bench's gateway pair on loopback (proxy-bench.ts, concurrency-bench.ts): east takes
 * the client at ports[0] and opens tunnels to west's ports[4]; west answers them and connects to the destination.
 * Certificates are `${tmp}/{ca,east,west}.pem` as the benches make them. Returns the two config files.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export type BenchTlsMode = 'plaintext' | 'mtls' | 'mtls-splice';

export function writePairConfigs(tmp: string, ports: readonly number[], mode: BenchTlsMode): { west: string; east: string } {
  const tls = (c: string) => (mode !== 'plaintext' ? { mode, caFile: `${tmp}/ca.pem`, certFile: `${tmp}/${c}.pem`, keyFile: `${tmp}/${c}.key` } : { mode: 'plaintext' });
  const cfg = (me: string, peer: string, i: number, peerTunnel: number) => ({
    version: 1, fleet: 'bench', cluster: me,
    listen: { intercept: { host: '127.0.0.1', port: ports[i] }, tunnel: { host: '127.0.0.1', port: ports[i + 1] }, admin: { host: '127.0.0.1', port: ports[i + 2] } },
    localCidrs: ['127.0.0.0/8'], peers: [{ cluster: peer, cidrs: ['127.0.0.0/8'], gateways: [{ host: '127.0.0.1', port: peerTunnel }] }],
    tls: tls(me),
  });
  const [west, east] = [path.join(tmp, `west-${ports[0]}.json`), path.join(tmp, `east-${ports[0]}.json`)];
  fs.writeFileSync(west, JSON.stringify(cfg('west', 'east', 3, 1)));
  fs.writeFileSync(east, JSON.stringify(cfg('east', 'west', 0, ports[4])));
  return { west, east };
}
