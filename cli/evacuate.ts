/**
 * `migration-mesh evacuate FLEET.yaml --cluster NAME --inventory FILE`: plan a cluster's drain across the fleet
 * (src/forklift/evacuate.ts) and write it as a moves file, one batch per wave, for review in Git. Nothing is
 * written when a VM cannot be placed, or when the moves file exists already (a moves file is a reviewed plan:
 * it is never overwritten; `--out` names another). `--out -` prints the moves document instead.
 */
import * as fs from 'fs';
import * as yaml from 'yaml';
import { FleetValidationError, MigrationMeshError } from '../src/base/errors';
import { readFleetFile } from '../src/fleet/load';
import { loadInventoryFile } from '../src/forklift/inventory';
import { EvacuationPlan, evacuationMoves, planEvacuation, waveBatch } from '../src/forklift/evacuate';
import { movesPathFor } from '../src/forklift/moves';
import { writeOutputs } from './write-tree';
import { Args } from './args';

const gib = (b: number): string => `${(b / 2 ** 30).toFixed(1)} GiB`;

/** The wave limits the gateways' budgets set per target: one number when every target has the same, else each target's. */
function budgetText(plan: EvacuationPlan): string {
  const per = Object.entries(plan.limits.perPeer ?? {});
  if (per.length === 0) return '';
  const counts = new Set(per.map(([, n]) => n));
  if (counts.size === 1 && per.length === plan.targets.length) return `, ${per[0][1]} into each target within the gateways' bandwidth budget`;
  return `; within the gateways' bandwidth budgets at most ${per.map(([t, n]) => `${n} into ${t}`).join(', ')}`;
}

/** The plan in words: limits, then each wave's moves, then each target's free memory before and after. */
function renderEvacuation(plan: EvacuationPlan): string {
  const waves = [...new Set(plan.placements.map((p) => p.wave))].sort((a, b) => a - b);
  const lines = [`evacuate ${plan.source}: ${plan.placements.length} VMs in ${waves.length} waves (at most ${plan.limits.perCluster} at once per cluster, ${plan.limits.perNode} per source node${budgetText(plan)})`];
  for (const w of waves) {
    const ps = plan.placements.filter((p) => p.wave === w);
    lines.push(`  ${waveBatch(plan.source, w)}: ${ps.map((p) => `${p.vm.namespace}/${p.vm.name} (${p.vm.memory}) ${p.vm.node} -> ${p.to}/${p.node}`).join(', ')}`);
  }
  for (const t of plan.targets) lines.push(`  ${t.name}: free memory ${gib(t.freeBefore)} -> ${gib(t.freeAfter)}`);
  return `${lines.join('\n')}\n`;
}

/** The moves document, with the plan's summary as its header comment. */
export function evacuationDocument(fleet: string, plan: EvacuationPlan): string {
  const doc = new yaml.Document({ apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Moves', metadata: { name: fleet }, moves: evacuationMoves(plan) });
  doc.commentBefore = ` Written by migration-mesh evacuate (review it, then set start: true on a wave to run it):\n${renderEvacuation(plan).trimEnd().split('\n').map((l) => ` ${l}`).join('\n')}`;
  return doc.toString({ lineWidth: 0 });
}

export function evacuate(args: Args, out: (s: string) => void): number {
  const fleetFile = args.files[0];
  const doc = readFleetFile(fleetFile);
  const inventory = loadInventoryFile(String(args.flags.get('inventory')), doc.metadata.name);
  const plan = planEvacuation(doc, inventory, String(args.flags.get('cluster')));
  if (plan.problems.length) throw new FleetValidationError([...plan.problems], String(args.flags.get('inventory')), 'inventory');
  const target = typeof args.flags.get('out') === 'string' ? String(args.flags.get('out')) : movesPathFor(fleetFile);
  const text = evacuationDocument(doc.metadata.name, plan);
  if (target === '-') { out(text); return 0; }
  if (fs.existsSync(target)) {
    const message = `${target} exists: a moves file is a reviewed plan, and evacuate never overwrites one`;
    const fix = 'run the moves there first (or remove the file), or write this plan elsewhere with --out FILE';
    throw new MigrationMeshError(`${message}\n  fix: ${fix}`, [{ code: 'forklift/evacuate-cluster', path: '--out', message, fix }]);
  }
  writeOutputs([], [{ file: target, content: text }], undefined, { onNotice: (n) => out(`cleaned up: ${n}\n`) }); // atomic, locked
  out(`${renderEvacuation(plan)}wrote ${target}\n`);
  return 0;
}
