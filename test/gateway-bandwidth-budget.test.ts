/**
 * The gateways' bandwidth budgets (issue 52 item 3): `spec.gateway.bandwidth` is one quantity in bytes per second for
 * every pair of clusters, or budgets per pair of sites and of clusters (a cluster pair over its sites' pair over the
 * default). Each cluster's runtime config carries the budget toward each peer (the default as `bandwidth`, another
 * pair's on that peer's entry), in both directions of a pair; `validate` refuses a pair the fleet does not have, or
 * names twice, with its code and path, and warns (does not refuse) per budget that cannot carry
 * parallelMigrationsPerCluster migrations at bandwidthPerMigration, naming the pair and a fix with numbers that fit.
 */
import { Testing } from 'cdk8s';
import { parseProxyConfig, peerBandwidth } from '@migration-mesh/proxy/config';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { FleetValidationError } from '../src/base/errors';
import { planFleetDocument } from '../src/addressing/planner';
import { gatewayConfigFor } from '../src/gateway/config';
import { CrossClusterMigrationMesh } from '../constructs/fleet/mesh';
import { FleetDocument } from '../src/fleet/schema';
import { baseFleet, mutate, problemsOf } from './support/fleets';
import { testApp } from './support/tmp';

const DIGEST = `ghcr.io/acme/proxy@sha256:${'0123456789abcdef'.repeat(4)}`;
const planOf = (bandwidth?: string, migrationPolicy?: Record<string, unknown>) => synthesizeFleet(baseFleet({
  gateway: { image: DIGEST, ...(bandwidth ? { bandwidth } : {}) }, ...(migrationPolicy ? { migrationPolicy } : {}),
}), { render: false }).plan;
const warningsOf = (bandwidth?: string, mp?: Record<string, unknown>) => (planOf(bandwidth, mp).gateway.warnings ?? []).filter((w) => w.code.startsWith('gateway-bandwidth'));

describe('spec.gateway.bandwidth', () => {
  test('is bytes per second: 125M resolves to a default of 125000000 for every pair, 1Gi to 1073741824; unset is no budget', () => {
    expect(planOf('125M').gateway.bandwidth).toEqual({ default: 125_000_000, sites: [], clusters: [] });
    expect(planOf('1Gi').gateway.bandwidth?.default).toBe(1_073_741_824);
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
    expect(planOf('125M').gateway.bandwidth?.default).toBe(125_000_000);
  });

  test('a budget that is not a quantity is refused at the schema', () => {
    expect(() => planOf('2 Gbit/s')).toThrow(/spec\.gateway\.bandwidth[\s\S]*Kubernetes quantity/);
  });
});

/** Three sites (fra with two clusters, ams, par) and these budgets. */
const threeSites = (bandwidth: unknown, edit: (d: any) => void = () => undefined): FleetDocument => mutate(baseFleet({
  crossClusterNetwork: {
    attachment: { type: 'macvlan', master: 'eth2' },
    sites: ['fra', 'ams', 'par'].map((name, i) => ({ name, pool: [`172.31.${i + 1}.10-172.31.${i + 1}.29`], prefixLength: 24, router: `172.31.${i + 1}.1` })),
  },
  gateway: { image: DIGEST },
  clusters: [{ name: 'fra-1', site: 'fra', nodes: 3 }, { name: 'fra-2', site: 'fra', nodes: 3 }, { name: 'ams-1', site: 'ams', nodes: 3 }, { name: 'par-1', site: 'par', nodes: 3 }],
}), (d) => { d.spec.gateway.bandwidth = bandwidth; edit(d); });

/** Each cluster's gateway runtime config, read from the ConfigMap the constructs synthesize. */
function runtimeConfigs(doc: FleetDocument) {
  const mesh = new CrossClusterMigrationMesh(testApp(), 'm', { fleet: doc });
  return new Map(mesh.charts.map((chart) => {
    const cm = Testing.synth(chart).find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'migration-mesh-gateway');
    const cfg = parseProxyConfig(JSON.parse(cm.data['config.json']));
    return [cfg.cluster, cfg] as const;
  }));
}
/** Per cluster: the budget toward each peer, as the runtime reads it (its own entry's, else the top-level one). */
const budgetsIn = (configs: ReturnType<typeof runtimeConfigs>) => Object.fromEntries([...configs].map(([c, cfg]) => [c,
  Object.fromEntries(cfg.peers.map((p) => [p.cluster, peerBandwidth(cfg, p.cluster) ?? null]))]));
const refusals = (doc: unknown) => problemsOf(doc).map((p) => [p.code, p.path]);

