/**
 * Is trust exchanged between two clusters? The gateways keep each cluster's KubeVirt CA trusted by its
 * peers (issue #10, docs/trust.md); only gateway clusters exchange. The section is read loosely here:
 * - no `spec.trust`: managed between two gateway clusters while KubeVirt's migration TLS is on (the
 *   default), otherwise not managed (Forklift copies each CA once per run, which a CA rotation undoes);
 * - `enabled: false` / `exchange: false` / `exchange: {enabled: false}` (fleet-wide or for one of the
 *   two clusters): disabled;
 * - present otherwise: managed between gateway clusters, not managed for a native or direct one. Pure.
 */
export type TrustState = 'managed' | 'disabled' | 'unmanaged';

const off = (x: unknown): boolean => {
  if (!x || typeof x !== 'object') return false;
  const o = x as Record<string, unknown>;
  return o.enabled === false || o.exchange === false || (typeof o.exchange === 'object' && o.exchange !== null && (o.exchange as Record<string, unknown>).enabled === false);
};

/** Trust between `a` and `b` (datapaths `datapaths`, as resolved) as the fleet document declares it. */
export function trustBetween(spec: unknown, a: string, b: string, datapaths: readonly [string, string] = ['gateway', 'gateway']): TrustState {
  const s = (spec ?? {}) as Record<string, unknown>;
  const gateways = datapaths.every((d) => d === 'gateway');
  if (s.trust === undefined) {
    // the default manages gateway pairs whatever disableTLS says (the sync channel is mTLS regardless)
    return gateways ? 'managed' : 'unmanaged';
  }
  if (off(s.trust)) return 'disabled';
  const clusters = Array.isArray(s.clusters) ? (s.clusters as Record<string, unknown>[]) : [];
  const disabled = clusters.some((c) => (c.name === a || c.name === b) && off(c.trust));
  if (disabled) return 'disabled';
  return gateways ? 'managed' : 'unmanaged';
}
