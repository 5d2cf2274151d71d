/**
 * KubeVirt admission: what kubevirt/kubevirt's virt-operator update admitter (and Kubernetes' pod
 * validation behind its placement dry-run) refuses, refused by us first; the gate maxDowntimeMs needs is
 * emitted for the declared version; every KubeVirt field we emit is listed with the rule that governs it.
 *
 * Upstream (kubevirt/kubevirt): main = d923fdb815cd2016ddaebdaaa51db04133576d72,
 * v1.9.0 = 79d34c1762169e5b0370ec491cef5ca12e6b504c; files
 * pkg/virt-operator/webhooks/kubevirt-update-admitter.go and kubevirt-update-admitter_test.go,
 * pkg/virt-config/featuregate/active.go. Kubernetes: kubernetes/kubernetes @000f26050b9b
 * pkg/apis/core/validation/validation.go (ValidateTolerations, validateAffinity, ValidateNodeSelector*).
 */
import * as fs from 'fs';
import * as path from 'path';
import { FleetValidationError } from '../src/base/errors';
import { FleetDocument } from '../src/fleet/schema';
import { kubevirtSpecFor } from '../src/kubevirt/config';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { planFleetDocument } from '../src/addressing/planner';
import { parseKubevirtVersion } from '../src/kubevirt/versions';
import { kubevirtUpdateVerdict, maxDowntimeGateFor, UINT32_MAX } from '../src/kubevirt/admission';
import { affinityProblems, nodeSelectorMapProblems, tolerationProblems } from '../src/kubevirt/placement-admission';

const EXAMPLES = path.join(__dirname, '..', 'examples');
const exampleFiles = fs.readdirSync(EXAMPLES).filter((f) => f.endsWith('.fleet.yaml')).map((f) => path.join(EXAMPLES, f));
const v = (t: string) => parseKubevirtVersion(t)!;
const MAIN = v('1.10.0'); // main @d923fdb8 is v1.10 development (git describe v1.9.0-beta.0-1264)
const V19 = v('1.9.0');

const base = (): FleetDocument => JSON.parse(JSON.stringify(loadFleetFile(path.join(EXAMPLES, 'three-sites-vlan.fleet.yaml'))));
const problemsOf = (d: FleetDocument) => {
  try { planFleetDocument(d); } catch (e) { if (e instanceof FleetValidationError) return [...e.problems]; throw e; }
  return [];
};
const specsOf = (d: FleetDocument) => { const r = planFleetDocument(d); return r.plan.clusters.map((c) => ({ c, spec: kubevirtSpecFor(r.plan, c) })); };

describe('validateMigrationConfiguration: the cases of kubevirt-update-admitter_test.go (main), through our model', () => {
  const cfg = (max?: number, gates?: string[]) => ({
    configuration: {
      ...(max !== undefined ? { migrations: { maxDowntimeMs: max } } : {}),
      ...(gates ? { developerConfiguration: { featureGates: gates } } : {}),
    },
  });
  // [entry name (upstream), old, new, rejected on main, rejected on v1.9.0]
  const cases: [string, object, object, boolean, boolean][] = [
    ['should reject when MaxDowntimeMs is newly set without feature gate', cfg(), cfg(900), true, true],
    ['should allow when MaxDowntimeMs is set with MigrationStallDetection gate', cfg(), cfg(900, ['MigrationStallDetection']), false, false],
    // MigrationDowntimeTuning does not exist in v1.9.0 (featuregate/active.go @79d34c17 registers only MigrationStallDetection)
    ['should allow when MaxDowntimeMs is set with MigrationDowntimeTuning gate', cfg(), cfg(900, ['MigrationDowntimeTuning']), false, true],
    ['should allow unrelated update when MaxDowntimeMs is unchanged and feature gate is disabled', cfg(900), cfg(900), false, false],
    ['should reject changing MaxDowntimeMs when feature gate is disabled', cfg(500), cfg(900), true, true],
  ];
  test.each(cases)('%s', (_name, oldSpec, newSpec, onMain, on19) => {
    const fields = (ver: typeof MAIN) => kubevirtUpdateVerdict(oldSpec, newSpec, ver).map((c) => c.field);
    expect(fields(MAIN)).toEqual(onMain ? ['spec.configuration.migrationConfiguration.maxDowntimeMs'] : []);
    expect(fields(V19)).toEqual(on19 ? ['spec.configuration.migrationConfiguration.maxDowntimeMs'] : []);
  });
});

