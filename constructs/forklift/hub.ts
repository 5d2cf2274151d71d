import { Chart } from 'cdk8s';
import { Construct } from 'constructs';
import { ForkliftHubPlan } from '../../src/forklift/model';
import { ForkliftControllerSetting } from './controller';
import { ForkliftMigration } from './migration';
import { ForkliftNetworkMap } from './network-map';
import { ForkliftPlan } from './plan';
import { ForkliftProvider } from './provider';
import { ForkliftStorageMap } from './storage-map';

/**
 * Properties for `ForkliftHubChart`.
 */
export interface ForkliftHubChartProps {
  /** The checked Forklift plan (`planForklift`). */
  readonly plan: ForkliftHubPlan;
}

/**
 * Everything the Forklift hub applies for a fleet's moves, as one Chart: a Provider per remote
 * cluster, the optional ForkliftController setting, a NetworkMap and a StorageMap per ordered cluster
 * pair, a live Plan per batch, and a Migration only where the moves say `start: true`.
 */
export class ForkliftHubChart extends Chart {
  /** The checked plan the chart was built from. */
  public readonly plan: ForkliftHubPlan;
  public readonly providers: ForkliftProvider[];
  public readonly plans: ForkliftPlan[];
  public readonly migrations: ForkliftMigration[];

  constructor(scope: Construct, id: string, props: ForkliftHubChartProps) {
    super(scope, id, { disableResourceNameHashes: true, labels: { 'migrationmesh.dev/fleet': props.plan.fleet } });
    const p = props.plan;
    this.plan = p;
    const namespace = p.hub.namespace;
    this.providers = p.providers.map((pr) => new ForkliftProvider(this, `Provider-${pr.name}`, { name: pr.name, namespace, url: pr.url, secret: pr.secret }));
    if (p.controller) {
      new ForkliftControllerSetting(this, 'Controller', { name: p.controller.name, namespace, liveMigration: p.controller.liveMigration });
    }
    for (const pair of p.pairs) {
      new ForkliftNetworkMap(this, `NetworkMap-${pair.name}`, { name: pair.name, namespace, source: pair.source, destination: pair.destination, networks: pair.networks });
      new ForkliftStorageMap(this, `StorageMap-${pair.name}`, { name: pair.name, namespace, source: pair.source, destination: pair.destination, storage: pair.storage });
    }
    this.plans = p.plans.map((lp) => new ForkliftPlan(this, `Plan-${lp.name}`, { plan: lp, namespace }));
    this.migrations = p.plans.filter((lp) => lp.migration)
      .map((lp) => new ForkliftMigration(this, `Migration-${lp.migration!.name}`, { name: lp.migration!.name, namespace, plan: lp.name }));
  }
}
