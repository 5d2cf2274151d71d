/**
 * Issue #23, class 10 and the duration part of class 4: reclaim refusals carry a code and `--all`
 * with nothing quarantined succeeds; synth says when --renamed-from leaves the old fleet's directory
 * behind; synth lists removed addresses as quarantined, not "freed"; a Go duration past
 * time.Duration's range is refused. Each failed on the old code.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as YAML from 'yaml';
import { FleetValidationError } from '../src/base/errors';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { baseFleet, mutate, runCli } from './support/fleets';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-small-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

test('reclaim: --all with nothing quarantined exits 0; no match and no ledger are refused with a code', () => {
  const f = path.join(dir, 'r.fleet.yaml');
  fs.writeFileSync(f, YAML.stringify(baseFleet({}, 'r')));
  const none = runCli(['reclaim', f, '--all']);
  expect(none.code).toBe(1);
  expect(none.err).toMatch(/\[reclaim\/no-ledger\]/);
  expect(runCli(['synth', f, '--out', path.join(dir, 'out'), '--no-svg']).code).toBe(0);
  const all = runCli(['reclaim', f, '--all']);
  expect(all).toMatchObject({ code: 0 });
  expect(all.out).toMatch(/nothing is quarantined/);
  const miss = runCli(['reclaim', f, '--cluster', 'zz']);
  expect(miss.code).toBe(1);
  expect(miss.err).toMatch(/nothing quarantined matches --cluster zz[\s\S]*\[reclaim\/no-match\]/);
});

test('synth shows removed addresses as quarantined (not freed) and names --renamed-from\'s old directory', () => {
  const f = path.join(dir, 'n.fleet.yaml');
  const out = path.join(dir, 'out2');
  fs.writeFileSync(f, YAML.stringify(mutate(baseFleet({}, 'old'), (d) => { d.spec.clusters.push({ name: 'c', nodes: 1 }); })));
  expect(runCli(['synth', f, '--out', out, '--no-svg']).code).toBe(0);
  fs.writeFileSync(f, YAML.stringify(baseFleet({}, 'old')));
  const shrunk = runCli(['synth', f, '--out', out, '--no-svg']);
  expect(shrunk.out).toMatch(/c\.migrationCidr: - 10\.200\.2\.0\/24 \(quarantined/);
  expect(shrunk.out).not.toMatch(/freed/);
  fs.writeFileSync(f, YAML.stringify(baseFleet({}, 'new')));
  const renamed = runCli(['synth', f, '--out', out, '--no-svg', '--renamed-from', 'old']);
  expect(renamed.code).toBe(0);
  expect(renamed.out).toMatch(new RegExp(`note: ${path.join(out, 'old')}/ \\(fleet 'old' before the rename\\) is left in place`));
});

test('a duration past Go\'s time.Duration range is refused (virt-operator could not decode the CR)', () => {
  const doc = baseFleet({ trust: { rotation: { ca: { duration: '3000000h', renewBefore: '96h' } } } });
  let problems: readonly { code: string; path: string }[] = [];
  try { synthesizeFleet(doc); } catch (e) { if (e instanceof FleetValidationError) problems = e.problems; else throw e; }
  expect(problems.map((p) => `${p.code} ${p.path}`)).toContain('trust/bad-duration spec.trust.rotation.ca.duration');
});
