/**
 * YAML text of one generated object, byte for byte what `YAML.stringify(o, { lineWidth: 0,
 * aliasDuplicateObjects: false })` writes, in a fraction of its time (the `yaml` package builds a
 * document of nodes before it writes a character: that was a third of synth at 100 clusters).
 *
 * Only the layout is done here (block maps and sequences, two-space indents, `[]` / `{}`); how each
 * distinct scalar and key is written (plain, quoted, a block literal with its indicators) is asked of
 * the `yaml` package once and remembered, so quoting rules stay the package's own. Anything outside
 * plain JSON data (a class instance, a function, a sequence directly inside a sequence...) goes to the
 * `yaml` package whole. test/yaml-text.test.ts compares the two on every example's objects.
 */
import * as YAML from 'yaml';

const OPTIONS = { lineWidth: 0, aliasDuplicateObjects: false } as const;

/** The `yaml` package's text for `o`: the reference, and the fallback. */
export function yamlPackageText(o: unknown): string {
  return YAML.stringify(o, OPTIONS);
}

class NotPlain extends Error {}

/** Remembered scalar and key texts; bounded so a huge fleet cannot grow them without end. */
const CACHE_LIMIT = 50_000;
const scalars = new Map<unknown, string>();
const keys = new Map<string, string>();

const remember = <K, V>(m: Map<K, V>, k: K, v: V): V => {
  if (m.size >= CACHE_LIMIT) m.clear();
  m.set(k, v);
  return v;
};

/**
 * Strings the package writes as they are, without asking it: a letter, then letters, digits and `_./-`
 * (names, kinds, label values: most of an object's distinct strings, and unique per cluster so no cache
 * helps). Such a string can be no number of the YAML 1.2 core schema (those start with a digit, a sign or
 * a dot) and holds no indicator; only the core schema's booleans and nulls among them are quoted.
 */
const PLAIN_WORD = /^[A-Za-z][A-Za-z0-9_./-]*$/;
const CORE_WORDS = new Set(['true', 'True', 'TRUE', 'false', 'False', 'FALSE', 'null', 'Null', 'NULL']);
const isPlainWord = (s: string): boolean => PLAIN_WORD.test(s) && !CORE_WORDS.has(s);

/**
 * IPv4 addresses and CIDRs (digits with two dots or more, a prefix length after `/`): unique per cluster, so
 * asking the package for each (about 50 µs) was most of the ledger's time. Two dots make no number of the core
 * schema, and digits, dots and `/` hold no indicator: the package writes them plain.
 */
const IPV4_TEXT = /^[0-9]+(?:\.[0-9]+){2,}(?:\/[0-9]+)?$/;

/**
 * JSON text in a string (a Multus network selection, a NetworkAttachmentDefinition's config: unique per cluster
 * and replica, so no cache helps, and the package's scalar analysis of such a string cost about 0.1 ms, a third of
 * YAML time at 100 clusters). It starts with a flow indicator, so the package cannot write it plain; holding `"`
 * and no `'` it picks single quotes, which need no escapes; with printable ASCII only (no line break, no control
 * character, nothing that forces double quotes) and lines never folded (`lineWidth: 0`), that is the text between
 * two `'`. Anything else about it goes the usual way.
 */
