/**
 * docs/api/ is the API reference TypeDoc generates from the TSDoc of index.ts's exports (typedoc.json,
 * typedoc-plugin-markdown): this suite generates it again into a temp directory and fails when the committed
 * tree differs from it in any file, added, removed or changed, so the reference cannot go stale. The fix is
 * always the same: `npm run docs:api`, then commit docs/api/.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const root = path.join(__dirname, '..');

/** Every file under dir, relative, sorted, with its text. */
function files(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string, rel: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path.join(d, e.name), r);
      else out.set(r, fs.readFileSync(path.join(d, e.name), 'utf8'));
    }
  };
  if (fs.existsSync(dir)) walk(dir, '');
  return new Map([...out].sort(([a], [b]) => (a < b ? -1 : 1)));
}

test('docs/api is what `npm run docs:api` generates from the TSDoc now', () => {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-api-docs-'));
  try {
    const out = path.join(tmp, 'api');
    execFileSync(process.execPath, [path.join(root, 'node_modules', 'typedoc', 'bin', 'typedoc'), '--out', out], {
      cwd: root, encoding: 'utf8', timeout: 240_000, stdio: ['ignore', 'pipe', 'pipe'],
    });
    const want = files(out);
    const have = files(path.join(root, 'docs', 'api'));
    expect(want.size).toBeGreaterThan(50);
    expect(want.has('classes/CrossClusterMigrationMesh.md')).toBe(true);
    const stale = [
      ...[...want.keys()].filter((f) => !have.has(f)).map((f) => `missing: docs/api/${f}`),
      ...[...have.keys()].filter((f) => !want.has(f)).map((f) => `not generated any more: docs/api/${f}`),
      ...[...want.keys()].filter((f) => have.has(f) && have.get(f) !== want.get(f)).map((f) => `differs: docs/api/${f}`),
    ];
    // one message naming the files and the fix
    expect(stale.length === 0 ? 'current' : `docs/api is stale (run \`npm run docs:api\` and commit docs/api/):\n${stale.join('\n')}`).toBe('current');
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}, 300_000);
