/**
 * Addresses never move or double up without being asked (issue #12): a renamed fleet's ledger is
 * refused unless carried over explicitly; released addresses are quarantined until reclaimed; a router
 * on a planned address is refused; diff's summary counts the moves its list shows.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as YAML from 'yaml';
import { FleetValidationError } from '../src/base/errors';
import { Ledger, parseLedger, reclaimReleased, serializeLedger } from '../src/addressing/ledger';
import { PlanOptions, planFleetDocument } from '../src/addressing/planner';
import { diffTrees } from '../src/report/tree-diff';
import { main } from '../cli/cli';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { baseFleet, mutate } from './support/fleets';

const three = () => mutate(baseFleet(), (d) => { d.spec.clusters = [{ name: 'a', nodes: 1 }, { name: 'b', nodes: 1 }, { name: 'c', nodes: 1 }]; });
const plan = (doc: any, opts: PlanOptions = {}) => planFleetDocument(doc, opts);
const problemsOf = (fn: () => unknown): { path: string; message: string; fix?: string }[] => {
  try { fn(); } catch (e) { if (e instanceof FleetValidationError) return [...e.problems]; throw e; }
  throw new Error('expected a FleetValidationError');
};
/** Every address a ledger holds, flat. */
const held = (l: Ledger) => Object.values(l.clusters)
  .flatMap((c) => [c.migrationCidr, c.gatewayVip, ...(c.gateways ?? []).flatMap((g) => [g.inCluster, g.crossCluster])].filter(Boolean));

describe('renaming the fleet', () => {
  // a fleet with history: b removed and reclaimed, so planning from scratch would move c
  const history = () => {
    const l1 = plan(three()).ledger;
    const two = mutate(three(), (d) => { d.spec.clusters = d.spec.clusters.filter((c: any) => c.name !== 'b'); });
    return { two, ledger: reclaimReleased(plan(two, { ledger: l1 }).ledger, { all: true }).ledger };
  };

  test('a ledger of another fleet is refused with the fix, never replanned silently (with the fleet\'s own problems at once)', () => {
    const { two, ledger } = history();
    const renamed = mutate(two, (d) => { d.metadata.name = 'prod'; });
    const [p] = problemsOf(() => plan(renamed, { ledger }));
    expect(p.path).toBe('metadata.name');
    expect(p.message).toMatch(/ledger belongs to fleet 'test', this fleet is 'prod'/);
    expect(p.fix).toMatch(/--renamed-from test/);
    const broken = mutate(renamed, (d) => { d.spec.crossClusterNetwork.attachment.master = 'this-name-is-too-long'; });
    expect(problemsOf(() => plan(broken, { ledger })).map((x) => x.path)).toEqual(expect.arrayContaining(['metadata.name', 'spec.crossClusterNetwork.attachment.master']));
  });

  test('carried over explicitly (renamedFrom): no address moves, the ledger takes the new name; refused under --frozen', () => {
    const { two, ledger } = history();
    const renamed = mutate(two, (d) => { d.metadata.name = 'prod'; });
    const r = plan(renamed, { ledger, renamedFrom: 'test' });
    expect(r.ledger.fleet).toBe('prod');
    expect(r.ledger.clusters).toEqual(ledger.clusters);
    expect(r.changes).toEqual([]);
    expect(problemsOf(() => plan(renamed, { ledger, renamedFrom: 'test', frozen: true }))[0].message).toMatch(/frozen/);
  });
});

describe('released addresses are quarantined until reclaimed', () => {
  test('remove b and add d in one change: d gets none of b\'s CIDR, shared addresses or VIP; the ledger lists them; reclaim frees them', () => {
    const l1 = plan(three()).ledger;
    const swap = mutate(three(), (d) => { d.spec.clusters = [{ name: 'a', nodes: 1 }, { name: 'c', nodes: 1 }, { name: 'd', nodes: 1 }]; });
    const l2 = plan(swap, { ledger: l1 }).ledger;
    const bAddrs = held({ ...l1, clusters: { b: l1.clusters.b } });
    expect(bAddrs).toHaveLength(6);
    for (const a of held({ ...l2, clusters: { d: l2.clusters.d } })) expect(bAddrs).not.toContain(a);
    expect(l2.released!.map((r) => r.address).sort()).toEqual([...bAddrs].sort());
    expect(l2.released!.every((r) => r.cluster === 'b')).toBe(true);
    // survives a round trip through the file, and stays until reclaimed
    const again = plan(swap, { ledger: parseLedger(serializeLedger(l2)) });
    expect(again.ledger).toEqual(l2);
    expect(again.changes).toEqual([]);
    const { ledger: freed, reclaimed } = reclaimReleased(l2, { clusters: ['b'] });
    expect(reclaimed).toHaveLength(6);
    expect(freed.released).toBeUndefined();
  });

  test('a gateway replica scaled away: its addresses are quarantined, and kept out of the handlers\' whereabouts range', () => {
    const doc = mutate(baseFleet(), (d) => { d.spec.gateway = { replicas: 3 }; });
    const l1 = plan(doc).ledger;
    const gone = l1.clusters.a.gateways![2];
    const fewer = mutate(doc, (d) => { d.spec.gateway = { replicas: 2 }; });
    const r = plan(fewer, { ledger: l1 });
    expect(r.ledger.released!.map((x) => x.address)).toEqual(expect.arrayContaining([gone.inCluster, gone.crossCluster]));
    const a = r.plan.clusters.find((c) => c.name === 'a')!;
    expect(a.migrationNetwork.ipam.exclude).toContain(`${gone.inCluster}/32`);
    // scaling back up does not hand the quarantined addresses out again
    const more = plan(doc, { ledger: r.ledger }).ledger;
    expect(more.clusters.a.gateways![2].crossCluster).not.toBe(gone.crossCluster);
    expect(more.clusters.a.gateways![2].inCluster).not.toBe(gone.inCluster);
  });
});

