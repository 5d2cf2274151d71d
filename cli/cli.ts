#!/usr/bin/env node
/**
 * migration-mesh CLI: the same fleet as YAML, through the same schema, planner and constructs.
 *
 *   migration-mesh synth FLEET.yaml... [--out DIR] [--frozen] [--ledger FILE] [--no-svg] [--renamed-from OLD]
 *   migration-mesh validate FLEET.yaml... [--output text|json] [--ledger FILE] [--frozen] [--renamed-from OLD]
 *   migration-mesh plan FLEET.yaml [--output table|json] [--svg FILE] [--ledger FILE] [--renamed-from OLD]
 *   migration-mesh diff OLD.fleet.yaml NEW.fleet.yaml | diff FLEET.yaml [--out DIR]   (exit 0 same, 1 changes, 2 error)
 *   migration-mesh reclaim FLEET.yaml (--cluster NAME | --address ADDR | --all) [--ledger FILE]
 *   migration-mesh reclaim FLEET.yaml --vm-network NET [--cluster NAME | --vm NS/NAME] [--ledger FILE]
 *   migration-mesh inventory FLEET.yaml [--cluster NAME] [--context-map FILE] [--kubeconfig FILE] [--out FILE] [--timeout SECONDS]
 *   migration-mesh evacuate FLEET.yaml --cluster NAME --inventory FILE [--out FILE]
 *   migration-mesh status FLEET.yaml [--context-map FILE] [--kubeconfig FILE] [--out DIR] [--timeout SECONDS] [--moves] [--output text|json]
 *   migration-mesh watch-moves FLEET.yaml [--timeout SECONDS] [--output text|json] ... | cleanup-move FLEET.yaml --move NS/VM [--apply] ...
 *   migration-mesh pin-addresses FLEET.yaml [--move NS/VM] [--after] [--apply] [--ledger FILE] [--context-map FILE] [--kubeconfig FILE] ...
 *   migration-mesh --version | help [COMMAND] | COMMAND --help
 *
 * The command line is read strictly by ./args.ts (each command's own options; unknown or misspelt
 * flags, a value given to a switch, an option with no value are usage errors and nothing is written).
 * Exit codes: 0 ok, 1 fleet problems or errors (diff: changes), 2 usage errors (diff: any error).
 */
import * as fs from 'fs';
import * as path from 'path';
import { FleetProblem, FleetValidationError, MigrationMeshError, formatProblem } from '../src/base/errors';
import { formatLedgerChange } from '../src/addressing/ledger';
import { ledgerPathFor, loadLedgerFile, readFleetFile } from '../src/fleet/load';
import { SynthResult, synthesizeFleet } from './synthesize-fleet';
import { renderFleetDirectory, writeFleetDirectories } from './fleet-directory';
import { OutputWriteError, writeOutputs } from './write-tree';
import { svgTargetProblem } from './svg-target';
import { planReport, renderPlanTable } from '../src/report/plan-report';
import { renderFleetSvg } from '../src/report/fleet-svg';
import { diffTrees, renderDiff, FleetDiff, NotCompared } from '../src/report/tree-diff';
import { diffFleets } from './diff-fleets';
import { createProgress } from './progress';
import { FleetDocument } from '../src/fleet/schema';
import { Ledger } from '../src/addressing/ledger';
import { nodePrerequisites, renderNodePrerequisites } from '../src/addressing/cni';
import { renderSiteRequirements } from '../src/addressing/sites';
import { loadMovesFile, movesPathFor } from '../src/forklift/moves';
import { movesReport, renderMoves } from '../src/forklift/report';
import { Args, UsageError, parseCommandLine, usageOf } from './args';
import { evacuate } from './evacuate';
import { renderStatus } from '../src/report/status';
import { failureJson, problemJson } from './failure-json';
import { reclaim } from './reclaim';
import { productVersionWarnings } from '../src/kubevirt/capabilities';

/** Several files refused, each message naming its file. */
class FilesFailed extends Error {
  constructor(messages: string[]) { super(messages.join('\n')); }
}

/** Whether the command line asks for JSON output (`--output json` or `--output=json`), read before parsing succeeds. */
const asksForJson = (argv: string[]): boolean =>
  argv.some((a, i) => a === '--output=json' || (a === '--output' && argv[i + 1] === 'json'));

