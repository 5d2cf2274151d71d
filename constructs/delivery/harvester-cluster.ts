import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { HarvesterMigrationNetworkValue } from '../../src/delivery/harvester';
import { FLEET_LABEL, managedByLabels } from '../../src/base/names';
import { ClusterPlan, FleetPlan } from '../../src/addressing/planner';
import { HarvesterMigrationNetwork } from './harvester-migration-network';
import { TrustAgent } from '../trust/agent';

/** Where Harvester installs KubeVirt (its KubeVirt CR, `kubevirt-ca` and `kubevirt-external-ca`). */
export const HARVESTER_KUBEVIRT_NAMESPACE = 'harvester-system';

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
 * Everything a Harvester cluster applies: the `vm-migration-network` Setting, and when the fleet
 * exchanges CAs the TrustAgent (its Role in `harvester-system`). Harvester writes the NAD and the
 * KubeVirt `migrations.network` from the setting; the fleet's migration policy, sync-controller placement
 * and CA rotation are not delivered to Harvester clusters (Harvester renders its KubeVirt CR itself;
 * see docs/gitops.md and docs/trust.md).
 */
export class HarvesterClusterChart extends Chart {
  /** True for a `HarvesterClusterChart`, also across duplicate copies of this package. */
  public static isHarvesterClusterChart(x: unknown): x is HarvesterClusterChart {
    return typeof x === 'object' && x !== null && HARVESTER_CLUSTER_CHART_SYMBOL in x;
  }

  public readonly cluster: ClusterPlan;
  public readonly setting: HarvesterMigrationNetwork;
  /** The trust agent, when the fleet exchanges CAs. */
  public readonly trustAgent?: TrustAgent;

  constructor(scope: Construct, id: string, props: HarvesterClusterChartProps) {
    super(scope, id, { disableResourceNameHashes: true, labels: { ...props.labels, [FLEET_LABEL]: props.plan.fleet } });
    Object.defineProperty(this, HARVESTER_CLUSTER_CHART_SYMBOL, { value: true });
    this.cluster = props.cluster;
    this.setting = new HarvesterMigrationNetwork(this, 'MigrationNetwork', {
      value: props.value,
      labels: managedByLabels(),
    });
    if (props.cluster.trustAgents.length > 0) {
      this.trustAgent = new TrustAgent(this, 'TrustAgent', { plan: props.plan, cluster: props.cluster, kubevirtNamespace: HARVESTER_KUBEVIRT_NAMESPACE });
    }
  }
}
