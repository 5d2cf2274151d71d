/**
 * What a change to the fleet does, before anyone applies it: two synthesized trees (relative path ->
 * content, as synth writes them) and their ledgers in, per cluster the files added / removed /
 * changed, the addresses that move, the peer-table entries gained and lost, and a one-line churn
 * summary out. Pure, no cdk8s import (cli/diff-fleets.ts synthesizes the trees).
 */
import * as YAML from 'yaml';
import { Ledger, LedgerChange, diffLedgers, emptyLedger, formatLedgerChange } from '../addressing/ledger';
import { GITOPS_DIR } from '../delivery/gitops';
import { FORKLIFT_DIR } from '../forklift/delivery';
import { Interval, countIntervals, parsePoolItem, subtractIntervals } from '../base/ip';
import { MovesDiff, diffMoves, renderMovesDiff } from '../forklift/diff';

export interface TreeSnapshot {
  /** Relative path (`<cluster>/<file>`) -> content. Files at the top level (fleet.svg) are ignored. */
  readonly files: ReadonlyMap<string, string>;
  readonly ledger?: Ledger;
  /** Nodes per cluster, when known (to name resizes). */
  readonly nodes?: Readonly<Record<string, number>>;
}

export interface ClusterDiff {
  /** Cluster name (or `_gitops` for the delivery wiring). */
  readonly name: string;
  readonly status: 'added' | 'removed' | 'changed';
  /** Files relative to the cluster directory. */
  readonly added: string[];
  readonly removed: string[];
  readonly changed: string[];
  /** Ledger entries of this cluster that appear, move or are freed. */
  readonly addressChanges: LedgerChange[];
  /** Peers gained / lost / updated in this cluster's gateway peer table. */
  readonly peers: { readonly gained: string[]; readonly lost: string[]; readonly updated: string[] };
  readonly nodes?: { readonly from?: number; readonly to?: number };
}

/**
 * What the diff cannot tell because an input of the `before` side was not there to read (a fleet taken
 * out of Git on its own, issue #39): each field says why. Set, the diff claims nothing about it.
 */
export interface NotCompared {
  /** OLD's moves file is unknown: no move is "planned" or "dropped", no run "starts on merge". */
  readonly moves?: string;
  /** OLD's ledger is unknown: OLD is planned from scratch, so whether existing addresses move is not told. */
  readonly addresses?: string;
}

export interface FleetDiff {
  /** Only clusters with a change, sorted by name. */
  readonly clusters: ClusterDiff[];
  readonly summary: string;
  readonly changed: boolean;
  /** VMs whose moves are planned or dropped, runs a merge starts (`_forklift/`); empty when `unknown.moves`. */
  readonly moves: MovesDiff;
  /** What was not compared, and why. @default - everything was */
  readonly unknown?: NotCompared;
  readonly counts: {
    readonly filesAdded: number; readonly filesRemoved: number; readonly filesChanged: number;
    /** Addresses held before and after at a different place. */
    readonly addressesMoved: number;
    readonly addressesAdded: number;
    readonly addressesFreed: number;
    readonly peerTablesGaining: number;
    readonly peerTablesLosing: number;
    readonly peerTablesUpdated: number;
  };
}

function byCluster(files: ReadonlyMap<string, string>): Map<string, Map<string, string>> {
  const out = new Map<string, Map<string, string>>();
  for (const [p, c] of files) {
    const i = p.indexOf('/');
    if (i < 0) continue; // fleet.svg and other top-level artefacts are not applied
    const dir = p.slice(0, i);
    if (!out.has(dir)) out.set(dir, new Map());
    out.get(dir)!.set(p.slice(i + 1), c);
  }
  return out;
}

/** Peer tables found in a cluster's gateway ConfigMap(s): peer cluster -> canonical entry. */
function peerTables(files: ReadonlyMap<string, string>): Map<string, string> {
  const peers = new Map<string, string>();
  for (const [p, content] of files) {
    if (!/(^|\/)ConfigMap\.[^/]*\.yaml$/.test(p)) continue;
    let doc: { data?: Record<string, unknown> } | undefined;
    try { doc = YAML.parse(content); } catch { continue; }
    for (const v of Object.values(doc?.data ?? {})) {
      if (typeof v !== 'string' || !v.includes('"peers"')) continue;
      try {
        const cfg = JSON.parse(v);
        for (const peer of cfg.peers ?? []) peers.set(peer.cluster, JSON.stringify(peer));
      } catch { /* not the gateway config */ }
    }
  }
  return peers;
}

const sorted = (xs: Iterable<string>): string[] => [...xs].sort();

