/** Header codec and parser: round trips, and fuzzing (truncated, oversized, random, byte-by-byte). */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import { describe, it } from 'node:test';
import {
  FRAME_OPEN, FRAME_REPLY, FRAME_TRUST_PUBLISH, FrameReader, RefusalCode, TRUST_MAX_CERTS, decodeOpenBody, decodeReplyBody, decodeTrustPublishBody,
  encodeOpen, encodeReply, encodeTrustPublish, type OpenHeader, type TrustPublish,
} from '../protocol';

const open = (o: Partial<OpenHeader> = {}): OpenHeader => ({ connectionId: crypto.randomBytes(16), dstHost: '10.2.0.7', dstPort: 9185, sourceCluster: 'east-1', ...o });

function parseAll(bytes: Buffer, max = 4096, type = FRAME_OPEN) {
  const r = new FrameReader(max, type).push(bytes);
  return r;
}

describe('tunnel header protocol', () => {
  it('round-trips OPEN for IPv4 and IPv6 destinations', () => {
    for (const dstHost of ['10.2.0.7', '0.0.0.0', '255.255.255.255', 'fd00:1::7', '::1', '2001:db8::', 'fe80::1:2', '1:2:3:4:5:6:7:8', '::ffff:10.1.2.3']) {
      const h = open({ dstHost });
      const r = parseAll(encodeOpen(h));
      assert.equal(r.kind, 'frame');
      if (r.kind !== 'frame') return;
      const d = decodeOpenBody(r.body);
      assert.equal(d.dstPort, 9185);
      assert.equal(d.sourceCluster, 'east-1');
      assert.ok(d.connectionId.equals(h.connectionId));
      // same address, whatever the spelling
      assert.equal(Buffer.from(encodeOpen({ ...h, dstHost: d.dstHost })).toString('hex'), encodeOpen(h).toString('hex'), dstHost);
    }
  });

  it('round-trips REPLY and hands back the bytes that followed the frame', () => {
    const id = crypto.randomBytes(16);
    const bytes = Buffer.concat([encodeReply({ status: RefusalCode.DESTINATION_FORBIDDEN, connectionId: id, reason: 'loopback destination' }), Buffer.from('payload')]);
    const r = new FrameReader(4096, FRAME_REPLY).push(bytes);
    assert.equal(r.kind, 'frame');
    if (r.kind !== 'frame') return;
    assert.equal(r.rest.toString(), 'payload');
    const d = decodeReplyBody(r.body);
    assert.equal(d.status, RefusalCode.DESTINATION_FORBIDDEN);
    assert.equal(d.reason, 'loopback destination');
    assert.ok(d.connectionId.equals(id));
  });

  it('accepts a frame fed one byte at a time, and asks for more on every strict prefix', () => {
    const bytes = encodeOpen(open());
    for (let cut = 0; cut < bytes.length; cut++) {
      const rd = new FrameReader(4096, FRAME_OPEN);
      let last;
      for (let i = 0; i < cut; i++) last = rd.push(bytes.subarray(i, i + 1));
      if (cut > 0) assert.equal(last!.kind, 'more', `prefix of ${cut}`);
    }
    const rd = new FrameReader(4096, FRAME_OPEN);
    let r;
    for (let i = 0; i < bytes.length; i++) r = rd.push(bytes.subarray(i, i + 1));
    assert.equal(r!.kind, 'frame');
  });

  it('rejects bad magic at the first byte, a bad version at byte 5, oversize at byte 8', () => {
    const r1 = parseAll(Buffer.from('G'));
    assert.equal(r1.kind, 'error');
    const good = encodeOpen(open());
    const v2 = Buffer.from(good); v2[4] = 2;
    const r2 = parseAll(v2.subarray(0, 5));
    assert.ok(r2.kind === 'error' && r2.error.code === RefusalCode.UNSUPPORTED_VERSION);
    const big = Buffer.from(good.subarray(0, 8)); big.writeUInt16BE(65535, 6);
    const r3 = parseAll(big, 4096);
    assert.ok(r3.kind === 'error' && r3.error.code === RefusalCode.HEADER_TOO_LARGE);
    const wrongType = Buffer.from(good); wrongType[5] = FRAME_REPLY;
    assert.equal(parseAll(wrongType).kind, 'error');
  });

  it('never throws and never holds more than the cap on random input (fuzz)', () => {
    let frames = 0, errors = 0, more = 0;
    for (let i = 0; i < 20_000; i++) {
      const len = crypto.randomInt(0, 300);
      let b = crypto.randomBytes(len);
      // half the time start with a valid prefix so the fuzzer gets past the magic
      if (i % 2 === 0) { const good = encodeOpen(open()); const k = crypto.randomInt(0, good.length); b = Buffer.concat([good.subarray(0, k), b]); }
      if (i % 7 === 0) { const good = encodeOpen(open()); b = Buffer.from(good); b[crypto.randomInt(8, good.length)] ^= 1 << crypto.randomInt(0, 8); }
      const rd = new FrameReader(64, FRAME_OPEN);
      const r = rd.push(b);
      if (r.kind === 'frame') {
        frames++;
        assert.ok(r.body.length + 8 <= 64);
        try { decodeOpenBody(r.body); } catch (e) { assert.ok((e as { code?: number }).code !== undefined, 'decode errors are ProtocolErrors'); }
      } else if (r.kind === 'error') {
        errors++;
      } else {
        more++;
      }
      // after an error or a frame the reader refuses more input instead of buffering it
      if (r.kind !== 'more') assert.equal(rd.push(crypto.randomBytes(10)).kind, 'error');
    }
    assert.ok(frames > 0 && errors > 0 && more > 0, `${frames} frames, ${errors} errors, ${more} incomplete`);
  });

  it('decodeOpenBody rejects malformed bodies with a MALFORMED code', () => {
    const body = encodeOpen(open()).subarray(8);
    for (let cut = 0; cut < body.length; cut++) {
      assert.throws(() => decodeOpenBody(body.subarray(0, cut)), (e: { code?: number }) => e.code === RefusalCode.MALFORMED, `cut ${cut}`);
    }
    const badFam = Buffer.from(body); badFam[16] = 5;
    assert.throws(() => decodeOpenBody(badFam));
    const badName = Buffer.from(body); badName[body.length - 1] = 0x41; // uppercase: not a cluster name
    assert.throws(() => decodeOpenBody(badName));
    // unknown TLV extensions are skipped, truncated ones are not
    assert.equal(decodeOpenBody(Buffer.concat([body, Buffer.from([9, 2, 1, 2])])).sourceCluster, 'east-1');
    assert.throws(() => decodeOpenBody(Buffer.concat([body, Buffer.from([9, 5, 1])])));
  });
});

