/**
 * The writer thread (cli/write-worker.ts): past the first files of new directories, a second thread
 * creates them while the main thread goes on. What must not change: the bytes written, the transaction
 * (a failure in the thread leaves nothing behind and names the file's final path with a code), bounded
 * memory (the queue waits when the thread falls behind), and one CPU means no thread at all.
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { OutputTree, OutputWriteError, writeOutputs } from '../cli/write-tree';
import * as threadModule from '../cli/write-worker';
import { files } from './support/tree';

const dirs: string[] = [];
afterEach(() => {
  jest.restoreAllMocks();
  delete process.env.MM_WRITE_THREAD;
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
const scratch = (): string => { const d = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-write-thread-')); dirs.push(d); return d; };

/**
 * A fleet directory of `clusters` new cluster directories with `perCluster` files each; file i's text is its own,
 * every third one with characters of 2, 3 and 4 UTF-8 bytes (the thread gets a batch's contents as one buffer of
 * bytes: a wrong offset shows as a neighbour's bytes).
 */
function tree(dir: string, clusters: number, perCluster: number, bytes = 200): OutputTree {
  const m = new Map<string, string>();
  for (let c = 0; c < clusters; c++) {
    for (let i = 0; i < perCluster; i++) m.set(`c${c}/f${i}.yaml`, `# c${c} f${i}${i % 3 ? '' : ' é ✓ 😀'}\n${'x'.repeat(bytes)}\n`);
  }
  return { dir, fleet: 'wt', files: m };
}

/** Everything under `dir`, names and bytes; with nothing left over from staging (no `.mm-tmp-`, `.mm-old-`). */
const listing = (dir: string) => [...files(dir)].sort(([a], [b]) => a.localeCompare(b));

describe('the writer thread writes what the main thread would, byte for byte', () => {
  test('600 files over 40 new directories: the same tree with the thread and without, and the thread did write', () => {
    const queued = jest.spyOn(threadModule.FileWriterThread.prototype, 'queue');
    const mkdirs = jest.spyOn(threadModule.FileWriterThread.prototype, 'mkdir');
    const a = path.join(scratch(), 'wt');
    writeOutputs([tree(a, 40, 15)]);
    expect(queued.mock.calls.length).toBe(601 - 64); // 600 files and the manifest: the first 64 on the main thread, the rest in the thread
    // written in name order (c0, c1, c10, c11, c12, ...): the thread starts at the 5th directory's 5th file (the
    // 65th) and makes the other 35 directories itself, each before its files
    const inOrder = Array.from({ length: 40 }, (_, i) => `c${i}`).sort();
    expect(mkdirs.mock.calls.map(([, target]) => path.basename(target))).toEqual(inOrder.slice(5));
    queued.mockClear();
    process.env.MM_WRITE_THREAD = 'off';
    const b = path.join(scratch(), 'wt');
    writeOutputs([tree(b, 40, 15)]);
    expect(queued).not.toHaveBeenCalled();
    const [la, lb] = [listing(a), listing(b)];
    expect(la.length).toBe(601); // 600 files and the manifest
    expect(la).toEqual(lb);
    expect(la.filter(([n]) => /mm-(tmp|old)/.test(n))).toEqual([]);
    expect(la.find(([n]) => n === 'c39/f14.yaml')![1]).toBe(`# c39 f14\n${'x'.repeat(200)}\n`);
    expect(la.find(([n]) => n === 'c39/f12.yaml')![1]).toBe(`# c39 f12 é ✓ 😀\n${'x'.repeat(200)}\n`);
  });

  test('more content than the queue holds (48 MiB, over its 32 MiB): the main thread waits, every byte arrives', () => {
    expect(threadModule.MAX_PENDING_BYTES).toBe(32 * 1024 * 1024);
    const a = path.join(scratch(), 'wt');
    const want = tree(a, 6, 16, 512 * 1024); // 96 files of 0.5 MiB: 64 on the main thread, 16 MiB queued beyond what the queue holds
    writeOutputs([want]);
    const got = files(a);
    expect(got.size).toBe(97);
    for (const [name, text] of want.files) expect(got.get(name) === text).toBe(true);
  });

  test('one CPU for this process (taskset): no thread', () => {
    const lib = path.join(__dirname, '..', 'lib', 'cli');
    const a = path.join(scratch(), 'wt');
    // the built library in a child pinned to one CPU, counting what it queued for the thread
    const script = `const w = require(${JSON.stringify(path.join(lib, 'write-worker.js'))}); let n = 0; const q = w.FileWriterThread.prototype.queue;
      w.FileWriterThread.prototype.queue = function (...a) { n++; return q.apply(this, a); };
      const t = new Map(); for (let i = 0; i < 200; i++) t.set('c' + (i % 10) + '/f' + i + '.yaml', 'x' + i + '\\n');
      require(${JSON.stringify(path.join(lib, 'write-tree.js'))}).writeOutputs([{ dir: ${JSON.stringify(a)}, fleet: 'wt', files: t }]);
      console.log(JSON.stringify({ cpus: require('os').availableParallelism(), queued: n }));`;
    for (const [cpus, queued] of [['0', 0], ['0,1', 201 - 64]] as const) {
      if (cpus === '0,1' && os.availableParallelism() < 2) continue;
      fs.rmSync(a, { recursive: true, force: true });
      const r = spawnSync('taskset', ['-c', cpus, process.execPath, '-e', script], { encoding: 'utf8' });
      if (r.error) { process.stdout.write(`taskset unavailable (${r.error.message}): not checked\n`); return; }
      expect(r.stderr).toBe('');
      expect(JSON.parse(r.stdout)).toEqual({ cpus: cpus.split(',').length, queued });
      expect(files(a).size).toBe(201);
    }
  });
});

