/**
 * `syncControllers.replicas` scales the sync controller and nothing else (issue #12). KubeVirt's
 * `spec.infra.replicas` sets the replicas of every infra Deployment (virt-api, virt-controller, the sync
 * controller...) and turns off virt-api's auto-scaling (kubevirt/kubevirt
 * pkg/virt-operator/resource/apply/apps.go, syncDeployment @025ef676), so the count rides a
 * customizeComponents patch on `virt-synchronization-controller` instead: patches are applied to the
 * generated Deployment before syncDeployment, which touches replicas only when infra.replicas is set.
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { baseFleet, mutate } from './support/fleets';
import { validateObject } from './support/schemas';

const kvOf = (objs: any[]) => objs.find((o) => o.kind === 'KubeVirt' || o.kind === 'HyperConverged');
const syncPatches = (patches: any[]) => patches.filter((p) => p.resourceName === 'virt-synchronization-controller').map((p) => JSON.parse(p.patch));

describe('syncControllers.replicas', () => {
  test.each([
    ['controlPlane', undefined],
    ['workers', { nodePlacement: {} }],
  ])('placement %s: no spec.infra.replicas; one patch on the sync controller carries the count', (placement, infra) => {
    const kv = kvOf(synthesizeFleet(mutate(baseFleet(), (d) => { d.spec.syncControllers = { placement, replicas: 3 }; })).objects.get('a')!);
    expect(kv.spec.infra).toEqual(infra);
    const [patch, ...more] = syncPatches(kv.spec.customizeComponents.patches);
    expect(more).toEqual([]);
    expect(patch.spec.replicas).toBe(3);
    expect(kv.spec.customizeComponents.patches.every((p: any) => p.resourceName === 'virt-synchronization-controller')).toBe(true);
    expect(validateObject(kv)).toEqual([]);
  });

  test('the default (2) emits nothing for replicas', () => {
    const kv = kvOf(synthesizeFleet(baseFleet()).objects.get('a')!);
    expect(kv.spec.infra).toBeUndefined();
    expect(kv.spec.customizeComponents).toBeUndefined();
  });

  test('HCO: no infra replicas operation in the jsonpatch; the count is in the patch list it carries', () => {
    const doc = mutate(baseFleet(), (d) => { d.spec.kubevirt = { configDelivery: 'hco' }; d.spec.syncControllers = { replicas: 3 }; });
    const hco = kvOf(synthesizeFleet(doc).objects.get('a')!);
    const ops = JSON.parse(hco.metadata.annotations['kubevirt.kubevirt.io/jsonpatch']);
    expect(ops.some((o: any) => o.path.startsWith('/spec/infra'))).toBe(false);
    const patches = ops.find((o: any) => o.path === '/spec/customizeComponents/patches').value;
    expect(syncPatches(patches)[0].spec.replicas).toBe(3);
  });
});
