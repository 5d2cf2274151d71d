/**
 * Issue 14, item 4: TLS connections that present no client certificate must not leave native memory
 * behind until V8 happens to collect their handles. The gateway runs as the real CLI in its own process;
 * its RSS after a flood (and a short idle) must be back near its baseline. `npm run adversarial` repeats
 * this with 30,000 connections.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { before, describe, it } from 'node:test';
import { configFor } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, sleep, type Pki } from '../testkit/helpers';
import { certlessFlood, spawnGateway } from '../testkit/flood';

let pki: Pki;
before(() => { pki = makePki('fleet', ['east', 'west']); });

const FLOOD = Number(process.env.MM_SECURITY_FLOOD ?? 6000);

describe('native TLS memory after a flood without certificates', { timeout: 5 * HANG_GUARD_MS }, () => {
  it(`RSS returns near baseline after ${FLOOD} cert-less TLS connections`, async () => {
    const cfg = await configFor('west', 'east', 1, 'mtls', pki, { limits: { handshakeTimeoutMs: 5000 } });
    const gw = await spawnGateway(cfg);
    try {
      const ca = fs.readFileSync(pki.ca);
      const port = cfg.listen!.tunnel!.port;
      await certlessFlood(port, ca, 300); // warm-up: code paths, OpenSSL tables, thread stacks
      await sleep(500);
      const base = gw.rssMb();
      const fds0 = gw.fds();
      let peak = base;
      const sampler = setInterval(() => { peak = Math.max(peak, gw.rssMb()); }, 100);
      const ended = await certlessFlood(port, ca, FLOOD);
      clearInterval(sampler);
      await sleep(3000);
      const after = gw.rssMb();
      console.log(`# ${FLOOD} cert-less connections: RSS ${base.toFixed(0)} MB -> peak ${peak.toFixed(0)} MB -> ${after.toFixed(0)} MB after 3 s; fds ${fds0} -> ${gw.fds()}`);
      assert.equal(ended, FLOOD);
      assert.ok(after - base < 48, `RSS grew by ${(after - base).toFixed(0)} MB (baseline ${base.toFixed(0)} MB, after ${after.toFixed(0)} MB)`);
      assert.ok(gw.fds() <= fds0 + 2, `fds ${fds0} -> ${gw.fds()}`);
    } finally { await gw.stop(); }
  });
});
