/**
 * The gateway runtime's listeners bind the wildcard of the family of the network each one serves: the
 * tunnel listener (peer gateways, over the shared cross-cluster network) the shared network's family, the
 * intercept listener (handlers, over the in-cluster migration network) the migration network's family.
 *
 * Why not '::' for everything: on Linux an IPv4 wildcard ('0.0.0.0') accepts no IPv6 connection (an IPv6
 * fleet could not carry one byte: test/fleet-ipv6.netns.test.ts), while '::' needs IPv6 in the pod: on a
 * node booted with ipv6.disable=1 creating the IPv6 socket fails (EAFNOSUPPORT) and the gateway would not
 * start. A network of one family is only ever served on that family, so each listener asks for exactly it:
 * IPv4 fleets keep '0.0.0.0' (their output is unchanged), and '::' is asked for only where the pod holds an
 * IPv6 address on that network.
 */
import { gatewayConfigFor } from '../src/gateway/config';
import { planFleetDocument } from '../src/addressing/planner';
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
    return { intercept: intercept.host, tunnel: tunnel.host, admin };
  });
};

describe('gateway listeners bind the wildcard of their network\'s family', () => {
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
    }
  });
});
