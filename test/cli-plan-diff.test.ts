/**
 * CLI `plan` and `diff` on the examples (numbers, JSON, exit codes), and the proof that `diff` names
 * exactly the files that change: adding, removing and resizing a cluster, with the synthesized trees
 * compared independently of tree-diff.ts.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { diffFleets } from '../cli/diff-fleets';
import { FleetDocument } from '../src/fleet/schema';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { serializeLedger } from '../src/addressing/ledger';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { runCli } from './support/fleets';
import { suiteTmpDir } from './support/tmp';

const EX = path.join(__dirname, '..', 'examples');
const run = (...argv: string[]): ReturnType<typeof runCli> => runCli(argv);
const tmp = (): string => suiteTmpDir('mm-cli-');
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));

/** Independent tree comparison: for each top-level directory, files added / removed / changed. */
function compareTrees(a: Map<string, string>, b: Map<string, string>): Record<string, { added: string[]; removed: string[]; changed: string[] }> {
  const out: Record<string, { added: string[]; removed: string[]; changed: string[] }> = {};
  const slot = (p: string) => { const [dir, ...rest] = p.split('/'); out[dir] ??= { added: [], removed: [], changed: [] }; return { s: out[dir], f: rest.join('/') }; };
  for (const p of [...new Set([...a.keys(), ...b.keys()])].sort()) {
    if (!p.includes('/')) continue;
    const kind = !a.has(p) ? 'added' : !b.has(p) ? 'removed' : a.get(p) !== b.get(p) ? 'changed' : undefined;
    if (kind) { const { s, f } = slot(p); s[kind].push(f); }
  }
  return out;
}

function expectDiffMatchesTrees(before: FleetDocument, after: FleetDocument, ledgerFile: string) {
  const ledger = loadLedgerFile(ledgerFile);
  const d = diffFleets(before, after, { ledger });
  // independent: synthesize both, carrying the ledger as synth would, and compare the file maps
  const tb = synthesizeFleet(before, { ledger });
  const ta = synthesizeFleet(after, { ledger: tb.ledger });
  const expected = compareTrees(tb.files, ta.files);
  const reported = Object.fromEntries(d.clusters.filter((c) => c.added.length + c.removed.length + c.changed.length > 0)
    .map((c) => [c.name, { added: c.added, removed: c.removed, changed: c.changed }]));
  expect(reported).toEqual(expected);
  return { d, tb, ta };
}

