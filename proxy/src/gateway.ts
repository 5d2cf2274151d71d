/**
 * The gateway runtime: intercept listener (origin side), tunnel listener (terminus side), admin server.
 *
 *   in-cluster client --(REDIRECT)--> intercept --[mTLS tunnel + header]--> peer tunnel listener --> destination
 *
 * Data path: when both legs of a relay are plaintext TCP and the native addon is built, the relay runs in
 * a pthread with splice(2) (no copies to user space, kernel backpressure, both cores used). With TLS on the
 * tunnel, Node's streams carry the TLS leg with explicit backpressure (pause on a full write buffer,
 * resume on 'drain'): buffering is bounded by the socket high-water marks.
 */
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as http from 'node:http';
import * as net from 'node:net';
import * as tls from 'node:tls';
import { pino, type Logger } from 'pino';
import type { Registry } from 'prom-client';
import { parseProxyConfig, parsePeerIdentityUri, peerIdentityUri, type PeerConfig, type ProxyConfig } from './config';
import { watchConfig, loadConfigFile } from './config-file';
import { createMetrics, type GatewayMetrics } from './metrics';
import { type NativeAddon, type PumpHandle, type PumpResult, type TlsCtx, type TlsHandle, type TlsPhase1, type TlsPhase2, socketFd, stopReading, tryLoadNative, nativeLoadError } from './native';
import { AddressPolicy, normalizeAddress } from './policy';
import { TrustHub } from './trust/hub';
import {
  CONNECTION_ID_BYTES, FRAME_OPEN, FRAME_REPLY, FRAME_TRUST_PUBLISH, FrameReader, ProtocolError, RefusalCode, decodeOpenBody, decodeReplyBody,
  encodeOpen, encodeReply, refusalName, type OpenHeader,
} from './protocol';

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
   * tunnels) or 'js' (Node streams and Node's tls everywhere).
   */
  dataPath?: 'auto' | 'js';
  /**
   * TEST HOOK, not reachable from the config file or the CLI: how to learn a connection's original
   * destination. Default: SO_ORIGINAL_DST from the addon, else the local address (TPROXY semantics).
   */
  originalDestination?: (sock: net.Socket) => { host: string; port: number } | undefined;
  /**
   * TEST HOOK, UNSAFE, not reachable from the config file or the CLI: let loopback destinations through
   * the terminus policy so loopback-only tests can stand a local server in for an in-cluster address.
   */
  unsafeAllowLoopbackDestinations?: boolean;
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

type Side = 'origin' | 'terminus';

interface Tunnel {
  id: string;
  peer: string;
  side: Side;
  startedAt: number;
  lastActivity: number;
  sockets: net.Socket[];
  pump?: PumpHandle;
  /** native TLS relay: tlsStats = [tlsToPlain (rx), plainToTls (tx)] */
  tlsRelay?: TlsHandle;
  /** [tx (towards the peer), rx (from the peer)] */
  bytes: [number, number];
  reported: [number, number];
  /** pump fd order: does aToB mean tx? */
  aToBIsTx: boolean;
  established: boolean;
  finished: boolean;
  finish: (how: 'normal' | 'reset' | 'destroy') => void;
}

const hrNow = () => Date.now();

function newConnectionId(): Buffer { return crypto.randomBytes(CONNECTION_ID_BYTES); }
function idString(b: Buffer): string { return b.toString('hex'); }

/** URI SANs of a peer certificate. */
function uriSans(cert: tls.PeerCertificate | undefined): string[] {
  const s = cert?.subjectaltname;
  if (!s) return [];
  return s.split(/,\s*/).filter((x) => x.startsWith('URI:')).map((x) => x.slice(4));
}

/** The fleet member a certificate names, or an explanation of why it names none. */
export function certificateCluster(cert: tls.PeerCertificate | undefined, fleet: string): { cluster: string } | { error: string } {
  const ids = uriSans(cert).map(parsePeerIdentityUri).filter((x): x is { fleet: string; cluster: string } => !!x);
  if (ids.length === 0) return { error: 'certificate has no spiffe://<fleet>/cluster/<cluster> URI SAN' };
  if (ids.length > 1) return { error: 'certificate names more than one cluster' };
  if (ids[0].fleet !== fleet) return { error: `certificate belongs to fleet '${ids[0].fleet}', not '${fleet}'` };
  return { cluster: ids[0].cluster };
}

function readTls(cfg: ProxyConfig): { ca: Buffer; cert: Buffer; key: Buffer } | undefined {
  if (cfg.tls.mode !== 'mtls') return undefined;
  return { ca: fs.readFileSync(cfg.tls.caFile), cert: fs.readFileSync(cfg.tls.certFile), key: fs.readFileSync(cfg.tls.keyFile) };
}

function listen(server: net.Server, host: string, port: number): Promise<net.AddressInfo> {
  return new Promise((resolve, reject) => {
    const onErr = (e: Error) => reject(e);
    server.once('error', onErr);
    server.listen({ host, port, backlog: 4096 }, () => {
      server.off('error', onErr);
      resolve(server.address() as net.AddressInfo);
    });
  });
}

/** Connect with a deadline. `paused`: the socket must never be read by Node (native relay takes its fd). */
function dial(host: string, port: number, timeoutMs: number, localAddress?: string, paused = false): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect({ host, port, localAddress, allowHalfOpen: true, noDelay: true });
    if (paused) s.pause();
    const t = setTimeout(() => {
      s.destroy();
      reject(Object.assign(new Error(`connect ${host}:${port} timed out after ${timeoutMs} ms`), { code: 'ETIMEDOUT_DIAL' }));
    }, timeoutMs);
    s.once('connect', () => { clearTimeout(t); s.removeAllListeners('error'); resolve(s); });
    s.once('error', (e) => { clearTimeout(t); s.destroy(); reject(e); });
  });
}