/** The whole usage, for the errors the command functions raise themselves. */
const USAGE = usageOf();

type Sink = (s: string) => void;

export function main(argv: string[], out: Sink = (s) => process.stdout.write(s), err: Sink = (s) => process.stderr.write(s)): number {
  let args: Args;
  try {
    const line = parseCommandLine(argv);
    if (line.kind === 'print') { out(line.text); return 0; }
    args = line.args;
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    if (asksForJson(argv)) {
      // a pipeline reading stdout gets data (failure-json.ts), a person the one line; no usage text
      out(failureJson(e));
      err(`migration-mesh: ${e.message}\n`);
    } else {
      err(`migration-mesh: ${e.message}\n\n${e.usage}`);
    }
    return 2;
  }
  try {
    switch (args.cmd) {
      case 'synth': return synth(args, out);
      case 'plan': return plan(args, out, err);
      case 'diff': return diff(args, out, err);
      case 'reclaim': return reclaim(args, out);
      case 'evacuate': return evacuate(args, out);
      case 'validate': return validate(args, out, err);
      case 'status':
      case 'inventory':
      case 'watch-moves':
      case 'cleanup-move':
      case 'pin-addresses': throw new Error(`${args.cmd} asks the clusters (asynchronous): run it through mainAsync, as the migration-mesh binary does`);
      default: throw new Error(`no command function for '${args.cmd}'`);
    }
  } catch (e) {
    err(failureText(e));
    return 1;
  }
}

/** The error's message, naming the file its problems belong to (once). */
function inFile(e: MigrationMeshError, file: string): string {
  if (e instanceof FleetValidationError) {
    return e.message.startsWith(`${file}:`) || e.message.startsWith(`${file} `) ? e.message : new FleetValidationError(e.problems, file, e.input).message;
  }
  return `${e.message.includes(file) ? '' : `${file}: `}${withFixes(e)}`;
}

/** The message, with the codes of its problems unless it shows them already. */
function withCodes(e: MigrationMeshError): string {
  const missing = [...new Set(e.codes)].filter((c) => !e.message.includes(`[${c}]`));
  return `${e.message}${missing.length ? ` [${missing.join(', ')}]` : ''}`;
}

/** withCodes, then each problem's fix on a line of its own (a file that cannot be read, a ledger or output that cannot be written). */
function withFixes(e: MigrationMeshError): string {
  const fixes = [...new Set(e.problems.flatMap((p) => (p.fix && !e.message.includes(p.fix) ? [p.fix] : [])))];
  return [withCodes(e), ...fixes.map((f) => `  fix: ${f}`)].join('\n');
}

/** What a failed command prints: fleet problems as they are (each with its fix), any other error after `error:`, with its codes and fixes. */
function failureText(e: unknown): string {
  if (e instanceof FleetValidationError || e instanceof FilesFailed) return `${e.message}\n`;
  return `error: ${e instanceof MigrationMeshError ? withFixes(e) : (e as Error).message}\n`;
}

/** `fn()`, its FleetValidationError naming `file` (synth, plan and diff say which file, as validate does). */
function named<T>(file: string, fn: () => T): T {
  try { return fn(); } catch (e) {
    if (e instanceof FleetValidationError && !e.message.startsWith(`${file}:`)) throw new FleetValidationError(e.problems, file, e.input);
    throw e;
  }
}

/** The fleet's cluster names (what a context map's keys must be). */
const fleetClusterNames = (file: string): string[] => readFleetFile(file).spec.clusters.map((c) => c.name);

