/**
 * Issue #29 item 2: a cluster declares its product and version; the capability table
 * (src/kubevirt/capabilities.ts) decides which gates the product writes itself (HCO on OpenShift
 * Virtualization 4.21.1+ writes DecentralizedLiveMigration: we must not append it again) and `plan`
 * shows the rows that apply.
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { CAPABILITIES, capabilitiesFor } from '../src/kubevirt/capabilities';
import { parseKubevirtVersion } from '../src/kubevirt/versions';
import { planReport, renderPlanTable } from '../src/report/plan-report';
import { baseFleet, mutate, problemsOf } from './support/fleets';

type Obj = Record<string, any>;
const GATE_OP = '/spec/configuration/developerConfiguration/featureGates/-';

function ocpFleet(productVersion: string | undefined, product = 'openshift-virtualization') {
  return mutate(baseFleet(), (d) => {
    d.spec.datapath = 'direct';
    d.spec.kubevirt = { version: '1.9.0', configDelivery: 'hco', product, ...(productVersion ? { productVersion } : {}) };
  });
}
const gateOps = (objs: Obj[]): string[] => {
  const hco = objs.find((o) => o.kind === 'HyperConverged')!;
  return JSON.parse(hco.metadata.annotations?.['kubevirt.kubevirt.io/jsonpatch'] ?? '[]').filter((o: Obj) => o.path === GATE_OP).map((o: Obj) => o.value);
};

describe('the capability table drives the gates HCO already writes', () => {
  test('OpenShift Virtualization 4.21.1 and 4.22: HCO writes DecentralizedLiveMigration, the jsonpatch does not append it', () => {
    for (const v of ['4.21.1', '4.22']) {
      const r = synthesizeFleet(ocpFleet(v));
      for (const c of ['a', 'b']) expect({ v, c, gates: gateOps(r.objects.get(c)! as Obj[]) }).toEqual({ v, c, gates: [] });
    }
  });

  test('OpenShift Virtualization 4.21.0 and 4.20 (Technology Preview), or no declared version: the gate is appended', () => {
    for (const v of ['4.21.0', '4.20', undefined]) {
      const r = synthesizeFleet(ocpFleet(v));
      expect({ v, gates: gateOps(r.objects.get('a')! as Obj[]) }).toEqual({ v, gates: ['DecentralizedLiveMigration'] });
    }
  });

  test('plain KubeVirt 1.9 through HCO still gets the gate listed', () => {
    expect(gateOps(synthesizeFleet(ocpFleet(undefined, 'kubevirt')).objects.get('a')! as Obj[])).toEqual(['DecentralizedLiveMigration']);
  });

  test('maxDowntimeMs on OpenShift Virtualization 4.21.1: MigrationStallDetection is still appended (HCO does not write it)', () => {
    const d = mutate(ocpFleet('4.21.1'), (x) => { x.spec.migrationPolicy = { maxDowntimeMs: 300 }; });
    expect(gateOps(synthesizeFleet(d).objects.get('a')! as Obj[])).toEqual(['MigrationStallDetection']);
  });

  test('Forklift counts the gate HCO writes: a live move between two 4.21.1 clusters is not refused for the gate', () => {
    const withMove = (v: string) => mutate(ocpFleet(v), (x) => {
      x.spec.forklift = {
        hub: { cluster: 'a', namespace: 'openshift-mtv' },
        providers: { b: { url: 'https://api.b.example:6443', secret: 'b' } },
        storage: [{ source: 'ceph-rbd', storageClass: 'ceph-rbd' }],
        moves: [{ vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1' }],
      };
    });
    const r = synthesizeFleet(withMove('4.21.1'));
    expect(r.forklift.objects.some((o: Obj) => o.kind === 'Plan')).toBe(true);
    expect(JSON.stringify(r.forklift)).not.toContain('forklift/feature-gate');
  });
});

describe('the table', () => {
  test('every row names a source and a parseable version', () => {
    for (const row of CAPABILITIES) {
      expect(row.source.length).toBeGreaterThan(10);
      expect(parseKubevirtVersion(row.since)).toBeDefined();
    }
  });

  test('rows by product and version: 4.21.1 gets the TP and the GA rows, 4.20 only TP, KubeVirt 1.8 only the 1.6 row', () => {
    const since = (product: 'kubevirt' | 'openshift-virtualization', v: string) => capabilitiesFor({ product, productVersion: parseKubevirtVersion(v) }).map((r) => r.since);
    expect(since('openshift-virtualization', '4.21.1')).toEqual(['4.20', '4.21.1']);
    expect(since('openshift-virtualization', '4.20')).toEqual(['4.20']);
    expect(since('kubevirt', '1.8')).toEqual(['1.6']);
    expect(since('kubevirt', '1.9.0')).toEqual(['1.6', '1.9', '1.9']);
  });

  test('plan shows the rows that apply, per cluster', () => {
    const text = renderPlanTable(planReport(synthesizeFleet(ocpFleet('4.21.1')).plan));
    expect(text).toContain('  a (openshift-virtualization 4.21.1):\n');
    expect(text).toMatch(/since 4\.21\.1: cross-cluster live migration is GA .*\[openshift\/openshift-docs PR #109154/);
  });
});

describe('kubevirt-cn-skew: direct clusters before and from KubeVirt 1.7 are refused together', () => {
  const twoVersions = (datapath: string, a: string, b: string) => mutate(baseFleet(), (d) => {
    d.spec.datapath = datapath;
    d.spec.clusters[0].kubevirt = { version: a };
    d.spec.clusters[1].kubevirt = { version: b };
  });
  test('direct 1.6 beside 1.9: refused at the old cluster\'s version, with the reason and the fix', () => {
    const p = problemsOf(twoVersions('direct', '1.6', '1.9'));
    expect(p.map((x) => [x.code, x.path])).toEqual([['kubevirt-cn-skew', 'spec.clusters[0].kubevirt.version']]);
    expect(p[0].message).toContain('CN types');
    expect(p[0].fix).toContain('upgrade a to KubeVirt 1.7');
  });
  test('not refused: both before 1.7, both from 1.7, or the gateway datapath', () => {
    expect(problemsOf(twoVersions('direct', '1.6', '1.6.3'))).toEqual([]);
    expect(problemsOf(twoVersions('direct', '1.7', '1.9'))).toEqual([]);
    expect(problemsOf(twoVersions('gateway', '1.6', '1.9'))).toEqual([]);
  });
});

describe('forklift/libvirt-hooks: a move into another namespace of a KubeVirt 1.9 target is warned', () => {
  const withMove = (version: string, targetNamespace?: string) => mutate(baseFleet(), (d) => {
    d.spec.kubevirt = { version };
    d.spec.forklift = {
      hub: { cluster: 'a', namespace: 'openshift-mtv' },
      providers: { b: { url: 'https://api.b.example:6443', secret: 'b' } },
      storage: [{ source: 'ceph-rbd', storageClass: 'ceph-rbd' }],
      moves: [{ vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1', ...(targetNamespace ? { targetNamespace } : {}) }],
    };
  });
  const warned = (d: unknown) => synthesizeFleet(d as any).forklift.warnings.filter((w) => w.code === 'forklift/libvirt-hooks');
  test('1.9.0 target, namespace vms -> prod: one warning at the move, naming PR #18526 and the mitigation', () => {
    const w = warned(withMove('1.9.0', 'prod'));
    expect(w.map((x) => x.path)).toEqual(['spec.forklift.moves[0].targetNamespace']);
    expect(w[0].message).toContain('PR #18526');
    expect(w[0].fix).toContain('disabledFeatureGates');
  });
  test('no warning: same namespace, or a 1.8 target', () => {
    expect(warned(withMove('1.9.0'))).toEqual([]);
    expect(warned(withMove('1.9.0', 'vms'))).toEqual([]);
    expect(warned(withMove('1.8', 'prod'))).toEqual([]);
  });
});
