/**
 * The VM-network examples in docs/fleet.md and docs/vm-networks.md are fleets that plan: each YAML block,
 * taken verbatim, dropped into a fleet, resolves without a problem (so the docs cannot drift from the schema).
 */
import * as fs from 'fs';
import * as path from 'path';
import { parse } from 'yaml';
import { resolveVmNetworks } from '../src/vmnet/plan';
import { vmFleet } from './support/vmnet-fleet';

const root = path.join(__dirname, '..');

/** The first ```yaml block after the line containing `marker`. */
function yamlAfter(file: string, marker: string): Record<string, any> {
  const text = fs.readFileSync(path.join(root, file), 'utf8');
  const from = text.indexOf(marker);
  expect(from).toBeGreaterThanOrEqual(0);
  const m = /```yaml\n([\s\S]*?)```/.exec(text.slice(from))!;
  return parse(m[1]);
}

test.each([
  ['docs/fleet.md', '## VM networks: addresses that survive a move', (y: Record<string, any>) => y],
  ['docs/vm-networks.md', '## Declaring them', (y: Record<string, any>) => y.spec],
])('%s: the example plans', (file, marker, specOf) => {
  const spec = specOf(yamlAfter(file, marker));
  const doc = vmFleet((f) => {
    f.spec.vmNetworks = spec.vmNetworks;
    f.spec.clusters = ['fra-1', 'ams-1'].map((name) => ({ ...spec.clusters.find((c: { name: string }) => c.name === 'fra-1'), name }));
  });
  const r = resolveVmNetworks(doc);
  expect(r.problems).toEqual([]);
  expect(r.perCluster.get('ams-1')!.networks.length).toBe(spec.vmNetworks.length);
});
