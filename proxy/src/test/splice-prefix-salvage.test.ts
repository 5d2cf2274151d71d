/**
 * The splice relays find a destination's reset where they find it: a failed write of JavaScript's prefix (the
 * bytes read with the OPEN) takes the same salvage as a failed splice (native/splice.c; the rule in ioready.h,
 * docs/dev/lab/2026-12-03-salvage-unsent.md): what the destination answered before its reset still reaches the
 * tunnel, then the reset. pass_prefix reset at once and dropped it. Both relays (the thread, the event pool), in
 * C over loopback TCP (test/native/splice-prefix.c) under ASan + UBSan: the order (answer queued, then RST, then the
 * prefix write) is not a race there as it is through a gateway.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { before, describe, it } from 'node:test';
import { tmpDir } from '../testkit/helpers';

const root = path.resolve(__dirname, '..', '..');
const ENV = Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'LD_PRELOAD'));

describe('splice relays: a failed prefix write salvages the destination\'s answer', { timeout: 120_000 }, () => {
  let bin = '';
  before(() => {
    const dir = tmpDir('mmproxy-prefix-');
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    bin = path.join(dir, 'splice-prefix');
    const n = (f: string) => path.join(root, 'native', f);
    const r = spawnSync('cc', ['-O1', '-g', '-Wall', '-Wextra', '-Werror', '-fsanitize=address,undefined', '-fno-sanitize-recover=all',
      '-I', path.join(root, 'native'), '-o', bin, path.join(root, 'src', 'test', 'native', 'splice-prefix.c'),
      n('ioready.c'), n('budget.c'), n('splice.c'), n('relaypool.c'), '-lpthread'], { encoding: 'utf8', timeout: 90_000, env: ENV });
    if (r.error || r.status !== 0) throw new Error(`compiling the splice case failed (needs cc with ASan/UBSan: apt-get install build-essential): ${r.error?.message ?? r.stderr}`);
  });

  for (const relay of ['thread', 'pool']) {
    it(`${relay}: the origin reads the destination's whole answer, then the reset`, () => {
      const r = spawnSync(bin, [relay], { encoding: 'utf8', timeout: 30_000, env: ENV });
      assert.equal(r.status, 0, `${r.stdout}${r.stderr}`);
      assert.match(r.stdout, new RegExp(`^ok ${relay}: 60000 bytes, then the reset$`, 'm'));
    });
  }
});
