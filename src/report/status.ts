/**
 * `migration-mesh status`: the operator's view of a running fleet, judged from facts gathered per
 * cluster (cli/status.ts talks to the clusters; this file is pure): drift of the generated objects
 * against the live ones in the fields we write, the KubeVirt side, the gateways, the trust matrix, and
 * a verdict per ordered pair of clusters.
 */

/** One generated object compared with the live one. */
export interface DriftEntry {
  /** `<Kind>/<namespace>/<name>` (namespace empty for cluster-scoped objects). */
  readonly object: string;
  readonly state: 'missing' | 'different';
  /** For `different`: the first field we own whose live value differs (`.spec.replicas`). */
  readonly field?: string;
  readonly want?: unknown;
  readonly got?: unknown;
}

/** A CA certificate as read from a cluster's `kubevirt-ca`. */
export interface CaCert { readonly sha256: string; readonly subject: string; readonly notAfter: string }

/** What was learned from one cluster (or why nothing was). */
export type ClusterFacts = {
  readonly cluster: string;
  readonly context: string;
  readonly reachable: false;
  readonly error: string;
} | {
  readonly cluster: string;
  readonly context: string;
  readonly reachable: true;
  /** Generated objects checked, and the ones that are missing or different. */
  readonly checked: number;
  readonly drift: DriftEntry[];
  /** The KubeVirt CR (KubeVirt delivery only; undefined when the fleet writes HCO or a patch). */
  readonly kubevirt?: {
    readonly found: boolean; readonly migrationNetwork?: string; readonly featureGates: string[]; readonly wantNetwork?: string; readonly wantGates: string[];
  };
  /** Gateway clusters: ready replicas of the generated gateway Deployments. */
  readonly gateway?: { readonly replicas: number; readonly ready: number };
  /** `kubevirt-ca` of this cluster: the first certificate is the current CA. */
  readonly ca?: CaCert[];
};

export interface TrustCell {
  /** B's current CA (first certificate of B's kubevirt-ca) is in A's kubevirt-ca. */
  readonly trusted: boolean;
  readonly peerCa?: CaCert;
}

export interface PairVerdict { readonly from: string; readonly to: string; readonly ready: boolean; readonly reason?: string }

export interface FleetStatus {
  readonly fleet: string;
  readonly clusters: ClusterFacts[];
  /** trust[A][B]: does A trust B's current CA. */
  readonly trust: Record<string, Record<string, TrustCell>>;
  readonly pairs: PairVerdict[];
  readonly ready: boolean;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const same = (a: unknown, b: unknown): boolean => JSON.stringify(a) === JSON.stringify(b);
const fieldName = (k: string) => (/^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`);

/**
 * The first field we own whose live value differs: every key the generated object sets must be in the
 * live one with the same value (objects: recursively; lists: same length, element by element; the API
 * server's defaults and other writers' fields beside ours are not drift). `status` and server-set
 * metadata are ignored; of metadata only labels and annotations count.
 */
export function ownedDifference(want: unknown, got: unknown, at = ''): { field: string; want: unknown; got: unknown } | undefined {
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
  // the API server writes numbers and booleans back as such; a quantity may come back normalized
  if (same(want, got) || (got !== undefined && String(want) === String(got))) return undefined;
  return { field: at, want, got };
}

const short = (v: unknown): string => { const s = JSON.stringify(v) ?? 'nothing'; return s.length > 60 ? `${s.slice(0, 57)}...` : s; };

/** Why cluster `c` is not ready on its own, or undefined. */
function clusterReason(c: ClusterFacts): string | undefined {
  if (!c.reachable) return `${c.cluster} unreachable`;
  const d = c.drift[0];
  if (d) return d.state === 'missing' ? `${c.cluster}: ${d.object} missing` : `${c.cluster}: ${d.object} differs at ${d.field}`;
  if (c.kubevirt) {
    if (!c.kubevirt.found) return `${c.cluster}: KubeVirt CR not found`;
    if (c.kubevirt.wantNetwork && c.kubevirt.migrationNetwork !== c.kubevirt.wantNetwork) return `${c.cluster}: KubeVirt migration network is ${c.kubevirt.migrationNetwork ?? 'unset'}, want ${c.kubevirt.wantNetwork}`;
    const gate = c.kubevirt.wantGates.find((g) => !c.kubevirt!.featureGates.includes(g));
    if (gate) return `${c.cluster}: KubeVirt feature gate ${gate} off`;
  }
  if (c.gateway && c.gateway.ready === 0) return `${c.cluster}: no gateway replica ready (0/${c.gateway.replicas})`;
  if (c.ca && c.ca.length === 0) return `${c.cluster}: kubevirt-ca not found or empty`;
  return undefined;
}

/** Judge the fleet: the trust matrix and, per ordered pair (A -> B: a VM moving from A to B), the first reason it cannot. */
export function judgeFleet(fleet: string, clusters: ClusterFacts[], groups?: string[][]): FleetStatus {
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
  const pairs: PairVerdict[] = [];
  for (const a of clusters) {
    for (const b of clusters) {
      if (a === b) continue;
      const reason = !sameGroup(a.cluster, b.cluster) ? `${a.cluster} and ${b.cluster} are in different migration groups`
        : clusterReason(a) ?? clusterReason(b)
        ?? (trust[b.cluster]?.[a.cluster]?.trusted === false ? `${b.cluster} does not trust ${a.cluster}'s current CA` : undefined)
        ?? (trust[a.cluster]?.[b.cluster]?.trusted === false ? `${a.cluster} does not trust ${b.cluster}'s current CA` : undefined);
      pairs.push(reason ? { from: a.cluster, to: b.cluster, ready: false, reason } : { from: a.cluster, to: b.cluster, ready: true });
    }
  }
  return { fleet, clusters, trust, pairs, ready: pairs.length > 0 && pairs.every((p) => p.ready) };
}

/** The text report: one block per cluster, the trust matrix, one line per pair, a summary. */
export function renderStatus(s: FleetStatus): string {
  const lines: string[] = [`fleet ${s.fleet}: ${s.clusters.length} clusters`, ''];
  for (const c of s.clusters) {
    if (!c.reachable) { lines.push(`${c.cluster} (context ${c.context}): unreachable: ${c.error}`); continue; }
    const parts = [`${c.checked - c.drift.length}/${c.checked} objects in sync`];
    if (c.gateway) parts.push(`gateway ${c.gateway.ready}/${c.gateway.replicas} ready`);
    if (c.kubevirt) parts.push(c.kubevirt.found ? `KubeVirt migration network ${c.kubevirt.migrationNetwork ?? 'unset'}, gates ${c.kubevirt.featureGates.join(',') || 'none'}` : 'KubeVirt CR not found');
    if (c.ca) parts.push(c.ca[0] ? `CA ${c.ca[0].sha256.slice(0, 12)} until ${c.ca[0].notAfter}` : 'no kubevirt-ca');
    lines.push(`${c.cluster} (context ${c.context}): ${parts.join('; ')}`);
    for (const d of c.drift) {
      lines.push(d.state === 'missing' ? `  drift: ${d.object} missing` : `  drift: ${d.object} ${d.field}: want ${short(d.want)}, live ${short(d.got)}`);
    }
  }
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
  for (const p of s.pairs) lines.push(`  ${p.from} -> ${p.to}: ${p.ready ? 'ready' : p.reason}`);
  const ready = s.pairs.filter((p) => p.ready).length;
  lines.push('', `${ready}/${s.pairs.length} pairs ready to migrate`);
  return `${lines.join('\n')}\n`;
}
