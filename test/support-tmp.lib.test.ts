// test/support/tmp.ts keeps the library's tests from leaving directories in /tmp (cdk8s's Testing.app() left one
// per app: 1,231 on the lab machine), and the proxy's test kit removes its own under jest too. Shown on a suite
// that fails: its directories are gone after it all the same.
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { suiteTmpDir } from './support/tmp';

test('a failing suite still removes every directory it made: its own, the proxy test kit\'s PKI, the synthesized app output', () => {
  const report = path.join(suiteTmpDir('mm-fixture-report-'), 'made.json');
  const root = path.join(__dirname, '..');
  const r = spawnSync('npx', ['jest', '--rootDir', root, '--roots', '<rootDir>/test/fixtures/tmp-cleanup', '--testMatch', '**/*.fixture.ts', '--ci'],
    { cwd: root, encoding: 'utf8', env: { ...process.env, MM_FIXTURE_REPORT: report }, timeout: 120_000 });
  expect(r.status).toBe(1); // the fixture's second test fails on purpose
  expect(r.stderr).toContain('failed on purpose');
  const made: string[] = JSON.parse(fs.readFileSync(report, 'utf8'));
  expect(made).toHaveLength(3);
  expect(made[1]).toMatch(/mmproxy-pki-/);
  expect(made[2]).toMatch(/mm-test-app-.*\/dist$/);
  for (const p of made) expect({ p, exists: fs.existsSync(p) }).toEqual({ p, exists: false });
});
