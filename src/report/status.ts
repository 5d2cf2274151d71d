/**
 * `migration-mesh status`: the operator's view of a running fleet, judged from facts gathered per
 * cluster (cli/status.ts talks to the clusters; this file is pure): drift of the generated objects
 * against the live ones in the fields we write, the KubeVirt side, the gateways, the trust matrix, and
 * a verdict per ordered pair of clusters.
 */

import { canonicalQuantity } from '../base/quantity';
import { CaCert, ClusterFacts, StatusCode, StatusFinding } from './status-facts';
import { clusterFindings } from './status-findings';
import { MoveCheck, MoveFacts, judgeMoves } from './status-moves';

export interface TrustCell {
  /** B's current CA (first certificate of B's kubevirt-ca) is in A's kubevirt-ca. */
  readonly trusted: boolean;
  readonly peerCa?: CaCert;
}

export interface PairVerdict {
  readonly from: string; readonly to: string; readonly ready: boolean;
  /** The first reason the pair is not ready, and its code. */
  readonly reason?: string; readonly code?: StatusCode;
}

export interface FleetStatus {
  readonly fleet: string;
  readonly clusters: ClusterFacts[];
  /** trust[A][B]: does A trust B's current CA. */
  readonly trust: Record<string, Record<string, TrustCell>>;
  readonly pairs: PairVerdict[];
  /** Every finding, per cluster in the clusters' order, then the trust findings. */
  readonly findings: StatusFinding[];
  /** `--moves`: one check per VM of each generated Forklift Plan. */
  readonly moves?: MoveCheck[];
  /** Every pair ready (and with --moves, every move). */
  readonly ready: boolean;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const isZero = (v: unknown) => v === 0 || v === false || v === '' || (Array.isArray(v) && v.length === 0) || (isObj(v) && Object.keys(v).length === 0);
const sameQuantity = (want: unknown, got: unknown) => typeof want === 'string' && typeof got === 'string' && canonicalQuantity(want, -3) === canonicalQuantity(got, -3);
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const fieldName = (k: string) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`);

/**
 * The first field we own whose live value differs: every key the generated object sets must be in the
 * live one with the same value (objects: recursively; lists: same length, element by element; the API
 * server's defaults and other writers' fields beside ours are not drift). `status` and server-set
 * metadata are ignored; of metadata only labels and annotations count.
 */
export function ownedDifference(want: unknown, got: unknown, at = ''): { field: string; want: unknown; got: unknown } | undefined {
  // the API server holds a zero value we write (0, false, '', [], {}) and omits it from JSON (built-in types are Go
  // structs with omitempty fields; seen on a real kube-apiserver: minReadySeconds: 0, externalIPs: [])
  if (got === undefined && isZero(want)) return undefined;
  if (isObj(want)) {
    if (!isObj(got)) return { field: at || '.', want, got };
    for (const [k, v] of Object.entries(want)) {
      if (at === '' && k === 'status') continue;
      if (at === '.metadata' && !['labels', 'annotations', 'name', 'namespace'].includes(k)) continue;
      const d = ownedDifference(v, got[k], `${at}${fieldName(k)}`);
      if (d) return d;
    }
    return undefined;
  }
  if (Array.isArray(want)) {
    if (!Array.isArray(got) || got.length !== want.length) return { field: at, want, got };
    for (let i = 0; i < want.length; i++) {
      const d = ownedDifference(want[i], got[i], `${at}[${i}]`);
      if (d) return d;
    }
    return undefined;
  }
  // the API server writes numbers and booleans back as such; a container quantity comes back canonical (1024Mi as 1Gi)
  if (same(want, got) || (got !== undefined && String(want) === String(got))) return undefined;
  if (at.includes('.resources.') && sameQuantity(want, got)) return undefined;
  return { field: at, want, got };
}

const short = (v: unknown): string => { const s = JSON.stringify(v) ?? 'nothing'; return s.length > 60 ? `${s.slice(0, 57)}...` : s; };

/** Judge the fleet: the trust matrix and, per ordered pair (A -> B: a VM moving from A to B), the first reason it cannot. */
export function judgeFleet(fleet: string, clusters: ClusterFacts[], groups?: string[][], moveFacts?: MoveFacts[]): FleetStatus {
  const trust: Record<string, Record<string, TrustCell>> = {};
  for (const a of clusters) {
    if (!a.reachable || !a.ca) continue;
    const have = new Set(a.ca.map((c) => c.sha256));
    trust[a.cluster] = {};
    for (const b of clusters) {
      if (b === a || !b.reachable || !b.ca || b.ca.length === 0) continue;
      trust[a.cluster][b.cluster] = { trusted: have.has(b.ca[0].sha256), peerCa: b.ca[0] };
    }
  }
  const sameGroup = (a: string, b: string) => !groups || groups.some((g) => g.includes(a) && g.includes(b));
  const findings = new Map(clusters.map((c) => [c.cluster, clusterFindings(c)]));
  const blocking = (c: ClusterFacts) => findings.get(c.cluster)!.find((f) => f.severity === 'error');
  const untrusted = (x: string, y: string): StatusFinding | undefined => (trust[x]?.[y]?.trusted === false
    ? { code: 'status/peer-ca-untrusted', severity: 'error', cluster: x, message: `${x} does not trust ${y}'s current CA` } : undefined);
  const pairs: PairVerdict[] = [];
  const trustFindings: StatusFinding[] = [];
  for (const a of clusters) {
    for (const b of clusters) {
      if (a === b) continue;
      const t = untrusted(a.cluster, b.cluster);
      if (t && sameGroup(a.cluster, b.cluster)) trustFindings.push(t);
      const why: { code: StatusCode; message: string } | undefined = !sameGroup(a.cluster, b.cluster)
        ? { code: 'status/different-groups', message: `${a.cluster} and ${b.cluster} are in different migration groups` }
        : blocking(a) ?? blocking(b) ?? untrusted(b.cluster, a.cluster) ?? t;
      pairs.push(why ? { from: a.cluster, to: b.cluster, ready: false, reason: why.message, code: why.code } : { from: a.cluster, to: b.cluster, ready: true });
    }
  }
  const all = [...clusters.flatMap((c) => findings.get(c.cluster)!), ...trustFindings];
  const pairReason = (from: string, to: string) => {
    const p = pairs.find((x) => x.from === from && x.to === to);
    return p ? p.reason : `${from} or ${to} is not in the fleet`;
  };
  const moves = moveFacts && judgeMoves(moveFacts, pairReason);
  const ready = pairs.length > 0 && pairs.every((p) => p.ready) && (moves ?? []).every((m) => m.ready);
  return { fleet, clusters, trust, pairs, findings: all, ...(moves ? { moves } : {}), ready };
}

