/**
 * The gateway runtime: intercept listener (origin side), tunnel listener (terminus side), admin server.
 *
 *   in-cluster client --(REDIRECT)--> intercept --[mTLS tunnel + header]--> peer tunnel listener --> destination
 *
 * Data path: when both legs of a relay are plaintext TCP and the native addon is built, the relay runs on
 * the addon's event pool with splice(2) (native/relaypool.c: min(2, CPUs) epoll threads; no copies to user
 * space, kernel backpressure). With TLS on the
 * tunnel, Node's streams carry the TLS leg with explicit backpressure (pause on a full write buffer,
 * resume on 'drain'): buffering is bounded by the socket high-water marks.
 *
 * This file holds the `Gateway` (config, reload, drain, close) and wires its parts: origin.ts, terminus.ts,
 * tunnel-table.ts, relay.ts, tls-native-session.ts, admin.ts.
 */
import * as fs from 'node:fs';
import type * as http from 'node:http';
import type * as net from 'node:net';
import { pino, type Logger } from 'pino';
import type { Registry } from 'prom-client';
import { createAdminServer, type Readiness } from './admin';
import { hasBandwidth, parseProxyConfig, type ProxyConfig } from './config';
import { watchConfig, loadConfigFile } from './config-file';
import type { GatewayContext } from './context';
import { createMetrics, interfaceAddresses, type GatewayMetrics } from './metrics';
import { type NativeAddon, tryLoadNative, nativeLoadError } from './native';
import { Origin, type Destination } from './origin';
import { AddressPolicy } from './policy';
import { listenAdmin } from './admin-listen';
import { RecentErrors, runtimeStatus } from './runtime-status';
import { listenBound } from './sockets';
import { Terminus } from './terminus';
import { TrustHub } from './trust/hub';
import { PeerBudgets } from './peer-budgets';
import { PeerProber } from './peer-probe';
import { NativeTlsSessions, type TlsFiles } from './tls-native-session';
import { TunnelTable, type Side } from './tunnel-table';
import { tlsStack } from './tls-stack';

export interface StartGatewayOptions {
  /** Clock for judging the validity of published CA certificates (tests simulate weeks). @default Date.now */
  trustClock?: () => number;
  logger?: Logger;
  /** Watch this file (the mounted ConfigMap) and reload the peer table when it changes. */
  configPath?: string;
  /** Content-hash poll interval for `configPath` (a directory watch triggers earlier checks too). Default 2000. */
  reloadIntervalMs?: number;
  /** Registry to register metrics in (default: a fresh one, so several gateways can live in one process). */
  registry?: Registry;
  /**
   * Data path: 'auto' (addon built: splice relay for plaintext tunnels, native OpenSSL relay for mTLS
   * tunnels) or 'js' (plaintext only: Node streams, as when the addon does not load; mTLS refuses to start).
   */
  dataPath?: 'auto' | 'js';
  /**
   * TEST HOOK, not reachable from the config file or the CLI: how to learn a connection's original
   * destination. Default: SO_ORIGINAL_DST from the addon, else the local address (TPROXY semantics).
   */
  originalDestination?: (sock: net.Socket) => Destination | undefined;
  /**
   * TEST HOOK, UNSAFE, not reachable from the config file or the CLI: let loopback destinations through
   * the terminus policy so loopback-only tests can stand a local server in for an in-cluster address.
   */
  unsafeAllowLoopbackDestinations?: boolean;
  /**
   * TEST HOOK, not reachable from the config file or the CLI: the addresses on this pod's interfaces (for
   * `mm_proxy_address_held` and `/status`), so a loopback test can stand in for the replica holding the VIP.
   */
  interfaceAddresses?: () => Set<string>;
}

export interface GatewayAddresses { intercept: net.AddressInfo; tunnel: net.AddressInfo; admin: net.AddressInfo }

