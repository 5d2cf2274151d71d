/**
 * Issue 49, item 6: the security model's vantage-point table in README.md is the data
 * `attack-matrix.netns.test.ts` runs (src/testkit/attack-matrix.ts), cell for cell. Regenerate the README's
 * block with `node -e "console.log(require('./lib/testkit/attack-matrix').matrixMarkdown())"`.
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { describe, it } from 'node:test';
import { MATRIX, VANTAGES, matrixMarkdown } from '../testkit/attack-matrix';

const readme = fs.readFileSync(path.resolve(__dirname, '..', '..', 'README.md'), 'utf8');

describe('the security model\'s vantage-point table', () => {
  it('README.md holds exactly the table the netns test runs', () => {
    const m = /<!-- attack-matrix:begin[^>]*-->\n([\s\S]*?)\n<!-- attack-matrix:end -->/.exec(readme);
    assert.ok(m, 'README.md has an attack-matrix block');
    assert.equal(m[1], matrixMarkdown());
  });

  it('every row names its threat and gives every vantage point an outcome of the documented kinds', () => {
    const kinds = /^(flows|no connection|refused [ab]:[a-z_]+|HTTP \d{3}|no address|n\/a)$/;
    assert.equal(new Set(MATRIX.map((r) => r.key)).size, MATRIX.length, 'row keys are unique');
    for (const r of MATRIX) {
      assert.ok(r.threat.length > 20, `${r.key}: a threat`);
      assert.deepEqual(Object.keys(r.expect).sort(), [...VANTAGES].sort(), `${r.key}: one outcome per vantage point`);
      for (const v of VANTAGES) assert.match(r.expect[v], kinds, `${r.key}/${v}`);
    }
  });

  it('the review\'s scenario is a cell and fails closed', () => {
    const row = MATRIX.find((r) => r.key === 'peer-handler')!;
    assert.equal(row.expect.stranger, 'no connection');
    assert.match(row.threat, /review's scenario/);
  });
});
