/**
 * The local channel between the network-facing runtime and its trust container: newline-delimited
 * JSON over a unix socket in an emptyDir only the two containers mount (socket mode 0600, both run as
 * the same uid). The runtime never sees the Kubernetes token; the trust container never listens on a
 * network. Lines longer than MAX_LINE end the connection.
 */
import * as net from 'node:net';

export const MAX_LINE = 256 * 1024;

/** trust container -> runtime */
export type ToRuntime =
  /** The local cluster's own CA bundle (PEM certificates) to publish; `sequence` grows with every change. */
  | { type: 'own'; certs: string[]; sequence: number }
  /** `kubevirt-external-ca` was written (SHA-256 of the certificates it now holds). */
  | { type: 'written'; at: number; fingerprints: string[] }
  /** What the local `kubevirt-ca` holds now (SHA-256 of every certificate). */
  | { type: 'local'; fingerprints: string[]; at: number }
  /** What the trust container found `kubevirt-external-ca` to be (agent.ts ExternalCaState). */
  | { type: 'external-ca'; state: 'ok' | 'missing' | 'invisible-to-virt-operator' | 'api-error'; at: number }
  /** Writing `kubevirt-external-ca` failed (API error, the ConfigMap missing, conflicts without end); retried. */
  | { type: 'write-failed'; at: number; reason: string }
  /** The trust container's re-check refused a bundle the runtime handed over, or a write over the size cap (agent.ts). */
  | { type: 'refused'; reason: AgentRefusal; at: number };

/**
 * Why the trust container refused what the runtime handed over (stable names: log field and metric label).
 * The trust_* names are the wire's refusal names for the same rule (protocol.ts RefusalCode).
 */
export const AGENT_REFUSALS = [
  'malformed', 'unknown_peer', 'trust_count', 'trust_not_valid', 'trust_not_ca', 'trust_not_self', 'configmap_too_large',
] as const;
export type AgentRefusal = (typeof AGENT_REFUSALS)[number];

/** runtime -> trust container: the current bundle of one peer, as accepted from that peer itself. */
export type ToTrust = { type: 'peer'; cluster: string; certs: string[]; sequence: number; receivedAt: number };

/** Read NDJSON messages from a socket; malformed or oversized input closes it. */
export function onLines<T>(sock: net.Socket, onMessage: (m: T) => void): void {
  let buf = '';
  sock.setEncoding('utf8');
  sock.on('data', (chunk: string) => {
    buf += chunk;
    if (buf.length > MAX_LINE && !buf.includes('\n')) { sock.destroy(); return; }
    let i: number;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      let m: T;
      try { m = JSON.parse(line) as T; } catch { sock.destroy(); return; }
      onMessage(m);
    }
  });
}

export function sendLine(sock: net.Socket, m: ToRuntime | ToTrust): void {
  if (!sock.destroyed && sock.writable) sock.write(`${JSON.stringify(m)}\n`);
}
