/**
 * What a change does to the moves: the VMs whose Plan appears or goes, and the runs (Migrations) a
 * merge would start. Read from the `_forklift/` files of two synthesized trees. Pure, no cdk8s import.
 */
import * as YAML from 'yaml';
import { FORKLIFT_DIR } from './delivery';

export interface MovesDiff {
  /** `namespace/vm from -> to (plan)` entries newly planned. */
  readonly added: string[];
  readonly removed: string[];
  /** Migrations (runs) that appear: merging starts them. */
  readonly started: string[];
}

interface ForkliftDoc { kind?: string; metadata?: { name?: string }; spec?: { vms?: { name: string; namespace?: string }[]; plan?: { name?: string } } }

function parse(files: ReadonlyMap<string, string>): { moves: Set<string>; runs: Set<string> } {
  const moves = new Set<string>();
  const runs = new Set<string>();
  for (const [p, text] of files) {
    if (!p.startsWith(`${FORKLIFT_DIR}/`) || !/\/(Plan|Migration)\.[^/]*\.yaml$/.test(p)) continue;
    let d: ForkliftDoc;
    try { d = YAML.parse(text) as ForkliftDoc; } catch { continue; }
    const labels = (d.metadata as { labels?: Record<string, string> } | undefined)?.labels ?? {};
    if (d.kind === 'Plan') {
      const route = `${labels['migrationmesh.dev/from'] ?? '?'} -> ${labels['migrationmesh.dev/to'] ?? '?'}`;
      for (const vm of d.spec?.vms ?? []) moves.add(`${vm.namespace}/${vm.name} ${route} (${d.metadata?.name})`);
    } else if (d.kind === 'Migration') {runs.add(`${d.metadata?.name} (plan ${d.spec?.plan?.name})`);}
  }
  return { moves, runs };
}

export function diffMoves(before: ReadonlyMap<string, string>, after: ReadonlyMap<string, string>): MovesDiff {
  const a = parse(before);
  const b = parse(after);
  const minus = (x: Set<string>, y: Set<string>): string[] => [...x].filter((k) => !y.has(k)).sort();
  return { added: minus(b.moves, a.moves), removed: minus(a.moves, b.moves), started: minus(b.runs, a.runs) };
}

/** Lines for the text diff; empty when the moves do not change. */
export function renderMovesDiff(d: MovesDiff): string[] {
  return [
    ...d.added.map((m) => `  move planned: ${m}`),
    ...d.removed.map((m) => `  move dropped: ${m}`),
    ...d.started.map((r) => `  run starts on merge: ${r}`),
  ];
}
