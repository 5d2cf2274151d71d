/**
 * What keeps a write one transaction when the process is interrupted or another writer runs:
 *
 *   - a lock file beside every target (`<out>/.<fleet>.mm-lock`, `.<ledger>.mm-lock`), created
 *     exclusively and holding the writer's pid and host; a second writer refuses (`write/locked`);
 *     a lock whose process is gone (killed) is stale and taken over;
 *   - a journal beside every lock (`.<name>.mm-journal`), written and flushed once every new file is
 *     prepared and before the first rename, removed when the commit is done: the next writer that
 *     finds one finishes that commit (redo: every prepared file is renamed into place);
 *   - under the lock, leftovers of a killed run (`.*.mm-tmp-*` files and staging directories, `.*.mm-old-*`)
 *     are removed, and said so;
 *   - SIGINT / SIGTERM / SIGHUP arriving during a write are held until the write has ended (committed
 *     or rolled back: the writer is synchronous, so the handler runs after it), then the process
 *     exits 130 / 143 / 129 with one line saying which.
 *
 * Lock and journal use Node's `fs` directly, not the injected `WriterFs` (tests inject failures into
 * the writes themselves).
 */
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { FleetProblem } from '../src/base/errors';
import type { WriterFs } from './write-checks';

/** Side-file suffixes: a random start, then counted (a random draw per file cost more than the file's own checks). */
let sideCounter = crypto.randomBytes(4).readUInt32BE(0);

/** A side file of the writer: `.<name>.mm-<what>-<pid>-<hex>` beside `target` (8 hex digits, unique in this process). */
export const sideName = (target: string, what: string): string => {
  sideCounter = (sideCounter + 1) >>> 0;
  return path.join(path.dirname(target), `.${path.basename(target)}.mm-${what}-${process.pid}-${sideCounter.toString(16).padStart(8, '0')}`);
};

/** Remove `dir` and everything below it (a staging directory of this write; best effort). */
export function removeTree(dir: string, io: Pick<WriterFs, 'readdirSync' | 'unlinkSync' | 'rmdirSync'>): void {
  try {
    for (const e of io.readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) removeTree(p, io);
      else try { io.unlinkSync(p); } catch { /* gone */ }
    }
    io.rmdirSync(dir);
  } catch { /* gone, or cannot be listed: nothing more to do */ }
}

const LEFTOVER = /^\..+\.mm-(tmp|old)-(\d+)-[0-9a-f]{8}$/;

/** One step of a commit, as the journal records it. */
export interface JournalOp {
  readonly target: string;
  /** The prepared new content (write); absent for a removal. */
  readonly temp?: string;
  /** A hard link keeping the old content. */
  readonly backup?: string;
}

/** A target of the transaction: a fleet directory or a single file (the ledger). */
interface Target { readonly lock: string; readonly journal: string; readonly tree?: string; readonly file?: string }

const lockOf = (p: string, what: string): string => path.join(path.dirname(p), `.${path.basename(p)}.mm-${what}`);

/** The locks held by this process and the journals they guard. */
export interface WriteSession {
  readonly targets: readonly Target[];
  /** Directories created to hold the locks (removed again if left empty). */
  readonly created: string[];
  /** What was cleaned up after an earlier, interrupted run. */
  readonly notices: string[];
}

const alive = (pid: number): boolean => {
  if (pid === process.pid) return false; // a lock of our own pid is a previous run's (containers reuse pids)
  try { process.kill(pid, 0); return true; } catch (e) { return (e as NodeJS.ErrnoException).code === 'EPERM'; }
};

function mkdirs(dir: string, created: string[]): void {
  const missing: string[] = [];
  for (let p = path.resolve(dir); !fs.existsSync(p); p = path.dirname(p)) {
    missing.unshift(p);
    if (p === path.dirname(p)) break;
  }
  for (const d of missing) { fs.mkdirSync(d); created.push(d); }
}

const ageMs = (p: string): number => {
  try { return Date.now() - fs.statSync(p).mtimeMs; } catch { return 0; }
};

/**
 * Create `file` holding `text`, or fail with EEXIST: written beside it first and hard-linked into place, so
 * the lock is never seen empty (a writer killed between creating a lock and filling it left one that only
 * age could clear, and refused the next writer for 10 s). Where hard links are refused, created in place.
 */
