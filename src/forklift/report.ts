/**
 * The moves as the operator reads them in `plan`: one row per VM (batch, from, to, target namespace,
 * Plan, whether a Migration starts it), the maps per pair, and the warnings. Pure, no cdk8s import.
 */
import { FleetProblem, formatProblem } from '../base/errors';
import { renderTable } from '../report/plan-report';
import { ForkliftHubPlan } from './model';

interface MoveRow {
  readonly vm: string;
  readonly namespace: string;
  readonly batch: string;
  readonly from: string;
  readonly to: string;
  readonly targetNamespace: string;
  readonly plan: string;
  /** The Migration that starts the run, when the moves ask for one. */
  readonly migration?: string;
  /** The compression of its migration and the MigrationPolicy (on the target) that sets it, when one is asked for. */
  readonly compression?: { readonly value: 'none' | 'zstd'; readonly policy: string };
}

export interface MovesReport {
  readonly hub: { readonly cluster: string; readonly namespace: string; readonly member: boolean };
  readonly moves: MoveRow[];
  /** Per ordered pair: the map name, mapped networks and storage classes. */
  readonly pairs: { readonly from: string; readonly to: string; readonly maps: string; readonly networks: string[]; readonly storage: string[] }[];
  readonly warnings: FleetProblem[];
}

const net = (x: { type?: string; name?: string; namespace?: string }): string => (x.name ? `${x.namespace}/${x.name}` : String(x.type));

export function movesReport(plan: ForkliftHubPlan, warnings: readonly FleetProblem[] = []): MovesReport {
  return {
    hub: plan.hub,
    moves: plan.plans.flatMap((p) => p.vms.map((vm) => ({
      vm: vm.name, namespace: vm.namespace, batch: p.batch, from: p.from, to: p.to, targetNamespace: p.targetNamespace, plan: p.name,
      ...(p.migration ? { migration: p.migration.name } : {}),
      ...(vm.compression ? { compression: vm.compression } : {}),
    }))),
    pairs: plan.pairs.map((p) => ({
      from: p.from, to: p.to, maps: p.name,
      networks: p.networks.map((n) => `${net(n.source)} -> ${net(n.destination)}`),
      storage: p.storage.map((s) => `${s.source} -> ${s.storageClass}${s.accessMode ? ` ${s.accessMode}` : ''}${s.volumeMode ? ` ${s.volumeMode}` : ''}`),
    })),
    warnings: [...warnings],
  };
}

export function renderMoves(r: MovesReport): string {
  const hub = `${r.hub.cluster} (${r.hub.member ? 'fleet member, host provider' : 'not a fleet member'}), namespace ${r.hub.namespace}`;
  if (!r.moves.length) return `\nmoves: none (Forklift hub ${hub})\n${renderWarnings(r.warnings)}`;
  const started = r.moves.filter((m) => m.migration).length;
  // the COMPRESSION column only where a migration gets compression (issue #29): other fleets' plans read as before
  const compressed = r.moves.some((m) => m.compression);
  const rows = r.moves.map((m) => [m.batch, `${m.namespace}/${m.vm}`, m.from, m.to, m.targetNamespace, m.plan, m.migration ? `starts (${m.migration})` : 'planned only',
    ...(compressed ? [m.compression ? `${m.compression.value} (policy ${m.compression.policy} on ${m.to})` : '-'] : [])]);
  return `\nmoves: ${r.moves.length} VM${r.moves.length === 1 ? '' : 's'}, ${started} started by a Migration; Forklift hub ${hub}\n\n`
    + renderTable(['BATCH', 'VM', 'FROM', 'TO', 'TARGET NS', 'PLAN', 'RUN', ...(compressed ? ['COMPRESSION'] : [])], rows)
    + r.pairs.map((p) => `\nmaps ${p.maps}: networks ${p.networks.join(', ')}; storage ${p.storage.join(', ')}`).join('') + '\n'
    + renderWarnings(r.warnings);
}

function renderWarnings(ws: readonly FleetProblem[]): string {
  return ws.map((w) => `warning: ${formatProblem(w)}\n`).join('');
}
