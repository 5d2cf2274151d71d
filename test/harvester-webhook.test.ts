/**
 * Harvester's own test cases for the vm-migration-network setting and the shared network helpers, run
 * through our checks (src/delivery/harvester.ts). Our verdict must agree with Harvester's, or be stricter where
 * the table says so. Upstream:
 * - harvester/harvester @3d63c2af15db747e4a803b18b7832049b88cb00e pkg/webhook/util/ip_test.go
 *   (Test_ipAddressRange) and pkg/webhook/util/ip.go (GetUsableIPAddressesCount);
 * - same commit, pkg/webhook/resources/setting/validator_test.go (Test_validateStorageNetworkConfig,
 *   Test_validateUpdateRWXNetwork, Test_checkRWXNetworkRangeValid, Test_validateUpdateVMMigrationNetwork_IPv6OOM:
 *   the network cases share validateNetworkHelper with vm-migration-network) and validator.go
 *   (checkNetworkVlanValid, checkNetworkRangeValid, validateIncludeExcludeRanges, checkVMMigrationNetworkRangeValid);
 * - harvester/harvester-network-controller @b3ad6a1be1d18776a4d492805d04053e2a89bacc
 *   pkg/webhook/clusternetwork/validator.go (name length = 15 - len("-br")).
 */
import * as path from 'path';
import { FleetValidationError } from '../src/base/errors';
import { FleetDocument } from '../src/fleet/schema';
import { HARVESTER_MAX_CLUSTER_NETWORK_NAME, HarvesterMigrationNetworkValue, checkHarvesterValue, harvesterUsableCount } from '../src/delivery/harvester';
import { loadFleetFile } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';

const ctx = { path: 'spec.clusters[0]', datapathPath: 'spec.datapath' };

describe('ip_test.go Test_ipAddressRange: usable count < 16 exactly when Harvester expects an error', () => {
  // [upstream name, range, exclude, expectedErr (count < 16), count]
  const cases: [string, string, string[], boolean, number][] = [
    ['exclude a subset of include range,returns > MinallocatableIPAddrs addresses', '192.168.2.0/24', ['192.168.2.1/30'], false, 251],
    ['exclude a subset of include range,returns > MinallocatableIPAddrs addresses (/28)', '192.168.2.0/24', ['192.168.2.1/28'], false, 239],
    ['valid include range,returns > MinallocatableIPAddrs addresses', '192.168.2.0/27', [], false, 30],
    ['exclude all from include subnet,returns no allocatable addresses', '192.168.2.0/24', ['192.168.2.0/24'], true, 0],
    ['exclude all from include subnet,returns no allocatable addresses (/30)', '192.168.2.0/30', ['192.168.2.1/30'], true, 0],
    ['no allocatable ip addresses in include range (/32)', '192.168.2.0/32', [], true, 0],
    ['no allocatable ip addresses in include range (/31)', '192.168.2.0/31', [], true, 0],
    ['IPv6 /120 subnet returns > 16 usable addresses', '2001:db8::/120', [], false, 255],
    ['IPv6 /128 subnet returns 0 usable addresses', '2001:db8::1/128', [], true, 0],
    ['IPv6 /120 with full exclusion returns 0 usable addresses', '2001:db8::/120', ['2001:db8::/120'], true, 0],
  ];
  test.each(cases)('%s', (_name, range, exclude, expectedErr, count) => {
    const n = harvesterUsableCount(range, exclude)!;
    expect(n < 16).toBe(expectedErr);
    expect(n).toBe(count);
  });

  test('an exclude written with host bits is walked from its address, like net.ParseCIDR + the loop in ip.go', () => {
    // 192.168.2.1/30 excludes .1 .2 .3, not .0: .0 was never usable (network address)
    expect(harvesterUsableCount('192.168.2.0/24', ['192.168.2.1/30'])).toBe(254 - 3);
    expect(harvesterUsableCount('192.168.2.0/24', ['192.168.2.2/30'])).toBe(254 - 2);
  });

  test('Test_checkRWXNetworkRangeValid: /27 minus an exclude /28 at its start leaves 15 (the upstream comment says 16; the network address was never counted)', () => {
    expect(harvesterUsableCount('192.168.0.0/27', ['192.168.0.0/28'])).toBe(15);
  });

  test('an IPv6 /64 is counted without enumerating it (Harvester guards this with its IPv4-only rule; so do we)', () => {
    expect(harvesterUsableCount('2001:db8::/64')).toBe(2 ** 64 - 1);
    expect(checkHarvesterValue({ clusterNetwork: 'mgmt', vlan: 100, range: '2001:db8::/64' }, 1, 1, ctx).problems.map((p) => p.message).join()).toMatch(/IPv4 only/);
  });

  test('unparseable input is not counted', () => {
    expect(harvesterUsableCount('not-a-cidr')).toBeUndefined();
    expect(harvesterUsableCount('10.0.0.0/24', ['10.0.0.0/33'])).toBeUndefined();
  });
});

