import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { HARVESTER_SETTING_NAME, HarvesterMigrationNetworkValue, harvesterValueJson } from '../../src/delivery/harvester';

/**
 * Properties for `HarvesterMigrationNetwork`.
 */
export interface HarvesterMigrationNetworkProps {
  /**
   * The setting value (`{clusterNetwork, vlan, range, exclude}`), already checked against Harvester's
   * webhook rules (`harvesterSettingFor` in src/delivery/harvester.ts).
   */
  readonly value: HarvesterMigrationNetworkValue;
  /**
   * Labels for the Setting object.
   *
   * @default - none beyond the chart's
   */
  readonly labels?: Record<string, string>;
}

/**
 * Harvester's cluster-scoped `vm-migration-network` Setting (`harvesterhci.io/v1beta1`). Harvester's
 * controller creates the bridge + whereabouts NAD in harvester-system from it and sets
 * `migrations.network` on its KubeVirt CR (restarting virt-handler), so a Harvester cluster gets no
 * NAD and no KubeVirt patch from us. The value is compact JSON in a fixed key order: Harvester hashes
 * the raw string, so any other spelling would count as a new configuration.
 */
export class HarvesterMigrationNetwork extends Construct {
  public readonly apiObject: ApiObject;
  /** The exact `value` string. */
  public readonly json: string;

  constructor(scope: Construct, id: string, props: HarvesterMigrationNetworkProps) {
    super(scope, id);
    this.json = harvesterValueJson(props.value);
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'harvesterhci.io/v1beta1',
      kind: 'Setting',
      metadata: { name: HARVESTER_SETTING_NAME, ...(props.labels ? { labels: props.labels } : {}) },
      // Setting has a top-level `value`, no spec
      value: this.json,
    });
  }
}