const JSON_TEXT = /^[[{][\x20-\x26\x28-\x7e]*$/;

/**
 * A scalar as a block map value with the key at column 0 (`k: <text>`), continuation lines (a block
 * literal's) as written there: their indent is relative to the key's.
 */
function scalarText(v: string | number | boolean | null): string {
  if (typeof v === 'number' && Number.isSafeInteger(v) && !Object.is(v, -0)) return String(v);
  if (v === null) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'string' && (isPlainWord(v) || IPV4_TEXT.test(v))) return v;
  if (typeof v === 'string' && JSON_TEXT.test(v) && v.includes('"')) return `'${v}'`;
  const hit = scalars.get(v);
  if (hit !== undefined) return hit;
  const text = YAML.stringify({ k: v }, OPTIONS);
  return remember(scalars, v, text.slice(3, -1));
}

/**
 * A multi-line string of printable ASCII with no space at a line's end or the start, ending in at most one
 * newline: the package writes it as a literal block (`|` or `|-`, lines indented by two past the key, empty
 * lines empty) and so does this, without asking (a gateway's peer table is one such string per cluster,
 * unique, so asking meant the package's whole scalar analysis once per cluster). Its indented text is one
 * string in `out` (a peer table at 1000 clusters is 140 KB).
 *
 * Strings past 128 KiB are V8's large objects, each in pages of its own: making one cost about 1 ms of page
 * faults on this machine (a 14 KB one 2.4 µs), so the value is never copied whole on the way (no `'\n' + v`):
 * the indent of the first line is a piece of its own.
 */
function pushBlockLiteral(v: string, indent: string, out: string[]): boolean {
  if (v.length < 64 || !v.includes('\n') || !/^[\x21-\x7e][\x20-\x7e\n]*$/.test(v) || / \n| $|\n\n$/.test(v) || v.startsWith('\n')) return false;
  const clip = v.endsWith('\n');
  const lines = clip ? v.slice(0, -1) : v;
  const nl = `\n${indent}  `;
  // every non-empty line indented, empty lines left empty; without empty lines one native replaceAll (2-3x
  // faster than splitting into lines: a 1000-cluster fleet has 1000 peer tables of 1000 lines)
  const body = lines.includes('\n\n') ? lines.replace(/\n(?=[^\n])/g, nl) : lines.replaceAll('\n', nl);
  out.push(clip ? ' |' : ' |-', nl, body, '\n');
  return true;
}

/** Keys the fast path writes: what Kubernetes field names, label keys and data keys are made of. */
const ORDINARY_KEY = /^[A-Za-z0-9_][A-Za-z0-9_./-]*$/;

function keyText(k: string): string {
  // a plain word is a key as it is a value (names of clusters, labels: unique, so the cache would only miss)
  if (isPlainWord(k)) return k;
  const hit = keys.get(k);
  if (hit !== undefined) return hit;
  // any other key (spaces, indicators, line breaks...) changes how the package lays out its value: the
  // whole object goes to the package (test/yaml-text-property.test.ts found a key with leading spaces)
  if (!ORDINARY_KEY.test(k)) throw new NotPlain();
  const text = YAML.stringify({ [k]: null }, OPTIONS);
  if (!text.endsWith(': null\n') || text.startsWith('? ') || text.slice(0, -7).includes('\n')) throw new NotPlain();
  return remember(keys, k, text.slice(0, -7));
}

const isPlainObject = (v: object): boolean => {
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
};

/** A scalar at `indent` (the column of its key or `- `): continuation lines shifted there. */
function scalarAt(v: string | number | boolean | null, indent: string): string {
  const text = scalarText(v);
  if (!text.includes('\n') || indent === '') return text;
  return text.replace(/\n(?=[^\n])/g, `\n${indent}`);
}

/** A value after `key:` or `- ` at column `indent.length`; appends to `out`. */
function value(v: unknown, indent: string, out: string[], inSeq: boolean): void {
  if (v === null || typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') {
    if (typeof v === 'string' && pushBlockLiteral(v, indent, out)) return;
    out.push(' ', scalarAt(v, indent), '\n');
    return;
  }
  if (typeof v !== 'object' || v === undefined) throw new NotPlain();
  if (Array.isArray(v)) {
    if (v.length === 0) { out.push(' []\n'); return; }
    if (inSeq) throw new NotPlain(); // `- - a`: left to the package
    out.push('\n');
    seq(v, `${indent}  `, out);
    return;
  }
  if (!isPlainObject(v)) throw new NotPlain();
  const entries = Object.entries(v).filter(([, x]) => x !== undefined);
  if (entries.length === 0) { out.push(' {}\n'); return; }
  if (inSeq) {
    out.push(' ');
    map(entries, `${indent}  `, out, true);
  } else {
    out.push('\n');
    map(entries, `${indent}  `, out, false);
  }
}

function map(entries: [string, unknown][], indent: string, out: string[], firstInline: boolean): void {
  entries.forEach(([k, x], i) => {
    out.push(i === 0 && firstInline ? '' : indent, keyText(k), ':');
    value(x, indent, out, false);
  });
}

function seq(items: unknown[], indent: string, out: string[]): void {
  for (const x of items) {
    out.push(indent, '-');
    value(x === undefined ? null : x, indent, out, true);
  }
}

/** The YAML text of one object (a map at the top, as every API object is). */
export function yamlText(o: unknown): string {
  if (o === null || typeof o !== 'object' || Array.isArray(o) || !isPlainObject(o)) return yamlPackageText(o);
  const entries = Object.entries(o).filter(([, x]) => x !== undefined);
  if (entries.length === 0) return yamlPackageText(o);
  const out: string[] = [];
  try {
    map(entries, '', out, false);
  } catch (e) {
    if (e instanceof NotPlain) return yamlPackageText(o);
    throw e;
  }
  return out.join('');
}