describe('the setting webhook cases, through checkHarvesterValue (agree, or stricter where noted)', () => {
  const verdict = (v: HarvesterMigrationNetworkValue, nodes = 1, needed = 1) => checkHarvesterValue(v, nodes, needed, ctx).problems.map((p) => p.message);
  // [upstream case, value, Harvester refuses, ours refuses, note]
  const cases: [string, HarvesterMigrationNetworkValue, boolean, boolean, string][] = [
    ['fail with invalid vlan id 4095', { clusterNetwork: 'cn', vlan: 4095, range: '192.168.50.0/24' }, true, true, ''],
    ['Test_validateUpdateRWXNetwork: vlan 5000', { clusterNetwork: 'mgmt', vlan: 5000, range: '192.168.0.0/24' }, true, true, ''],
    ['fail with mgmt clusternetwork, vlan 1', { clusterNetwork: 'mgmt', vlan: 1, range: '10.0.0.0/24' }, true, true, ''],
    ['mgmt clusternetwork untagged (vlan 0)', { clusterNetwork: 'mgmt', range: '10.0.0.0/24' }, true, true, ''],
    ['update mgmt vlan 1 -> 2 is allowed', { clusterNetwork: 'mgmt', vlan: 2, range: '10.0.0.0/24' }, false, false, ''],
    ['IPv6 /120 range rejected by To4() guard', { clusterNetwork: 'mgmt', vlan: 100, range: '2001:db8::/120' }, true, true, ''],
    ['IPv6 /64 range rejected by To4() guard', { clusterNetwork: 'mgmt', vlan: 100, range: 'fd00::/64' }, true, true, ''],
    ['range not-a-cidr', { clusterNetwork: 'mgmt', vlan: 100, range: 'not-a-cidr' }, true, true, ''],
    ['valid: vlan 51, /24, two /32 excludes', { clusterNetwork: 'test-cn', vlan: 51, range: '192.168.50.0/24', exclude: ['192.168.50.1/32', '192.168.50.2/32'] }, false, false, ''],
    ['valid: vlan 201, exclude one /32', { clusterNetwork: 'rwx', vlan: 201, range: '192.168.201.0/24', exclude: ['192.168.201.1/32'] }, false, false, ''],
    // checkNetworkRangeValid / validateIncludeExcludeRanges
    ['range with host bits: "range should be subnet CIDR"', { clusterNetwork: 'cn', range: '192.168.50.1/24' }, true, true, ''],
    ['range wider than /16', { clusterNetwork: 'cn', range: '10.0.0.0/15' }, true, true, ''],
    ['exclude wider than /16', { clusterNetwork: 'cn', range: '10.0.0.0/16', exclude: ['10.0.0.0/15'] }, true, true, ''],
    ['exclude outside the range', { clusterNetwork: 'cn', range: '10.0.0.0/24', exclude: ['10.0.1.0/28'] }, true, true, ''],
    ['exclude as large as the range', { clusterNetwork: 'cn', range: '10.0.0.0/24', exclude: ['10.0.0.0/24'] }, true, true, ''],
    ['two excludes overlapping each other', { clusterNetwork: 'cn', range: '10.0.0.0/24', exclude: ['10.0.0.0/28', '10.0.0.8/29'] }, true, true, ''],
    ['exclude written with host bits', { clusterNetwork: 'cn', range: '10.0.0.0/24', exclude: ['10.0.0.1/30'] }, false, true, 'stricter: we write masked excludes only and refuse others'],
    // ClusterNetwork name: the webhook of the network controller refuses the ClusterNetwork itself
    [`ClusterNetwork name of ${HARVESTER_MAX_CLUSTER_NETWORK_NAME} characters`, { clusterNetwork: 'a'.repeat(12), range: '10.0.0.0/24' }, false, false, ''],
    [`ClusterNetwork name of ${HARVESTER_MAX_CLUSTER_NETWORK_NAME + 1} characters (bridge name 16 > 15)`, { clusterNetwork: 'a'.repeat(13), range: '10.0.0.0/24' }, true, true, ''],
  ];
  test.each(cases)('%s', (_name, value, harvester, ours, note) => {
    const refused = verdict(value).length > 0;
    expect(refused).toBe(ours);
    if (!note) expect(refused).toBe(harvester); // agree unless stricter, said in the note
    else expect(ours && !harvester).toBe(true);
  });

  test('checkVMMigrationNetworkRangeValid: usable >= non-witness nodes; a /31 range has none (Harvester drops first and last)', () => {
    expect(verdict({ clusterNetwork: 'cn', range: '10.0.0.0/30' }, 2, 2)).toEqual([]);
    expect(verdict({ clusterNetwork: 'cn', range: '10.0.0.0/30' }, 3, 3)).toEqual([expect.stringContaining('2 usable addresses < 3 non-witness nodes')]);
    expect(checkHarvesterValue({ clusterNetwork: 'cn', range: '10.0.0.0/31' }, 1, 1, ctx).usable).toBe(0);
    expect(verdict({ clusterNetwork: 'cn', range: '10.0.0.0/31' }, 1, 1)).toEqual([expect.stringContaining('0 usable addresses < 1 non-witness nodes')]);
    expect(checkHarvesterValue({ clusterNetwork: 'cn', range: '10.0.0.4/32' }, 1, 1, ctx).usable).toBe(0);
  });

  test('the ClusterNetwork problem names the field and the fix', () => {
    const p = checkHarvesterValue({ clusterNetwork: 'migration-net', range: '10.0.0.0/24' }, 1, 1, ctx).problems;
    expect(p).toEqual([{ code: 'harvester-cluster-network-name', path: 'spec.clusters[0].harvester.clusterNetwork', message: expect.stringContaining("bridge 'migration-net-br' must fit the 15-character"), fix: 'use a ClusterNetwork name of at most 12 characters' }]);
  });
});

test('a fleet naming a 13-character ClusterNetwork is refused before anything is written', () => {
  const d: FleetDocument = JSON.parse(JSON.stringify(loadFleetFile(path.join(__dirname, '..', 'examples', 'harvester.fleet.yaml'))));
  d.spec.clusters[0].harvester = { clusterNetwork: 'migration-net' };
  let problems: { path: string }[] = [];
  try { synthesizeFleet(d); } catch (e) { if (e instanceof FleetValidationError) problems = [...e.problems]; else throw e; }
  expect(problems.map((p) => p.path)).toEqual(['spec.clusters[0].harvester.clusterNetwork']);
});
