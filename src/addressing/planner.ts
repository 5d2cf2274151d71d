/**
 * Address planning, the entries and the main path: `planFleet` (a resolved fleet and the previous ledger
 * to a complete, deterministic plan and the next ledger) and `planFleetDocument` (a fleet as written:
 * the ledger, the schema, the cross-field rules, the plan, `frozen`, each stage on what the one before
 * gave, stopping at the first with problems). When it stops, src/fleet/salvage.ts reports every problem
 * of every stage. The phases of planning live beside this file: allocate.ts (addresses), address-pool.ts
 * (keep what the ledger has, then take the lowest free), assemble.ts (each cluster's plan); the plan's
 * types are in fleet-plan.ts. Pure, no cdk8s import.
 */
import { Checked, orThrow } from '../base/errors';
import { FleetDocument } from '../fleet/schema';
import { FleetInput, checkFleetDocument, toFleetDocument } from '../fleet/document';
import { ResolvedFleet } from '../fleet/resolved';
import { checkFleet } from '../fleet/resolve';
import { orEveryProblem, salvageFleetInput } from '../fleet/salvage';
import { Ledger } from './ledger';
import { PlanOptions, carryLedger, frozenProblems } from './ledger-guard';
import { PlanResult } from './fleet-plan';
import { checkPlan } from './assemble';

export type {
  CapacityReport, ClusterPlan, FleetPlan, GatewayReplicaPlan, PeerPlan, PlanResult, RoutePlan, TrustAgentReplicaPlan, WhereaboutsPlan,
} from './fleet-plan';
export type { FleetInput } from '../fleet/document';
export type { PlanOptions } from './ledger-guard';

/** Plan a fleet. Throws FleetValidationError when the plan cannot be made (capacity, exhausted supernet). */
export function planFleet(fleet: ResolvedFleet, previous?: Ledger): PlanResult {
  return orThrow(checkPlan(fleet, previous));
}

/** The main path: the plan with its document, or the problems of the first stage that found some. */
export function checkFleetInput(fleet: FleetInput, opts: PlanOptions = {}): Checked<PlanResult & { document: FleetDocument }> {
  const raw = toFleetDocument(fleet);
  const carried = carryLedger(raw?.metadata?.name, opts);
  if (carried.problems.length) return { ok: false, problems: carried.problems };
  const doc = checkFleetDocument(raw);
  if (!doc.ok) return doc;
  const resolved = checkFleet(doc.value);
  if (!resolved.ok) return resolved;
  const planned = checkPlan(resolved.value, carried.ledger);
  if (!planned.ok) return planned;
  const frozen = frozenProblems(planned.value.changes, opts);
  if (frozen.length) return { ok: false, problems: frozen };
  return { ok: true, value: { ...planned.value, document: doc.value }, problems: [] };
}

/**
 * Validate (structure and cross-field rules), plan against the ledger, and enforce `frozen`. Throws
 * FleetValidationError with every problem of every stage (src/fleet/salvage.ts).
 */
export function planFleetDocument(fleet: FleetInput, opts: PlanOptions = {}, source?: string): PlanResult & { document: FleetDocument } {
  return orEveryProblem(checkFleetInput(fleet, opts), () => salvageFleetInput(fleet, opts).problems, source);
}