/** `main`, and `status`, which asks the clusters and so cannot answer synchronously. The binary runs this. */
export async function mainAsync(argv: string[], out: Sink = (s) => process.stdout.write(s), err: Sink = (s) => process.stderr.write(s)): Promise<number> {
  let line;
  try { line = parseCommandLine(argv); } catch { return main(argv, out, err); }
  if (line.kind === 'run' && line.args.cmd === 'pin-addresses') return pinAddressesCommand(line.args, out, err);
  if (line.kind === 'run' && line.args.cmd === 'inventory') return inventoryCommand(line.args, out, err);
  if (line.kind === 'run' && (line.args.cmd === 'watch-moves' || line.args.cmd === 'cleanup-move')) return (await import('./move-commands')).moveCommand(line.args, out, err);
  if (line.kind !== 'run' || line.args.cmd !== 'status') return main(argv, out, err);
  const args = line.args;
  try {
    // loaded only here: @kubernetes/client-node is an ES module, which the other commands never need
    const { fleetStatus, loadContextMap } = await import('./status');
    const s = await fleetStatus({
      fleetFile: args.files[0],
      outDir: String(args.flags.get('out') ?? process.env.CDK8S_OUTDIR ?? 'dist'),
      contexts: args.flags.has('context-map') ? loadContextMap(String(args.flags.get('context-map')), fleetClusterNames(args.files[0])) : undefined,
      kubeconfig: args.flags.has('kubeconfig') ? String(args.flags.get('kubeconfig')) : undefined,
      timeoutMs: args.flags.has('timeout') ? Number(args.flags.get('timeout')) * 1000 : undefined,
      moves: args.flags.has('moves'),
    });
    out(args.flags.get('output') === 'json' ? `${JSON.stringify(s, null, 2)}\n` : renderStatus(s));
    return s.ready ? 0 : 1;
  } catch (e) {
    err(failureText(e));
    return 1;
  }
}

/** `inventory`: reads the clusters, like status (docs/migrations.md). */
async function inventoryCommand(args: Args, out: Sink, err: Sink): Promise<number> {
  try {
    const { readInventory, renderInventory } = await import('./inventory');
    const { loadContextMap } = await import('./status');
    const r = await readInventory({
      fleetFile: args.files[0],
      cluster: args.flags.has('cluster') ? String(args.flags.get('cluster')) : undefined,
      contexts: args.flags.has('context-map') ? loadContextMap(String(args.flags.get('context-map')), fleetClusterNames(args.files[0])) : undefined,
      kubeconfig: args.flags.has('kubeconfig') ? String(args.flags.get('kubeconfig')) : undefined,
      out: args.flags.has('out') ? String(args.flags.get('out')) : undefined,
      timeoutMs: args.flags.has('timeout') ? Number(args.flags.get('timeout')) * 1000 : undefined,
    });
    out(r.written ? renderInventory(r) : r.text);
    return 0;
  } catch (e) {
    err(failureText(e));
    return 1;
  }
}

/** `pin-addresses`: asks the clusters, like status (docs/vm-networks.md). */
async function pinAddressesCommand(args: Args, out: Sink, err: Sink): Promise<number> {
  try {
    const { pinAddresses, renderPin } = await import('./pin-addresses');
    const { loadContextMap } = await import('./status');
    const r = await pinAddresses({
      fleetFile: args.files[0],
      ledgerFile: args.flags.has('ledger') ? String(args.flags.get('ledger')) : undefined,
      contexts: args.flags.has('context-map') ? loadContextMap(String(args.flags.get('context-map')), fleetClusterNames(args.files[0])) : undefined,
      kubeconfig: args.flags.has('kubeconfig') ? String(args.flags.get('kubeconfig')) : undefined,
      move: args.flags.has('move') ? String(args.flags.get('move')) : undefined,
      apply: args.flags.has('apply'), after: args.flags.has('after'),
      timeoutMs: args.flags.has('timeout') ? Number(args.flags.get('timeout')) * 1000 : undefined,
    });
    out(args.flags.get('output') === 'json' ? `${JSON.stringify(r, null, 2)}\n` : renderPin(r));
    return r.ok ? 0 : 1;
  } catch (e) {
    err(failureText(e));
    return 1;
  }
}

function need(files: string[]): string[] {
  if (files.length === 0) throw new Error(`no fleet file given\n${USAGE}`);
  return files;
}

/**
 * `validate` is synth without writing: each file goes through the very synthesis synth runs (the
 * ledger beside it or --ledger, --renamed-from, --frozen, the moves file, Forklift), in memory, so it
 * refuses exactly what synth refuses, with the same problems.
 */
