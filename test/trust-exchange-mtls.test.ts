/**
 * No trust without authentication (issue 49 item 2): a CA bundle is believed only from a verified peer
 * certificate, so `validate` refuses a fleet with plaintext tunnels and the CA exchange on
 * (`trust/exchange-without-mtls`, at spec.gateway.tls, naming both ways out), and accepts it once the
 * exchange is off or the tunnel is mTLS.
 */
import { FleetProblem, FleetValidationError } from '../src/base/errors';
import { planFleetDocument } from '../src/addressing/planner';
import { gatewayConfigFor } from '../src/gateway/config';
import { baseFleet } from './support/fleets';

const problemsOf = (spec: Parameters<typeof baseFleet>[0]): readonly FleetProblem[] => {
  try { planFleetDocument(baseFleet(spec)); } catch (e) {
    if (e instanceof FleetValidationError) return e.problems;
    throw e;
  }
  return [];
};
const PLAIN = { tls: { plaintext: true as const } };

describe('plaintext tunnels and the CA exchange', () => {
  test('the default exchange (two clusters, no spec.trust) with plaintext tunnels is refused, with the fix', () => {
    const ps = problemsOf({ gateway: PLAIN });
    expect(ps).toHaveLength(1);
    expect(ps[0]).toMatchObject({ code: 'trust/exchange-without-mtls', path: 'spec.gateway.tls' });
    expect(ps[0].message).toMatch(/plaintext.*on by default.*a, b.*mutual TLS/);
    expect(ps[0].fix).toMatch(/issuerRef.*secretName.*spec\.trust\.exchange\.enabled: false/);
  });

  test('spec.trust given (the exchange on), a cluster without a gateway (trust agent), and every exchanging cluster named', () => {
    expect(problemsOf({ gateway: PLAIN, trust: {} }).map((p) => p.code)).toEqual(['trust/exchange-without-mtls']);
    expect(problemsOf({ gateway: PLAIN, trust: { exchange: { enabled: true } } }).map((p) => p.code)).toEqual(['trust/exchange-without-mtls']);
    const mixed = problemsOf({ gateway: PLAIN, clusters: [{ name: 'a', nodes: 3 }, { name: 'd', nodes: 2, datapath: 'direct' }] });
    expect(mixed.map((p) => p.code)).toEqual(['trust/exchange-without-mtls']);
    expect(mixed[0].message).toMatch(/for a, d:/);
  });

  test('accepted with the exchange off (either switch), with mTLS, or with one cluster (no exchange)', () => {
    expect(problemsOf({ gateway: PLAIN, trust: { exchange: { enabled: false } } })).toEqual([]);
    expect(problemsOf({ gateway: PLAIN, trust: { enabled: false } })).toEqual([]);
    expect(problemsOf({})).toEqual([]);
    expect(problemsOf({ gateway: { tls: { secretName: 'gw' } } })).toEqual([]);
    expect(problemsOf({ gateway: PLAIN, clusters: [{ name: 'a', nodes: 3 }] })).toEqual([]);
  });

  test('with the exchange off, a plaintext runtime config carries no trust section', () => {
    const r = planFleetDocument(baseFleet({ gateway: PLAIN, trust: { exchange: { enabled: false } } }));
    for (const c of r.plan.clusters) {
      const cfg = gatewayConfigFor(r.plan, c);
      expect(cfg.tls.mode).toBe('plaintext');
      expect(cfg.trust).toBeUndefined();
    }
  });
});
