import { Construct } from 'constructs';
import { FleetProblem, FleetValidationError } from '../../src/base/errors';
import { FleetDocument } from '../../src/fleet/schema';
import { Ledger, LedgerChange } from '../../src/addressing/ledger';
import { ClusterPlan, FleetInput, FleetPlan, planFleetDocument } from '../../src/addressing/planner';
import { HarvesterMigrationNetworkValue, harvesterValues } from '../../src/delivery/harvester';
import { GatewayDashboard } from '../gateway/dashboard';
import { GATEWAY_METRICS_SERVICE_NAME } from '../gateway/metrics';
import { GatewayPodOptions, gatewayPodOptionsOf, mergeGatewayPodOptions } from '../gateway/pod-options';
import { HarvesterClusterChart } from '../delivery/harvester-cluster';
import { MeshClusterChart, MeshClusterChartProps, MeshClusterOptions } from './mesh-cluster';
import { movePolicies } from '../../src/forklift/compression';
import { movePolicyContext } from '../../src/forklift/plan';
import { MigrationProxy } from '../gateway/migration-proxy';
import { ForkliftHubChart } from '../forklift/hub';
import { clusterFacts } from '../forklift/output';
import { planForklift } from '../../src/forklift/plan';
import { StatusClusterRole } from '../report/status-cluster-role';
import { ForkliftHubPlan } from '../../src/forklift/model';
import { EmittedObject } from '../../src/forklift/gates';
import { MovesInput } from '../../src/forklift/checks';

const MESH_SYMBOL = Symbol.for('migration-mesh.CrossClusterMigrationMesh');

/**
 * Properties for `CrossClusterMigrationMesh`.
 */
export interface CrossClusterMigrationMeshProps {
  /**
   * The fleet: a whole document (`apiVersion/kind/metadata/spec`, as in a fleet YAML file) or just a
   * name plus `spec`. Validated with the same zod schema as fleet files.
   */
  readonly fleet: FleetInput;
  /**
   * The address ledger from the previous run: planned addresses it holds are kept.
   *
   * @default - plan from scratch (every member takes the lowest free address)
   */
  readonly ledger?: Ledger;
  /**
   * The fleet's previous name, to carry its ledger over after a rename (a ledger of another fleet is
   * refused otherwise: every address would be replanned).
   *
   * @default - the ledger must belong to this fleet
   */
  readonly renamedFrom?: string;
  /**
   * Fail when the plan would change the ledger (CI).
   *
   * @default false
   */
  readonly frozen?: boolean;
  /**
   * Labels on every object of every cluster, over the fleet file's `spec.labels`.
   *
   * @default - none
   * @see https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/
   */
  readonly labels?: Record<string, string>;
  /**
   * Customizations of every gateway pod of every gateway cluster, over the fleet file's `spec.gateway.pod`.
   *
   * @default - none
   */
  readonly gatewayPod?: GatewayPodOptions;
  /**
   * Per-cluster customizations by cluster name, over the fleet-wide ones (maps merged by key, lists
   * appended, other fields replaced). Every name must be a cluster of the fleet.
   *
   * @default - none
   */
  readonly clusters?: Record<string, MeshClusterOptions>;
  /**
   * VMs to move, when kept outside the fleet (`loadMovesFile`).
   *
   * @default - the fleet's own `spec.forklift.moves`
   */
  readonly moves?: MovesInput;
  /**
   * Where each cluster's chart (and the Forklift hub's, id `_forklift`) is created. The writer
   * (`synthesizeFleetToDirectory`) gives each its own `App`: cdk8s prepares the whole App every time
   * it renders one chart, so rendering chart by chart from one shared App is quadratic.
   *
   * @default - the mesh's scope: one top-level Chart per cluster in your App
   */
  readonly chartScope?: (id: string) => Construct;
}

/**
 * One fleet description in, one top-level Chart per cluster out. Validates the fleet (every problem at
 * once, nothing synthesized on error), plans addresses against the ledger, and builds each cluster's
 * Chart as a sibling in `scope` with the cluster name as its id, so cdk8s writes one folder per cluster.
 */