describe('validateCustomizeComponents: the cases of kubevirt-update-admitter_test.go', () => {
  const patch = (p: string) => ({ customizeComponents: { patches: [{ resourceName: 'virt-api', resourceType: 'Deployment', type: 'strategic', patch: p }] } });
  test.each([
    ['invalid values rejected', '{"json: "not valid"}', 1],
    ['empty patch field rejected', '', 1],
    ['valid values accepted', '{}', 0],
  ])('%s', (_n, p, n) => {
    expect(kubevirtUpdateVerdict({}, patch(p as string), MAIN)).toHaveLength(n as number);
  });
});

describe('maxDowntimeMs: the Alpha gate the declared version needs is emitted with it', () => {
  test.each([['1.9', 'MigrationStallDetection'], ['v1.9.0', 'MigrationStallDetection'], ['1.10', 'MigrationStallDetection'], ['1.9.0+pr17922', 'MigrationStallDetection']])('KubeVirt %s: %s', (version, gate) => {
    const d = base();
    d.spec.kubevirt = { ...d.spec.kubevirt, version };
    for (const c of d.spec.clusters) delete c.kubevirt;
    d.spec.migrationPolicy = { ...d.spec.migrationPolicy, maxDowntimeMs: 300 };
    for (const { c, spec } of specsOf(d)) {
      expect((spec as any).configuration.developerConfiguration.featureGates).toContain(gate);
      expect((spec as any).configuration.migrations.maxDowntimeMs).toBe(300);
      // and the admitter (model of the declared version) accepts the new spec over an empty CR
      expect({ cluster: c.name, causes: kubevirtUpdateVerdict({}, spec, c.kubevirt.version) }).toEqual({ cluster: c.name, causes: [] });
    }
  });

  test('without the gate the same spec is refused by the admitter (the defect this guards against)', () => {
    const d = base();
    d.spec.kubevirt = { ...d.spec.kubevirt, version: '1.9' };
    for (const c of d.spec.clusters) delete c.kubevirt;
    d.spec.migrationPolicy = { maxDowntimeMs: 300 };
    const { spec } = specsOf(d)[0];
    const stripped = JSON.parse(JSON.stringify(spec));
    stripped.configuration.developerConfiguration.featureGates = stripped.configuration.developerConfiguration.featureGates.filter((g: string) => g !== 'MigrationStallDetection');
    expect(kubevirtUpdateVerdict({}, stripped, V19).map((c) => c.field)).toEqual(['spec.configuration.migrationConfiguration.maxDowntimeMs']);
  });

  test('no gate without maxDowntimeMs, and versions before 1.9 have neither the field nor a gate (the field is refused)', () => {
    const d = base();
    for (const { spec } of specsOf(d)) expect((spec as any).configuration.developerConfiguration.featureGates).not.toContain('MigrationStallDetection');
    expect(maxDowntimeGateFor(v('1.8'))).toBeUndefined();
    const old = base();
    old.spec.kubevirt = { ...old.spec.kubevirt, version: '1.8' };
    for (const c of old.spec.clusters) delete c.kubevirt;
    old.spec.migrationPolicy = { maxDowntimeMs: 300 };
    expect(problemsOf(old).map((p) => p.path)).toContain('spec.migrationPolicy.maxDowntimeMs');
  });
});

