/**
 * Issue #29 item 3: migration compression (`zstd` on multifd, KubeVirt PR #17509, in v1.9.0). Read in
 * kubevirt/kubevirt v1.9.0 (79d34c17) and main (d923fdb8): the field exists only in `MigrationPolicy`
 * `spec.experimental.compression` (and in the VMIM status), not in the KubeVirt CR's
 * `spec.configuration.migrations` (MigrationConfiguration has no `experimental`), and no admitter or
 * feature gate guards it. So the fleet option is emitted as one MigrationPolicy per cluster, never in
 * the KubeVirt configuration, and refused for a cluster whose KubeVirt predates 1.9.
 */
import * as path from 'path';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { loadMovesFile, movesPathFor } from '../src/forklift/moves';
import { migrationPolicyVerdict } from '../src/kubevirt/admission';
import { parseKubevirtVersion } from '../src/kubevirt/versions';
import { baseFleet, mutate, problemsOf } from './support/fleets';
import { validateObject } from './support/schemas';

type Obj = Record<string, any>;
const fleet = (version: string, compression?: string, delivery = 'kubevirt-cr') => mutate(baseFleet(), (d) => {
  d.spec.kubevirt = { version, configDelivery: delivery };
  d.spec.migrationPolicy = { bandwidthPerMigration: '1Gi', ...(compression ? { compression } : {}) };
});
const policiesOf = (objs: Obj[]) => objs.filter((o) => o.kind === 'MigrationPolicy');

describe('spec.migrationPolicy.compression', () => {
  test('KubeVirt 1.9.0, zstd: each cluster gets one MigrationPolicy selecting every VMI, with experimental.compression: zstd', () => {
    const r = synthesizeFleet(fleet('1.9.0', 'zstd'));
    for (const c of ['a', 'b']) {
      const objs = r.objects.get(c)! as Obj[];
      const [p, ...more] = policiesOf(objs);
      expect(more).toEqual([]);
      expect(p.apiVersion).toBe('migrations.kubevirt.io/v1alpha1');
      expect(p.metadata.namespace).toBeUndefined(); // cluster-scoped
      expect(p.spec).toEqual({ selectors: {}, experimental: { compression: 'zstd' } });
      expect(validateObject(p)).toEqual([]);
      // the KubeVirt CR has no such field: nothing of it there, the rest of the policy still is
      const kv = objs.find((o) => o.kind === 'KubeVirt')!;
      expect(kv.spec.configuration.migrations).toEqual({ bandwidthPerMigration: '1Gi', network: 'lm-migration' });
      expect(validateObject(kv)).toEqual([]);
    }
  });

  test('the MigrationPolicy admitter model accepts it with no gate (none guards compression), and can refuse', () => {
    const v19 = parseKubevirtVersion('1.9.0')!;
    const p = policiesOf(synthesizeFleet(fleet('1.9.0', 'zstd')).objects.get('a')! as Obj[])[0];
    expect(migrationPolicyVerdict({}, p.spec, v19, [])).toEqual([]);
    expect(migrationPolicyVerdict({}, { ...p.spec, maxDowntimeMs: 300 }, v19, []).map((c) => c.field)).toEqual(['spec.maxDowntimeMs']);
    expect(migrationPolicyVerdict({}, { ...p.spec, completionTimeoutPerGiB: -1 }, v19, ['MigrationStallDetection']).map((c) => c.field)).toEqual(['spec.completionTimeoutPerGiB']);
  });

  test('HCO delivery: the same MigrationPolicy (HCO does not manage MigrationPolicies), nothing in the jsonpatch', () => {
    const objs = synthesizeFleet(fleet('1.9.0', 'zstd', 'hco')).objects.get('a')! as Obj[];
    expect(policiesOf(objs).map((p) => p.spec.experimental)).toEqual([{ compression: 'zstd' }]);
    const hco = objs.find((o) => o.kind === 'HyperConverged')!;
    expect(hco.metadata.annotations?.['kubevirt.kubevirt.io/jsonpatch'] ?? '').not.toContain('compression');
  });

  test('no compression, or none: no MigrationPolicy unless asked; none is emitted as asked', () => {
    expect(policiesOf(synthesizeFleet(fleet('1.9.0')).objects.get('a')! as Obj[])).toEqual([]);
    expect(policiesOf(synthesizeFleet(fleet('1.9.0', 'none')).objects.get('a')! as Obj[]).map((p) => p.spec.experimental)).toEqual([{ compression: 'none' }]);
  });

  test('KubeVirt 1.8 on one cluster: refused at that cluster\'s version, naming 1.9 and the capability table', () => {
    const d = mutate(fleet('1.9.0', 'zstd'), (x) => { x.spec.clusters[1].kubevirt = { version: '1.8' }; });
    const p = problemsOf(d);
    expect(p.map((x) => [x.code, x.path])).toEqual([['compression-unsupported', 'spec.migrationPolicy.compression']]);
    expect(p[0].message).toContain('cluster b');
    expect(p[0].message).toContain('1.9');
    expect(p[0].fix).toMatch(/upgrade b|remove/);
  });

  test('a value other than none|zstd is refused by the schema', () => {
    expect(problemsOf(fleet('1.9.0', 'lz4')).map((x) => [x.code, x.path])).toEqual([['schema-invalid', 'spec.migrationPolicy.compression']]);
  });

  test('a move\'s compression (metro-moves example): its MigrationPolicy on the target only, valid against the CRD and the admitter model', () => {
    const file = path.join(__dirname, '..', 'examples', 'metro-moves.fleet.yaml');
    const doc = loadFleetFile(file);
    const r = synthesizeFleet(doc, { ledger: loadLedgerFile(ledgerPathFor(file)), moves: loadMovesFile(movesPathFor(file), doc.metadata.name) });
    const byCluster = Object.fromEntries([...r.objects].map(([c, objs]) => [c, policiesOf(objs as Obj[])]));
    expect(Object.fromEntries(Object.entries(byCluster).map(([c, ps]) => [c, ps.map((p) => p.metadata.name)])))
      .toEqual({ east: ['migration-mesh-metro-move.vms.db1'], west: [], edge: [] }); // db1 moves west -> east
    const p = byCluster.east[0];
    expect(p.spec.selectors).toEqual({ namespaceSelector: { 'kubernetes.io/metadata.name': 'vms' }, virtualMachineInstanceSelector: { 'app': 'db', 'example.org/vm': 'db1' } });
    expect(validateObject(p)).toEqual([]);
    expect(migrationPolicyVerdict({}, p.spec, parseKubevirtVersion('1.9')!, [])).toEqual([]);
  });
});
