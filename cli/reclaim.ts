/**
 * `migration-mesh reclaim`: lift the quarantine of released addresses in a fleet's ledger, written
 * atomically under the writer's lock. Refusals carry `reclaim/no-ledger` or `reclaim/no-match`.
 */
import { MigrationMeshError } from '../src/base/errors';
import { reclaimReleased, serializeLedger } from '../src/addressing/ledger';
import { ledgerPathFor, loadLedgerFile } from '../src/fleet/load';
import { writeOutputs } from './write-tree';
import { Args, usageOf } from './args';

/** `reclaim`: lift the quarantine of released addresses in the ledger beside the fleet file. */
export function reclaim(args: Args, out: (s: string) => void): number {
  const files = args.files;
  if (files.length === 0) throw new Error(`no fleet file given\n${usageOf()}`);
  if (files.length !== 1) throw new Error(`reclaim takes one fleet file, got ${files.length}`);
  const flag = args.flags.get('ledger');
  const ledgerFile = typeof flag === 'string' ? flag : ledgerPathFor(files[0]);
  const ledger = loadLedgerFile(ledgerFile);
  const refuse = (code: 'reclaim/no-ledger' | 'reclaim/no-match', message: string, fix: string): never => {
    throw new MigrationMeshError(`${ledgerFile}: ${message}\n  fix: ${fix}`, [{ code, path: ledgerFile, message, fix }]);
  };
  if (!ledger) return refuse('reclaim/no-ledger', 'no ledger to reclaim addresses in', `run synth once to write it, or point --ledger at the fleet's ledger`);
  const str = (k: string) => (typeof args.flags.get(k) === 'string' ? [String(args.flags.get(k))] : []);
  const sel = { all: args.flags.get('all') === true, clusters: str('cluster'), addresses: str('address') };
  if (!sel.all && !sel.clusters.length && !sel.addresses.length) throw new Error(`reclaim needs --cluster NAME, --address ADDR or --all\n${usageOf()}`);
  const { ledger: next, reclaimed } = reclaimReleased(ledger, sel);
  const quarantined = ledger.released ?? [];
  // --all with an empty quarantine is done already: nothing to do is not a failure
  if (sel.all && !quarantined.length) { out(`${ledgerFile}: nothing is quarantined; nothing to reclaim\n`); return 0; }
  if (!reclaimed.length) {
    return refuse('reclaim/no-match', `nothing quarantined matches ${[...sel.clusters.map((c) => `--cluster ${c}`), ...sel.addresses.map((a) => `--address ${a}`)].join(' ')} (${quarantined.length} quarantined${quarantined.length ? `: ${[...new Set(quarantined.map((r) => `${r.cluster} ${r.address}`))].slice(0, 6).join(', ')}` : ''})`,
      'name a cluster or an address as the ledger\'s released list writes it (`migration-mesh plan` shows them), or use --all');
  }
  writeOutputs([], [{ file: ledgerFile, content: serializeLedger(next) }], undefined, { onNotice: (n) => out(`cleaned up: ${n}\n`) }); // atomic, locked
  out(`${ledgerFile}: ${reclaimed.length} address${reclaimed.length === 1 ? '' : 'es'} reclaimed\n${reclaimed.map((r) => `  ${r.cluster}.${r.field}: ${r.address}\n`).join('')}`);
  return 0;
}
