/**
 * The CLI as users run it: the built bin (`lib/cli/cli.js`, what `npx migration-mesh` starts) in a
 * child process. In-process tests call `main()` after the whole module has loaded, so they cannot see
 * a module-order defect that breaks the real binary (a `const` used by a command but defined below
 * the line that starts the CLI).
 */
import { execFileSync, spawnSync } from 'child_process';
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
