/**
 * No trust without authentication (issue 49 item 2): a PUBLISH that arrives without a verified peer
 * certificate (a plaintext tunnel port) is refused as TRUST_UNAUTHENTICATED whatever cluster it claims,
 * and reaches neither the trust table nor the trust container; and the sequence of an accepted PUBLISH
 * cannot keep a later genuine one out: a sequence far ahead of the receiver's clock is refused
 * (TRUST_FUTURE), and an older sequence is refused (TRUST_STALE) only within two repush intervals of the
 * last acceptance.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startGateway, type GatewayHandle } from '../gateway';
import { CONNECTION_ID_BYTES, RefusalCode, TRUST_SEQUENCE_AHEAD_MS, encodeTrustPublish, refusalName } from '../protocol';
import { publishOnce } from '../trust/publisher';
import { TrustTable } from '../trust/table';
import { configFor } from '../testkit/gateways';
import { makeCert } from '../testkit/ca-certs';
import { HANG_GUARD_MS, silent, sleep, tmpDir } from '../testkit/helpers';

const H = 3600_000;
const ca = (cn: string, now = Date.now()) => makeCert(cn, now - H, now + 100 * H).der;
const publish = (cluster: string, sequence: bigint, certs: Buffer[]) => ({ connectionId: crypto.randomBytes(CONNECTION_ID_BYTES), cluster, sequence, certs });

describe('a plaintext tunnel port refuses every PUBLISH (TRUST_UNAUTHENTICATED)', { timeout: 5 * HANG_GUARD_MS }, () => {
  let west: GatewayHandle;
  let dir: string;
  const heard: string[] = [];
  let channel: net.Socket | undefined;

  before(async () => {
    dir = tmpDir('mm-trust-auth-');
    const cfg = await configFor('west', 'east', 1, 'plaintext', undefined, {
      trust: { socket: path.join(dir, 'trust.sock'), repushIntervalMs: 60_000, retryMs: 1000 },
    });
    west = await startGateway(cfg, { logger: silent });
    // a stand-in trust container on the local channel: it must never hear of a peer bundle
    channel = net.connect(path.join(dir, 'trust.sock'));
    channel.setEncoding('utf8');
    channel.on('data', (c: string) => heard.push(c));
    await new Promise<void>((r) => channel!.once('connect', () => r()));
  });
  after(async () => { channel?.destroy(); await west?.close(); fs.rmSync(dir, { recursive: true, force: true }); });

  it('refuses a well-formed bundle claiming to be a configured peer, with any sequence', async () => {
    const target = { cluster: 'west', host: '127.0.0.1', port: west.addresses().tunnel.port };
    const ctx = { fleet: 'fleet', timeoutMs: 3000, headerMaxBytes: 4096 };
    for (const seq of [BigInt(Date.now()), 0xffff_ffff_ffff_ffffn]) {
      const r = await publishOnce(ctx, target, encodeTrustPublish(publish('east', seq, [ca('kubevirt.io@east')])));
      assert.equal(refusalName(r.status), 'trust_unauthenticated');
      assert.match(r.reason, /mutual TLS/);
    }
    assert.deepEqual(west.trust.table.toJSON().peers, []);
    await sleep(200);
    assert.equal(heard.join('').includes('"peer"'), false, 'nothing was handed to the trust container');
    const m = await west.registry.getSingleMetric('mm_trust_received_total')!.get();
    const v = m.values.find((x) => x.labels.result === 'trust_unauthenticated');
    assert.equal(v?.value, 2);
    assert.equal(v?.labels.peer, 'unauthenticated', 'the claimed cluster is not believed, not even as a label');
  });
});

describe('the sequence of a PUBLISH cannot lock a peer out (TrustTable.judge)', () => {
  const repush = 300_000;
  const isPeer = (c: string) => c === 'east';
  const t0 = Date.parse('2026-12-02T06:00:00Z');

  it('refuses a sequence more than TRUST_SEQUENCE_AHEAD_MS ahead, so a huge one is never stored', () => {
    const table = new TrustTable('west', () => repush);
    const huge = table.judge(publish('east', 0xffff_ffff_ffff_ffffn, [ca('a', t0)]), 'east', isPeer, t0);
    assert.equal(huge.ok, false);
    assert.equal(!huge.ok && refusalName(huge.code), 'trust_future');
    const ahead = table.judge(publish('east', BigInt(t0 + TRUST_SEQUENCE_AHEAD_MS + 1), [ca('a', t0)]), 'east', isPeer, t0);
    assert.equal(!ahead.ok && ahead.code, RefusalCode.TRUST_FUTURE);
    // nothing was stored: the genuine publisher, with a right clock, is accepted right after
    assert.equal(table.judge(publish('east', BigInt(t0), [ca('b', t0)]), 'east', isPeer, t0 + 1).ok, true);
    // within the skew allowance: accepted
    assert.equal(table.judge(publish('east', BigInt(t0 + TRUST_SEQUENCE_AHEAD_MS), [ca('a', t0)]), 'east', isPeer, t0 + 2).ok, true);
  });

  it('refuses an older sequence only within two repush intervals of the last acceptance', () => {
    const table = new TrustTable('west', () => repush);
    // a peer whose clock ran 9 minutes ahead, then stepped back and read a new CA
    assert.equal(table.judge(publish('east', BigInt(t0 + 9 * 60_000), [ca('old', t0)]), 'east', isPeer, t0).ok, true);
    const soon = table.judge(publish('east', BigInt(t0 + 1000), [ca('new', t0)]), 'east', isPeer, t0 + 1000);
    assert.equal(!soon.ok && refusalName(soon.code), 'trust_stale');
    // its republications keep the old sequence; refusals do not renew the hold
    assert.equal(table.judge(publish('east', BigInt(t0 + 1000), [ca('new', t0)]), 'east', isPeer, t0 + 2 * repush - 1).ok, false);
    const later = table.judge(publish('east', BigInt(t0 + 1000), [ca('new', t0)]), 'east', isPeer, t0 + 2 * repush);
    assert.equal(later.ok, true, 'heard again two repush intervals after the last acceptance');
    assert.equal(table.bundles()[0].certs[0].subject.includes('new'), true);
  });

  it('keeps refusing a reordered older bundle while the newer one is being renewed', () => {
    const table = new TrustTable('west', () => repush);
    assert.equal(table.judge(publish('east', BigInt(t0), [ca('new', t0)]), 'east', isPeer, t0).ok, true);
    for (let k = 1; k <= 3; k++) {
      const now = t0 + k * (repush + 30_000); // each renewal late by 30 s: still within the hold
      assert.equal(table.judge(publish('east', BigInt(t0), [ca('new', t0)]), 'east', isPeer, now).ok, true, 'renewal');
      const old = table.judge(publish('east', BigInt(t0 - 5000), [ca('old', t0)]), 'east', isPeer, now + 500);
      assert.equal(!old.ok && old.code, RefusalCode.TRUST_STALE);
    }
  });
});
