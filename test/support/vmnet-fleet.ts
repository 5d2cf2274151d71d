/**
 * Fleets with VM networks for the test/vmnet-*.test.ts suites: two clusters on OVN-K v1.3.0 with
 * ipam-extensions, a dual-stack primary Layer2 network stretched by EVPN and a localnet VLAN network.
 * `vmFleet(patch)` returns a fresh document each call; `patch` edits it in place.
 */
import { FleetDocument } from '../../src/fleet/schema';
import { parseFleetDocument } from '../../src/fleet/load';

export type RawFleet = { apiVersion: string; kind: string; metadata: { name: string }; spec: Record<string, any> };

export const OVN = { version: 'v1.3.0', ipamExtensions: true };

export function rawVmFleet(): RawFleet {
  return {
    apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Fleet', metadata: { name: 'vmn' },
    spec: {
      kubevirt: { version: '1.8' },
      crossClusterNetwork: { attachment: { type: 'macvlan', master: 'eth2' }, addresses: { pool: ['192.168.60.16/28'], prefixLength: 24 } },
      migrationNetwork: { attachment: { type: 'bridge', bridge: 'br-mig' }, supernet: '10.60.0.0/16' },
      clusters: [{ name: 'fra-1', nodes: 3, ovnKubernetes: { ...OVN } }, { name: 'ams-1', nodes: 3, ovnKubernetes: { ...OVN } }],
      vmNetworks: [
        {
          name: 'blue', topology: 'layer2', namespaces: ['tenant-blue'], subnets: ['10.50.0.0/16', 'fd50::/64'], mtu: 1400,
          gateways: ['10.50.0.1', 'fd50::1'], infrastructure: ['10.50.0.0/29', 'fd50::/68'],
          reach: { type: 'evpn', vni: 5001, routeTarget: '65000:5001', vtep: 'fleet-vtep', vtepCidrs: ['192.0.2.0/24'] },
          mobileVms: ['tenant-blue/web-1', 'tenant-blue/db-1'],
        },
        {
          name: 'vlan100', topology: 'localnet', namespaces: ['tenant-blue', 'tenant-red'], physicalNetworkName: 'physnet-vms',
          bridge: { name: 'br-vms', port: 'bond1' }, vlan: 100, mtu: 1500, subnets: ['192.168.100.0/24'], reserved: ['192.168.100.1'],
          reach: { type: 'vlan' }, allocation: { slots: 4 },
        },
      ],
    },
  };
}

export function vmFleet(patch?: (f: RawFleet) => void): FleetDocument {
  const f = rawVmFleet();
  patch?.(f);
  return parseFleetDocument(f);
}
