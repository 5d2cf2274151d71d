/**
 * Is trust exchanged between two clusters? The gateways, and in clusters without a gateway their trust
 * agents, keep each cluster's KubeVirt CA trusted by its peers (issues #10, #30, docs/trust.md), in
 * every datapath. The section is read loosely here:
 * - no `spec.trust`: managed (the default exchanges in every multi-cluster fleet, whatever disableTLS says);
 * - `enabled: false` / `exchange: false` / `exchange: {enabled: false}` (fleet-wide or for one of the
 *   two clusters): disabled;
 * - present otherwise: managed. Pure.
 */
export type TrustState = 'managed' | 'disabled';

const off = (x: unknown): boolean => {
  if (!x || typeof x !== 'object') return false;
  const o = x as Record<string, unknown>;
  return o.enabled === false || o.exchange === false || (typeof o.exchange === 'object' && o.exchange !== null && (o.exchange as Record<string, unknown>).enabled === false);
};

/** Trust between `a` and `b` as the fleet document declares it (every datapath exchanges: gateway or trust agent). */
export function trustBetween(spec: unknown, a: string, b: string): TrustState {
  const s = (spec ?? {}) as Record<string, unknown>;
  // the default manages every pair whatever disableTLS says (the sync channel is mTLS regardless)
  if (s.trust === undefined) return 'managed';
  if (off(s.trust)) return 'disabled';
  const clusters = Array.isArray(s.clusters) ? (s.clusters as Record<string, unknown>[]) : [];
  const disabled = clusters.some((c) => (c.name === a || c.name === b) && off(c.trust));
  if (disabled) return 'disabled';
  return 'managed';
}
