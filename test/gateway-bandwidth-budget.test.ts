/**
 * The gateways' bandwidth budget per peer (issue 52 item 3): `spec.gateway.bandwidth` is a quantity in bytes per
 * second, resolved to a number; `validate` warns (does not refuse) when it cannot carry parallelMigrationsPerCluster
 * migrations at bandwidthPerMigration, with the code, the path and a fix that names numbers that fit.
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { FleetValidationError } from '../src/base/errors';
import { planFleetDocument } from '../src/addressing/planner';
import { gatewayConfigFor } from '../src/gateway/config';
import { baseFleet } from './support/fleets';

const DIGEST = `ghcr.io/acme/proxy@sha256:${'0123456789abcdef'.repeat(4)}`;
const planOf = (bandwidth?: string, migrationPolicy?: Record<string, unknown>) => synthesizeFleet(baseFleet({
  gateway: { image: DIGEST, ...(bandwidth ? { bandwidth } : {}) }, ...(migrationPolicy ? { migrationPolicy } : {}),
}), { render: false }).plan;
const warningsOf = (bandwidth?: string, mp?: Record<string, unknown>) => (planOf(bandwidth, mp).gateway.warnings ?? []).filter((w) => w.code.startsWith('gateway-bandwidth'));

describe('spec.gateway.bandwidth', () => {
  test('is bytes per second: 125M resolves to 125000000, 1Gi to 1073741824; unset is no budget', () => {
    expect(planOf('125M').gateway.bandwidth).toBe(125_000_000);
    expect(planOf('1Gi').gateway.bandwidth).toBe(1_073_741_824);
    expect(planOf().gateway.bandwidth).toBeUndefined();
  });

  test('a budget below 5 (KubeVirt\'s default) x bandwidthPerMigration is a warning with the numbers that fit', () => {
    const [w, ...rest] = warningsOf('100Mi', { bandwidthPerMigration: '64Mi' });
    expect(rest).toEqual([]);
    expect(w).toMatchObject({ code: 'gateway-bandwidth-below-migrations', path: 'spec.gateway.bandwidth' });
    expect(w.message).toContain("spec.gateway.bandwidth '100Mi' (bytes/s per peer) cannot carry 5 parallel migrations at bandwidthPerMigration '64Mi'");
    expect(w.message).toContain(`(${5 * 64 * 2 ** 20} bytes/s together)`);
    expect(w.fix).toContain(`raise spec.gateway.bandwidth to at least ${5 * 64 * 2 ** 20} bytes/s`);
    expect(w.fix).toContain('parallelMigrationsPerCluster: 1');
    expect(w.fix).toContain(`bandwidthPerMigration to at most ${Math.floor(100 * 2 ** 20 / 5)} bytes/s`);
  });

  test('the configured parallelMigrationsPerCluster counts, and a budget that carries them is no warning', () => {
    expect(warningsOf('256Mi', { bandwidthPerMigration: '64Mi', parallelMigrationsPerCluster: 4 })).toEqual([]);
    const [w] = warningsOf('256Mi', { bandwidthPerMigration: '64Mi', parallelMigrationsPerCluster: 5 });
    expect(w.fix).toContain('parallelMigrationsPerCluster: 4');
  });

  test('no budget, or migrations KubeVirt does not limit, is nothing to check', () => {
    expect(warningsOf(undefined, { bandwidthPerMigration: '64Mi' })).toEqual([]);
    expect(warningsOf('1Mi')).toEqual([]);
  });

  test('the gateway runtime config carries it (bytes/s) on every gateway; without it the config has no field', () => {
    const r = planFleetDocument(baseFleet({ gateway: { image: DIGEST, bandwidth: '125M' } }));
    expect(r.plan.clusters.map((c) => gatewayConfigFor(r.plan, c).bandwidth)).toEqual([125_000_000, 125_000_000]);
    const none = planFleetDocument(baseFleet({ gateway: { image: DIGEST } }));
    expect(none.plan.clusters.map((c) => 'bandwidth' in gatewayConfigFor(none.plan, c))).toEqual([false, false]);
  });

  test('with payload tls (tls.mode mtls) it is refused: the gateway enforces budgets on plaintext and spliced tunnels only', () => {
    let problems: FleetValidationError['problems'] = [];
    try { planFleetDocument(baseFleet({ gateway: { image: DIGEST, bandwidth: '125M', payload: 'tls' } })); } catch (e) {
      if (!(e instanceof FleetValidationError)) throw e;
      problems = e.problems;
    }
    expect(problems).toHaveLength(1);
    expect(problems[0]).toMatchObject({ code: 'gateway-bandwidth-needs-splice', path: 'spec.gateway.bandwidth' });
    expect(problems[0].fix).toContain('spec.gateway.payload: splice');
    // plaintext tunnels and the default payload (splice) take it
    expect(planOf('125M').gateway.bandwidth).toBe(125_000_000);
  });

  test('a budget that is not a quantity is refused at the schema', () => {
    expect(() => planOf('2 Gbit/s')).toThrow(/spec\.gateway\.bandwidth[\s\S]*Kubernetes quantity/);
  });
});
