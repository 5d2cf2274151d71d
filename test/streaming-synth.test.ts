/**
 * Streaming synthesis (issue 25): without a whole-mesh `customize` hook the writer plans the fleet once,
 * then builds, renders and writes one cluster at a time. The tree is byte for byte the in-memory one;
 * `customizeCluster` sees one cluster's constructs at a time; a failure in the middle writes nothing.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as kplus from 'cdk8s-plus-28';
import { renderFleetDirectory, synthesizeFleetToDirectory, writeFleetDirectories } from '../cli/fleet-directory';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { MeshClusterChart } from '../constructs/fleet/mesh-cluster';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { loadMovesFile, movesPathFor } from '../src/forklift/moves';
import { files } from './support/tree';

const root = path.join(__dirname, '..');
const examples = ['three-sites-vlan.fleet.yaml', 'gitops.fleet.yaml', 'metro-moves.fleet.yaml', 'harvester.fleet.yaml'];

const sidecar = { name: 'tcpdump', image: 'example.org/tcpdump:4.99', imagePullPolicy: kplus.ImagePullPolicy.IF_NOT_PRESENT, securityContext: { user: 1000, group: 1000 } };

let work: string;
beforeEach(() => { work = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-stream-')); });
afterEach(() => fs.rmSync(work, { recursive: true, force: true }));

describe.each(examples)('%s', (example) => {
  const fleetFile = path.join(root, 'examples', example);

  test('the streamed tree is the in-memory synthesis, byte for byte; fileCount counts it without holding it', () => {
    const ledgerFile = path.join(work, 'l.yaml');
    fs.copyFileSync(ledgerPathFor(fleetFile), ledgerFile);
    const r = synthesizeFleetToDirectory({ fleetFile, ledgerFile, outdir: path.join(work, 'out') });
    const doc = loadFleetFile(fleetFile);
    const mem = synthesizeFleet(doc, { ledger: loadLedgerFile(ledgerPathFor(fleetFile)), moves: loadMovesFile(movesPathFor(fleetFile), doc.metadata.name) });
    const written = files(path.join(work, 'out', doc.metadata.name));
    for (const [rel, text] of mem.files) expect({ rel, text: written.get(rel) }).toEqual({ rel, text });
    expect([...written.keys()].filter((f) => !mem.files.has(f)).sort()).toEqual(['.migration-mesh.manifest', 'fleet.svg']);
    expect(r.fileCount).toBe(mem.files.size);
    // the in-memory fields are still there when read (synthesized again, on demand)
    expect([...r.files.keys()]).toEqual([...mem.files.keys()]);
    expect(r.tree.get('fleet.svg')).toBe(written.get('fleet.svg'));
    expect(fs.readFileSync(ledgerFile, 'utf8')).toBe(fs.readFileSync(ledgerPathFor(fleetFile), 'utf8'));
  });

  test('customizeCluster: one cluster\'s constructs at a time, the earlier clusters already on disk; same bytes as the whole-mesh customize', () => {
    const seen: string[] = [];
    const ledgerFile = path.join(work, 'l.yaml');
    const doc = loadFleetFile(fleetFile);
    const out = path.join(work, 'per-cluster');
    synthesizeFleetToDirectory({
      fleetFile, ledgerFile, outdir: out,
      customizeCluster: (chart) => {
        // the chart's App holds this cluster alone; every earlier cluster's files are prepared (in the new
        // fleet directory's staging directory, not yet in place)
        expect(chart.node.root.node.children.map((c) => c.node.id)).toEqual([chart.cluster.name]);
        expect(fs.existsSync(path.join(out, doc.metadata.name))).toBe(false);
        const prepared = [...files(out).keys()];
        const staged = new RegExp(`^\\.${doc.metadata.name}\\.mm-tmp-\\d+-[0-9a-f]{8}/`);
        for (const earlier of seen) expect(prepared.some((f) => staged.test(f) && f.replace(staged, '').startsWith(`${earlier}/`))).toBe(true);
        seen.push(chart.cluster.name);
        if (MeshClusterChart.isMeshClusterChart(chart)) chart.proxy?.addSidecar(sidecar);
      },
    });
    const whole = path.join(work, 'whole');
    synthesizeFleetToDirectory({
      fleetFile, ledgerFile: path.join(work, 'l2.yaml'), outdir: whole,
      customize: (mesh) => { for (const gw of mesh.gateways) gw.addSidecar(sidecar); },
    });
    expect(seen).toEqual(doc.spec.clusters.map((c) => c.name).sort());
    expect(files(out)).toEqual(files(whole));
  });
});

describe('a failure in the middle of the stream', () => {
  const fleetFile = path.join(root, 'examples', 'three-sites-vlan.fleet.yaml');

  test('a customizeCluster hook that throws at the second cluster: nothing written, no temp file, the lock released', () => {
    const out = path.join(work, 'out');
    const ledgerFile = path.join(work, 'l.yaml');
    let n = 0;
    expect(() => synthesizeFleetToDirectory({ fleetFile, ledgerFile, outdir: out, customizeCluster: () => { if (++n === 2) throw new Error('hook failed'); } })).toThrow('hook failed');
    expect(n).toBe(2);
    expect(files(work)).toEqual(new Map());
    // the lock is free: the same write now succeeds
    expect(synthesizeFleetToDirectory({ fleetFile, ledgerFile, outdir: out }).report.written.length).toBeGreaterThan(10);
  });

  test('an async customizeCluster is refused with customize-async at its first cluster, nothing written', () => {
    const out = path.join(work, 'out');
    let err: unknown;
    try { synthesizeFleetToDirectory({ fleetFile, ledgerFile: path.join(work, 'l.yaml'), outdir: out, customizeCluster: (async () => undefined) as any }); } catch (e) { err = e; }
    expect((err as { problems: { code: string; path: string }[] }).problems).toEqual([expect.objectContaining({ code: 'customize-async', path: 'customizeCluster' })]);
    expect(files(work)).toEqual(new Map());
  });

  test('a planned fleet can be written twice (each write builds the clusters again), and a second write changes nothing', () => {
    const out = path.join(work, 'out');
    const pending = renderFleetDirectory({ fleetFile, ledgerFile: path.join(work, 'l.yaml'), outdir: out });
    const [first] = writeFleetDirectories([pending]);
    const before = files(out);
    const [second] = writeFleetDirectories([pending]);
    expect(first.report.written.length).toBe(first.fileCount + 1); // and fleet.svg (the manifest is not listed)
    expect(second.report.written).toEqual([]);
    expect(second.fileCount).toBe(first.fileCount);
    expect(files(out)).toEqual(before);
  });
});

describe('validate\'s judging synthesis (render: false) renders nothing it does not need', () => {
  test.each(examples)('%s: the same objects when asked for, and the same refusal of two objects in one file', (example) => {
    const fleetFile = path.join(root, 'examples', example);
    const doc = loadFleetFile(fleetFile);
    const base = { ledger: loadLedgerFile(ledgerPathFor(fleetFile)), moves: loadMovesFile(movesPathFor(fleetFile), doc.metadata.name) };
    const judged = synthesizeFleet(doc, { ...base, render: false });
    const full = synthesizeFleet(doc, base);
    expect(judged.files.size).toBe(0);
    expect([...judged.objects.entries()]).toEqual([...full.objects.entries()]);
    // a second object of one kind, namespace and name (here added by a hook): refused by both, with the same problem
    const twice = (render: boolean): unknown => {
      try {
        synthesizeFleet(doc, { ...base, render, customizeCluster: (chart) => { new kplus.ConfigMap(chart, 'Twin', { metadata: { name: 'twin', namespace: 'ns' } }); new kplus.ConfigMap(chart, 'Twin2', { metadata: { name: 'twin', namespace: 'ns' } }); } });
      } catch (e) { return (e as { problems: unknown }).problems; }
      return 'not refused';
    };
    expect(twice(false)).toEqual(twice(true));
    expect(twice(false)).toEqual([expect.objectContaining({ code: 'plan-inconsistent', path: expect.stringMatching(/\/ConfigMap\.ns\.twin\.yaml$/) })]);
  });
});
