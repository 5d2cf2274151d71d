/**
 * Every problem has a stable code; the codes are documented in docs/errors.md (generated from
 * src/base/problem-codes.ts, so it cannot go stale), every listed code is raised somewhere, and users can
 * filter problems by code (`validate --output json`, `error.problems[i].code`).
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as YAML from 'yaml';
import { main } from '../cli/cli';
import { FleetValidationError, InvalidPropsError, MigrationMeshError } from '../src/base/errors';
import { parseLedger } from '../src/addressing/ledger';
import { PROBLEM_CODES, problemCodesMarkdown } from '../src/base/problem-codes';
import { resolveFleet } from '../src/fleet/resolve';
import { parseFleetDocument } from '../src/fleet/load';
import { gatewayNetworkSelection } from '../src/gateway/pod';
import { baseFleet, mutate, problemsOf } from './support/fleets';

const root = path.join(__dirname, '..');


function sources(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return e.name.endsWith('.ts') ? [p] : [];
  });
}

describe('problem codes', () => {
  test('docs/errors.md is generated from the code list (run `npm run docs:errors` after changing it)', () => {
    expect(fs.readFileSync(path.join(root, 'docs', 'errors.md'), 'utf8')).toBe(problemCodesMarkdown());
    for (const code of Object.keys(PROBLEM_CODES)) expect(problemCodesMarkdown()).toContain(`| \`${code}\` |`);
  });

  test('every listed code is raised by the library (no dead entries)', () => {
    const text = ['src', 'constructs', 'cli'].flatMap((d) => sources(path.join(root, d)))
      .filter((f) => !f.endsWith('problem-codes.ts'))
      .map((f) => fs.readFileSync(f, 'utf8')).join('\n');
    // src/forklift/checks.ts adds the `forklift/` prefix to the codes its checks name
    const unused = Object.keys(PROBLEM_CODES).filter((code) => !text.includes(`'${code}'`) && !text.includes(`('${code.replace(/^forklift\//, '')}'`));
    expect(unused).toEqual([]);
  });

  test('validation problems carry their code; one document can raise structural and cross-field codes together', () => {
    const ps = problemsOf(mutate(baseFleet(), (d) => {
      d.spec.clusters[1].nodez = 3; // unknown field: the schema refuses it
      d.spec.crossClusterNetwork.addresses.pool = ['192.168.50.7/29']; // cross-field: host bits
      d.spec.migrationNetwork.supernet = '10.200.3.0/16';
    }));
    expect(ps.map((p) => p.code).sort()).toEqual(['address-syntax', 'cidr-host-bits', 'unknown-field']);
    expect(ps.find((p) => p.code === 'unknown-field')!.path).toBe('spec.clusters[1]');
    const small = problemsOf(mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses.pool = ['192.168.50.10-192.168.50.12']; }));
    expect(small.map((p) => p.code)).toEqual(['pool-too-small']);
  });

  test('a malformed document whose refused value is required gets its structural problems only, and no exception leaks', () => {
    // clusters is not a list: the cross-field rules cannot run, and must not crash trying
    const ps = problemsOf(mutate(baseFleet(), (d) => { d.spec.clusters = 'a, b'; d.spec.migrationNetwork.supernet = '10.200.3.0/16'; }));
    expect(ps.map((p) => [p.code, p.path])).toEqual([['schema-invalid', 'spec.clusters']]);
  });

  test('the rendered error names the code of each problem', () => {
    try {
      resolveFleet(parseFleetDocument(mutate(baseFleet(), (d) => { d.spec.migrationNetwork.supernet = '10.200.3.0/16'; })));
      throw new Error('should have failed');
    } catch (e) {
      expect(e).toBeInstanceOf(MigrationMeshError);
      expect((e as FleetValidationError).codes).toEqual(['cidr-host-bits']);
      expect((e as Error).message).toContain("  - [cidr-host-bits] spec.migrationNetwork.supernet: '10.200.3.0/16' has host bits set");
    }
  });

  test('props errors and ledger errors carry codes too', () => {
    const replica = { replica: 0, inCluster: '10.0.0.1/24', crossCluster: '192.168.0.1/24' };
    let err: unknown;
    try { gatewayNetworkSelection({ namespace: 'n', inClusterNad: 'a', crossClusterNad: 'b', replica, interfaces: { inCluster: 'x', crossCluster: 'x' } }); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(InvalidPropsError);
    expect((err as InvalidPropsError).problems.map((p) => [p.code, p.path])).toEqual([['prop-invalid', 'interfaces']]);
    expect(() => parseLedger('apiVersion: [', 'x.ledger.yaml')).toThrow(MigrationMeshError);
    try { parseLedger('kind: Nope\n', 'x.ledger.yaml'); } catch (e) { err = e; }
    expect((err as MigrationMeshError).codes).toEqual(['ledger-malformed']);
  });

  test('validate --output json lists every file with its problems and their codes; exit 1 when one is invalid', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-codes-'));
    try {
      const good = path.join(dir, 'good.fleet.yaml');
      const bad = path.join(dir, 'bad.fleet.yaml');
      fs.writeFileSync(good, YAML.stringify(baseFleet()));
      fs.writeFileSync(bad, YAML.stringify(mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses.pool = ['192.168.50.10-192.168.50.12']; })));
      let out = '';
      let err = '';
      const code = main(['validate', good, bad, '--output', 'json'], (s) => { out += s; }, (s) => { err += s; });
      expect(err).toBe('');
      expect(code).toBe(1);
      const results = JSON.parse(out);
      expect(results.map((r: { file: string; valid: boolean }) => [r.file, r.valid])).toEqual([[good, true], [bad, false]]);
      expect(results[1].problems).toEqual([expect.objectContaining({ code: 'pool-too-small', path: 'spec.crossClusterNetwork.addresses.pool' })]);
      out = '';
      expect(main(['validate', good, '--output', 'json'], (s) => { out += s; }, () => undefined)).toBe(0);
      // valid, with the warnings beside the problems (here: the default gateway image is named by tag only, issue 49)
      expect(JSON.parse(out)[0]).toEqual({ file: good, valid: true, datapaths: ['gateway'], problems: [], warnings: [expect.objectContaining({ code: 'gateway-image-tag-only', path: 'spec.gateway.image' })] });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
