/** What the origin and terminus sides read from the gateway that owns them (current config, shared state). */
import type { Logger } from 'pino';
import type { ProxyConfig } from './config';
import type { GatewayMetrics } from './metrics';
import type { NativeAddon } from './native';
import type { PeerBudgets } from './peer-budgets';
import type { AddressPolicy } from './policy';
import type { NativeTlsSessions, TlsFiles } from './tls-native-session';
import type { TrustHub } from './trust/hub';
import type { Side, TunnelTable } from './tunnel-table';

export interface GatewayContext {
  /** The config in force now (a reload replaces it; read it at each use). */
  readonly cfg: ProxyConfig;
  readonly policy: AddressPolicy;
  /** This gateway's certificate, key and CA; undefined in plaintext mode. */
  readonly tlsFiles: TlsFiles | undefined;
  readonly log: Logger;
  readonly metrics: GatewayMetrics;
  /** The addon (original destination lookup, splice relay), when loaded and allowed. */
  readonly native: NativeAddon | undefined;
  /** Native mTLS sessions: set when the addon is in use and the tunnel is mTLS. */
  readonly nativeTls: NativeTlsSessions | undefined;
  readonly table: TunnelTable;
  /** Bandwidth budgets per peer (config `bandwidth`): hand `budgets.for(peer)` to every relay toward that peer. */
  readonly budgets: PeerBudgets;
  /** The trust exchange: PUBLISH frames arriving on the tunnel port go to it (trust/hub.ts). */
  readonly trust: TrustHub;
  /** Draining or closed: no new tunnels. */
  readonly stopping: boolean;
  readonly closed: boolean;
  /** Count a refused connection. */
  refuse(side: Side, reason: string): void;
}

/** Both plaintext legs of a relay can be spliced by the addon. */
export function splices(ctx: GatewayContext): boolean {
  return !!ctx.native && ctx.cfg.tls.mode === 'plaintext';
}