export interface GatewayHandle {
  readonly registry: Registry;
  readonly metrics: GatewayMetrics;
  config(): ProxyConfig;
  addresses(): GatewayAddresses;
  /** Apply a new config (object or already parsed); false (old config kept, logged, counted) when invalid. */
  reload(next: unknown): boolean;
  activeTunnels(): number;
  /** The trust exchange (table, publication); idle when the config has no `trust` section. */
  readonly trust: TrustHub;
  /** True when the data path of plaintext relays is the native splice pump. */
  readonly nativeDataPath: boolean;
  /** Stop accepting, let tunnels finish for up to `timeoutMs` (default limits.drainTimeoutMs), then close. */
  drain(timeoutMs?: number): Promise<void>;
  /** Stop everything now. */
  close(): Promise<void>;
}

function readTls(cfg: ProxyConfig): TlsFiles | undefined {
  if (cfg.tls.mode === 'plaintext') return undefined;
  return { ca: fs.readFileSync(cfg.tls.caFile), cert: fs.readFileSync(cfg.tls.certFile), key: fs.readFileSync(cfg.tls.keyFile) };
}

/**
 * Node's tls does not say whether a stream ended with close_notify (it treats a bare TCP EOF as a clean
 * end), so on that path a dead peer's cut stream would look complete (issue 14): mTLS runs on the native
 * relay only, and there is no Node-tls data path.
 */
const BANDWIDTH_NEEDS_NATIVE = 'bandwidth (a budget per peer) needs the native addon: only its splice relay enforces it';
const MTLS_NEEDS_NATIVE = 'tls.mode mtls needs the native addon (the Node tls data path cannot tell a cut stream from a clean end)';

function loadAddon(opts: StartGatewayOptions, log: Logger, cfg: ProxyConfig): NativeAddon | undefined {
  const native = opts.dataPath === 'js' ? undefined : tryLoadNative();
  if (!native && cfg.tls.mode !== 'plaintext') throw new Error(MTLS_NEEDS_NATIVE + (opts.dataPath === 'js' ? ' (dataPath is js)' : `: ${nativeLoadError()?.message}`));
  if (!native && hasBandwidth(cfg)) throw new Error(BANDWIDTH_NEEDS_NATIVE + (opts.dataPath === 'js' ? ' (dataPath is js)' : `: ${nativeLoadError()?.message}`));
  if (!native) {
    log.warn({ reason: opts.dataPath === 'js' ? 'dataPath=js' : nativeLoadError()?.message },
      'native addon not in use: no SO_ORIGINAL_DST lookup, plaintext relays use streams');
  }
  return native;
}

export class Gateway implements GatewayContext {
  cfg: ProxyConfig;
  policy: AddressPolicy;
  tlsFiles: TlsFiles | undefined;
  readonly log: Logger;
  readonly metrics: GatewayMetrics;
  readonly native: NativeAddon | undefined;
  /** mTLS in the addon (OpenSSL exported by Node): both handshake and relay run in a pthread per tunnel. */
  readonly nativeTls: NativeTlsSessions | undefined;
  readonly table: TunnelTable;
  readonly trust: TrustHub;
  readonly budgets: PeerBudgets;
  private readonly origin: Origin;
  private readonly terminus: Terminus;
  private readonly admin: http.Server;
  /** The admin `/probe`: each peer's gateways probed on demand, cached, one probe per peer in flight. */
  private readonly prober = new PeerProber(this);
  /** The last refusals and resets, for the admin `/status`. */
  private readonly errors = new RecentErrors();
  /** JS relays: idle timeout sweep (the native relays time themselves) */
  private readonly sweeper: NodeJS.Timeout;
  private stopWatching: () => void = () => undefined;
  private addrs?: GatewayAddresses;
  private ready = false;
  private isDraining = false;
  private isClosed = false;