function gatewayPart(g: NonNullable<Extract<ClusterFacts, { reachable: true }>['gateway']>): string {
  const holders = (g.pods ?? []).filter((p) => g.vip && p.runtime?.held.includes(g.vip)).map((p) => p.pod);
  const vip = g.vip && g.pods ? `, VIP ${g.vip} on ${holders.join(' and ') || 'no pod'}` : '';
  return `gateway ${g.ready}/${g.replicas} ready${vip}`;
}

/** One line per gateway pod: ready, tunnels open per peer, the last error. */
function gatewayPodLines(g: NonNullable<Extract<ClusterFacts, { reachable: true }>['gateway']>): string[] {
  return (g.pods ?? []).map((p) => {
    if (!p.runtime) return `  gateway ${p.pod}: ${p.ready ? 'ready' : 'not ready'}; admin unreadable: ${p.error ?? 'no answer'}`;
    const r = p.runtime;
    const tunnels = Object.entries(r.peers).map(([peer, x]) => `${peer} ${x.tunnels.origin + x.tunnels.terminus}`).join(', ') || 'no peers';
    const e = r.lastErrors[0];
    const last = e ? `last error ${e.at} ${e.side} ${e.reason}${e.peer ? ` (${e.peer})` : ''}` : 'no errors';
    return `  gateway ${p.pod}: ${p.ready ? 'ready' : 'not ready'}; tunnels open: ${tunnels}; ${last}`;
  });
}

function attachmentPart(a: NonNullable<Extract<ClusterFacts, { reachable: true }>['attachments']>): string {
  const n = (role: string) => { const ps = a.pods.filter((p) => p.role === role); return `${ps.filter((p) => p.attached).length}/${ps.length}`; };
  return `on ${a.network}: virt-handler ${n('virt-handler')}, sync controller ${n('sync-controller')}`;
}

