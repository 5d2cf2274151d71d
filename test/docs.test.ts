/**
 * The docs stay a user's docs (issue 53): README.md is a short entry point (at most 300 lines) with no dated
 * run records in it (run tables, load averages, dates of runs: those are docs/dev/lab/ notes or bench/results/
 * data); every relative link in README.md, CONTRIBUTING.md, CHANGELOG.md and docs/**.md reaches a file that
 * exists, and a link to a heading of a Markdown file reaches a heading that exists; README's smallest fleet
 * validates as written; no doc cites the workspace's reference folder instead of upstream.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { main } from '../cli/cli';

const root = path.join(__dirname, '..');
const read = (f: string): string => fs.readFileSync(path.join(root, f), 'utf8');

/** Lines of a README that are records of a run rather than docs, each as "line N: why". */
export function datedRunRecords(text: string): string[] {
  const found: string[] = [];
  text.split('\n').forEach((line, i) => {
    const why = /^\|\s*t\d+\b/.test(line) ? 'a row of a run table'
      : /load average/i.test(line) ? 'a load average'
        : /\b20\d\d-\d\d-\d\d\b/.test(line) ? 'a date'
          : /\b(last|latest|fresh-clone) runs?\b|\bruns? of (today|yesterday)\b|\bin a row\b/i.test(line) ? 'a run record'
            : undefined;
    if (why) found.push(`line ${i + 1}: ${why}: ${line.trim().slice(0, 80)}`);
  });
  return found;
}

/** GitHub's anchor for a heading text: lower case, punctuation dropped, spaces to hyphens. */
export function anchorOf(heading: string): string {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

/** The anchors of a Markdown file's headings (outside code blocks), duplicates numbered as GitHub does. */
function anchorsOf(text: string): Set<string> {
  const seen = new Map<string, number>();
  const out = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^```/.test(line)) fenced = !fenced;
    const m = !fenced && /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!m) continue;
    const a = anchorOf(m[1]);
    const n = seen.get(a) ?? 0;
    seen.set(a, n + 1);
    out.add(n === 0 ? a : `${a}-${n}`);
  }
  return out;
}

/** Every relative link target of a Markdown text, outside code blocks and inline code. */
function linksOf(text: string): string[] {
  const prose = text.replace(/^```[\s\S]*?^```/gm, '').replace(/`[^`\n]*`/g, '');
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]).filter((t) => !/^[a-z][a-z0-9+.-]*:/i.test(t));
}

/** The Markdown files checked: README.md, CONTRIBUTING.md, CHANGELOG.md, docs/**.md (the generated API reference too). */
function docFiles(): string[] {
  const out = ['README.md', 'CONTRIBUTING.md', 'CHANGELOG.md'];
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(path.join(root, dir), { withFileTypes: true })) {
      const rel = `${dir}/${e.name}`;
      if (e.isDirectory()) walk(rel);
      else if (e.name.endsWith('.md')) out.push(rel);
    }
  };
  walk('docs');
  return out;
}

/** "file: link: why" for every relative link that reaches no file, or no heading of the file it names. */
function brokenLinks(files: string[], base = root): string[] {
  const read = (f: string): string => fs.readFileSync(path.join(base, f), 'utf8');
  const broken: string[] = [];
  const anchors = new Map<string, Set<string>>();
  for (const file of files) {
    for (const link of linksOf(read(file))) {
      const [target, anchor] = link.split('#') as [string, string | undefined];
      const resolved = target === '' ? file : path.posix.normalize(path.posix.join(path.posix.dirname(file), decodeURI(target)));
      if (resolved.startsWith('..') || !fs.existsSync(path.join(base, resolved))) {
        broken.push(`${file}: ${link}: no file ${resolved}`);
        continue;
      }
      if (anchor === undefined || !resolved.endsWith('.md')) continue;
      if (!anchors.has(resolved)) anchors.set(resolved, anchorsOf(read(resolved)));
      if (!anchors.get(resolved)!.has(anchor)) broken.push(`${file}: ${link}: no heading #${anchor} in ${resolved}`);
    }
  }
  return broken;
}