describe('a write that fails in the thread fails the whole write, as on the main thread', () => {
  /** A tmpfs of `size` at `dir` (root only), or why not. */
  const mount = (dir: string, size: string): string | undefined => {
    fs.mkdirSync(dir, { recursive: true });
    const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'mm-write-thread', dir], { encoding: 'utf8' });
    return r.status === 0 ? undefined : `tmpfs mounts unavailable here: ${r.stderr.trim()}`;
  };

  test.each(['thread', 'main thread'])('a file system full after 100 files (%s): write/no-space at a final path, nothing left, the old file kept', (how) => {
    const small = path.join(scratch(), 'small');
    const why = mount(small, '440k'); // a 4 KiB page per file: room for about a hundred
    if (why) { process.stdout.write(`${why}: the injected file system of output-writer.lib.test.ts covers ENOSPC\n`); return; }
    try {
      if (how === 'main thread') process.env.MM_WRITE_THREAD = 'off';
      const queued = jest.spyOn(threadModule.FileWriterThread.prototype, 'queue');
      fs.writeFileSync(path.join(small, 'mine.txt'), 'kept\n');
      let err: unknown;
      try { writeOutputs([tree(path.join(small, 'wt'), 20, 15)]); } catch (e) { err = e; }
      expect(err).toBeInstanceOf(OutputWriteError);
      const p = (err as OutputWriteError).problems;
      expect(p).toHaveLength(1);
      expect(p[0]).toMatchObject({ code: 'write/no-space' });
      expect(p[0].path).toMatch(new RegExp(`^${small}/wt/c\\d+(/f\\d+\\.yaml)?$`)); // the final path, never a staging name
      expect(queued.mock.calls.length > 0).toBe(how === 'thread');
      expect(fs.readdirSync(small)).toEqual(['mine.txt']);
    } finally {
      spawnSync('umount', [small]);
    }
  });

  test('out of inodes, once at a directory the thread makes and once at a file: each named by its final path, nothing left', () => {
    // one file per directory, so the thread alternates mkdir and write; one more inode moves the failure to the other kind
    const got: string[] = [];
    for (const inodes of [160, 161]) {
      const small = path.join(scratch(), `inodes-${inodes}`);
      fs.mkdirSync(small, { recursive: true });
      const r = spawnSync('mount', ['-t', 'tmpfs', '-o', `size=8m,nr_inodes=${inodes}`, 'mm-write-thread', small], { encoding: 'utf8' });
      if (r.status !== 0) { process.stdout.write(`tmpfs mounts unavailable here: ${r.stderr.trim()}: not checked\n`); return; }
      try {
        const mkdirs = jest.spyOn(threadModule.FileWriterThread.prototype, 'mkdir');
        let err: unknown;
        try { writeOutputs([tree(path.join(small, 'wt'), 200, 1)]); } catch (e) { err = e; }
        expect(err).toBeInstanceOf(OutputWriteError);
        const p = (err as OutputWriteError).problems;
        expect(p).toHaveLength(1);
        expect(p[0].code).toBe('write/no-space');
        expect(mkdirs.mock.calls.length).toBeGreaterThan(0);
        got.push(path.relative(small, p[0].path));
        expect(fs.readdirSync(small)).toEqual([]);
        mkdirs.mockRestore();
      } finally {
        spawnSync('umount', [small]);
      }
    }
    expect(got.map((g) => (/^wt\/c\d+$/.test(g) ? 'directory' : /^wt\/c\d+\/f0\.yaml$/.test(g) ? 'file' : g)).sort()).toEqual(['directory', 'file']);
  });
});
