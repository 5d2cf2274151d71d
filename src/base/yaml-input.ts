/**
 * Reading one YAML/JSON input (a fleet, a ledger, a moves file) so that no input crashes without a
 * code: too large, not UTF-8 (UTF-16 from some editors), empty, several documents, alias bombs, nesting
 * too deep, YAML syntax. Every refusal is a FleetValidationError naming the file, so a multi-file run
 * reports the other files too. Pure (bytes or text in, data out); the callers read the files.
 */
import * as YAML from 'yaml';
import { FleetProblem, FleetValidationError } from './errors';
import { ProblemCode } from './problem-codes';

/**
 * Largest input read: a fleet of hundreds of clusters, or its ledger, is well under 1 MiB; 4 MiB
 * parses in well under a second, where a 50 MB string took 18 s and 2 GB of memory.
 */
export const MAX_INPUT_BYTES = 4 * 1024 * 1024;
/** Deepest nesting of maps and lists read (a fleet nests about 8 deep). */
const MAX_INPUT_DEPTH = 64;
/** Most alias expansions in one document (the yaml library's own resource-exhaustion guard). */
const MAX_ALIASES = 100;

const refuseAt = (source: string, code: ProblemCode, message: string, fix: string, path: string, what: string): never => {
  const p: FleetProblem = { code, path, message, fix };
  throw new FleetValidationError([p], source, what);
};

/** Bytes to text: refused when too large or not UTF-8 (a UTF-8 byte order mark is dropped). `what`: the kind of file, for messages. */
export function decodeInput(bytes: Uint8Array, source: string, docPath = '(document)', what = 'fleet file'): string {
  const refuse = (_: string, code: ProblemCode, message: string, fix: string): never => refuseAt(source, code, message, fix, docPath, what);
  if (bytes.length > MAX_INPUT_BYTES) {
    refuse(source, 'file-too-large', `the file has ${bytes.length} bytes; inputs are limited to ${MAX_INPUT_BYTES} (4 MiB)`,
      'check that this is the right file (a fleet or ledger is a few KiB); split a huge fleet into several fleets');
  }
  const utf16 = bytes.length >= 2 && ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff));
  if (utf16 || bytes.includes(0)) {
    refuse(source, 'file-encoding', `the file is ${utf16 ? 'UTF-16' : 'binary (it contains NUL bytes)'}, not UTF-8 text`,
      'save it as UTF-8 (PowerShell: `Out-File -Encoding utf8`; iconv -f UTF-16 -t UTF-8)');
  }
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return refuse(source, 'file-encoding', 'the file is not valid UTF-8 text', 'save it as UTF-8');
  }
  return text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
}

/** The deepest nesting of a parsed value (iterative: a deep value cannot overflow the stack here). */
function depthOf(root: unknown): number {
  let max = 0;
  const stack: [unknown, number][] = [[root, 0]];
  while (stack.length) {
    const [v, d] = stack.pop()!;
    if (d > max) max = d;
    if (d > MAX_INPUT_DEPTH) break;
    if (v && typeof v === 'object') for (const x of Object.values(v as object)) stack.push([x, d + 1]);
  }
  return max;
}

/**
 * One YAML/JSON document to data. `syntax`: the code of a syntax error (`yaml-syntax`, `ledger-syntax`,
 * `forklift/moves-syntax`); `what`: the kind of file, for messages.
 */
export function parseYamlInput(text: string, source: string, syntax: ProblemCode, what: string, docPath = '(document)'): unknown {
  const refuse = (_: string, code: ProblemCode, message: string, fix: string): never => refuseAt(source, code, message, fix, docPath, what);
  if (text.length > MAX_INPUT_BYTES) {
    refuse(source, 'file-too-large', `the ${what} has ${text.length} characters; inputs are limited to ${MAX_INPUT_BYTES} (4 MiB)`,
      'check that this is the right file; split a huge fleet into several fleets');
  }
  const tooDeep = () => refuse(source, 'yaml-too-deep', `the ${what} nests maps and lists more than ${MAX_INPUT_DEPTH} deep`,
    `no ${what} nests that deep: check that this is the right file`);
  let docs: YAML.Document.Parsed[];
  try {
    docs = YAML.parseAllDocuments(text, { prettyErrors: true, uniqueKeys: true }) as YAML.Document.Parsed[];
  } catch (e) {
    if (e instanceof RangeError) return tooDeep();
    throw e;
  }
  if (!Array.isArray(docs)) docs = [];
  // a trailing `---` (or one followed by comments only) opens no document worth the name
  const isEmpty = (d: YAML.Document.Parsed) => d.contents === null || (YAML.isScalar(d.contents) && d.contents.value === null && !d.contents.source);
  const real = docs.filter((d) => !isEmpty(d) || d.errors.length > 0);
  if (real.length > 1) {
    const line = real[1].range ? text.slice(0, real[1].range[0]).split('\n').length : undefined;
    refuse(source, 'yaml-multi-document', `the ${what} holds ${real.length} YAML documents (separated by ---${line ? `; the second starts at line ${line}` : ''}); one ${what} is one document`,
      `put each fleet in its own file (several files can be given at once), or remove the extra --- and what follows`);
  }
  const doc = real[0];
  if (!doc) {
    return refuse(source, 'file-empty', `the ${what} is empty (no YAML document, or only comments)`,
      `write the ${what} (docs/fleet.md shows a complete fleet), or give the right file`);
  }
  if (doc.errors.length > 0) {
    if (doc.errors.some((e) => /call stack/i.test(e.message))) return tooDeep();
    const problems = doc.errors.map((e): FleetProblem => {
      const pos = e.linePos?.[0];
      return {
        code: syntax,
        path: `${docPath === '(document)' ? '' : `${docPath} `}${pos ? `line ${pos.line}, column ${pos.col}` : '(document)'}`,
        message: `not valid YAML: ${e.message.split('\n')[0]}`,
        fix: 'correct the syntax at that position (indentation, a missing ":" or quote)',
      };
    });
    throw new FleetValidationError(problems, source, what);
  }
  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIASES });
  } catch (e) {
    if (e instanceof RangeError) return tooDeep();
    if (e instanceof ReferenceError || /alias/i.test((e as Error).message)) {
      return refuse(source, 'yaml-aliases', `the ${what} expands YAML aliases (*name) more than ${MAX_ALIASES} times: ${(e as Error).message}`,
        'write the values out, or use fewer aliases (a "billion laughs" document is refused whole)');
    }
    throw e;
  }
  if (depthOf(data) > MAX_INPUT_DEPTH) return tooDeep();
  if (data === null || data === undefined) {
    return refuse(source, 'file-empty', `the ${what} is empty (no YAML document, or only comments)`,
      `write the ${what} (docs/fleet.md shows a complete fleet), or give the right file`);
  }
  return data;
}
