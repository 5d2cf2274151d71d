/**
 * The salvage path: every problem of a broken fleet at once, so that one run reports the problems of
 * every layer (a VLAN out of range no longer hides an exhausted supernet). The main path
 * (planner.ts `checkFleetInput`, document.ts `checkFleetDocument`) stops at the first stage with
 * problems and knows nothing of this; when it fails, the entries (`planFleetDocument`,
 * `parseFleetDocument`, synthesis' error report) come here. This module decides what to leave out of a
 * broken fleet and runs the same stages over the rest: the ledger (ledger-guard.ts), the schema
 * (document.ts), the cross-field rules (resolve.ts), the plan (assemble.ts), `frozen`. Pure, no cdk8s
 * import.
 *
 * The line, and why:
 * - A cluster with a problem anywhere under `spec.clusters[i]` is left out of planning: a value of
 *   it may be missing or out of range, and planning on it would invent problems (or hide them). The
 *   other clusters are planned, so their capacity, Harvester rules and the supernet are checked.
 * - A fleet-level problem stops planning, unless its field is one that planning never reads (the
 *   attachments and NAD names, KubeVirt, migration policy, trust, the gateway's image/TLS/payload/
 *   placement/port, GitOps, Forklift): addresses and counts depend on every other fleet-level field,
 *   and a guess there would report problems the user does not have.
 * - A ledger that cannot be used (another fleet's, a wrong --renamed-from) stops planning: the plan
 *   depends on the ledger, and planning from scratch is what the refusal protects against.
 * - A cluster whose required value is unreadable (`nodes: three`) is left out of the document by the
 *   schema check (`salvageFleetDocument`): the other clusters still get the cross-field
 *   checks, but nothing is planned, since plan problems would name clusters by their place in a
 *   document that is not the user's.
 * - Forklift's checks read the generated objects, which exist only for a complete plan: they run once
 *   every other layer passes (a moved-from cluster left out of planning would read as unknown).
 */
import { z } from 'zod';
import { Checked, FleetProblem, FleetValidationError, ProblemCollector, Salvaged } from '../base/errors';
import { FleetDocument, fleetDocumentSchema } from './schema';
import { FleetInput, isRecord, toFleetDocument, zodProblems } from './document';
import { ResolvedFleet } from './resolved';
import { resolveAndCheck } from './resolve';
import { Ledger } from '../addressing/ledger';
import { PlanOptions, carryLedger, frozenProblems } from '../addressing/ledger-guard';
import { PlanResult } from '../addressing/fleet-plan';
import { checkPlan } from '../addressing/assemble';

/**
 * The main path's value; only when it failed, every problem the salvage path finds (`every`), as one
 * FleetValidationError.
 */
export function orEveryProblem<T>(main: Checked<T>, every: () => readonly FleetProblem[], source?: string): T {
  if (main.ok) return main.value;
  throw new FleetValidationError(every(), source);
}

// ---------------- the document: what the schema check leaves later checks ----------------

/** Issues about a value's type or shape; the others (range, format, enum) leave a value of the right type. */
const SHAPE_ISSUES = new Set(['invalid_type', 'invalid_union', 'unrecognized_keys', 'invalid_key', 'invalid_element']);
const isShapeIssue = (i: z.core.$ZodIssue): boolean => SHAPE_ISSUES.has(i.code);

/** A copy of `input` without the values of the wrong type or shape (and without unknown keys). */
function withoutMisshapenValues(input: unknown, issues: readonly z.core.$ZodIssue[]): unknown {
  const copy: unknown = structuredClone(input);
  for (const issue of issues.filter(isShapeIssue)) {
    const parent = issue.path.slice(0, -1).reduce<unknown>((o, k) => (isRecord(o) ? o[k as string] : undefined), copy);
    if (issue.code === 'unrecognized_keys') {
      const at = issue.path.reduce<unknown>((o, k) => (isRecord(o) ? o[k as string] : undefined), copy);
      if (isRecord(at)) for (const k of issue.keys) delete at[k];
    } else if (isRecord(parent) && issue.path.length > 0 && !Array.isArray(parent)) {
      delete parent[issue.path[issue.path.length - 1] as string];
    }
  }
  return copy;
}