describe('uint32 migration fields (types.go MigrationConfiguration: *uint32; the CRD only says format int32, which the API server does not enforce)', () => {
  test.each(['parallelMigrationsPerCluster', 'parallelOutboundMigrationsPerNode'])('%s: 4294967295 accepted, 4294967296 refused with the bound', (field) => {
    const ok = base();
    ok.spec.migrationPolicy = { [field]: UINT32_MAX };
    expect(problemsOf(ok)).toEqual([]);
    const bad = base();
    bad.spec.migrationPolicy = { [field]: UINT32_MAX + 1 };
    const p = problemsOf(bad);
    expect(p.map((x) => x.path)).toEqual([`spec.migrationPolicy.${field}`]);
    expect(p[0].message).toMatch(/uint32.*at most 4294967295/);
    expect(p[0].fix).toBe('give at most 4294967295');
  });
  test('int64 timeouts stop at 2^53 - 1 (exact in JSON and JS)', () => {
    const bad = base();
    bad.spec.migrationPolicy = { completionTimeoutPerGiB: 2 ** 53, progressTimeout: 2 ** 53 };
    expect(problemsOf(bad).map((x) => x.path).sort()).toEqual(['spec.migrationPolicy.completionTimeoutPerGiB', 'spec.migrationPolicy.progressTimeout']);
  });
});

describe('sync-controller placement checked with Kubernetes rules wherever it is rendered (customizeComponents patch, infra.nodePlacement)', () => {
  const withTolerations = (t: unknown[]) => {
    const d = base();
    d.spec.clusters[0].syncControllers = { placement: { tolerations: t as any } };
    return problemsOf(d);
  };

  test('operator foo (the reported case) is refused with the path, what is allowed and the fix', () => {
    const p = withTolerations([{ key: 'node-role.kubernetes.io/infra', operator: 'foo', effect: 'NoSchedule' }]);
    expect(p).toEqual([{ code: 'placement-invalid', path: 'spec.clusters[0].syncControllers.placement.tolerations[0].operator', message: 'Unsupported value: \'foo\': supported values: "Equal", "Exists"', fix: 'use operator Equal or Exists' }]);
  });

  // ValidateTolerations rules, one case each
  test.each([
    [{ operator: 'Equal', value: 'x' }, 'tolerations[0].operator', /operator must be Exists when `key` is empty/],
    [{ key: 'k', operator: 'Exists', value: 'v' }, 'tolerations[0].value', /value must be empty when `operator` is 'Exists'/],
    [{ key: 'k', operator: 'Exists', effect: 'NoSchedule', tolerationSeconds: 30 }, 'tolerations[0].effect', /effect must be 'NoExecute' when `tolerationSeconds` is set/],
    [{ key: 'k', operator: 'Exists', effect: 'Sometimes' }, 'tolerations[0].effect', /supported values: "NoSchedule", "PreferNoSchedule", "NoExecute"/],
    [{ key: 'bad key', operator: 'Exists' }, 'tolerations[0].key', /name part must consist of alphanumeric/],
    [{ key: 'k', value: 'not valid!' }, 'tolerations[0].value', /valid label value/],
    [{ key: 'k', operator: 'Exists', tolerance: 1 }, 'tolerations[0].tolerance', /unknown field/],
  ])('toleration %j refused at %s', (t, at, msg) => {
    const p = tolerationProblems([t], 'tolerations');
    expect(p.map((x) => x.path)).toEqual([at]);
    expect(p[0].message).toMatch(msg);
  });

  test.each([
    [{ key: 'node-role.kubernetes.io/infra', operator: 'Exists', effect: 'NoSchedule' }],
    [{ operator: 'Exists' }],
    [{ key: 'k', value: 'v', effect: 'NoExecute', tolerationSeconds: 60 }],
    [{ key: 'example.com/k', operator: 'Equal', value: '' }],
  ])('toleration %j accepted', (t) => {
    expect(tolerationProblems([t], 'tolerations')).toEqual([]);
  });

  test('nodeSelector keys are qualified names and values label values', () => {
    expect(nodeSelectorMapProblems({ 'node-role.kubernetes.io/infra': '', 'zone': 'a-1' }, 'ns')).toEqual([]);
    expect(nodeSelectorMapProblems({ '-bad': 'x', 'k': 'v v', 'Example.com/x': 'y' }, 'ns').map((p) => p.path)).toEqual(['ns.-bad', 'ns.k', 'ns.Example.com/x']);
  });

  test('affinity: node selector terms, operators, values, weights, topology keys', () => {
    const ok = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'DoesNotExist' }] }] } } };
    expect(affinityProblems(ok, 'a')).toEqual([]);
    const bad = {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] },
        preferredDuringSchedulingIgnoredDuringExecution: [{ weight: 0, preference: { matchExpressions: [{ key: 'k', operator: 'In' }, { key: 'k', operator: 'Exists', values: ['x'] }, { key: 'k', operator: 'Gt', values: ['a'] }, { key: 'k', operator: 'Near' }] } }],
      },
      podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: [{ labelSelector: { matchLabels: { app: 'x' } } }] },
    };
    expect(affinityProblems(bad, 'a').map((p) => p.path)).toEqual([
      'a.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms',
      'a.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight',
      'a.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[0].values',
      'a.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[1].values',
      'a.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[2].values[0]',
      'a.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].preference.matchExpressions[3].operator',
      'a.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey',
    ]);
  });

  test('the fleet-wide placement, per-cluster placement and gateway placement are all checked, all problems at once', () => {
    const d = base();
    d.spec.syncControllers = { placement: { nodeSelector: { 'a b': 'x' } } };
    const emptyTerms = { nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [] } } };
    d.spec.clusters[1].syncControllers = { placement: { affinity: emptyTerms } };
    d.spec.gateway = { ...d.spec.gateway, placement: { tolerations: [{ key: 'k', operator: 'foo' }] } };
    expect(problemsOf(d).map((p) => p.path).sort()).toEqual([
      'spec.clusters[1].syncControllers.placement.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms',
      'spec.gateway.placement.tolerations[0].operator',
      'spec.syncControllers.placement.nodeSelector.a b',
    ]);
  });

  test('a bad toleration inside an emitted customizeComponents patch is caught by the verdict (KubeVirt itself only checks JSON)', () => {
    const patch = JSON.stringify({ spec: { template: { spec: { tolerations: [{ key: 'k', operator: 'foo' }] } } } });
    const causes = kubevirtUpdateVerdict({}, { customizeComponents: { patches: [{ resourceType: 'Deployment', resourceName: 'virt-synchronization-controller', type: 'strategic', patch }] } }, MAIN);
    expect(causes.map((c) => c.field)).toEqual(['spec.customizeComponents.patches[0].patch:spec.template.spec.tolerations[0].operator']);
  });
});

