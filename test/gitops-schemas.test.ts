/**
 * The GitOps objects against the real upstream CRDs (Argo CD ApplicationSet, Flux
 * kustomize.toolkit.fluxcd.io/v1 Kustomization, fetched into test/fixtures/crds/ with their sources
 * cited) through the shared validator test/support/schemas.ts (`validateObject(obj) -> string[]`,
 * ajv + strict unknown-field detection). That validator lands on main separately: until it is merged
 * into this branch the suite is skipped with a message.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';

const SUPPORT = path.join(__dirname, 'support', 'schemas.ts');
const available = fs.existsSync(SUPPORT);
if (!available) {
  console.warn('gitops-schemas.test.ts skipped: test/support/schemas.ts (validateObject + upstream CRDs) is not merged into this branch yet');
}

(available ? describe : describe.skip)('GitOps objects validate against the upstream CRDs', () => {
  // required lazily so the missing module does not fail the suite before the merge
  const validateObject: (obj: unknown, opts?: unknown) => string[] = available ? require('./support/schemas').validateObject : () => [];
  const file = path.join(__dirname, '..', 'examples', 'gitops.fleet.yaml');
  const r = synthesizeFleet(loadFleetFile(file), { ledger: loadLedgerFile(ledgerPathFor(file)) });
  const gitopsObjects = [...r.files.entries()]
    .filter(([p]) => p.startsWith('_gitops/') && !p.endsWith('/kustomization.yaml'))
    .map(([p, c]) => [p, YAML.parse(c)] as const);

  test('there are an ApplicationSet and nine Flux Kustomizations to check', () => {
    expect(gitopsObjects.map(([, o]) => o.kind).sort()).toEqual(['ApplicationSet', ...Array(9).fill('Kustomization')]);
  });

  test.each(gitopsObjects.map(([p, o]) => [p, o]))('%s has no schema errors', (_p, o) => {
    expect(validateObject(o)).toEqual([]);
  });

  test('the Harvester Setting (against its upstream CRD) and the annotated cluster objects validate', () => {
    const hv = path.join(__dirname, '..', 'examples', 'harvester.fleet.yaml');
    const h = synthesizeFleet(loadFleetFile(hv), { ledger: loadLedgerFile(ledgerPathFor(hv)) });
    for (const objs of [...h.objects.values(), ...r.objects.values()]) {
      for (const o of objs) {
        const errors = validateObject(o);
        expect({ kind: o.kind, errors }).toEqual({ kind: o.kind, errors: [] });
      }
    }
  });
});