function validate(args: Args, out: Sink, err: Sink): number {
  const format = String(args.flags.get('output') ?? 'text');
  if (format === 'json') return validateJson(args, out);
  if (format !== 'text') throw new Error(`--output must be text or json, got '${format}'`);
  const checked = checkFiles(args);
  for (const c of checked) {
    if (!c.result) { err(`${new FleetValidationError(c.problems, c.file, c.input).message}\n`); continue; }
    const modes = datapathsOf(c.result);
    out(`${c.file}: valid${modes.length > 1 ? ` (note: ${modes.length} datapath modes, ${modes.join(' / ')}: clusters in different modes cannot live-migrate to each other; \`plan\` lists the groups)` : ''}\n`);
    for (const w of warningsOf(c.result)) out(`  warning: ${formatProblem(w)}\n`);
  }
  return checked.every((c) => c.result) ? 0 : 1;
}

interface CheckedFile { readonly file: string; readonly result?: SynthResult; readonly problems: readonly FleetProblem[]; readonly input?: string }

/** Every file synthesized in memory with synth's inputs; a file's problems instead of its result when synth would refuse it. */
function checkFiles(args: Args): CheckedFile[] {
  const checked = need(args.files).map((file): CheckedFile & { name?: string } => {
    try {
      const doc = readFleetFile(file);
      const opts = { ledger: ledgerFor(args, file), frozen: args.flags.get('frozen') === true, renamedFrom: renamedFrom(args), moves: movesFor(file, doc) };
      return { file, name: doc.metadata.name, result: synthesizeFleet(doc, { ...opts, render: false }), problems: [] };
    } catch (e) {
      if (!(e instanceof MigrationMeshError)) throw e;
      return { file, problems: e.problems, input: e instanceof FleetValidationError ? e.input : undefined };
    }
  });
  // synth refuses two fleets of one name (their output directories would collide)
  return checked.map((c) => {
    const first = checked.find((o) => o.result && o.name === c.name);
    if (!c.result || first === c) return c;
    const message = `another fleet file (${first!.file}) is also named '${c.name}'; output directories would collide`;
    return { file: c.file, problems: [{ code: 'duplicate-fleet-name', path: 'metadata.name', message, fix: 'give every fleet a unique metadata.name' }] };
  });
}

/**
 * What is told but not refused: a product version newer than the capability table knows, a gateway image named by
 * tag only, the VM networks' warnings, then the Forklift checks' warnings.
 */
function warningsOf(r: Pick<SynthResult, 'plan' | 'forklift'>): FleetProblem[] {
  return [...productVersionWarnings(r.plan), ...(r.plan.gateway.warnings ?? []), ...(r.plan.vmNetworks?.warnings ?? []), ...r.forklift.warnings];
}

function datapathsOf(r: SynthResult): string[] {
  return [...new Set(r.plan.clusters.map((c) => c.datapath))];
}

/** Every file checked, problems as data with their codes (filter with e.g. `jq '.[].problems[] | select(.code == "pool-too-small")'`). */
function validateJson(args: Args, out: Sink): number {
  const results = checkFiles(args).map(({ file, result, problems }) => {
    if (!result) return { file, valid: false, problems: problems.map(problemJson) };
    const warnings = warningsOf(result).map(problemJson);
    return { file, valid: true, datapaths: datapathsOf(result), problems: [] as FleetProblem[], ...(warnings.length ? { warnings } : {}) };
  });
  out(`${JSON.stringify(results, null, 2)}\n`);
  return results.every((r) => r.valid) ? 0 : 1;
}

function synth(args: Args, out: (s: string) => void): number {
  const outRoot = String(args.flags.get('out') ?? process.env.CDK8S_OUTDIR ?? 'dist');
  const frozen = args.flags.get('frozen') === true;
  // every file checked, each problem under its own file: one bad file does not hide the others'
  const failed: string[] = [];
  const pending = need(args.files).flatMap((f) => {
    try { return [synthOne(f)]; } catch (e) {
      if (!(e instanceof MigrationMeshError)) throw e;
      failed.push(inFile(e, f));
      return [];
    }
  });
  if (failed.length) throw new FilesFailed(failed);
  function synthOne(f: string) {
    const doc = readFleetFile(f);
    const ledgerFile = typeof args.flags.get('ledger') === 'string' ? String(args.flags.get('ledger')) : ledgerPathFor(f);
    const progress = createProgress(`synth ${doc.metadata.name}`);
    try {
      return { f, progress, r: renderFleetDirectory({
        fleet: doc, ledgerFile, outdir: outRoot, frozen, renamedFrom: renamedFrom(args), moves: movesFor(f, doc),
        svg: args.flags.get('no-svg') !== true, onCluster: (d: number, t: number) => progress.update(d, t),
      }) };
    } catch (e) {
      progress.done();
      throw e;
    }
  }
  // every fleet validated and synthesized in memory before anything is written
  const names = new Map<string, string>();
  for (const { r, f } of pending) {
    const first = names.get(r.plan.fleet);
    if (first !== undefined) {
      const message = `another fleet file (${first}) is also named '${r.plan.fleet}'; output directories would collide`;
      throw new FleetValidationError([{ code: 'duplicate-fleet-name', path: 'metadata.name', message, fix: 'give every fleet a unique metadata.name' }], f);
    }
    names.set(r.plan.fleet, f);
  }
  // every tree and ledger in one transaction: all written, or none
  // (each cluster is built, rendered and written during the write, one at a time: the progress shows there)
  let written;
  try { written = writeFleetDirectories(pending.map((p) => p.r), undefined, { onNotice: (n) => out(`cleaned up: ${n}\n`) }); } finally { for (const p of pending) p.progress.done(); }
  pending.forEach(({ f }, i) => {
    const r = written[i];
    const ledgerFile = r.ledgerFile!;
    out(`${f}: ${r.plan.clusters.length} clusters, ${r.fileCount} files -> ${r.dir}/\n`);
    const foreign = r.report.foreign;
    if (foreign.length) out(`  ${foreign.length} file${foreign.length === 1 ? '' : 's'} in ${r.dir}/ not generated by synth, left alone: ${foreign.slice(0, 5).join(', ')}${foreign.length > 5 ? ', ...' : ''}\n`);
    if (r.report.removed.length) out(`  removed ${r.report.removed.length} file${r.report.removed.length === 1 ? '' : 's'} synth no longer generates\n`);
    for (const w of warningsOf(r)) out(`  warning: ${formatProblem(w)}\n`);
    const old = renamedFrom(args);
    if (old !== undefined && old !== r.plan.fleet && fs.existsSync(path.join(outRoot, old))) {
      out(`  note: ${path.join(outRoot, old)}/ (fleet '${old}' before the rename) is left in place, with its GitOps objects: remove it (\`git rm -r ${path.join(outRoot, old)}\`) once ${path.join(outRoot, r.plan.fleet)}/ is applied, or both fleets' objects stay applied\n`);
    }
    const q = r.ledger.released?.length ?? 0;
    if (q) out(`  ${q} released address${q === 1 ? '' : 'es'} quarantined in ${ledgerFile} (given to no one): \`migration-mesh reclaim ${f} --all\` once the old holders are gone\n`);
    if (r.changes.length) out(`  ledger ${ledgerFile}: ${r.changes.length} change${r.changes.length === 1 ? '' : 's'}\n${r.changes.slice(0, 20).map((c) => `    ${formatLedgerChange(c)}\n`).join('')}${r.changes.length > 20 ? `    ... ${r.changes.length - 20} more\n` : ''}`);
  });
  return 0;
}

