/**
 * The runtime's trust table: the own bundle it publishes, and per peer the last bundle accepted from
 * that peer itself, with fingerprints, NotAfter, the last write the trust container reported and an
 * expiry warning. Judges an incoming PUBLISH (identity, relay, certificates, sequence). No I/O.
 */
import { RefusalCode, TRUST_SEQUENCE_AHEAD_MS, TrustPublish } from '../protocol';
import { CaInfo, checkBundle } from './x509';

export interface CertView { sha256: string; subject: string; notBefore: string; notAfter: string }

export interface PeerTrustRow {
  cluster: string;
  /** ISO time of the last accepted PUBLISH from this peer. */
  lastReceived?: string;
  sequence?: string;
  certs: CertView[];
  /** Every certificate of the peer's bundle is in the local kubevirt-ca now. */
  trustedLocally: boolean;
  lastRefusal?: { at: string; reason: string };
  /** A peer CA expires before the next publication we expect from it. */
  warning?: string;
}

export interface TrustTableView {
  cluster: string;
  own: { certs: CertView[]; sequence?: string; lastPublished: Record<string, { at: string; status: string }> };
  lastWrite?: { at: string; fingerprints: string[] };
  /** What the trust container last found kubevirt-external-ca to be (missing: virt-operator has not created it yet). */
  externalCa?: { state: string; at: string };
  localFingerprints: string[];
  peers: PeerTrustRow[];
}

interface PeerState { certs: CaInfo[]; sequence: bigint; receivedAt: number; refusal?: { at: number; reason: string } }

/** How many repush intervals an accepted sequence keeps older ones out (renewed by each acceptance). */
export const TRUST_STALE_HOLD_PERIODS = 2;

const iso = (ms: number) => new Date(ms).toISOString();
const view = (c: CaInfo): CertView => ({ sha256: c.sha256, subject: c.subject, notBefore: iso(c.notBefore), notAfter: iso(c.notAfter) });

export type Judgement = { ok: true; changed: boolean; certs: CaInfo[] } | { ok: false; code: number; why: string };

export class TrustTable {
  private readonly peers = new Map<string, PeerState>();
  own: { certs: CaInfo[]; sequence?: bigint } = { certs: [] };
  readonly published = new Map<string, { at: number; status: string }>();
  lastWrite?: { at: number; fingerprints: string[] };
  externalCa?: { state: string; at: number };
  local: string[] = [];

  constructor(readonly cluster: string, private readonly repushIntervalMs: () => number) {}

  /**
   * Judge a PUBLISH from a connection whose verified certificate names `certCluster` (a plaintext PUBLISH
   * never gets here: hub.ts refuses it as TRUST_UNAUTHENTICATED). The sequence is the publisher's clock
   * when it read its bundle: one more than TRUST_SEQUENCE_AHEAD_MS ahead of ours is refused
   * (TRUST_FUTURE); one older than the last accepted from that peer is refused (TRUST_STALE) only while
   * that last acceptance is younger than TRUST_STALE_HOLD_PERIODS repush intervals (one publication may be
   * late or lost without an older one slipping in). So no message, whatever its sequence, keeps a later
   * genuine one out for longer than two repush intervals after it was last accepted: a peer whose
   * clock stepped back is heard again once its old sequence is no longer renewed.
   */
  judge(p: TrustPublish, certCluster: string, isPeer: (c: string) => boolean, now: number): Judgement {
    const who = certCluster;
    if (p.cluster !== who) return this.refused(who, RefusalCode.TRUST_NOT_SELF, `publishes for '${p.cluster}' but the certificate names '${who}'`, now);
    if (!isPeer(who)) return { ok: false, code: RefusalCode.UNKNOWN_PEER, why: `'${who}' is not a peer of '${this.cluster}'` };
    if (p.sequence > BigInt(Math.floor(now)) + BigInt(TRUST_SEQUENCE_AHEAD_MS)) {
      return this.refused(who, RefusalCode.TRUST_FUTURE, `sequence ${p.sequence} is more than ${TRUST_SEQUENCE_AHEAD_MS / 60_000} minutes ahead of this gateway's clock (${Math.floor(now)})`, now);
    }
    const v = checkBundle(p.certs, now);
    if (!v.ok) return this.refused(who, v.code, v.why, now);
    const relayed = v.certs.find((c) => this.ownerOf(c.sha256, who) !== undefined);
    if (relayed) return this.refused(who, RefusalCode.TRUST_NOT_SELF, `relays ${relayed.subject}, the CA of '${this.ownerOf(relayed.sha256, who)}'`, now);
    const prev = this.peers.get(who);
    if (prev && p.sequence < prev.sequence && now - prev.receivedAt < TRUST_STALE_HOLD_PERIODS * this.repushIntervalMs()) {
      return this.refused(who, RefusalCode.TRUST_STALE, `sequence ${p.sequence} is older than ${prev.sequence}, accepted ${Math.round((now - prev.receivedAt) / 1000)} s ago`, now);
    }
    const changed = !prev || prev.certs.map((c) => c.sha256).join() !== v.certs.map((c) => c.sha256).join();
    this.peers.set(who, { certs: v.certs, sequence: p.sequence, receivedAt: now });
    return { ok: true, changed, certs: v.certs };
  }

