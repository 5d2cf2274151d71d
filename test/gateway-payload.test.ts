/**
 * spec.gateway.payload: the tunnel splices KubeVirt's own TLS (mtls-splice) only while that TLS is on; the
 * default follows migrationPolicy.disableTLS; the contradicting combinations are refused with stable codes.
 */
import { FleetValidationError } from '../src/base/errors';
import { formatGatewayConfig, gatewayConfigFor } from '../src/gateway/config';
import { planFleetDocument } from '../src/addressing/planner';
import { baseFleet } from './support/fleets';

const modeOf = (spec: Parameters<typeof baseFleet>[0]) => {
  const r = planFleetDocument(baseFleet(spec));
  return r.plan.clusters.map((c) => gatewayConfigFor(r.plan, c).tls.mode);
};

const problemsOf = (spec: Parameters<typeof baseFleet>[0]) => {
  try { planFleetDocument(baseFleet(spec)); } catch (e) {
    if (e instanceof FleetValidationError) return e.problems;
    throw e;
  }
  return [];
};

describe('gateway payload mode', () => {
  test('default: KubeVirt migration TLS on, so the tunnel authenticates and splices (mtls-splice)', () => {
    expect(modeOf({})).toEqual(['mtls-splice', 'mtls-splice']);
    expect(modeOf({ migrationPolicy: { disableTLS: false } })).toEqual(['mtls-splice', 'mtls-splice']);
  });

  test('default with disableTLS: the payload is encrypted inside the gateways\' TLS (mtls)', () => {
    expect(modeOf({ migrationPolicy: { disableTLS: true } })).toEqual(['mtls', 'mtls']);
  });

  test('payload: tls is honoured with KubeVirt TLS on; plaintext tunnels stay plaintext', () => {
    expect(modeOf({ gateway: { payload: 'tls' } })).toEqual(['mtls', 'mtls']);
    expect(modeOf({ gateway: { tls: { plaintext: true } }, trust: { exchange: { enabled: false } } })).toEqual(['plaintext', 'plaintext']);
  });

  test('payload: splice with disableTLS is refused: VM memory would cross the shared network in clear', () => {
    const ps = problemsOf({ gateway: { payload: 'splice' }, migrationPolicy: { disableTLS: true } });
    expect(ps).toHaveLength(1);
    expect(ps[0]).toMatchObject({ code: 'splice-without-kubevirt-tls', path: 'spec.gateway.payload' });
    expect(ps[0].message).toMatch(/disableTLS/);
    expect(ps[0].fix).toMatch(/payload: tls/);
  });

  test('payload: splice with a plaintext tunnel is refused (splice authenticates with mutual TLS)', () => {
    const ps = problemsOf({ gateway: { payload: 'splice', tls: { plaintext: true } }, trust: { exchange: { enabled: false } } });
    expect(ps.map((p) => p.code)).toEqual(['splice-without-mtls']);
  });

  test('both mistakes at once are both reported', () => {
    const ps = problemsOf({ gateway: { payload: 'splice', tls: { plaintext: true } }, migrationPolicy: { disableTLS: true }, trust: { exchange: { enabled: false } } });
    expect(ps.map((p) => p.code).sort()).toEqual(['splice-without-kubevirt-tls', 'splice-without-mtls']);
  });
});

describe('the peer table in the ConfigMap text', () => {
  test('each peer is one line, the same bytes as its JSON; the shared, cached peer objects are frozen (no hook can change one cluster\'s table through another\'s)', () => {
    const r = planFleetDocument(baseFleet({}));
    const [a, b] = r.plan.clusters.map((c) => gatewayConfigFor(r.plan, c));
    for (const cfg of [a, b]) {
      const text = formatGatewayConfig(cfg);
      expect(JSON.parse(text)).toEqual(cfg);
      for (const p of cfg.peers) expect(text).toContain(`\n    ${JSON.stringify(p)}`);
      expect(Object.isFrozen(cfg.peers[0]) && Object.isFrozen(cfg.peers[0].gateways[0]) && Object.isFrozen(cfg.peers[0].cidrs)).toBe(true);
      expect(() => { (cfg.peers[0].cidrs as string[]).push('10.9.0.0/16'); }).toThrow(TypeError);
    }
    // the layout: the config pretty-printed, then one line per peer (0, 1 and 3 peers)
    for (const peers of [[], a.peers.slice(0, 1), [...a.peers, ...b.peers, ...a.peers]]) {
      const cfg = { ...a, peers };
      const { peers: _, ...rest } = cfg;
      const head = JSON.stringify(rest, null, 2).slice(0, -2);
      const table = peers.length ? `\n${peers.map((p) => `    ${JSON.stringify(p)}`).join(',\n')}\n  ` : '';
      expect(formatGatewayConfig(cfg)).toBe(`${head},\n  "peers": [${table}]\n}\n`);
    }
    // a peer object not made by gatewayConfigFor (a config of your own) is formatted from what it holds now
    const own = { ...a, peers: [{ ...a.peers[0], cidrs: ['10.9.0.0/16'] }] };
    expect(JSON.parse(formatGatewayConfig(own)).peers[0].cidrs).toEqual(['10.9.0.0/16']);
  });
});