/** A salvaged fleet document; see `salvageFleetDocument`. */
export interface SalvagedDocument extends Salvaged<FleetDocument> {
  /**
   * When clusters were left out: the place in the input of each cluster the document kept.
   * @default - every cluster kept, in place
   */
  readonly clusterIndex?: readonly number[];
}

/**
 * The schema check alone, with the document later checks can still read: the parsed document, or the
 * input without its misshapen values (values only out of range or format keep their place). A
 * cluster whose required value is unreadable is left out (`clusterIndex` says where the others were);
 * nothing when a fleet-level required value is.
 */
export function salvageFleetDocument(input: unknown): SalvagedDocument {
  const r = fleetDocumentSchema.safeParse(input);
  if (r.success) return { problems: [], value: r.data };
  const problems = zodProblems(r.error, input);
  const rest = withoutMisshapenValues(input, r.error.issues);
  const again = fleetDocumentSchema.safeParse(rest);
  if (again.success) return { problems, value: again.data };
  const unreadable = new Set<number>();
  let vmNetworksUnreadable = false;
  for (const { path } of again.error.issues.filter(isShapeIssue)) {
    // issue 40: VM networks with an unreadable required value are left out whole (planned by no one else)
    if (path[0] === 'spec' && path[1] === 'vmNetworks') { vmNetworksUnreadable = true; continue; }
    if (path[0] !== 'spec' || path[1] !== 'clusters' || typeof path[2] !== 'number') return { problems };
    unreadable.add(path[2]);
  }
  if (vmNetworksUnreadable) delete (rest as { spec: { vmNetworks?: unknown } }).spec.vmNetworks;
  if (unreadable.size === 0) return { problems, value: rest as FleetDocument };
  const spec = (rest as { spec: { clusters: unknown[] } }).spec;
  const clusterIndex = spec.clusters.map((_, i) => i).filter((i) => !unreadable.has(i));
  const fewer = { ...(rest as object), spec: { ...spec, clusters: clusterIndex.map((i) => spec.clusters[i]) } };
  const third = fleetDocumentSchema.safeParse(fewer);
  if (!third.success && third.error.issues.some(isShapeIssue)) return { problems };
  return { problems, value: third.success ? third.data : (fewer as FleetDocument), clusterIndex };
}

/** Problems found in a document that left clusters out, with every `spec.clusters[i]` as the input numbers it. */
function reindexProblems(problems: readonly FleetProblem[], clusterIndex: readonly number[] | undefined): FleetProblem[] {
  if (!clusterIndex) return [...problems];
  const renumber = (s: string): string => s.replace(/spec\.clusters\[(\d+)\]/g, (_, j: string) => `spec.clusters[${clusterIndex[Number(j)] ?? j}]`);
  return problems.map((p) => ({ ...p, path: renumber(p.path), message: renumber(p.message), ...(p.fix ? { fix: renumber(p.fix) } : {}) }));
}

// ---------------- the resolved fleet: what planning may still read ----------------

/** Fleet-level fields planning never reads: problems there leave the plan checkable. */
const NOT_PLANNED = [
  'apiVersion', 'kind',
  'spec.crossClusterNetwork.attachment', 'spec.crossClusterNetwork.name',
  'spec.migrationNetwork.attachment', 'spec.migrationNetwork.name',
  'spec.kubevirt', 'spec.migrationPolicy', 'spec.trust',
  'spec.gateway.image', 'spec.gateway.tls', 'spec.gateway.payload', 'spec.gateway.placement', 'spec.gateway.serviceMonitor', 'spec.gateway.alerts',
  'spec.gateway.tunnelPort', 'spec.gateway.failover.virtualRouterId',
  'spec.syncControllers.placement', 'spec.gitops', 'spec.forklift',
];

