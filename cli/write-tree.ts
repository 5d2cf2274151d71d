/**
 * Writing output trees and ledgers as one transaction, owning only what we generated.
 *
 * Each fleet directory (`<out>/<fleet>/`) carries a manifest of the files synth generated there
 * (`.migration-mesh.manifest`, in `sha256sum` format, so `sha256sum -c` checks it). A write:
 *
 *   1. checks each file as it arrives (reads only, ./write-checks.ts): every path we need is a directory
 *      or absent, nothing on the way is a file or a symlink out of the tree; a file we would overwrite or
 *      remove must be ours (listed in the manifest with the content we wrote; or, in a tree from before
 *      manifests, identical to what we generate or one of this fleet's objects); files that are not ours
 *      are left alone;
 *   2. prepares it at once (new names only): a changed file as a temp file beside its target and a hard
 *      link keeping the old content; a file in a directory that does not exist yet (a new fleet
 *      directory, a new cluster) straight into that directory built whole under a staging name beside
 *      its final one (`.<name>.mm-tmp-*`: one rename commits it, not one per file); then the manifest
 *      (built from each file's hash as it passed) and the ledger the same way, and one flush to disk. Files arrive one cluster at a
 *      time (`writeStreamedOutputs`), so no whole tree is held in memory. Once one problem is found,
 *      nothing more is prepared (the rest is only checked, so every problem is listed); any problem or
 *      failure removes what was created and touches nothing else. With two or more CPUs, files into
 *      staging directories past the first 64 are created by a writer thread (./write-worker.ts) while
 *      the next cluster is built; the flush waits for it, and its failures are this write's;
 *   3. commits by renames (atomic per file or staged directory), the manifest and the ledger last; a
 *      failure rolls every done step back from the kept links (a staged directory back to its staging name).
 *
 * Around the three (./write-guard.ts): a lock beside every fleet directory and ledger (a second writer
 * is refused with `write/locked`), a journal written before the first rename (a run killed during the
 * renames is finished by the next writer), leftovers of killed runs removed, and SIGINT / SIGTERM held
 * until the write has ended. An interrupt at any instant leaves the old tree and ledger or the new ones.
 *
 * Every failure is a `OutputWriteError` (a `MigrationMeshError`): stable code, the path, the fix.
 * Directories are created one level at a time (never `mkdir -p`, which Node loops on forever where a
 * parent exists but cannot hold directories, as under /proc).
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { FleetProblem } from '../src/base/errors';
import { closeSession, dropJournal, guardSignals, openSession, removeTree, sideName, writeJournal } from './write-guard';
import {
  MANIFEST_FILE, OutputWriteError, WriterFs, checkFleetDir, foreignFiles, inside, ioProblem, legacyOurs, listedAs, missingDirs, problem,
  readManifest, readTarget, renderManifest, sha256,
} from './write-checks';
import { oncePerPath } from './problems-once';
import { FileWriterThread, ThreadWriteError } from './write-worker';

export { MANIFEST_FILE, OutputWriteError } from './write-checks';
export type { WriterFs } from './write-checks';

/** One fleet directory and everything synth generates in it. */
export interface OutputTree {
  /** The fleet directory (`<out>/<fleet>`). */
  readonly dir: string;
  /** The fleet's name: written in the manifest; adopts this fleet's objects in a tree from before manifests. */
  readonly fleet: string;
  /** Every generated file, relative to `dir`, '/'-separated. */
  readonly files: ReadonlyMap<string, string>;
}

/** A fleet directory whose files are produced during the write, one at a time (a cluster at a time). */
export interface StreamedTree {
  /** The fleet directory (`<out>/<fleet>`). */
  readonly dir: string;
  /** The fleet's name (see `OutputTree.fleet`). */
  readonly fleet: string;
  /**
   * Called once, under the lock: passes every generated file (relative to `dir`, '/'-separated) to
   * `emit`, each path once. What it throws ends the write with nothing written.
   */
  produce(emit: (rel: string, content: string) => void): void;
}

/** One file written whole (the ledger). */
export interface OutputFile {
  readonly file: string;
  readonly content: string;
}

/** What a write did to one fleet directory. */
export interface TreeWriteReport {
  readonly dir: string;
  /** Files created or changed. */
  readonly written: string[];
  /** Files we generated before and no longer generate. */
  readonly removed: string[];
  /** Files not ours left in place (listed once, when a tree from before manifests is adopted). */
  readonly foreign: string[];
}

