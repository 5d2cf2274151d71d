/**
 * Is trust exchanged between two clusters? Issue #10 adds `spec.trust` (the gateways keep each
 * cluster's KubeVirt CA trusted by its peers). Until a fleet has it, trust is not managed: Forklift
 * copies each CA once per run (`Begin()`), which a CA rotation undoes, so every pair gets a warning.
 * The section is read loosely here so this module does not depend on its final shape: present means
 * managed unless it says `enabled: false` or `exchange: false` (fleet-wide or for the cluster). Pure.
 */
export type TrustState = 'managed' | 'disabled' | 'unmanaged';

const off = (x: unknown): boolean => {
  if (!x || typeof x !== 'object') return false;
  const o = x as Record<string, unknown>;
  return o.enabled === false || o.exchange === false || (typeof o.exchange === 'object' && o.exchange !== null && (o.exchange as Record<string, unknown>).enabled === false);
};

/** Trust between `a` and `b` as the fleet document declares it. */
export function trustBetween(spec: unknown, a: string, b: string): TrustState {
  const s = (spec ?? {}) as Record<string, unknown>;
  if (s.trust === undefined) return 'unmanaged';
  if (off(s.trust)) return 'disabled';
  const clusters = Array.isArray(s.clusters) ? (s.clusters as Record<string, unknown>[]) : [];
  const disabled = clusters.some((c) => (c.name === a || c.name === b) && off(c.trust));
  return disabled ? 'disabled' : 'managed';
}
