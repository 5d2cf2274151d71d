/**
 * The admin listener's binding (issue 14): an address, or every address of one interface (learned at
 * start; by default the pod network's eth0) plus 127.0.0.1 for in-pod checks (the failover sidecar). Each
 * address of the interface is listened on with a socket bound to that interface (SO_BINDTODEVICE, issue 49):
 * Linux takes a packet for any local address on any interface, so an address bind alone answered a host on
 * the shared or the migration network that routed the pod address via the gateway (the attack matrix found
 * it). The admin server thus never answers on another network unless told to (`host`).
 */
import * as http from 'node:http';
import * as net from 'node:net';
import * as os from 'node:os';
import type { ProxyConfig } from './config';
import type { NativeAddon } from './native';
import { listenBound } from './sockets';

type AdminSpec = ProxyConfig['listen']['admin'];

/** Listen on `host`: bound to `spec`'s interface unless the host is loopback or `spec` names an address. */
function listenOn(server: net.Server, host: string, port: number, spec: AdminSpec, native: NativeAddon | undefined): Promise<net.AddressInfo> {
  const device = 'interface' in spec && host !== '127.0.0.1' ? spec.interface : undefined;
  return listenBound(server, { host, port, ...(device ? { interface: device } : {}) }, native, 'listen.admin');
}

/**
 * The addresses the admin listener binds for `spec`. An interface that is missing or has no address leaves
 * loopback only (fail closed: never wider than asked).
 */
export function adminBindAddresses(spec: AdminSpec, interfaces: NodeJS.Dict<os.NetworkInterfaceInfo[]> = os.networkInterfaces()): string[] {
  if ('host' in spec) return [spec.host];
  const list = (interfaces[spec.interface] ?? []).filter((i) => !(i.family === 'IPv6' && i.address.toLowerCase().startsWith('fe80'))).map((i) => i.address);
  return list.includes('127.0.0.1') ? list : [...list, '127.0.0.1'];
}

/**
 * Listen `server` on the first bind address, and sibling servers (which hand their requests to `server`)
 * on the others; closing `server` (close / closeAllConnections) closes the siblings too.
 */
export async function listenAdmin(server: http.Server, spec: AdminSpec, native?: NativeAddon): Promise<net.AddressInfo> {
  const [first, ...rest] = adminBindAddresses(spec);
  const siblings = rest.map(() => http.createServer());
  const origClose = server.close.bind(server);
  const origCloseAll = server.closeAllConnections.bind(server);
  server.close = ((cb?: (err?: Error) => void) => { for (const s of siblings) if (s.listening) s.close(); return origClose(cb); }) as typeof server.close;
  server.closeAllConnections = () => { for (const s of siblings) s.closeAllConnections(); origCloseAll(); };
  for (const s of siblings) s.on('request', (req, res) => server.emit('request', req, res));
  try {
    const addr = await listenOn(server, first, spec.port, spec, native);
    await Promise.all(siblings.map((s, i) => listenOn(s, rest[i], addr.port, spec, native)));
    return addr;
  } catch (e) {
    for (const s of siblings) if (s.listening) s.close();
    throw e;
  }
}