/** Callbacks of a write. */
export interface WriteHooks {
  /** Told what was cleaned up after an interrupted earlier run (a finished commit, leftover files removed). */
  readonly onNotice?: (line: string) => void;
}

/**
 * Files written into staging directories on the main thread before the rest go to a writer thread
 * (./write-worker.ts): a small write (an example, a test's fleet) is over before a thread would have started.
 */
const THREAD_AFTER_FILES = 64;
/**
 * Whether a writer thread can run beside this one: two CPUs or more for this process (its affinity counts;
 * on one CPU the thread only adds switches: 1.4-1.9 s instead of 1.35 s at 100 clusters). MM_WRITE_THREAD=off
 * turns it off.
 */
const threadWorthIt = (): boolean => process.env.MM_WRITE_THREAD !== 'off' && os.availableParallelism() >= 2;

/**
 * A prepared change to one path: a file's new content in `temp`, or (`dir`) a new directory built whole
 * under the staging name `temp` beside its final place, files and all, and renamed into place at once.
 */
type Op =
  | { kind: 'write'; target: string; temp?: string; backup?: string; dir?: true }
  | { kind: 'remove'; target: string; backup?: string };

/** The transaction so far: what was prepared (in commit order), the directories staged, the problems. */
class Prepared {
  /** In commit order: each tree's writes, removals and manifest, then the ledger. */
  readonly ops: Op[] = [];
  /** Every op prepared so far (what a failure must undo). */
  readonly all: Op[] = [];
  readonly problems: FleetProblem[] = [];
  /** Directories that exist (or were created) as real directories, or are staged (final paths). */
  readonly dirs = new Set<string>();
  /** Each directory created by this write (its final path) and where it is until the commit (inside a staging directory). */
  private readonly placed = new Map<string, string>();
  /** Staging directories created since the last `write` returned (ops the caller puts in commit order). */
  private staged: Op[] = [];
  /** Directories that may be left empty by removals, each with its fleet directory. */
  readonly pruneRoots: { dir: string; root: string }[] = [];
  /** The directory being created (where a failure is reported). */
  private mkdirAt?: string;
  /** Files written into staging directories so far; past THREAD_AFTER_FILES (with Node's own fs) the thread writes them. */
  private stagedFiles = 0;
  private thread?: FileWriterThread;
  /** Whether this write uses a writer thread: decided once, at the first file past THREAD_AFTER_FILES. */
  private threaded?: boolean;
  constructor(readonly io: WriterFs) {}

  /**
   * Missing directories down to `dir`, checked (a problem) or created now: the first missing one under a
   * staging name beside it (one op, renamed into place at the commit), those below it inside that one.
   */
  ensureDir(dir: string, create: boolean): boolean {
    const abs = path.resolve(dir);
    if (this.dirs.has(abs)) return true;
    let known = abs;
    const below: string[] = [];
    while (!this.dirs.has(known) && known !== path.dirname(known)) { below.unshift(known); known = path.dirname(known); }
    const missing = this.placed.has(known) ? below : missingDirs(abs, this.io); // below a staged directory nothing exists yet
    if (!Array.isArray(missing)) { this.problems.push(missing); return false; }
    if (!create) return true;
    for (const d of missing) {
      this.mkdirAt = d;
      const parent = this.placed.get(path.dirname(d));
      const at = parent ? path.join(parent, path.basename(d)) : sideName(d, 'tmp');
      // inside a staging directory, once the writer thread runs, the thread makes it before the files queued after it
      if (parent && this.thread) this.thread.mkdir(at, d);
      else this.io.mkdirSync(at);
      if (!parent) {
        const op: Op = { kind: 'write', target: d, temp: at, dir: true };
        this.all.push(op);
        this.staged.push(op);
      }
      this.placed.set(d, at);
      this.dirs.add(d);
    }
    this.mkdirAt = undefined;
    this.dirs.add(abs);
    return true;
  }

