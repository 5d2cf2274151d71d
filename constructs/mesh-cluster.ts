import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { whereaboutsIpam } from '../src/cni';
import { JsonObject, existingListsFragment, migrationPolicyFragment, nativeDatapathFragment } from '../src/kubevirt-config';
import { ClusterPlan, FleetPlan } from '../src/planner';
import { KubevirtConfiguration } from './kubevirt-configuration';
import { MigrationNetwork } from './migration-network';
import { MigrationProxy } from './migration-proxy';
import { NetworkAttachment } from './network-attachment';
import { SyncControllerPlacement } from './sync-controller-placement';

/**
 * Properties for `MeshClusterChart`.
 */
export interface MeshClusterChartProps {
  readonly plan: FleetPlan;
  readonly cluster: ClusterPlan;
}

/**
 * Everything one cluster applies, as one top-level Chart: the migration network, the KubeVirt
 * configuration in the cluster's delivery form, sync-controller placement, and in gateway mode the
 * MigrationProxy; in native mode the sync controllers' NAD on the shared network.
 */
export class MeshClusterChart extends Chart {
  public readonly cluster: ClusterPlan;
  public readonly kubevirt: KubevirtConfiguration;
  public readonly migrationNetwork: MigrationNetwork;
  public readonly proxy?: MigrationProxy;

  constructor(scope: Construct, id: string, props: MeshClusterChartProps) {
    super(scope, id, { disableResourceNameHashes: true, labels: { 'migrationmesh.dev/fleet': props.plan.fleet } });
    const { plan, cluster } = props;
    this.cluster = cluster;
    const kv = cluster.kubevirt;
    this.kubevirt = new KubevirtConfiguration(this, 'KubeVirt', {
      namespace: kv.namespace, name: kv.name, delivery: kv.configDelivery, existingJsonPatch: kv.existing.kubevirtJsonPatch as JsonObject[],
    });
    this.kubevirt.addSpec(existingListsFragment(cluster)); // the cluster's own gates/patches first (docs/field-ownership.md)
    this.kubevirt.addSpec(migrationPolicyFragment(plan));
    this.migrationNetwork = new MigrationNetwork(this, 'MigrationNetwork', {
      name: cluster.migrationNetwork.nadName,
      namespace: kv.namespace,
      attachment: cluster.migrationNetwork.attachment,
      ipam: cluster.migrationNetwork.ipam,
      kubevirt: this.kubevirt,
    });
    new SyncControllerPlacement(this, 'SyncControllerPlacement', {
      kubevirt: this.kubevirt,
      placement: cluster.syncPlacement,
      replicas: cluster.syncReplicas,
      datapath: cluster.datapath,
    });
    if (cluster.datapath === 'native') {
      new NetworkAttachment(this, 'CrossClusterNetwork', {
        name: cluster.crossClusterSync!.nadName,
        namespace: kv.namespace,
        attachment: plan.crossCluster.attachment,
        ipam: whereaboutsIpam(cluster.crossClusterSync!.ipam),
        labels: { 'migrationmesh.dev/network': 'cross-cluster' },
      });
      this.kubevirt.addSpec(nativeDatapathFragment(cluster));
    }
    if (cluster.datapath === 'gateway') {
      this.proxy = new MigrationProxy(this, 'Gateway', { plan, cluster });
    }
  }
}
