/** settleAddresses: waits while an IPv6 address is tentative (DAD), stops at once on a DAD failure, bounded in time. */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { parseIfInet6, settleAddresses } from '../settle-addresses';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-settle-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));
const file = path.join(dir, 'if_inet6');
const line = (flags: string, ifname = 'xc0') => `fd0000000000000000000000000000a1 03 40 00 ${flags} ${ifname}\n`;
const LO = '00000000000000000000000000000001 01 80 10 80       lo\n';

describe('settleAddresses', () => {
  it('parses /proc/net/if_inet6 lines', () => {
    assert.deepEqual(parseIfInet6(LO + line('c0')), [
      { address: '0000:0000:0000:0000:0000:0000:0000:0001', ifname: 'lo', flags: 0x80 },
      { address: 'fd00:0000:0000:0000:0000:0000:0000:00a1', ifname: 'xc0', flags: 0xc0 },
    ]);
  });

  it('returns at once when nothing is tentative', async () => {
    fs.writeFileSync(file, LO + line('80'));
    // one poll would sleep 60 s: "at once" is told from "after a poll" by far more than a loaded machine's delays
    const r = await settleAddresses(120_000, file, 60_000);
    assert.equal(r.tentative.length, 0);
    assert.ok(r.waitedMs < 30_000, `waited ${r.waitedMs} ms`);
  });

  it('waits while an address is tentative (0x40) and returns when DAD is done', async () => {
    fs.writeFileSync(file, LO + line('c0'));
    setTimeout(() => fs.writeFileSync(file, LO + line('80')), 300);
    // a 60 s timeout: returning well before it means DAD's end was seen, not the timeout
    const r = await settleAddresses(60_000, file);
    assert.equal(r.tentative.length, 0);
    assert.ok(r.waitedMs >= 250 && r.waitedMs < 30_000, `waited ${r.waitedMs} ms`);
  });

  it('stops at once on a DAD failure (0x08) and reports it', async () => {
    fs.writeFileSync(file, LO + line('c8'));
    const r = await settleAddresses(120_000, file, 60_000);
    assert.equal(r.dadFailed.length, 1);
    assert.ok(r.waitedMs < 30_000, `waited ${r.waitedMs} ms`);
  });

  it('gives up after the timeout and reports what is still tentative', async () => {
    fs.writeFileSync(file, LO + line('c0'));
    const r = await settleAddresses(300, file);
    assert.equal(r.tentative.length, 1);
    assert.ok(r.waitedMs >= 300 && r.waitedMs < 10_000, `waited ${r.waitedMs} ms`);
  });
});
