/**
 * Two writers at once (issue 23, class 2): a synth holds the lock beside the output and the ledger
 * for its whole write; a second synth into the same output and ledger is refused with
 * `write/locked` (naming the lock and the holder's pid) and changes nothing; the first finishes with
 * a tree and ledger of its own. The first writer is held at an exact point of its write by the test
 * hook (test/support/kill-at.js, MM_PAUSE_AT) and released by the test: no timing race.
 */
import { ChildProcess, execFileSync, spawn, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';

const ROOT = path.join(__dirname, '..');
const BIN = path.join(ROOT, 'lib', 'cli', 'cli.js');
const HOOK = path.join(__dirname, 'support', 'kill-at.js');
const EXAMPLE = path.join(ROOT, 'examples', 'three-sites-vlan.fleet.yaml');

const withCluster = (text: string, name: string): string => text.replace(/(\n  clusters:\n)/, `$1    - {name: ${name}, nodes: 2}\n`);
const cli = (args: string[], cwd: string) => spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: 'utf8', timeout: 120_000 });

/** Every file under `dir` but the locks (the first writer holds its own meanwhile), with its content. */
function treeAndLedger(dir: string): string {
  const out: string[] = [];
  const walk = (d: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (e.isDirectory()) walk(path.join(d, e.name));
      else if (!e.name.endsWith('.mm-lock')) out.push(`${path.relative(dir, path.join(d, e.name))}\n${fs.readFileSync(path.join(d, e.name), 'utf8')}`);
    }
  };
  walk(dir);
  return out.join('\n');
}

const exited = (p: ChildProcess): Promise<{ code: number | null; stderr: string }> => new Promise((resolve) => {
  let stderr = '';
  p.stderr!.on('data', (d) => { stderr += d; });
  p.on('exit', (code) => resolve({ code, stderr }));
});

describe('two writers at once', () => {
  let dir: string;
  beforeAll(() => {
    if (!fs.existsSync(BIN)) execFileSync('npx', ['tsc', '-p', '.'], { cwd: ROOT, stdio: 'inherit' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-two-writers-'));
    const text = fs.readFileSync(EXAMPLE, 'utf8');
    fs.writeFileSync(path.join(dir, 'a.fleet.yaml'), withCluster(text, 'osl-1'));
    fs.writeFileSync(path.join(dir, 'b.fleet.yaml'), withCluster(text, 'zrh-9'));
    fs.copyFileSync(EXAMPLE.replace('.fleet.yaml', '.ledger.yaml'), path.join(dir, 'sites.ledger.yaml'));
    fs.copyFileSync(EXAMPLE, path.join(dir, 'sites.fleet.yaml'));
    expect(cli(['synth', 'sites.fleet.yaml', '--out', 'out'], dir).status).toBe(0);
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  test('the second is refused with write/locked while the first writes; the first ends with its own tree and ledger', async () => {
    const before = treeAndLedger(dir);
    const marker = path.join(dir, '..', `${path.basename(dir)}.paused`);
    // A: held just after taking its two locks (each a writeFileSync: its open and write counted too), before writing anything
    const a = spawn(process.execPath, ['-r', HOOK, BIN, 'synth', 'a.fleet.yaml', '--ledger', 'sites.ledger.yaml', '--out', 'out'],
      { cwd: dir, env: { ...process.env, MM_PAUSE_AT: '7', MM_PAUSE_FILE: marker }, stdio: ['ignore', 'ignore', 'pipe'] });
    const aDone = exited(a);
    try {
      for (let i = 0; i < 1200 && !fs.existsSync(marker); i++) await new Promise((r) => setTimeout(r, 50));
      expect(fs.existsSync(marker)).toBe(true);
      const b = cli(['synth', 'b.fleet.yaml', '--ledger', 'sites.ledger.yaml', '--out', 'out'], dir);
      expect(b.status).toBe(1);
      expect(b.stderr).toMatch(new RegExp(`\\[write/locked\\] .*\\.mm-lock: another migration-mesh writer \\(pid ${a.pid} .*fix: wait for it to finish`));
      expect(b.stderr).toMatch(/nothing was written/);
      expect(treeAndLedger(dir)).toBe(before);
    } finally {
      fs.rmSync(marker, { force: true });
    }
    expect(await aDone).toEqual({ code: 0, stderr: '' });
    // the tree and the ledger are A's: synthesizing A again changes nothing
    expect(cli(['diff', 'a.fleet.yaml', '--ledger', 'sites.ledger.yaml', '--out', 'out'], dir).status).toBe(0);
    expect(fs.readdirSync(path.join(dir, 'out')).filter((f) => f.includes('.mm-'))).toEqual([]);
    expect(fs.readdirSync(dir).filter((f) => f.includes('.mm-'))).toEqual([]);
  }, 240_000);

  test('a lock left by a writer that is gone (killed) is taken over', () => {
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;
    fs.writeFileSync(path.join(dir, 'out', '.sites.mm-lock'), `${dead} ${os.hostname()}\n`);
    const r = cli(['synth', 'sites.fleet.yaml', '--out', 'out'], dir);
    expect({ status: r.status, stderr: r.stderr }).toEqual({ status: 0, stderr: '' });
    expect(fs.existsSync(path.join(dir, 'out', '.sites.mm-lock'))).toBe(false);
  }, 120_000);

  test('a lock of a live process beside the ledger is refused', () => {
    const lock = path.join(dir, '.sites.ledger.yaml.mm-lock');
    fs.writeFileSync(lock, `${process.pid} ${os.hostname()}\n`);
    try {
      const r = cli(['synth', 'sites.fleet.yaml', '--out', 'out'], dir);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/\[write\/locked\] .*sites\.ledger\.yaml\.mm-lock/);
    } finally {
      fs.unlinkSync(lock);
    }
  }, 120_000);
});
