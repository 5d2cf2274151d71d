/**
 * Tunnel header protocol (see proxy/PROTOCOL.md). Pure functions, no I/O.
 *
 * Every frame: magic "MMTP" | version u8 | type u8 | body length u16be | body.
 */
import * as net from 'node:net';

export const MAGIC = Buffer.from('MMTP', 'ascii');
export const PROTOCOL_VERSION = 1;
export const FRAME_HEADER_BYTES = 8;
export const FRAME_OPEN = 1;
export const FRAME_REPLY = 2;
/** A gateway publishes its own cluster's KubeVirt CA bundle (answered with a REPLY). */
export const FRAME_TRUST_PUBLISH = 3;
/** Most CA certificates one PUBLISH may carry. */
export const TRUST_MAX_CERTS = 8;
/** Authenticated splice only: the last frame inside TLS, one per side (PROTOCOL.md section 7). */
export const FRAME_BIND = 4;
export const BIND_VALUE_BYTES = 32;
/** A gateway asks a peer gateway to answer, nothing more: the admin `/probe` (PROTOCOL.md section 9). */
export const FRAME_PROBE = 5;
/** TLS exporter labels (RFC 8446 section 7.5) of the BIND values; context = OPEN frame || REPLY frame. */
export const BIND_LABEL_ORIGIN = 'EXPORTER-mmtp-bind-origin';
export const BIND_LABEL_TERMINUS = 'EXPORTER-mmtp-bind-terminus';
/** OPEN extension (TLV) types. */
export const OPEN_EXT_PAYLOAD = 1;
/** Values of OPEN_EXT_PAYLOAD: how the payload travels after the REPLY. */
export const PayloadMode = { TLS: 0, SPLICE: 1 } as const;
export const CONNECTION_ID_BYTES = 16;

/** Reply status codes (0 = accepted). Stable on the wire: never renumber. */
export const RefusalCode = {
  ACCEPTED: 0,
  MALFORMED: 1,
  UNSUPPORTED_VERSION: 2,
  HEADER_TOO_LARGE: 3,
  SOURCE_MISMATCH: 4,
  UNKNOWN_PEER: 5,
  DESTINATION_OUTSIDE_CIDR: 6,
  DESTINATION_FORBIDDEN: 7,
  PEER_LIMIT: 8,
  TOTAL_LIMIT: 9,
  DIAL_FAILED: 10,
  DIAL_TIMEOUT: 11,
  DRAINING: 12,
  /** PUBLISH speaks for a cluster other than the one its certificate names, or relays another member's CA. */
  TRUST_NOT_SELF: 13,
  /** A certificate in PUBLISH is not a self-signed CA (basicConstraints CA:TRUE). */
  TRUST_NOT_CA: 14,
  /** A certificate in PUBLISH cannot be parsed, is expired or not yet valid. */
  TRUST_NOT_VALID: 15,
  /** PUBLISH carries no certificate or more than TRUST_MAX_CERTS. */
  TRUST_COUNT: 16,
  /** This gateway does not exchange trust (no `trust` section in its config). */
  TRUST_DISABLED: 17,
  /** PUBLISH is older (sequence) than the last one accepted from that cluster. */
  TRUST_STALE: 18,
  /** OPEN asks for a payload mode this terminus does not allow (spliced payload on an mtls-only terminus). */
  PAYLOAD_MODE_REFUSED: 19,
  /** PUBLISH arrived without a verified peer certificate (a plaintext tunnel port): trust needs mTLS. */
  TRUST_UNAUTHENTICATED: 20,
  /** PUBLISH's sequence is further ahead of the receiver's clock than TRUST_SEQUENCE_AHEAD_MS. */
  TRUST_FUTURE: 21,
} as const;

/**
 * How far ahead of the receiver's clock a PUBLISH's sequence (the publisher's clock, ms) may be: clock skew
 * between clusters, generously. A sequence further ahead is refused (TRUST_FUTURE), so no accepted sequence
 * is more than this ahead of real time.
 */
export const TRUST_SEQUENCE_AHEAD_MS = 10 * 60_000;
export type RefusalCodeValue = (typeof RefusalCode)[keyof typeof RefusalCode];

