import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { createHash } from 'crypto';
import { MANIFEST_FILE } from '../cli/write-tree';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { loadMovesFile, movesPathFor } from '../src/forklift/moves';
import { validateObject } from './support/schemas';

const root = path.join(__dirname, '..');
const examples = fs.readdirSync(path.join(root, 'examples')).filter((f) => f.endsWith('.fleet.yaml')).sort();

describe.each(examples)('example %s', (file) => {
  const fleetFile = path.join(root, 'examples', file);
  const doc = loadFleetFile(fleetFile);
  const ledger = loadLedgerFile(ledgerPathFor(fleetFile));
  const moves = loadMovesFile(movesPathFor(fleetFile), doc.metadata.name);
  const result = synthesizeFleet(doc, { ledger, moves });

  test('has a committed ledger that synthesis leaves unchanged (frozen passes)', () => {
    expect(ledger).toBeDefined();
    expect(result.changes).toEqual([]);
    expect(() => synthesizeFleet(doc, { ledger, frozen: true, moves })).not.toThrow();
  });

  test('synthesizes byte-identical output twice', () => {
    const moves = loadMovesFile(movesPathFor(fleetFile), doc.metadata.name);
    const again = synthesizeFleet(loadFleetFile(fleetFile), { ledger: loadLedgerFile(ledgerPathFor(fleetFile)), moves });
    expect([...again.files.entries()]).toEqual([...result.files.entries()]);
  });

  test('matches the committed dist/ tree exactly (no stale or missing file)', () => {
    const dir = path.join(root, 'dist', doc.metadata.name);
    const onDisk = new Map<string, string>();
    const walk = (d: string): void => {
      for (const e of fs.readdirSync(d, { withFileTypes: true })) {
        const full = path.join(d, e.name);
        if (e.isDirectory()) walk(full);
        else onDisk.set(path.relative(dir, full), fs.readFileSync(full, 'utf8'));
      }
    };
    walk(dir);
    const expected = new Map([...result.files.entries()].filter(([k]) => !k.endsWith('.svg')));
    const actual = new Map([...onDisk.entries()].filter(([k]) => !k.endsWith('.svg') && k !== MANIFEST_FILE));
    expect([...actual.keys()].sort()).toEqual([...expected.keys()].sort());
    for (const [k, v] of expected) expect(`${k}\n${actual.get(k)}`).toEqual(`${k}\n${v}`);
    // the manifest of generated files lists exactly the tree (fleet.svg included) with each file's hash
    const listed = onDisk.get(MANIFEST_FILE)!.split('\n').filter((l) => l && !l.startsWith('#')).map((l) => l.split('  '));
    expect(listed.map(([, f]) => f).sort()).toEqual([...onDisk.keys()].filter((k) => k !== MANIFEST_FILE).sort());
    for (const [hash, f] of listed) expect(`${f} ${createHash('sha256').update(onDisk.get(f)!).digest('hex')}`).toBe(`${f} ${hash}`);
  });

  test('writes one file per object: no object of a cluster overwrites another', () => {
    for (const [cluster, objs] of result.objects) {
      const files = [...result.files.keys()].filter((k) => k.startsWith(`${cluster}/`) && !k.endsWith('kustomization.yaml'));
      expect(files.length).toBe(objs.length);
    }
  });

  test('every synthesized object validates against the upstream schemas, unknown fields included', () => {
    const errors: string[] = [];
    for (const [rel, text] of result.files) {
      if (!rel.endsWith('.yaml') || rel.endsWith('kustomization.yaml')) continue;
      for (const d of YAML.parseAllDocuments(text)) {
        const obj = d.toJS();
        const native = obj.kind === 'KubeVirt' && JSON.stringify(obj).includes('decentralizedLiveMigrationDatapath');
        errors.push(...validateObject(obj, { kubevirtSchema: native ? 'pr17922' : 'released' }).map((e) => `${rel}: ${e}`));
      }
    }
    expect(errors).toEqual([]);
  });

  test('kustomization.yaml lists exactly the cluster files, NADs before the KubeVirt configuration', () => {
    for (const cluster of result.objects.keys()) {
      // flatten: a resource that is a directory (Flux stages) stands for its own kustomization's list, in order
      const expand = (dir: string): string[] => YAML.parse(result.files.get(`${dir}/kustomization.yaml`)!).resources
        .flatMap((r: string) => (result.files.has(`${dir}/${r}/kustomization.yaml`) ? expand(`${dir}/${r}`).map((x) => `${r}/${x}`) : [r]));
      const listed: string[] = expand(cluster);
      const files = [...result.files.keys()].filter((f) => f.startsWith(`${cluster}/`) && !f.includes('/components/') && !f.endsWith('kustomization.yaml')).map((f) => f.slice(cluster.length + 1));
      expect([...listed].sort()).toEqual(files.sort());
      const base = listed.map((f) => f.split('/').pop()!);
      const firstKv = base.findIndex((f: string) => /^(KubeVirt|HyperConverged)\./.test(f));
      const lastNad = Math.max(...base.map((f: string, i: number) => (f.startsWith('NetworkAttachmentDefinition.') ? i : -1)));
      if (firstKv >= 0) expect(lastNad).toBeLessThan(firstKv);
    }
  });
});

test('the native example is refused by the released KubeVirt schema (the fields really are PR-only)', () => {
  const doc = loadFleetFile(path.join(root, 'examples', 'native-preview.fleet.yaml'));
  const r = synthesizeFleet(doc, { ledger: loadLedgerFile(ledgerPathFor(path.join(root, 'examples', 'native-preview.fleet.yaml'))) });
  const kv = r.objects.get('lab-a')!.find((o) => o.kind === 'KubeVirt');
  expect(validateObject(kv, { kubevirtSchema: 'released' }).join('\n')).toMatch(/crossClusterNetwork|decentralizedLiveMigrationDatapath|synchronizationPlacement/);
  expect(validateObject(kv, { kubevirtSchema: 'pr17922' })).toEqual([]);
});
