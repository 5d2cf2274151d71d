/**
 * The admin `/status` (issue 28; read by `migration-mesh status` through the API server's pod proxy):
 * which planned addresses this replica holds, tunnels open per peer on both sides, and the last errors
 * (a refusal with its reason, a reset with its peer), from two real gateways on loopback.
 */
import assert from 'node:assert/strict';
import * as http from 'node:http';
import * as net from 'node:net';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayHandle } from '../gateway';
import { RECENT_ERRORS, RecentErrors, runtimeStatus, type RuntimeStatus } from '../runtime-status';
import { startEcho } from '../testkit/echo';
import { configFor } from '../testkit/gateways';
import { HANG_GUARD_MS, silent, sleep } from '../testkit/helpers';

function status(g: GatewayHandle): Promise<RuntimeStatus> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port: g.addresses().admin.port, path: '/status' }, (res) => {
      let body = '';
      res.on('data', (d) => { body += d; });
      res.on('end', () => (res.statusCode === 200 ? resolve(JSON.parse(body)) : reject(new Error(`${res.statusCode} ${body}`))));
    }).on('error', reject);
  });
}

async function until(what: string, ok: () => Promise<boolean>): Promise<void> {
  for (const end = Date.now() + HANG_GUARD_MS; Date.now() < end;) { if (await ok()) return; await sleep(25); }
  throw new Error(`timed out waiting for ${what}`);
}

describe('admin /status', () => {
  let a: GatewayHandle;
  let b: GatewayHandle;
  let echo: Awaited<ReturnType<typeof startEcho>>;
  let dst = { host: '127.0.0.1', port: 1 };
  before(async () => {
    echo = await startEcho();
    const cfgB = await configFor('west', 'east', 1, 'plaintext', undefined);
    b = await startGateway(cfgB, { logger: silent, unsafeAllowLoopbackDestinations: true });
    const cfgA = await configFor('east', 'west', cfgB.listen!.tunnel!.port, 'plaintext', undefined, { ownAddresses: ['10.201.0.1', '10.201.0.3'] });
    // replica 0 of east: holds its own address and, now, the VIP 10.201.0.3
    a = await startGateway(cfgA, { logger: silent, originalDestination: () => dst, interfaceAddresses: () => new Set(['10.201.0.1', '10.201.0.3']) });
  });
  after(async () => { await a.close(); await b.close(); await echo.close(); });

  it('says ready, which planned addresses this pod holds, every peer, and no errors yet', async () => {
    const s = await status(a);
    assert.equal(s.cluster, 'east');
    assert.equal(s.readiness, 'ready');
    assert.deepEqual(s.addresses, [{ address: '10.201.0.1', held: true }, { address: '10.201.0.3', held: true }]);
    assert.deepEqual(s.peers, { west: { tunnels: { origin: 0, terminus: 0 } } });
    assert.deepEqual(s.lastErrors, []);
    assert.deepEqual((await status(b)).addresses, []); // no ownAddresses configured: nothing to hold
  });

  it('counts an open tunnel on both sides, per peer, and records its reset with the peer', async () => {
    dst = { host: '127.0.0.1', port: echo.port };
    const c = net.connect({ host: '127.0.0.1', port: a.addresses().intercept.port });
    c.on('error', () => undefined);
    await new Promise<void>((r) => c.once('connect', () => r()));
    c.write('ping');
    await new Promise<void>((r) => c.once('data', () => r()));
    await until('the tunnel on both sides', async () => (await status(a)).peers.west.tunnels.origin === 1 && (await status(b)).peers.east.tunnels.terminus === 1);
    const resetAt = Date.now();
    c.resetAndDestroy();
    await until('the reset recorded', async () => (await status(a)).lastErrors.some((e) => e.reason === 'reset'));
    const s = await status(a);
    assert.deepEqual(s.peers.west.tunnels, { origin: 0, terminus: 0 });
    assert.deepEqual({ ...s.lastErrors[0], at: undefined }, { at: undefined, side: 'origin', reason: 'reset', peer: 'west' });
    const at = Date.parse(s.lastErrors[0].at); // the reset's time: after it was sent, before it was read back (no window)
    assert.ok(at >= resetAt && at <= Date.now(), `recorded at ${s.lastErrors[0].at}, reset sent at ${new Date(resetAt).toISOString()}`);
  });

  it('records a refusal with its reason, newest first', async () => {
    dst = { host: '203.0.113.9', port: 80 }; // in no peer's CIDRs
    const c = net.connect({ host: '127.0.0.1', port: a.addresses().intercept.port });
    c.on('error', () => undefined);
    await new Promise<void>((r) => c.once('close', () => r()));
    const s = await status(a);
    assert.deepEqual({ side: s.lastErrors[0].side, reason: s.lastErrors[0].reason }, { side: 'origin', reason: 'no_route' });
    assert.equal(s.lastErrors[1].reason, 'reset');
  });
});

describe('RecentErrors', () => {
  it(`keeps the newest ${RECENT_ERRORS}`, () => {
    let t = 0;
    const r = new RecentErrors(() => ++t * 1000);
    for (let i = 0; i < RECENT_ERRORS + 5; i++) r.record('terminus', `r${i}`);
    const l = r.list();
    assert.equal(l.length, RECENT_ERRORS);
    assert.equal(l[0].reason, `r${RECENT_ERRORS + 4}`);
    assert.equal(l[RECENT_ERRORS - 1].reason, 'r5');
    assert.equal(l[0].at, new Date((RECENT_ERRORS + 5) * 1000).toISOString());
  });
});

describe('runtimeStatus', () => {
  it("files the trust table's publications (keyed PEER/HOST:PORT) under each peer; a peer never published to has none", () => {
    const s = runtimeStatus({
      cluster: 'east', readiness: 'ready', ownAddresses: [], here: new Set(), peers: ['west', 'west-2', 'north'], tunnels: [], errors: new RecentErrors(),
      published: {
        'west/10.99.0.3:15443': { at: '2026-01-01T00:00:00.000Z', status: 'accepted' },
        'west/10.99.0.4:15443': { at: '2026-01-01T00:00:01.000Z', status: 'unreachable' },
        'west-2/10.99.0.9:15443': { at: '2026-01-01T00:00:02.000Z', status: 'unknown_fleet' },
      },
    });
    assert.deepEqual(s.peers.west.publications, [
      { gateway: '10.99.0.3:15443', at: '2026-01-01T00:00:00.000Z', status: 'accepted' },
      { gateway: '10.99.0.4:15443', at: '2026-01-01T00:00:01.000Z', status: 'unreachable' },
    ]);
    assert.deepEqual(s.peers['west-2'].publications, [{ gateway: '10.99.0.9:15443', at: '2026-01-01T00:00:02.000Z', status: 'unknown_fleet' }]);
    assert.deepEqual(s.peers.north, { tunnels: { origin: 0, terminus: 0 }, publications: [] });
  });
});