const harvesterClusters = (doc: FleetDocument): string[] => doc.spec.clusters.filter((c) => c.harvester).map((c) => c.name);

/** The moves file beside a fleet file (`<fleet>.moves.yaml`), if any. */
function movesFor(fleetFile: string, doc: FleetDocument): ReturnType<typeof loadMovesFile> {
  return loadMovesFile(movesPathFor(fleetFile), doc.metadata.name);
}

/** The ledger file of a fleet file: --ledger, else the one beside it. */
function ledgerPath(args: Args, fleetFile: string): string {
  const flag = args.flags.get('ledger');
  return typeof flag === 'string' ? flag : ledgerPathFor(fleetFile);
}

function ledgerFor(args: Args, fleetFile: string): Ledger | undefined {
  return loadLedgerFile(ledgerPath(args, fleetFile));
}

/** `plan`; with `--output json` a failure is JSON on stdout too (exit 1). */
function plan(args: Args, out: Sink, err: Sink): number {
  try { return planOne(args, out, err); } catch (e) {
    if (args.flags.get('output') !== 'json') throw e;
    out(failureJson(e, args.files.length === 1 ? args.files[0] : undefined));
    return 1;
  }
}

/** `plan`: synth's own checks and plan (in memory), so it refuses exactly what synth refuses. */
function planOne(args: Args, out: Sink, err: Sink): number {
  const files = need(args.files);
  if (files.length !== 1) throw new Error(`plan takes one fleet file, got ${files.length}`);
  const f = files[0];
  const doc = readFleetFile(f);
  const moves = movesFor(f, doc);
  const r = named(f, () => synthesizeFleet(doc, { ledger: ledgerFor(args, f), renamedFrom: renamedFrom(args), moves }));
  const report = planReport(r.plan, { harvester: harvesterClusters(doc) });
  const svg = args.flags.get('svg');
  // through the writer: temp file and rename, and a path error ends at once (no recursive mkdir loop)
  if (typeof svg === 'string') {
    const refused = svgTargetProblem(svg, [[f, 'the fleet file'], [ledgerPath(args, f), 'the fleet\'s ledger'], [movesPathFor(f), 'the fleet\'s moves file']]);
    if (refused) throw new OutputWriteError([refused]);
    writeOutputs([], [{ file: svg, content: renderFleetSvg(report) }], undefined, { onNotice: (n) => err(`cleaned up: ${n}\n`) });
  }
  const format = String(args.flags.get('output') ?? 'table');
  const fk = doc.spec.forklift || moves ? r.forklift : undefined;
  const mr = fk?.plan ? movesReport(fk.plan, fk.warnings) : undefined;
  const prerequisites = nodePrerequisites(r.plan);
  const json = { ...report, nodePrerequisites: prerequisites, ...(mr ? { forklift: mr } : {}) };
  if (format === 'json') out(`${JSON.stringify(json, null, 2)}\n`);
  else if (format === 'table') out(renderPlanTable(report) + renderSiteRequirements(report.sites ?? []) + renderNodePrerequisites(prerequisites) + (mr ? renderMoves(mr) : ''));
  else throw new Error(`--output must be table or json, got '${format}'`);
  return 0;
}

