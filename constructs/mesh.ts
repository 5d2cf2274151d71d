import { Construct } from 'constructs';
import { FleetValidationError } from '../src/errors';
import { FleetDocument } from '../src/fleet-schema';
import { Ledger, LedgerChange } from '../src/ledger';
import { ClusterPlan, FleetInput, FleetPlan, planFleetDocument } from '../src/planner';
import { HarvesterMigrationNetworkValue, harvesterSettingFor } from '../src/harvester';
import { HarvesterClusterChart } from './harvester-cluster';
import { MeshClusterChart } from './mesh-cluster';
import { ForkliftHubChart } from './forklift-hub';
import { clusterFacts } from './forklift-output';
import { planForklift } from '../src/forklift/plan';
import { MovesInput } from '../src/forklift/checks';

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
   * VMs to move, when kept outside the fleet (`loadMovesFile`).
   *
   * @default - the fleet's own `spec.forklift.moves`
   */
  readonly moves?: MovesInput;
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
  /** The ledger to write back beside the fleet file. */
  public readonly ledger: Ledger;
  /** What changed against the given ledger. */
  public readonly changes: LedgerChange[];
  /** One chart per cluster, by cluster name order (Harvester clusters get a HarvesterClusterChart). */
  public readonly charts: (MeshClusterChart | HarvesterClusterChart)[];
  /** The Forklift hub's objects (id `_forklift`), when the fleet has `spec.forklift` (docs/migrations.md). */
  public readonly forklift?: ForkliftHubChart;

  constructor(scope: Construct, id: string, props: CrossClusterMigrationMeshProps) {
    super(scope, id);
    Object.defineProperty(this, MESH_SYMBOL, { value: true });
    const result = planFleetDocument(props.fleet, { ledger: props.ledger, frozen: props.frozen, renamedFrom: props.renamedFrom });
    this.plan = result.plan;
    this.ledger = result.ledger;
    this.changes = result.changes;
    const harvester = harvesterValues(result.document, this.plan);
    this.charts = this.plan.clusters.map((c) => clusterChart(scope, this.plan, c, harvester.get(c.name)));
    const objects = new Map(this.charts.map((c) => [c.node.id, c.toJson()]));
    const fk = planForklift(result.document, clusterFacts(result.document, this.plan.clusters, objects), props.moves);
    if (fk.problems.length) throw new FleetValidationError(fk.problems);
    if (fk.plan) this.forklift = new ForkliftHubChart(scope, '_forklift', { plan: fk.plan });
  }
}

/**
 * Harvester clusters get the vm-migration-network setting instead of NAD + KubeVirt patch; Harvester's
 * rules and ours are checked for every such cluster before any chart is built.
 */
export function harvesterValues(document: FleetDocument, plan: FleetPlan): Map<string, HarvesterMigrationNetworkValue> {
  const harvester = new Map<string, ReturnType<typeof harvesterSettingFor>>();
  document.spec.clusters.forEach((spec, i) => {
    if (!spec.harvester) return;
    const c = plan.clusters.find((x) => x.name === spec.name)!;
    harvester.set(c.name, harvesterSettingFor(plan, c, spec.harvester, {
      path: `spec.clusters[${i}]`, datapathPath: spec.datapath ? `spec.clusters[${i}].datapath` : 'spec.datapath',
    }));
  });
  // fleet-level problems (e.g. the shared prefix) repeat per Harvester cluster: report each once
  const hp = [...new Map([...harvester.values()].flatMap((h) => h.problems).map((x) => [`${x.path}\n${x.message}`, x])).values()];
  if (hp.length) throw new FleetValidationError(hp);
  return new Map([...harvester.entries()].map(([k, v]) => [k, v.value!]));
}

/** The chart of one cluster: a Harvester setting chart when `harvesterValue` is given, else the full mesh chart. */
export function clusterChart(scope: Construct, plan: FleetPlan, cluster: ClusterPlan, harvesterValue?: HarvesterMigrationNetworkValue): MeshClusterChart | HarvesterClusterChart {
  return harvesterValue !== undefined
    ? new HarvesterClusterChart(scope, cluster.name, { plan, cluster, value: harvesterValue })
    : new MeshClusterChart(scope, cluster.name, { plan, cluster });
}
