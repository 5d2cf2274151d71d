/**
 * Does any file of the repository read or cite a path outside it (issue 53, "Nothing outside the repository")?
 * A clone has nothing beside it: no workspace folder next to the checkout, no notes of the machine it was written
 * on. So a file may not name the workspace's reference folder (the sibling directory of the checkout, or its
 * `reference` and `schemas` subfolders), this machine's absolute paths (the workspace root, root's or a user's
 * home), the parent of the repository root, code paths that climb out of the repository, Markdown links that do,
 * or a Markdown file that the repository does not hold unless an https URL for it stands on the same line.
 * Pure: `outsideReferences` takes the files' texts; the test (test/self-contained.test.ts) feeds it every file git
 * tracks or would add.
 */
import * as path from 'node:path';

export interface Finding { file: string; line: number; rule: string; text: string }

/** Rules over a line's text, whatever the file type. Written escaped so that this file does not match itself. */
const LINE_RULES: ReadonlyArray<readonly [string, RegExp]> = [
  ['the workspace folder beside the checkout', /\.\.\/shared\b/],
  ['the workspace reference folder', /(?<![\w-])shared\/(reference|schemas)\b/],
  ['an absolute path of the workspace', /(?<![\w.$}~-])\/work\//],
  ['a home directory of this machine', /(?<![\w.$}~-])\/(root|home\/[a-z][\w-]*)\/(?=[\w.])/],
  ['the parent of the repository root', /<repo-?root>\/\.\./i],
  ['the parent of the repository root', /\b(ROOT|REPO_ROOT|repoRoot|root)\s*,\s*(['"`])\.\.(\/[^'"`]*)?\2\s*[,)]/],
];

/**
 * Upstream files kept verbatim (test/fixtures/upstream, test/fixtures/crds, each with its SOURCES.md): a Markdown
 * name in their descriptions is upstream's own text, which we do not edit. Every other rule applies to them.
 */
const VERBATIM = /^test\/fixtures\/(upstream|crds)\/.*\.ya?ml$/;
const CODE = /\.(ts|js|mjs|cjs)$/;
const URL_RE = /https?:\/\/[^\s)>'"`\]]+/g;

/** The line (1-based) of a character offset. */
const lineAt = (text: string, offset: number) => text.slice(0, offset).split('\n').length;

/** Is `rel`, resolved against the directory `dir` (relative to the repository root), outside the repository? */
const climbsOut = (dir: string, rel: string) => path.posix.normalize(path.posix.join(dir, rel)).startsWith('..');

/** Files tsc compiles into lib/ (tsconfig.json `include`): at run time their `__dirname` is lib/<their folder>. */
const COMPILED_TO_LIB = /^(index\.ts|main\.ts|(src|constructs|cli|examples|bench)\/.*\.ts)$/;

/**
 * Code: `path.join/resolve(__dirname, 'lit', ...)` resolved from where the file runs (lib/<folder> for what tsc
 * compiles there, its own folder otherwise), and relative `import`/`export ... from`/`require` statements resolved
 * from the file (a line that begins with one: a specifier inside a string, e.g. a test's fixture text, is not one).
 */
function codePaths(file: string, text: string, out: Finding[]): void {
  const dir = path.posix.dirname(file);
  const runDir = COMPILED_TO_LIB.test(file) ? path.posix.join('lib', dir) : dir;
  for (const m of text.matchAll(/path\.(?:posix\.)?(?:resolve|join)\(\s*__dirname((?:\s*,\s*(['"`])[^'"`\n]*\2)+)\s*[,)]/g)) {
    const parts = [...m[1].matchAll(/(['"`])([^'"`]*)\1/g)].map((p) => p[2]);
    if (climbsOut(runDir, parts.join('/'))) out.push({ file, line: lineAt(text, m.index), rule: 'a code path that climbs out of the repository', text: m[0] });
  }
  const statements = /^[ \t]*(?:(?:import|export)\b[^\n]*?\bfrom\s+|(?:(?:const|let|var)\s+[^\n=]+=\s*)?(?:require|import)\(\s*)(['"])(\.\.?\/[^'"\n]*)\1/gm;
  for (const m of text.matchAll(statements)) {
    if (climbsOut(dir, m[2])) out.push({ file, line: lineAt(text, m.index), rule: 'an import from outside the repository', text: m[0].trim() });
  }
}

/** Markdown: relative link targets resolved from the file. */
function markdownLinks(file: string, text: string, out: Finding[]): void {
  const dir = path.posix.dirname(file);
  for (const m of text.matchAll(/\]\((?![a-z][a-z0-9+.-]*:|#)([^)\s]+)\)/gi)) {
    if (climbsOut(dir, m[1].split('#')[0])) out.push({ file, line: lineAt(text, m.index), rule: 'a link out of the repository', text: m[0] });
  }
}

/** A cited `NAME.md` that no file of the repository is, on a line with no https URL (an upstream file is cited by URL). */
function citedMarkdown(file: string, lines: readonly string[], mdNames: ReadonlySet<string>, out: Finding[]): void {
  lines.forEach((line, i) => {
    if (/https?:\/\//.test(line)) return;
    for (const m of line.replace(URL_RE, ' ').matchAll(/(?<![\w.-])((?:[\w.-]+\/)*[\w-][\w.-]*\.md)\b/g)) {
      if (!mdNames.has(path.posix.basename(m[1]))) out.push({ file, line: i + 1, rule: 'a Markdown file the repository does not hold', text: m[1] });
    }
  });
}

/** Every finding in `files` (path relative to the repository root -> text). */
export function outsideReferences(files: ReadonlyMap<string, string>): Finding[] {
  const mdNames = new Set([...files.keys()].filter((f) => f.endsWith('.md')).map((f) => path.posix.basename(f)));
  const out: Finding[] = [];
  for (const [file, text] of files) {
    const lines = text.split('\n');
    lines.forEach((line, i) => {
      for (const [rule, re] of LINE_RULES) if (re.test(line)) out.push({ file, line: i + 1, rule, text: line.trim().slice(0, 200) });
    });
    if (CODE.test(file)) codePaths(file, text, out);
    if (file.endsWith('.md')) markdownLinks(file, text, out);
    if (!VERBATIM.test(file)) citedMarkdown(file, lines, mdNames, out);
  }
  return out;
}