/** Metric label for a reply status. */
export function refusalName(code: number): string {
  for (const [k, v] of Object.entries(RefusalCode)) if (v === code) return k.toLowerCase();
  return `unknown_${code}`;
}

export interface OpenHeader {
  connectionId: Buffer;
  dstHost: string;
  dstPort: number;
  sourceCluster: string;
  /** 'splice': after the REPLY, a BIND exchange inside TLS and then raw bytes (OPEN extension 1). @default 'tls' */
  payload?: 'tls' | 'splice';
}

export interface ReplyHeader {
  status: number;
  connectionId: Buffer;
  reason: string;
}

function frame(type: number, body: Buffer): Buffer {
  if (body.length > 0xffff) throw new Error('frame body too large');
  const h = Buffer.alloc(FRAME_HEADER_BYTES);
  MAGIC.copy(h, 0);
  h[4] = PROTOCOL_VERSION;
  h[5] = type;
  h.writeUInt16BE(body.length, 6);
  return Buffer.concat([h, body]);
}

function ipBytes(host: string): Buffer {
  const fam = net.isIP(host);
  if (fam === 4) return Buffer.from(host.split('.').map((x) => Number(x)));
  if (fam === 6) {
    // expand '::' and an embedded IPv4 tail
    let h = host;
    const v4 = /(\d+\.\d+\.\d+\.\d+)$/.exec(h);
    if (v4) {
      const b = v4[1].split('.').map(Number);
      h = h.slice(0, -v4[1].length) + ((b[0] << 8) | b[1]).toString(16) + ':' + ((b[2] << 8) | b[3]).toString(16);
    }
    const [head, tail] = h.split('::');
    const hs = head ? head.split(':') : [];
    const ts = tail !== undefined ? (tail ? tail.split(':') : []) : [];
    const groups = tail !== undefined ? [...hs, ...Array(8 - hs.length - ts.length).fill('0'), ...ts] : hs;
    const out = Buffer.alloc(16);
    groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
    return out;
  }
  throw new Error(`not an IP address: ${host}`);
}

function ipString(b: Buffer): string {
  if (b.length === 4) return Array.from(b).join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i).toString(16));
  // canonical-ish compression of the longest zero run
  let best = -1, bestLen = 0;
  for (let i = 0; i < 8;) {
    if (groups[i] !== '0') { i++; continue; }
    let j = i; while (j < 8 && groups[j] === '0') j++;
    if (j - i > bestLen && j - i > 1) { best = i; bestLen = j - i; }
    i = j;
  }
  if (best < 0) return groups.join(':');
  return groups.slice(0, best).join(':') + '::' + groups.slice(best + bestLen).join(':');
}

export function encodeOpen(h: OpenHeader): Buffer {
  if (h.connectionId.length !== CONNECTION_ID_BYTES) throw new Error('connection id must be 16 bytes');
  const addr = ipBytes(h.dstHost);
  const src = Buffer.from(h.sourceCluster, 'ascii');
  if (src.length < 1 || src.length > 63) throw new Error('source cluster must be 1..63 bytes');
  const ext = h.payload === 'splice' ? 3 : 0;
  const body = Buffer.alloc(CONNECTION_ID_BYTES + 1 + addr.length + 2 + 1 + src.length + ext);
  let o = 0;
  o += h.connectionId.copy(body, o);
  body[o++] = addr.length === 4 ? 4 : 6;
  o += addr.copy(body, o);
  body.writeUInt16BE(h.dstPort, o); o += 2;
  body[o++] = src.length;
  o += src.copy(body, o);
  if (ext) { body[o++] = OPEN_EXT_PAYLOAD; body[o++] = 1; body[o] = PayloadMode.SPLICE; }
  return frame(FRAME_OPEN, body);
}