/** Codes whose fleet-level path is a field planning reads, but whose problem does not change a value it reads. */
const NOT_PLANNED_CODES = new Set(['native-needs-pr17922']);

const under = (path: string, field: string): boolean => path === field || path.startsWith(`${field}.`) || path.startsWith(`${field}[`);

/** The index of the cluster a problem is about (its path under `spec.clusters[i]`), if any. */
function clusterIndexOf(p: FleetProblem): number | undefined {
  const m = /^spec\.clusters\[(\d+)\]/.exec(p.path);
  return m ? Number(m[1]) : undefined;
}

/**
 * The part of a resolved fleet planning can check despite `problems`: the fleet without the clusters
 * that have a problem, or undefined when a problem concerns what every cluster's plan reads.
 */
function plannablePart(fleet: ResolvedFleet, problems: readonly FleetProblem[]): ResolvedFleet | undefined {
  const broken = new Set<number>();
  for (const p of problems) {
    const i = clusterIndexOf(p);
    if (i !== undefined) broken.add(i);
    else if (!NOT_PLANNED_CODES.has(p.code) && !NOT_PLANNED.some((f) => under(p.path, f))) return undefined;
  }
  return broken.size === 0 ? fleet : { ...fleet, clusters: fleet.clusters.filter((c) => !broken.has(c.index)) };
}

// ---------------- the stages over what is left ----------------

/**
 * Every problem of the schema and, over the document it leaves (`salvageFleetDocument`), of the
 * cross-field rules, each numbered as in the input (a second pass repeats no path the schema named).
 */
export function everyDocumentProblem(input: unknown): FleetProblem[] {
  const s = salvageFleetDocument(input);
  const p = new ProblemCollector();
  p.addAll(s.problems);
  if (s.value) p.addAll(reindexProblems(resolveAndCheck(s.value).problems, s.clusterIndex), { newPathsOnly: true });
  return [...p.problems];
}

/**
 * Every problem of the ledger, the schema, the cross-field rules and the plan at once: each stage runs
 * on the part of the fleet the earlier ones found no problem in (the line is drawn above). The value is
 * the plan with its document, complete when there is no problem, else the plan of the part that could
 * be planned (for the checks that read a plan, e.g. Harvester's), or nothing.
 */
export function salvageFleetInput(fleet: FleetInput, opts: PlanOptions = {}): Salvaged<PlanResult & { document: FleetDocument }> {
  const p = new ProblemCollector();
  const raw = toFleetDocument(fleet);
  // a ledger of another fleet is refused unless the fleet was renamed from it; every problem at once
  const carried = carryLedger(raw?.metadata?.name, opts);
  p.addAll(carried.problems);
  const usableLedger = p.empty;
  const doc = salvageFleetDocument(raw);
  p.addAll(doc.problems);
  const resolved = doc.value && resolveAndCheck(doc.value);
  // a second pass over a malformed document repeats what the schema found
  if (resolved) p.addAll(reindexProblems(resolved.problems, doc.clusterIndex), { newPathsOnly: true });
  // a document that left unreadable clusters out is checked, not planned (its cluster places differ)
  const part = usableLedger && !doc.clusterIndex && resolved?.value ? plannablePart(resolved.value, p.problems) : undefined;
  const result = part && salvagePlan(p, part, carried.ledger);
  if (!result || !doc.value || !p.empty) return { problems: p.problems, value: result && doc.value ? { ...result, document: doc.value } : undefined };
  p.addAll(frozenProblems(result.changes, opts));
  return { problems: p.problems, value: { ...result, document: doc.value } };
}

/** Plan what could be planned; its problems join `p`. The plan, when planning got that far. */
function salvagePlan(p: ProblemCollector, fleet: ResolvedFleet, ledger: Ledger | undefined): PlanResult | undefined {
  const r = checkPlan(fleet, ledger);
  p.addAll(r.problems);
  return r.ok ? r.value : undefined;
}