describe('a router address inside the pool', () => {
  test('on an address the ledger gives a gateway: refused, naming the gateway', () => {
    const l1 = plan(baseFleet()).ledger;
    const routed = mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses.gateway = l1.clusters.b.gateways![0].crossCluster; });
    const [p] = problemsOf(() => plan(routed, { ledger: l1 }));
    expect(p.path).toBe('spec.crossClusterNetwork.addresses.gateway');
    expect(p.message).toMatch(/cluster b \(gateways\[0\]\.crossCluster\)/);
  });

  test('on a free address: reserved, nobody moves', () => {
    const l1 = plan(baseFleet()).ledger;
    const routed = mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses.gateway = '192.168.50.200'; });
    const r = plan(routed, { ledger: l1 });
    expect(r.changes).toEqual([]);
    const grown = mutate(routed, (d) => { d.spec.crossClusterNetwork.addresses.pool = ['192.168.50.200-192.168.50.210', '192.168.50.1-192.168.50.4']; });
    expect(held(plan(grown).ledger)).not.toContain('192.168.50.200');
  });
});

describe('diff', () => {
  test('the summary counts every move its list shows, also for clusters whose files are new', () => {
    const before = synthesizeFleet(three());
    const l2 = reclaimReleased(plan(mutate(three(), (d) => { d.spec.clusters.splice(1, 1); }), { ledger: before.ledger }).ledger, { all: true }).ledger;
    const moved = { ...l2, clusters: { ...l2.clusters, c: { ...l2.clusters.c, migrationCidr: '10.200.9.0/24' } } };
    const d = diffTrees({ files: new Map(), ledger: l2 }, { files: new Map([['c/x.yaml', 'x']]), ledger: moved });
    expect(d.clusters.find((c) => c.name === 'c')!.addressChanges).toHaveLength(1);
    expect(d.counts.addressesMoved).toBe(1);
    expect(d.summary).toMatch(/1 existing address moves/);
  });
});

describe('CLI: --renamed-from and reclaim', () => {
  let dir: string;
  beforeEach(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-ledger-')); });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));
  const run = (...argv: string[]) => { let o = ''; let e = ''; const code = main(argv, (s) => { o += s; }, (s) => { e += s; }); return { code, out: o, err: e }; };

  test('synth refuses a renamed fleet, carries it with --renamed-from; reclaim lifts the quarantine', () => {
    const f = path.join(dir, 'x.fleet.yaml');
    fs.writeFileSync(f, YAML.stringify(three()));
    expect(run('synth', f, '--out', path.join(dir, 'out')).code).toBe(0);
    const ledgerFile = path.join(dir, 'x.ledger.yaml');
    const before = fs.readFileSync(ledgerFile, 'utf8');
    fs.writeFileSync(f, YAML.stringify(mutate(three(), (d) => { d.metadata.name = 'prod'; })));
    const refused = run('synth', f, '--out', path.join(dir, 'out'));
    expect(refused.code).toBe(1);
    expect(refused.err).toMatch(/--renamed-from test/);
    expect(fs.readFileSync(ledgerFile, 'utf8')).toBe(before);
    expect(fs.existsSync(path.join(dir, 'out', 'prod'))).toBe(false);
    expect(run('synth', f, '--out', path.join(dir, 'out'), '--renamed-from', 'test').code).toBe(0);
    expect(parseLedger(fs.readFileSync(ledgerFile, 'utf8')).fleet).toBe('prod');
    // remove b: quarantined, said on the way out; reclaim it
    fs.writeFileSync(f, YAML.stringify(mutate(three(), (d) => { d.metadata.name = 'prod'; d.spec.clusters.splice(1, 1); })));
    const s = run('synth', f, '--out', path.join(dir, 'out'));
    expect(s.out).toMatch(/6 released addresses quarantined/);
    expect(run('reclaim', f).code).toBe(2); // a usage error: no --cluster, --address or --all
    const rc = run('reclaim', f, '--cluster', 'b');
    expect(rc.code).toBe(0);
    expect(rc.out).toMatch(/6 addresses reclaimed/);
    expect(parseLedger(fs.readFileSync(ledgerFile, 'utf8')).released).toBeUndefined();
  });
});