describe('spec.gateway.bandwidth per pair of sites and of clusters', () => {
  const rules = {
    default: '1G',
    sites: [{ between: ['fra', 'ams'], bandwidth: '250M' }, { between: ['fra', 'fra'], bandwidth: '2G' }],
    clusters: [{ between: ['ams-1', 'fra-2'], bandwidth: '125M' }], // either order
  };

  test('each gateway gets the budget toward each peer: its cluster pair, else its sites\' pair, else the default; the same both ways', () => {
    const configs = runtimeConfigs(threeSites(rules));
    expect(budgetsIn(configs)).toEqual({
      'ams-1': { 'fra-1': 250e6, 'fra-2': 125e6, 'par-1': 1e9 },
      'fra-1': { 'ams-1': 250e6, 'fra-2': 2e9, 'par-1': 1e9 },
      'fra-2': { 'ams-1': 125e6, 'fra-1': 2e9, 'par-1': 1e9 },
      'par-1': { 'ams-1': 1e9, 'fra-1': 1e9, 'fra-2': 1e9 },
    });
    // the default is the config's own bandwidth; a peer entry carries a budget only where its pair has another
    expect([...configs.values()].map((c) => c.bandwidth)).toEqual([1e9, 1e9, 1e9, 1e9]);
    expect(configs.get('par-1')!.peers.map((p) => p.bandwidth)).toEqual([undefined, undefined, undefined]);
    expect(configs.get('fra-2')!.peers.map((p) => [p.cluster, p.bandwidth])).toEqual([['ams-1', 125e6], ['fra-1', 2e9], ['par-1', undefined]]);
  });

  test('without a default, a pair with no rule has no budget: no field on its peer, and no top-level bandwidth', () => {
    const configs = runtimeConfigs(threeSites({ sites: [{ between: ['ams', 'fra'], bandwidth: '250M' }] }));
    expect(budgetsIn(configs)).toEqual({
      'ams-1': { 'fra-1': 250e6, 'fra-2': 250e6, 'par-1': null },
      'fra-1': { 'ams-1': 250e6, 'fra-2': null, 'par-1': null },
      'fra-2': { 'ams-1': 250e6, 'fra-1': null, 'par-1': null },
      'par-1': { 'ams-1': null, 'fra-1': null, 'fra-2': null },
    });
    expect([...configs.values()].map((c) => 'bandwidth' in c)).toEqual([false, false, false, false]);
  });

  test('the plain quantity stays one budget for every peer (the config\'s own bandwidth, no peer entry carries one)', () => {
    const configs = runtimeConfigs(threeSites('125M'));
    expect([...configs.values()].flatMap((c) => [c.bandwidth, ...c.peers.map((p) => p.bandwidth)])).toEqual(
      [...configs.values()].flatMap((c) => [125e6, ...c.peers.map(() => undefined)]));
  });

  test('a pair the fleet does not have, or names twice, is refused with its code at its path', () => {
    expect(refusals(threeSites({ sites: [{ between: ['fra', 'lon'], bandwidth: '1G' }] })))
      .toEqual([['gateway-bandwidth-unknown-site', 'spec.gateway.bandwidth.sites[0].between[1]']]);
    expect(refusals(threeSites({ clusters: [{ between: ['nyc-1', 'fra-1'], bandwidth: '1G' }] })))
      .toEqual([['gateway-bandwidth-unknown-cluster', 'spec.gateway.bandwidth.clusters[0].between[0]']]);
    expect(refusals(threeSites({ clusters: [{ between: ['fra-1', 'fra-1'], bandwidth: '1G' }] })))
      .toEqual([['gateway-bandwidth-same-cluster', 'spec.gateway.bandwidth.clusters[0].between']]);
    expect(refusals(threeSites({ sites: [{ between: ['fra', 'ams'], bandwidth: '1G' }, { between: ['fra', 'ams'], bandwidth: '2G' }] })))
      .toEqual([['gateway-bandwidth-duplicate-pair', 'spec.gateway.bandwidth.sites[1].between']]);
    const both = problemsOf(threeSites({ clusters: [{ between: ['fra-1', 'ams-1'], bandwidth: '1G' }, { between: ['ams-1', 'fra-1'], bandwidth: '2G' }] }));
    expect(both.map((p) => [p.code, p.path])).toEqual([['gateway-bandwidth-pair-both-orders', 'spec.gateway.bandwidth.clusters[1].between']]);
    expect(both[0].message).toContain('in the other order: a budget applies to both directions of a pair');
    expect(both[0].fix).toBe('keep one entry for the pair (spec.gateway.bandwidth.clusters[0]) and remove this one');
  });

  test('a cluster without a gateway cannot be in a pair: nothing would enforce its budget', () => {
    const [p, ...rest] = problemsOf(threeSites({ clusters: [{ between: ['fra-1', 'par-1'], bandwidth: '1G' }] }, (d) => { d.spec.clusters[3].datapath = 'direct'; }))
      .filter((x) => x.code.startsWith('gateway-bandwidth'));
    expect(rest).toEqual([]);
    expect([p.code, p.path]).toEqual(['gateway-bandwidth-unknown-cluster', 'spec.gateway.bandwidth.clusters[0].between[1]']);
    expect(p.message).toContain("cluster 'par-1' has no gateway (datapath direct)");
  });

  test('a budget below 1 byte/s is refused wherever it is written; a negative one is not a quantity', () => {
    expect(refusals(threeSites({ default: '0', clusters: [{ between: ['fra-1', 'ams-1'], bandwidth: '0.5' }] }))).toEqual([
      ['gateway-bandwidth-not-positive', 'spec.gateway.bandwidth.default'],
      ['gateway-bandwidth-not-positive', 'spec.gateway.bandwidth.clusters[0].bandwidth'],
    ]);
    expect(refusals(threeSites('0'))).toEqual([['gateway-bandwidth-not-positive', 'spec.gateway.bandwidth']]);
    expect(refusals(threeSites({ default: '-1M' })).map(([c]) => c)).toContain('schema-invalid');
  });

  test('per-site budgets in a fleet without sites are refused; per-cluster ones are not', () => {
    const doc = baseFleet({ gateway: { image: DIGEST, bandwidth: { sites: [{ between: ['default', 'default'], bandwidth: '1G' }] } } });
    const [p] = problemsOf(doc);
    expect([p.code, p.path]).toEqual(['gateway-bandwidth-sites-without-sites', 'spec.gateway.bandwidth.sites']);
    expect(p.fix).toContain('spec.gateway.bandwidth.default');
    expect(problemsOf(baseFleet({ gateway: { image: DIGEST, bandwidth: { clusters: [{ between: ['a', 'b'], bandwidth: '1G' }] } } }))).toEqual([]);
  });

  test('budgets per pair with payload tls are refused as the one quantity is (gateway-bandwidth-needs-splice)', () => {
    expect(refusals(threeSites({ sites: [{ between: ['fra', 'ams'], bandwidth: '250M' }] }, (d) => { d.spec.gateway.payload = 'tls'; })))
      .toEqual([['gateway-bandwidth-needs-splice', 'spec.gateway.bandwidth']]);
  });

  test('the schema names the field inside the form the value has (not zod\'s bare "Invalid input" of the union)', () => {
    expect(refusals(threeSites({ defaults: '1G' }))).toEqual([['unknown-field', 'spec.gateway.bandwidth']]);
    expect(refusals(threeSites({ sites: [{ between: ['fra'], bandwidth: '1G' }] }))).toEqual([['schema-invalid', 'spec.gateway.bandwidth.sites[0].between']]);
    const [n] = problemsOf(threeSites({ default: 125000000 }));
    expect([n.path, n.fix]).toEqual(['spec.gateway.bandwidth.default', 'quote it: default: "125000000"']);
    const [top] = problemsOf(threeSites(125000000));
    expect([top.path, top.fix]).toEqual(['spec.gateway.bandwidth', 'quote it: bandwidth: "125000000"']);
  });

  test('validate warns per budget that cannot carry the parallel migrations, naming the pair and its budget', () => {
    const plan = synthesizeFleet(threeSites(rules, (d) => { d.spec.migrationPolicy = { bandwidthPerMigration: '64Mi' }; }), { render: false }).plan;
    const w = (plan.gateway.warnings ?? []).filter((x) => x.code === 'gateway-bandwidth-below-migrations');
    // 5 x 64Mi = 335544320 bytes/s: the default (1G) and fra-fra (2G) carry it, fra-ams (250M) and fra-2-ams-1 (125M) do not
    expect(w.map((x) => x.path)).toEqual(['spec.gateway.bandwidth.sites[0].bandwidth', 'spec.gateway.bandwidth.clusters[0].bandwidth']);
    expect(w[0].message).toContain("the budget between sites fra and ams, spec.gateway.bandwidth.sites[0].bandwidth '250M' (bytes/s each way), cannot carry 5 parallel migrations");
    expect(w[0].fix).toContain('raise spec.gateway.bandwidth.sites[0].bandwidth to at least 335544320 bytes/s, or set migrationPolicy.parallelMigrationsPerCluster: 3');
    expect(w[1].message).toContain("the budget between clusters ams-1 and fra-2, spec.gateway.bandwidth.clusters[0].bandwidth '125M'");
    expect(w[1].fix).toContain('parallelMigrationsPerCluster: 1 or migrationPolicy.bandwidthPerMigration to at most 25000000 bytes/s');
  });
});
