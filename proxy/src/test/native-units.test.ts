/**
 * Unit checks of the addon's record opening (native/tls13rec.c) and its one readiness wait (native/ioready.c),
 * compiled by this test with src/testkit/native-units.c under AddressSanitizer + UBSan (issue 26 items 3 and 7):
 * tls13_open refuses a record from its header alone (buffers of the exact size: a read past them is a report)
 * and wipes what a failed open decrypted; mm_wait times out, reports readiness, lets the cancel eventfd win,
 * reports POLLERR with SO_ERROR and the socket's slot, treats events 0 as errors only, and retries EINTR to the
 * deadline; mm_budget (native/budget.c, issue 52 item 3) holds its rate and shares it fairly; the event pool
 * (native/relaypool.c, issue 52 item 2) keeps a budget, both directions, the half-close and a reset's bytes.
 * Needs cc, the OpenSSL headers and libcrypto (Debian: build-essential, libssl-dev); fails, saying so,
 * without them.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { HANG_GUARD_MS, tmpDir } from '../testkit/helpers';

const root = path.resolve(__dirname, '..', '..');
const ENV = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LD_PRELOAD'));

describe('addon units under ASan + UBSan: tls13_open\'s own checks, mm_wait, mm_budget', { timeout: 5 * HANG_GUARD_MS }, () => {
  let bin = '';
  before(() => {
    const dir = tmpDir('mmproxy-units-');
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    bin = path.join(dir, 'native-units');
    const r = spawnSync('cc', ['-O1', '-g', '-Wall', '-Wextra', '-Werror', '-fsanitize=address,undefined', '-fno-sanitize-recover=all',
      '-I', path.join(root, 'native'), '-o', bin, path.join(root, 'src', 'testkit', 'native-units.c'), path.join(root, 'native', 'ioready.c'),
      path.join(root, 'native', 'tls13rec.c'), path.join(root, 'native', 'budget.c'), path.join(root, 'native', 'splice.c'), path.join(root, 'native', 'relaypool.c'), '-lcrypto', '-lpthread'], { encoding: 'utf8', timeout: 90_000, env: ENV });
    if (r.error || r.status !== 0) {
      throw new Error(`compiling the addon units failed (needs cc with ASan/UBSan, the OpenSSL headers and libcrypto: apt-get install build-essential libssl-dev): ${r.error?.message ?? r.stderr}`);
    }
  });

  for (const [name, what] of [
    ['open-checks-length', 'tls13_open refuses from the header alone: ciphertext over 2^14+256, inner plaintext over 2^14+1, outer type, no room for a type byte'],
    ['open-wipes-on-failure', 'a record that does not open (a replay) leaves nothing decrypted behind'],
    ['wait-timeout', 'mm_wait: the deadline'],
    ['wait-ready', 'mm_wait: a readable socket'],
    ['wait-cancel-first', 'mm_wait: the cancel eventfd wins over a readable socket'],
    ['wait-errors-only', 'mm_wait: events 0 is polled for errors only'],
    ['wait-sockerr', 'mm_wait: a reset socket is MM_SOCKERR with its slot and ECONNRESET'],
    ['wait-eintr', 'mm_wait: signals every 10 ms do not end the wait before its deadline'],
    ['budget-rate', 'mm_budget: one greedy user gets the rate (+-1% over 2 simulated s), a rate of 0 is refused'],
    ['budget-fair', 'mm_budget: four greedy users get the rate together and each a quarter (+-2%)'],
    ['budget-idle', 'mm_budget: the shares of three idle users go to the one that sends'],
    ['budget-late', 'mm_budget: a user that joins late has its quarter in its first second; after it leaves, the others a third each'],
    ['budget-threads', 'mm_budget: four threads on the real clock never over the rate, each moving'],
    ['budget-splice', 'splice_run with a budget on one direction over loopback TCP: never over 10 MB/s, joins and leaves the budget'],
    ['pool-budget', 'the event pool with a budgeted tunnel: 70-105% of 10 MB/s, joins the budget and leaves it on cancel'],
    ['pool-budget-timer', 'the event pool: a budget-held tunnel with no socket event left is woken by its timer (600 kB at 1 MB/s in 0.35-2.5 s)'],
    ['pool-many', 'the event pool, 16 tunnels on 2 threads: both directions exact, a FIN one way while 4 MiB flow the other, pipes closed, no descriptor left'],
    ['pool-reset', 'the event pool: 100000 bytes sent just before an RST reach the destination, then the reset'],
  ]) {
    it(what, () => {
      const r = spawnSync(bin, [name], { encoding: 'utf8', timeout: 30_000, env: { ...ENV, ASAN_OPTIONS: 'detect_leaks=1' } });
      assert.equal(r.status, 0, `${name}: ${r.error?.message ?? ''}${r.stderr}`);
      assert.equal(r.stdout.trim(), `ok ${name}`);
    });
  }
});
