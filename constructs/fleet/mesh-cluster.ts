import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { whereaboutsIpam } from '../../src/addressing/cni';
import { disabledGatesFragment, featureGatesFor } from '../../src/kubevirt/gates';
import { gatesWrittenByProduct } from '../../src/kubevirt/capabilities';
import { deliveryForm } from '../../src/kubevirt/delivery-forms';
import { JsonObject, existingListsFragment, migrationPolicyFragment, nativeDatapathFragment } from '../../src/kubevirt/config';
import { FLEET_LABEL, NETWORK_LABEL } from '../../src/base/names';
import { ClusterPlan, FleetPlan } from '../../src/addressing/planner';
import { rotationFragment } from '../../src/trust/plan';
import { GatewayPodOptions } from '../gateway/pod-options';
import { KubevirtConfiguration } from '../kubevirt/configuration';
import { MigrationNetwork } from '../addressing/migration-network';
import { MigrationCompressionPolicy } from '../kubevirt/migration-compression-policy';
import { compressionPolicySpec } from '../../src/kubevirt/compression';
import { MovePolicy, movePolicySpec } from '../../src/forklift/compression';
import { DEFAULT_GATEWAY_NAMESPACE, MigrationProxy } from '../gateway/migration-proxy';
import { AllowMultiNetworkPolicy } from '../kubevirt/allow-multi-network-policy';
import { AllowNetworkPolicy } from '../kubevirt/allow-network-policy';
import { clusterPolicies } from '../../src/kubevirt/network-policies';
import { NetworkAttachment } from '../addressing/network-attachment';
import { SyncControllerPlacement } from '../kubevirt/sync-controller-placement';
import { TrustAgent } from '../trust/agent';
import { ClusterVmNetwork } from '../../src/vmnet/resolved';
import { VmNetworks } from '../vmnet/vm-networks';
import { datapathMode } from '../../src/fleet/datapath-modes';

const MESH_CLUSTER_CHART_SYMBOL = Symbol.for('migration-mesh.MeshClusterChart');

/** What a user customizes per cluster chart (fleet-wide and per-cluster layers already merged). */
export interface MeshClusterOptions {
  /**
   * Labels on every object of the chart (cdk8s chart labels). Labels the mesh sets itself on an object
   * (`app.kubernetes.io/*`, `migrationmesh.dev/*`) win over these.
   *
   * @default - none
   * @see https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/
   */
  readonly labels?: Record<string, string>;
  /**
   * Customizations of every gateway pod of the cluster (gateway datapath only).
   *
   * @default - none
   */
  readonly gatewayPod?: GatewayPodOptions;
}

/**
 * Properties for `MeshClusterChart`.
 */
export interface MeshClusterChartProps extends MeshClusterOptions {
  /** The fleet plan. */
  readonly plan: FleetPlan;
  /** This cluster's plan. */
  readonly cluster: ClusterPlan;
  /**
   * The MigrationPolicies of the moves INTO this cluster that get one of their own (compression, cross-cluster settings)
   * (src/forklift/compression.ts `movePolicies`, checked by `planForklift`).
   *
   * @default - none
   */
  readonly movePolicies?: readonly MovePolicy[];
  /**
   * This cluster's VM networks (issue 40), resolved and planned (src/vmnet). Their objects go to the last
   * rollout stage (src/delivery/rollout.ts).
   *
   * @default - the plan's: `plan.vmNetworks.perCluster` for this cluster (none without `spec.vmNetworks`)
   */
  readonly vmNetworks?: readonly ClusterVmNetwork[];
}

/**
 * Everything one cluster applies, as one top-level Chart: the migration network, the KubeVirt
 * configuration in the cluster's delivery form, sync-controller placement, and in gateway mode the
 * MigrationProxy; in native mode the sync controllers' NAD on the shared network; in direct and native
 * mode, when the fleet exchanges CAs, the TrustAgent; the VM networks the cluster serves.
 */
export class MeshClusterChart extends Chart {
  /**
   * True for a `MeshClusterChart`, also across duplicate copies of this package (`instanceof` is true
   * for any subclass only, and false across copies). Use it to filter `mesh.charts`.
   */
  public static isMeshClusterChart(x: unknown): x is MeshClusterChart {
    return typeof x === 'object' && x !== null && MESH_CLUSTER_CHART_SYMBOL in x;
  }

  /** This cluster's plan. */
  public readonly cluster: ClusterPlan;
  /** The KubeVirt configuration fragments (partial KubeVirt CR, kustomize patch or HyperConverged). */
  public readonly kubevirt: KubevirtConfiguration;
  /** The in-cluster migration network (NAD + `migrations.network`). */
  public readonly migrationNetwork: MigrationNetwork;
  /** The gateway (gateway datapath only): typed handles on every gateway object. */
  public readonly proxy?: MigrationProxy;
  /** The trust agent (a direct or native cluster of a fleet that exchanges CAs): typed handles on its objects. */
  public readonly trustAgent?: TrustAgent;
  /** The cluster's VM networks (a fleet with `spec.vmNetworks` the cluster serves): typed handles on their objects. */
  public readonly vmNetworks?: VmNetworks;

