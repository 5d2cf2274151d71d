/**
 * Salvage wraps the pipeline (issue #27): the main path (planner.ts `checkFleetInput`) runs the stages
 * in order and stops at the first with problems; the salvage path (src/fleet/salvage.ts) decides what
 * to leave out of a broken fleet and runs the same stages over the rest. For a valid fleet there is
 * nothing to leave out, so the two must give the same plan, ledger and changes.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as ts from 'typescript';
import { FleetValidationError } from '../src/base/errors';
import { checkFleetInput, planFleetDocument } from '../src/addressing/planner';
import { salvageFleetInput } from '../src/fleet/salvage';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { baseFleet, mutate } from './support/fleets';

const root = path.join(__dirname, '..');
const examples = fs.readdirSync(path.join(root, 'examples')).filter((f) => f.endsWith('.fleet.yaml')).sort();

describe('main path and salvage path agree on a valid fleet', () => {
  test.each(examples)('%s, with its ledger, plain and frozen', (file) => {
    const fleetFile = path.join(root, 'examples', file);
    const doc = loadFleetFile(fleetFile);
    const ledger = loadLedgerFile(ledgerPathFor(fleetFile));
    for (const opts of [{ ledger }, { ledger, frozen: true }]) {
      const main = checkFleetInput(doc, opts);
      const salvaged = salvageFleetInput(doc, opts);
      expect(main.problems).toEqual([]);
      expect(salvaged.problems).toEqual([]);
      if (!main.ok) throw new Error('unreachable');
      expect(main.value.plan.clusters.length).toBe(doc.spec.clusters.length);
      expect(salvaged.value).toStrictEqual(main.value);
    }
  });

  test('a fleet without a ledger: the same plan and changes; frozen refuses it the same way', () => {
    const main = checkFleetInput(baseFleet());
    const salvaged = salvageFleetInput(baseFleet());
    if (!main.ok) throw new Error(JSON.stringify(main.problems));
    expect(main.value.changes.length).toBeGreaterThan(0);
    expect(main.value.plan.clusters.map((c) => c.migrationNetwork.cidr)).toEqual(['10.200.0.0/24', '10.200.1.0/24']);
    expect(salvaged.value).toStrictEqual(main.value);
    const frozen = checkFleetInput(baseFleet(), { frozen: true });
    expect(frozen.problems.map((p) => p.code)).toEqual(['ledger-missing']);
    expect(salvageFleetInput(baseFleet(), { frozen: true }).problems).toEqual(frozen.problems);
  });
});

describe('on a broken fleet the main path stops, salvage reports every stage', () => {
  // cluster c is out of range (schema); a and b exhaust a supernet of one /24 (plan)
  const broken = mutate(baseFleet({
    migrationNetwork: { attachment: { type: 'bridge', bridge: 'br-mig', vlan: 100 }, supernet: '10.200.0.0/24' },
    clusters: [{ name: 'a', nodes: 3 }, { name: 'b', nodes: 3 }, { name: 'c', nodes: 3 }],
  }), (d) => { d.spec.clusters[2].nodes = 0; });

  test('the main path reports the first stage with problems only', () => {
    const main = checkFleetInput(broken);
    expect(main.ok).toBe(false);
    expect(main.problems.map((p) => [p.code, p.path])).toEqual([['schema-invalid', 'spec.clusters[2].nodes']]);
  });

  test('salvage leaves cluster c out and still plans a and b; planFleetDocument throws its list', () => {
    const salvaged = salvageFleetInput(broken);
    expect(salvaged.problems.map((p) => [p.code, p.path])).toEqual([
      ['schema-invalid', 'spec.clusters[2].nodes'],
      ['supernet-exhausted', 'spec.migrationNetwork.supernet'],
    ]);
    expect(salvaged.problems[1].message).toContain('for cluster b');
    let thrown: unknown;
    try { planFleetDocument(broken); } catch (e) { thrown = e; }
    expect(thrown).toBeInstanceOf(FleetValidationError);
    expect((thrown as FleetValidationError).problems).toEqual(salvaged.problems);
  });
});

/** The files `file` imports, transitively (relative imports, types included). */
function reach(file: string, seen = new Set<string>()): Set<string> {
  for (const spec of ts.preProcessFile(fs.readFileSync(file, 'utf8'), true, true).importedFiles.map((f) => f.fileName)) {
    if (!spec.startsWith('.')) continue;
    const target = `${path.resolve(path.dirname(file), spec)}.ts`;
    if (!fs.existsSync(target) || seen.has(target)) continue;
    seen.add(target);
    reach(target, seen);
  }
  return seen;
}

describe('the main path has no salvage branches', () => {
  const SALVAGE = path.join(root, 'src/fleet/salvage.ts');
  const STAGES = [
    'src/fleet/document.ts', 'src/fleet/resolve.ts', 'src/addressing/ledger-guard.ts', 'src/addressing/assemble.ts', 'src/addressing/allocate.ts',
  ];

  test.each(STAGES)('%s does not reach salvage.ts', (stage) => {
    expect([...reach(path.join(root, stage))]).not.toContain(SALVAGE);
  });

  test('the check sees an import of salvage.ts (it can fail): the entries wrap with it', () => {
    expect([...reach(path.join(root, 'src/addressing/planner.ts'))]).toContain(SALVAGE);
    expect([...reach(path.join(root, 'src/fleet/load.ts'))]).toContain(SALVAGE);
  });
});