describe('README.md is a short entry point', () => {
  test('at most 300 lines', () => {
    expect(read('README.md').split('\n').length).toBeLessThanOrEqual(300);
  });

  test('no dated run records (run tables, load averages, dates of runs)', () => {
    expect(datedRunRecords(read('README.md'))).toEqual([]);
  });

  test('the record check finds what it is for', () => {
    expect(datedRunRecords([
      '| t12 | f25b0db | 0 | green | 627 s |',
      'A real run (load average about 15, so times are slow)',
      'Last run: 2026-11-25 12:27-12:35 UTC, the code of b1776d2',
      'Ten green in a row: the latest fresh-clone runs',
      '| clusters | files |',
      'npm ci && npm test          # run all tests',
    ].join('\n')).map((l) => l.split(': ').slice(0, 2).join(': '))).toEqual([
      'line 1: a row of a run table', 'line 2: a load average', 'line 3: a date', 'line 4: a run record',
    ]);
  });

  test('the two set-up commands stay, as written', () => {
    const readme = read('README.md');
    expect(readme).toContain('npm ci && npm run synth ');
    expect(readme).toContain('npm ci && npm test ');
  });

  test('the smallest fleet validates as written (synth\'s checks, in memory)', () => {
    const readme = read('README.md');
    const at = readme.indexOf('<!-- smallest fleet:');
    expect(at).toBeGreaterThan(0);
    const yaml = /```yaml\n([\s\S]*?)```/.exec(readme.slice(at))![1];
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-docs-'));
    try {
      const file = path.join(dir, 'prod.fleet.yaml');
      fs.writeFileSync(file, yaml);
      let out = '', err = '';
      const code = main(['validate', file], (s) => { out += s; }, (s) => { err += s; });
      expect({ code, err }).toEqual({ code: 0, err: '' });
      expect(out).toContain('valid');
      expect(fs.readdirSync(dir)).toEqual(['prod.fleet.yaml']);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('links between the docs', () => {
  test('every relative link reaches a file, and every #heading a heading', () => {
    const files = docFiles();
    expect(files.length).toBeGreaterThan(20);
    expect(brokenLinks(files)).toEqual([]);
  });

  test('the link check finds a missing file and a missing heading', () => {
    // in a temporary tree of its own (never under the repository, which other suites scan); the page names are
    // put together so that this file's text cites no Markdown file (test/self-contained.test.ts)
    const base = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-links-'));
    const [a, b, c, x] = ['a', 'b', 'c', 'x'].map((n) => `${n}.${'md'}`);
    try {
      fs.mkdirSync(path.join(base, 'docs'));
      fs.writeFileSync(path.join(base, 'docs', a), `# A page\n\n## Its part\n\n[ok](#its-part) [ok](${b}#b) [gone](${c}) [no](${b}#nothing) \`[code](${x})\`\n`);
      fs.writeFileSync(path.join(base, 'docs', b), '# B\n');
      expect(brokenLinks([`docs/${a}`], base)).toEqual([
        `docs/${a}: ${c}: no file docs/${c}`,
        `docs/${a}: ${b}#nothing: no heading #nothing in docs/${b}`,
      ]);
    } finally {
      fs.rmSync(base, { recursive: true, force: true });
    }
  });

  test('anchors as GitHub makes them', () => {
    expect(anchorOf('Tunnel payload mode (`spec.gateway.payload`)')).toBe('tunnel-payload-mode-specgatewaypayload');
    expect(anchorOf('Extending the gateway (cdk8s-plus-28)')).toBe('extending-the-gateway-cdk8s-plus-28');
    expect(anchorOf('Pinning through the API: `migration-mesh pin-addresses`')).toBe('pinning-through-the-api-migration-mesh-pin-addresses');
  });
});

test('README, CONTRIBUTING, CHANGELOG and docs/dev/ cite upstream, not the workspace\'s reference folder', () => {
  const cites = docFiles().filter((f) => !f.startsWith('docs/') || f.startsWith('docs/dev/')).flatMap((f) => read(f).split('\n').map((l, i) => [f, i + 1, l] as const))
    .filter(([, , l]) => /\.\.\/shared\b/.test(l)).map(([f, n]) => `${f}:${n}`);
  expect(cites).toEqual([]);
});