  constructor(scope: Construct, id: string, props: MeshClusterChartProps) {
    super(scope, id, { disableResourceNameHashes: true, labels: { ...props.labels, [FLEET_LABEL]: props.plan.fleet } });
    Object.defineProperty(this, MESH_CLUSTER_CHART_SYMBOL, { value: true });
    const { plan, cluster } = props;
    this.cluster = cluster;
    const kv = cluster.kubevirt;
    this.kubevirt = new KubevirtConfiguration(this, 'KubeVirt', {
      namespace: kv.namespace, name: kv.name, delivery: kv.configDelivery, existingJsonPatch: kv.existing.kubevirtJsonPatch as JsonObject[],
      existingFeatureGates: [...kv.existing.featureGates, ...gatesWrittenByProduct(kv.product)], // issue #29: HCO writes some itself
      hcoDisabledGates: deliveryForm(kv.configDelivery).operatorDisabledGates(kv.version), // src/kubevirt/delivery-forms.ts
    });
    this.kubevirt.addSpec(existingListsFragment(cluster)); // the cluster's own gates/patches first (docs/field-ownership.md)
    this.kubevirt.addSpec(migrationPolicyFragment(plan));
    this.kubevirt.addSpec(disabledGatesFragment(kv.disabledFeatureGates)); // issue #29: e.g. LibvirtHooksServerAndClient on 1.9
    const trust = plan.trust.clusters[cluster.name];
    if (trust) this.kubevirt.addSpec(rotationFragment(trust.rotation));
    this.migrationNetwork = new MigrationNetwork(this, 'MigrationNetwork', {
      name: cluster.migrationNetwork.nadName,
      namespace: kv.namespace,
      attachment: cluster.migrationNetwork.attachment,
      ipam: cluster.migrationNetwork.ipam,
      kubevirt: this.kubevirt,
      featureGates: featureGatesFor({ datapath: cluster.datapath, version: kv.version, migrationPolicy: plan.migrationPolicy }),
    });
    new SyncControllerPlacement(this, 'SyncControllerPlacement', {
      kubevirt: this.kubevirt,
      placement: cluster.syncPlacement,
      replicas: cluster.syncReplicas,
      datapath: cluster.datapath,
    });
    if (datapathMode(cluster.datapath).kubevirtProxy) {
      new NetworkAttachment(this, 'CrossClusterNetwork', {
        name: cluster.crossClusterSync!.nadName,
        namespace: kv.namespace,
        attachment: cluster.site.attachment,
        ipam: whereaboutsIpam(cluster.crossClusterSync!.ipam),
        labels: { [NETWORK_LABEL]: 'cross-cluster' },
      });
      this.kubevirt.addSpec(nativeDatapathFragment(cluster));
    }
    const compression = compressionPolicySpec(plan.migrationPolicy); // issue #29: a MigrationPolicy, not a KubeVirt field
    if (compression) new MigrationCompressionPolicy(this, 'CompressionPolicy', { fleet: plan.fleet, spec: compression });
    for (const p of props.movePolicies ?? []) { // issue #29, issue 51: a move's own policy, on its target
      new MigrationCompressionPolicy(this, `MovePolicy-${p.namespace}.${p.vm}`, { fleet: plan.fleet, name: p.name, spec: movePolicySpec(p) });
    }
    if (datapathMode(cluster.datapath).gateways) {
      this.proxy = new MigrationProxy(this, 'Gateway', { plan, cluster, ...props.gatewayPod });
    }
    if (cluster.trustAgents.length > 0) {
      this.trustAgent = new TrustAgent(this, 'TrustAgent', { plan, cluster, imagePullPolicy: props.gatewayPod?.imagePullPolicy });
    }
    for (const policy of clusterPolicies(plan, cluster, this.proxy?.namespace ?? this.trustAgent?.namespace ?? DEFAULT_GATEWAY_NAMESPACE)) { // issue #29
      if (policy.kind === 'NetworkPolicy') new AllowNetworkPolicy(this, `Allow-${policy.name}`, { policy });
      else new AllowMultiNetworkPolicy(this, `Allow-${policy.name}`, { policy });
    }
    const vmNetworks = props.vmNetworks ?? plan.vmNetworks?.perCluster.get(cluster.name)?.networks ?? [];
    if (vmNetworks.length) this.vmNetworks = new VmNetworks(this, 'VmNetworks', { networks: vmNetworks, cluster: cluster.name }); // issue 40
  }
}