function clusterLines(s: FleetStatus, c: ClusterFacts): string[] {
  if (!c.reachable) return [`${c.cluster} (context ${c.context}): unreachable: ${c.error}`];
  const parts = [`${c.checked - c.drift.length}/${c.checked} objects in sync`];
  if (c.gateway) parts.push(gatewayPart(c.gateway));
  if (c.kubevirt) {
    const kv = c.kubevirt;
    const which = kv.object ? ` ${kv.object} (HCO)` : '';
    parts.push(kv.found ? `KubeVirt${which} migration network ${kv.migrationNetwork ?? 'unset'}, gates ${kv.featureGates.join(',') || 'none'}` : `KubeVirt CR${which} not found`);
  }
  if (c.attachments) parts.push(attachmentPart(c.attachments));
  if (c.ca) parts.push(c.ca[0] ? `CA ${c.ca[0].sha256.slice(0, 12)} until ${c.ca[0].notAfter}` : 'no kubevirt-ca');
  const lines = [`${c.cluster} (context ${c.context}): ${parts.join('; ')}`];
  for (const d of c.drift) {
    lines.push(d.state === 'missing' ? `  drift: ${d.object} missing` : `  drift: ${d.object} ${d.field}: want ${short(d.want)}, live ${short(d.got)}`);
  }
  if (c.gateway) lines.push(...gatewayPodLines(c.gateway));
  for (const f of s.findings.filter((x) => x.cluster === c.cluster && !x.code.startsWith('status/object-') && x.code !== 'status/peer-ca-untrusted')) {
    lines.push(`  ${f.severity} [${f.code}] ${f.path ? `${f.path}: ` : ''}${f.message}${f.fix ? `; fix: ${f.fix}` : ''}`);
  }
  return lines;
}

/** The text report: one block per cluster, the trust matrix, one line per pair (and per move), a summary. */
export function renderStatus(s: FleetStatus): string {
  const lines: string[] = [`fleet ${s.fleet}: ${s.clusters.length} clusters`, ''];
  for (const c of s.clusters) lines.push(...clusterLines(s, c));
  const names = Object.keys(s.trust);
  if (names.length) {
    lines.push('', 'trust (row trusts column\'s current CA):');
    const cols = s.clusters.filter((c) => c.reachable && c.ca && c.ca.length).map((c) => c.cluster);
    const w = Math.max(...names.map((n) => n.length), 5);
    lines.push(`  ${''.padEnd(w)}  ${cols.map((c) => c.padEnd(Math.max(c.length, 5))).join('  ')}`);
    for (const a of names) {
      lines.push(`  ${a.padEnd(w)}  ${cols.map((b) => (a === b ? '-' : s.trust[a][b] ? (s.trust[a][b].trusted ? 'yes' : 'NO') : '?').padEnd(Math.max(b.length, 5))).join('  ')}`);
    }
  }
  lines.push('', 'pairs:');
  for (const p of s.pairs) lines.push(`  ${p.from} -> ${p.to}: ${p.ready ? 'ready' : `[${p.code}] ${p.reason}`}`);
  if (s.moves) {
    lines.push('', 'moves:');
    for (const m of s.moves) {
      lines.push(`  ${m.vm} ${m.from} -> ${m.to} (plan ${m.plan}): ${m.ready ? 'ready' : 'NOT ready'}`);
      for (const p of m.problems) lines.push(`    ${p.severity === 'warning' ? 'warning ' : ''}[${p.code}] ${p.message}${p.fix ? `; fix: ${p.fix}` : ''}`);
      if (m.card?.update.length) lines.push(`    version card: ${m.from} ${m.card.source.version ?? '?'} -> ${m.to} ${m.card.target.version ?? '?'}; update ${m.card.update.join(' and ')}`);
    }
  }
  const ready = s.pairs.filter((p) => p.ready).length;
  lines.push('', `${ready}/${s.pairs.length} pairs ready to migrate${s.moves ? `; ${s.moves.filter((m) => m.ready).length}/${s.moves.length} moves ready` : ''}`);
  return `${lines.join('\n')}\n`;
}
