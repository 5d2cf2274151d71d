/**
 * `npx migration-mesh` from the published package alone: npm pack the root package, install ONLY that
 * tarball (with the cdk8s peers) into an empty project, as a user would from the registry. The gateway
 * runtime (`proxy/`, a native addon) is not published and must not be needed: the library carries the
 * config schema it shares with the runtime. Then run the installed binary: `--version`, and `synth` of
 * an example fleet (with its ledger and moves file), whose tree and ledger must be byte for byte what
 * the repository's own CLI writes.
 */
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { readTree } from '../cli/cli';

import { installedApp, packedLibrary, versionOf } from './support/packed';

const root = path.join(__dirname, '..');
const npmEnv = { ...process.env, npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };
const EXAMPLE = ['metro-moves.fleet.yaml', 'metro-moves.ledger.yaml', 'metro-moves.moves.yaml'];

test('the packed root package alone installs, and its migration-mesh binary synthesizes what the repository does', () => {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-pack-cli-'));
  try {
    const manifest = JSON.parse(execFileSync('tar', ['-xOzf', packedLibrary(), 'package/package.json'], { encoding: 'utf8' }));
    // nothing unpublished is asked for: the runtime workspace is no dependency of the library
    expect(Object.keys(manifest.dependencies ?? {}).filter((d) => d.startsWith('@migration-mesh/'))).toEqual([]);

    // the packed tarball installed alone with the cdk8s peers (test/support/packed.ts: once per source state)
    const app = path.join(work, 'infra-repo');
    installedApp(app, [`cdk8s@${versionOf('cdk8s')}`, `cdk8s-plus-28@${versionOf('cdk8s-plus-28')}`, `constructs@${versionOf('constructs')}`]);
    expect(fs.existsSync(path.join(app, 'node_modules', '@migration-mesh'))).toBe(false);

    const npx = (...args: string[]) => {
      const r = spawnSync('npx', ['--no-install', 'migration-mesh', ...args], { cwd: app, encoding: 'utf8', timeout: 120_000, env: npmEnv });
      // npm's own warnings about this machine's npm settings are not the CLI's
      return { status: r.status, stdout: r.stdout, stderr: r.stderr.split('\n').filter((l) => !l.startsWith('npm warn ')).join('\n') };
    };
    const v = npx('--version');
    expect(v.stderr).toBe('');
    expect(v).toMatchObject({ status: 0, stdout: `${require(path.join(root, 'package.json')).version}\n` });

    // the same example fleet, synthesized by the installed binary and by the repository's CLI
    const mine = path.join(app, 'fleets');
    const repo = path.join(work, 'repo-fleets');
    for (const d of [mine, repo]) {
      fs.mkdirSync(d);
      for (const f of EXAMPLE) fs.copyFileSync(path.join(root, 'examples', f), path.join(d, f));
    }
    const s = npx('synth', 'fleets/metro-moves.fleet.yaml', '--out', 'out');
    expect(s.stderr).toBe('');
    expect(s.status).toBe(0);
    const r = spawnSync(process.execPath, [path.join(root, 'lib', 'cli', 'cli.js'), 'synth', 'metro-moves.fleet.yaml', '--out', 'out'], { cwd: repo, encoding: 'utf8', timeout: 120_000 });
    expect(r.stderr).toBe('');
    expect(r.status).toBe(0);

    const installed = readTree(path.join(app, 'out'));
    const reference = readTree(path.join(repo, 'out'));
    expect([...installed.keys()]).toEqual([...reference.keys()]);
    expect(installed.size).toBeGreaterThan(20);
    for (const [file, text] of reference) expect([file, installed.get(file)]).toEqual([file, text]);
    expect(fs.readFileSync(path.join(mine, 'metro-moves.ledger.yaml'), 'utf8')).toBe(fs.readFileSync(path.join(repo, 'metro-moves.ledger.yaml'), 'utf8'));
  } finally {
    fs.rmSync(work, { recursive: true, force: true });
  }
}, 300_000);