export class CrossClusterMigrationMesh extends Construct {
  /** True for any mesh, also across duplicate package copies. */
  public static isMesh(x: unknown): x is CrossClusterMigrationMesh {
    return typeof x === 'object' && x !== null && MESH_SYMBOL in x;
  }

  public readonly plan: FleetPlan;
  /** The validated fleet document, defaults applied. */
  public readonly document: FleetDocument;
  /** The ledger to write back beside the fleet file. */
  public readonly ledger: Ledger;
  /** What changed against the given ledger. */
  public readonly changes: LedgerChange[];
  /**
   * One chart per cluster, by cluster name order (Harvester clusters get a HarvesterClusterChart).
   * Filter with `MeshClusterChart.isMeshClusterChart` / `HarvesterClusterChart.isHarvesterClusterChart`.
   */
  public readonly charts: (MeshClusterChart | HarvesterClusterChart)[];
  /** The Forklift hub's objects (id `_forklift`), when the fleet has `spec.forklift` (docs/migrations.md). */
  public readonly forklift?: ForkliftHubChart;
  /** Warnings of the Forklift checks (problems are thrown). */
  public readonly forkliftWarnings: readonly FleetProblem[];

  constructor(scope: Construct, id: string, props: CrossClusterMigrationMeshProps) {
    super(scope, id);
    Object.defineProperty(this, MESH_SYMBOL, { value: true });
    const planning = planMesh(props);
    this.plan = planning.plan;
    this.ledger = planning.ledger;
    this.changes = planning.changes;
    this.document = planning.document;
    const chartScope = props.chartScope ?? (() => scope);
    this.charts = this.plan.clusters.map((c) => planning.chart(chartScope(c.name), c));
    // the moves checks read each cluster's generated configuration: render it only when there are moves to check
    const objects = new Map(planning.document.spec.forklift ? this.charts.map((c) => [c.node.id, c.toJson()]) : []);
    const fk = planning.forklift(objects, props.moves);
    this.forkliftWarnings = fk.warnings;
    if (fk.plan) this.forklift = new ForkliftHubChart(chartScope('_forklift'), '_forklift', { plan: fk.plan });
  }

  /** The chart of one cluster, by name. */
  public chartOf(cluster: string): MeshClusterChart | HarvesterClusterChart | undefined {
    return this.charts.find((c) => c.cluster.name === cluster);
  }

  /** The gateway of every gateway-datapath cluster, in cluster order. */
  public get gateways(): MigrationProxy[] {
    return this.charts.filter(MeshClusterChart.isMeshClusterChart).flatMap((c) => (c.proxy ? [c.proxy] : []));
  }
}

/**
 * The fleet planned once: what every cluster's chart is built from. The mesh builds all charts at once;
 * the streaming writer (`synthesizeFleetToDirectory`) builds, renders and releases them one at a time.
 */
export interface MeshPlanning {
  readonly plan: FleetPlan;
  readonly ledger: Ledger;
  readonly changes: LedgerChange[];
  readonly document: FleetDocument;
  /** The chart of one cluster of the plan, in `scope`. */
  chart(scope: Construct, cluster: ClusterPlan): MeshClusterChart | HarvesterClusterChart;
  /**
   * The Forklift checks and plan from each cluster's objects (only read when the fleet has
   * `spec.forklift`). Throws `FleetValidationError` with the problems.
   */
  forklift(objects: ReadonlyMap<string, readonly unknown[]>, moves?: MovesInput): { plan?: ForkliftHubPlan; warnings: readonly FleetProblem[] };
}