  /**
   * New content beside `target` (and a link keeping the old one), or straight into a staged directory,
   * unless a problem was already found. Returns the ops to commit, in order: staging directories this
   * created, then the file's own (none when it went into a staged directory).
   */
  write(target: string, content: string, exists: boolean): Op[] {
    if (this.problems.length) return [];
    const op: Op = { kind: 'write', target };
    try {
      this.ensureDir(path.dirname(target), true);
      const inStaged = this.placed.get(path.dirname(path.resolve(target)));
      if (inStaged && !exists) {
        this.writeStaged(path.join(inStaged, path.basename(target)), target, content);
        return this.staged.splice(0);
      }
      op.temp = sideName(target, 'tmp');
      this.io.writeFileSync(op.temp, content, { flag: 'wx', encoding: 'utf8' });
      if (exists) { op.backup = sideName(target, 'old'); this.io.linkSync(target, op.backup); }
      this.all.push(op);
    } catch (e) {
      this.abandon([op]);
      throw e instanceof OutputWriteError ? e : new OutputWriteError([ioProblem(e, this.mkdirAt ?? target)]);
    }
    return [...this.staged.splice(0), op];
  }

  /** A new file inside a staging directory: here, or by the writer thread once there are many (Node's fs only). */
  private writeStaged(file: string, target: string, content: string): void {
    if (this.io !== fs || ++this.stagedFiles <= THREAD_AFTER_FILES || !(this.threaded ??= threadWorthIt())) {
      this.io.writeFileSync(file, content, { flag: 'wx', encoding: 'utf8' });
      return;
    }
    this.thread ??= new FileWriterThread();
    this.thread.queue(file, target, content);
    this.throwIfFailed(this.thread.take());
  }

  /** Wait for the writer thread's files and end it (before the flush); throws its first failure. */
  finishThread(): void {
    const t = this.thread;
    this.thread = undefined;
    this.throwIfFailed(t?.close());
  }

  /** End the writer thread after what it was given, its failures moot: before removing what it writes into. */
  private dropThread(): void {
    try { this.finishThread(); } catch { /* a failure or a stall: its staging directories are removed all the same */ }
  }

  private throwIfFailed(failed: ThreadWriteError | undefined): void {
    if (failed) throw new OutputWriteError([ioProblem(Object.assign(new Error(failed.message), { code: failed.code }), failed.target)]);
  }

  remove(target: string): Op | undefined {
    if (this.problems.length) return undefined;
    const op: Op = { kind: 'remove', target, backup: sideName(target, 'old') };
    try { this.io.linkSync(target, op.backup!); this.all.push(op); } catch (e) {
      op.backup = undefined;
      this.abandon([op]);
      throw new OutputWriteError([ioProblem(e, target)]);
    }
    return op;
  }

  /** Remove every temp file, backup link and staging directory (nothing was committed). */
  abandon(extra: Op[] = []): void {
    this.dropThread();
    for (const op of [...this.all, ...extra]) {
      if (op.kind === 'write' && op.dir) { if (op.temp) removeTree(op.temp, this.io); continue; }
      for (const p of [op.kind === 'write' ? op.temp : undefined, op.backup]) {
        if (p) try { this.io.unlinkSync(p); } catch { /* already gone */ }
      }
    }
  }
}

/**
 * Write every tree and file as one transaction (see the file comment). Throws `OutputWriteError`
 * with every problem found; nothing is then written.
 */
export function writeOutputs(trees: readonly OutputTree[], files: readonly OutputFile[] = [], io: WriterFs = fs, hooks: WriteHooks = {}): TreeWriteReport[] {
  return writeStreamedOutputs(trees.map((t) => ({
    dir: t.dir, fleet: t.fleet,
    produce: (emit) => { for (const rel of [...t.files.keys()].sort()) emit(rel, t.files.get(rel)!); },
  })), files, io, hooks);
}

/**
 * `writeOutputs` for trees produced during the write: each file is checked and prepared as it comes,
 * then dropped; only its hash is kept (for the manifest). Peak memory: what `produce` holds at once.
 */
