/**
 * The gateway runtime's listeners bind the wildcard of the family of the network each one serves, on that
 * network's interface only (issue 49: never an open relay): the tunnel listener (peer gateways, over the shared
 * cross-cluster network) the shared network's family on its interface (xc0), the intercept listener (handlers,
 * over the in-cluster migration network) the migration network's family on its interface (mig0), the admin
 * listener the pod network (eth0) and loopback. No generated listener binds a wildcard without its interface.
 *
 * Why not '::' for everything: on Linux an IPv4 wildcard ('0.0.0.0') accepts no IPv6 connection (an IPv6
 * fleet could not carry one byte: test/fleet-ipv6.netns.test.ts), while '::' needs IPv6 in the pod: on a
 * node booted with ipv6.disable=1 creating the IPv6 socket fails (EAFNOSUPPORT) and the gateway would not
 * start. A network of one family is only ever served on that family, so each listener asks for exactly it:
 * IPv4 fleets keep '0.0.0.0' (their output is unchanged), and '::' is asked for only where the pod holds an
 * IPv6 address on that network.
 */
import { gatewayConfigFor, trustAgentConfigFor } from '../src/gateway/config';
import { isWildcard } from '../src/gateway/runtime-config';
import { planFleetDocument } from '../src/addressing/planner';
import { CrossClusterMigrationMesh } from '../constructs/fleet/mesh';
import { MigrationProxy } from '../constructs/gateway/migration-proxy';
import { Testing } from 'cdk8s';
import * as fs from 'fs';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import * as path from 'path';
import { baseFleet } from './support/fleets';

type Spec = Parameters<typeof baseFleet>[0];
const v6Shared = { attachment: { type: 'macvlan' as const, master: 'eth2' }, addresses: { pool: ['fd00:5::100-fd00:5::1ff'], prefixLength: 64 } };
const v6Migration = { attachment: { type: 'bridge' as const, bridge: 'br-mig' }, supernet: 'fd00:200::/56' };

const listenOf = (spec: Spec) => {
  const r = planFleetDocument(baseFleet(spec));
  return r.plan.clusters.map((c) => {
    const { intercept, tunnel, admin } = gatewayConfigFor(r.plan, c).listen;
    expect(intercept.interface).toBe('mig0');
    expect(tunnel.interface).toBe('xc0');
    return { intercept: intercept.host, tunnel: tunnel.host, admin };
  });
};

describe('gateway listeners bind the wildcard of their network\'s family, on their network\'s interface', () => {
  const admin = { interface: 'eth0', port: 15090 };

  test('IPv4 shared and migration networks: 0.0.0.0 for both (unchanged)', () => {
    expect(listenOf({})).toEqual([
      { intercept: '0.0.0.0', tunnel: '0.0.0.0', admin },
      { intercept: '0.0.0.0', tunnel: '0.0.0.0', admin },
    ]);
  });

  test('IPv6 shared and migration networks: :: for both', () => {
    expect(listenOf({ crossClusterNetwork: v6Shared, migrationNetwork: v6Migration })).toEqual([
      { intercept: '::', tunnel: '::', admin },
      { intercept: '::', tunnel: '::', admin },
    ]);
  });

  test('mixed families: each listener follows its own network', () => {
    expect(listenOf({ migrationNetwork: v6Migration })[0]).toEqual({ intercept: '::', tunnel: '0.0.0.0', admin });
    expect(listenOf({ crossClusterNetwork: v6Shared })[0]).toEqual({ intercept: '0.0.0.0', tunnel: '::', admin });
  });

  test('the IPv6 example: every cluster listens on :: for intercept and tunnel', () => {
    const file = path.join(__dirname, '..', 'examples', 'ipv6.fleet.yaml');
    const r = planFleetDocument(loadFleetFile(file), { ledger: loadLedgerFile(ledgerPathFor(file)) });
    for (const c of r.plan.clusters) {
      const l = gatewayConfigFor(r.plan, c).listen;
      expect({ cluster: c.name, intercept: l.intercept.host, tunnel: l.tunnel.host }).toEqual({ cluster: c.name, intercept: '::', tunnel: '::' });
      expect({ intercept: l.intercept.interface, tunnel: l.tunnel.interface }).toEqual({ intercept: 'mig0', tunnel: 'xc0' });
    }
  });
});

