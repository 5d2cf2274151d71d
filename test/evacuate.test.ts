/**
 * Issue 51 item 2: a cluster evacuation planned across the fleet. The committed example drains east's 20 VMs over
 * west, north and south (examples/evacuate/); the plan must be what the planner writes today (byte for byte, and the
 * same whatever order the inventory lists things in), fit every target node, keep every wave within the limits,
 * send each VM only where its storage and networks are mapped, and pass the fleet's own move checks.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as yaml from 'yaml';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { evacuate, evacuationDocument } from '../cli/evacuate';
import { FleetDocument } from '../src/fleet/schema';
import { Inventory, inventorySchema, loadInventoryFile } from '../src/forklift/inventory';
import { launcherOverhead, planEvacuation } from '../src/forklift/evacuate';
import { parseMovesText } from '../src/forklift/moves';
import { quantityValue } from '../src/base/quantity';
import { FleetValidationError } from '../src/base/errors';

const DIR = path.join(__dirname, '..', 'examples', 'evacuate');
const FLEET = path.join(DIR, 'drain.fleet.yaml');
const INVENTORY = path.join(DIR, 'drain-east.inventory.yaml');
const doc = yaml.parse(fs.readFileSync(FLEET, 'utf8')) as FleetDocument;
const inventory = loadInventoryFile(INVENTORY, 'drain');
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x)) as T;
const q = (s: string | undefined) => quantityValue(s ?? '0') ?? 0;

describe('the committed evacuation of east', () => {
  const plan = planEvacuation(doc, inventory, 'east');

  test('every VM is placed, and the committed moves file is what the planner writes', () => {
    expect(plan.problems).toEqual([]);
    expect(plan.placements).toHaveLength(20);
    expect(evacuationDocument('drain', plan)).toBe(fs.readFileSync(path.join(DIR, 'drain.moves.yaml'), 'utf8'));
  });

  test('deterministic: the inventory\'s VMs, clusters and nodes in another order give the same moves', () => {
    const shuffled: Inventory = clone(inventory);
    shuffled.clusters.east.vms = [...shuffled.clusters.east.vms!].reverse();
    for (const c of Object.values(shuffled.clusters)) c.nodes.reverse();
    shuffled.clusters = Object.fromEntries(Object.entries(shuffled.clusters).reverse());
    expect(evacuationDocument('drain', planEvacuation(doc, shuffled, 'east'))).toBe(evacuationDocument('drain', plan));
  });

  test('every target node keeps room: what lands on it, with KubeVirt\'s overhead, fits its free CPU and memory', () => {
    for (const [cluster, c] of Object.entries(inventory.clusters).filter(([n]) => n !== 'east')) {
      for (const node of c.nodes) {
        const landed = plan.placements.filter((p) => p.to === cluster && p.node === node.name);
        const memory = landed.reduce((a, p) => a + q(p.vm.memory) + launcherOverhead(q(p.vm.memory), p.vm.vcpus ?? 1), 0);
        const cpu = landed.reduce((a, p) => a + q(p.vm.cpu), 0);
        expect(memory).toBeLessThanOrEqual(q(node.allocatable.memory) - q(node.requested?.memory));
        expect(cpu).toBeLessThanOrEqual(q(node.allocatable.cpu) - q(node.requested?.cpu));
      }
    }
  });

  test('every wave within the limits: 4 at once out of east and into each target, 2 per source node', () => {
    expect(plan.limits).toEqual({ perCluster: 4, perNode: 2 });
    const waves = [...new Set(plan.placements.map((p) => p.wave))];
    expect(waves).toEqual([1, 2, 3, 4, 5]);
    for (const w of waves) {
      const ps = plan.placements.filter((p) => p.wave === w);
      expect(ps.length).toBeLessThanOrEqual(4);
      for (const count of Object.values(countBy(ps.map((p) => p.to)))) expect(count).toBeLessThanOrEqual(4);
      for (const count of Object.values(countBy(ps.map((p) => p.vm.node)))) expect(count).toBeLessThanOrEqual(2);
    }
  });

  test('reach: the databases (local-lvm, db-net) go only to west, where both are mapped; the largest VMs move first', () => {
    const dbs = plan.placements.filter((p) => p.vm.name.startsWith('db'));
    expect(dbs.map((p) => p.to)).toEqual(['west', 'west', 'west', 'west']);
    expect(dbs.map((p) => p.wave)).toEqual([1, 1, 1, 1]);
    const sizes = plan.placements.map((p) => q(p.vm.memory));
    expect(sizes).toEqual([...sizes].sort((a, b) => b - a));
  });

  test('the moves pass the fleet\'s move checks (a batch per wave, the VM\'s labels, memory and CPU limit carried)', () => {
    const moves = parseMovesText(fs.readFileSync(path.join(DIR, 'drain.moves.yaml'), 'utf8'), 'drain.moves.yaml', 'drain');
    const r = synthesizeFleet(doc, { render: false, moves });
    expect(r.forklift.plan!.plans.map((p) => p.batch)).toEqual(expect.arrayContaining(['drain-east-wave-1', 'drain-east-wave-5']));
    expect(moves.moves.find((m) => m.vm === 'db1')).toMatchObject({ vmiLabels: { 'app': 'db', 'example.org/vm': 'db1' }, memory: '16Gi' });
    expect(r.forklift.warnings.filter((w) => w.code === 'forklift/move-multifd-off').map((w) => w.path)).toEqual([expect.stringMatching(/moves\[\d+\]\.cpuLimit$/)]);
  });
});

describe('refusals', () => {
  test('a VM no target can take: refused with each target\'s reason, nothing placed for it', () => {
    const inv: Inventory = clone(inventory);
    inv.clusters.east.vms!.push({ name: 'huge', namespace: 'vms', node: 'east-1', cpu: '8', memory: '512Gi', storageClasses: ['ceph-rbd'] });
    inv.clusters.east.vms!.push({ name: 'pinned', namespace: 'vms', node: 'east-2', cpu: '1', memory: '1Gi', nodeSelector: { 'cpu-model.node.kubevirt.io/Sapphirerapids': 'true' } });
    const p = planEvacuation(doc, inv, 'east');
    expect(p.problems.map((x) => `${x.code} ${x.path}`)).toEqual(['forklift/evacuate-unplaced clusters.east.vms[20]', 'forklift/evacuate-unplaced clusters.east.vms[21]']);
    expect(p.problems[0].message).toMatch(/^vms\/huge \(512Gi, 8 CPU\) has no target: north: no node has 8 CPU and 513\.4 GiB .*; south: .*; west: /);
    expect(p.problems[1].message).toContain('north: no schedulable node carries its nodeSelector; south: no schedulable node carries its nodeSelector; west: no schedulable node carries its nodeSelector');
    expect(p.placements).toHaveLength(20);
  });

  test('the readiness compute predicate: CPU model, machine type, taints against tolerations (src/report/readiness.ts nodeRefusal)', () => {
    const inv: Inventory = clone(inventory);
    const base = { namespace: 'vms', node: 'east-1', cpu: '1', memory: '1Gi', storageClasses: ['ceph-rbd'] };
    inv.clusters.east.vms = [
      { ...base, name: 'spr', cpuModel: 'Sapphirerapids' },
      { ...base, name: 'clx', cpuModel: 'Cascadelake-Server', machineType: 'pc-q35-rhel9.6.0' },
      { ...base, name: 'clx-tol', cpuModel: 'Cascadelake-Server', tolerations: [{ key: 'maint', operator: 'Exists' }] },
    ];
    for (const c of ['north', 'south', 'west']) {
      // labelled as KubeVirt's node labeller labels a Cascade Lake host (the committed targets carry no CPU labels)
      for (const n of inv.clusters[c].nodes) { n.taints = [{ key: 'maint', effect: 'NoSchedule' }]; n.labels = { ...n.labels, 'cpu-model.node.kubevirt.io/Cascadelake-Server': 'true' }; }
    }
    const north0 = inv.clusters.north.nodes[0];
    const p = planEvacuation(doc, inv, 'east');
    expect(p.problems.map((x) => x.message.split(':')[0])).toEqual(['vms/clx (1Gi, 1 CPU) has no target', 'vms/spr (1Gi, 1 CPU) has no target']);
    expect(p.problems[1].message).toContain(`north: no schedulable node carries its nodeSelector or can run it (${north0.name}: taint maint:NoSchedule not tolerated)`);
    expect(p.placements.map((x) => x.vm.name)).toEqual(['clx-tol']);
    // untainted: the named model is on every node, the other is on none; the machine type nowhere labelled
    for (const c of ['north', 'south', 'west']) for (const n of inv.clusters[c].nodes) delete n.taints;
    const q2 = planEvacuation(doc, inv, 'east');
    expect(q2.problems[1].message).toContain(`(${north0.name}: no label cpu-model.node.kubevirt.io/Sapphirerapids=true)`);
    expect(q2.problems[0].message).toContain(`(${north0.name}: no label machine-type.node.kubevirt.io/pc-q35-rhel9.6.0=true)`);
    expect(q2.placements.map((x) => x.vm.name)).toEqual(['clx-tol']);
  });

  test('a VM whose storage class no target maps: named with the fix', () => {
    const inv: Inventory = clone(inventory);
    inv.clusters.east.vms = [{ name: 'nfs1', namespace: 'vms', node: 'east-1', cpu: '1', memory: '1Gi', storageClasses: ['nfs'] }];
    const p = planEvacuation(doc, inv, 'east');
    expect(p.problems[0].message).toContain('north: no storage mapping for nfs (spec.forklift.storage)');
    expect(p.problems[0].fix).toContain('storage mapping');
  });

  test('an unknown cluster, or one missing from the inventory: refused before planning', () => {
    expect(planEvacuation(doc, inventory, 'mars').problems.map((x) => x.code)).toEqual(['forklift/evacuate-cluster']);
    const inv: Inventory = clone(inventory);
    delete inv.clusters.south; delete inv.clusters.west; delete inv.clusters.north;
    expect(planEvacuation(doc, inv, 'east').problems[0].message).toContain('no other cluster of east\'s migration group (gateway) is in the inventory');
  });

  test('a gateway budget per peer caps the moves into each target per wave at what it carries at their bandwidth', () => {
    // crossCluster 250M over 4 parallel migrations: 62.5 MB/s each (rounded down to a KiB); a 130M budget carries 2
    const budgeted = clone(doc) as any;
    budgeted.spec.gateway = { ...budgeted.spec.gateway, bandwidth: '130M' };
    const p = planEvacuation(budgeted, inventory, 'east');
    const plan = planEvacuation(doc, inventory, 'east');
    expect(p.limits).toEqual({ perCluster: 4, perNode: 2, perPeer: { north: 2, south: 2, west: 2 } });
    expect(p.placements.map((x) => x.vm.name).sort()).toEqual(plan.placements.map((x) => x.vm.name).sort());
    const waves = [...new Set(p.placements.map((x) => x.wave))];
    for (const w of waves) {
      for (const count of Object.values(countBy(p.placements.filter((x) => x.wave === w).map((x) => x.to)))) expect(count).toBeLessThanOrEqual(2);
    }
    // the same VMs, more waves: the cap binds (without it a wave takes up to 4 into one target)
    expect(waves.length).toBeGreaterThan(new Set(plan.placements.map((x) => x.wave)).size);
    expect(evacuationDocument('drain', p)).toContain("2 into each target within the gateways' bandwidth budget");
    // a budget below one migration's bandwidth still lets one move at a time; the direct datapath has no gateway budget
    budgeted.spec.gateway.bandwidth = '10M';
    expect(planEvacuation(budgeted, inventory, 'east').limits.perPeer).toEqual({ north: 1, south: 1, west: 1 });
    budgeted.spec.datapath = 'direct';
    expect(planEvacuation(budgeted, inventory, 'east').limits.perPeer).toBeUndefined();
  });

  test('each target\'s wave limit is what the budget of its pair with the source carries: cluster pair, else site pair, else default', () => {
    // 62.5 MB/s per migration (crossCluster 250M over 4): east-west 250M carries 4, east-north 70M 1, the default 130M 2
    const byPair = clone(doc) as any;
    byPair.spec.gateway = { ...byPair.spec.gateway, bandwidth: { default: '130M', clusters: [{ between: ['west', 'east'], bandwidth: '250M' }, { between: ['east', 'north'], bandwidth: '70M' }] } };
    const p = planEvacuation(byPair, inventory, 'east');
    expect(p.limits.perPeer).toEqual({ north: 1, south: 2, west: 4 });
    const waves = [...new Set(p.placements.map((x) => x.wave))];
    const most = (to: string) => Math.max(0, ...waves.map((w) => p.placements.filter((x) => x.wave === w && x.to === to).length));
    expect(p.placements.map((x) => x.vm.name).sort()).toEqual(planEvacuation(doc, inventory, 'east').placements.map((x) => x.vm.name).sort());
    expect([most('north'), most('south'), most('west')].map((n, i) => n <= [1, 2, 4][i])).toEqual([true, true, true]);
    expect(most('west')).toBeGreaterThan(2); // west's own budget lets more in at once than the default would
    expect(evacuationDocument('drain', p)).toContain("within the gateways' bandwidth budgets at most 1 into north, 2 into south, 4 into west");
    // sites: east and west in dc1, north and south in dc2; the link between them 70M, within a site the default
    const sited = clone(doc) as any;
    for (const c of sited.spec.clusters) c.site = ['east', 'west'].includes(c.name) ? 'dc1' : 'dc2';
    sited.spec.gateway = { ...sited.spec.gateway, bandwidth: { default: '250M', sites: [{ between: ['dc2', 'dc1'], bandwidth: '70M' }] } };
    expect(planEvacuation(sited, inventory, 'east').limits.perPeer).toEqual({ north: 1, south: 1, west: 4 });
    // no default: a target whose pair has no budget has no wave limit of its own
    sited.spec.gateway.bandwidth = { sites: [{ between: ['dc1', 'dc2'], bandwidth: '70M' }] };
    expect(planEvacuation(sited, inventory, 'east').limits.perPeer).toEqual({ north: 1, south: 1 });
  });

  test('HCO\'s default of one outbound migration per node (PR #4426) shapes the waves when the fleet says nothing', () => {
    const hco = clone(doc) as any;
    delete hco.spec.migrationPolicy.parallelOutboundMigrationsPerNode;
    hco.spec.kubevirt = { version: '1.8', configDelivery: 'hco', namespace: 'openshift-cnv' };
    const p = planEvacuation(hco, inventory, 'east');
    expect(p.limits.perNode).toBe(1);
    for (const w of new Set(p.placements.map((x) => x.wave))) {
      expect(Object.values(countBy(p.placements.filter((x) => x.wave === w).map((x) => x.vm.node))).every((n) => n <= 1)).toBe(true);
    }
  });

  test('a bad inventory: every problem with its path; another fleet\'s inventory refused', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-evac-'));
    try {
      const bad = path.join(dir, 'bad.yaml');
      fs.writeFileSync(bad, yaml.stringify({ apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Inventory', metadata: { name: 'drain' }, clusters: { east: { nodes: [{ name: 'e', allocatable: { cpu: 'x', memory: '1Gi' } }], vms: [{ name: 'A', namespace: 'v', node: 'e', cpu: '1', memory: '1Gi' }] } } }));
      expect(() => loadInventoryFile(bad, 'drain')).toThrow(FleetValidationError);
      try { loadInventoryFile(bad, 'drain'); } catch (e) {
        expect((e as FleetValidationError).problems.map((x) => x.path).sort()).toEqual(['clusters.east.nodes[0].allocatable.cpu', 'clusters.east.vms[0].name']);
      }
      expect(() => loadInventoryFile(INVENTORY, 'other')).toThrow(/'drain' is not the fleet 'other'/);
      expect(inventorySchema.safeParse(yaml.parse(fs.readFileSync(INVENTORY, 'utf8'))).success).toBe(true);
    } finally { fs.rmSync(dir, { recursive: true, force: true }); }
  });

  test('the command writes the moves file once and never over an existing one', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-evac-'));
    try {
      const out = path.join(dir, 'drain.moves.yaml');
      const args = (o: string) => ({ cmd: 'evacuate', files: [FLEET], flags: new Map<string, string | true>([['cluster', 'east'], ['inventory', INVENTORY], ['out', o]]) });
      const printed: string[] = [];
      expect(evacuate(args(out), (s) => printed.push(s))).toBe(0);
      expect(fs.readFileSync(out, 'utf8')).toBe(fs.readFileSync(path.join(DIR, 'drain.moves.yaml'), 'utf8'));
      expect(printed.join('')).toContain('evacuate east: 20 VMs in 5 waves');
      fs.writeFileSync(out, 'reviewed\n');
      expect(() => evacuate(args(out), () => undefined)).toThrow(/exists: a moves file is a reviewed plan/);
      expect(fs.readFileSync(out, 'utf8')).toBe('reviewed\n');
    } finally { fs.rmSync(dir, { recursive: true, force: true }); }
  });
});

function countBy(xs: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const x of xs) out[x] = (out[x] ?? 0) + 1;
  return out;
}
