/**
 * What the writer (./write-tree.ts) reads and judges before it writes: the manifest of generated files
 * (its format, git's conflict markers in it), what lies at each path we would write, whether a file is
 * ours, and every failure as a coded problem with the path and a fix. Reads only; nothing here writes.
 */
import * as crypto from 'crypto';
import * as path from 'path';
import * as YAML from 'yaml';
import { FleetProblem, MigrationMeshError } from '../src/base/errors';
import { ProblemCode } from '../src/base/problem-codes';
import { FLEET_LABEL } from '../src/base/names';

/** The manifest of generated files inside each fleet directory. */
export const MANIFEST_FILE = '.migration-mesh.manifest';

/** What the writer reads of a file's status (Node's `fs.Stats` has it). */
interface StatLike {
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

/**
 * The file system calls the writer makes; Node's `fs` is one (tests inject failures). Declared here
 * rather than picked from `typeof fs`, so the package's types need no @types/node in a user's project.
 */
export interface WriterFs {
  lstatSync(p: string): StatLike;
  statSync(p: string): StatLike;
  readFileSync(p: string, encoding: 'utf8'): string;
  /** Always given `encoding: 'utf8'`: with it, Node writes a string in one native call (without, it converts and writes from JS). */
  writeFileSync(p: string, data: string, options: { flag: string; encoding: 'utf8' }): void;
  linkSync(existing: string, link: string): void;
  renameSync(from: string, to: string): void;
  unlinkSync(p: string): void;
  mkdirSync(p: string): unknown;
  rmdirSync(p: string): void;
  readdirSync(p: string, options: { withFileTypes: true }): { name: string; isDirectory(): boolean }[];
  realpathSync(p: string): string;
}

/** The output (or the ledger) cannot be written: every problem; nothing was written, or all of it was rolled back. */
export class OutputWriteError extends MigrationMeshError {
  constructor(problems: readonly FleetProblem[], rolledBack = false) {
    const tail = rolledBack ? 'every change was rolled back' : 'nothing was written';
    const one = (p: FleetProblem) => `[${p.code}] ${p.path}: ${p.message}${p.fix ? `; fix: ${p.fix}` : ''}`;
    super(problems.length === 1 ? `${one(problems[0])} (${tail})`
      : `cannot write the output (${problems.length} problems; ${tail})\n${problems.map((p) => `  - ${one(p)}`).join('\n')}`, problems);
    this.name = 'OutputWriteError';
  }
}

export const sha256 = (s: string | Uint8Array): string => crypto.createHash('sha256').update(s).digest('hex');

/** Git's conflict markers, in the default and the diff3 style. */
const CONFLICT = /^(<{7}|={7}|>{7}|\|{7})( |$)/;

/**
 * The manifest: each path with the hashes it may have. A manifest git could not merge (two branches
 * each synthesized) lists both sides: a file is ours if it is either side's.
 */
function parseManifest(text: string, where: string): Map<string, Set<string>> | FleetProblem {
  const out = new Map<string, Set<string>>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#') || CONFLICT.test(line)) continue;
    const m = /^([0-9a-f]{64}) {2}(.+)$/.exec(line);
    if (!m || m[2].split('/').some((s) => s === '..' || s === '.' || s === '') || m[2].startsWith('/')) {
      return problem('write/manifest-invalid', where, `line '${line.slice(0, 80)}' is not '<sha256>  <relative path>'`,
        `restore it from version control, or delete it to let synth adopt the files that match what it generates`);
    }
    out.set(m[2], new Set([...out.get(m[2]) ?? [], m[1]]));
  }
  return out;
}

/**
 * A file git left with conflict markers: its two sides (ours, theirs), each whole; none when it has no
 * markers. A side that is a file synth generated makes the conflicted file ours to overwrite.
 */