export async function startGateway(input: ProxyConfig | unknown, opts: StartGatewayOptions = {}): Promise<GatewayHandle> {
  let cfg: ProxyConfig = parseProxyConfig(input);
  const log = opts.logger ?? pino({ level: process.env.LOG_LEVEL ?? 'info' });
  const native: NativeAddon | undefined = opts.dataPath === 'js' ? undefined : tryLoadNative();
  if (!native) log.warn({ reason: opts.dataPath === 'js' ? 'dataPath=js' : nativeLoadError()?.message }, 'native addon not in use: no SO_ORIGINAL_DST lookup, plaintext relays use streams');
  const tunnels = new Set<Tunnel>();
  const perPeer = new Map<string, number>();
  let pendingHandshakes = 0;
  /** Tunnel connections still in TLS handshake / header exchange (closed on close()). */
  const pendingSockets = new Set<net.Socket>();
  let draining = false;
  let closed = false;
  let rr = 0;

  const flushBytes = (t: Tunnel) => {
    if (t.pump && native && !t.finished) {
      const [ab, ba] = native.pumpStats(t.pump);
      t.bytes = t.aToBIsTx ? [ab, ba] : [ba, ab];
    }
    if (t.tlsRelay && native && !t.finished) {
      const [rx, tx] = native.tlsStats(t.tlsRelay);
      t.bytes = [tx, rx];
    }
    const dtx = t.bytes[0] - t.reported[0], drx = t.bytes[1] - t.reported[1];
    if (dtx > 0) metrics.bytes.inc({ peer: t.peer, direction: 'tx' }, dtx);
    if (drx > 0) metrics.bytes.inc({ peer: t.peer, direction: 'rx' }, drx);
    t.reported = [t.bytes[0], t.bytes[1]];
  };
  const metrics = createMetrics(opts.registry, () => { for (const t of tunnels) flushBytes(t); });
  // trust exchange (issue #10): PUBLISH frames on the tunnel port, the local channel to the trust container
  const trust = new TrustHub({ config: () => cfg, tlsFiles: () => tlsFiles, log, registry: metrics.registry, now: opts.trustClock });
  const FIRST_FRAMES = [FRAME_OPEN, FRAME_TRUST_PUBLISH];

  let policy = new AddressPolicy(cfg, [], !!opts.unsafeAllowLoopbackDestinations);
  let tlsFiles = readTls(cfg);
  /** mTLS in the addon (OpenSSL exported by Node): both handshake and relay run in a pthread per tunnel. */
  const nativeTls = !!native && cfg.tls.mode === 'mtls';
  const makeNativeCtx = (f: { ca: Buffer; cert: Buffer; key: Buffer }) => ({
    server: native!.tlsContext(f.ca, f.cert, f.key, true), client: native!.tlsContext(f.ca, f.cert, f.key, false),
  });
  let nativeCtx: { server: TlsCtx; client: TlsCtx } | undefined = nativeTls ? makeNativeCtx(tlsFiles!) : undefined;
  /** every native TLS session not yet finished (close() cancels them; their final callback closes the sockets) */
  const liveTls = new Set<TlsHandle>();
  /** Start a native TLS session; `on.p1` runs after handshake + first frame, `on.p2` when it is over. */
  const startNativeTls = (raw: net.Socket, isServer: boolean, first: Buffer | null, expectUri: string | null,
    on: { p1: (r: TlsPhase1) => void; p2?: (r: TlsPhase2) => void }): TlsHandle => {
    const h: TlsHandle = native!.tlsStart(isServer ? nativeCtx!.server : nativeCtx!.client, socketFd(raw), isServer,
      cfg.limits.handshakeTimeoutMs, first, cfg.limits.headerMaxBytes, expectUri, (r) => {
        if (r.phase === 1) on.p1(r);
        else { liveTls.delete(h); on.p2?.(r); }
      });
    liveTls.add(h);
    return h;
  };
  const clientTlsOptions = () => ({ ...tlsFiles!, minVersion: 'TLSv1.3' as const, maxVersion: 'TLSv1.3' as const });

  const refuse = (side: Side, reason: string) => metrics.refusals.inc({ reason, side });

  const countTunnel = (peer: string, delta: number) => {
    const n = (perPeer.get(peer) ?? 0) + delta;
    if (n <= 0) perPeer.delete(peer); else perPeer.set(peer, n);
  };
  const capCheck = (peer: string): number => {
    if (tunnels.size >= cfg.limits.maxTunnelsTotal) return RefusalCode.TOTAL_LIMIT;
    if ((perPeer.get(peer) ?? 0) >= cfg.limits.maxTunnelsPerPeer) return RefusalCode.PEER_LIMIT;
    return 0;
  };

  /** Register a tunnel (counts toward caps from now on). */
  const track = (id: string, peer: string, side: Side, sockets: net.Socket[], aToBIsTx: boolean): Tunnel => {
    const t: Tunnel = {
      id, peer, side, startedAt: hrNow(), lastActivity: hrNow(), sockets, bytes: [0, 0], reported: [0, 0], aToBIsTx,
      established: false, finished: false,
      finish: (how) => {
        if (t.finished) return;
        flushBytes(t);
        t.finished = true;
        tunnels.delete(t);
        countTunnel(peer, -1);
        if (t.established) {
          metrics.activeTunnels.dec({ peer, side });
          metrics.tunnelDuration.observe({ peer, side }, (hrNow() - t.startedAt) / 1000);
        }
        for (const s of t.sockets) {
          if (how === 'reset' && !s.destroyed && s instanceof net.Socket && !(s instanceof tls.TLSSocket)) {
            try { s.resetAndDestroy(); continue; } catch { /* fall through */ }
          }
          s.destroy();
        }
        log.info({ conn: id, peer, side, how, txBytes: t.bytes[0], rxBytes: t.bytes[1], ms: hrNow() - t.startedAt }, 'tunnel closed');
        onTunnelGone();
      },
    };
    tunnels.add(t);
    countTunnel(peer, 1);
    return t;
  };
  const markEstablished = (t: Tunnel) => {
    t.established = true;
    metrics.activeTunnels.inc({ peer: t.peer, side: t.side });
    metrics.tunnelsTotal.inc({ peer: t.peer, side: t.side });
  };

  let drainWaiters: (() => void)[] = [];
  const onTunnelGone = () => {
    if (tunnels.size === 0 && drainWaiters.length) { const w = drainWaiters; drainWaiters = []; w.forEach((f) => f()); }
  };

  /** Native splice relay between two plain sockets (both already paused). */
  const relayNative = (t: Tunnel, a: net.Socket, b: net.Socket, prefixAtoB: Buffer | null, prefixBtoA: Buffer | null) => {
    // bytes Node read ahead before the hand-over come after the header leftovers and before the kernel's
    const join = (x: Buffer | null, y: Buffer | null) => (x && y ? Buffer.concat([x, y]) : x ?? y);
    prefixAtoB = join(prefixAtoB, stopReading(a));
    prefixBtoA = join(prefixBtoA, stopReading(b));
    for (const s of [a, b]) s.on('error', () => { /* owned by the pump; errors surface there */ });
    t.pump = native!.startPump(socketFd(a), socketFd(b), prefixAtoB, prefixBtoA, cfg.limits.idleTimeoutMs, (r: PumpResult) => {
      t.bytes = t.aToBIsTx ? [r.aToB, r.bToA] : [r.bToA, r.aToB];
      if (r.reason === 'idle') log.info({ conn: t.id }, 'idle timeout');
      if (r.reason === 'reset' || r.reason === 'error') log.info({ conn: t.id, side: r.side, errno: r.errno }, 'relay ended by a reset/error');
      // the pump already armed SO_LINGER{1,0} on the surviving socket after a reset; reset explicitly too
      t.finish(r.reason === 'reset' || r.reason === 'error' ? 'reset' : 'destroy');
    });
  };

  /**
   * Stream relay (used whenever one leg is TLS). Backpressure: a source is paused while its destination's
   * write buffer is above the high-water mark. Half-close: 'end' on one side becomes end() on the other.
   * Reset: an error on one side resets the other's TCP connection.
   */
  const relayStreams = (t: Tunnel, a: net.Socket, b: net.Socket, rawA: net.Socket, rawB: net.Socket, prefixAtoB: Buffer | null, prefixBtoA: Buffer | null) => {
    let ended = 0;
    const txIndex = (aToB: boolean) => (aToB === t.aToBIsTx ? 0 : 1);
    const one = (src: net.Socket, dst: net.Socket, aToB: boolean) => {
      const k = txIndex(aToB);
      let corked = false;
      const uncork = () => { corked = false; dst.uncork(); };
      src.on('data', (chunk: Buffer) => {
        t.bytes[k] += chunk.length;
        t.lastActivity = hrNow();
        // TLS hands over 16 KiB records one by one: batch the chunks of one read into one writev
        if (!corked) { corked = true; dst.cork(); process.nextTick(uncork); }
        if (!dst.write(chunk)) {
          src.pause();
          dst.once('drain', () => src.resume());
        }
      });
      src.on('end', () => {
        dst.end();
        if (++ended === 2) {
          // both directions finished: close once the last writes are flushed
          const done = () => t.finish('normal');
          if (dst.writableFinished) done(); else dst.once('finish', done);
        }
      });
    };
    if (prefixAtoB?.length) { t.bytes[txIndex(true)] += prefixAtoB.length; b.write(prefixAtoB); }
    if (prefixBtoA?.length) { t.bytes[txIndex(false)] += prefixBtoA.length; a.write(prefixBtoA); }
    one(a, b, true);
    one(b, a, false);
    const onError = (who: 'a' | 'b') => (e: NodeJS.ErrnoException) => {
      if (t.finished) return;
      log.info({ conn: t.id, side: who, err: e.code ?? e.message }, 'relay ended by an error');
      // reset the other side's TCP connection so the reset propagates
      const other = who === 'a' ? rawB : rawA;
      try { other.resetAndDestroy(); } catch { other.destroy(); }
      t.finish('destroy');
    };
    a.on('error', onError('a'));
    b.on('error', onError('b'));
    const onClose = () => { if (!t.finished && ended < 2) setImmediate(() => t.finish('destroy')); };
    a.on('close', onClose);
    b.on('close', onClose);
    a.resume();
    b.resume();
  };

  // ------------------------------------------------------------------ origin side (intercept)

  const originalDestination = (sock: net.Socket): { host: string; port: number } | undefined => {
    if (opts.originalDestination) return opts.originalDestination(sock);
    if (native) {
      const d = native.getOriginalDst(socketFd(sock));
      if (d) return { host: d.address, port: d.port };
    }
    // TPROXY (or no NAT): the local address is the original destination
    if (sock.localAddress && sock.localPort) return { host: normalizeAddress(sock.localAddress), port: sock.localPort };
    return undefined;
  };

  /** Connect to a peer gateway, run TLS (if configured), send OPEN, await REPLY. */
  type NativeOn = { p1: (r: TlsPhase1) => void; p2?: (r: TlsPhase2) => void };
  type Opened = { raw: net.Socket; stream: net.Socket; rest: Buffer; tls?: { h: TlsHandle; on: NativeOn } };
  const openTunnel = async (peer: PeerConfig, header: OpenHeader, usePump: boolean): Promise<Opened> => {
    const started = process.hrtime.bigint();
    const order = peer.gateways.map((_, i) => peer.gateways[(i + rr) % peer.gateways.length]);
    rr++;
    let lastErr: Error = new Error('no gateways');
    for (const gw of order) {
      if (closed) break;
      let raw: net.Socket;
      try {
        raw = await dial(gw.host, gw.port, cfg.limits.dialTimeoutMs, undefined, nativeTls);
      } catch (e) { lastErr = e as Error; continue; }
      try {
        const r = nativeTls ? await handshakeWithPeerNative(raw, peer, header) : await handshakeWithPeer(raw, peer, header, usePump);
        metrics.dialLatency.observe({ target: 'peer' }, Number(process.hrtime.bigint() - started) / 1e9);
        return r;
      } catch (e) {
        if (!nativeTls) raw.destroy(); // a native session closes its socket when its thread is done
        if ((e as { refusal?: number }).refusal !== undefined) throw e; // a definitive answer: do not retry elsewhere
        lastErr = e as Error;
      }
    }
    throw lastErr;
  };

  /** Origin, native mTLS: handshake, identity, OPEN and REPLY run in the addon's thread. */
  const handshakeWithPeerNative = (raw: net.Socket, peer: PeerConfig, header: OpenHeader) => new Promise<Opened>((resolve, reject) => {
    const on: NativeOn = {
      p1: (r) => {
        const fail = (e: Error, tlsFailure = false) => {
          if (tlsFailure) metrics.tlsHandshakeFailures.inc({ side: 'origin' });
          on.p2 = () => raw.destroy();
          native!.tlsCancel(h);
          reject(e);
        };
        if (!r.handshook) return fail(new Error(r.error || 'TLS handshake failed'), true);
        const who = certificateCluster({ subjectaltname: r.uris.map((u) => `URI:${u}`).join(', ') } as tls.PeerCertificate, cfg.fleet);
        if ('error' in who || who.cluster !== peer.cluster) return fail(new Error(`peer gateway identity: ${'error' in who ? who.error : who.cluster}`), true);
        const fr = new FrameReader(cfg.limits.headerMaxBytes, FRAME_REPLY).push(r.frame);
        if (fr.kind !== 'frame') return fail(fr.kind === 'error' ? fr.error : new Error(r.error || 'peer closed before replying'));
        let reply;
        try { reply = decodeReplyBody(fr.body); } catch (e) { return fail(e as Error); }
        if (!reply.connectionId.equals(header.connectionId)) return fail(new Error('reply for another connection id'));
        if (reply.status !== RefusalCode.ACCEPTED) {
          return fail(Object.assign(new Error(`peer refused: ${refusalName(reply.status)} (${reply.reason})`), { refusal: reply.status }));
        }
        resolve({ raw, stream: raw, rest: fr.rest, tls: { h, on } });
      },
      p2: () => raw.destroy(),
    };
    const h = startNativeTls(raw, false, encodeOpen(header), peerIdentityUri(cfg.fleet, peer.cluster), on);
  });

  const handshakeWithPeer = (raw: net.Socket, peer: PeerConfig, header: OpenHeader, usePump: boolean) =>
    new Promise<{ raw: net.Socket; stream: net.Socket; rest: Buffer }>((resolve, reject) => {
      let stream: net.Socket = raw;
      let settled = false;
      const fail = (e: Error) => { if (settled) return; settled = true; clearTimeout(timer); stream.destroy(); raw.destroy(); reject(e); };
      const timer = setTimeout(() => fail(new Error('peer handshake timed out')), cfg.limits.handshakeTimeoutMs);
      const reader = new FrameReader(cfg.limits.headerMaxBytes, FRAME_REPLY);
      const onData = (chunk: Buffer) => {
        const r = reader.push(chunk);
        if (r.kind === 'more') return;
        if (usePump) stopReading(raw); else stream.pause();
        stream.off('data', onData);
        if (r.kind === 'error') return fail(r.error);
        let reply;
        try { reply = decodeReplyBody(r.body); } catch (e) { return fail(e as Error); }
        if (!reply.connectionId.equals(header.connectionId)) return fail(new Error('reply for another connection id'));
        if (reply.status !== RefusalCode.ACCEPTED) {
          return fail(Object.assign(new Error(`peer refused: ${refusalName(reply.status)} (${reply.reason})`), { refusal: reply.status }));
        }
        settled = true;
        clearTimeout(timer);
        stream.removeListener('error', fail);
        resolve({ raw, stream, rest: r.rest });
      };
      const sendOpen = () => {
        stream.on('data', onData);
        stream.write(encodeOpen(header));
      };
      if (cfg.tls.mode === 'mtls') {
        const ts = tls.connect({
          socket: raw, ...clientTlsOptions(), allowHalfOpen: true,
          checkServerIdentity: (_host, cert) => {
            const who = certificateCluster(cert, cfg.fleet);
            if ('error' in who) return new Error(who.error);
            if (who.cluster !== peer.cluster) return new Error(`peer gateway presented ${peerIdentityUri(cfg.fleet, who.cluster)}, expected ${peerIdentityUri(cfg.fleet, peer.cluster)}`);
            return undefined;
          },
        } as tls.ConnectionOptions);
        stream = ts;
        ts.once('secureConnect', sendOpen);
        let secured = false;
        ts.once('secureConnect', () => { secured = true; });
        ts.on('error', (e) => {
          if (!secured) metrics.tlsHandshakeFailures.inc({ side: 'origin' });
          fail(e);
        });
      } else {
        raw.on('error', fail);
        sendOpen();
      }
      raw.on('close', () => fail(new Error('peer closed the connection during the handshake')));
    });

  const onIntercept = (client: net.Socket) => {
    client.on('error', () => { /* handled by the relay, or the socket is just closed */ });
    if (draining || closed) { refuse('origin', 'draining'); client.destroy(); return; }
    let dst: { host: string; port: number } | undefined;
    try { dst = originalDestination(client); } catch (e) { log.warn({ err: (e as Error).message }, 'original destination lookup failed'); }
    const peer = dst ? policy.peerFor(dst.host) : undefined;
    if (!dst || !peer) {
      refuse('origin', 'no_route');
      log.info({ dst, from: client.remoteAddress }, 'refused: destination is not in any peer CIDR');
      try { client.resetAndDestroy(); } catch { client.destroy(); }
      return;
    }
    const cap = capCheck(peer.cluster);
    if (cap) {
      refuse('origin', refusalName(cap));
      try { client.resetAndDestroy(); } catch { client.destroy(); }
      return;
    }
    const connectionId = newConnectionId();
    const id = idString(connectionId);
    const usePump = !!native && cfg.tls.mode === 'plaintext';
    const t = track(id, peer.cluster, 'origin', [client], true);
    client.once('close', () => { if (!t.established) t.finish('destroy'); });
    log.debug({ conn: id, peer: peer.cluster, dst, from: client.remoteAddress }, 'intercepted');
    openTunnel(peer, { connectionId, dstHost: dst.host, dstPort: dst.port, sourceCluster: cfg.cluster }, usePump).then(({ raw, stream, rest, tls: nt }) => {
      if (t.finished || client.destroyed) {
        if (nt) native!.tlsCancel(nt.h); else { stream.destroy(); raw.destroy(); }
        t.finish('destroy');
        return;
      }
      t.sockets.push(raw);
      if (stream !== raw) t.sockets.push(stream);
      markEstablished(t);
      log.info({ conn: id, peer: peer.cluster, dst: `${dst!.host}:${dst!.port}`, from: client.remoteAddress, data: nt ? 'native-tls' : usePump ? 'splice' : 'stream' }, 'tunnel open');
      if (nt) {
        t.tlsRelay = nt.h;
        nt.on.p2 = (r) => {
          t.bytes = [r.plainToTls, r.tlsToPlain];
          if (r.reason !== 'eof') log.info({ conn: id, reason: r.reason, side: r.side, errno: r.errno, err: r.error || undefined }, 'relay ended');
          // a reset or error on one side (a dead peer: EOF without close_notify) resets the other, explicitly
          t.finish(r.reason === 'reset' || r.reason === 'error' ? 'reset' : 'destroy');
        };
        const early = stopReading(client);
        if (early) { log.warn({ conn: id }, 'unexpected bytes buffered before hand-over'); t.finish('reset'); return; }
        native!.tlsContinue(nt.h, null, socketFd(client), cfg.limits.idleTimeoutMs);
      } else if (usePump) relayNative(t, client, raw, null, rest.length ? rest : null);
      else relayStreams(t, client, stream, client, raw, null, rest.length ? rest : null);
    }, (e: Error & { refusal?: number }) => {
      refuse('origin', e.refusal !== undefined ? `peer_${refusalName(e.refusal)}` : 'peer_unreachable');
      log.info({ conn: id, peer: peer.cluster, dst, err: e.message }, 'tunnel refused');
      t.finish('reset');
    });
  };

  // ------------------------------------------------------------------ terminus side (tunnel listener)

  const onTunnelStream = (raw: net.Socket, stream: net.Socket, certCluster: string | undefined, deadline: NodeJS.Timeout, done: () => void) => {
    const usePump = !!native && cfg.tls.mode === 'plaintext';
    const reader = new FrameReader(cfg.limits.headerMaxBytes, FIRST_FRAMES);
    let connectionId: Buffer = Buffer.alloc(CONNECTION_ID_BYTES);
    let finished = false;
    const refuseWith = (code: number, why: string, extra: object = {}) => {
      if (finished) return;
      finished = true;
      clearTimeout(deadline);
      done();
      refuse('terminus', refusalName(code));
      log.info({ conn: idString(connectionId), from: raw.remoteAddress, peer: certCluster, reason: refusalName(code), why, ...extra }, 'refused');
      stream.removeAllListeners('data');
      stream.pause();
      if (!stream.destroyed && stream.writable) {
        stream.end(encodeReply({ status: code, connectionId, reason: why }));
        // always close: do not wait for the peer to cooperate
        setTimeout(() => { stream.destroy(); raw.destroy(); }, 1000).unref();
      } else { stream.destroy(); raw.destroy(); }
    };
    const onData = (chunk: Buffer) => {
      const r = reader.push(chunk);
      if (r.kind === 'more') return;
      if (usePump) stopReading(raw); else stream.pause();
      stream.off('data', onData);
      if (r.kind === 'error') return refuseWith(r.error.code, r.error.message);
      if (r.type === FRAME_TRUST_PUBLISH) {
        const v = trust.onPublish(r.body, certCluster);
        connectionId = v.connectionId;
        if (v.status !== RefusalCode.ACCEPTED) return refuseWith(v.status, v.reason);
        finished = true; clearTimeout(deadline); done();
        stream.end(encodeReply({ status: RefusalCode.ACCEPTED, connectionId, reason: '' }));
        setTimeout(() => { stream.destroy(); raw.destroy(); }, 1000).unref();
        return;
      }
      let h: OpenHeader;
      try { h = decodeOpenBody(r.body); } catch (e) {
        return refuseWith(e instanceof ProtocolError ? e.code : RefusalCode.MALFORMED, (e as Error).message);
      }
      connectionId = h.connectionId;
      const dstText = `${h.dstHost}:${h.dstPort}`;
      if (certCluster !== undefined && h.sourceCluster !== certCluster) {
        return refuseWith(RefusalCode.SOURCE_MISMATCH, `header says '${h.sourceCluster}' but the certificate names '${certCluster}'`, { dst: dstText });
      }
      const peer = cfg.peers.find((p) => p.cluster === h.sourceCluster);
      if (!peer) return refuseWith(RefusalCode.UNKNOWN_PEER, `'${h.sourceCluster}' is not a peer of '${cfg.cluster}'`, { dst: dstText });
      if (draining || closed) return refuseWith(RefusalCode.DRAINING, 'gateway is draining');
      const verdict = policy.checkDestination(h.dstHost, h.dstPort);
      if (!verdict.ok) {
        return refuseWith(verdict.code === 'forbidden' ? RefusalCode.DESTINATION_FORBIDDEN : RefusalCode.DESTINATION_OUTSIDE_CIDR, verdict.why, { dst: dstText });
      }
      const cap = capCheck(peer.cluster);
      if (cap) return refuseWith(cap, 'too many tunnels', { dst: dstText });
      // accepted so far: dial the destination from our in-cluster address
      clearTimeout(deadline);
      finished = true;
      done();
      const id = idString(h.connectionId);
      const t = track(id, peer.cluster, 'terminus', [raw], false);
      if (stream !== raw) t.sockets.push(stream);
      const t0 = process.hrtime.bigint();
      dial(h.dstHost, h.dstPort, cfg.limits.dialTimeoutMs, cfg.dialFrom && net.isIP(cfg.dialFrom) === net.isIP(h.dstHost) ? cfg.dialFrom : undefined, true).then((dstSock) => {
        metrics.dialLatency.observe({ target: 'destination' }, Number(process.hrtime.bigint() - t0) / 1e9);
        t.sockets.push(dstSock);
        dstSock.on('error', () => { /* relay handles */ });
        if (t.finished || stream.destroyed) { t.finish('destroy'); return; }
        stream.write(encodeReply({ status: RefusalCode.ACCEPTED, connectionId: h.connectionId, reason: '' }), (err) => {
          if (err || t.finished) { t.finish('reset'); return; }
          markEstablished(t);
          log.info({ conn: id, peer: peer.cluster, dst: dstText, data: usePump ? 'splice' : 'stream' }, 'tunnel accepted');
          const rest = r.rest.length ? r.rest : null;
          if (usePump) relayNative(t, raw, dstSock, rest, null);
          else relayStreams(t, stream, dstSock, raw, dstSock, rest, null);
        });
      }, (e: NodeJS.ErrnoException) => {
        const timeout = e.code === 'ETIMEDOUT_DIAL';
        const code = timeout ? RefusalCode.DIAL_TIMEOUT : RefusalCode.DIAL_FAILED;
        refuse('terminus', refusalName(code));
        log.info({ conn: id, peer: peer.cluster, dst: dstText, err: e.code ?? e.message }, 'destination dial failed');
        if (!stream.destroyed) stream.end(encodeReply({ status: code, connectionId: h.connectionId, reason: e.code ?? e.message }));
        setTimeout(() => t.finish('destroy'), 1000).unref();
      });
    };
    stream.on('data', onData);
    stream.on('error', () => { if (!finished) { finished = true; clearTimeout(deadline); done(); } stream.destroy(); raw.destroy(); });
    stream.on('end', () => { if (!finished) refuseWith(RefusalCode.MALFORMED, 'connection closed before a complete header'); });
  };

  /** Checks on a decoded OPEN, in order; the peer when it may proceed. */
  const checkOpen = (h: OpenHeader, certCluster: string | undefined): { code: number; why: string } | { peer: PeerConfig } => {
    if (certCluster !== undefined && h.sourceCluster !== certCluster) {
      return { code: RefusalCode.SOURCE_MISMATCH, why: `header says '${h.sourceCluster}' but the certificate names '${certCluster}'` };
    }
    const peer = cfg.peers.find((p) => p.cluster === h.sourceCluster);
    if (!peer) return { code: RefusalCode.UNKNOWN_PEER, why: `'${h.sourceCluster}' is not a peer of '${cfg.cluster}'` };
    if (draining || closed) return { code: RefusalCode.DRAINING, why: 'gateway is draining' };
    const verdict = policy.checkDestination(h.dstHost, h.dstPort);
    if (!verdict.ok) return { code: verdict.code === 'forbidden' ? RefusalCode.DESTINATION_FORBIDDEN : RefusalCode.DESTINATION_OUTSIDE_CIDR, why: verdict.why };
    const cap = capCheck(peer.cluster);
    if (cap) return { code: cap, why: 'too many tunnels' };
    return { peer };
  };

  /** Terminus, native mTLS: the addon's thread does handshake + OPEN; JS decides; the thread replies and relays. */
  const onTunnelNative = (raw: net.Socket, done: () => void) => {
    pendingSockets.delete(raw); // owned by the native session now: close() cancels it through liveTls
    let tunnel: Tunnel | undefined;
    let connectionId: Buffer = Buffer.alloc(CONNECTION_ID_BYTES);
    const on: NativeOn = {
      p1: (r) => {
        done();
        const from = raw.remoteAddress;
        const drop = (reason: string, why: string, tlsFailure: boolean) => {
          if (tlsFailure) metrics.tlsHandshakeFailures.inc({ side: 'terminus' });
          refuse('terminus', reason);
          log.info({ from, reason, why }, 'refused');
          native!.tlsCancel(h);
        };
        const refuseN = (code: number, why: string, extra: object = {}) => {
          refuse('terminus', refusalName(code));
          log.info({ conn: idString(connectionId), from, reason: refusalName(code), why, ...extra }, 'refused');
          native!.tlsContinue(h, encodeReply({ status: code, connectionId, reason: why }), -1, 0);
        };
        if (!r.handshook) return drop(/timed out/.test(r.error) ? 'handshake_timeout' : 'tls_handshake', r.error, true);
        const who = certificateCluster({ subjectaltname: r.uris.map((u) => `URI:${u}`).join(', ') } as tls.PeerCertificate, cfg.fleet);
        if ('error' in who || !cfg.peers.some((p) => p.cluster === who.cluster)) {
          return drop('unknown_peer_certificate', 'error' in who ? who.error : `'${who.cluster}' is not a peer`, true);
        }
        const fr = new FrameReader(cfg.limits.headerMaxBytes, FIRST_FRAMES).push(r.frame);
        if (fr.kind === 'more') {
          if (/timed out/.test(r.error)) return drop('handshake_timeout', r.error, false);
          return drop(refusalName(RefusalCode.MALFORMED), 'connection closed before a complete header', false);
        }
        if (fr.kind === 'error') return refuseN(fr.error.code, fr.error.message);
        if (fr.type === FRAME_TRUST_PUBLISH) {
          const v = trust.onPublish(fr.body, who.cluster);
          connectionId = v.connectionId;
          if (v.status !== RefusalCode.ACCEPTED) return refuseN(v.status, v.reason);
          native!.tlsContinue(h, encodeReply({ status: RefusalCode.ACCEPTED, connectionId, reason: '' }), -1, 0);
          return;
        }
        let hd: OpenHeader;
        try { hd = decodeOpenBody(fr.body); } catch (e) {
          return refuseN(e instanceof ProtocolError ? e.code : RefusalCode.MALFORMED, (e as Error).message);
        }
        connectionId = hd.connectionId;
        const dstText = `${hd.dstHost}:${hd.dstPort}`;
        const v = checkOpen(hd, who.cluster);
        if ('code' in v) return refuseN(v.code, v.why, { dst: dstText });
        const id = idString(hd.connectionId);
        const t = track(id, v.peer.cluster, 'terminus', [raw], false);
        tunnel = t;
        const t0 = process.hrtime.bigint();
        const from4 = cfg.dialFrom && net.isIP(cfg.dialFrom) === net.isIP(hd.dstHost) ? cfg.dialFrom : undefined;
        dial(hd.dstHost, hd.dstPort, cfg.limits.dialTimeoutMs, from4, true).then((dstSock) => {
          metrics.dialLatency.observe({ target: 'destination' }, Number(process.hrtime.bigint() - t0) / 1e9);
          t.sockets.push(dstSock);
          dstSock.on('error', () => { /* the native relay reports */ });
          if (t.finished || closed) { native!.tlsCancel(h); return; }
          markEstablished(t);
          t.tlsRelay = h;
          log.info({ conn: id, peer: v.peer.cluster, dst: dstText, data: 'native-tls' }, 'tunnel accepted');
          native!.tlsContinue(h, encodeReply({ status: RefusalCode.ACCEPTED, connectionId: hd.connectionId, reason: '' }), socketFd(dstSock), cfg.limits.idleTimeoutMs);
        }, (e: NodeJS.ErrnoException) => {
          const code = e.code === 'ETIMEDOUT_DIAL' ? RefusalCode.DIAL_TIMEOUT : RefusalCode.DIAL_FAILED;
          refuse('terminus', refusalName(code));
          log.info({ conn: id, peer: v.peer.cluster, dst: dstText, err: e.code ?? e.message }, 'destination dial failed');
          native!.tlsContinue(h, encodeReply({ status: code, connectionId: hd.connectionId, reason: e.code ?? e.message }), -1, 0);
        });
      },
      p2: (r) => {
        if (tunnel) {
          tunnel.bytes = [r.plainToTls, r.tlsToPlain];
          if (tunnel.established && r.reason !== 'eof') log.info({ conn: tunnel.id, reason: r.reason, side: r.side, errno: r.errno, err: r.error || undefined }, 'relay ended');
          tunnel.finish(r.reason === 'reset' || r.reason === 'error' ? 'reset' : 'destroy');
        } else raw.destroy();
      },
    };
    const h = startNativeTls(raw, true, null, null, on);
  };

  const onTunnelConnection = (raw: net.Socket) => {
    raw.on('error', () => { /* the stream handlers decide */ });
    if (draining || closed) { refuse('terminus', 'draining'); raw.destroy(); return; }
    if (pendingHandshakes >= cfg.limits.maxTunnelsTotal) { refuse('terminus', 'too_many_handshakes'); raw.destroy(); return; }
    pendingHandshakes++;
    pendingSockets.add(raw);
    let counted = true;
    const done = () => { if (counted) { counted = false; pendingHandshakes--; pendingSockets.delete(raw); clearTimeout(deadline); } };
    raw.once('close', done);
    // one deadline for TLS handshake + header: slowloris gets cut here
    const deadline = setTimeout(() => {
      refuse('terminus', 'handshake_timeout');
      if (tunnelServerIsTls && !(raw as { _mmSecure?: boolean })._mmSecure) metrics.tlsHandshakeFailures.inc({ side: 'terminus' });
      log.info({ from: raw.remoteAddress }, 'refused: handshake/header timeout');
      done();
      raw.destroy();
    }, cfg.limits.handshakeTimeoutMs);
    (raw as { _mmDeadline?: NodeJS.Timeout; _mmDone?: () => void })._mmDeadline = deadline;
    (raw as { _mmDone?: () => void })._mmDone = done;
    if (nativeTls) {
      // the native session enforces handshakeTimeoutMs itself; the JS deadline must not close an fd a thread uses
      clearTimeout(deadline);
      onTunnelNative(raw, done);
      return;
    }
    if (!tunnelServerIsTls) onTunnelStream(raw, raw, undefined, deadline, done);
  };

  const tunnelServerIsTls = cfg.tls.mode === 'mtls';
  let tunnelServer: net.Server;
  const serverTlsOptions = () => ({
    ...tlsFiles!, minVersion: 'TLSv1.3' as const, maxVersion: 'TLSv1.3' as const, requestCert: true, rejectUnauthorized: true,
  });
  if (tunnelServerIsTls && !nativeTls) {
    const srv = tls.createServer({ ...serverTlsOptions(), allowHalfOpen: true, handshakeTimeout: cfg.limits.handshakeTimeoutMs, pauseOnConnect: false });
    srv.on('connection', onTunnelConnection);
    srv.on('secureConnection', (ts: tls.TLSSocket) => {
      const raw = (ts as unknown as { _parent: net.Socket })._parent;
      (raw as { _mmSecure?: boolean })._mmSecure = true;
      const deadline = (raw as { _mmDeadline?: NodeJS.Timeout })._mmDeadline!;
      const done = (raw as { _mmDone?: () => void })._mmDone!;
      if (!ts.authorized) {
        metrics.tlsHandshakeFailures.inc({ side: 'terminus' });
        refuse('terminus', 'tls_unauthorized');
        clearTimeout(deadline); done(); ts.destroy(); raw.destroy();
        return;
      }
      const who = certificateCluster(ts.getPeerCertificate(), cfg.fleet);
      if ('error' in who || !cfg.peers.some((p) => p.cluster === who.cluster)) {
        metrics.tlsHandshakeFailures.inc({ side: 'terminus' });
        refuse('terminus', 'unknown_peer_certificate');
        log.info({ from: raw.remoteAddress, why: 'error' in who ? who.error : `'${who.cluster}' is not a peer` }, 'refused peer certificate');
        clearTimeout(deadline); done(); ts.destroy(); raw.destroy();
        return;
      }
      onTunnelStream(raw, ts, who.cluster, deadline, done);
    });
    srv.on('tlsClientError', (e: Error, ts: tls.TLSSocket) => {
      metrics.tlsHandshakeFailures.inc({ side: 'terminus' });
      refuse('terminus', 'tls_handshake');
      const raw = (ts as unknown as { _parent?: net.Socket })._parent;
      log.info({ from: raw?.remoteAddress, err: e.message }, 'TLS handshake failed');
      if (raw) { clearTimeout((raw as { _mmDeadline?: NodeJS.Timeout })._mmDeadline); (raw as { _mmDone?: () => void })._mmDone?.(); raw.destroy(); }
      ts.destroy();
    });
    tunnelServer = srv;
  } else {
    tunnelServer = net.createServer({ allowHalfOpen: true, noDelay: true, pauseOnConnect: nativeTls });
    tunnelServer.on('connection', onTunnelConnection);
  }
  tunnelServer.on('error', (e) => log.error({ err: e.message }, 'tunnel listener error'));

  const interceptServer = net.createServer({ allowHalfOpen: true, pauseOnConnect: true, noDelay: true }, onIntercept);
  interceptServer.on('error', (e) => log.error({ err: e.message }, 'intercept listener error'));

  // ------------------------------------------------------------------ admin

  let ready = false;
  const admin = http.createServer((req, res) => {
    const url = (req.url ?? '/').split('?')[0];
    if (url === '/healthz') { res.writeHead(200, { 'content-type': 'text/plain' }).end('ok\n'); return; }
    if (url === '/readyz') {
      const ok = ready && !draining && !closed;
      res.writeHead(ok ? 200 : 503, { 'content-type': 'text/plain' }).end(ok ? 'ready\n' : draining ? 'draining\n' : 'not ready\n');
      return;
    }
    if (url === '/trust') {
      res.writeHead(trust.enabled ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(trust.enabled ? trust.table.toJSON(trust.clock()) : { error: 'no trust section in the config' }, null, 2) + '\n');
      return;
    }
    if (url === '/metrics') {
      metrics.registry.metrics().then((body) => {
        res.writeHead(200, { 'content-type': metrics.registry.contentType }).end(body);
      }, (e: Error) => { res.writeHead(500).end(e.message); });
      return;
    }
    res.writeHead(404).end('not found\n');
  });

  // JS relays: idle timeout sweep (the native relay times itself)
  const sweeper = setInterval(() => {
    const now = hrNow();
    for (const t of tunnels) {
      if (t.established && !t.pump && !t.tlsRelay && now - t.lastActivity > cfg.limits.idleTimeoutMs) {
        log.info({ conn: t.id }, 'idle timeout');
        t.finish('destroy');
      }
    }
  }, Math.max(50, Math.min(5000, Math.floor(cfg.limits.idleTimeoutMs / 4))));
  sweeper.unref();

  let addrs: GatewayAddresses;
  try {
    const [intercept, tunnel, adminAddr] = await Promise.all([
      listen(interceptServer, cfg.listen.intercept.host, cfg.listen.intercept.port),
      listen(tunnelServer, cfg.listen.tunnel.host, cfg.listen.tunnel.port),
      listen(admin, cfg.listen.admin.host, cfg.listen.admin.port),
    ]);
    addrs = { intercept, tunnel, admin: adminAddr };
  } catch (e) {
    clearInterval(sweeper);
    for (const s of [interceptServer, tunnelServer, admin]) if (s.listening) s.close();
    throw new Error(`cannot listen: ${(e as Error).message}`);
  }
  try { await trust.start(); } catch (e) {
    clearInterval(sweeper);
    for (const s of [interceptServer, tunnelServer, admin]) if (s.listening) s.close();
    throw new Error(`cannot open the trust channel: ${(e as Error).message}`);
  }
  ready = true;
  log.info({ cluster: cfg.cluster, fleet: cfg.fleet, tls: cfg.tls.mode, intercept: addrs.intercept, tunnel: addrs.tunnel, admin: addrs.admin, dataPath: native ? 'native-splice-for-plaintext' : 'streams', peers: cfg.peers.map((p) => p.cluster) }, 'gateway listening');

  // ------------------------------------------------------------------ reload

  const reload = (next: unknown): boolean => {
    try {
      const n = parseProxyConfig(next);
      const fixed = (c: ProxyConfig) => JSON.stringify([c.fleet, c.cluster, c.listen, c.tls.mode]);
      if (fixed(n) !== fixed(cfg)) throw new Error('fleet, cluster, listen addresses and tls.mode cannot change at run time: restart the gateway');
      const files = readTls(n);
      const nextPolicy = new AddressPolicy(n, [], !!opts.unsafeAllowLoopbackDestinations);
      const nextNativeCtx = files && nativeTls ? makeNativeCtx(files) : nativeCtx;
      if (files && tunnelServerIsTls && !nativeTls) {
        (tunnelServer as tls.Server).setSecureContext({ ...files, minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' });
      }
      nativeCtx = nextNativeCtx;
      cfg = n;
      tlsFiles = files;
      policy = nextPolicy;
      metrics.configReloads.inc({ result: 'success' });
      log.info({ peers: n.peers.map((p) => p.cluster), tunnelsInFlight: tunnels.size }, 'config reloaded');
      return true;
    } catch (e) {
      metrics.configReloads.inc({ result: 'failure' });
      log.error({ err: (e as Error).message }, 'config reload rejected; keeping the previous config');
      return false;
    }
  };

  const stopWatching = opts.configPath
    ? watchConfig(opts.configPath, opts.reloadIntervalMs ?? 2000, () => {
      let next: ProxyConfig;
      try { next = loadConfigFile(opts.configPath!); } catch (e) {
        metrics.configReloads.inc({ result: 'failure' });
        log.error({ err: (e as Error).message }, 'config reload rejected; keeping the previous config');
        return;
      }
      reload(next);
    })
    : () => undefined;

  const stopListening = () => {
    interceptServer.close();
    tunnelServer.close();
  };

  const close = async () => {
    if (closed) return;
    closed = true;
    ready = false;
    stopWatching();
    clearInterval(sweeper);
    stopListening();
    await trust.close();
    for (const s of [...pendingSockets]) { (s as { _mmDone?: () => void })._mmDone?.(); s.destroy(); }
    for (const h of [...liveTls]) native!.tlsCancel(h); // their final callbacks close the sockets
    for (const t of [...tunnels]) {
      if (t.pump && native) native.pumpCancel(t.pump); // the pump callback finishes the tunnel
      else if (!t.tlsRelay) t.finish('destroy');
    }
    // wait (bounded) for native threads to report back so no thread outlives its sockets
    const until = Date.now() + 5000;
    while ((tunnels.size > 0 || liveTls.size > 0) && Date.now() < until) await new Promise((r) => setTimeout(r, 10));
    for (const t of [...tunnels]) t.finish('destroy');
    admin.closeAllConnections();
    await new Promise<void>((r) => admin.close(() => r()));
    log.info('gateway closed');
  };

  const drain = async (timeoutMs = cfg.limits.drainTimeoutMs) => {
    if (closed) return;
    draining = true;
    metrics.draining.set(1);
    stopListening();
    log.info({ tunnels: tunnels.size, timeoutMs }, 'draining');
    if (tunnels.size > 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, timeoutMs);
        drainWaiters.push(() => { clearTimeout(timer); resolve(); });
      });
    }
    if (tunnels.size > 0) log.warn({ tunnels: tunnels.size }, 'drain timeout: closing the remaining tunnels');
    await close();
  };

  return {
    registry: metrics.registry,
    metrics,
    config: () => cfg,
    addresses: () => addrs,
    reload,
    activeTunnels: () => tunnels.size,
    trust,
    nativeDataPath: !!native,
    drain,
    close,
  };
}
