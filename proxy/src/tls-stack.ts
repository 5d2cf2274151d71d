/**
 * The gateway's TLS stack (issue 49): the OpenSSL inside the Node binary that runs it. Node's `tls` module and the
 * native addon (which calls the OpenSSL symbols Node exports) both use it, so the Node release decides which
 * OpenSSL faces the network. `run` and `trust` (the two commands that speak TLS to the network) refuse to start on
 * a Node or OpenSSL past its end of support: an image rebuilt on an old base, or a host install, would otherwise
 * serve the migration tunnel on a TLS library that no longer gets security fixes, silently. The refusal names
 * the versions and the fix; MM_ALLOW_UNSUPPORTED_TLS_STACK=1 turns it into a loud warning for an operator who
 * knowingly runs a vendor-patched OpenSSL (a distribution's Node built against its own, still supported 3.0).
 *
 * The floors are the same as proxy/scripts/node-runtime.js's (which picks the Node the build and tests use;
 * proxy/src/test/tls-stack.test.ts checks they agree).
 */

/** The oldest Node major: 22 and 24 are the maintained LTS lines (Node 20 ended 2026-04-30). */
export const MIN_NODE_MAJOR = 22;
/** The oldest OpenSSL: 3.5 is OpenSSL's LTS, supported to 2030-04-08 (3.0, Node 20's and 22's, ended 2026-09-07). */
export const MIN_OPENSSL: readonly [number, number] = [3, 5];
/** Set to `1` to start on an unsupported TLS stack anyway, with a warning. */
export const ALLOW_UNSUPPORTED_ENV = 'MM_ALLOW_UNSUPPORTED_TLS_STACK';

export interface TlsStack {
  /** Node's version, e.g. `24.22.3`. */
  readonly node: string;
  /** The OpenSSL Node runs with, e.g. `3.5.9` (Node's own build; a distribution's Node may link the system's). */
  readonly openssl: string;
}

/** The running process's TLS stack. */
export function tlsStack(versions: NodeJS.ProcessVersions = process.versions): TlsStack {
  return { node: versions.node, openssl: versions.openssl ?? 'none' };
}

/** `3.5.9`, `3.0.15+quic`, `24.22.3` -> their leading numbers ([] for none). */
function numbers(v: string): number[] {
  const m = /^(\d+)(?:\.(\d+))?(?:\.(\d+))?/.exec(v);
  return m ? m.slice(1).filter((x) => x !== undefined).map(Number) : [];
}

function atLeast(have: number[], want: readonly number[]): boolean {
  for (let i = 0; i < want.length; i++) {
    const h = have[i] ?? 0;
    if (h !== want[i]) return h > want[i];
  }
  return true;
}

/** Why the gateway must not run on this stack (one sentence with the fix), or undefined when it may. */
export function tlsStackProblem(s: TlsStack): string | undefined {
  const fix = `run the gateway image (Node 24, OpenSSL 3.5) or a Node ${MIN_NODE_MAJOR}+ whose OpenSSL is ${MIN_OPENSSL.join('.')} or later`;
  const node = numbers(s.node);
  if (node.length === 0 || node[0] < MIN_NODE_MAJOR) return `Node ${s.node} is past its end of life (the gateway needs Node ${MIN_NODE_MAJOR} or later): ${fix}`;
  const ssl = numbers(s.openssl);
  if (ssl.length === 0 || !atLeast(ssl, MIN_OPENSSL)) {
    return `OpenSSL ${s.openssl} (inside Node ${s.node}) is past its end of support (the gateway needs OpenSSL ${MIN_OPENSSL.join('.')} or later): ${fix}`;
  }
  return undefined;
}

/** `version`'s lines: the gateway's version, then its TLS stack. */
export function versionText(version: string, s: TlsStack = tlsStack()): string {
  return `${version}\nnode ${s.node}, OpenSSL ${s.openssl}\n`;
}
