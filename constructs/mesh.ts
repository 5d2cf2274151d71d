import { Construct } from 'constructs';
import { FleetValidationError } from '../src/errors';
import { FleetDocument, FleetSpec, FLEET_API_VERSION, FLEET_KIND } from '../src/fleet-schema';
import { Ledger, LedgerChange, formatLedgerChange } from '../src/ledger';
import { FleetPlan, planFleet } from '../src/planner';
import { parseFleetDocument, resolveFleet } from '../src/resolve';
import { harvesterSettingFor } from '../src/harvester';
import { HarvesterClusterChart } from './harvester-cluster';
import { MeshClusterChart } from './mesh-cluster';

const MESH_SYMBOL = Symbol.for('migration-mesh.CrossClusterMigrationMesh');

/**
 * Properties for `CrossClusterMigrationMesh`.
 */
export interface CrossClusterMigrationMeshProps {
  /**
   * The fleet: a whole document (`apiVersion/kind/metadata/spec`, as in a fleet YAML file) or just a
   * name plus `spec`. Validated with the same zod schema as fleet files.
   */
  readonly fleet: FleetDocument | { readonly name: string; readonly spec: FleetSpec };
  /**
   * The address ledger from the previous run: planned addresses it holds are kept.
   *
   * @default - plan from scratch (every member takes the lowest free address)
   */
  readonly ledger?: Ledger;
  /**
   * Fail when the plan would change the ledger (CI).
   *
   * @default false
   */
  readonly frozen?: boolean;
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

  constructor(scope: Construct, id: string, props: CrossClusterMigrationMeshProps) {
    super(scope, id);
    Object.defineProperty(this, MESH_SYMBOL, { value: true });
    const doc = 'apiVersion' in props.fleet
      ? props.fleet
      : { apiVersion: FLEET_API_VERSION, kind: FLEET_KIND, metadata: { name: props.fleet.name }, spec: props.fleet.spec };
    const parsed = parseFleetDocument(doc);
    const resolved = resolveFleet(parsed);
    const result = planFleet(resolved, props.ledger);
    if (props.frozen && props.ledger && result.changes.length > 0) {
      throw new FleetValidationError([{
        path: '(ledger)',
        message: `frozen: the plan would change the ledger:\n      ${result.changes.map(formatLedgerChange).join('\n      ')}`,
        fix: 'run synth without --frozen and commit the updated ledger',
      }]);
    }
    if (props.frozen && !props.ledger) {
      throw new FleetValidationError([{ path: '(ledger)', message: 'frozen, but there is no ledger', fix: 'run synth without --frozen once and commit the ledger it writes' }]);
    }
    this.plan = result.plan;
    this.ledger = result.ledger;
    this.changes = result.changes;
    // Harvester clusters: the vm-migration-network setting instead of NAD + KubeVirt patch, checked first
    const harvester = new Map<string, ReturnType<typeof harvesterSettingFor>>();
    parsed.spec.clusters.forEach((spec, i) => {
      if (!spec.harvester) return;
      const c = this.plan.clusters.find((x) => x.name === spec.name)!;
      harvester.set(c.name, harvesterSettingFor(this.plan, c, spec.harvester, {
        path: `spec.clusters[${i}]`, datapathPath: spec.datapath ? `spec.clusters[${i}].datapath` : 'spec.datapath',
      }));
    });
    // fleet-level problems (e.g. the shared prefix) repeat per Harvester cluster: report each once
    const hp = [...new Map([...harvester.values()].flatMap((h) => h.problems).map((x) => [`${x.path}\n${x.message}`, x])).values()];
    if (hp.length) throw new FleetValidationError(hp);
    this.charts = this.plan.clusters.map((c) => (harvester.has(c.name)
      ? new HarvesterClusterChart(scope, c.name, { plan: this.plan, cluster: c, value: harvester.get(c.name)!.value! })
      : new MeshClusterChart(scope, c.name, { plan: this.plan, cluster: c })));
  }
}
