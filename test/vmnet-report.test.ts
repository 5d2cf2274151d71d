/**
 * The VM networks in `plan` and in the fleet picture (issue 40 item 7): per network the split, each
 * cluster's slot and slice with its range count against the CRD's 25, the mobile VMs; the picture draws
 * each cluster's slice to scale and leaves pictures of fleets without VM networks byte for byte.
 */
import * as fs from 'fs';
import * as path from 'path';
import { planFleetDocument } from '../src/addressing/planner';
import { planReport, renderPlanTable } from '../src/report/plan-report';
import { renderFleetSvg } from '../src/report/fleet-svg';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { vmFleet } from './support/vmnet-fleet';

const report = planReport(planFleetDocument(vmFleet()).plan);

test('the report has one row per network with each cluster\'s slot, slice and range count', () => {
  const [blue, vlan] = report.vmNetworks!;
  expect(blue).toMatchObject({ name: 'blue', topology: 'Layer2', reach: 'evpn', reachDetail: 'VNI 5001 RT 65000:5001', keepsAddress: 'pinned', spareSlots: 6 });
  expect(blue.clusters).toEqual([
    { cluster: 'fra-1', served: true, left: false, slot: 0, slice: ['10.50.16.0/20', 'fd50::1000:0:0:0/68'], rangeEntries: 15 },
    { cluster: 'ams-1', served: true, left: false, slot: 1, slice: ['10.50.32.0/20', 'fd50::2000:0:0:0/68'], rangeEntries: 17 },
  ]);
  expect(blue.subnets[0].slots.slice(0, 3)).toEqual([{ slot: 0, cidr: '10.50.16.0/20', cluster: 'fra-1' }, { slot: 1, cidr: '10.50.32.0/20', cluster: 'ams-1' }, { slot: 2, cidr: '10.50.48.0/20' }]);
  expect(blue.mobileVms).toEqual([{ vm: 'tenant-blue/web-1', addresses: ['10.50.240.0', 'fd50::f000:0:0:0'] }, { vm: 'tenant-blue/db-1', addresses: ['10.50.240.1', 'fd50::f000:0:0:1'] }]);
  expect(vlan).toMatchObject({ reach: 'vlan', reachDetail: 'VLAN 100', keepsAddress: 'no' });
});

test('the plan table prints them after the fleet', () => {
  const t = renderPlanTable(report);
  expect(t).toContain('VM networks (docs/vm-networks.md):');
  expect(t).toContain('    fra-1       0  yes      15/25  10.50.16.0/20, fd50::1000:0:0:0/68\n');
  expect(t).toContain('    mobile VM tenant-blue/web-1: 10.50.240.0, fd50::f000:0:0:0');
  expect(t).toContain('vlan100: Localnet secondary, reach vlan (VLAN 100), mtu 1500, namespaces tenant-blue, tenant-red; a moved VM gets a new address');
});

test('the picture draws each cluster\'s slice where its addresses are, and grows to hold the band', () => {
  const svg = renderFleetSvg(report);
  const root = /<svg [^>]*height="(\d+)" viewBox="0 0 (\d+) (\d+)">/.exec(svg)!;
  expect(root[1]).toBe(root[3]);
  const without = renderFleetSvg({ ...report, vmNetworks: undefined });
  expect(Number(root[1])).toBeGreaterThan(Number(/height="(\d+)"/.exec(without)![1]));
  // 10.50.16.0/20 is the second sixteenth of 10.50.0.0/16: x = 24 + (1/16) * 952
  expect(svg).toContain('<rect x="83.5" y="');
  expect(svg).toMatch(/<title>fra-1: 10\.50\.16\.0\/20<\/title>/);
  expect(svg).toMatch(/<title>mobile: 10\.50\.240\.0\/20<\/title>/);
  expect(svg.endsWith('</svg>\n')).toBe(true);
});

test('fleets without VM networks: the report has none and the picture is unchanged', () => {
  const file = path.join(__dirname, '..', 'examples', 'two-sites.fleet.yaml');
  const r = planReport(planFleetDocument(loadFleetFile(file), { ledger: loadLedgerFile(ledgerPathFor(file)) }).plan);
  expect(r.vmNetworks).toBeUndefined();
  expect(renderFleetSvg(r)).toBe(fs.readFileSync(path.join(__dirname, '..', 'dist', 'two-sites', 'fleet.svg'), 'utf8'));
});

test('a cluster that left the fleet is listed as left, its slot still held', () => {
  const first = planFleetDocument(vmFleet());
  const r = planReport(planFleetDocument(vmFleet((f) => { f.spec.clusters.pop(); }), { ledger: first.ledger }).plan);
  expect(r.vmNetworks![0].clusters.map((c) => [c.cluster, c.slot, c.served, c.left])).toEqual([['fra-1', 0, true, false], ['ams-1', 1, false, true]]);
  expect(renderPlanTable(r)).toContain('    ams-1       1  left      0/25  10.50.32.0/20, fd50::2000:0:0:0/68\n');
});