function conflictSides(content: string): string[] {
  if (!/^<{7}( |$)/m.test(content)) return [];
  const sides = ['', ''];
  let at: 'both' | 'ours' | 'base' | 'theirs' = 'both';
  for (const line of content.split(/(?<=\n)/)) {
    if (/^<{7}( |\n|$)/.test(line) && at === 'both') { at = 'ours'; continue; }
    if (/^\|{7}( |\n|$)/.test(line) && at === 'ours') { at = 'base'; continue; }
    if (/^={7}(\n|$)/.test(line) && (at === 'ours' || at === 'base')) { at = 'theirs'; continue; }
    if (/^>{7}( |\n|$)/.test(line) && at === 'theirs') { at = 'both'; continue; }
    if (at === 'both' || at === 'ours') sides[0] += line;
    if (at === 'both' || at === 'theirs') sides[1] += line;
  }
  return at === 'both' ? sides : [];
}

/** The content is one the manifest lists for it (or, conflicted, either side is). */
export const listedAs = (hashes: ReadonlySet<string>, content: string): boolean =>
  hashes.has(sha256(content)) || conflictSides(content).some((side) => hashes.has(sha256(side)));

export function problem(code: ProblemCode, where: string, message: string, fix: string): FleetProblem {
  return { code, path: where, message, fix };
}

/** A file system error as a problem: the code by errno, the path, a fix. */
export function ioProblem(e: unknown, where: string): FleetProblem {
  const err = e as NodeJS.ErrnoException;
  const what = `${err.code ?? 'error'}: ${err.message?.replace(/^[A-Z]+: /, '') ?? String(e)}`;
  switch (err.code) {
    case 'ENOTDIR': case 'EEXIST':
      return problem('write/not-a-directory', where, `a part of this path is not a directory (${what})`, 'choose another --out, or move the file that is in the way');
    case 'EACCES': case 'EPERM':
      return problem('write/denied', where, `permission denied (${what})`, 'make the directory writable for this user, or choose another --out / --ledger');
    case 'EROFS':
      return problem('write/read-only', where, `read-only file system (${what})`, 'write to a writable file system (another --out / --ledger)');
    case 'ENOSPC': case 'EDQUOT':
      return problem('write/no-space', where, `no space left (${what})`, 'free space on that file system, or choose another --out');
    default:
      return problem('write/failed', where, `cannot write here (${what})`, 'choose a directory on a regular, writable file system');
  }
}

export const inside = (parent: string, child: string): boolean => {
  const rel = path.relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
};

/**
 * The directories from the first missing one down to `dir`, parents first; a problem when something
 * on the way exists but is not a directory (symlinks to directories are followed: `--out` may go
 * through them).
 */
export function missingDirs(dir: string, io: WriterFs): string[] | FleetProblem {
  const abs = path.resolve(dir);
  const chain: string[] = [];
  for (let p = abs; ; p = path.dirname(p)) {
    chain.unshift(p);
    if (p === path.dirname(p)) break;
  }
  for (let i = 0; i < chain.length; i++) {
    try {
      if (!io.statSync(chain[i]).isDirectory()) {
        return problem('write/not-a-directory', chain[i], `is a file, but ${dir} needs it to be a directory`, 'choose another --out (or --ledger), or move that file away');
      }
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return chain.slice(i);
      return ioProblem(e, chain[i]);
    }
  }
  return [];
}

/** The fleet directory itself: absent, a directory, or a symlink to one inside the output root. */
export function checkFleetDir(dir: string, io: WriterFs): FleetProblem | undefined {
  let st: StatLike;
  try { st = io.lstatSync(dir); } catch (e) { return (e as NodeJS.ErrnoException).code === 'ENOENT' ? undefined : ioProblem(e, dir); }
  if (st.isSymbolicLink()) {
    let real: string;
    try { real = io.realpathSync(dir); } catch (e) { return ioProblem(e, dir); }
    const root = io.realpathSync(path.dirname(path.resolve(dir)));
    if (!inside(root, real)) {
      return problem('write/symlink', dir, `is a symbolic link to ${real}, outside the output directory ${path.dirname(dir)}`, `remove the link (synth writes the fleet directory itself), or use --out ${path.dirname(real)}`);
    }
    st = io.statSync(dir);
  }
  if (!st.isDirectory()) {
    return problem('write/not-a-directory', dir, 'is a file, not the fleet\'s output directory', 'move the file away, or choose another --out');
  }
  return undefined;
}

