/**
 * Names of the generated Forklift objects: readable, deterministic, and always DNS-1123 labels (at most
 * 63 characters), since Forklift and the GitOps tools copy object names into labels. A name that would
 * be longer keeps its readable start and ends in a hash of the whole. Pure, no cdk8s import.
 */
import { createHash } from 'crypto';

const MAX_NAME = 63;

/** `parts` joined with "-", shortened to 63 characters with a stable hash when longer. */
export function objectName(...parts: string[]): string {
  const full = parts.join('-');
  if (full.length <= MAX_NAME) return full;
  const hash = createHash('sha256').update(full).digest('hex').slice(0, 8);
  return `${full.slice(0, MAX_NAME - hash.length - 1).replace(/-+$/, '')}-${hash}`;
}

/** NetworkMap / StorageMap of one ordered pair. */
export const pairName = (from: string, to: string): string => objectName(from, 'to', to);

/** The Plan of one batch between one pair (into one target namespace). */
export function planName(batch: string, from: string, to: string, targetNamespace?: string): string {
  return targetNamespace ? objectName(batch, from, 'to', to, targetNamespace) : objectName(batch, from, 'to', to);
}

/** One run of a Plan. */
export const migrationName = (plan: string, run: number): string => objectName(plan, 'run', String(run));