  constructor(cfg: ProxyConfig, private readonly opts: StartGatewayOptions = {}) {
    this.cfg = cfg;
    this.log = opts.logger ?? pino({ level: process.env.LOG_LEVEL ?? 'info' });
    this.native = loadAddon(opts, this.log, cfg);
    const here = opts.interfaceAddresses ?? interfaceAddresses;
    this.budgets = new PeerBudgets(this.native, () => this.cfg);
    this.metrics = createMetrics(opts.registry, () => this.table.flushAll(), true, () => this.cfg.ownAddresses, here, () => this.budgets.snapshot());
    this.table = new TunnelTable(this.metrics, this.log, this.native);
    this.table.onReset = (peer, side) => this.errors.record(side, 'reset', peer);
    this.policy = new AddressPolicy(cfg, [], !!opts.unsafeAllowLoopbackDestinations);
    this.tlsFiles = readTls(cfg);
    this.nativeTls = this.native && cfg.tls.mode !== 'plaintext' ? new NativeTlsSessions(this.native, this.tlsFiles!, cfg.tls.mode === 'mtls-splice') : undefined;
    this.trust = new TrustHub({ config: () => this.cfg, tlsFiles: () => this.tlsFiles, log: this.log, registry: this.metrics.registry, now: opts.trustClock });
    this.terminus = new Terminus(this);
    this.origin = new Origin(this, opts.originalDestination);
    this.admin = createAdminServer(this.metrics, () => this.readiness(), {
      '/trust': () => (this.trust.enabled ? this.trust.table.toJSON(this.trust.clock()) : undefined),
      '/probe': () => this.prober.report(),
      '/status': () => runtimeStatus({
        cluster: this.cfg.cluster, readiness: this.readiness(), ownAddresses: this.cfg.ownAddresses, here: here(),
        peers: this.cfg.peers.map((p) => p.cluster), tunnels: this.table.all(), errors: this.errors,
        published: this.trust.enabled ? this.trust.table.toJSON(this.trust.clock()).own.lastPublished : undefined,
      }),
    }, this.log);
    const idleMs = cfg.limits.idleTimeoutMs;
    this.sweeper = setInterval(() => this.table.sweepIdle(this.cfg.limits.idleTimeoutMs), Math.max(50, Math.min(5000, Math.floor(idleMs / 4))));
    this.sweeper.unref();
  }

  get stopping(): boolean { return this.isDraining || this.isClosed; }
  get closed(): boolean { return this.isClosed; }

  refuse(side: Side, reason: string): void { this.metrics.refusals.inc({ reason, side }); this.errors.record(side, reason); }

  private readiness(): Readiness {
    if (this.ready && !this.stopping) return 'ready';
    return this.isDraining ? 'draining' : 'not ready';
  }

  /** Bind the three listeners, then watch the config file (if any). */
  async start(): Promise<void> {
    const { cfg } = this;
    const servers = [this.origin.server, this.terminus.server, this.admin];
    // every listen settles before a failure is handled: one that succeeds after another failed is closed too
    const bound = await Promise.allSettled([
      listenBound(this.origin.server, cfg.listen.intercept, this.native, 'listen.intercept'),
      listenBound(this.terminus.server, cfg.listen.tunnel, this.native, 'listen.tunnel'),
      listenAdmin(this.admin, cfg.listen.admin, this.native),
    ]);
    const failed = bound.find((b): b is PromiseRejectedResult => b.status === 'rejected');
    if (failed) {
      clearInterval(this.sweeper);
      for (const s of servers) if (s.listening) s.close();
      throw new Error(`cannot listen: ${(failed.reason as Error).message}`);
    }
    const [intercept, tunnel, admin] = bound.map((b) => (b as PromiseFulfilledResult<net.AddressInfo>).value);
    this.addrs = { intercept, tunnel, admin };
    try { await this.trust.start(); } catch (e) {
      clearInterval(this.sweeper);
      for (const s of servers) if (s.listening) s.close();
      throw new Error(`cannot open the trust channel: ${(e as Error).message}`);
    }
    this.ready = true;
    const a = this.addrs;
    this.log.info({
      cluster: cfg.cluster, fleet: cfg.fleet, tls: cfg.tls.mode, intercept: a.intercept, tunnel: a.tunnel, admin: a.admin,
      dataPath: this.native ? 'native-splice-for-plaintext' : 'streams', peers: cfg.peers.map((p) => p.cluster), ...tlsStack(),
    }, 'gateway listening');
    if (this.opts.configPath) this.stopWatching = this.watch(this.opts.configPath);
  }