function createWhole(file: string, text: string): void {
  const tmp = sideName(file, 'tmp');
  fs.writeFileSync(tmp, text, { flag: 'wx' });
  try {
    fs.linkSync(tmp, file);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP') throw e;
    fs.writeFileSync(file, text, { flag: 'wx' });
  } finally {
    try { fs.unlinkSync(tmp); } catch { /* gone */ }
  }
}

/** Take one lock: true, a problem (held by a live writer), or false (the place cannot hold a lock: the write will say why). */
function takeLock(lock: string, created: string[]): true | false | FleetProblem {
  const me = `${process.pid} ${os.hostname()}\n`;
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      createWhole(lock, me);
      return true;
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'ENOENT') {
        try { mkdirs(path.dirname(lock), created); } catch { return false; }
        continue;
      }
      if (code !== 'EEXIST') return false;
    }
    let held = '';
    try { held = fs.readFileSync(lock, 'utf8'); } catch { continue; }
    const [pid, host] = held.trim().split(' ');
    // dead on this host, or never written whole (created in place where links are refused, by a writer killed
    // between creating and filling it) and old
    const dead = host === os.hostname() && /^\d+$/.test(pid) && !alive(Number(pid));
    if (dead || (!host && ageMs(lock) > 10_000)) {
      try { fs.unlinkSync(lock); } catch { /* another writer took it over first */ }
      continue;
    }
    return {
      code: 'write/locked', path: lock,
      message: `another migration-mesh writer (${host ? `pid ${pid} on ${host}` : 'that has not yet written its pid'}) is writing this output or ledger`,
      fix: `wait for it to finish and run again; if no such process runs (another machine, a lost container), delete ${lock}`,
    };
  }
  return false;
}

/**
 * Lock every target (sorted, so two writers never wait on each other in a circle), then clean up
 * after an interrupted run: finish a journaled commit, remove temp and backup files. Throws nothing;
 * returns the problems (a live lock) instead, having released what it took.
 */
export function openSession(trees: readonly string[], files: readonly string[]): WriteSession | FleetProblem[] {
  const targets: Target[] = [
    ...trees.map((t) => ({ lock: lockOf(path.resolve(t), 'lock'), journal: lockOf(path.resolve(t), 'journal'), tree: path.resolve(t) })),
    ...files.map((f) => ({ lock: lockOf(path.resolve(f), 'lock'), journal: lockOf(path.resolve(f), 'journal'), file: path.resolve(f) })),
  ].sort((a, b) => (a.lock < b.lock ? -1 : 1));
  const held: Target[] = [];
  const created: string[] = [];
  const problems: FleetProblem[] = [];
  for (const t of targets) {
    const r = takeLock(t.lock, created);
    if (r === true) held.push(t);
    else if (r !== false) problems.push(r);
  }
  const session: WriteSession = { targets: held, created, notices: [] };
  if (problems.length) { closeSession(session); return problems; }
  for (const t of held) recover(t, session.notices);
  return session;
}

/** Release the locks; remove directories made only to hold them, when left empty. */
export function closeSession(s: WriteSession): void {
  for (const t of s.targets) try { fs.unlinkSync(t.lock); } catch { /* already gone */ }
  for (const d of [...s.created].reverse()) try { fs.rmdirSync(d); } catch { /* holds the output now */ }
}

/** Write the journal of a prepared commit beside every lock, flushed, before the first rename. */
export function writeJournal(s: WriteSession, ops: readonly JournalOp[]): void {
  const text = JSON.stringify({ pid: process.pid, journals: s.targets.map((t) => t.journal), ops }, null, 1);
  for (const t of s.targets) {
    const tmp = sideName(t.journal, 'tmp');
    const fd = fs.openSync(tmp, 'wx');
    try { fs.writeSync(fd, text); fs.fsyncSync(fd); } finally { fs.closeSync(fd); }
    fs.renameSync(tmp, t.journal);
  }
}

/** The commit is done (or rolled back): the journals go. */
export function dropJournal(s: WriteSession): void {
  for (const t of s.targets) try { fs.unlinkSync(t.journal); } catch { /* none written */ }
}

