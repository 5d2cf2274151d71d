/**
 * Nothing outside the repository (issue 53): no file git tracks (or would add) reads or cites a path outside the
 * checkout, so a clone with nothing beside it runs its tests and its readers can open every source it names.
 * Upstream sources are cited by URL (and version), or by a page of this repository; upstream schemas the tests
 * need are committed under test/fixtures/upstream with their source and licence. The rules are in
 * test/support/self-contained.ts; each is shown to catch its case on a small tree made here.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Finding, outsideReferences } from './support/self-contained';

const ROOT = path.resolve(__dirname, '..');

/** Every file git tracks or would add (not ignored), that exists and is text (no NUL byte in its first 8 KiB). */
function repositoryTexts(): Map<string, string> {
  const names = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 2 ** 20 })
    .split('\0').filter(Boolean);
  const texts = new Map<string, string>();
  for (const f of new Set(names)) {
    const abs = path.join(ROOT, f);
    if (!fs.existsSync(abs) || !fs.statSync(abs).isFile()) continue;
    const bytes = fs.readFileSync(abs);
    if (bytes.subarray(0, 8192).includes(0)) continue;
    texts.set(f, bytes.toString('utf8'));
  }
  return texts;
}

/**
 * Findings that may stay for a while, each with why (none today: the README rewrite of issue 53 removed the last).
 * An entry that matches nothing fails the test, so the list cannot outlive its reason.
 */
const PENDING: ReadonlyArray<{ file: string; contains: string; why: string }> = [];

const said = (f: Finding) => `${f.file}:${f.line}: ${f.rule}: ${f.text}`;

/**
 * The two files that hold the rules and the cases that show each rule catching its case: their patterns and
 * fixture strings spell what the rules look for, so their own findings are expected. They read no file outside
 * the repository (the test reads only what `git ls-files` names under the root).
 */
const RULE_FILES = new Set(['test/self-contained.test.ts', 'test/support/self-contained.ts']);

test('no file of the repository reads or cites a path outside it', () => {
  const texts = repositoryTexts();
  expect(texts.size).toBeGreaterThan(500);
  expect(texts.has('test/fixtures/upstream/SOURCES.md')).toBe(true);
  const findings = outsideReferences(texts).filter((f) => !RULE_FILES.has(f.file));
  const lineOf = (f: Finding) => texts.get(f.file)!.split('\n')[f.line - 1];
  const pendingFor = (p: (typeof PENDING)[number], f: Finding) => p.file === f.file && lineOf(f).includes(p.contains);
  expect(findings.filter((f) => !PENDING.some((p) => pendingFor(p, f))).map(said)).toEqual([]);
  const unused = PENDING.filter((p) => !findings.some((f) => pendingFor(p, f)));
  expect(unused.map((p) => `${p.file}: "${p.contains}" is no longer there: delete its PENDING entry`)).toEqual([]);
});

describe('each rule catches its case (a small tree made here)', () => {
  const sibling = ['..', 'shared'].join('/');
  const cases: Array<[string, string, string, string]> = [
    ['a doc citing the workspace folder beside the checkout', 'docs/a.md', `facts: \`${sibling}/reference/x.md\``, 'the workspace folder beside the checkout'],
    ['code reading the workspace reference folder', 'src/a.ts', `// schemas in ${'shared'}/schemas/kubevirt`, 'the workspace reference folder'],
    ['an absolute workspace path', 'scripts/a.sh', `cat ${'/wo'}rk/wt/x`, 'an absolute path of the workspace'],
    ["root's home", 'test/a.ts', `const m = '${'/ro'}ot/go/pkg/mod';`, 'a home directory of this machine'],
    ['the parent of the root, spelled', 'test/a.ts', `// it must sit beside the checkout as <repoRoot>${'/..'}/x`, 'the parent of the repository root'],
    ['the parent of the root, joined', 'test/a.ts', `const d = path.join(ROOT, '..', 'x');`, 'the parent of the repository root'],
    ['a code path climbing out', 'test/support/a.ts', `const d = path.resolve(__dirname, '../../..', 'x');`, 'a code path that climbs out of the repository'],
    ['a code path climbing out, double-quoted', 'test/support/a.ts', 'const d = path.join(__dirname, "..", "..", "..", "x");', 'a code path that climbs out of the repository'],
    ['the parent of the root, joined as one segment', 'test/a.ts', `const d = path.resolve(REPO_ROOT, "../x");`, 'the parent of the repository root'],
    ['an import from outside', 'src/a.ts', `import { x } from '../../elsewhere/x';`, 'an import from outside the repository'],
    ['a require from outside', 'test/a.ts', `const x = require('../../elsewhere/x');`, 'an import from outside the repository'],
    ['a compiled file climbing out of lib/', 'src/a.ts', `const d = path.join(__dirname, '..', '..', '..', 'x');`, 'a code path that climbs out of the repository'],
    ['a Markdown link out', 'docs/a.md', 'see [the notes](../../notes/x.md)', 'a link out of the repository'],
    ['a Markdown file that is not here, without a URL', 'src/a.ts', '// facts: upstream-notes.md s.3', 'a Markdown file the repository does not hold'],
  ];
  test.each(cases)('%s', (_, file, text, rule) => {
    const found = outsideReferences(new Map([[file, `${text}\n`], ['docs/here.md', 'x\n']]));
    expect(found.map((f) => f.rule)).toContain(rule);
  });

  test('what stays inside is not flagged: paths under the root, links to pages here, upstream files cited by URL, system paths', () => {
    const ok = new Map([
      ['test/support/a.ts', "const d = path.resolve(__dirname, '..', 'fixtures', 'upstream');\nimport { y } from '../../src/y';\n"],
      ['docs/a.md', 'see [testing](testing.md), [the README](../README.md) and [evpn.md](https://github.com/o/r/blob/c/docs/evpn.md)\n'],
      ['docs/testing.md', 'x\n'],
      ['main.ts', "const examples = path.join(__dirname, '..', 'examples');\n"],
      ['test/c.test.ts', "expect(violations(\"import { w } from '../../cli/x';\")).toHaveLength(1);\n"],
      ['src/b.ts', "// OVN-K docs/features/evpn.md, https://github.com/o/r/blob/c/docs/features/evpn.md#L9\nconst t = '/tmp/x'; const rootfs = `$1/root/.npm`;\n"],
    ]);
    expect(outsideReferences(ok).map(said)).toEqual([]);
  });
});
