import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { LivePlan } from '../../src/forklift/model';

/**
 * Properties for `ForkliftPlan`.
 */
export interface ForkliftPlanProps {
  /** The planned live Plan (batch, pair, target namespace, VMs). */
  readonly plan: LivePlan;
  /** Namespace Forklift runs in on the hub (the maps live there too). */
  readonly namespace: string;
}

/**
 * A Forklift `Plan` with `type: live`: Forklift creates blank target disks, copies Secrets and
 * ConfigMaps, starts the target VM as `WaitAsReceiver` and pairs the two VirtualMachineInstanceMigrations.
 * Creating it starts nothing; a `Migration` does.
 */
export class ForkliftPlan extends Construct {
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: ForkliftPlanProps) {
    super(scope, id);
    const p = props.plan;
    const ref = { name: p.maps, namespace: props.namespace };
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'forklift.konveyor.io/v1beta1',
      kind: 'Plan',
      metadata: {
        name: p.name,
        namespace: props.namespace,
        labels: { 'migrationmesh.dev/batch': p.batch, 'migrationmesh.dev/from': p.from, 'migrationmesh.dev/to': p.to },
      },
      spec: {
        type: 'live',
        targetNamespace: p.targetNamespace,
        provider: { source: { ...p.source }, destination: { ...p.destination } },
        map: { network: { ...ref }, storage: { ...ref } },
        vms: p.vms.map((vm) => ({ name: vm.name, namespace: vm.namespace })),
      },
    });
  }
}
