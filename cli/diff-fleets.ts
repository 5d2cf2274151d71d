/**
 * `diffFleets`: synthesize two fleets in memory (the ledger carried from before into after, as a real
 * synth run would) and compare the trees. Imports synthesize-fleet.ts (and so cdk8s); the comparison itself is
 * the pure src/report/tree-diff.ts.
 */
import { FleetDocument } from '../src/fleet/schema';
import { Ledger } from '../src/addressing/ledger';
import { FleetDiff, NotCompared, TreeSnapshot, diffTrees } from '../src/report/tree-diff';
import { SynthResult, synthesizeFleet } from './synthesize-fleet';
import { MovesInput } from '../src/forklift/checks';
import { FleetValidationError } from '../src/base/errors';

export interface DiffFleetsOptions {
  /** The committed ledger the `before` fleet was synthesized with. @default - none (plan from scratch) */
  readonly ledger?: Ledger;
  /** Moves files beside the two fleets (before, after). @default - the fleets' own `spec.forklift.moves` */
  readonly moves?: readonly [MovesInput | undefined, MovesInput | undefined];
  /** The `before` fleet's name when `after` renames it (the ledger is carried over). @default - same name */
  readonly renamedFrom?: string;
  /** The two fleets' files: a fleet's problems are thrown naming the file they belong to. @default - not named */
  readonly sources?: readonly [string, string];
  /**
   * What the `before` side's inputs cannot tell, and why (its ledger or moves file was not there to read).
   * With `moves` set and no moves given for `before`, `before` is synthesized with `after`'s moves (those
   * between its own clusters), so the files the moves make do not show as changes, and the diff claims
   * no move and no run. @default - everything is known
   */
  readonly unknown?: NotCompared;
}

export interface DiffFleetsResult extends FleetDiff {
  readonly before: SynthResult;
  readonly after: SynthResult;
}

const nodesOf = (r: SynthResult): Record<string, number> => Object.fromEntries(r.plan.clusters.map((c) => [c.name, c.nodes]));

function snapshotOf(r: SynthResult): TreeSnapshot {
  return { files: r.files, ledger: r.ledger, nodes: nodesOf(r) };
}

/** What changing `before` into `after` does to the synthesized tree and the ledger. */
export function diffFleets(before: FleetDocument, after: FleetDocument, opts: DiffFleetsOptions = {}): DiffFleetsResult {
  const unknown = opts.unknown ?? {};
  const oldMoves = opts.moves?.[0] ?? (unknown.moves ? movesBetween(opts.moves?.[1], before) : undefined);
  const b = inSource(opts.sources?.[0], () => synthesizeFleet(before, { ledger: opts.ledger, moves: oldMoves }));
  const renamed = after.metadata.name !== before.metadata.name ? (opts.renamedFrom ?? undefined) : undefined;
  const a = inSource(opts.sources?.[1], () => synthesizeFleet(after, { ledger: b.ledger, renamedFrom: renamed, moves: opts.moves?.[1] }));
  return { ...diffTrees(snapshotOf(b), snapshotOf(a), unknown), before: b, after: a };
}

/** The moves of `after` that `before` could have held: those between two of its clusters. */
function movesBetween(moves: MovesInput | undefined, fleet: FleetDocument): MovesInput | undefined {
  if (!moves) return undefined;
  const names = new Set(fleet.spec.clusters.map((c) => c.name));
  const kept = moves.moves.filter((m) => names.has(m.from) && names.has(m.to));
  return kept.length ? { ...moves, moves: kept } : undefined;
}

/** `fn()`, its fleet problems thrown as belonging to `source` (the file of that side of the diff). */
function inSource<T>(source: string | undefined, fn: () => T): T {
  try { return fn(); } catch (e) {
    if (source && e instanceof FleetValidationError && e.source !== source) throw new FleetValidationError(e.problems, source, e.input);
    throw e;
  }
}
