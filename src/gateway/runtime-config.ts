/**
 * The gateway runtime's configuration schema (`proxy/src/config.ts`, pure zod), which the library
 * writes into each gateway's ConfigMap and the runtime reads back. The library compiles that one
 * source file in (to lib/proxy/src/), instead of depending on the runtime package: the runtime is
 * not published to npm (it ships as the gateway image, with a native addon), and the two can still
 * never disagree. The only door from the library into proxy/ (test/layers.test.ts holds it so).
 */
export {
  DEFAULT_ADMIN_LISTEN, DEFAULT_ADMIN_PORT, DEFAULT_INTERCEPT_INTERFACE, DEFAULT_INTERCEPT_PORT, DEFAULT_TUNNEL_INTERFACE, FORBIDDEN_CIDRS,
  isWildcard, parseProxyConfig, peerIdentityUri, peerSchema,
} from '../../proxy/src/config';
export type { PeerConfig, ProxyConfig, ProxyConfigInput } from '../../proxy/src/config';
