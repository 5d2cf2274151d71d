/**
 * Issue #29: a product/version combination the capability table does not know is refused (one code,
 * `unknown-product-version`, at the field that declares it, listing what the table knows); a newer minor
 * than the table's newest is warned (`product-version-newer`), naming the newest, and read as it.
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { productVersionWarnings } from '../src/kubevirt/capabilities';
import { planReport, renderPlanTable } from '../src/report/plan-report';
import { baseFleet, mutate, problemsOf, runCli } from './support/fleets';
import { suiteTmpDir } from './support/tmp';

const fleet = (kubevirt: Record<string, unknown>) => mutate(baseFleet(), (d) => { d.spec.kubevirt = kubevirt; });
const codes = (kubevirt: Record<string, unknown>) => [...new Set(problemsOf(fleet(kubevirt)).map((p) => `${p.code} ${p.path}`))];

describe('unknown-product-version', () => {
  test.each([
    [{ product: 'openshift-virtualization', productVersion: '1.9', version: '1.9.0', configDelivery: 'hco' }, 'spec.kubevirt.productVersion'],
    [{ product: 'harvester', productVersion: '4.21', version: '1.9.0' }, 'spec.kubevirt.productVersion'],
    [{ version: '9.0' }, 'spec.kubevirt.version'],
    [{ product: 'kubevirt', productVersion: '9.0', version: '1.9.0' }, 'spec.kubevirt.productVersion'],
    [{ product: 'openshift-virtualization', productVersion: '4.21.x', version: '1.9.0', configDelivery: 'hco' }, 'spec.kubevirt.productVersion'],
    [{ product: 'openshift-virtualization', productVersion: 'latest', version: '1.9.0', configDelivery: 'hco' }, 'spec.kubevirt.productVersion'],
    [{ product: 'openshift-virtualization', productVersion: '4.19', version: '1.9.0', configDelivery: 'hco' }, 'spec.kubevirt.productVersion'],
  ])('%j: refused at %s', (kv, path) => {
    expect(codes(kv)).toEqual([`unknown-product-version ${path}`]);
  });

  test('the message names the product and lists every product\'s known versions; per-cluster declarations name the cluster\'s path', () => {
    const p = problemsOf(mutate(baseFleet(), (d) => { d.spec.clusters[1].kubevirt = { product: 'harvester', productVersion: '4.21' }; }));
    expect(p.map((x) => [x.code, x.path])).toEqual([['unknown-product-version', 'spec.clusters[1].kubevirt.productVersion']]);
    expect(p[0].message).toContain('harvester 4.21');
    for (const k of ['kubevirt 1.6-1.10', 'openshift-virtualization 4.20-4.22', 'harvester 1.0-1.6']) expect(p[0].fix).toContain(k);
  });

  test('known versions are not refused', () => {
    for (const kv of [{ version: '1.10' }, { version: '1.6' }, { product: 'openshift-virtualization', productVersion: '4.21.1', version: '1.9.0', configDelivery: 'hco' }, { product: 'harvester', productVersion: '1.6.1', version: '1.9.0' }]) {
      expect(codes(kv)).toEqual([]);
    }
  });
});

describe('product-version-newer (a warning)', () => {
  test('KubeVirt 1.11, OpenShift Virtualization 4.23, Harvester 1.7: warned, naming the table\'s newest, not refused', () => {
    for (const [kv, newest] of [[{ version: '1.11' }, '1.10'], [{ product: 'openshift-virtualization', productVersion: '4.23', version: '1.9.0', configDelivery: 'hco' }, '4.22'],
      [{ product: 'harvester', productVersion: '1.7', version: '1.9.0' }, '1.6']] as const) {
      expect(problemsOf(fleet(kv))).toEqual([]);
      const w = productVersionWarnings(synthesizeFleet(fleet(kv)).plan);
      expect(w.map((x) => x.code)).toEqual(['product-version-newer', 'product-version-newer']);
      expect(w[0].message).toContain(`newest the capability table knows is ${newest}`);
    }
  });

  test('no warning for known versions', () => {
    expect(productVersionWarnings(synthesizeFleet(fleet({ version: '1.10' })).plan)).toEqual([]);
  });

  test('`plan` and `validate` show it', () => {
    const r = synthesizeFleet(fleet({ version: '1.11' }));
    expect(renderPlanTable(planReport(r.plan))).toContain('newer than the newest the capability table knows (1.10)');
    const fs = require('fs') as typeof import('fs');
    const dir = suiteTmpDir('mm-pv-');
    const file = `${dir}/fleet.json`;
    fs.writeFileSync(file, JSON.stringify(fleet({ version: '1.11' })));
    const out = runCli(['validate', file]);
    expect(out.code).toBe(0);
    expect(out.out).toContain('warning: [product-version-newer] spec.kubevirt.version: cluster a declares kubevirt 1.11');
  });
});