/** Finish a journaled commit of a killed run (every step is idempotent), then remove its leftovers. */
function recover(t: Target, notices: string[]): void {
  let journal: { pid?: number; journals?: string[]; ops?: JournalOp[] } | undefined;
  try { journal = JSON.parse(fs.readFileSync(t.journal, 'utf8')); } catch { journal = undefined; }
  if (journal?.ops) {
    let n = 0;
    for (const op of journal.ops) {
      try {
        if (op.temp && fs.existsSync(op.temp)) {
          fs.renameSync(op.temp, op.target); // a prepared file not yet in place
          n++;
        } else if (!op.temp && op.backup && fs.existsSync(op.backup) && fs.existsSync(op.target)) {
          fs.unlinkSync(op.target); // a removal not yet done
          n++;
        }
      } catch { /* the stray scan below removes what is left */ }
    }
    for (const op of journal.ops) if (op.backup) try { fs.unlinkSync(op.backup); } catch { /* gone */ }
    for (const j of journal.journals ?? [t.journal]) try { fs.unlinkSync(j); } catch { /* gone */ }
    notices.push(`finished the commit of an interrupted run (pid ${journal.pid ?? '?'}) from ${t.journal}: ${n} step${n === 1 ? '' : 's'} completed`);
  }
  const strays = t.tree ? leftoversIn(t.tree, true) : [];
  strays.push(...leftoversIn(path.dirname(t.lock), false).filter((p) => path.basename(p).startsWith(`.${path.basename(t.tree ?? t.file!)}.mm-`)
    || path.basename(p).startsWith(`.${path.basename(t.journal)}.mm-`) || path.basename(p).startsWith(`.${path.basename(t.lock)}.mm-`)));
  for (const p of strays) try { fs.rmSync(p, { recursive: true, force: true }); } catch { /* gone */ }
  if (t.tree) pruneEmpty(t.tree, strays);
  if (strays.length) {
    const pids = [...new Set(strays.map((p) => LEFTOVER.exec(path.basename(p))![2]))];
    notices.push(`removed ${strays.length} leftover temp/backup file${strays.length === 1 ? '' : 's'} of an interrupted run (pid ${pids.join(', ')}) in ${t.tree ?? path.dirname(t.file!)}`);
  }
}

/** Temp and backup files and staging directories of the writer in `dir` (and below, when `deep`). */
function leftoversIn(dir: string, deep: boolean): string[] {
  const out: string[] = [];
  const walk = (d: string): void => {
    let entries: fs.Dirent[];
    try { entries = fs.readdirSync(d, { withFileTypes: true }); } catch { return; }
    for (const e of entries) {
      if (LEFTOVER.test(e.name)) out.push(path.join(d, e.name)); // a file, or a staging directory (removed whole)
      else if (e.isDirectory() && deep) walk(path.join(d, e.name));
    }
  };
  walk(dir);
  return out;
}

/** Directories inside the tree that removing leftovers emptied. */
function pruneEmpty(root: string, removed: readonly string[]): void {
  const dirs = [...new Set(removed.map((p) => path.dirname(p)))].sort((a, b) => b.length - a.length);
  for (const d of dirs) {
    for (let p = d; p !== root && p.startsWith(root + path.sep); p = path.dirname(p)) {
      try { fs.rmdirSync(p); } catch { break; }
    }
  }
}

const SIGNALS: Record<string, number> = { SIGINT: 2, SIGTERM: 15, SIGHUP: 1 };
let outcome = 'nothing was written';
let guarded = false;

/**
 * Hold SIGINT, SIGTERM and SIGHUP until the write has ended (where the process has no handlers of its
 * own: with them, the signal does not end it anyway); the handler runs once the synchronous write is
 * over and exits 128 + signal with one line. Removed again on the next turn of the event loop, after a
 * signal that came during the write has been handled.
 */
export function guardSignals(): (result: 'committed' | 'rolled back' | 'nothing written') => void {
  const mine: [string, () => void][] = [];
  if (!guarded) {
    for (const sig of Object.keys(SIGNALS)) {
      if (process.listenerCount(sig as NodeJS.Signals) > 0) continue;
      const h = (): void => {
        process.stderr.write(`migration-mesh: interrupted by ${sig}; ${outcome}\n`);
        process.exit(128 + SIGNALS[sig]);
      };
      process.on(sig as NodeJS.Signals, h);
      mine.push([sig, h]);
    }
    guarded = mine.length > 0;
  }
  outcome = 'the write was under way and is finished or rolled back';
  return (result) => {
    outcome = result === 'committed' ? 'the write had completed: the output and the ledger are the new ones'
      : result === 'rolled back' ? 'the write was rolled back: the output and the ledger are as they were'
        : 'nothing was written: the output and the ledger are as they were';
    if (!mine.length) return;
    setImmediate(() => {
      for (const [sig, h] of mine) process.removeListener(sig as NodeJS.Signals, h);
      guarded = false;
    });
  };
}