export function writeStreamedOutputs(
  trees: readonly StreamedTree[], files: readonly OutputFile[] = [], io: WriterFs = fs, hooks: WriteHooks = {},
): TreeWriteReport[] {
  const ended = guardSignals();
  let result: 'committed' | 'rolled back' | 'nothing written' = 'nothing written';
  const session = openSession(trees.map((t) => t.dir), files.map((f) => f.file));
  if (Array.isArray(session)) { ended(result); throw new OutputWriteError(session); }
  try {
    for (const n of session.notices) hooks.onNotice?.(n);
    const p = new Prepared(io);
    const reports: TreeWriteReport[] = [];
    try {
      for (const tree of trees) { const r = streamTree(tree, p); if (r) reports.push(r); }
      for (const f of files) checkFile(f, p);
      p.finishThread();
      if (p.problems.length) throw new OutputWriteError(oncePerPath(p.problems));
      const temps = p.ops.flatMap((o) => (o.kind === 'write' ? [o.temp!] : []));
      try { flush(temps, io); } catch (e) { throw new OutputWriteError([ioProblem(e, p.ops[0]?.target ?? '')]); }
      const journal = p.ops.map((o) => ({ target: o.target, ...(o.kind === 'write' ? { temp: o.temp } : {}), ...(o.backup ? { backup: o.backup } : {}) }));
      try { writeJournal(session, journal); } catch (e) { throw new OutputWriteError([ioProblem(e, session.targets[0]?.journal ?? '')]); }
    } catch (e) {
      p.abandon(); // a problem, a failure, or what `produce` threw (a fleet error): nothing was written
      throw e;
    }
    try {
      commit(p);
    } catch (e) {
      result = 'rolled back';
      throw e;
    }
    result = 'committed';
    return reports;
  } finally {
    dropJournal(session);
    closeSession(session);
    ended(result);
  }
}

/** Nothing at `p` (not even a dangling link). */
const absent = (p: string, io: WriterFs): boolean => {
  try { io.lstatSync(p); return false; } catch (e) { return (e as NodeJS.ErrnoException).code === 'ENOENT'; }
};

/** Check and prepare one tree's files as `produce` passes them; then the removals and the manifest. */
function streamTree(tree: StreamedTree, p: Prepared): TreeWriteReport | undefined {
  const { io } = p;
  const dir = path.resolve(tree.dir);
  if (!p.ensureDir(path.dirname(dir), false)) return undefined;
  const bad = checkFleetDir(tree.dir, io);
  if (bad) { p.problems.push(bad); return undefined; }
  const manifest = readManifest(dir, io);
  if (manifest && !(manifest instanceof Map)) { p.problems.push(manifest); return undefined; }
  const report: TreeWriteReport = { dir: tree.dir, written: [], removed: [], foreign: [] };
  const notOurs = (rel: string, why: string) => p.problems.push(problem('write/not-ours', path.join(tree.dir, rel), why,
    'move your file elsewhere (synth writes this path), or delete it if an older synth wrote it'));
  const hashes = new Map<string, string>();
  const verified = new Set<string>();
  const writes: Op[] = [];
  // a fleet directory that does not exist yet (we hold its lock) has nothing to read, compare or adopt
  const fresh = absent(dir, io);
  tree.produce((rel, content) => {
    if (hashes.has(rel)) throw new Error(`${rel} generated twice`);
    hashes.set(rel, sha256(content));
    const full = path.join(dir, rel);
    const found = fresh ? {} : readTarget(full, dir, io, verified);
    if ('code' in found) { p.problems.push(found); return; }
    if (found.content === content) return;
    if (found.content !== undefined) {
      const listed = manifest?.get(rel);
      if (listed !== undefined && !listedAs(listed, found.content)) { notOurs(rel, 'was edited since synth wrote it (its hash differs from the manifest)'); return; }
      if (listed === undefined && (manifest || !legacyOurs(found.content, tree.fleet))) { notOurs(rel, 'exists and is not a file synth generated (not in its manifest)'); return; }
    }
    writes.push(...p.write(full, content, found.content !== undefined));
    report.written.push(rel);
  });
  report.written.sort();
  const removes = removals(dir, manifest, hashes, p, report, notOurs);
  if (!manifest && !fresh) report.foreign.push(...foreignFiles(dir, hashes, io));
  const manifestText = renderManifest(tree.fleet, hashes);
  hashes.clear();
  const oldManifest = readTarget(path.join(dir, MANIFEST_FILE), dir, io);
  const manifestOps = !('code' in oldManifest) && oldManifest.content !== manifestText
    ? p.write(path.join(dir, MANIFEST_FILE), manifestText, oldManifest.content !== undefined) : [];
  p.ops.push(...writes, ...removes, ...manifestOps);
  return report;
}