/** Every listener of a runtime config, by field: a wildcard without an interface is open to every network of the pod. */
const wildListeners = (listen: Record<string, { host?: string; interface?: string }>): string[] =>
  Object.entries(listen).filter(([, e]) => e.host !== undefined && isWildcard(e.host) && !e.interface).map(([k, e]) => `${k}: ${e.host}`);

describe('no generated listener binds a wildcard without its interface (issue 49)', () => {
  const examples = fs.readdirSync(path.join(__dirname, '..', 'examples')).filter((f) => f.endsWith('.fleet.yaml'));

  test.each(examples)('%s: every gateway and trust agent config', (name) => {
    const file = path.join(__dirname, '..', 'examples', name);
    const r = planFleetDocument(loadFleetFile(file), { ledger: loadLedgerFile(ledgerPathFor(file)) });
    let seen = 0;
    for (const c of r.plan.clusters) {
      const configs = [
        ...(c.datapath === 'gateway' ? [gatewayConfigFor(r.plan, c)] : []),
        ...(c.trustAgents.length > 0 ? [trustAgentConfigFor(r.plan, c)] : []),
      ];
      for (const cfg of configs) {
        seen++;
        expect({ cluster: c.name, wild: wildListeners(cfg.listen) }).toEqual({ cluster: c.name, wild: [] });
        expect(cfg.listen.admin).toEqual({ interface: 'eth0', port: 15090 }); // the pod network and loopback: never mig0 or xc0
        expect(cfg.listen.tunnel.interface).toBe('xc0');
      }
      if (c.datapath === 'gateway') expect(gatewayConfigFor(r.plan, c).listen.intercept.interface).toBe('mig0');
    }
    expect(seen).toBeGreaterThan(0);
  });

  test("the trust agent's intercept listener is loopback, its tunnel listener the shared interface", () => {
    const r = planFleetDocument(baseFleet());
    const c = { ...r.plan.clusters[0], trustAgents: [{ replica: 0, crossCluster: '192.168.50.200/24' }] } as never;
    const l = trustAgentConfigFor(r.plan, c, 'shared7').listen;
    expect(l.intercept.host).toBe('127.0.0.1');
    expect(l.intercept.interface).toBeUndefined();
    expect(l.tunnel).toEqual({ host: '0.0.0.0', interface: 'shared7', port: 15443 });
  });

  test('custom interface names reach the listeners (and so the REDIRECT rules) and the Multus selection alike', () => {
    const mesh = new CrossClusterMigrationMesh(Testing.app(), 'm', { fleet: baseFleet() });
    const chart = Testing.chart();
    const p = new MigrationProxy(chart, 'p', { plan: mesh.plan, cluster: mesh.plan.clusters[0], interfaces: { inCluster: 'lm-in', crossCluster: 'lm-xc' } });
    expect(p.config.listen.intercept).toEqual({ host: '0.0.0.0', interface: 'lm-in', port: 15001 });
    expect(p.config.listen.tunnel).toEqual({ host: '0.0.0.0', interface: 'lm-xc', port: 15443 });
    const cm = Testing.synth(chart).find((o) => o.kind === 'ConfigMap');
    expect(JSON.parse(cm.data['config.json']).listen.intercept.interface).toBe('lm-in');
  });

  test('interface names the runtime would refuse, or the pod network\'s, are refused with the field and the fix', () => {
    const r = planFleetDocument(baseFleet());
    expect(() => gatewayConfigFor(r.plan, r.plan.clusters[0], { inCluster: 'mig0', crossCluster: 'mig0' })).toThrow(/interfaces.*both 'mig0'.*different names/);
    expect(() => gatewayConfigFor(r.plan, r.plan.clusters[0], { inCluster: 'eth0', crossCluster: 'xc0' })).toThrow(/interfaces.*eth0.*pod network/);
    expect(() => gatewayConfigFor(r.plan, r.plan.clusters[0], { inCluster: 'a-very-long-ifname', crossCluster: 'xc0' })).toThrow(/interfaces\.inCluster.*1-15 characters/);
  });
});