/**
 * Compare two trees. `changed` is true exactly when a file or a ledger entry differs. `unknown`: what the
 * `before` side's inputs could not tell (summary and moves then claim nothing about it).
 */
export function diffTrees(before: TreeSnapshot, after: TreeSnapshot, unknown: NotCompared = {}): FleetDiff {
  const a = byCluster(before.files);
  const b = byCluster(after.files);
  const ledgerA = before.ledger ?? emptyLedger(after.ledger?.fleet ?? '');
  const ledgerB = after.ledger ?? emptyLedger(before.ledger?.fleet ?? '');
  const ledgerChanges = before.ledger || after.ledger ? diffLedgers(ledgerA, ledgerB) : [];
  const names = sorted(new Set([...a.keys(), ...b.keys(), ...ledgerChanges.map((c) => c.cluster)]));
  const clusters: ClusterDiff[] = [];
  for (const name of names) {
    const fa = a.get(name) ?? new Map<string, string>();
    const fb = b.get(name) ?? new Map<string, string>();
    const added = sorted([...fb.keys()].filter((f) => !fa.has(f)));
    const removed = sorted([...fa.keys()].filter((f) => !fb.has(f)));
    const changed = sorted([...fb.keys()].filter((f) => fa.has(f) && fa.get(f) !== fb.get(f)));
    const addressChanges = ledgerChanges.filter((c) => c.cluster === name);
    const pa = peerTables(fa);
    const pb = peerTables(fb);
    const peers = {
      gained: sorted([...pb.keys()].filter((k) => !pa.has(k))),
      lost: sorted([...pa.keys()].filter((k) => !pb.has(k))),
      updated: sorted([...pb.keys()].filter((k) => pa.has(k) && pa.get(k) !== pb.get(k))),
    };
    const nf = before.nodes?.[name];
    const nt = after.nodes?.[name];
    if (!added.length && !removed.length && !changed.length && !addressChanges.length) continue;
    clusters.push({
      name,
      status: !a.has(name) && b.has(name) ? 'added' : a.has(name) && !b.has(name) ? 'removed' : 'changed',
      added, removed, changed, addressChanges, peers,
      ...(nf !== nt && (nf !== undefined || nt !== undefined) ? { nodes: { from: nf, to: nt } } : {}),
    });
  }
  const existing = (c: ClusterDiff): boolean => c.status === 'changed';
  // every move the list shows, whatever the cluster's file status (a tree written elsewhere shows as added)
  const moved = ledgerChanges.filter((c) => c.from !== undefined && c.to !== undefined);
  const counts = {
    filesAdded: clusters.reduce((n, c) => n + c.added.length, 0),
    filesRemoved: clusters.reduce((n, c) => n + c.removed.length, 0),
    filesChanged: clusters.reduce((n, c) => n + c.changed.length, 0),
    addressesMoved: moved.reduce((n, c) => n + movedCount(c), 0),
    addressesAdded: ledgerChanges.filter((c) => c.from === undefined).length,
    addressesFreed: ledgerChanges.filter((c) => c.to === undefined).length,
    peerTablesGaining: clusters.filter((c) => existing(c) && c.peers.gained.length > 0).length,
    peerTablesLosing: clusters.filter((c) => existing(c) && c.peers.lost.length > 0).length,
    peerTablesUpdated: clusters.filter((c) => existing(c) && c.peers.updated.length > 0).length,
  };
  const moves = unknown.moves ? { added: [], removed: [], started: [] } : diffMoves(before.files, after.files);
  const movesNote = unknown.moves ? '; moves: not compared' : moves.added.length || moves.removed.length || moves.started.length
    ? `; moves: ${moves.added.length} planned, ${moves.removed.length} dropped, ${plural(moves.started.length, 'run')} ${moves.started.length === 1 ? 'starts' : 'start'} on merge` : '';
  const notCompared = unknown.moves || unknown.addresses ? { unknown: { ...unknown } } : {};
  const summary = clusters.length ? summarize(clusters, counts, !!unknown.addresses) + movesNote : 'no change';
  return { clusters, summary, changed: clusters.length > 0, moves, counts, ...notCompared };
}

/** What was not compared, one line each, for the text diff. */
function notComparedLines(u: NotCompared | undefined): string[] {
  return [
    ...(u?.moves ? [`moves and runs not compared: ${u.moves}, so which moves are new and which runs a merge starts cannot be told from these files`] : []),
    ...(u?.addresses ? [`existing addresses not compared: ${u.addresses}, so OLD is planned from scratch and addresses it already holds may show as moving`] : []),
  ];
}

const intervals = (list: string): Interval[] => list.split(',').map((x) => parsePoolItem(x.trim())).flatMap((r) => (r.ok ? [r.interval] : []));