/** Every file under dir, relative, '/'-separated. */
export function readTree(dir: string): Map<string, string> {
  const files = new Map<string, string>();
  if (!fs.existsSync(dir)) return files;
  const walk = (d: string, rel: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true }).sort((a, b) => (a.name < b.name ? -1 : 1))) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (e.isDirectory()) walk(path.join(d, e.name), r);
      else if (e.isFile()) files.set(r, fs.readFileSync(path.join(d, e.name), 'utf8'));
    }
  };
  walk(dir, '');
  return files;
}

function diff(args: Args, out: (s: string) => void, err: (s: string) => void): number {
  const format = String(args.flags.get('output') ?? 'text');
  const files = args.files;
  // the file the step in progress belongs to (a failure names it); diffFleets names its side itself
  let current = files.length === 1 ? files[0] : undefined;
  try {
    need(files);
    if (format !== 'text' && format !== 'json') throw new Error(`--output must be text or json, got '${format}'`);
    let d: FleetDiff;
    const notes: FleetProblem[] = [];
    if (files.length === 2) {
      current = files[0];
      const before = readFleetFile(files[0]);
      const oldMoves = movesFor(files[0], before);
      const ledger = ledgerFor(args, files[0]);
      current = files[1];
      const after = readFleetFile(files[1]);
      const moves = [oldMoves, movesFor(files[1], after)] as const;
      current = undefined;
      const missing = oldInputsMissing(args, files[0], files[1]);
      notes.push(...missing.notes);
      d = diffFleets(before, after, { ledger, renamedFrom: renamedFrom(args), moves, sources: [files[0], files[1]], unknown: missing.unknown });
    } else if (files.length === 1) {
      const doc = readFleetFile(files[0]);
      const ledger = ledgerFor(args, files[0]);
      const outRoot = String(args.flags.get('out') ?? process.env.CDK8S_OUTDIR ?? 'dist');
      const dir = path.join(outRoot, doc.metadata.name);
      const progress = createProgress(`synth ${doc.metadata.name}`);
      let r;
      const opts = { ledger, renamedFrom: renamedFrom(args), moves: movesFor(files[0], doc), onCluster: (x: number, t: number) => progress.update(x, t) };
      try { r = named(files[0], () => synthesizeFleet(doc, opts)); } finally { progress.done(); }
      d = diffTrees({ files: readTree(dir), ledger }, { files: r.files, ledger: r.ledger });
    } else {
      throw new Error(`diff takes OLD NEW or one fleet file, got ${files.length} files`);
    }
    if (format === 'json') {
      const { clusters, summary, changed, counts, moves, unknown } = d;
      out(`${JSON.stringify({ changed, summary, counts, clusters, moves, ...(unknown ? { unknown } : {}), ...(notes.length ? { notes: notes.map(problemJson) } : {}) }, null, 2)}\n`);
    } else {
      for (const n of notes) err(`warning: ${formatProblem(n)}\n`);
      out(renderDiff(d));
    }
    return d.changed ? 1 : 0;
  } catch (e) {
    if (format === 'json') out(failureJson(e, current));
    else if (e instanceof FleetValidationError) err(`${e.message}\n`);
    else err(`error: ${e instanceof MigrationMeshError ? (current ? inFile(e, current) : withFixes(e)) : (e as Error).message}\n`);
    return 2;
  }
}

