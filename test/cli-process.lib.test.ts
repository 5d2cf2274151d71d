/**
 * The CLI as users run it: the built bin (`lib/cli/cli.js`, what `npx migration-mesh` starts) in a
 * child process. In-process tests call `main()` after the whole module has loaded, so they cannot see
 * a module-order defect that breaks the real binary (a `const` used by a command but defined below
 * the line that starts the CLI).
 */
import { execFileSync, spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const ROOT = path.join(__dirname, '..');
const BIN = path.join(ROOT, 'lib', 'cli', 'cli.js');
const FLEET = path.join(ROOT, 'examples', 'three-sites-vlan.fleet.yaml');

const run = (args: string[], cwd: string) => spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 120_000 });

describe('the built migration-mesh binary', () => {
  let tmp: string;
  beforeAll(() => {
    if (!fs.existsSync(BIN)) execFileSync('npx', ['tsc', '-p', '.'], { cwd: ROOT, stdio: 'inherit' });
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-bin-'));
    fs.copyFileSync(FLEET, path.join(tmp, 'sites.fleet.yaml'));
    fs.copyFileSync(FLEET.replace('.fleet.yaml', '.ledger.yaml'), path.join(tmp, 'sites.ledger.yaml'));
  });
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  test.each([
    ['validate', ['validate', 'sites.fleet.yaml']],
    ['plan', ['plan', 'sites.fleet.yaml']],
    ['synth', ['synth', 'sites.fleet.yaml', '--out', 'out']],
    ['diff', ['diff', 'sites.fleet.yaml', '--out', 'out']],
  ])('%s runs to completion as a process', (_name, args) => {
    const r = run(args, tmp);
    expect(r.stderr).not.toMatch(/before initialization|ReferenceError|TypeError/);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: expect.any(String) });
  });

  test('synth as a process writes the same tree as the committed dist/', () => {
    const fleetDir = path.join(ROOT, 'dist', 'sites');
    const outDir = path.join(tmp, 'out', 'sites');
    const east = fs.readdirSync(fleetDir).find((d) => fs.statSync(path.join(fleetDir, d)).isDirectory())!;
    for (const f of fs.readdirSync(path.join(fleetDir, east))) {
      if (!fs.statSync(path.join(fleetDir, east, f)).isFile()) continue;
      expect(fs.readFileSync(path.join(outDir, east, f), 'utf8')).toBe(fs.readFileSync(path.join(fleetDir, east, f), 'utf8'));
    }
  });
});

/**
 * An input that is not a regular file (issue #39): the 4 MiB cap holds whatever the path is, and a pipe
 * that never sends is given up on in bounded time, each with its code. In a child process: before the
 * fix, /dev/zero was read for good (a FIFO without a writer blocked in open()), which in-process would
 * hang the test runner itself.
 */
