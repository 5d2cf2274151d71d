/**
 * A disk cache for what a test harness derives from committed or installed files, so that each suite does not
 * derive it again. The schema harness (test/support/schemas.ts) derived its JSON schemas (from the CRD YAML of
 * test/fixtures and from kubernetes-models' .d.ts, with the TypeScript compiler) and compiled them with ajv in
 * each of the 22 unit suites that validate objects: 75 of the unit lane's 290 CPU seconds
 * (docs/dev/lab/2026-12-03-unit-lane-cpu.md).
 *
 * An entry is named by its caller and stamped with the deriving code's version (the caller's `version`: its
 * source text and the versions of the packages it derives with); a JSON entry also holds the sha256 of every
 * file it was derived from. An entry whose version or any of whose files differ is derived again and rewritten,
 * so the cache can only be cold, never stale. Each write goes to a temp file renamed into place: two jest
 * workers (or lanes) writing the same entry leave one whole entry, never a torn one. An unreadable entry is
 * derived again.
 *
 * The cache lives in the checkout (node_modules/.cache/migration-mesh/), never in a /tmp shared by checkouts.
 */
import { createHash } from 'crypto';
import * as fs from 'fs';
import * as path from 'path';

const sha256 = (data: string | Buffer): string => createHash('sha256').update(data).digest('hex');

/** The sha256 of a file's bytes; undefined when it cannot be read. */
function fileHash(file: string): string | undefined {
  try {
    return sha256(fs.readFileSync(file));
  } catch {
    return undefined;
  }
}

/** What a JSON entry holds: the version, key and input hashes it was derived with, then the value. */
interface JsonEntry<T> {
  version: string;
  key: string;
  inputs: Array<[string, string]>;
  value: T;
}

/** What a cache did, for the suite that checks it and for a reader wondering why a suite was slow. */
export interface CacheCounts {
  hits: number;
  misses: number;
}

export class DerivedCache {
  readonly counts: CacheCounts = { hits: 0, misses: 0 };

  /**
   * @param dir where the entries go (made on the first write)
   * @param version what derives the entries (its source text, package versions): a different one derives again
   */
  constructor(readonly dir: string, readonly version: string) {}

  /**
   * The value `derive` returns, from the cache when an entry `name` of this version and `key` exists whose input
   * files all still have the bytes they had; else derived now and stored. `key` is what the caller knows before
   * deriving (the list of files to read: a file added changes it); `derive` returns the value (JSON: plain
   * objects, arrays, strings, finite numbers, booleans, null) and the files it was derived from.
   */
  json<T>(name: string, key: string, derive: () => { value: T; inputs: readonly string[] }): T {
    const file = this.entryFile(name, 'json');
    const hit = this.readJson<T>(file, key);
    if (hit !== undefined) {
      this.counts.hits++;
      return hit;
    }
    this.counts.misses++;
    const { value, inputs } = derive();
    const hashed = [...new Set(inputs)].sort().map((f): [string, string] => [f, fileHash(f) ?? '']);
    this.write(file, JSON.stringify({ version: this.version, key, inputs: hashed, value } satisfies JsonEntry<T>));
    return value;
  }

  /**
   * The text stored for `key` (a text that is a function of `key` alone: ajv's standalone code of a schema, the key
   * being the schema), or undefined when there is none (the caller derives it and calls `storeText`).
   */
  text(key: string): string | undefined {
    try {
      const text = fs.readFileSync(this.textFile(key), 'utf8');
      this.counts.hits++;
      return text;
    } catch {
      this.counts.misses++;
      return undefined;
    }
  }

  /** Stores the text derived for `key` (see `text`). */
  storeText(key: string, text: string): void {
    this.write(this.textFile(key), text);
  }

  private textFile(key: string): string {
    return this.entryFile(`text-${sha256(`${this.version}\n${key}`)}`, 'txt');
  }

  private entryFile(name: string, ext: string): string {
    return path.join(this.dir, `${name.replace(/[^A-Za-z0-9._-]+/g, '_')}.${ext}`);
  }

  private readJson<T>(file: string, key: string): T | undefined {
    let entry: JsonEntry<T>;
    try {
      entry = JSON.parse(fs.readFileSync(file, 'utf8'));
    } catch {
      return undefined; // absent, or unreadable: derived again
    }
    if (entry.version !== this.version || entry.key !== key) return undefined;
    if (!entry.inputs.every(([f, h]) => fileHash(f) === h)) return undefined;
    return entry.value;
  }

  private write(file: string, text: string): void {
    fs.mkdirSync(this.dir, { recursive: true });
    const tmp = `${file}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`;
    fs.writeFileSync(tmp, text);
    fs.renameSync(tmp, file);
  }
}
