/**
 * The pack tests' cache (test/support/packed.ts) is per checkout: it was one `/tmp/mm-packed` for every checkout on
 * the machine, and a checkout packing a new source state removed every other key, so two checkouts running the
 * pack tests at once deleted each other's tarball between its pack and its install.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { dropOthers, packCacheDir } from './support/packed';

let dir: string;
beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-pack-cache-')); });
afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

test('two checkouts get two caches, one checkout reached by a symlink the same one, none the old shared directory', () => {
  const [a, b] = ['a', 'b'].map((n) => fs.mkdirSync(path.join(dir, n), { recursive: true })!);
  fs.symlinkSync(a, path.join(dir, 'link'));
  expect(packCacheDir(a)).not.toBe(packCacheDir(b));
  expect(packCacheDir(path.join(dir, 'link'))).toBe(packCacheDir(a));
  for (const c of [a, b]) {
    expect(path.dirname(packCacheDir(c))).toBe(os.tmpdir()); // same file system as the tests' projects: cp -al links
    expect(path.basename(packCacheDir(c))).toMatch(/^mm-packed-[0-9a-f]{12}$/); // never inside the old shared mm-packed
  }
});

test("a cleanup removes its own checkout's other keys only: another checkout's tarball and this one's temp dirs stay", () => {
  const mine = path.join(dir, 'mine'), theirs = path.join(dir, 'theirs');
  for (const d of [mine, theirs]) fs.mkdirSync(d);
  for (const e of ['aaaa.tgz', 'aaaa-app-1234', 'bbbb.tgz', 'bbbb-app-5678', '.tmp-x1']) fs.mkdirSync(path.join(mine, e));
  fs.writeFileSync(path.join(theirs, 'bbbb.tgz'), 'their tarball');
  dropOthers(mine, 'aaaa');
  expect(fs.readdirSync(mine).sort()).toEqual(['.tmp-x1', 'aaaa-app-1234', 'aaaa.tgz']);
  expect(fs.readFileSync(path.join(theirs, 'bbbb.tgz'), 'utf8')).toBe('their tarball');
});
