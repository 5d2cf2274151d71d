/**
 * `plan` lists what the CNI plugins need from the nodes, per NAD (see test/cni-prerequisites.netns.test.ts for
 * the same rules shown with the real plugins, and docs/node-prerequisites.md).
 */
import * as path from 'path';
import { attachmentRequirements, nodePrerequisites } from '../src/addressing/cni';
import { main } from '../cli/cli';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { planFleetDocument } from '../src/addressing/planner';
import { synthesizeFleet } from '../cli/synthesize-fleet';

const EX = path.join(__dirname, '..', 'examples');
const planOf = (f: string) => planFleetDocument(loadFleetFile(path.join(EX, f)), { ledger: loadLedgerFile(ledgerPathFor(path.join(EX, f))) }).plan;

test('three-sites-vlan: every NAD with its clusters, pods and the bridge, VLAN filtering, VLAN 1 and MTU lines', () => {
  const list = nodePrerequisites(planOf('three-sites-vlan.fleet.yaml'));
  expect(list.map((p) => [p.network, p.pods, p.clusters.join(',')])).toEqual([
    ['lm-migration', 'virt-handler, sync controller', 'ams-1,fra-1,par-1'],
    ['lm-migration-gateway', 'gateway', 'ams-1,fra-1,par-1'],
    ['lm-crosscluster', 'gateway (shared network)', 'ams-1,fra-1,par-1'],
  ]);
  const xc = list[2].requirements.join('\n');
  expect(xc).toMatch(/bridge br-xc: absent \(the plugin creates it with vlan_filtering 1\) or created with vlan_filtering 1/);
  expect(xc).toMatch(/VLAN 1/);
  expect(xc).toMatch(/MTU >= 9000/);
});

test('harvester (no gateways): the shared network lists the trust agents of every cluster beside the handlers as its users', () => {
  const list = nodePrerequisites(planOf('harvester.fleet.yaml'));
  const xc = list.find((p) => p.network === 'lm-crosscluster');
  expect(xc?.pods).toBe('virt-handler, sync controller (shared network); trust agent (shared network)');
  expect(xc?.clusters).toEqual(['hv-a', 'hv-b', 'kv-c']);
});

test('macvlan and ipvlan: master present, master MTU >= attachment MTU (the plugin\'s ADD error quoted); IPv6 adds the DAD line', () => {
  expect(attachmentRequirements({ type: 'macvlan', master: 'eth2', mtu: 9000 }, false).join('\n')).toMatch(/eth2: MTU >= 9000 \(ADD fails otherwise: "invalid MTU 9000, must be \[0, master MTU/);
  expect(attachmentRequirements({ type: 'ipvlan', master: 'eth3' }, true).join('\n')).toMatch(/tentative/);
  expect(attachmentRequirements({ type: 'bridge', bridge: 'br0' }, true).join('\n')).not.toMatch(/tentative/); // the bridge plugin turns DAD off
  expect(attachmentRequirements({ type: 'host-device', device: 'ens5' }, false).join('\n')).toMatch(/one pod per node/);
});

test('`migration-mesh plan` prints the node prerequisites after the table, and puts them in the JSON', () => {
  let text = '';
  const code = main(['plan', path.join(EX, 'three-sites-vlan.fleet.yaml')], (s: string) => { text += s; });
  expect(code).toBe(0);
  expect(text).toContain('Node prerequisites (what the CNI plugins need; docs/node-prerequisites.md):');
  expect(text).toContain('  lm-crosscluster (gateway (shared network)) on ams-1, fra-1, par-1:');
  let json = '';
  main(['plan', path.join(EX, 'three-sites-vlan.fleet.yaml'), '--output', 'json'], (s: string) => { json += s; });
  expect(JSON.parse(json).nodePrerequisites).toHaveLength(3);
});

/** The CNI configs of every NAD the example's synthesis emits, parsed. */
function nadConfigs(f: string): Record<string, unknown>[] {
  const file = path.join(EX, f);
  const r = synthesizeFleet(loadFleetFile(file), { ledger: loadLedgerFile(ledgerPathFor(file)) });
  return [...r.objects.values()].flat().filter((o) => o.kind === 'NetworkAttachmentDefinition').map((o) => JSON.parse(o.spec.config));
}

test('a bridge NAD with a VLAN takes its pod ports out of VLAN 1 itself (preserveDefaultVlan: false); the VLAN 1 caveat is left for plugins before v1.3', () => {
  const vlanned = nadConfigs('three-sites-vlan.fleet.yaml').filter((c) => c.type === 'bridge' && c.vlan);
  expect(vlanned.length).toBeGreaterThan(0);
  for (const c of vlanned) expect(c.preserveDefaultVlan).toBe(false);
  const unvlanned = [...nadConfigs('ipv6.fleet.yaml'), ...nadConfigs('three-sites-vlan.fleet.yaml')].filter((c) => !c.vlan);
  expect(unvlanned.length).toBeGreaterThan(0);
  for (const c of unvlanned) expect(c).not.toHaveProperty('preserveDefaultVlan');
  const req = attachmentRequirements({ type: 'bridge', bridge: 'br-xc', vlan: 400 }, false).join('\n');
  expect(req).toMatch(/VLAN 1\b.*v1\.1-v1\.2/);
  expect(req).not.toMatch(/v1\.3-v1\.7/);
});
