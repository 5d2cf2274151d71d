/**
 * Issue #29 item 2: every feature gate comes from one place (src/kubevirt/gates.ts) for every datapath
 * and delivery form. The admission model of KubeVirt's update admitter (src/kubevirt/admission.ts) runs
 * over the synthesized output of a generated matrix of small fleets: datapath (gateway | direct | native)
 * x delivery (kubevirt-cr | kustomize-patch | hco) x version (1.8, 1.9.0, 1.10) x maxDowntimeMs (set or
 * not) x compression (zstd or not, from 1.9: a MigrationPolicy, judged by the MigrationPolicy admitter
 * model). For HCO the KubeVirt CR is what HCO builds: its own featureGates list and liveMigrationConfig,
 * then the `kubevirt.kubevirt.io/jsonpatch` operations applied in order.
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { FleetDocument } from '../src/fleet/schema';
import { kubevirtUpdateVerdict, migrationPolicyVerdict } from '../src/kubevirt/admission';
import { parseKubevirtVersion } from '../src/kubevirt/versions';
import { baseFleet, mutate } from './support/fleets';
import { HCO_OWN_GATES, kubevirtSpecOf } from './support/hco-kubevirt';

type Obj = Record<string, any>;
const DATAPATHS = ['gateway', 'direct', 'native'] as const;
const DELIVERIES = ['kubevirt-cr', 'kustomize-patch', 'hco'] as const;
const VERSIONS = ['1.8', '1.9.0', '1.10'];

function fleet(datapath: string, delivery: string, version: string, maxDowntimeMs?: number, compression?: string): FleetDocument {
  return mutate(baseFleet(), (d) => {
    d.spec.datapath = datapath;
    d.spec.kubevirt = { version: datapath === 'native' ? `${version}+pr17922` : version, configDelivery: delivery };
    d.spec.migrationPolicy = { ...(maxDowntimeMs !== undefined ? { maxDowntimeMs } : {}), ...(compression ? { compression } : {}) };
  });
}

const matrix = DATAPATHS.flatMap((dp) => DELIVERIES.flatMap((del) => VERSIONS.flatMap((ver) => [undefined, 300].flatMap((m) => [undefined, 'zstd'].map((z) => [dp, del, ver, m, z] as const)))))
  // maxDowntimeMs and compression exist from 1.9 (refused before, by the fleet checks); native needs a 1.9+ build with PR #17922
  .filter(([dp, , ver, m, z]) => !(ver === '1.8' && (m !== undefined || z !== undefined || dp === 'native')));

describe('the admitter model accepts the KubeVirt configuration of every datapath x delivery x version', () => {
  test.each(matrix)('%s / %s / KubeVirt %s / maxDowntimeMs %s / compression %s', (dp, del, ver, m, z) => {
    const r = synthesizeFleet(fleet(dp, del, ver, m, z));
    expect(r.plan.clusters.length).toBe(2);
    for (const c of r.plan.clusters) {
      const spec = kubevirtSpecOf(r.objects.get(c.name)! as Obj[]);
      const gates: string[] = spec.configuration.developerConfiguration.featureGates;
      expect({ cluster: c.name, causes: kubevirtUpdateVerdict({}, spec, c.kubevirt.version) }).toEqual({ cluster: c.name, causes: [] });
      // meaning, not only "no causes": the gates this configuration needs are each there, once
      expect(gates).toContain('DecentralizedLiveMigration');
      if (m !== undefined) {
        expect(spec.configuration.migrations.maxDowntimeMs).toBe(m);
        expect(gates).toContain('MigrationStallDetection');
      } else {
        expect(gates).not.toContain('MigrationStallDetection');
      }
      expect(gates.includes('CrossClusterMigrationProxy')).toBe(dp === 'native');
      expect(new Set(gates).size).toBe(gates.length);
      // compression: never in the KubeVirt configuration (it has no such field), one MigrationPolicy the admitter accepts, no gate of its own
      expect(JSON.stringify(spec)).not.toContain('compression');
      const policies = (r.objects.get(c.name)! as Obj[]).filter((o) => o.kind === 'MigrationPolicy');
      expect(policies.map((p) => p.spec.experimental?.compression)).toEqual(z ? [z] : []);
      for (const p of policies) expect(migrationPolicyVerdict({}, p.spec, c.kubevirt.version, gates)).toEqual([]);
      expect(gates.filter((g) => !HCO_OWN_GATES.includes(g)).length).toBe(1 + (m !== undefined ? 1 : 0) + (dp === 'native' ? 1 : 0));
    }
  });
});

describe('the matrix test can fail', () => {
  test('an output without the gate is refused by the model, in the KubeVirt CR and through the HCO jsonpatch', () => {
    const v19 = parseKubevirtVersion('1.9.0')!;
    const kv = kubevirtSpecOf(synthesizeFleet(fleet('direct', 'kubevirt-cr', '1.9.0', 300)).objects.get('a')! as Obj[]);
    const stripped = { ...kv, configuration: { ...kv.configuration, developerConfiguration: { featureGates: ['DecentralizedLiveMigration'] } } };
    expect(kubevirtUpdateVerdict({}, stripped, v19).map((c) => c.field)).toEqual(['spec.configuration.migrationConfiguration.maxDowntimeMs']);
    const hcoObjs = synthesizeFleet(fleet('direct', 'hco', '1.9.0', 300)).objects.get('a')! as Obj[];
    const hco = hcoObjs.find((o) => o.kind === 'HyperConverged')!;
    const ops = JSON.parse(hco.metadata.annotations['kubevirt.kubevirt.io/jsonpatch']).filter((o: Obj) => o.value !== 'MigrationStallDetection');
    const withoutGate = kubevirtSpecOf([{ ...hco, metadata: { ...hco.metadata, annotations: { 'kubevirt.kubevirt.io/jsonpatch': JSON.stringify(ops) } } }]);
    expect(kubevirtUpdateVerdict({}, withoutGate, v19).map((c) => c.field)).toEqual(['spec.configuration.migrationConfiguration.maxDowntimeMs']);
  });
});
