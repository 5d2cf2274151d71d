/**
 * cli/yaml-text.ts writes the same bytes as the `yaml` package (what synth wrote before it): on every
 * object of every example fleet, on strings the package quotes or writes as block literals, and on
 * shapes it falls back for.
 */
import * as fs from 'fs';
import * as path from 'path';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { loadMovesFile, movesPathFor } from '../src/forklift/moves';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { yamlPackageText, yamlText } from '../src/base/yaml-text';

const root = path.join(__dirname, '..');
const examples = fs.readdirSync(path.join(root, 'examples')).filter((f) => f.endsWith('.fleet.yaml')).sort();

describe('yamlText', () => {
  test.each(examples)('every object of example %s: the yaml package\'s bytes', (file) => {
    const fleetFile = path.join(root, 'examples', file);
    const doc = loadFleetFile(fleetFile);
    const moves = loadMovesFile(movesPathFor(fleetFile), doc.metadata.name);
    const r = synthesizeFleet(doc, { ledger: loadLedgerFile(ledgerPathFor(fleetFile)), moves, render: false });
    const objects = [...r.objects.values()].flat();
    expect(objects.length).toBeGreaterThan(5);
    for (const o of objects) expect({ name: o.metadata.name, text: yamlText(o) }).toEqual({ name: o.metadata.name, text: yamlPackageText(o) });
  });

  const awkward = ['a\nb', 'a\nb\n', '  x\ny', 'x: y', '', 'null', '1', '0x1', 'yes', '~', '#a', 'a #b', ' lead', 'trail ',
    'a\n\nb\n\n\n', 'line\n  indented\n', '\t', 'a\r\nb', '\u2028', '\n', '\n\n', ' \n', '- a', '? a', ':a', 'a:', '{a', '*a', '\u0000', 'é'];

  test('words written without asking the package: the same as its text, and its booleans and nulls still quoted', () => {
    const words = ['true', 'True', 'TRUE', 'tRue', 'false', 'False', 'FALSE', 'null', 'Null', 'NULL', 'nULL', 'y', 'n', 'yes', 'No', 'on', 'OFF',
      'Infinity', 'NaN', 'nan', 'inf', 'e3', 'E', 'x-1e3', 'a-', 'a.', 'a/', 'a_b', 'a--b', 'a..b', 'c0000', 'v1', 'abc/def.ghi', 'x'.repeat(300)];
    for (const w of words) expect(yamlText({ k: w, s: [w], [w]: { m: w } })).toBe(yamlPackageText({ k: w, s: [w], [w]: { m: w } }));
    expect(yamlText({ k: 'True' })).toBe('k: "True"\n');
  });

  test('IPv4 addresses and CIDRs: written plain without asking, as the package writes them; numbers and near misses still asked', () => {
    const texts = ['10.0.0.1', '10.0.0.0/24', '172.16.0.0/20', '1.2.3', '0.0.0.0/0', '255.255.255.255',
      // near misses the shortcut must leave to the package (some are numbers, some quoted for other reasons)
      '1.2', '1.5e3', '10.0.0.1 ', '10.0.0.1/', '/24', '10.0.0.1/24/', '10..0.1', '.1.2', '1.2.', '10.0.0.1:80', '-1.2.3', '1.2.3e4'];
    for (const t of texts) expect({ t, text: yamlText({ k: t, s: [t] }) }).toEqual({ t, text: yamlPackageText({ k: t, s: [t] }) });
    expect(yamlText({ k: '1.2' })).toBe('k: "1.2"\n');
  });

  test('JSON text in strings (Multus selections, NAD configs): written single-quoted without asking, same bytes as the package', () => {
    const json = ['[{"name":"mig","namespace":"kv","ips":["10.0.0.1/24"]}]', '{"cniVersion":"0.3.1","type":"bridge"}', '{"a":"b"}', '["x"]',
      // the cases the shortcut must leave to the package: no double quote, a single quote, a line break, a control
      // character, non-ASCII, a trailing space (the package quotes each of them its own way)
      '{}', '[]', '{a: 1}', '[1, 2]', '{"a":"it\'s"}', '{"a":\n"b"}', '{"a":"\t"}', '{"a":"é"}', '{"a":"b"} ', '{"a": "b #c"}', '[{"k":"x: y"}]'];
    for (const j of json) expect({ j, text: yamlText({ k: j, s: [j, { q: j }] }) }).toEqual({ j, text: yamlPackageText({ k: j, s: [j, { q: j }] }) });
    expect(yamlText({ k: '{"a":"b"}' })).toBe('k: \'{"a":"b"}\'\n');
  });

  test('strings the package quotes, escapes or writes as block literals, at every depth', () => {
    const shapes: unknown[] = [
      { a: awkward },
      { a: awkward.map((w) => ({ [w || 'e']: w, z: [w, { q: w }] })) },
      { x: { y: { z: awkward, w: Object.fromEntries(awkward.map((w) => [w, w])) } } },
    ];
    for (const o of shapes) expect(yamlText(o)).toBe(yamlPackageText(o));
    expect(yamlText({ k: 'a\nb' })).toBe('k: |-\n  a\n  b\n');
    expect(yamlText({ q: [{ k: 'a\nb' }] })).toBe('q:\n  - k: |-\n      a\n      b\n');
  });

  test('long multi-line strings (a gateway\'s peer table): written as literal blocks without asking, same bytes', () => {
    const peers = Array.from({ length: 40 }, (_, i) => `  - {name: c${i}, address: "10.0.${i}.1:15443", cidr: 10.${i}.0.0/24} # peer ${i}`).join('\n');
    const shapes = [
      `peers:\n${peers}\n`, `peers:\n${peers}`, `peers:\n${peers}\n\n`, ` lead:\n${peers}`, `peers:\n${peers} \n`, `peers:\n\n${peers}\n`,
      `# comment\n- item: x\n|pipe\n>fold\n---\n...\n${'x'.repeat(80)}\n`, `tab\there\n${peers}`, `é\n${peers}`,
    ];
    for (const v of shapes) {
      for (const o of [{ data: { 'config.yaml': v } }, { l: [{ k: v }] }, { l: [v] }]) expect(yamlText(o)).toBe(yamlPackageText(o));
    }
  });

  test('numbers, empty collections, undefined, and shapes left to the package', () => {
    const shapes: unknown[] = [
      { n: [1.5, -0, 1e21, NaN, -3, Infinity, null, true, false, 0] },
      { e: [], m: {}, l: [[], {}], u: undefined, v: [undefined] },
      { s: [[1, 2], [3]] },
      { d: new Date(0) },
      { '': 1, 'a: b': 2, null: 3, 1: 4 },
      {},
    ];
    for (const o of shapes) expect(yamlText(o)).toBe(yamlPackageText(o));
    expect(yamlText({ e: [], m: {}, n: null })).toBe('e: []\nm: {}\nn: null\n');
  });
});