  private ownerOf(sha: string, except: string): string | undefined {
    if (this.own.certs.some((c) => c.sha256 === sha)) return this.cluster;
    for (const [name, s] of this.peers) if (name !== except && s.certs.some((c) => c.sha256 === sha)) return name;
    return undefined;
  }

  private refused(who: string, code: number, why: string, now: number): Judgement {
    const s = this.peers.get(who);
    if (s) s.refusal = { at: now, reason: why };
    return { ok: false, code, why };
  }

  /** Peers' current bundles (for the trust container). */
  bundles(): { cluster: string; certs: CaInfo[]; sequence: bigint; receivedAt: number }[] {
    return [...this.peers.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([cluster, s]) => ({ cluster, ...s }));
  }

  /** Forget peers that left the fleet. */
  retain(isPeer: (c: string) => boolean): void {
    for (const name of [...this.peers.keys()]) if (!isPeer(name)) this.peers.delete(name);
  }

  /** Peers with a CA that expires before their next expected publication (2 periods: one may be lost). */
  expiring(now: number): { cluster: string; cert: CaInfo }[] {
    const out: { cluster: string; cert: CaInfo }[] = [];
    for (const [cluster, s] of this.peers) {
      const nextExpected = Math.max(s.receivedAt, now) + 2 * this.repushIntervalMs();
      for (const c of s.certs) if (c.notAfter < nextExpected) out.push({ cluster, cert: c });
    }
    return out;
  }

  toJSON(now: number = Date.now()): TrustTableView {
    const expiring = this.expiring(now);
    const local = new Set(this.local);
    return {
      cluster: this.cluster,
      own: {
        certs: this.own.certs.map(view), sequence: this.own.sequence?.toString(),
        lastPublished: Object.fromEntries([...this.published.entries()].sort().map(([k, v]) => [k, { at: iso(v.at), status: v.status }])),
      },
      lastWrite: this.lastWrite && { at: iso(this.lastWrite.at), fingerprints: this.lastWrite.fingerprints },
      externalCa: this.externalCa && { state: this.externalCa.state, at: iso(this.externalCa.at) },
      localFingerprints: this.local,
      peers: this.bundles().map((b) => {
        const e = expiring.filter((x) => x.cluster === b.cluster);
        const s = this.peers.get(b.cluster)!;
        return {
          cluster: b.cluster, lastReceived: iso(b.receivedAt), sequence: b.sequence.toString(), certs: b.certs.map(view),
          trustedLocally: b.certs.every((c) => local.has(c.sha256)),
          lastRefusal: s.refusal && { at: iso(s.refusal.at), reason: s.refusal.reason },
          warning: e.length ? `CA ${e[0].cert.subject} expires ${iso(e[0].cert.notAfter)}, before the next expected publication` : undefined,
        };
      }),
    };
  }
}