/** Addresses a surviving member held before and holds no longer (a grown or shrunk slice moves nothing it keeps). */
function movedCount(c: LedgerChange): number {
  if (c.field !== 'crossClusterAddresses') return 1;
  const gone = countIntervals(subtractIntervals(intervals(c.from!), intervals(c.to!)));
  const fresh = countIntervals(subtractIntervals(intervals(c.to!), intervals(c.from!)));
  // a shrink frees addresses, it does not move them; a slice that left its place moves them all
  return Number(fresh > 0n ? gone : 0n);
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

function summarize(clusters: ClusterDiff[], k: FleetDiff['counts'], addressesUnknown: boolean): string {
  const real = clusters.filter((c) => !c.name.startsWith('_')); // _gitops, _forklift: not clusters
  const actions: string[] = [];
  const addedC = real.filter((c) => c.status === 'added').map((c) => c.name);
  const removedC = real.filter((c) => c.status === 'removed').map((c) => c.name);
  const resized = real.filter((c) => c.status === 'changed' && c.nodes && c.nodes.from !== undefined && c.nodes.to !== undefined);
  if (addedC.length) actions.push(`adding cluster${addedC.length > 1 ? 's' : ''} ${addedC.join(', ')}`);
  if (removedC.length) actions.push(`removing cluster${removedC.length > 1 ? 's' : ''} ${removedC.join(', ')}`);
  for (const c of resized) actions.push(`resizing ${c.name} (${c.nodes!.from} -> ${c.nodes!.to} nodes)`);
  const extras = [clusters.some((c) => c.name === GITOPS_DIR) ? 'the GitOps wiring' : '', clusters.some((c) => c.name === FORKLIFT_DIR) ? 'the Forklift hub' : ''].filter(Boolean);
  if (!actions.length) actions.push(`changing ${[...(real.length || !extras.length ? [plural(real.length, 'cluster')] : []), ...extras].join(' and ')}`);
  const gainSizes = new Set(real.filter((c) => c.status === 'changed' && c.peers.gained.length).map((c) => c.peers.gained.length));
  const loseSizes = new Set(real.filter((c) => c.status === 'changed' && c.peers.lost.length).map((c) => c.peers.lost.length));
  const entries = (sizes: Set<number>): string => (sizes.size === 1 ? (sizes.has(1) ? 'one entry' : `${[...sizes][0]} entries`) : 'entries');
  const parts = [addressesUnknown ? 'existing addresses not compared' : `${plural(k.addressesMoved, 'existing address', 'existing addresses')} ${k.addressesMoved === 1 ? 'moves' : 'move'}`];
  if (k.peerTablesGaining) parts.push(`${plural(k.peerTablesGaining, 'peer table')} gain ${entries(gainSizes)}`);
  if (k.peerTablesLosing) parts.push(`${plural(k.peerTablesLosing, 'peer table')} lose ${entries(loseSizes)}`);
  if (k.peerTablesUpdated) parts.push(`${plural(k.peerTablesUpdated, 'peer table')} update an entry`);
  parts.push(`${k.filesAdded} files added, ${k.filesRemoved} removed, ${k.filesChanged} changed`);
  return `${actions.join(', ')}: ${parts.join(', ')}`;
}

/** Human-readable diff: per cluster its files and addresses, then the summary line. */
export function renderDiff(d: FleetDiff): string {
  if (!d.changed) return `${['no change', ...notComparedLines(d.unknown)].join('\n')}\n`;
  const lines: string[] = [];
  for (const c of d.clusters) {
    lines.push(`${c.name} (${c.status}${c.nodes && c.nodes.from !== undefined && c.nodes.to !== undefined ? `, ${c.nodes.from} -> ${c.nodes.to} nodes` : ''})`);
    for (const f of c.added) lines.push(`  + ${f}`);
    for (const f of c.removed) lines.push(`  - ${f}`);
    for (const f of c.changed) lines.push(`  ~ ${f}`);
    for (const a of c.addressChanges) lines.push(`  address ${formatLedgerChange(a)}`);
    if (c.status === 'changed') {
      if (c.peers.gained.length) lines.push(`  peer table gains ${c.peers.gained.join(', ')}`);
      if (c.peers.lost.length) lines.push(`  peer table loses ${c.peers.lost.join(', ')}`);
      if (c.peers.updated.length) lines.push(`  peer table updates ${c.peers.updated.join(', ')}`);
    }
    if (c.name === FORKLIFT_DIR) lines.push(...renderMovesDiff(d.moves));
  }
  lines.push('', ...notComparedLines(d.unknown), d.summary);
  return lines.join('\n') + '\n';
}
