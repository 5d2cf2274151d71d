/**
 * The gateways' bandwidth budget per peer (`spec.gateway.bandwidth`, issue 52 item 3) against the migrations the
 * fleet lets KubeVirt run at once: KubeVirt starts up to `parallelMigrationsPerCluster` migrations (default 5),
 * each limited to `bandwidthPerMigration`; when their sum is over the budget the gateways hold each migration
 * below the bandwidth KubeVirt planned for, so migrations converge slower (or, with a tight completion timeout,
 * are cancelled). A warning: a budget below that sum may be on purpose. Units: both are bytes per second.
 * Pure, no cdk8s import.
 */
import type { FleetProblem } from '../base/errors';
import { quantityValue } from '../base/quantity';

/** KubeVirt's default `parallelMigrationsPerCluster`. */
const KUBEVIRT_PARALLEL_MIGRATIONS = 5;

/** What the check reads from the fleet. */
export interface BandwidthBudgetUse {
  /** `spec.gateway.bandwidth` (bytes/s quantity), if set. */
  readonly budget?: string;
  /** `spec.migrationPolicy.bandwidthPerMigration`, if set (unset: KubeVirt does not limit a migration). */
  readonly bandwidthPerMigration?: string;
  /** `spec.migrationPolicy.parallelMigrationsPerCluster`, if set. */
  readonly parallelMigrationsPerCluster?: number;
}

/** The `gateway-bandwidth-below-migrations` warning, or none. */
export function bandwidthBudgetWarnings(u: BandwidthBudgetUse): FleetProblem[] {
  if (u.budget === undefined || u.bandwidthPerMigration === undefined) return [];
  const budget = quantityValue(u.budget) ?? 0, per = quantityValue(u.bandwidthPerMigration) ?? 0;
  const parallel = u.parallelMigrationsPerCluster ?? KUBEVIRT_PARALLEL_MIGRATIONS;
  if (budget <= 0 || per <= 0 || budget >= per * parallel) return [];
  const fits = Math.max(1, Math.floor(budget / per));
  return [{
    code: 'gateway-bandwidth-below-migrations', path: 'spec.gateway.bandwidth',
    message: `spec.gateway.bandwidth '${u.budget}' (bytes/s per peer) cannot carry ${parallel} parallel migrations at bandwidthPerMigration `
      + `'${u.bandwidthPerMigration}' (${per * parallel} bytes/s together): the gateways share the budget between them, so each gets `
      + `${Math.floor(budget / parallel)} bytes/s, less than KubeVirt planned for, and may not converge within its completion timeout`,
    fix: `raise spec.gateway.bandwidth to at least ${per * parallel} bytes/s, or set migrationPolicy.parallelMigrationsPerCluster: ${fits} `
      + `or migrationPolicy.bandwidthPerMigration to at most ${Math.floor(budget / parallel)} bytes/s`,
  }];
}
