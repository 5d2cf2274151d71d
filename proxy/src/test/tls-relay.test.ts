/**
 * The native mTLS relay (tlsrelay.c, then our own records in tls13relay.c): both directions at full speed at once.
 * Records tampered with on the wire, interoperation with OpenSSL's record layer and KeyUpdate are in
 * tls-records.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startPair } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, withTimeout, type Pki } from '../testkit/helpers';
import { echoRoundTrip, startEcho } from '../testkit/echo';

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });

describe('native mTLS relay', { timeout: 5 * HANG_GUARD_MS }, () => {
  let echo: Awaited<ReturnType<typeof startEcho>>;
  after(async () => { await echo?.close(); });

  it('carries 64 MiB both ways at once (an echo), sha256-equal, and half-close', { timeout: 5 * HANG_GUARD_MS }, async () => {
    echo = await startEcho();
    const pair = await startPair('mtls', pki, () => ({ host: '127.0.0.1', port: echo.port }));
    try {
      const r = await withTimeout(echoRoundTrip(pair.cfgA.listen!.intercept!.port, 64 << 20), HANG_GUARD_MS, 'echo 64 MiB');
      assert.equal(r.got, r.sent, 'the echo equals what was sent');
      assert.ok(r.sent.endsWith(` ${64 << 20}`));
    } finally { await pair.close(); }
  });

});
