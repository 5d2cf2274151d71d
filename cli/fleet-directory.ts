/**
 * The writer: one fleet in, its GitOps tree (`<outdir>/<fleet>/`) and its ledger out, written together
 * or not at all. The CLI's `synth` and cdk8s apps of your own both call it, so both get the same tree:
 * the GitOps layout and wiring, the kustomize-patch Component, rollout order, `fleet.svg`, the
 * manifest of generated files, and the ledger written back.
 */
import * as path from 'path';
import { InvalidPropsError } from '../src/base/errors';
import { FleetInput } from '../src/addressing/planner';
import { Ledger, serializeLedger } from '../src/addressing/ledger';
import { ledgerPathFor, loadLedgerFile, readFleetFile } from '../src/fleet/load';
import { loadMovesFile, movesPathFor } from '../src/forklift/moves';
import { planReport } from '../src/report/plan-report';
import { renderFleetSvg } from '../src/report/fleet-svg';
import { SynthOptions, SynthResult, synthesizeFleet } from './synthesize-fleet';
import { OutputFile, OutputTree, TreeWriteReport, WriteHooks, WriterFs, writeOutputs } from './write-tree';

/** The fleet picture's name inside `<outdir>/<fleet>/`. */
export const FLEET_SVG = 'fleet.svg';

/**
 * Options of `synthesizeFleetToDirectory`: the fleet (a file, or a document / name + spec), where to
 * write, and the same customizations as `CrossClusterMigrationMesh` plus a `customize` hook.
 */
export interface FleetDirectoryOptions extends Omit<SynthOptions, 'ledger'> {
  /**
   * The fleet file. Its ledger (`<name>.ledger.yaml`) and moves (`<name>.moves.yaml`) beside it are
   * read, and the ledger is written back. Give this or `fleet`.
   *
   * @default - `fleet` is used
   */
  readonly fleetFile?: string;
  /**
   * The fleet as a document or `{ name, spec }` (as `CrossClusterMigrationMesh` takes it).
   *
   * @default - read from `fleetFile`
   */
  readonly fleet?: FleetInput;
  /**
   * The output root: the fleet's tree goes to `<outdir>/<fleet name>/`.
   *
   * @default 'dist'
   */
  readonly outdir?: string;
  /**
   * The ledger file: read (when `ledger` is not given) and written back with the output.
   *
   * @default - beside `fleetFile` (`<name>.ledger.yaml`); with `fleet` alone no ledger is read or written
   */
  readonly ledgerFile?: string;
  /**
   * The previous ledger, instead of reading `ledgerFile`.
   *
   * @default - read from `ledgerFile`
   */
  readonly ledger?: Ledger;
  /**
   * Write `fleet.svg`, a picture of the plan.
   *
   * @default true
   */
  readonly svg?: boolean;
}

/** A fleet rendered in memory, ready to be written (`writeFleetDirectories`). */
export interface PendingFleetDirectory extends SynthResult {
  /** `<outdir>/<fleet>`. */
  readonly dir: string;
  /** The ledger file written back, if any. */
  readonly ledgerFile?: string;
  /** Every file of the tree, `fleet.svg` included (the manifest is added when written). */
  readonly tree: Map<string, string>;
}

/** What `synthesizeFleetToDirectory` wrote. */
export interface FleetDirectoryResult extends PendingFleetDirectory {
  /** Files written, removed, and files not ours left in place. */
  readonly report: TreeWriteReport;
}

/**
 * Render one fleet in memory (validation, plan, constructs, your `customize` hook, files); writes
 * nothing. Throws `FleetValidationError` with every problem.
 */
export function renderFleetDirectory(opts: FleetDirectoryOptions): PendingFleetDirectory {
  if (!opts.fleet === !opts.fleetFile) {
    throw new InvalidPropsError({ code: 'prop-invalid', path: 'fleet', message: `${opts.fleet ? 'both fleet and fleetFile are' : 'neither fleet nor fleetFile is'} given`, fix: 'give exactly one of them' });
  }
  const fleet = opts.fleet ?? readFleetFile(opts.fleetFile!);
  const ledgerFile = opts.ledgerFile ?? (opts.fleetFile ? ledgerPathFor(opts.fleetFile) : undefined);
  const ledger = opts.ledger ?? (ledgerFile ? loadLedgerFile(ledgerFile) : undefined);
  const name = 'metadata' in fleet ? fleet.metadata.name : fleet.name;
  const moves = opts.moves ?? (opts.fleetFile ? loadMovesFile(movesPathFor(opts.fleetFile), name) : undefined);
  const r = synthesizeFleet(fleet, { ...opts, ledger, moves });
  const tree = new Map(r.files);
  if (opts.svg !== false) {
    const harvester = r.mesh.document.spec.clusters.filter((c) => c.harvester).map((c) => c.name);
    tree.set(FLEET_SVG, renderFleetSvg(planReport(r.plan, { harvester })));
  }
  return { ...r, dir: path.join(opts.outdir ?? 'dist', r.plan.fleet), ledgerFile, tree };
}

/**
 * Write rendered fleets: every tree and ledger in one transaction (nothing written when one cannot
 * be). Throws `OutputWriteError` (codes `write/...`, docs/errors.md) with the path and the fix.
 */
export function writeFleetDirectories(pending: readonly PendingFleetDirectory[], io?: WriterFs, hooks?: WriteHooks): FleetDirectoryResult[] {
  const trees: OutputTree[] = pending.map((p) => ({ dir: p.dir, fleet: p.plan.fleet, files: p.tree }));
  const ledgers: OutputFile[] = pending.flatMap((p) => (p.ledgerFile ? [{ file: p.ledgerFile, content: serializeLedger(p.ledger) }] : []));
  const reports = writeOutputs(trees, ledgers, io, hooks);
  return pending.map((p, i) => ({ ...p, report: reports[i] }));
}

/**
 * Synthesize a fleet into `<outdir>/<fleet>/` (the GitOps layout; the same tree `migration-mesh synth`
 * writes) and write its ledger back, together or not at all. Files not ours in that directory are
 * left alone (see `.migration-mesh.manifest`).
 *
 * @example
 * synthesizeFleetToDirectory({
 *   fleetFile: 'prod.fleet.yaml', outdir: 'dist',
 *   customize: (mesh) => mesh.gateways.forEach((gw) => gw.addPodLabel('team', 'net')),
 * });
 */
export function synthesizeFleetToDirectory(opts: FleetDirectoryOptions): FleetDirectoryResult {
  return writeFleetDirectories([renderFleetDirectory(opts)])[0];
}
