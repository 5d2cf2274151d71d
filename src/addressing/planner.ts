/**
 * Address planning, the entries: `planFleet` (a resolved fleet and the previous ledger to a complete,
 * deterministic plan and the next ledger) and `planFleetDocument` (the ledger guard, the schema, the
 * cross-field rules, the plan and `frozen`, for a fleet as written). The phases live beside this file:
 * allocate.ts (addresses), address-pool.ts (keep what the ledger has, then take the lowest free),
 * assemble.ts (each cluster's plan); the plan's types are in fleet-plan.ts. Pure, no cdk8s import.
 */
import { FleetDocument, FleetSpec, FLEET_API_VERSION, FLEET_KIND } from '../fleet/schema';
import { Checked, ProblemCollector, Salvaged, checkedOf, orThrow } from '../base/errors';
import { Ledger, formatLedgerChange } from './ledger';
import { ledgerForFleet } from './ledger-guard';
import { plannablePart } from '../fleet/salvage';
import { ResolvedFleet } from '../fleet/resolved';
import { salvageFleet } from '../fleet/resolve';
import { reindexProblems, salvageFleetDocument } from '../fleet/document';
import { PlanResult } from './fleet-plan';
import { checkPlan } from './assemble';

export type {
  CapacityReport, ClusterPlan, FleetPlan, GatewayReplicaPlan, PeerPlan, PlanResult, RoutePlan, TrustAgentReplicaPlan, WhereaboutsPlan,
} from './fleet-plan';

/** Plan a fleet. Throws FleetValidationError when the plan cannot be made (capacity, exhausted supernet). */
export function planFleet(fleet: ResolvedFleet, previous?: Ledger): PlanResult {
  return orThrow(checkPlan(fleet, previous));
}

export interface PlanOptions {
  /** The previous ledger: its addresses are kept. */
  readonly ledger?: Ledger;
  /**
   * The fleet's previous name, when it was renamed: its ledger is carried over (without it, a ledger of
   * another fleet is refused). @default - a ledger must belong to this fleet
   */
  readonly renamedFrom?: string;
  /** Fail when the plan would change the ledger (CI). */
  readonly frozen?: boolean;
}

/** A whole fleet document, or just a name and a spec. */
export type FleetInput = FleetDocument | { readonly name: string; readonly spec: FleetSpec };

export function toFleetDocument(fleet: FleetInput): FleetDocument {
  return 'apiVersion' in fleet
    ? fleet
    : { apiVersion: FLEET_API_VERSION, kind: FLEET_KIND, metadata: { name: fleet.name }, spec: fleet.spec };
}

/** `planFleetDocument` as a value: the plan with its document, or every problem. */
function checkFleetInput(fleet: FleetInput, opts: PlanOptions = {}): Checked<PlanResult & { document: FleetDocument }> {
  return checkedOf(salvageFleetInput(fleet, opts));
}

/**
 * Every problem of the ledger, the schema, the cross-field rules and the plan at once: each layer runs
 * on the part of the fleet the earlier ones found no problem in (src/fleet/salvage.ts draws the line). The
 * value is the plan with its document, complete when there is no problem, else the plan of the part
 * that could be planned (for the checks that read a plan, e.g. Harvester's), or nothing.
 */
export function salvageFleetInput(fleet: FleetInput, opts: PlanOptions = {}): Salvaged<PlanResult & { document: FleetDocument }> {
  const p = new ProblemCollector();
  const raw = toFleetDocument(fleet);
  // a ledger of another fleet is refused unless the fleet was renamed from it; every problem at once
  const carried = ledgerForFleet(typeof raw?.metadata?.name === 'string' ? raw.metadata.name : '', opts.ledger, opts.renamedFrom);
  p.addAll(carried.problems);
  if (opts.frozen && opts.ledger && carried.ledger && opts.ledger.fleet !== carried.ledger.fleet) {
    p.add('ledger-renamed', '(ledger)', `frozen: carrying the ledger of '${opts.ledger.fleet}' over rewrites it`,
      'run synth with --renamed-from once without --frozen and commit the ledger');
  }
  const usableLedger = p.empty;
  const doc = salvageFleetDocument(raw);
  p.addAll(doc.problems);
  const resolved = doc.value && salvageFleet(doc.value);
  // a second pass over a malformed document repeats what the schema found
  if (resolved) p.addAll(reindexProblems(resolved.problems, doc.clusterIndex), { newPathsOnly: true });
  // a document that left unreadable clusters out is checked, not planned (its cluster places differ)
  const part = usableLedger && !doc.clusterIndex && resolved?.value ? plannablePart(resolved.value, p.problems) : undefined;
  const result = part && salvagePlan(p, part, carried.ledger);
  if (!result || !doc.value || !p.empty) return { problems: p.problems, value: result && doc.value ? { ...result, document: doc.value } : undefined };
  if (opts.frozen && !opts.ledger) {
    p.add('ledger-missing', '(ledger)', 'frozen, but there is no ledger', 'run synth without --frozen once and commit the ledger it writes');
  } else if (opts.frozen && result.changes.length > 0) {
    p.add('ledger-would-change', '(ledger)', `frozen: the plan would change the ledger:\n      ${result.changes.map((c) => formatLedgerChange(c, true)).join('\n      ')}`,
      'run synth without --frozen and commit the updated ledger');
  }
  return { problems: p.problems, value: { ...result, document: doc.value } };
}

/** Plan what could be planned; its problems join `p`. The plan, when planning got that far. */
function salvagePlan(p: ProblemCollector, fleet: ResolvedFleet, ledger: Ledger | undefined): PlanResult | undefined {
  const r = checkPlan(fleet, ledger);
  p.addAll(r.problems);
  return r.ok ? r.value : undefined;
}

/** Validate (structure and cross-field rules), plan against the ledger, and enforce `frozen`. Throws FleetValidationError. */
export function planFleetDocument(fleet: FleetInput, opts: PlanOptions = {}, source?: string): PlanResult & { document: FleetDocument } {
  return orThrow(checkFleetInput(fleet, opts), source);
}
