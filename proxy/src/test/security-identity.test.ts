/**
 * Issue 14, items 1 and 7: a peer is named by exactly one well-formed URI SAN, compared exactly (never by
 * splitting flattened text), and weak keys are refused, on both data paths (native OpenSSL and Node tls).
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayHandle } from '../gateway';
import { certificateIdentity, identityFromUris, uriSansOfDer } from '../identity';
import * as tls from 'node:tls';
import { CONNECTION_ID_BYTES, RefusalCode, encodeOpen, encodeReply, encodeTrustPublish } from '../protocol';
import { publishOnce } from '../trust/publisher';
import { makeCert } from '../testkit/ca-certs';
import { configFor } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, silent, type Pki } from '../testkit/helpers';
import { issueOdd } from '../testkit/odd-certs';
import { probe } from '../testkit/probe';

let pki: Pki;
type Creds = { cert: string; key: string; ca: string };
let odd: Record<string, Creds>;
// destination outside the CIDR: an authenticated peer gets a DESTINATION_OUTSIDE_CIDR reply, anyone else no reply
const open = () => encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: '198.51.100.10', dstPort: 9185, sourceCluster: 'east' });

before(() => {
  pki = makePki('fleet', ['east', 'west']);
  odd = {
    forged: issueOdd(pki, 'forged', ['urn:x, URI:spiffe://fleet/cluster/east']),
    forgedTail: issueOdd(pki, 'forged-tail', ['spiffe://fleet/cluster/east, URI:urn:x']),
    twoUris: issueOdd(pki, 'two-uris', ['spiffe://fleet/cluster/east', 'urn:x']),
    twoSpiffe: issueOdd(pki, 'two-spiffe', ['spiffe://fleet/cluster/east', 'spiffe://fleet/cluster/east']),
    suffix: issueOdd(pki, 'suffix', ['spiffe://fleet/cluster/east/']),
    query: issueOdd(pki, 'query', ['spiffe://fleet/cluster/east?x=1']),
    upper: issueOdd(pki, 'upper', ['SPIFFE://fleet/cluster/east']),
    rsa1024: issueOdd(pki, 'rsa1024', ['spiffe://fleet/cluster/east'], 'rsa1024'),
    rsa2048: issueOdd(pki, 'rsa2048', ['spiffe://fleet/cluster/east'], 'rsa2048'),
    // the same impostors naming west, for the trust publisher dialing west
    westTwoUris: issueOdd(pki, 'west-two-uris', ['spiffe://fleet/cluster/west', 'urn:x']),
    westForged: issueOdd(pki, 'west-forged', ['urn:x, URI:spiffe://fleet/cluster/west']),
    westSuffix: issueOdd(pki, 'west-suffix', ['spiffe://fleet/cluster/west/']),
    westRsa1024: issueOdd(pki, 'west-rsa1024', ['spiffe://fleet/cluster/west'], 'rsa1024'),
  };
});

describe('the Node tls data path is gone', () => {
  it('mTLS refuses to start without the native relay (Node tls cannot tell a cut stream from a clean end)', async () => {
    const cfg = await configFor('west', 'east', 1, 'mtls', pki);
    const outcome = await startGateway(cfg, { logger: silent, dataPath: 'js' }).then((g) => g.close().then(() => 'started'), (e: Error) => e.message);
    assert.match(outcome, /needs the native addon/);
  });
});

for (const dataPath of ['auto'] as const) {
  describe('terminus identity (native OpenSSL data path)', { timeout: 5 * HANG_GUARD_MS }, () => {
    let west: GatewayHandle;
    let port: number;
    before(async () => {
      const cfg = await configFor('west', 'east', 1, 'mtls', pki, { localCidrs: ['10.50.0.0/16'], limits: { handshakeTimeoutMs: 1500 } });
      west = await startGateway(cfg, { logger: silent, dataPath });
      port = west.addresses().tunnel.port;
    });
    after(async () => { await west?.close(); });

    it('accepts the genuine peer (P-256 and RSA 2048): it gets a reply', async () => {
      for (const creds of [{ ...pki.certs.east, ca: pki.ca }, odd.rsa2048]) {
        const r = await probe(port, open(), creds);
        assert.equal(r.reply?.status, RefusalCode.DESTINATION_OUTSIDE_CIDR);
      }
    });

    const impostors: [string, string][] = [
      ['forged', 'one URI SAN whose text is "urn:x, URI:spiffe://fleet/cluster/east"'],
      ['forgedTail', 'one URI SAN whose text is "spiffe://fleet/cluster/east, URI:urn:x"'],
      ['twoUris', 'two URI SANs (the spiffe one and another)'],
      ['twoSpiffe', 'the same spiffe URI twice'],
      ['suffix', 'a trailing slash'],
      ['query', 'a query string'],
      ['upper', 'an upper-case scheme'],
    ];
    for (const [name, why] of impostors) {
      it(`refuses a fleet-CA certificate with ${why}: no header exchange`, async () => {
        const r = await probe(port, open(), odd[name]);
        assert.equal(r.reply, undefined, `no reply for ${name}`);
        assert.ok(r.closed);
      });
    }

    it('refuses an RSA key under 2048 bits', async () => {
      const r = await probe(port, open(), odd.rsa1024);
      assert.equal(r.reply, undefined);
      assert.ok(r.closed);
    });

    it('refuses to start with its own RSA key under 2048 bits', async () => {
      const cfg = await configFor('west', 'east', 1, 'mtls', pki);
      const weak = { ...cfg, tls: { mode: 'mtls' as const, caFile: pki.ca, certFile: odd.rsa1024.cert, keyFile: odd.rsa1024.key } };
      const outcome = await startGateway(weak, { logger: silent, dataPath }).then((g) => g.close().then(() => 'started'), (e: Error) => e.message);
      assert.match(outcome, /key too small|weak|2048/i);
    });
  });
}

describe('identity from structured SANs', () => {
  const der = (c: Creds) => new crypto.X509Certificate(fs.readFileSync(c.cert)).raw;

  it('reads every URI SAN from the DER exactly, one array element per SAN', () => {
    assert.deepEqual(uriSansOfDer(der(odd.forged)), ['urn:x, URI:spiffe://fleet/cluster/east']);
    assert.deepEqual(uriSansOfDer(der(odd.twoUris)), ['spiffe://fleet/cluster/east', 'urn:x']);
    assert.deepEqual(uriSansOfDer(der({ ...pki.certs.east, ca: pki.ca })), ['spiffe://fleet/cluster/east']);
    assert.deepEqual(uriSansOfDer(der({ ...pki.certs.nosan, ca: pki.ca })), []);
  });

  it('names a member only for exactly one canonical spiffe URI of this fleet', () => {
    assert.deepEqual(identityFromUris(['spiffe://fleet/cluster/east'], 'fleet'), { cluster: 'east' });
    for (const uris of [[], ['spiffe://fleet/cluster/east', 'urn:x'], ['urn:x, URI:spiffe://fleet/cluster/east'], ['spiffe://other/cluster/east'],
      ['spiffe://fleet/cluster/east-'], ['spiffe://fleet/cluster/' + 'a'.repeat(64)], ['spiffe://fleet/cluster/east\n'], ['']]) {
      assert.ok('error' in identityFromUris(uris, 'fleet'), JSON.stringify(uris));
    }
  });

  it('refuses weak keys with a reason', () => {
    const r = certificateIdentity(der(odd.rsa1024), 'fleet');
    assert.match('error' in r ? r.error : '', /1024 bits/);
    assert.deepEqual(certificateIdentity(der(odd.rsa2048), 'fleet'), { cluster: 'east' });
  });

  it('an empty or non-SEQUENCE Extensions field is a DER error, not a TypeError (found by the garbage-DER fuzz in CI)', () => {
    // Certificate { tbsCertificate { [3] Extensions } } with the [3] empty, then holding an INTEGER instead of a SEQUENCE
    for (const bytes of [[0x30, 0x04, 0x30, 0x02, 0xa3, 0x00], [0x30, 0x07, 0x30, 0x05, 0xa3, 0x03, 0x02, 0x01, 0x00]]) {
      assert.throws(() => uriSansOfDer(Buffer.from(bytes)), /^Error: DER: /);
    }
  });

  it('never throws on garbage DER', () => {
    for (let i = 0; i < 2000; i++) {
      const b = Buffer.from(der({ ...pki.certs.east, ca: pki.ca }));
      for (let k = 0; k < 4; k++) b[crypto.randomInt(0, b.length)] = crypto.randomInt(0, 256);
      try { uriSansOfDer(b); } catch (e) { assert.match((e as Error).message, /DER|SubjectAltName/); }
    }
  });
});

describe('the trust exchange applies the one identity check (identity.ts) on both ends', { timeout: 5 * HANG_GUARD_MS }, () => {
  const H = 3600_000;
  const frame = () => encodeTrustPublish({
    connectionId: crypto.randomBytes(CONNECTION_ID_BYTES), cluster: 'east', sequence: BigInt(Date.now()), certs: [makeCert('kubevirt.io@east', Date.now() - H, Date.now() + H).der],
  });

  /** A stand-in peer gateway 'west' presenting `creds`; counts the bytes it received (the bundle) and replies ACCEPTED. */
  async function fakeWest(creds: { cert: string; key: string }) {
    let received = 0;
    const server = tls.createServer({
      cert: fs.readFileSync(creds.cert), key: fs.readFileSync(creds.key), ca: fs.readFileSync(pki.ca), requestCert: true, rejectUnauthorized: true,
      // SECLEVEL=0: the stand-in must be able to present the weak key the publisher is tested to refuse (OpenSSL 3.5's
      // default level refuses to load an RSA-1024 key at all)
      minVersion: 'TLSv1.3', ciphers: 'DEFAULT:@SECLEVEL=0',
    }, (s) => {
      s.on('error', () => s.destroy());
      s.on('data', (d: Buffer) => { received += d.length; s.end(encodeReply({ status: RefusalCode.ACCEPTED, connectionId: Buffer.alloc(CONNECTION_ID_BYTES), reason: '' })); });
    });
    server.on('tlsClientError', () => { /* the publisher aborts the handshake */ });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    return { port: (server.address() as import('node:net').AddressInfo).port, received: () => received, close: () => new Promise<void>((r) => server.close(() => r())) };
  }
  const ctx = () => ({ fleet: 'fleet', timeoutMs: 3000, headerMaxBytes: 4096, tls: { ca: fs.readFileSync(pki.ca), cert: fs.readFileSync(pki.certs.east.cert), key: fs.readFileSync(pki.certs.east.key) } });

  it('the publisher sends its bundle to the genuine peer only: two URI SANs, a forged one, a suffix, a weak key are refused before a byte', async () => {
    const genuine = await fakeWest(pki.certs.west);
    try {
      const r = await publishOnce(ctx(), { cluster: 'west', host: '127.0.0.1', port: genuine.port }, frame());
      assert.equal(r.status, RefusalCode.ACCEPTED);
      assert.ok(genuine.received() > 0);
    } finally { await genuine.close(); }
    for (const name of ['westTwoUris', 'westForged', 'westSuffix', 'westRsa1024']) {
      const w = await fakeWest(odd[name]);
      try {
        await assert.rejects(publishOnce(ctx(), { cluster: 'west', host: '127.0.0.1', port: w.port }, frame()), /refused|identity|URI|bits|key too weak/, name); // Node 24's OpenSSL 3.5 refuses the RSA-1024 peer itself
        assert.equal(w.received(), 0, `${name}: the bundle never left`);
      } finally { await w.close(); }
    }
  });

  it('the receiving terminus drops a PUBLISH from a certificate with two URI SANs (no reply), as it drops such an OPEN', async () => {
    const cfg = await configFor('west', 'east', 1, 'mtls', pki, { trust: { socket: `${pki.dir}/trust-id.sock`, repushIntervalMs: 60_000, retryMs: 1000 } });
    const west = await startGateway(cfg, { logger: silent });
    try {
      const port = west.addresses().tunnel.port;
      const ok = await probe(port, frame(), { ...pki.certs.east, ca: pki.ca });
      assert.equal(ok.reply?.status, RefusalCode.ACCEPTED);
      for (const name of ['twoUris', 'twoSpiffe', 'forged']) {
        const r = await probe(port, frame(), odd[name]);
        assert.equal(r.reply, undefined, name);
        assert.ok(r.closed);
      }
    } finally { await west.close(); }
  });
});