export function encodeReply(r: ReplyHeader): Buffer {
  const reason = Buffer.from(r.reason, 'utf8').subarray(0, 255);
  const id = r.connectionId.length === CONNECTION_ID_BYTES ? r.connectionId : Buffer.alloc(CONNECTION_ID_BYTES);
  const body = Buffer.alloc(1 + CONNECTION_ID_BYTES + 1 + reason.length);
  body[0] = r.status;
  id.copy(body, 1);
  body[1 + CONNECTION_ID_BYTES] = reason.length;
  reason.copy(body, 2 + CONNECTION_ID_BYTES);
  return frame(FRAME_REPLY, body);
}

export class ProtocolError extends Error {
  constructor(public readonly code: RefusalCodeValue, message: string) { super(message); }
}

const CLUSTER_RE = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

export function decodeOpenBody(body: Buffer): OpenHeader {
  const bad = (m: string) => new ProtocolError(RefusalCode.MALFORMED, m);
  let o = 0;
  if (body.length < CONNECTION_ID_BYTES + 1) throw bad('open: truncated body');
  const connectionId = Buffer.from(body.subarray(0, CONNECTION_ID_BYTES)); o += CONNECTION_ID_BYTES;
  const fam = body[o++];
  const alen = fam === 4 ? 4 : fam === 6 ? 16 : -1;
  if (alen < 0) throw bad(`open: unknown address family ${fam}`);
  if (body.length < o + alen + 2 + 1) throw bad('open: truncated address');
  const dstHost = ipString(body.subarray(o, o + alen)); o += alen;
  const dstPort = body.readUInt16BE(o); o += 2;
  const slen = body[o++];
  if (slen < 1 || slen > 63 || body.length < o + slen) throw bad('open: bad source cluster length');
  const sourceCluster = body.subarray(o, o + slen).toString('latin1'); o += slen;
  if (!CLUSTER_RE.test(sourceCluster)) throw bad('open: source cluster is not a cluster name');
  // Trailing bytes are TLV extensions (type u8, length u8, value); unknown types are skipped.
  let payload: OpenHeader['payload'] = 'tls';
  while (o < body.length) {
    if (body.length < o + 2) throw bad('open: truncated extension');
    const l = body[o + 1];
    if (body.length < o + 2 + l) throw bad('open: truncated extension value');
    if (body[o] === OPEN_EXT_PAYLOAD) payload = payloadOf(body.subarray(o + 2, o + 2 + l));
    o += 2 + l;
  }
  return { connectionId, dstHost, dstPort, sourceCluster, payload };
}

function payloadOf(v: Buffer): 'tls' | 'splice' {
  if (v.length === 1 && v[0] === PayloadMode.TLS) return 'tls';
  if (v.length === 1 && v[0] === PayloadMode.SPLICE) return 'splice';
  throw new ProtocolError(RefusalCode.PAYLOAD_MODE_REFUSED, `open: unknown payload mode ${v.toString('hex')}`);
}

/** A BIND frame carrying `value` (tests and tools; the gateways build and check it in the native addon). */
export function encodeBind(value: Buffer): Buffer {
  if (value.length !== BIND_VALUE_BYTES) throw new Error(`a binding is ${BIND_VALUE_BYTES} bytes`);
  return frame(FRAME_BIND, value);
}

/** The exporter context of a BIND value: the OPEN and REPLY frames exactly as they crossed the tunnel. */
export function bindContext(openFrame: Buffer, replyFrame: Buffer): Buffer { return Buffer.concat([openFrame, replyFrame]); }

export function decodeReplyBody(body: Buffer): ReplyHeader {
  if (body.length < 2 + CONNECTION_ID_BYTES) throw new ProtocolError(RefusalCode.MALFORMED, 'reply: truncated');
  const rlen = body[1 + CONNECTION_ID_BYTES];
  if (body.length < 2 + CONNECTION_ID_BYTES + rlen) throw new ProtocolError(RefusalCode.MALFORMED, 'reply: truncated reason');
  return {
    status: body[0],
    connectionId: Buffer.from(body.subarray(1, 1 + CONNECTION_ID_BYTES)),
    reason: body.subarray(2 + CONNECTION_ID_BYTES, 2 + CONNECTION_ID_BYTES + rlen).toString('utf8'),
  };
}

export type ReadResult =
  | { kind: 'more' }
  | { kind: 'frame'; type: number; body: Buffer; rest: Buffer }
  | { kind: 'error'; error: ProtocolError };

