/**
 * Streaming synthesis: the fleet is planned once (validation, addresses, GitOps wiring, the Forklift
 * plan: every problem is found here, before anything is written), then each cluster is built, rendered,
 * passed to the writer and released before the next one is built. Peak memory is one cluster's
 * constructs and files plus the plan, where `synthesizeFleet` holds every cluster's constructs,
 * objects and files at once. The files are the same bytes, in the same layout (./synthesize-fleet.ts).
 */
import * as os from 'os';
import { App } from 'cdk8s';
import { MeshPlanning, planMesh } from '../constructs/fleet/mesh';
import { ForkliftHubChart } from '../constructs/forklift/hub';
import { ForkliftOutput, forkliftOutput } from '../constructs/forklift/output';
import { FleetDocument } from '../src/fleet/schema';
import { FleetInput, FleetPlan } from '../src/addressing/planner';
import { Ledger, LedgerChange } from '../src/addressing/ledger';
import { ResolvedGitops } from '../src/delivery/gitops';
import { DELIVERY_KINDS } from '../src/kubevirt/delivery-forms';
import { ClusterStages, SynthOptions, checkedBuild, clusterFiles, fleetFiles, objectFileName, refuseAsync, rendering, throwRefused } from './synthesize-fleet';

/** A fleet planned, no cluster built yet: what `stream` builds the files from, one cluster at a time. */
export interface PlannedSynthesis {
  readonly plan: FleetPlan;
  readonly ledger: Ledger;
  readonly changes: LedgerChange[];
  readonly document: FleetDocument;
  readonly gitops?: ResolvedGitops;
  /** The Forklift hub's files, plan and warnings (small: built here). */
  readonly forklift: ForkliftOutput;
  /**
   * Build each cluster's chart in an App of its own, run `customizeCluster`, render its files into
   * `emit`, and let it go; then the fleet-wide files (`_forklift/`, `_gitops/`). Returns how many files.
   */
  stream(emit: (rel: string, text: string) => void): number;
}

/**
 * The kinds the Forklift checks read (feature gates, NADs, the Localnet VM networks' CUDNs whose NADs the
 * NetworkMaps map): all that is kept of a cluster to check moves.
 */
const FORKLIFT_FACT_KINDS = new Set([...DELIVERY_KINDS, 'NetworkAttachmentDefinition', 'ClusterUserDefinedNetwork']);

const newApp = (): App => new App({ outdir: os.tmpdir() });

/**
 * Plan the fleet for streaming (throws `FleetValidationError` with every problem, as `synthesizeFleet`
 * does). A fleet with `spec.forklift` builds each cluster once more here to check its moves against the
 * generated KubeVirt configuration and NADs, keeping only those objects.
 */
export function planSynthesis(fleet: FleetInput, opts: Omit<SynthOptions, 'customize'> = {}): PlannedSynthesis {
  const { value: { planning, fk }, gitops } = checkedBuild(fleet, opts, () => {
    const p = planMesh({
      fleet, ledger: opts.ledger, frozen: opts.frozen, renamedFrom: opts.renamedFrom,
      labels: opts.labels, gatewayPod: opts.gatewayPod, clusters: opts.clusters, moves: opts.moves,
    });
    return { planning: p, fk: p.forklift(p.document.spec.forklift ? forkliftFacts(p) : new Map(), opts.moves) };
  });
  const chart = fk.plan ? new ForkliftHubChart(newApp(), '_forklift', { plan: fk.plan }) : undefined;
  const r = rendering(gitops, true, planning.plan.fleet);
  const forklift = forkliftOutput({ chart, warnings: fk.warnings, gitops }, { toYaml: r.toYaml, objectFileName });
  const { plan, ledger, changes, document } = planning;
  return {
    plan, ledger, changes, document, gitops, forklift,
    stream: (emit) => {
      let n = 0;
      const counted = (rel: string, text: string): void => { n++; emit(rel, text); };
      const stagesOf: ClusterStages[] = plan.clusters.map((c, i) => {
        const chart = planning.chart(newApp(), c);
        if (opts.customizeCluster) refuseAsync(opts.customizeCluster(chart), 'customizeCluster');
        const { name, stages } = clusterFiles(chart, r, counted);
        opts.onCluster?.(i + 1, plan.clusters.length);
        return { name, stages };
      });
      for (const [rel, text] of forklift.files) counted(rel, text);
      fleetFiles(plan, forklift, stagesOf, r, counted);
      // what the API server would refuse of any cluster's objects: every one at once, and nothing is written
      throwRefused(r);
      return n;
    },
  };
}

/** Each cluster's KubeVirt configuration and NADs, for the Forklift checks (every chart released after). */
function forkliftFacts(p: MeshPlanning): Map<string, unknown[]> {
  return new Map(p.plan.clusters.map((c) => [c.name,
    (p.chart(newApp(), c).toJson() as { kind: string }[]).filter((o) => FORKLIFT_FACT_KINDS.has(o.kind))]));
}
