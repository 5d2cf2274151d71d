/**
 * What a tunnel listener's refusal tells the peer (PROTOCOL.md section 3, "What a refusal says"). On a
 * plaintext tunnel port no one is authenticated: a stranger on the shared network gets the code and a fixed
 * text, never this gateway's cluster name or config (it used to read `'stranger' is not a peer of 'west'`),
 * while the log keeps the whole reason under the connection id. A peer whose certificate mTLS verified reads
 * the whole reason. A real gateway on loopback, a hand-rolled client (testkit/probe.ts, which never retries).
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import { Writable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import pino from 'pino';
import { startGateway, type GatewayHandle } from '../gateway';
import { RefusalCode, encodeOpen, encodeProbe, type OpenHeader } from '../protocol';
import { UNAUTHENTICATED_REFUSAL_TEXT } from '../refusal-text';
import { configFor } from '../testkit/gateways';
import { freePort, makePki, silent, type Pki } from '../testkit/helpers';
import { probe } from '../testkit/probe';

const open = (o: Partial<OpenHeader>) => encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: '127.0.0.1', dstPort: 9, sourceCluster: 'east', ...o });

/** Nothing of this gateway's identity or config in a reason a stranger reads. */
function assertSaysNothingOfWest(reason: string, what: string): void {
  assert.doesNotMatch(reason, /west|127\.0\.0\.0|plaintext|mtls|\d{3,}/, `${what}: "${reason}"`);
}

describe('plaintext tunnel port: a refusal tells a stranger the code and a fixed text', { timeout: 60_000 }, () => {
  let west: GatewayHandle;
  let port: number;
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({ write(chunk: Buffer, _e, cb) { for (const l of chunk.toString().split('\n')) if (l) lines.push(JSON.parse(l)); cb(); } });
  before(async () => {
    west = await startGateway(await configFor('west', 'east', 1, 'plaintext', undefined, { limits: { headerMaxBytes: 256 } }),
      { logger: pino({ level: 'info' }, sink), unsafeAllowLoopbackDestinations: true });
    port = west.addresses().tunnel.port;
  });
  after(async () => { await west?.close(); });

  it('OPEN and PROBE from a cluster that is not a peer: UNKNOWN_PEER, no cluster name; the log has it', async () => {
    const id = crypto.randomBytes(16);
    for (const [what, frame] of [['OPEN', open({ connectionId: id, sourceCluster: 'stranger' })], ['PROBE', encodeProbe({ connectionId: id, sourceCluster: 'stranger' })]] as const) {
      const r = await probe(port, frame);
      assert.equal(r.reply?.status, RefusalCode.UNKNOWN_PEER, what);
      assert.equal(r.reply!.reason, 'source cluster is not a peer of this gateway', what);
      assertSaysNothingOfWest(r.reply!.reason, what);
    }
    const logged = lines.filter((l) => l.conn === id.toString('hex') && l.reason === 'unknown_peer');
    assert.equal(logged.length, 2, 'both refusals logged under their connection id');
    for (const l of logged) assert.equal(l.why, "'stranger' is not a peer of 'west'");
  });

  it('a peer name with a destination outside the CIDRs, a forbidden one, bad magic, an oversized header: fixed texts', async () => {
    const big = Buffer.from(open({})); big.writeUInt16BE(60_000, 6);
    const cases: [string, Buffer, number][] = [
      ['outside CIDR', open({ dstHost: '10.200.0.1' }), RefusalCode.DESTINATION_OUTSIDE_CIDR],
      ['forbidden', open({ dstHost: '169.254.169.254' }), RefusalCode.DESTINATION_FORBIDDEN],
      ['bad magic', Buffer.from('GET / HTTP/1.1\r\n\r\n'), RefusalCode.MALFORMED],
      ['too large', Buffer.concat([big, Buffer.alloc(1000)]), RefusalCode.HEADER_TOO_LARGE],
    ];
    for (const [what, frame, code] of cases) {
      const r = await probe(port, frame);
      assert.equal(r.reply?.status, code, what);
      assert.equal(r.reply!.reason, UNAUTHENTICATED_REFUSAL_TEXT[code], what);
      assertSaysNothingOfWest(r.reply!.reason, what);
    }
    assert.ok(lines.some((l) => l.reason === 'header_too_large' && /256/.test(String(l.why))), 'the limit is in the log, not the reply');
  });

  it('a failed dial says the errno code only', async () => {
    const r = await probe(port, open({ dstPort: await freePort() }));
    assert.equal(r.reply?.status, RefusalCode.DIAL_FAILED);
    assert.equal(r.reply!.reason, 'ECONNREFUSED');
  });
});

describe('mTLS tunnel port: a verified peer reads the whole reason', { timeout: 60_000 }, () => {
  let pki: Pki;
  let west: GatewayHandle;
  before(async () => {
    pki = makePki('fleet', ['east', 'west']);
    west = await startGateway(await configFor('west', 'east', 1, 'mtls', pki), { logger: silent, unsafeAllowLoopbackDestinations: true });
  });
  after(async () => { await west?.close(); });

  it('SOURCE_MISMATCH names both clusters to the certificate holder; a failed dial its errno code', async () => {
    const creds = { ...pki.certs.east, ca: pki.ca };
    const port = west.addresses().tunnel.port;
    const r = await probe(port, open({ sourceCluster: 'mallory' }), creds);
    assert.equal(r.reply?.status, RefusalCode.SOURCE_MISMATCH);
    assert.equal(r.reply!.reason, "header says 'mallory' but the certificate names 'east'");
    const d = await probe(port, open({ dstPort: await freePort() }), creds);
    assert.equal(d.reply?.status, RefusalCode.DIAL_FAILED);
    assert.equal(d.reply!.reason, 'ECONNREFUSED');
  });
});
