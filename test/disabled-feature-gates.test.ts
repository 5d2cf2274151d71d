/**
 * Issue #29 item 2, the explicit fleet option `kubevirt.disabledFeatureGates` (KubeVirt
 * `spec.configuration.developerConfiguration.disabledFeatureGates`): the mitigation for kubevirt PR
 * #18526 (LibvirtHooksServerAndClient, Beta and on by default in v1.9.0). Names are checked against
 * the gates the capability table knows for the cluster's version; a gate we enable and the user
 * disables is refused (KubeVirt's validateFeatureGates refuses it too). HCO: HCO from release-1.19
 * (KubeVirt 1.9) writes its own disabledFeatureGates list (every Beta gate it does not enable), so
 * the jsonpatch appends to it; before, HCO writes none and the jsonpatch adds the list.
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { kubevirtUpdateVerdict } from '../src/kubevirt/admission';
import { parseKubevirtVersion } from '../src/kubevirt/versions';
import { baseFleet, mutate, problemsOf } from './support/fleets';
import { applyAdds, kubevirtSpecOf } from './support/hco-kubevirt';
import { validateObject } from './support/schemas';

type Obj = Record<string, any>;
const LH = 'LibvirtHooksServerAndClient';
const DISABLED_PATH = '/spec/configuration/developerConfiguration/disabledFeatureGates';

function fleet(version: string, disabled?: string[], delivery = 'kubevirt-cr', perCluster = false) {
  return mutate(baseFleet(), (d) => {
    d.spec.kubevirt = { version, configDelivery: delivery, ...(disabled && !perCluster ? { disabledFeatureGates: disabled } : {}) };
    if (disabled && perCluster) d.spec.clusters[0].kubevirt = { disabledFeatureGates: disabled };
  });
}
const objsOf = (d: unknown, c = 'a') => synthesizeFleet(d as any).objects.get(c)! as Obj[];
const hcoOps = (objs: Obj[]) => JSON.parse(objs.find((o) => o.kind === 'HyperConverged')!.metadata.annotations['kubevirt.kubevirt.io/jsonpatch']) as Obj[];

describe('emitted in every delivery form, accepted by the admitter model', () => {
  test('KubeVirt CR and kustomize patch: developerConfiguration.disabledFeatureGates lists it, beside our gates', () => {
    for (const delivery of ['kubevirt-cr', 'kustomize-patch']) {
      const kv = objsOf(fleet('1.9.0', [LH], delivery)).find((o) => o.kind === 'KubeVirt')!;
      expect(kv.spec.configuration.developerConfiguration).toEqual({ featureGates: ['DecentralizedLiveMigration'], disabledFeatureGates: [LH] });
      expect(validateObject(kv)).toEqual([]);
      expect(kubevirtUpdateVerdict({}, kv.spec, parseKubevirtVersion('1.9.0')!)).toEqual([]);
    }
  });

  test('per cluster: only that cluster gets it', () => {
    const d = fleet('1.9.0', [LH], 'kubevirt-cr', true);
    expect(objsOf(d, 'a').find((o) => o.kind === 'KubeVirt')!.spec.configuration.developerConfiguration.disabledFeatureGates).toEqual([LH]);
    expect(objsOf(d, 'b').find((o) => o.kind === 'KubeVirt')!.spec.configuration.developerConfiguration.disabledFeatureGates).toBeUndefined();
  });

  test('HCO on KubeVirt 1.9: HCO already disables LibvirtHooksServerAndClient (a Beta gate it does not enable): no operation', () => {
    const objs = objsOf(fleet('1.9.0', [LH], 'hco'));
    expect(hcoOps(objs).filter((o) => o.path.startsWith(DISABLED_PATH))).toEqual([]);
    const spec = kubevirtSpecOf(objs, [LH, 'NodeRestriction']);
    expect(spec.configuration.developerConfiguration.disabledFeatureGates).toEqual([LH, 'NodeRestriction']);
    expect(kubevirtUpdateVerdict({}, spec, parseKubevirtVersion('1.9.0')!)).toEqual([]);
  });

  test('HCO on KubeVirt 1.9, a gate HCO does not disable: appended to HCO\'s list ("-"), HCO\'s own entries kept', () => {
    const objs = objsOf(fleet('1.9.0', ['MigrationStallDetection'], 'hco'));
    expect(hcoOps(objs).filter((o) => o.path.startsWith(DISABLED_PATH))).toEqual([{ op: 'add', path: `${DISABLED_PATH}/-`, value: 'MigrationStallDetection' }]);
    const spec = kubevirtSpecOf(objs, [LH]);
    expect(spec.configuration.developerConfiguration.disabledFeatureGates).toEqual([LH, 'MigrationStallDetection']);
    expect(kubevirtUpdateVerdict({}, spec, parseKubevirtVersion('1.9.0')!)).toEqual([]);
  });

  test('HCO on KubeVirt 1.8 (HCO writes no disabled list): the whole list is added, and HCO\'s patch applies', () => {
    const objs = objsOf(fleet('1.8', [LH], 'hco'));
    expect(hcoOps(objs).filter((o) => o.path.startsWith(DISABLED_PATH))).toEqual([{ op: 'add', path: DISABLED_PATH, value: [LH] }]);
    const spec = kubevirtSpecOf(objs);
    expect(spec.configuration.developerConfiguration.disabledFeatureGates).toEqual([LH]);
    expect(kubevirtUpdateVerdict({}, spec, parseKubevirtVersion('1.8')!)).toEqual([]);
  });

  test('the HCO model can fail: appending to a list HCO did not write breaks the patch', () => {
    expect(() => applyAdds({ spec: { configuration: { developerConfiguration: {} } } }, [{ op: 'add', path: `${DISABLED_PATH}/-`, value: LH }])).toThrow(/disabledFeatureGates missing/);
  });
});

describe('every datapath x delivery form on KubeVirt 1.9.0 and 1.8: the cluster ends up with the gate disabled, and the admitter model accepts it', () => {
  const cases = ['gateway', 'direct', 'native'].flatMap((dp) => ['kubevirt-cr', 'kustomize-patch', 'hco'].flatMap((del) => ['1.8', '1.9.0'].map((v) => [dp, del, v])))
    .filter(([dp, , v]) => !(dp === 'native' && v === '1.8'));
  test.each(cases)('%s / %s / %s', (dp, del, v) => {
    const d = mutate(fleet(dp === 'native' ? `${v}+pr17922` : v, [LH], del), (x) => { x.spec.datapath = dp; });
    const r = synthesizeFleet(d);
    for (const c of r.plan.clusters) {
      // HCO release-1.19 (KubeVirt 1.9) writes its Beta gates into the list; HCO 1.18 (KubeVirt 1.8) writes none
      const spec = kubevirtSpecOf(r.objects.get(c.name)! as Obj[], v === '1.9.0' ? [LH, 'NodeRestriction'] : undefined);
      const dev = spec.configuration.developerConfiguration;
      expect(dev.disabledFeatureGates.filter((g: string) => g === LH)).toEqual([LH]);
      expect(dev.featureGates).toContain('DecentralizedLiveMigration');
      expect(kubevirtUpdateVerdict({}, spec, c.kubevirt.version)).toEqual([]);
    }
  });
});

describe('the libvirt-hooks warning points to the option and goes away once it is set for the target', () => {
  const withMove = (disabled: string[] | undefined, on: 'a' | 'b' | 'fleet', delivery = 'kubevirt-cr') => mutate(baseFleet(), (d) => {
    d.spec.kubevirt = { version: '1.9.0', configDelivery: delivery, ...(disabled && on === 'fleet' ? { disabledFeatureGates: disabled } : {}) };
    if (disabled && on !== 'fleet') d.spec.clusters[on === 'a' ? 0 : 1].kubevirt = { disabledFeatureGates: disabled };
    d.spec.forklift = {
      hub: { cluster: 'a', namespace: 'openshift-mtv' },
      providers: { b: { url: 'https://api.b.example:6443', secret: 'b' } },
      storage: [{ source: 'ceph-rbd', storageClass: 'ceph-rbd' }],
      moves: [{ vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1', targetNamespace: 'prod' }],
    };
  });
  const warned = (d: unknown) => synthesizeFleet(d as any).forklift.warnings.filter((w) => w.code === 'forklift/libvirt-hooks');
  test('not set: warned, the fix names the fleet option for the target cluster', () => {
    const w = warned(withMove(undefined, 'fleet'));
    expect(w).toHaveLength(1);
    expect(w[0].fix).toContain('spec.clusters[0].kubevirt.disabledFeatureGates: [LibvirtHooksServerAndClient]');
  });
  test('set for the target (per cluster or fleet-wide): no warning; set only for the source: still warned', () => {
    expect(warned(withMove([LH], 'a'))).toEqual([]);
    expect(warned(withMove([LH], 'fleet'))).toEqual([]);
    expect(warned(withMove([LH], 'b'))).toHaveLength(1);
  });
  test('HCO target on KubeVirt 1.9: HCO disables the gate itself, no warning', () => {
    expect(warned(withMove(undefined, 'fleet', 'hco'))).toEqual([]);
  });
});

describe('refused', () => {
  test('a name the capability table does not know: unknown-feature-gate at the entry, listing the known gates', () => {
    const p = problemsOf(fleet('1.9.0', ['LibvirtHooks']));
    expect(p.map((x) => [x.code, x.path])).toEqual([['unknown-feature-gate', 'spec.kubevirt.disabledFeatureGates[0]'], ['unknown-feature-gate', 'spec.kubevirt.disabledFeatureGates[0]']]);
    expect(p[0].message).toContain('LibvirtHooks is not a feature gate the capability table knows');
    expect(p[0].fix).toContain(`${LH}`);
  });
  test('a gate the cluster\'s version does not have yet (LibvirtHooksServerAndClient before 1.8): unknown-feature-gate', () => {
    const p = problemsOf(mutate(fleet('1.9.0', [LH], 'kubevirt-cr', true), (d) => { d.spec.clusters[0].kubevirt.version = '1.7'; }));
    expect(p.map((x) => [x.code, x.path])).toEqual([['unknown-feature-gate', 'spec.clusters[0].kubevirt.disabledFeatureGates[0]']]);
    expect(p[0].message).toContain('1.8');
  });
  test('a GA gate (LibvirtHooksServerAndClient on main / 1.10): feature-gate-ga, KubeVirt ignores disabling it', () => {
    const p = problemsOf(fleet('1.10', [LH], 'kubevirt-cr', true));
    expect(p.map((x) => [x.code, x.path])).toEqual([['feature-gate-ga', 'spec.clusters[0].kubevirt.disabledFeatureGates[0]']]);
  });
  test('a gate we enable (DecentralizedLiveMigration; MigrationStallDetection with maxDowntimeMs) or the cluster declares: feature-gate-conflict', () => {
    const dlm = problemsOf(fleet('1.9.0', ['DecentralizedLiveMigration'], 'kubevirt-cr', true));
    expect(dlm.map((x) => [x.code, x.path])).toEqual([['feature-gate-conflict', 'spec.clusters[0].kubevirt.disabledFeatureGates[0]']]);
    expect(dlm[0].message).toContain('both');
    const stall = mutate(fleet('1.9.0', ['MigrationStallDetection'], 'kubevirt-cr', true), (d) => { d.spec.migrationPolicy = { maxDowntimeMs: 300 }; });
    expect(problemsOf(stall).map((x) => x.code)).toEqual(['feature-gate-conflict']);
    const declared = mutate(fleet('1.9.0', [LH], 'kubevirt-cr', true), (d) => { d.spec.kubevirt.existing = { featureGates: [LH] }; });
    expect(problemsOf(declared).map((x) => x.code)).toEqual(['feature-gate-conflict']);
  });
  test('not refused: MigrationStallDetection disabled where nothing enables it', () => {
    expect(problemsOf(fleet('1.9.0', ['MigrationStallDetection']))).toEqual([]);
  });
});