describe('inputs that are devices, FIFOs or pipes: bounded in size and time', () => {
  let tmp: string;
  let fleet: string;
  beforeAll(() => {
    if (!fs.existsSync(BIN)) execFileSync('npx', ['tsc', '-p', '.'], { cwd: ROOT, stdio: 'inherit' });
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-dev-'));
    fleet = path.join(tmp, 'sites.fleet.yaml');
    fs.copyFileSync(FLEET, fleet);
  });
  afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

  /**
   * The CLI with a hard stop; its JSON, status and seconds taken. The bound under test is in bytes (the input cap)
   * or the 3 s stall window, never in how fast this machine is: a read that never ends meets the hard stop (and its
   * SIGKILL fails the test); one that ends on the cap ends whatever the load (two CPU hogs beside a CI run made a
   * capped read of /dev/zero take over 5 s).
   */
  const timed = (args: string[], cwd = tmp) => {
    const t0 = Date.now();
    const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 60_000, killSignal: 'SIGKILL' });
    return { ...r, seconds: (Date.now() - t0) / 1000 };
  };
  const problemsIn = (out: string) => (JSON.parse(out) as { problems: { code: string; path: string; message: string; fix?: string }[] }[])[0].problems;

  test('/dev/zero as the fleet file: refused as file-too-large, having read at most 4 MiB + 1 (it ends; a device never does)', () => {
    const r = timed(['validate', '/dev/zero', '--output', 'json']);
    expect(r.signal).toBeNull();
    expect(r.status).toBe(1);
    expect(problemsIn(r.stdout)).toEqual([{
      code: 'file-too-large', path: '(document)',
      message: 'the fleet file is a character device that gave more than 4194304 bytes; inputs are limited to 4194304 (4 MiB)',
      fix: 'give the path of the fleet file itself: a device such as /dev/zero or /dev/urandom never ends',
    }]);
  });

  test('a FIFO that no process writes to: refused as file-stalled after 3 s, not blocked in open() for good', () => {
    const fifo = path.join(tmp, 'nobody.fleet.yaml');
    execFileSync('mkfifo', [fifo]);
    const r = timed(['validate', fifo, '--output', 'json']);
    expect(r.signal).toBeNull();
    expect(r.seconds).toBeGreaterThanOrEqual(3);
    expect(r.status).toBe(1);
    expect(problemsIn(r.stdout)).toEqual([{
      code: 'file-stalled', path: '(document)',
      message: 'the fleet file is a FIFO (or pipe) and nothing was written to it within 3 s: no process has it open for writing, or its writer closed it without writing',
      fix: `start what writes it before or right after migration-mesh (e.g. \`cat prod.fleet.yaml > ${fifo} &\`), or give the path of the fleet file itself`,
    }]);
  });

  test('a FIFO with a writer, as process substitution gives: read whole and validated', () => {
    const fifo = path.join(tmp, 'fed.fleet.yaml');
    execFileSync('mkfifo', [fifo]);
    const writer = spawn('sh', ['-c', 'cat "$0" > "$1"', FLEET, fifo], { stdio: 'ignore' });
    const r = timed(['validate', fifo]);
    writer.kill();
    expect(r.stderr).toBe('');
    expect(r.stdout.split('\n')[0]).toBe(`${fifo}: valid`); // (then the default image's gateway-image-tag-only warning)
    expect(r.status).toBe(0);
  });

  test('every other input read too: the ledger, the moves file (here links to /dev/zero), --context-map and --kubeconfig', () => {
    const dir = fs.mkdtempSync(path.join(tmp, 'inputs-'));
    const f = path.join(dir, 'x.fleet.yaml');
    fs.copyFileSync(FLEET, f);
    fs.symlinkSync('/dev/zero', path.join(dir, 'x.ledger.yaml'));
    let r = timed(['validate', f, '--output', 'json']);
    expect(r.signal).toBeNull();
    expect(problemsIn(r.stdout)).toEqual([expect.objectContaining({ code: 'file-too-large', path: path.join(dir, 'x.ledger.yaml'), message: expect.stringMatching(/^the ledger is a character device that gave more than 4194304 bytes/) })]);
    fs.unlinkSync(path.join(dir, 'x.ledger.yaml'));
    fs.symlinkSync('/dev/zero', path.join(dir, 'x.moves.yaml'));
    r = timed(['validate', f, '--output', 'json']);
    expect(r.signal).toBeNull();
    expect(problemsIn(r.stdout)).toEqual([expect.objectContaining({ code: 'file-too-large', path: path.join(dir, 'x.moves.yaml'), message: expect.stringMatching(/^the moves file is a character device/) })]);
    fs.unlinkSync(path.join(dir, 'x.moves.yaml'));
    for (const flag of ['--context-map', '--kubeconfig']) {
      r = timed(['status', f, flag, '/dev/zero', '--out', path.join(dir, 'dist'), '--timeout', '1']);
      expect({ flag, signal: r.signal, status: r.status }).toEqual({ flag, signal: null, status: 1 });
      expect(r.stderr).toMatch(/\/dev\/zero: .*\[file-too-large\]|\[file-too-large\] .*\/dev\/zero/);
    }
  });
});