const publish = (o: Partial<TrustPublish> = {}): TrustPublish => ({
  connectionId: crypto.randomBytes(16), cluster: 'east-1', sequence: 1_790_000_000_000n, certs: [crypto.randomBytes(700), crypto.randomBytes(650)], ...o,
});

describe('trust PUBLISH frames', () => {
  it('round-trip, and share the first-frame reader with OPEN', () => {
    const p = publish();
    const r = new FrameReader(4096, [FRAME_OPEN, FRAME_TRUST_PUBLISH]).push(encodeTrustPublish(p));
    assert.ok(r.kind === 'frame' && r.type === FRAME_TRUST_PUBLISH);
    if (r.kind !== 'frame') return;
    const d = decodeTrustPublishBody(r.body);
    assert.equal(d.cluster, 'east-1');
    assert.equal(d.sequence, p.sequence);
    assert.deepEqual(d.certs.map((c) => c.toString('hex')), p.certs.map((c) => c.toString('hex')));
    assert.ok(d.connectionId.equals(p.connectionId));
    // a reader that expects only OPEN still refuses it at byte 6
    assert.equal(new FrameReader(4096, FRAME_OPEN).push(encodeTrustPublish(p).subarray(0, 6)).kind, 'error');
  });

  it('obey the header cap: an oversized bundle is refused at byte 8, before its body is read', () => {
    const big = encodeTrustPublish(publish({ certs: [crypto.randomBytes(3000), crypto.randomBytes(3000)] }));
    const r = new FrameReader(4096, [FRAME_OPEN, FRAME_TRUST_PUBLISH]).push(big.subarray(0, 8));
    assert.ok(r.kind === 'error' && r.error.code === RefusalCode.HEADER_TOO_LARGE);
  });

  it('refuse bad certificate counts, truncation, trailing bytes and bad names with a code', () => {
    assert.throws(() => encodeTrustPublish(publish({ certs: [] })));
    const body = encodeTrustPublish(publish()).subarray(8);
    for (let cut = 0; cut < body.length; cut++) {
      assert.throws(() => decodeTrustPublishBody(body.subarray(0, cut)), (e: { code?: number }) => e.code === RefusalCode.MALFORMED, `cut ${cut}`);
    }
    assert.throws(() => decodeTrustPublishBody(Buffer.concat([body, Buffer.from([0])])), /trailing/);
    const countAt = 16 + 1 + 'east-1'.length + 8;
    const zero = Buffer.from(body); zero[countAt] = 0;
    assert.throws(() => decodeTrustPublishBody(zero), (e: { code?: number }) => e.code === RefusalCode.TRUST_COUNT);
    const many = Buffer.from(body); many[countAt] = TRUST_MAX_CERTS + 1;
    assert.throws(() => decodeTrustPublishBody(many), (e: { code?: number }) => e.code === RefusalCode.TRUST_COUNT);
    const upper = Buffer.from(body); upper[17] = 0x45; // 'E'
    assert.throws(() => decodeTrustPublishBody(upper), /not a cluster name/);
  });

  it('never throw anything but a ProtocolError on random and mutated input (fuzz)', () => {
    let decoded = 0, refused = 0;
    for (let i = 0; i < 20_000; i++) {
      const good = encodeTrustPublish(publish({ certs: [crypto.randomBytes(crypto.randomInt(1, 40))] }));
      let b: Buffer;
      if (i % 3 === 0) {
        b = Buffer.concat([good.subarray(0, crypto.randomInt(0, good.length)), crypto.randomBytes(crypto.randomInt(0, 80))]);
      } else if (i % 3 === 1) {
        b = Buffer.from(good);
        b[crypto.randomInt(8, good.length)] ^= 1 << crypto.randomInt(0, 8);
      } else {
        b = Buffer.concat([good.subarray(0, 8), crypto.randomBytes(good.length - 8)]);
      }
      const r = new FrameReader(256, [FRAME_OPEN, FRAME_TRUST_PUBLISH]).push(b);
      if (r.kind !== 'frame') continue;
      assert.ok(r.body.length + 8 <= 256);
      if (r.type !== FRAME_TRUST_PUBLISH) continue;
      try { decodeTrustPublishBody(r.body); decoded++; } catch (e) {
        assert.ok((e as { code?: number }).code !== undefined, `not a ProtocolError: ${(e as Error).message}`);
        refused++;
      }
    }
    assert.ok(decoded > 0 && refused > 0, `${decoded} decoded, ${refused} refused`);
  });
});
