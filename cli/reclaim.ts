/**
 * `migration-mesh reclaim`: lift the quarantine of released addresses in a fleet's ledger, written
 * atomically under the writer's lock; with `--vm-network NET` (and `--cluster` or `--vm`), release what the
 * ledger keeps for a VM network, a cluster's slot of it or a mobile VM's address once the fleet no longer
 * declares it. Refusals carry `reclaim/no-ledger`, `reclaim/no-match` or `reclaim/still-declared`.
 */
import { MigrationMeshError } from '../src/base/errors';
import { reclaimReleased, serializeLedger } from '../src/addressing/ledger';
import { ledgerPathFor, loadFleetFile, loadLedgerFile } from '../src/fleet/load';
import { releaseVmNetwork } from '../src/vmnet/ledger';
import type { Ledger } from '../src/addressing/ledger';
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
  const refuse = (code: 'reclaim/no-ledger' | 'reclaim/no-match' | 'reclaim/still-declared', message: string, fix: string): never => {
    throw new MigrationMeshError(`${ledgerFile}: ${message}\n  fix: ${fix}`, [{ code, path: ledgerFile, message, fix }]);
  };
  if (!ledger) return refuse('reclaim/no-ledger', 'no ledger to reclaim addresses in', `run synth once to write it, or point --ledger at the fleet's ledger`);
  const str = (k: string) => (typeof args.flags.get(k) === 'string' ? [String(args.flags.get(k))] : []);
  const net = str('vm-network')[0];
  if (net !== undefined) return reclaimVm(ledger, ledgerFile, files[0], { network: net, cluster: str('cluster')[0], vm: str('vm')[0] }, refuse, out);
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

/** `reclaim --vm-network NET [--cluster C | --vm NS/NAME]`: release what the ledger keeps, never what the fleet declares. */
function reclaimVm(ledger: Ledger, ledgerFile: string, fleetFile: string, sel: { network: string; cluster?: string; vm?: string },
  refuse: (code: 'reclaim/no-match' | 'reclaim/still-declared', message: string, fix: string) => never, out: (s: string) => void): number {
  if (sel.cluster !== undefined && sel.vm !== undefined) throw new Error(`reclaim --vm-network takes --cluster or --vm, not both\n${usageOf()}`);
  const doc = loadFleetFile(fleetFile);
  const specs = doc.spec.vmNetworks ?? [];
  const r = releaseVmNetwork(ledger.vmNetworks, sel, {
    networks: new Set(specs.map((s) => s.name)),
    clusters: new Set(doc.spec.clusters.map((c) => c.name)),
    mobileVms: new Map(specs.map((s) => [s.name, new Set(s.mobileVms ?? [])])),
  });
  if ('refused' in r) return refuse(r.refused, r.message, r.fix);
  const next: Ledger = { ...ledger, vmNetworks: Object.keys(r.ledger).length ? r.ledger : undefined };
  writeOutputs([], [{ file: ledgerFile, content: serializeLedger(next) }], undefined, { onNotice: (n) => out(`cleaned up: ${n}\n`) }); // atomic, locked
  out(`${ledgerFile}: released (the next plan may give it to another member)\n${r.released.map((x) => `  ${x}\n`).join('')}`);
  return 0;
}
