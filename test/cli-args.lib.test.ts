/**
 * The command line is never misread: each command takes its own options, and a command line that could
 * mean something else (an unknown or misspelt flag, a value given to a switch, an option with no value or
 * with a flag for its value, the wrong number of fleet files) is a usage error (exit 2) that names the
 * flag, the problem and the fix, and writes nothing. The write checks run the built CLI
 * (`lib/cli/cli.js`, as `npx migration-mesh` runs it) in a scratch directory, so a misread relative path
 * would land there, and compare every file of that directory before and after.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { runCli } from './support/fleets';
import { suiteTmpDir } from './support/tmp';

const root = path.join(__dirname, '..');
const CLI = path.join(root, 'lib', 'cli', 'cli.js');
const FLEET = path.join(root, 'examples', 'three-sites-vlan.fleet.yaml');

const run = runCli;

/** Every file and directory under dir, with the content of files. */
function snapshot(dir: string): Record<string, string> {
  const all: Record<string, string> = {};
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      const rel = path.relative(dir, p);
      if (e.isDirectory()) { all[`${rel}/`] = ''; walk(p); } else { all[rel] = fs.readFileSync(p, 'utf8'); }
    }
  };
  walk(dir);
  return all;
}

/** A scratch directory holding a copy of a fleet (no ledger yet), and the built CLI run inside it. */
function scratch(): { dir: string; cli: (...argv: string[]) => { code: number | null; out: string; err: string } } {
  const dir = suiteTmpDir('mm-cli-args-');
  fs.copyFileSync(FLEET, path.join(dir, 'sites.fleet.yaml'));
  const cli = (...argv: string[]) => {
    const r = spawnSync(process.execPath, [CLI, ...argv], { cwd: dir, encoding: 'utf8', timeout: 60_000, env: { ...process.env, CDK8S_OUTDIR: undefined } });
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  return { dir, cli };
}

describe('a command line that could be misread writes nothing and exits 2', () => {
  const cases: Array<[string, string[], RegExp]> = [
    ['a value given to a switch', ['--out', 'out', '--frozen=true'], /synth: --frozen is a switch and takes no value \(got --frozen=true\): write --frozen alone/],
    ['a misspelt switch', ['--out', 'out', '--fronzen'], /synth: unknown option --fronzen \(did you mean --frozen\?\)/],
    ['--out with no value', ['--frozen', '--out'], /synth: --out needs a value: --out DIR/],
    ['--out followed by a flag', ['--out', '--frozen'], /synth: --out needs a value, but the next word is the option --frozen: write --out DIR/],
    ['-o followed by a flag', ['-o', '--no-svg'], /synth: -o needs a value, but the next word is the option --no-svg: write -o DIR \(a value that starts with '-' goes as -o--no-svg\)/],
    ['an empty --out', ['--out='], /synth: --out needs a value, got an empty one/],
    ['--out given twice', ['--out', 'a', '--out', 'b'], /synth: --out is given twice: give it once/],
    ['an option of another command', ['--out', 'out', '--svg', 'x.svg'], /synth: unknown option --svg \(--svg is an option of plan, not of synth\)/],
    ['an unknown short option', ['-x', '--out', 'out'], /synth: unknown option -x \(synth takes --out, --frozen, --ledger, --no-svg, --renamed-from\)/],
  ];
  test.each(cases)('%s', (_name, flags, message) => {
    const { dir, cli } = scratch();
    try {
      const before = snapshot(dir);
      const r = cli('synth', 'sites.fleet.yaml', ...flags);
      expect(r.err).toMatch(message);
      expect(r.err).toMatch(/usage:\n {2}migration-mesh synth FLEET.yaml/);
      expect(r.err).not.toMatch(/migration-mesh plan/); // the usage of that command only
      expect(r.out).toBe('');
      expect(r.code).toBe(2);
      expect(snapshot(dir)).toEqual(before); // no output tree, no ledger, no directory named 'true' or 'out'
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('the same line, spelt right, writes the tree and the ledger', () => {
    const { dir, cli } = scratch();
    try {
      expect(cli('synth', 'sites.fleet.yaml', '-o', 'out', '--no-svg')).toMatchObject({ code: 0, err: '' });
      expect(fs.readdirSync(path.join(dir, 'out', 'sites')).sort()).toEqual(['.migration-mesh.manifest', 'ams-1', 'fra-1', 'par-1']);
      expect(fs.existsSync(path.join(dir, 'sites.ledger.yaml'))).toBe(true);
      // --frozen, written right, passes now that the ledger is there; flags may come before the file, and --out=DIR works
      expect(cli('synth', '--frozen', '--out=out', 'sites.fleet.yaml')).toMatchObject({ code: 0, err: '' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('usage errors name the problem and the fix (exit 2)', () => {
  test.each([
    [['frobnicate'], /unknown command 'frobnicate'/],
    [['synt', 'x.yaml'], /unknown command 'synt' \(did you mean synth\?\)/],
    [['--frozen', 'synth'], /unknown command '--frozen': options come after the command/],
    [[], /no command given/],
    [['synth'], /synth: takes one or more fleet files, got none/],
    [['plan', 'a.yaml', 'b.yaml'], /plan: takes one fleet file, got 2: a.yaml b.yaml/],
    [['plan', 'a.yaml', '--output', 'xml'], /plan: --output must be table or json, got 'xml'/],
    [['validate', 'a.yaml', '--output=yaml'], /validate: --output must be text or json, got 'yaml'/],
    [['diff', 'a.yaml', 'b.yaml', 'c.yaml'], /diff: takes 1 or 2 fleet files, got 3/],
    [['diff', 'a.yaml', 'b.yaml', '--out', 'dist'], /diff: --out is for the one-file form/],
    [['reclaim', 'a.yaml'], /reclaim: reclaim needs --cluster NAME, --address ADDR, --all or --vm-network NET/],
    [['reclaim', 'a.yaml', '--all=yes'], /reclaim: --all is a switch and takes no value/],
    [['synth', 'a.yaml', 'b.yaml', '--ledger', 'l.yaml'], /synth: --ledger applies to one fleet, got 2 fleet files/],
    [['plan', 'a.yaml', '--renamed-from'], /plan: --renamed-from needs a value: --renamed-from OLD/],
    [['validate', 'a.yaml', '--frozen=false'], /validate: --frozen is a switch and takes no value/],
    [['validate', 'a.yaml', 'b.yaml', '--renamed-from', 'old'], /validate: --renamed-from applies to one fleet, got 2 fleet files/],
    [['help', 'frobnicate'], /help takes one command name/],
  ])('%j', (argv, message) => {
    const r = run(argv as string[]);
    expect(r.err).toMatch(message as RegExp);
    expect(r.err).toMatch(/usage:/);
    expect(r.code).toBe(2);
  });

  // a pipeline that asked for JSON reads stdout: the usage error comes as data there, one line on stderr
  test.each([
    [['validate', 'a.yaml', '--output', 'json', '--frob'], /validate: unknown option --frob/],
    [['plan', 'a.yaml', 'b.yaml', '--output=json'], /plan: takes one fleet file, got 2/],
    [['diff', 'a.yaml', 'b.yaml', 'c.yaml', '--output', 'json'], /diff: takes 1 or 2 fleet files, got 3/],
    [['status', '--output', 'json'], /status: takes one fleet file, got none/],
  ])('with --output json: %j is a JSON failure on stdout and one line on stderr', (argv, message) => {
    const r = run(argv as string[]);
    expect(r.code).toBe(2);
    const j = JSON.parse(r.out);
    expect(j).toEqual({ ok: false, message: expect.stringMatching(message as RegExp), problems: [] });
    expect(r.err.trim().split('\n')).toEqual([expect.stringMatching(message as RegExp)]);
    expect(r.err).not.toMatch(/usage:/);
  });

  test('an empty CDK8S_OUTDIR is refused for synth and diff (it would write into the current directory)', () => {
    const { dir, cli } = scratch();
    try {
      const before = snapshot(dir);
      const r = spawnSync(process.execPath, [CLI, 'synth', 'sites.fleet.yaml'], { cwd: dir, encoding: 'utf8', env: { ...process.env, CDK8S_OUTDIR: '' } });
      expect(r.stderr).toMatch(/CDK8S_OUTDIR is set but empty/);
      expect(r.status).toBe(2);
      expect(snapshot(dir)).toEqual(before);
      // set, it is the default output directory; --out wins over it
      const s = spawnSync(process.execPath, [CLI, 'synth', 'sites.fleet.yaml'], { cwd: dir, encoding: 'utf8', env: { ...process.env, CDK8S_OUTDIR: 'from-env' } });
      expect(s.status).toBe(0);
      expect(fs.existsSync(path.join(dir, 'from-env', 'sites', 'fra-1', 'kustomization.yaml'))).toBe(true);
      expect(cli('diff', 'sites.fleet.yaml', '--out', 'from-env')).toMatchObject({ code: 0, out: 'no change\n' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('help and version (exit 0, on stdout)', () => {
  test('--version and -V print the version of package.json', () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8'));
    expect(run(['--version'])).toEqual({ code: 0, out: `${version}\n`, err: '' });
    expect(run(['-V'])).toEqual({ code: 0, out: `${version}\n`, err: '' });
    const { dir, cli } = scratch();
    try {
      expect(cli('--version')).toEqual({ code: 0, out: `${version}\n`, err: '' }); // the built CLI finds package.json too
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('help, --help and -h print every command; COMMAND --help prints that command only', () => {
    for (const argv of [['help'], ['--help'], ['-h']]) {
      const r = run(argv);
      expect(r.code).toBe(0);
      for (const cmd of ['synth', 'validate', 'plan', 'diff', 'reclaim']) expect(r.out).toContain(`migration-mesh ${cmd} `);
      expect(r.out).toMatch(/--version/);
    }
    for (const argv of [['synth', '--help'], ['help', 'synth'], ['synth', 'x.yaml', '--fronzen', '-h']]) {
      const r = run(argv);
      expect(r).toMatchObject({ code: 0, err: '' });
      expect(r.out).toMatch(/^usage:\n {2}migration-mesh synth FLEET.yaml\.\.\. \[--out DIR\] \[--frozen\]/);
      expect(r.out).not.toContain('migration-mesh plan');
    }
    // after `--` a word is a file name, even `--help`
    expect(run(['plan', '--', '--help']).err).toMatch(/cannot read fleet file --help/);
  });
});