/**
 * Incremental reader of exactly one frame. Holds at most `maxBytes` bytes, rejects as early as
 * possible (bad magic after 1-4 bytes, bad version at byte 5, oversize at byte 8), and hands back the
 * bytes that followed the frame in the same chunk (`rest`). Never throws.
 */
export class FrameReader {
  private buf: Buffer;
  private len = 0;
  private done = false;
  private readonly expectTypes: readonly number[];
  constructor(private readonly maxBytes: number, expectType: number | readonly number[]) {
    this.expectTypes = typeof expectType === 'number' ? [expectType] : expectType;
    this.buf = Buffer.alloc(Math.max(FRAME_HEADER_BYTES, Math.min(maxBytes, 65_535 + FRAME_HEADER_BYTES)));
  }
  push(chunk: Buffer): ReadResult {
    if (this.done) return { kind: 'error', error: new ProtocolError(RefusalCode.MALFORMED, 'reader already finished') };
    let off = 0;
    while (off < chunk.length) {
      const need = this.needed();
      if (need < 0) { this.done = true; return { kind: 'error', error: this.err! }; }
      const take = Math.min(need - this.len, chunk.length - off);
      chunk.copy(this.buf, this.len, off, off + take);
      this.len += take; off += take;
      const again = this.needed();
      if (again < 0) { this.done = true; return { kind: 'error', error: this.err! }; }
      if (this.len === again && this.len >= FRAME_HEADER_BYTES) {
        this.done = true;
        return {
          kind: 'frame', type: this.buf[5],
          body: Buffer.from(this.buf.subarray(FRAME_HEADER_BYTES, this.len)),
          rest: Buffer.from(chunk.subarray(off)),
        };
      }
    }
    return { kind: 'more' };
  }
  private err?: ProtocolError;
  /** Total bytes the frame needs given what we have, or -1 on a protocol error. */
  private needed(): number {
    const b = this.buf, n = this.len;
    for (let i = 0; i < Math.min(n, 4); i++) {
      if (b[i] !== MAGIC[i]) { this.err = new ProtocolError(RefusalCode.MALFORMED, 'bad magic'); return -1; }
    }
    if (n > 4 && b[4] !== PROTOCOL_VERSION) { this.err = new ProtocolError(RefusalCode.UNSUPPORTED_VERSION, `unsupported version ${b[4]}`); return -1; }
    if (n > 5 && !this.expectTypes.includes(b[5])) { this.err = new ProtocolError(RefusalCode.MALFORMED, `unexpected frame type ${b[5]}`); return -1; }
    if (n < FRAME_HEADER_BYTES) return FRAME_HEADER_BYTES;
    const total = FRAME_HEADER_BYTES + b.readUInt16BE(6);
    if (total > this.maxBytes) { this.err = new ProtocolError(RefusalCode.HEADER_TOO_LARGE, `header of ${total} bytes exceeds ${this.maxBytes}`); return -1; }
    return total;
  }
}

/** PUBLISH: the CA bundle one cluster speaks for (DER certificates), see PROTOCOL.md section 6. */
export interface TrustPublish {
  connectionId: Buffer;
  /** The cluster the bundle belongs to: must be the publisher's own (its certificate's) cluster. */
  cluster: string;
  /** Publisher's monotonic sequence (ms since the epoch when the bundle was read); older ones are refused. */
  sequence: bigint;
  /** DER certificates, 1..TRUST_MAX_CERTS. */
  certs: Buffer[];
}

