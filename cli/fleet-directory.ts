/**
 * The writer: one fleet in, its GitOps tree (`<outdir>/<fleet>/`) and its ledger out, written together
 * or not at all. The CLI's `synth` and cdk8s apps of your own both call it, so both get the same tree:
 * the GitOps layout and wiring, the kustomize-patch Component, rollout order, `fleet.svg`, the
 * manifest of generated files, and the ledger written back.
 */
import * as fs from 'fs';
import * as path from 'path';
import { InvalidPropsError } from '../src/base/errors';
import { FleetInput, FleetPlan } from '../src/addressing/planner';
import { Ledger, serializeLedger } from '../src/addressing/ledger';
import { ledgerPathFor, loadLedgerFile, readFleetFile } from '../src/fleet/load';
import { loadMovesFile, movesPathFor } from '../src/forklift/moves';
import { planReport } from '../src/report/plan-report';
import { renderFleetSvg } from '../src/report/fleet-svg';
import { SynthOptions, SynthResult, synthesizeFleet } from './synthesize-fleet';
import { OutputFile, StreamedTree, TreeWriteReport, WriteHooks, WriterFs, writeStreamedOutputs } from './write-tree';
import { PlannedSynthesis, planSynthesis } from './synthesize-stream';
import { FleetDocument } from '../src/fleet/schema';

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

/**
 * A fleet ready to be written (`writeFleetDirectories`). Without a whole-mesh `customize` hook it is
 * only planned: the write builds, renders and writes one cluster at a time, and `files`, `tree`,
 * `objects` and `mesh` are synthesized in memory only if you read them (a second synthesis, held whole).
 */
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
  /** How many files synth generated in the tree (`files.size`: `fleet.svg` and the manifest not counted), without holding them. */
  readonly fileCount: number;
}

/** The fleet picture (`fleet.svg`). */
const fleetSvg = (plan: FleetPlan, document: FleetDocument): string =>
  renderFleetSvg(planReport(plan, { harvester: document.spec.clusters.filter((c) => c.harvester).map((c) => c.name) }));

/** Planned fleets whose files are produced while they are written (see `PendingFleetDirectory`). */
const streamed = new WeakMap<object, { planned: PlannedSynthesis; svg?: string; materialized: () => boolean }>();

/**
 * Render one fleet (validation, plan; with a whole-mesh `customize` hook also the constructs and every
 * file, in memory); writes nothing. Throws `FleetValidationError` with every problem.
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
  const inMemory = (): PendingFleetDirectory => {
    const r = synthesizeFleet(fleet, { ...opts, ledger, moves });
    const tree = new Map(r.files);
    if (opts.svg !== false) tree.set(FLEET_SVG, fleetSvg(r.plan, r.mesh.document));
    return { ...r, dir: path.join(opts.outdir ?? 'dist', r.plan.fleet), ledgerFile, tree };
  };
  if (opts.customize) return inMemory();
  const planned = planSynthesis(fleet, { ...opts, ledger, moves });
  let whole: PendingFleetDirectory | undefined;
  const full = (): PendingFleetDirectory => (whole ??= inMemory());
  const pending = lazily({
    plan: planned.plan, ledger: planned.ledger, changes: planned.changes, gitops: planned.gitops, forklift: planned.forklift,
    dir: path.join(opts.outdir ?? 'dist', planned.plan.fleet), ledgerFile,
  }, full);
  streamed.set(pending, { planned, svg: opts.svg !== false ? fleetSvg(planned.plan, planned.document) : undefined, materialized: () => !!whole });
  return pending;
}

/** `base` with `files`, `tree`, `objects` and `mesh` taken from `full()` on first read. */
function lazily<T extends object>(base: T, full: () => PendingFleetDirectory): T & PendingFleetDirectory {
  const out = { ...base } as T & PendingFleetDirectory;
  for (const key of ['files', 'tree', 'objects', 'mesh'] as const) {
    Object.defineProperty(out, key, { enumerable: true, configurable: true, get: () => full()[key] });
  }
  return out;
}

/**
 * Write rendered fleets: every tree and ledger in one transaction (nothing written when one cannot
 * be). A planned fleet is built, rendered and written one cluster at a time, under the lock. Throws
 * `OutputWriteError` (codes `write/...`, docs/errors.md) with the path and the fix, or the fleet's
 * own error when a cluster cannot be built (nothing written).
 */
/**
 * A ledger whose content is unchanged but for its line ends (a CRLF checkout, git's autocrlf) stays byte for
 * byte as it is: `synth --frozen` and an unchanged plan never rewrite it (issue 50 item 8).
 */
function keptLineEnds(file: string, content: string): string {
  let old: string;
  try { old = fs.readFileSync(file, 'utf8'); } catch { return content; }
  return old !== content && old.replace(/\r\n/g, '\n') === content ? old : content;
}

export function writeFleetDirectories(pending: readonly PendingFleetDirectory[], io?: WriterFs, hooks?: WriteHooks): FleetDirectoryResult[] {
  const counts = pending.map((p) => (streamed.get(p)?.materialized() === false ? 0 : p.files.size));
  const trees: StreamedTree[] = pending.map((p, i) => {
    const s = streamed.get(p);
    if (!s || s.materialized()) {
      return { dir: p.dir, fleet: p.plan.fleet, produce: (emit) => { for (const rel of [...p.tree.keys()].sort()) emit(rel, p.tree.get(rel)!); } };
    }
    return {
      dir: p.dir, fleet: p.plan.fleet,
      produce: (emit) => {
        counts[i] = s.planned.stream(emit);
        if (s.svg !== undefined) emit(FLEET_SVG, s.svg);
      },
    };
  });
  const ledgers: OutputFile[] = pending
    .flatMap((p) => (p.ledgerFile ? [{ file: p.ledgerFile, content: keptLineEnds(p.ledgerFile, serializeLedger(p.ledger)) }] : []));
  const reports = writeStreamedOutputs(trees, ledgers, io, hooks);
  return pending.map((p, i) => {
    // the same object with its lazy fields kept (a spread would synthesize them)
    const r = Object.defineProperties({}, Object.getOwnPropertyDescriptors(p)) as FleetDirectoryResult;
    Object.defineProperties(r, { report: { value: reports[i], enumerable: true }, fileCount: { value: counts[i], enumerable: true } });
    const s = streamed.get(p);
    if (s) streamed.set(r, s);
    return r;
  });
}

/**
 * Synthesize a fleet into `<outdir>/<fleet>/` (the GitOps layout; the same tree `migration-mesh synth`
 * writes) and write its ledger back, together or not at all. Files not ours in that directory are
 * left alone (see `.migration-mesh.manifest`). Without a whole-mesh `customize` hook, one cluster at a
 * time is built, rendered and written (`customizeCluster` keeps that).
 *
 * @example
 * synthesizeFleetToDirectory({
 *   fleetFile: 'prod.fleet.yaml', outdir: 'dist',
 *   customizeCluster: (chart) => { if (MeshClusterChart.isMeshClusterChart(chart)) chart.proxy?.addPodLabel('team', 'net'); },
 * });
 */
export function synthesizeFleetToDirectory(opts: FleetDirectoryOptions): FleetDirectoryResult {
  return writeFleetDirectories([renderFleetDirectory(opts)])[0];
}