/**
 * Two-file diff reads OLD's ledger and moves file the way synth does (beside OLD, or --ledger). Where
 * they are missing but NEW has its own (OLD taken out of Git on its own), what they decide cannot be
 * known (issue #39): a warning with the fix, and the diff claims nothing about it (`unknown`): OLD is
 * planned from scratch and its address moves are not compared; OLD takes NEW's moves and no move or
 * run is called new.
 */
function oldInputsMissing(args: Args, oldFile: string, newFile: string): { notes: FleetProblem[]; unknown: NotCompared } {
  const notes: FleetProblem[] = [];
  const unknown: { moves?: string; addresses?: string } = {};
  const oldLedger = ledgerPath(args, oldFile);
  if (!fs.existsSync(oldLedger) && fs.existsSync(ledgerPathFor(newFile))) {
    unknown.addresses = `OLD has no ledger (${oldLedger} does not exist)`;
    notes.push({ code: 'diff/old-ledger-missing', path: oldLedger, message: `OLD has no ledger (${oldLedger} does not exist; NEW's is ${ledgerPathFor(newFile)}): OLD is planned from scratch, so addresses it already holds may show as moving; address moves are not compared`,
      fix: `put OLD's committed ledger there (e.g. git show REV:${ledgerPathFor(newFile)} > ${oldLedger}), or give --ledger FILE` });
  }
  const oldMoves = movesPathFor(oldFile);
  if (!fs.existsSync(oldMoves) && fs.existsSync(movesPathFor(newFile))) {
    unknown.moves = `OLD has no moves file (${oldMoves} does not exist)`;
    notes.push({ code: 'diff/old-moves-missing', path: oldMoves, message: `OLD has no moves file (${oldMoves} does not exist; NEW's is ${movesPathFor(newFile)}): OLD is synthesized with NEW's moves, and moves and runs are not compared`,
      fix: `put OLD's moves file there (e.g. git show REV:${movesPathFor(newFile)} > ${oldMoves})` });
  }
  return { notes, unknown };
}

function renamedFrom(args: Args): string | undefined {
  const v = args.flags.get('renamed-from');
  if (v === true) throw new Error('--renamed-from needs the fleet\'s previous name');
  return v;
}

// last: every const above (renamedFrom, ...) is initialized before a command runs
if (require.main === module) {
  void mainAsync(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
    // status: a cluster that never answered still holds a socket open; the report is written (stdout and
    // stderr are synchronous on pipes and files), so do not wait for it
    if (['status', 'pin-addresses', 'inventory', 'watch-moves', 'cleanup-move'].includes(process.argv[2])) process.exit(code);
  });
}