export function encodeTrustPublish(p: TrustPublish): Buffer {
  if (p.connectionId.length !== CONNECTION_ID_BYTES) throw new Error('connection id must be 16 bytes');
  const name = Buffer.from(p.cluster, 'ascii');
  if (name.length < 1 || name.length > 63) throw new Error('cluster must be 1..63 bytes');
  if (p.certs.length < 1 || p.certs.length > TRUST_MAX_CERTS) throw new Error(`1..${TRUST_MAX_CERTS} certificates`);
  const head = Buffer.alloc(CONNECTION_ID_BYTES + 1 + name.length + 8 + 1);
  let o = p.connectionId.copy(head, 0);
  head[o++] = name.length;
  o += name.copy(head, o);
  head.writeBigUInt64BE(p.sequence, o); o += 8;
  head[o] = p.certs.length;
  const parts: Buffer[] = [head];
  for (const c of p.certs) {
    if (c.length < 1 || c.length > 0xffff) throw new Error('certificate too large');
    const l = Buffer.alloc(2);
    l.writeUInt16BE(c.length, 0);
    parts.push(l, c);
  }
  return frame(FRAME_TRUST_PUBLISH, Buffer.concat(parts));
}

/** Decode a PUBLISH body (structure only; the certificates are judged by trust/x509.ts). Throws ProtocolError. */
export function decodeTrustPublishBody(body: Buffer): TrustPublish {
  const bad = (m: string) => new ProtocolError(RefusalCode.MALFORMED, m);
  if (body.length < CONNECTION_ID_BYTES + 1) throw bad('publish: truncated body');
  const connectionId = Buffer.from(body.subarray(0, CONNECTION_ID_BYTES));
  let o = CONNECTION_ID_BYTES;
  const n = body[o++];
  if (n < 1 || n > 63 || body.length < o + n + 9) throw bad('publish: bad cluster length');
  const cluster = body.subarray(o, o + n).toString('latin1'); o += n;
  if (!CLUSTER_RE.test(cluster)) throw bad('publish: cluster is not a cluster name');
  const sequence = body.readBigUInt64BE(o); o += 8;
  const k = body[o++];
  if (k < 1 || k > TRUST_MAX_CERTS) throw new ProtocolError(RefusalCode.TRUST_COUNT, `publish: ${k} certificates (1..${TRUST_MAX_CERTS} allowed)`);
  const certs: Buffer[] = [];
  for (let i = 0; i < k; i++) {
    if (body.length < o + 2) throw bad('publish: truncated certificate length');
    const l = body.readUInt16BE(o); o += 2;
    if (l < 1 || body.length < o + l) throw bad('publish: truncated certificate');
    certs.push(Buffer.from(body.subarray(o, o + l))); o += l;
  }
  if (o !== body.length) throw bad('publish: trailing bytes');
  return { connectionId, cluster, sequence, certs };
}

/** PROBE: a liveness and authentication check of the tunnel path, see PROTOCOL.md section 9. */
export interface Probe {
  connectionId: Buffer;
  /** The prober's own cluster (in mTLS: the cluster its certificate names). */
  sourceCluster: string;
}

export function encodeProbe(p: Probe): Buffer {
  if (p.connectionId.length !== CONNECTION_ID_BYTES) throw new Error('connection id must be 16 bytes');
  const name = Buffer.from(p.sourceCluster, 'ascii');
  if (name.length < 1 || name.length > 63) throw new Error('source cluster must be 1..63 bytes');
  const body = Buffer.alloc(CONNECTION_ID_BYTES + 1 + name.length);
  p.connectionId.copy(body, 0);
  body[CONNECTION_ID_BYTES] = name.length;
  name.copy(body, CONNECTION_ID_BYTES + 1);
  return frame(FRAME_PROBE, body);
}

/** Decode a PROBE body: connection id, source cluster, nothing after it. Throws ProtocolError. */
export function decodeProbeBody(body: Buffer): Probe {
  const bad = (m: string) => new ProtocolError(RefusalCode.MALFORMED, m);
  if (body.length < CONNECTION_ID_BYTES + 2) throw bad('probe: truncated body');
  const connectionId = Buffer.from(body.subarray(0, CONNECTION_ID_BYTES));
  const n = body[CONNECTION_ID_BYTES];
  if (n < 1 || n > 63 || body.length !== CONNECTION_ID_BYTES + 1 + n) throw bad('probe: bad source cluster length');
  const sourceCluster = body.subarray(CONNECTION_ID_BYTES + 1).toString('latin1');
  if (!CLUSTER_RE.test(sourceCluster)) throw bad('probe: source cluster is not a cluster name');
  return { connectionId, sourceCluster };
}