  private watch(configPath: string): () => void {
    return watchConfig(configPath, this.opts.reloadIntervalMs ?? 2000, () => {
      let next: ProxyConfig;
      try { next = loadConfigFile(configPath); } catch (e) {
        this.metrics.configReloads.inc({ result: 'failure' });
        this.log.error({ err: (e as Error).message }, 'config reload rejected; keeping the previous config');
        return;
      }
      this.reload(next);
    });
  }

  /** Apply a new config; false (old config kept, logged, counted) when invalid. */
  reload(next: unknown): boolean {
    try {
      const n = parseProxyConfig(next);
      const fixed = (c: ProxyConfig) => JSON.stringify([c.fleet, c.cluster, c.listen, c.tls.mode]);
      if (fixed(n) !== fixed(this.cfg)) throw new Error('fleet, cluster, listen addresses and tls.mode cannot change at run time: restart the gateway');
      if (hasBandwidth(n) && !this.native) throw new Error(BANDWIDTH_NEEDS_NATIVE);
      const files = readTls(n);
      const nextPolicy = new AddressPolicy(n, [], !!this.opts.unsafeAllowLoopbackDestinations);
      const nextContexts = files && this.nativeTls ? this.nativeTls.makeContexts(files) : undefined;
      if (nextContexts) this.nativeTls!.useContexts(nextContexts);
      this.cfg = n;
      this.tlsFiles = files;
      this.policy = nextPolicy;
      this.metrics.configReloads.inc({ result: 'success' });
      this.log.info({ peers: n.peers.map((p) => p.cluster), tunnelsInFlight: this.table.size }, 'config reloaded');
      return true;
    } catch (e) {
      this.metrics.configReloads.inc({ result: 'failure' });
      this.log.error({ err: (e as Error).message }, 'config reload rejected; keeping the previous config');
      return false;
    }
  }

  private stopListening(): void {
    this.origin.server.close();
    this.terminus.server.close();
  }

  /** Stop everything now. */
  async close(): Promise<void> {
    if (this.isClosed) return;
    this.isClosed = true;
    this.ready = false;
    this.stopWatching();
    clearInterval(this.sweeper);
    this.stopListening();
    await this.trust.close();
    this.terminus.closePending();
    this.nativeTls?.cancelAll(); // their final callbacks close the sockets
    for (const t of this.table.all()) {
      if (t.pump && this.native) this.native.pumpCancel(t.pump); // the pump callback finishes the tunnel
      else if (!t.tlsRelay) t.finish('reset'); // a forced end is a reset, never a FIN
    }
    // wait (bounded) for native threads to report back so no thread outlives its sockets
    const until = Date.now() + 5000;
    while ((this.table.size > 0 || (this.nativeTls?.size ?? 0) > 0) && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    for (const t of this.table.all()) t.finish('reset');
    this.admin.closeAllConnections();
    await new Promise<void>((r) => this.admin.close(() => r()));
    this.log.info('gateway closed');
  }

  /** Stop accepting, let tunnels finish for up to `timeoutMs`, then close. */
  async drain(timeoutMs = this.cfg.limits.drainTimeoutMs): Promise<void> {
    if (this.isClosed) return;
    this.isDraining = true;
    this.metrics.draining.set(1);
    this.stopListening();
    this.log.info({ tunnels: this.table.size, timeoutMs }, 'draining');
    await this.table.whenEmpty(timeoutMs);
    if (this.table.size > 0) this.log.warn({ tunnels: this.table.size }, 'drain timeout: closing the remaining tunnels');
    await this.close();
  }

  /** The public handle (what `startGateway` returns). */
  handle(): GatewayHandle {
    return {
      registry: this.metrics.registry,
      metrics: this.metrics,
      config: () => this.cfg,
      addresses: () => this.addrs!,
      reload: (next) => this.reload(next),
      activeTunnels: () => this.table.size,
      trust: this.trust,
      nativeDataPath: !!this.native,
      drain: (timeoutMs) => this.drain(timeoutMs),
      close: () => this.close(),
    };
  }
}

export async function startGateway(input: ProxyConfig | unknown, opts: StartGatewayOptions = {}): Promise<GatewayHandle> {
  const gw = new Gateway(parseProxyConfig(input), opts);
  await gw.start();
  return gw.handle();
}
