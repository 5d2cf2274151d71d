/**
 * The MMPROXY_TLS_TEST_* switches (session tickets, an early KeyUpdate) exist in test builds only (issue 49):
 * the shipped addon (proxy/Dockerfile builds with MM_PROXY_SHIPPED=1) is compiled without them, so no
 * environment variable turns them on in production. Here: the addon the tests load is a test build (the
 * tls-records tests of those switches run on it), a shipped build of the same sources made in a temp
 * directory reports testHooks false, and in the sources every read of such a variable sits inside
 * `#ifdef MMPROXY_TEST_HOOKS`.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { HANG_GUARD_MS, tmpDir } from '../testkit/helpers';

const PROXY = path.join(__dirname, '..', '..');

describe('test-only switches are absent from the shipped addon', { timeout: 5 * HANG_GUARD_MS }, () => {
  it('the addon the tests load is a test build', () => {
    const addon = require(path.join(PROXY, 'build', 'Release', 'mmproxy.node')) as { testHooks: boolean };
    assert.equal(addon.testHooks, true);
  });

  it('a shipped build (MM_PROXY_SHIPPED=1) of the same sources has no test switches', () => {
    const dir = tmpDir('mm-addon-shipped-');
    try {
      fs.cpSync(path.join(PROXY, 'native'), path.join(dir, 'native'), { recursive: true });
      fs.copyFileSync(path.join(PROXY, 'binding.gyp'), path.join(dir, 'binding.gyp'));
      const r = spawnSync(process.execPath, [path.join(PROXY, 'scripts', 'build-addon.js')], {
        cwd: dir, env: { ...process.env, MM_PROXY_SHIPPED: '1' }, encoding: 'utf8', timeout: 200_000,
      });
      assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
      const probe = spawnSync(process.execPath, ['-e', `process.stdout.write(String(require(${JSON.stringify(path.join(dir, 'build', 'Release', 'mmproxy.node'))}).testHooks))`], {
        env: { ...process.env, MMPROXY_TLS_TEST_TICKETS: '2', MMPROXY_TLS_TEST_EARLY_KEY_UPDATE: '1' }, encoding: 'utf8',
      });
      assert.equal(probe.stdout, 'false', probe.stderr);
    } finally { fs.rmSync(dir, { recursive: true, force: true }); }
  });

  it('every read of an MMPROXY_TLS_TEST_ variable is inside #ifdef MMPROXY_TEST_HOOKS', () => {
    for (const f of fs.readdirSync(path.join(PROXY, 'native')).filter((n) => /\.[ch]$/.test(n))) {
      let depth = 0;
      let hooks = -1;
      for (const [i, line] of fs.readFileSync(path.join(PROXY, 'native', f), 'utf8').split('\n').entries()) {
        if (/^\s*#\s*if/.test(line)) { depth++; if (/#\s*ifdef\s+MMPROXY_TEST_HOOKS\b/.test(line)) hooks = depth; }
        if (/^\s*#\s*else/.test(line) && hooks === depth) hooks = -1;
        if (/^\s*#\s*endif/.test(line)) { if (hooks === depth) hooks = -1; depth--; }
        if (/getenv\("MMPROXY_TLS_TEST_/.test(line)) assert.ok(hooks > 0, `${f}:${i + 1} reads a test switch outside #ifdef MMPROXY_TEST_HOOKS`);
      }
    }
  });
});