describe('every example: the KubeVirt spec of every cluster passes the admitter model of its declared version', () => {
  test.each(exampleFiles.map((f) => [path.basename(f)]))('%s', (name) => {
    const f = path.join(EXAMPLES, name);
    const r = planFleetDocument(loadFleetFile(f), { ledger: loadLedgerFile(ledgerPathFor(f)) });
    for (const c of r.plan.clusters) {
      expect({ cluster: c.name, causes: kubevirtUpdateVerdict({}, kubevirtSpecFor(r.plan, c), c.kubevirt.version) }).toEqual({ cluster: c.name, causes: [] });
    }
  });
});

/**
 * Every field path we emit in a KubeVirt spec, with the admitter rule (or the type/schema rule) that
 * governs it and where we enforce it. A new emitted field fails this test until it is listed here.
 * A = kubevirt-update-admitter.go @d923fdb8; T = staging/src/kubevirt.io/api/core/v1 types.go /
 * componentconfig.go @d923fdb8; S = test/fixtures/upstream/kubevirt (CRD schema @d923fdb8, checked by the schema tests).
 */
const FIELD_RULES: Record<string, string> = {
  'configuration.migrations.network': 'A: not validated (KubeVirt uses it verbatim, virt-operator util/config.go:181-184 @d923fdb8); S: string; ours: NAD name is a DNS-1123 label (fleet-schema)',
  'configuration.migrations.bandwidthPerMigration': 'A: ValidateSchema only; T: *resource.Quantity; ours: quantity regex (fleet-schema)',
  'configuration.migrations.parallelMigrationsPerCluster': 'A: ValidateSchema only; T: *uint32; ours: 1..4294967295 (src/kubevirt/admission.ts)',
  'configuration.migrations.parallelOutboundMigrationsPerNode': 'A: ValidateSchema only; T: *uint32; ours: 1..4294967295',
  'configuration.migrations.completionTimeoutPerGiB': 'A: ValidateSchema only; T: *int64; ours: 1..2^53-1',
  'configuration.migrations.progressTimeout': 'A: ValidateSchema only; T: *int64; ours: 1..2^53-1',
  'configuration.migrations.maxDowntimeMs': 'A: validateMigrationConfiguration: needs MigrationStallDetection (v1.9.0) or MigrationDowntimeTuning (main); ours: field only from 1.9, gate emitted',
  'configuration.migrations.allowAutoConverge': 'A: ValidateSchema only; T: *bool',
  'configuration.migrations.allowPostCopy': 'A: ValidateSchema only; T: *bool',
  'configuration.migrations.allowWorkloadDisruption': 'A: ValidateSchema only; T: *bool',
  'configuration.migrations.disableTLS': 'A: ValidateSchema only; T: *bool',
  'configuration.migrations.decentralizedLiveMigrationDatapath': 'PR #17922 only; ours: emitted only for +pr17922 builds (resolve.ts)',
  'configuration.migrations.crossClusterNetwork': 'PR #17922 only; ours: emitted only for +pr17922 builds',
  'configuration.developerConfiguration.featureGates[]': 'A: validateFeatureGates (no gate also in disabledFeatureGates; we emit none disabled), warnDeprecatedFeatureGates (ours are not deprecated)',
  'infra.nodePlacement': 'A: validateInfraPlacement (dry-run Deployment create = Kubernetes pod validation); ours: placement rules (src/kubevirt/placement-admission.ts)',
  'customizeComponents.patches[].resourceType': 'A: not validated; ours: constant Deployment',
  'customizeComponents.patches[].resourceName': 'A: not validated; ours: constant virt-synchronization-controller',
  'customizeComponents.patches[].type': 'A: not validated; S: enum; ours: constant strategic',
  'customizeComponents.patches[].patch': 'A: validateCustomizeComponents (valid JSON only); ours: the placement inside checked with Kubernetes rules',
  'synchronizationPlacement.nodePlacement': 'PR #17922 only; ours: same placement rules, emitted only for +pr17922 builds',
};

