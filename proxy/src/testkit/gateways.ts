/** Two in-process gateways on loopback ("east" -> "west"), with the test hooks loopback needs. */
import * as net from 'node:net';
import { startGateway, type GatewayHandle, type StartGatewayOptions } from '../gateway';
import type { ProxyConfigInput } from '../config';
import { freePort, silent, type Pki } from './helpers';

export type TlsMode = 'mtls' | 'mtls-splice' | 'plaintext';

export interface Pair { a: GatewayHandle; b: GatewayHandle; cfgA: ProxyConfigInput; cfgB: ProxyConfigInput; close(): Promise<void> }

export async function configFor(cluster: string, peer: string, peerTunnelPort: number, tlsMode: TlsMode, pki: Pki | undefined,
  over: Partial<ProxyConfigInput> = {}): Promise<ProxyConfigInput> {
  return {
    version: 1, fleet: 'fleet', cluster,
    listen: {
      intercept: { host: '127.0.0.1', port: await freePort() },
      tunnel: { host: '127.0.0.1', port: await freePort() },
      admin: { host: '127.0.0.1', port: await freePort() },
    },
    localCidrs: ['127.0.0.0/8'],
    peers: [{ cluster: peer, cidrs: ['127.0.0.0/8', '198.51.100.0/24', '169.254.0.0/16'], gateways: [{ host: '127.0.0.1', port: peerTunnelPort }] }],
    tls: tlsMode !== 'plaintext' ? { mode: tlsMode, caFile: pki!.ca, certFile: pki!.certs[cluster].cert, keyFile: pki!.certs[cluster].key } : { mode: 'plaintext' },
    // no `limits`: the product's defaults (10 s handshake, 5 s dial). A 2 s handshake budget here once made the
    // 3,000-short-connection checks fail on a loaded machine (the real timeout tripped, ECONNRESET); a test about
    // a timeout sets its own in `over`
    ...over,
  };
}

/**
 * Gateway A intercepts; the test says where each intercepted connection was "originally" going with
 * `dst` (a loopback stand-in for SO_ORIGINAL_DST). Gateway B may dial loopback (unsafe test hook).
 */
export async function startPair(tlsMode: TlsMode, pki: Pki | undefined, dst: () => { host: string; port: number },
  optsA: StartGatewayOptions = {}, optsB: StartGatewayOptions = {}, overB: Partial<ProxyConfigInput> = {},
  overA: Partial<ProxyConfigInput> = {}): Promise<Pair> {
  const cfgB = await configFor('west', 'east', 1, tlsMode, pki, overB);
  const cfgA = await configFor('east', 'west', cfgB.listen!.tunnel!.port, tlsMode, pki, overA);
  const b = await startGateway(cfgB, { logger: silent, unsafeAllowLoopbackDestinations: true, ...optsB });
  let a: GatewayHandle;
  try {
    a = await startGateway(cfgA, { logger: silent, originalDestination: (_s: net.Socket) => dst(), ...optsA });
  } catch (e) { await b.close(); throw e; }
  return { a, b, cfgA, cfgB, close: async () => { await a.close(); await b.close(); } };
}