export function readManifest(dir: string, io: WriterFs): Map<string, Set<string>> | undefined | FleetProblem {
  const file = path.join(dir, MANIFEST_FILE);
  let st: StatLike;
  try { st = io.lstatSync(file); } catch (e) { return (e as NodeJS.ErrnoException).code === 'ENOENT' || (e as NodeJS.ErrnoException).code === 'ENOTDIR' ? undefined : ioProblem(e, file); }
  if (!st.isFile()) return problem('write/manifest-invalid', file, 'is not a regular file', 'remove it; synth writes the manifest itself');
  try { return parseManifest(io.readFileSync(file, 'utf8'), file); } catch (e) { return ioProblem(e, file); }
}

/** In a tree from before manifests: one of this fleet's objects, written by an older version. */
export function legacyOurs(content: string, fleet: string): boolean {
  try {
    const docs = YAML.parseAllDocuments(content).map((d) => d.toJS());
    return docs.length > 0 && docs.every((d) => d?.metadata?.labels?.[FLEET_LABEL] === fleet);
  } catch {
    return false;
  }
}

/**
 * What lies at `full` (below `root`): a regular file's content, nothing, or a problem. `verified`
 * remembers directories already found real (the write holds the lock), so a tree of thousands of files
 * checks each directory once.
 */
export function readTarget(full: string, root: string, io: WriterFs, verified?: Set<string>): { content?: string } | FleetProblem {
  // every parent inside the tree must be a real directory: a symlink could lead the write elsewhere
  const checked: string[] = [];
  for (let p = path.dirname(full); inside(root, p) && p !== root && !verified?.has(p); p = path.dirname(p)) {
    checked.push(p);
    try {
      const st = io.lstatSync(p);
      if (st.isSymbolicLink()) return problem('write/symlink', p, 'is a symbolic link inside the output tree', 'replace it with a directory, or remove it; synth writes real directories');
      if (!st.isDirectory()) return problem('write/not-ours', p, 'is a file where synth writes a directory', 'move the file away (it is not one synth generated)');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return {};
      return ioProblem(e, p);
    }
  }
  for (const p of checked) verified?.add(p);
  try {
    const st = io.lstatSync(full);
    if (!st.isFile()) return problem('write/not-ours', full, `is a ${st.isDirectory() ? 'directory' : st.isSymbolicLink() ? 'symbolic link' : 'special file'} where synth writes a file`, 'move it away');
    return { content: io.readFileSync(full, 'utf8') };
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? {} : ioProblem(e, full);
  }
}

/** The writer's own temp and backup files and staging directories (./write-guard.ts `sideName`): this write's, while it prepares. */
const SIDE_FILE = /^\..+\.mm-(tmp|old)-\d+-[0-9a-f]{8}$/;

/** Files under `dir` that are neither generated nor the manifest (bounded: a tree's own files). */
export function foreignFiles(dir: string, generated: { has(rel: string): boolean }, io: WriterFs): string[] {
  const out: string[] = [];
  const walk = (d: string, rel: string): void => {
    for (const e of io.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      if (SIDE_FILE.test(e.name)) continue; // this write's temp files and staging directories
      if (e.isDirectory()) walk(path.join(d, e.name), r);
      else if (!generated.has(r) && r !== MANIFEST_FILE) out.push(r);
    }
  };
  try { walk(dir, ''); } catch { /* a tree we cannot list has no foreign files to report; the writes say why */ }
  return out.sort();
}

/** The manifest text from each file's sha256, sorted by path, after a comment naming the fleet. */
export function renderManifest(fleet: string, hashes: ReadonlyMap<string, string>): string {
  const lines = [...hashes.keys()].sort().map((rel) => `${hashes.get(rel)!}  ${rel}`);
  return `# migration-mesh: the files it generated for fleet '${fleet}' (check: sha256sum -c ${MANIFEST_FILE}); files not listed are not ours and are left alone\n${lines.join('\n')}\n`;
}
