/**
 * The gateway config's `trust` section: where the trust container reaches the runtime, and how often
 * the own CA bundle is re-published. Absent: the gateway exchanges no trust (PUBLISH is refused with
 * TRUST_DISABLED). Pure zod.
 */
import { z } from 'zod';

/** Default path of the local channel (a unix socket in an emptyDir shared by runtime and trust container). */
export const DEFAULT_TRUST_SOCKET = '/run/migration-mesh/trust.sock';

export const trustConfigSchema = z.object({
  /**
   * Unix socket the runtime listens on for its trust container (mode 0600): an absolute path, never a TCP
   * port (Node would read a number-like string as one: a listener on every interface, issue 49).
   */
  socket: z.string().regex(/^\/[^\0]*[^/\0]$/, { message: 'must be an absolute path of a unix socket (e.g. /run/migration-mesh/trust.sock)' })
    .default(DEFAULT_TRUST_SOCKET),
  /** Re-publish the own bundle to every peer this often (besides on every change). */
  repushIntervalMs: z.number().int().min(1000).max(86_400_000).default(300_000),
  /** Wait between two publications to one peer gateway after a failure (doubles up to repushIntervalMs). */
  retryMs: z.number().int().min(100).default(1000),
}).strict();

export type TrustConfig = z.infer<typeof trustConfigSchema>;
