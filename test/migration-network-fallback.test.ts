/**
 * Issue #29 item 4: `migrations.allowMigrationNetworkFallback` (kubevirt PR #16940, open) would send
 * migration traffic over the pod network when the migration network breaks; the fleet refuses it
 * however it would be set, with its own code and the reason.
 */
import { baseFleet, mutate, problemsOf } from './support/fleets';

const fallback = (doc: unknown) => problemsOf(doc).filter((p) => p.code === 'migration-network-fallback');

describe('allowMigrationNetworkFallback is refused', () => {
  test('as a migrationPolicy field, even for a build that carries PR #16940: the code, the path and the reason', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.kubevirt = { version: '1.10.0+pr16940' };
      d.spec.migrationPolicy = { allowMigrationNetworkFallback: true };
    });
    const problems = problemsOf(doc);
    expect(problems.map((p) => `${p.code} ${p.path}`)).toEqual(['migration-network-fallback spec.migrationPolicy.allowMigrationNetworkFallback']);
    expect(problems[0].message).toMatch(/pod network/);
    expect(problems[0].message).toMatch(/security/);
    expect(problems[0].fix).toMatch(/remove it/);
  });

  test('beside another unknown field, only the fallback gets its own code', () => {
    const doc = mutate(baseFleet(), (d) => { d.spec.clusters[1].kubevirt = { allowMigrationNetworkFallback: false }; d.spec.migrationPolicy = { bandwith: '1Gi' }; });
    expect(problemsOf(doc).map((p) => `${p.code} ${p.path}`).sort()).toEqual([
      'migration-network-fallback spec.clusters[1].kubevirt.allowMigrationNetworkFallback',
      'unknown-field spec.migrationPolicy',
    ]);
  });

  test('beside a misspelt field of the same object, both are reported', () => {
    const doc = mutate(baseFleet(), (d) => { d.spec.migrationPolicy = { allowMigrationNetworkFallback: true, bandwith: '1Gi' }; });
    expect(problemsOf(doc).map((p) => `${p.code} ${p.path} ${p.message.slice(0, 24)}`)).toEqual([
      'migration-network-fallback spec.migrationPolicy.allowMigrationNetworkFallback the field allowMigration',
      "unknown-field spec.migrationPolicy unknown field 'bandwith'",
    ]);
  });

  test('as an HCO jsonpatch operation, by path or inside a value', () => {
    const doc = mutate(baseFleet({ kubevirt: { configDelivery: 'hco' } }), (d) => {
      d.spec.clusters[0].kubevirt = { existing: { kubevirtJsonPatch: [
        { op: 'add', path: '/spec/configuration/migrations/allowMigrationNetworkFallback', value: true },
        { op: 'add', path: '/spec/configuration/developerConfiguration/featureGates/-', value: 'Snapshot' },
      ] } };
      d.spec.kubevirt.existing = { kubevirtJsonPatch: [{ op: 'replace', path: '/spec/configuration/migrations', value: { network: 'x', allowMigrationNetworkFallback: true } }] };
    });
    expect(fallback(doc).map((p) => p.path)).toEqual([
      'spec.kubevirt.existing.kubevirtJsonPatch[0]',
      'spec.clusters[0].kubevirt.existing.kubevirtJsonPatch[0]',
    ]);
  });

  test('in a customizeComponents patch', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.kubevirt = { existing: { customizeComponentsPatches: [
        { resourceType: 'KubeVirt', resourceName: 'kubevirt', type: 'merge', patch: '{"spec":{"configuration":{"migrations":{"allowMigrationNetworkFallback":true}}}}' },
        { resourceType: 'Deployment', resourceName: 'virt-api', type: 'merge', patch: '{"spec":{"replicas":3}}' },
      ] } };
    });
    expect(fallback(doc).map((p) => p.path)).toEqual(['spec.kubevirt.existing.customizeComponentsPatches[0].patch']);
  });

  test('a fleet that does not set it has no such problem', () => {
    expect(problemsOf(baseFleet())).toEqual([]);
  });
});