/** Validate and plan the fleet against the ledger (every problem at once); builds no chart. */
export function planMesh(props: CrossClusterMigrationMeshProps): MeshPlanning {
  const result = planFleetDocument(props.fleet, { ledger: props.ledger, frozen: props.frozen, renamedFrom: props.renamedFrom });
  const { plan, document } = result;
  const harvester = harvesterValues(document, plan);
  const unknown = Object.keys(props.clusters ?? {}).filter((n) => !plan.clusters.some((c) => c.name === n));
  if (unknown.length) throw new Error(`clusters: ${unknown.join(', ')} not in fleet ${plan.fleet}; use one of ${plan.clusters.map((c) => c.name).join(', ')}`);
  // issue #29, issue 51: a move's compression and cross-cluster settings are a MigrationPolicy in its target
  // cluster's chart (refusals and warnings: planForklift)
  const harvesterClusters = new Map(document.spec.clusters.map((c) => [c.name, { harvester: !!c.harvester }]));
  const movePolicy = movePolicies(plan.fleet, props.moves?.moves ?? document.spec.forklift?.moves ?? [], movePolicyContext(document, harvesterClusters));
  return {
    plan, ledger: result.ledger, changes: result.changes, document,
    chart: (scope, c) => {
      const options = { ...clusterOptionsFor(document, c.name, props), movePolicies: movePolicy.get(c.name) };
      const chart = clusterChart(scope, plan, c, harvester.get(c.name), options);
      addOperatorView(document, [chart], plan);
      return chart;
    },
    forklift: (objects, moves) => {
      const fk = planForklift(document, clusterFacts(document, plan.clusters, objects as ReadonlyMap<string, EmittedObject[]>), moves);
      if (fk.problems.length) throw new FleetValidationError(fk.problems);
      return { plan: fk.plan, warnings: fk.warnings };
    },
  };
}

/**
 * A cluster's customizations from four layers, later winning: the fleet file's `spec` (`labels`,
 * `gateway.pod`), the TypeScript fleet-wide props, the fleet file's cluster entry, the TypeScript
 * `clusters[name]` props.
 */
function clusterOptionsFor(document: FleetDocument, cluster: string, props: Pick<CrossClusterMigrationMeshProps, 'labels' | 'gatewayPod' | 'clusters'> = {}): MeshClusterOptions {
  const spec = document.spec;
  const entry = spec.clusters.find((c) => c.name === cluster);
  const ts = props.clusters?.[cluster];
  const fileFleet = gatewayPodOptionsOf(spec.gateway?.pod);
  const fileCluster = gatewayPodOptionsOf(entry?.gateway?.pod);
  return {
    labels: { ...spec.labels, ...props.labels, ...entry?.labels, ...ts?.labels },
    gatewayPod: mergeGatewayPodOptions(fileFleet, props.gatewayPod, fileCluster, ts?.gatewayPod),
  };
}

/**
 * The chart of one cluster: a Harvester setting chart when `harvesterValue` is given, else the full mesh
 * chart. `options` (see `clusterOptionsFor`) carries the user's labels and gateway pod customizations.
 */
function clusterChart(
  scope: Construct, plan: FleetPlan, cluster: ClusterPlan, harvesterValue?: HarvesterMigrationNetworkValue,
  options: MeshClusterOptions & Pick<MeshClusterChartProps, 'movePolicies'> = {},
): MeshClusterChart | HarvesterClusterChart {
  return harvesterValue !== undefined
    ? new HarvesterClusterChart(scope, cluster.name, { plan, cluster, value: harvesterValue, labels: options.labels })
    : new MeshClusterChart(scope, cluster.name, { plan, cluster, ...options });
}

/** `spec.operatorView`: the status ClusterRole in every mesh cluster's chart, the dashboard beside each gateway. */
function addOperatorView(document: FleetDocument, charts: readonly (MeshClusterChart | HarvesterClusterChart)[], plan: FleetPlan): void {
  const view = document.spec.operatorView;
  if (!view) return;
  for (const chart of charts.filter(MeshClusterChart.isMeshClusterChart)) {
    if (view.statusClusterRole) new StatusClusterRole(chart, 'StatusClusterRole');
    if (view.dashboard && chart.proxy) {
      new GatewayDashboard(chart, 'GatewayDashboard', {
        cluster: chart.cluster.name, namespace: chart.proxy.namespace, job: GATEWAY_METRICS_SERVICE_NAME,
        vip: chart.cluster.gatewayVip?.replace(/\/\d+$/, ''), trust: !!plan.trust.clusters[chart.cluster.name]?.exchange,
        configMapNamespace: view.dashboardNamespace,
      });
    }
  }
}
