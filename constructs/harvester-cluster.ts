import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { HarvesterMigrationNetworkValue } from '../src/delivery/harvester';
import { FLEET_LABEL, managedByLabels } from '../src/base/names';
import { ClusterPlan, FleetPlan } from '../src/addressing/planner';
import { HarvesterMigrationNetwork } from './harvester-migration-network';

/**
 * Properties for `HarvesterClusterChart`.
 */
export interface HarvesterClusterChartProps {
  /** The fleet plan. */
  readonly plan: FleetPlan;
  /** This cluster's plan (datapath `direct`: its slice of the shared network). */
  readonly cluster: ClusterPlan;
  /** The checked `vm-migration-network` value (`harvesterSettingFor`). */
  readonly value: HarvesterMigrationNetworkValue;
  /**
   * Labels on every object of the chart; the mesh's own labels win.
   *
   * @default - none
   */
  readonly labels?: Record<string, string>;
}

const HARVESTER_CLUSTER_CHART_SYMBOL = Symbol.for('migration-mesh.HarvesterClusterChart');

/**
 * Everything a Harvester cluster applies: only the `vm-migration-network` Setting. Harvester writes
 * the NAD and the KubeVirt `migrations.network` from it; the fleet's migration policy and
 * sync-controller placement are not delivered to Harvester clusters (Harvester's `kubevirt-migration`
 * setting owns `migrations`; see docs/gitops.md).
 */
export class HarvesterClusterChart extends Chart {
  /** True for a `HarvesterClusterChart`, also across duplicate copies of this package. */
  public static isHarvesterClusterChart(x: unknown): x is HarvesterClusterChart {
    return typeof x === 'object' && x !== null && HARVESTER_CLUSTER_CHART_SYMBOL in x;
  }

  public readonly cluster: ClusterPlan;
  public readonly setting: HarvesterMigrationNetwork;

  constructor(scope: Construct, id: string, props: HarvesterClusterChartProps) {
    super(scope, id, { disableResourceNameHashes: true, labels: { ...props.labels, [FLEET_LABEL]: props.plan.fleet } });
    Object.defineProperty(this, HARVESTER_CLUSTER_CHART_SYMBOL, { value: true });
    this.cluster = props.cluster;
    this.setting = new HarvesterMigrationNetwork(this, 'MigrationNetwork', {
      value: props.value,
      labels: managedByLabels(),
    });
  }
}
