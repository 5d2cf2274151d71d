/**
 * The schema harness keeps what it derives (prepared CRD schemas, schemas from kubernetes-models' .d.ts, ajv's
 * validators) in a disk cache (test/support/derived-cache.ts) instead of deriving it again in each of the 22
 * suites that validate. This suite checks that a cache hit gives what deriving afresh gives (the same schemas,
 * the same errors for the same objects), and that the cache is never stale: an input file changed, a file added
 * to a listing, another version of the deriving code, or an unreadable entry, and the value is derived again.
 */
import * as fs from 'fs';
import * as path from 'path';
import { DerivedCache } from './support/derived-cache';
import { resetSchemaHarness, schemaFor, validateObject } from './support/schemas';
import { suiteTmpDir } from './support/tmp';

// each object breaks its schema in several ways, so that a validator that differs in any of them shows
const OBJECTS: any[] = [
  { // a CRD of test/fixtures/upstream (the crds entry)
    apiVersion: 'k8s.cni.cncf.io/v1', kind: 'NetworkAttachmentDefinition',
    metadata: { name: 'n', namespace: 'ns', bogus: 1 }, spec: { config: 5, extra: true },
  },
  { // a KubeVirt schema file of the registry (the crds entry)
    apiVersion: 'migrations.kubevirt.io/v1alpha1', kind: 'MigrationPolicy',
    metadata: { name: 'p' }, spec: { allowAutoConverge: 'yes', selectors: {}, nope: 1 },
  },
  { // the KubeVirt CR (its own entry)
    apiVersion: 'kubevirt.io/v1', kind: 'KubeVirt', metadata: { name: 'kubevirt', namespace: 'kubevirt' },
    spec: { configuration: { migrations: { netwrok: 'x', parallelMigrationsPerCluster: '5' } } },
  },
  { // a kind from kubernetes-models' declarations (a dts entry, and ObjectMeta's)
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd', labelz: {} },
    spec: { replicas: '3', selector: {}, template: { spec: { containers: [{ name: 'c', imagePullPolicy: 5, bogus: 1 }] } } },
  },
];

afterAll(() => resetSchemaHarness()); // the checkout's cache again, for nothing else in this file

test('a cache hit gives what deriving afresh gives: the same schemas, the same errors', () => {
  const dir = path.join(suiteTmpDir('mm-schema-cache-'), 'cache');
  const cold = resetSchemaHarness(dir);
  const fresh = OBJECTS.map((o) => validateObject(o));
  const freshSchemas = OBJECTS.map((o) => schemaFor(o.apiVersion, o.kind));
  expect(cold.hits).toBe(0);
  // crds, kubevirt-released, the Deployment's and ObjectMeta's schemas, and a validator per schema
  expect(cold.misses).toBeGreaterThanOrEqual(4 + OBJECTS.length);

  const warm = resetSchemaHarness(dir);
  const cached = OBJECTS.map((o) => validateObject(o));
  expect({ hits: warm.hits, misses: warm.misses }).toEqual({ hits: cold.misses, misses: 0 });
  expect(cached).toEqual(fresh);
  expect(OBJECTS.map((o) => schemaFor(o.apiVersion, o.kind))).toEqual(freshSchemas);
  // every object is refused, for more than one reason
  for (const errors of fresh) expect(errors.length).toBeGreaterThan(1);
  expect(fresh.flat().join('\n')).toMatch(/Deployment\/d: \.spec\.replicas: must be number/);
}, 120_000);

describe('DerivedCache: never stale', () => {
  const dir = suiteTmpDir('mm-derived-cache-');
  const input = path.join(dir, 'input.txt');
  const derived: string[] = [];
  /** Derives "the input's text, upper case" through `cache`, counting each derivation. */
  const upper = (cache: DerivedCache, key = 'k'): string => cache.json('upper', key, () => {
    const value = fs.readFileSync(input, 'utf8').toUpperCase();
    derived.push(value);
    return { value, inputs: [input] };
  });

  test('a hit while the input is unchanged; derived again when it changes, for another key or version', () => {
    fs.writeFileSync(input, 'one');
    const cache = new DerivedCache(path.join(dir, 'c1'), 'v1');
    expect([upper(cache), upper(cache)]).toEqual(['ONE', 'ONE']);
    expect(derived).toEqual(['ONE']);
    expect(upper(new DerivedCache(path.join(dir, 'c1'), 'v1'))).toBe('ONE'); // another process: the file
    expect(derived).toEqual(['ONE']);
    fs.writeFileSync(input, 'two');
    expect(upper(cache)).toBe('TWO');
    expect(upper(cache, 'k2')).toBe('TWO'); // another key (a file listing that changed)
    expect(upper(new DerivedCache(path.join(dir, 'c1'), 'v2'))).toBe('TWO'); // another version of the deriving code
    expect(derived).toEqual(['ONE', 'TWO', 'TWO', 'TWO']);
    expect(cache.counts).toEqual({ hits: 1, misses: 3 });
  });

  test('an input gone or an entry unreadable: derived again, and the entry rewritten whole', () => {
    derived.length = 0;
    fs.writeFileSync(input, 'three');
    const cache = new DerivedCache(path.join(dir, 'c2'), 'v1');
    expect(upper(cache)).toBe('THREE');
    const entry = path.join(dir, 'c2', 'upper.json');
    fs.writeFileSync(entry, '{"version": "v1", "key": "k", "inpu'); // torn
    expect(upper(cache)).toBe('THREE');
    expect(JSON.parse(fs.readFileSync(entry, 'utf8')).value).toBe('THREE');
    fs.rmSync(input);
    expect(() => upper(cache)).toThrow(/ENOENT/); // not the cached value of a file that is gone
    expect(derived).toEqual(['THREE', 'THREE']);
    expect(fs.readdirSync(path.join(dir, 'c2'))).toEqual(['upper.json']); // no temp file left
  });

  test('texts: stored per key and version, absent otherwise', () => {
    const cache = new DerivedCache(path.join(dir, 'c3'), 'v1');
    expect(cache.text('schema a')).toBeUndefined();
    cache.storeText('schema a', 'code a');
    expect(cache.text('schema a')).toBe('code a');
    expect(cache.text('schema b')).toBeUndefined();
    expect(new DerivedCache(path.join(dir, 'c3'), 'v2').text('schema a')).toBeUndefined();
    expect(cache.counts).toEqual({ hits: 1, misses: 2 });
  });
});