/** Files the manifest lists that are no longer generated: removed when unedited. */
function removals(dir: string, manifest: Map<string, Set<string>> | undefined, generated: ReadonlyMap<string, string>,
  p: Prepared, report: TreeWriteReport, notOurs: (rel: string, why: string) => void): Op[] {
  const ops: Op[] = [];
  for (const [rel, hashes] of manifest ?? []) {
    if (generated.has(rel)) continue;
    const full = path.join(dir, rel);
    const found = readTarget(full, dir, p.io);
    if ('code' in found) { p.problems.push(found); continue; }
    if (found.content === undefined) continue;
    if (!listedAs(hashes, found.content)) { notOurs(rel, 'synth generated it and no longer does, but it was edited since: not removed'); continue; }
    const op = p.remove(full);
    if (op) ops.push(op);
    report.removed.push(rel);
    p.pruneRoots.push({ dir: path.dirname(full), root: dir });
  }
  return ops;
}

function checkFile(f: OutputFile, p: Prepared): void {
  const { io } = p;
  let target = path.resolve(f.file);
  let exists = true;
  try {
    const st = io.lstatSync(target);
    if (st.isSymbolicLink()) target = io.realpathSync(target); // a linked ledger: write the file it names
    if (!io.statSync(target).isFile()) { p.problems.push(problem('write/not-a-directory', f.file, 'is not a regular file', 'move it away, or give another --ledger')); return; }
    if (io.readFileSync(target, 'utf8') === f.content) return;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') { p.problems.push(ioProblem(e, f.file)); return; }
    if (!p.ensureDir(path.dirname(target), false)) return;
    exists = false;
  }
  p.ops.push(...p.write(target, f.content, exists));
}


/**
 * Data to disk before the renames: one `sync --file-system` per file system (syncfs(2); an fsync per
 * file costs about 2.5 ms each on ext4, 30 s for 13000 files); fsync per file where `sync` is missing
 * (every file and directory inside a staging directory, then the directory).
 */
function flush(temps: string[], io: WriterFs): void {
  if (!temps.length || io !== fs) return;
  const devs = new Map<number, string>();
  for (const t of temps) devs.set(fs.statSync(t).dev, t);
  try {
    execFileSync('sync', ['--file-system', ...devs.values()], { stdio: 'ignore', timeout: 120_000 });
  } catch {
    const fsyncAll = (p: string): void => {
      if (fs.lstatSync(p).isDirectory()) for (const e of fs.readdirSync(p)) fsyncAll(path.join(p, e));
      const fd = fs.openSync(p, 'r');
      try { fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
    };
    for (const t of temps) fsyncAll(t);
  }
}

/** Phase 3: renames in order (a staged directory is one rename); on a failure every done step is undone from the kept links. */
function commit(c: Prepared): void {
  const { io } = c;
  const done: Op[] = [];
  try {
    for (const op of c.ops) {
      if (op.kind === 'write') io.renameSync(op.temp!, op.target);
      else io.unlinkSync(op.target);
      done.push(op);
    }
  } catch (e) {
    const failed = c.ops[done.length];
    for (const op of done.reverse()) {
      try {
        if (op.kind === 'write' && op.dir) io.renameSync(op.target, op.temp!); // back to its staging name: abandon removes it
        else if (op.backup) io.renameSync(op.backup, op.target);
        else io.unlinkSync(op.target);
      } catch { /* best effort: the error below names the first failure */ }
      if (op.kind === 'write' && !op.dir) op.temp = undefined;
      op.backup = undefined;
    }
    c.abandon();
    throw new OutputWriteError([ioProblem(e, failed.target)], true);
  }
  for (const op of c.ops) if (op.backup) try { io.unlinkSync(op.backup); } catch { /* a leftover link is harmless */ }
  prune(c);
}

/** Directories our removals left empty go too (never the fleet directory itself). */
function prune(c: Prepared): void {
  const { io } = c;
  const dirs = [...new Set(c.pruneRoots.map((p) => JSON.stringify(p)))].map((s) => JSON.parse(s) as { dir: string; root: string })
    .sort((a, b) => b.dir.length - a.dir.length);
  for (const { dir, root } of dirs) {
    for (let d = dir; d !== root && inside(root, d); d = path.dirname(d)) {
      try { io.rmdirSync(d); } catch { break; }
    }
  }
}