describe('migration-mesh plan', () => {
  test('table for the VEP example: 10 clusters, 20 needed of 35 usable, direct would need 140', () => {
    const r = run('plan', path.join(EX, 'vep-10-clusters.fleet.yaml'));
    expect(r.code).toBe(0);
    expect(r.out).toContain('fleet vep: 10 clusters (10 gateway), 100 nodes');
    expect(r.out).toMatch(/^c01 +gateway +kubevirt-cr +10 +10\.200\.0\.0\/24 +17 +254 +237 +192\.168\.50\.10 \(10\.200\.0\.1\), 192\.168\.50\.11 \(10\.200\.0\.2\), vip 10\.200\.0\.3 +2 +14$/m);
    expect(r.out).toContain('usable 35');
    expect(r.out).toContain('needed 20, free 15');
    expect(r.out).toContain('all-direct would need 140 (120 without surge), all-native 40, all-gateway 20; this plan saves 120 against direct');
  });

  test.each([
    ['vep-10-clusters.fleet.yaml', 10, 35, 20, 15],
    ['three-sites-vlan.fleet.yaml', 3, 8, 6, 2],
    ['hco.fleet.yaml', 2, 14, 4, 10],
    ['harvester.fleet.yaml', 3, 245, 30, 215], // 24 for the handlers + 3 trust agents x 2 (issue #30)
    ['gitops.fleet.yaml', 3, 16, 5, 11],
  ])('--output json for %s: %i clusters, usable %i, needed %i, free %i', (f, clusters, usable, needed, free) => {
    const r = run('plan', path.join(EX, f), '--output', 'json');
    expect(r.code).toBe(0);
    const j = JSON.parse(r.out);
    expect(j.clusters).toHaveLength(clusters);
    expect(j.totals.sharedNetwork).toMatchObject({ usable, needed, free });
    expect(j.clusters.reduce((n: number, c: any) => n + c.sharedAddresses, 0)).toBe(needed);
  });

  test('--svg writes the picture; synth writes fleet.svg next to the output', () => {
    const dir = tmp();
    const r = run('plan', path.join(EX, 'three-sites-vlan.fleet.yaml'), '--svg', path.join(dir, 'p', 'sites.svg'));
    expect(r.code).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'p', 'sites.svg'), 'utf8')).toContain('>par-1<');
    const fleet = path.join(dir, 'sites.fleet.yaml');
    fs.copyFileSync(path.join(EX, 'three-sites-vlan.fleet.yaml'), fleet);
    fs.copyFileSync(path.join(EX, 'three-sites-vlan.ledger.yaml'), path.join(dir, 'sites.ledger.yaml'));
    expect(run('synth', fleet, '--out', path.join(dir, 'out')).code).toBe(0);
    expect(fs.existsSync(path.join(dir, 'out', 'sites', 'fleet.svg'))).toBe(true);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('--svg never overwrites an input (fleet, ledger, moves file), synth\'s tree or a file it did not draw; each refusal names --svg and the fix', () => {
    const dir = tmp();
    const fleet = path.join(dir, 'm.fleet.yaml');
    const ledger = path.join(dir, 'm.ledger.yaml');
    const moves = path.join(dir, 'm.moves.yaml');
    for (const [from, to] of [['fleet', fleet], ['ledger', ledger], ['moves', moves]]) fs.copyFileSync(path.join(EX, `metro-moves.${from}.yaml`), to);
    fs.symlinkSync(ledger, path.join(dir, 'link.yaml'));
    fs.writeFileSync(path.join(dir, 'notes.svg'), '<svg><!-- my own drawing --></svg>\n');
    expect(run('synth', fleet, '--out', path.join(dir, 'out')).code).toBe(0);
    const inputs = () => [fleet, ledger, moves, path.join(dir, 'notes.svg'), path.join(dir, 'out', 'metro', 'fleet.svg')].map((f) => fs.readFileSync(f, 'utf8'));
    const before = inputs();
    const byFlag = path.join(dir, 'by-flag.ledger.yaml');
    fs.copyFileSync(ledger, byFlag);
    for (const [target, code, what, extra] of [
      [fleet, 'write/input', 'is the fleet file', []],
      [ledger, 'write/input', 'is the fleet\'s ledger', []],
      [path.join(dir, 'link.yaml'), 'write/input', 'is the fleet\'s ledger', []],
      [byFlag, 'write/input', 'is the fleet\'s ledger', ['--ledger', byFlag]],
      [moves, 'write/input', 'is the fleet\'s moves file', []],
      [path.join(dir, 'notes.svg'), 'write/not-ours', 'exists and is not a fleet picture drawn by migration-mesh', []],
      [path.join(dir, 'out', 'metro', 'fleet.svg'), 'write/not-ours', 'is inside a tree synth writes', []],
    ] as const) {
      const r = run('plan', fleet, '--svg', target, ...extra);
      expect({ target, code: r.code }).toEqual({ target, code: 1 });
      expect(r.err).toContain(`[${code}] ${target}: --svg ${target} ${what}`);
      expect(r.err).toMatch(/fix: .*--svg/);
    }
    expect(inputs()).toEqual(before);
    // a new file, and a picture plan drew before, are written
    const pic = path.join(dir, 'pic.svg');
    expect(run('plan', fleet, '--svg', pic).code).toBe(0);
    expect(run('plan', fleet, '--svg', pic).code).toBe(0);
    expect(fs.readFileSync(pic, 'utf8')).toContain('<title>Migration Mesh fleet metro</title>');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('a fleet split across datapath modes: plan and validate say which clusters can migrate to which', () => {
    const dir = tmp();
    const doc = clone(loadFleetFile(path.join(EX, 'vep-10-clusters.fleet.yaml')));
    const c10 = doc.spec.clusters.find((c) => c.name === 'c10')!;
    c10.datapath = 'direct';
    const f = path.join(dir, 'mixed.fleet.yaml');
    fs.writeFileSync(f, YAML.stringify(doc));
    const table = run('plan', f);
    expect(table.code).toBe(0);
    expect(table.out).toContain('fleet vep: 10 clusters (9 gateway, 1 direct)');
    expect(table.out).toContain('clusters in different modes cannot live-migrate to each other');
    expect(table.out).toContain('  gateway (9): c01, c02, c03, c04, c05 and 4 more\n');
    expect(table.out).toContain('  direct (1): c10\n');
    const j = JSON.parse(run('plan', f, '--output', 'json').out);
    expect(j.totals.migrationGroups).toEqual([
      { mode: 'gateway', clusters: ['c01', 'c02', 'c03', 'c04', 'c05', 'c06', 'c07', 'c08', 'c09'] },
      { mode: 'direct', clusters: ['c10'] },
    ]);
    // the gateway clusters' peer tables list c10 too, through its trust agent (issue #30): 9 peers each
    expect(j.clusters.filter((c: any) => c.mode === 'gateway').map((c: any) => c.peers)).toEqual(Array(9).fill(9));
    expect(j.clusters.find((c: any) => c.cluster === 'c10').trust.keptBy).toBe('trust-agent');
    const v = run('validate', f);
    expect(v.code).toBe(0);
    expect(v.out).toContain('valid (note: 2 datapath modes, gateway / direct: clusters in different modes cannot live-migrate');
    // one mode: no such line anywhere
    expect(run('plan', path.join(EX, 'vep-10-clusters.fleet.yaml')).out).not.toContain('cannot live-migrate');
    // (its one warning: the default gateway image is named by tag only, issue 49)
    const one = run('validate', path.join(EX, 'vep-10-clusters.fleet.yaml')).out;
    expect(one.split('\n')[0]).toBe(`${path.join(EX, 'vep-10-clusters.fleet.yaml')}: valid`);
    expect(one.match(/warning: \[[^\]]+\]/g)).toEqual(['warning: [gateway-image-tag-only]']);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('bad --output is an error', () => {
    expect(run('plan', path.join(EX, 'hco.fleet.yaml'), '--output', 'xml').code).toBe(2); // a usage error
  });
});

describe('migration-mesh diff', () => {
  const vepFile = path.join(EX, 'vep-10-clusters.fleet.yaml');
  const vep = loadFleetFile(vepFile);
  const vepLedger = ledgerPathFor(vepFile);

  test('adding a cluster: 0 existing addresses move, 10 peer tables gain one entry; exactly the files the trees differ in', () => {
    const after = clone(vep);
    after.spec.clusters.push({ name: 'c11', nodes: 10 });
    const { d, tb, ta } = expectDiffMatchesTrees(vep, after, vepLedger);
    expect(d.summary).toBe('adding cluster c11: 0 existing addresses move, 10 peer tables gain one entry, 15 files added, 0 removed, 10 changed');
    expect(d.changed).toBe(true);
    expect(d.counts.addressesMoved).toBe(0);
    expect(d.clusters.find((c) => c.name === 'c11')!.addressChanges.map((a) => `${a.field}=${a.to}`)).toEqual([
      'migrationCidr=10.200.10.0/24', 'gateways[0].inCluster=10.200.10.1', 'gateways[0].crossCluster=192.168.50.65',
      'gateways[1].inCluster=10.200.10.2', 'gateways[1].crossCluster=192.168.50.66', 'gatewayVip=10.200.10.3',
    ]);
    // every old cluster changed only its peer table ConfigMap
    for (const c of d.clusters.filter((x) => x.name !== 'c11')) expect(c.changed).toEqual(['ConfigMap.migration-mesh.migration-mesh-gateway.yaml']);
    // and the ledger of the old clusters is untouched
    for (const n of Object.keys(tb.ledger.clusters)) expect(ta.ledger.clusters[n]).toEqual(tb.ledger.clusters[n]);
  });

  test('removing a cluster: its files go, peers lose one entry, its 6 ledger entries (2 gateways x 2, its CIDR, its VIP) are freed, nothing moves', () => {
    const after = clone(vep);
    after.spec.clusters = after.spec.clusters.filter((c) => c.name !== 'c05');
    const { d } = expectDiffMatchesTrees(vep, after, vepLedger);
    expect(d.summary).toBe('removing cluster c05: 0 existing addresses move, 9 peer tables lose one entry, 0 files added, 15 removed, 9 changed');
    expect(d.counts.addressesFreed).toBe(6);
    expect(d.clusters.find((c) => c.name === 'c05')!.status).toBe('removed');
  });

  test('resizing a direct-mode cluster: its slice grows, no other cluster moves; Harvester value and NAD change', () => {
    const file = path.join(EX, 'harvester.fleet.yaml');
    const before = loadFleetFile(file);
    const after = clone(before);
    after.spec.clusters.find((c) => c.name === 'hv-a')!.nodes = 7;
    after.spec.clusters.find((c) => c.name === 'kv-c')!.nodes = 6;
    const { d, ta } = expectDiffMatchesTrees(before, after, ledgerPathFor(file));
    expect(d.summary).toBe('resizing hv-a (5 -> 7 nodes), resizing kv-c (4 -> 6 nodes): 0 existing addresses move, 0 files added, 0 removed, 2 changed');
    expect(d.clusters.map((c) => [c.name, c.changed])).toEqual([
      ['hv-a', ['Setting.vm-migration-network.yaml']],
      ['kv-c', ['NetworkAttachmentDefinition.kubevirt.lm-crosscluster.yaml']],
    ]);
    // the trust agents keep 172.20.40.34-39: the slices grow past them
    expect(ta.ledger.clusters['hv-a'].crossClusterAddresses).toEqual(['172.20.40.10-172.20.40.18', '172.20.40.40/31']);
    expect(ta.ledger.clusters['kv-c'].crossClusterAddresses).toEqual(['172.20.40.26-172.20.40.33', '172.20.40.42/31']);
    expect(ta.ledger.clusters['hv-a'].trustAgents).toEqual([{ crossCluster: '172.20.40.34' }, { crossCluster: '172.20.40.35' }]);
  });

  test('resizing a gateway-mode cluster changes nothing that is applied: exit 0', () => {
    const after = clone(vep);
    after.spec.clusters[0].nodes = 14;
    const { d } = expectDiffMatchesTrees(vep, after, vepLedger);
    expect(d.changed).toBe(false);
    expect(d.summary).toBe('no change');
  });

  test('CLI exit codes: 1 with changes, 0 without, 2 on error; --output json', () => {
    const dir = tmp();
    const a = path.join(dir, 'a.fleet.yaml');
    const b = path.join(dir, 'b.fleet.yaml');
    fs.copyFileSync(vepFile, a);
    fs.copyFileSync(vepLedger, path.join(dir, 'a.ledger.yaml'));
    const after = clone(vep);
    after.spec.clusters.push({ name: 'c11', nodes: 10 });
    fs.writeFileSync(b, YAML.stringify(after));
    const changed = run('diff', a, b);
    expect(changed.code).toBe(1);
    expect(changed.out.trim().split('\n').pop()).toBe('adding cluster c11: 0 existing addresses move, 10 peer tables gain one entry, 15 files added, 0 removed, 10 changed');
    expect(changed.out).toContain('  + KubeVirt.kubevirt.kubevirt.yaml');
    expect(run('diff', a, a).code).toBe(0);
    const j = JSON.parse(run('diff', a, b, '--output', 'json').out);
    expect(j.changed).toBe(true);
    expect(j.counts.peerTablesGaining).toBe(10);
    const bad = run('diff', a, path.join(dir, 'missing.yaml'));
    expect(bad.code).toBe(2);
    expect(bad.err).toContain('cannot read fleet file');
    const invalid = path.join(dir, 'c.fleet.yaml');
    fs.writeFileSync(invalid, YAML.stringify({ ...after, spec: { ...after.spec, clusters: [{ name: 'X', nodes: 0 }] } }));
    expect(run('diff', a, invalid).code).toBe(2);
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('two-file form reads OLD\'s ledger and moves file beside it; where they are missing it says so (text and json), with codes', () => {
    const dir = tmp();
    const now = path.join(dir, 'm.fleet.yaml');
    for (const ext of ['fleet', 'ledger', 'moves']) fs.copyFileSync(path.join(EX, `metro-moves.${ext}.yaml`), path.join(dir, `m.${ext}.yaml`));
    // OLD taken out of version control on its own (git show REV:m.fleet.yaml > /tmp/old.fleet.yaml)
    const away = path.join(dir, 'away');
    fs.mkdirSync(away);
    const old = path.join(away, 'old.fleet.yaml');
    fs.copyFileSync(now, old);
    const r = run('diff', old, now);
    expect(r.err).toContain(`warning: [diff/old-ledger-missing] ${path.join(away, 'old.ledger.yaml')}: OLD has no ledger`);
    expect(r.err).toContain(`warning: [diff/old-moves-missing] ${path.join(away, 'old.moves.yaml')}: OLD has no moves file`);
    expect(r.err).toMatch(/fix: put OLD's committed ledger there/);
    const j = JSON.parse(run('diff', old, now, '--output', 'json').out);
    expect(j.notes.map((n: { code: string }) => n.code)).toEqual(['diff/old-ledger-missing', 'diff/old-moves-missing']);
    // with OLD's ledger and moves beside it, as synth reads them: same fleet, no change, no warning
    fs.copyFileSync(path.join(dir, 'm.ledger.yaml'), path.join(away, 'old.ledger.yaml'));
    fs.copyFileSync(path.join(dir, 'm.moves.yaml'), path.join(away, 'old.moves.yaml'));
    expect(run('diff', old, now)).toEqual({ code: 0, out: 'no change\n', err: '' });
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('OLD taken out of Git on its own (no ledger or moves beside it): the diff says what it cannot know and never claims a run (issue #39)', () => {
    const dir = tmp();
    const now = path.join(dir, 'm.fleet.yaml');
    for (const ext of ['fleet', 'ledger', 'moves']) fs.copyFileSync(path.join(EX, `metro-moves.${ext}.yaml`), path.join(dir, `m.${ext}.yaml`));
    // NEW really starts a second run: wave-2 gets start: true
    const moves = path.join(dir, 'm.moves.yaml');
    fs.writeFileSync(moves, fs.readFileSync(moves, 'utf8').replace('batch: wave-2}', 'batch: wave-2, start: true}'));
    const away = path.join(dir, 'away');
    fs.mkdirSync(away);
    const old = path.join(away, 'old.fleet.yaml');
    fs.copyFileSync(now, old);
    const unknownMoves = `moves and runs not compared: OLD has no moves file (${path.join(away, 'old.moves.yaml')} does not exist), so which moves are new and which runs a merge starts cannot be told from these files`;
    const unknownAddresses = `existing addresses not compared: OLD has no ledger (${path.join(away, 'old.ledger.yaml')} does not exist), so OLD is planned from scratch and addresses it already holds may show as moving`;

    const r = run('diff', old, now);
    // wave-1's run, already in Git, is not "new"; wave-2's, really new, cannot be told either
    expect(r.out).not.toMatch(/run starts on merge|runs? starts? on merge|move planned|move dropped/);
    expect(r.out).toContain(unknownMoves);
    // the fleet is the same: nothing else changes, and the summary says what was not compared
    expect(r.out).toBe(`no change\n${unknownMoves}\n${unknownAddresses}\n`);
    expect(r.code).toBe(0);
    const j = JSON.parse(run('diff', old, now, '--output', 'json').out);
    expect(j.changed).toBe(false);
    expect(j.moves).toEqual({ added: [], removed: [], started: [] });
    expect(j.unknown).toEqual({
      moves: `OLD has no moves file (${path.join(away, 'old.moves.yaml')} does not exist)`,
      addresses: `OLD has no ledger (${path.join(away, 'old.ledger.yaml')} does not exist)`,
    });

    // NEW also changes the fleet: its changes are shown, the summary claims no move or run
    const after = YAML.parse(fs.readFileSync(now, 'utf8'));
    after.spec.clusters.find((c: { name: string }) => c.name === 'edge').gateway.replicas = 2;
    fs.writeFileSync(now, YAML.stringify(after));
    const changed = run('diff', old, now);
    expect(changed.code).toBe(1);
    expect(changed.out).toMatch(/^edge \(changed\)\n {2}\+ 10-gateway\/Deployment\.migration-mesh\.migration-mesh-gateway-1\.yaml$/m);
    expect(changed.out).not.toMatch(/run starts on merge|move planned/);
    const [moveLine, addressLine, summary] = changed.out.trim().split('\n').slice(-3);
    expect([moveLine, addressLine]).toEqual([unknownMoves, unknownAddresses]);
    expect(summary).toMatch(/^changing 3 clusters: existing addresses not compared, .*; moves: not compared$/);
    fs.copyFileSync(old, now);

    // with OLD's moves and ledger beside it, the one new run is named, and only it
    fs.copyFileSync(path.join(EX, 'metro-moves.moves.yaml'), path.join(away, 'old.moves.yaml'));
    fs.copyFileSync(path.join(EX, 'metro-moves.ledger.yaml'), path.join(away, 'old.ledger.yaml'));
    const known = run('diff', old, now);
    expect(known.out.split('\n').filter((l) => /run starts on merge/.test(l))).toEqual([
      '  run starts on merge: wave-2-east-to-edge-run-1 (plan wave-2-east-to-edge)',
      'changing the Forklift hub: 0 existing addresses move, 1 files added, 0 removed, 1 changed; moves: 0 planned, 0 dropped, 1 run starts on merge',
    ]);
    expect(known.out).not.toMatch(/not compared/);
    expect(JSON.parse(run('diff', old, now, '--output', 'json').out).unknown).toBeUndefined();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('one-file form compares against the written tree and the committed ledger', () => {
    const dir = tmp();
    const f = path.join(dir, 'vep.fleet.yaml');
    fs.copyFileSync(vepFile, f);
    fs.copyFileSync(vepLedger, path.join(dir, 'vep.ledger.yaml'));
    const out = path.join(dir, 'dist');
    expect(run('synth', f, '--out', out).code).toBe(0);
    expect(run('diff', f, '--out', out)).toMatchObject({ code: 0, out: 'no change\n' });
    // edit the fleet without synthesizing: diff shows it
    const after = clone(vep);
    after.spec.clusters.push({ name: 'c11', nodes: 10 });
    fs.writeFileSync(f, YAML.stringify(after));
    const r = run('diff', f, '--out', out);
    expect(r.code).toBe(1);
    expect(r.out.trim().split('\n').pop()).toBe('adding cluster c11: 0 existing addresses move, 10 peer tables gain one entry, 15 files added, 0 removed, 10 changed');
    // the ledger on disk is not written by diff
    expect(fs.readFileSync(path.join(dir, 'vep.ledger.yaml'), 'utf8')).toBe(serializeLedger(loadLedgerFile(vepLedger)!));
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
