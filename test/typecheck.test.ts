/**
 * The type check of the test suites. ts-jest only transpiles them (jest.config.js), so this is where a type
 * error in a test or a test helper fails: tsc once over test/ with tsconfig.test.json (strict, incremental;
 * its build info is kept in node_modules/.cache/migration-mesh). The library itself is checked by the build.
 */
import { spawnSync } from 'child_process';
import * as path from 'path';

const ROOT = path.resolve(__dirname, '..');

test('the test suites and their helpers type-check (tsc -p tsconfig.test.json)', () => {
  const tsc = require.resolve('typescript/bin/tsc', { paths: [ROOT] });
  const r = spawnSync(process.execPath, [tsc, '-p', path.join(ROOT, 'tsconfig.test.json')], { cwd: ROOT, encoding: 'utf8' });
  expect(`${r.stdout}${r.stderr}`.trim()).toBe('');
  expect(r.status).toBe(0);
}, 300_000);