function leafPaths(o: unknown, prefix = ''): string[] {
  if (Array.isArray(o)) return o.every((x) => typeof x !== 'object' || x === null) ? [`${prefix}[]`] : o.flatMap((x) => leafPaths(x, `${prefix}[]`));
  if (typeof o === 'object' && o !== null) {
    // a placement is checked as a whole (its inner paths are Kubernetes' own)
    if (/(^|\.)nodePlacement$/.test(prefix)) return [prefix];
    return Object.entries(o).flatMap(([k, x]) => leafPaths(x, prefix ? `${prefix}.${k}` : k));
  }
  return [prefix];
}

test('every KubeVirt field any example emits is listed with the rule that governs it (and the list has no stale entries)', () => {
  const seen = new Set<string>();
  const all = [...exampleFiles];
  for (const f of all) {
    const r = planFleetDocument(loadFleetFile(f), { ledger: loadLedgerFile(ledgerPathFor(f)) });
    for (const c of r.plan.clusters) for (const p of leafPaths(kubevirtSpecFor(r.plan, c))) seen.add(p);
  }
  // the policy fields no example sets: a fleet that sets them all, on a version with every field
  const d: FleetDocument = JSON.parse(JSON.stringify(loadFleetFile(path.join(EXAMPLES, 'native-preview.fleet.yaml'))));
  d.spec.migrationPolicy = { bandwidthPerMigration: '1Gi', parallelMigrationsPerCluster: 5, parallelOutboundMigrationsPerNode: 2, completionTimeoutPerGiB: 150, progressTimeout: 150, maxDowntimeMs: 300, allowAutoConverge: false, allowPostCopy: false, allowWorkloadDisruption: false, disableTLS: false };
  for (const { spec } of specsOf(d)) for (const p of leafPaths(spec)) seen.add(p);
  const unlisted = [...seen].filter((p) => !(p in FIELD_RULES)).sort();
  expect(unlisted).toEqual([]);
  expect(Object.keys(FIELD_RULES).filter((p) => !seen.has(p)).sort()).toEqual([]);
});
