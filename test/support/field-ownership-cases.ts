/**
 * The cases of docs/field-ownership.md, shared by the SSA model's test (test/field-ownership.test.ts) and the
 * same cases on a real API server (test/field-ownership.real.test.ts).
 */
import { FleetDocument } from '../../src/fleet/schema';
import { baseFleet, mutate } from './fleets';

export const VIRT_API_PATCH = {
  resourceType: 'Deployment', resourceName: 'virt-api', type: 'strategic' as const,
  patch: '{"spec":{"template":{"spec":{"containers":[{"name":"virt-api","resources":{"requests":{"memory":"1Gi"}}}]}}}}',
};
export const HANDLER_PATCH = {
  resourceType: 'DaemonSet', resourceName: 'virt-handler', type: 'json' as const,
  patch: '[{"op":"add","path":"/spec/template/metadata/annotations/example.com~1scrape","value":"true"}]',
};
/** Gates a production cluster typically already has on (the base below lists them). */
export const CLUSTER_GATES = ['Snapshot', 'HotplugVolumes', 'ExpandDisks'];

/** The fleet declares the cluster's gates/patches: fleet-wide, plus one patch only cluster `a` has. */
export function declaringFleet(delivery: 'kubevirt-cr' | 'kustomize-patch' | 'hco'): FleetDocument {
  return mutate(baseFleet(), (d) => {
    d.spec.kubevirt = { configDelivery: delivery, existing: { featureGates: CLUSTER_GATES.slice(0, 2), customizeComponentsPatches: [VIRT_API_PATCH] } };
    d.spec.syncControllers = { placement: 'workers' };
    d.spec.clusters[0].kubevirt = { existing: { featureGates: ['ExpandDisks', 'Snapshot'], customizeComponentsPatches: [HANDLER_PATCH] } };
  });
}

export const kvOf = (objs: any[]) => objs.find((o) => o.kind === 'KubeVirt' || o.kind === 'HyperConverged');
/** A realistic KubeVirt CR as an operator has it in Git: the upstream kubevirt-cr plus gates, patches, other settings. */
export const BASE_KUBEVIRT = {
  apiVersion: 'kubevirt.io/v1', kind: 'KubeVirt', metadata: { name: 'kubevirt', namespace: 'kubevirt' },
  spec: {
    certificateRotateStrategy: {},
    configuration: {
      developerConfiguration: { featureGates: CLUSTER_GATES },
      migrations: { parallelMigrationsPerCluster: 10 },
      evictionStrategy: 'LiveMigrate',
    },
    customizeComponents: { patches: [VIRT_API_PATCH, HANDLER_PATCH] },
    imagePullPolicy: 'IfNotPresent',
    workloadUpdateStrategy: { workloadUpdateMethods: ['LiveMigrate'] },
  },
};

