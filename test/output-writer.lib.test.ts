/**
 * The writer never surprises: output and ledger are written together or not at all, synth owns only
 * the files it generated in `<out>/<fleet>/` (a manifest of them), and every path error ends fast
 * with one line naming the path, a code and the fix. Tests run as root, so permissions cannot deny
 * anything here: unwritable places are a path under a regular file, a read-only or tiny tmpfs this
 * test mounts (and unmounts), /proc, or an injected file system that fails one call.
 */
import { execFileSync, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { renderFleetDirectory, writeFleetDirectories } from '../cli/fleet-directory';
import { MANIFEST_FILE, OutputWriteError, WriterFs } from '../cli/write-tree';
import { closeSession, openSession } from '../cli/write-guard';
import { runCli } from './support/fleets';

const root = path.join(__dirname, '..');
const example = path.join(root, 'examples', 'three-sites-vlan.fleet.yaml');

const run = runCli;

/** A scratch directory with the 3-site example fleet and its ledger. */
function scratch(): { dir: string; fleet: string; ledger: string; out: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-w12a-writer-'));
  fs.copyFileSync(example, path.join(dir, 'sites.fleet.yaml'));
  fs.copyFileSync(example.replace('.fleet.yaml', '.ledger.yaml'), path.join(dir, 'sites.ledger.yaml'));
  return { dir, fleet: path.join(dir, 'sites.fleet.yaml'), ledger: path.join(dir, 'sites.ledger.yaml'), out: path.join(dir, 'out') };
}

/** Every file and directory under `dir` with its bytes (files) or '<dir>', and symlinks, sorted. */
function snapshot(dir: string): Map<string, string> {
  const m = new Map<string, string>();
  const walk = (d: string, rel: string): void => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const r = rel ? `${rel}/${e.name}` : e.name;
      const full = path.join(d, e.name);
      if (e.isSymbolicLink()) {
        m.set(r, `-> ${fs.readlinkSync(full)}`);
      } else if (e.isDirectory()) {
        m.set(r, '<dir>');
        walk(full, r);
      } else {
        m.set(r, fs.readFileSync(full, 'latin1'));
      }
    }
  };
  if (fs.existsSync(dir)) walk(dir, '');
  return m;
}

/** The fleet with one more cluster: new files, and the ledger changes. */
function grow(fleet: string): void {
  fs.writeFileSync(fleet, fs.readFileSync(fleet, 'utf8').replace(/(\n  clusters:\n)/, '$1    - {name: osl-1, nodes: 2}\n'));
}

let mountable: boolean | undefined;
/** Mount a tmpfs at `dir` (root only); false where this machine does not allow it. */
function mountTmpfs(dir: string, opts: string): boolean {
  if (mountable === false) return false;
  fs.mkdirSync(dir, { recursive: true });
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', opts, 'mm-w12a', dir], { encoding: 'utf8' });
  mountable = r.status === 0;
  if (!mountable) process.stdout.write(`tmpfs mounts unavailable here (${r.stderr.trim()}): the injected file system covers these errors\n`);
  return mountable;
}
const umount = (dir: string): void => { spawnSync('umount', [dir]); };

const dirs: string[] = [];
afterEach(() => { for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true }); });
const track = <T extends { dir: string }>(s: T): T => { dirs.push(s.dir); return s; };

describe('output and ledger: together or not at all', () => {
  test('a ledger that cannot be written (its directory is a regular file) leaves the output tree byte-identical', () => {
    const s = track(scratch());
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    const before = snapshot(s.out);
    grow(s.fleet);
    const blocker = path.join(s.dir, 'not-a-dir');
    fs.writeFileSync(blocker, 'a regular file\n');
    fs.copyFileSync(s.ledger, path.join(s.dir, 'copy.ledger.yaml'));
    const r = run(['synth', s.fleet, '--out', s.out, '--ledger', path.join(blocker, 'sites.ledger.yaml')]);
    expect(r.code).toBe(1);
    expect(snapshot(s.out)).toEqual(before);
    expect(r.err).toMatch(/\[write\/not-a-directory\] .*not-a-dir.*fix: /);
    expect(r.err.trim().split('\n')).toHaveLength(1);
  });

  test('a ledger on a read-only file system (EROFS) leaves the output tree byte-identical', () => {
    const s = track(scratch());
    const ro = path.join(s.dir, 'ro');
    if (!mountTmpfs(ro, 'size=1m')) return;
    try {
      fs.copyFileSync(s.fleet, path.join(ro, 'sites.fleet.yaml'));
      fs.copyFileSync(s.ledger, path.join(ro, 'sites.ledger.yaml'));
      expect(run(['synth', path.join(ro, 'sites.fleet.yaml'), '--out', s.out]).code).toBe(0);
      grow(path.join(ro, 'sites.fleet.yaml'));
      expect(spawnSync('mount', ['-o', 'remount,ro', ro]).status).toBe(0);
      const before = snapshot(s.out);
      const ledgerBefore = fs.readFileSync(path.join(ro, 'sites.ledger.yaml'), 'utf8');
      const r = run(['synth', path.join(ro, 'sites.fleet.yaml'), '--out', s.out]);
      expect(r.code).toBe(1);
      expect(snapshot(s.out)).toEqual(before);
      expect(r.err).toMatch(/\[write\/read-only\] .*sites\.ledger\.yaml.*fix: /);
      expect(fs.readFileSync(path.join(ro, 'sites.ledger.yaml'), 'utf8')).toBe(ledgerBefore);
    } finally {
      umount(ro);
    }
  });

  test('a failure in the middle of the commit (the ledger rename) rolls every renamed file back', () => {
    const s = track(scratch());
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    const before = snapshot(s.out);
    const ledgerBefore = fs.readFileSync(s.ledger, 'utf8');
    grow(s.fleet);
    const pending = renderFleetDirectory({ fleetFile: s.fleet, outdir: s.out });
    // fail the last rename (the ledger's): every earlier rename (files, manifest) has happened by then
    const failing: WriterFs = { ...fs, renameSync: (from: fs.PathLike, to: fs.PathLike) => {
      if (String(to) === s.ledger && String(from).includes('.mm-tmp-')) throw Object.assign(new Error(`EIO: i/o error, rename '${from}' -> '${to}'`), { code: 'EIO' });
      fs.renameSync(from, to);
    } };
    let err: unknown;
    try { writeFleetDirectories([pending], failing); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(OutputWriteError);
    expect((err as OutputWriteError).codes).toEqual(['write/failed']);
    expect((err as Error).message).toMatch(/every change was rolled back/);
    expect(snapshot(s.out)).toEqual(before); // no new cluster directory, no temp or backup file left
    expect(fs.readFileSync(s.ledger, 'utf8')).toBe(ledgerBefore);
    expect(fs.readdirSync(s.dir).filter((f) => f.includes('.mm-'))).toEqual([]);
  });

  test('a new directory (the fleet\'s, a new cluster\'s) is built whole under a staging name and committed by one rename', () => {
    const s = track(scratch());
    const renames: [string, string][] = [];
    const counting: WriterFs = {
      ...fs, renameSync: (from: fs.PathLike, to: fs.PathLike) => { renames.push([String(from), String(to)]); fs.renameSync(from, to); },
    };
    const first = writeFleetDirectories([renderFleetDirectory({ fleetFile: s.fleet, outdir: s.out })], counting)[0];
    const tree = path.join(s.out, 'sites');
    expect(renames.filter(([, to]) => to.startsWith(s.out))).toEqual([[expect.stringMatching(/\/out\/\.sites\.mm-tmp-\d+-[0-9a-f]{8}$/), tree]]);
    expect(first.report.written).toHaveLength(first.fileCount + 1); // every file and fleet.svg (and the manifest), in that one rename
    expect([...snapshot(tree).keys()].filter((f) => !f.endsWith('/') && fs.statSync(path.join(tree, f)).isFile())).toHaveLength(first.fileCount + 2);
    expect([...snapshot(s.out).keys()].filter((f) => f.includes('.mm-'))).toEqual([]);
    expect(execFileSync('sha256sum', ['--quiet', '-c', MANIFEST_FILE], { cwd: tree, encoding: 'utf8' })).toBe('');
    // a cluster added to the existing tree: its directory is one rename, the changed files one each
    renames.length = 0;
    grow(s.fleet);
    const second = writeFleetDirectories([renderFleetDirectory({ fleetFile: s.fleet, outdir: s.out })], counting)[0];
    const intoNew = renames.filter(([, to]) => to.startsWith(path.join(tree, 'osl-1')));
    expect(intoNew).toEqual([[expect.stringMatching(/\/sites\/\.osl-1\.mm-tmp-\d+-[0-9a-f]{8}$/), path.join(tree, 'osl-1')]]);
    const changedElsewhere = second.report.written.filter((f) => !f.startsWith('osl-1/'));
    expect(changedElsewhere.length).toBeGreaterThan(0); // the peers' gateway tables, the kustomizations, the manifest
    expect(renames.filter(([, to]) => to.startsWith(tree) && !to.startsWith(path.join(tree, 'osl-1'))).map(([, to]) => path.relative(tree, to)).sort())
      .toEqual([...changedElsewhere, MANIFEST_FILE].sort());
    expect(execFileSync('sha256sum', ['--quiet', '-c', MANIFEST_FILE], { cwd: tree, encoding: 'utf8' })).toBe('');
  });

  test('a failed rename of a staged fleet directory: rolled back, nothing left (no directory, no staging directory, the ledger as it was)', () => {
    const s = track(scratch());
    grow(s.fleet); // the ledger changes too
    const ledgerBefore = fs.readFileSync(s.ledger, 'utf8');
    const failing: WriterFs = { ...fs, renameSync: (from: fs.PathLike, to: fs.PathLike) => {
      if (String(to) === path.join(s.out, 'sites')) throw Object.assign(new Error(`EIO: i/o error, rename '${from}' -> '${to}'`), { code: 'EIO' });
      fs.renameSync(from, to);
    } };
    let err: unknown;
    try { writeFleetDirectories([renderFleetDirectory({ fleetFile: s.fleet, outdir: s.out })], failing); } catch (e) { err = e; }
    expect(err).toBeInstanceOf(OutputWriteError);
    expect((err as OutputWriteError).codes).toEqual(['write/failed']);
    expect(fs.existsSync(s.out)).toBe(false); // the staging directory removed, and the output root made for the lock
    expect(fs.readFileSync(s.ledger, 'utf8')).toBe(ledgerBefore);
    expect(fs.readdirSync(s.dir).filter((f) => f.includes('.mm-'))).toEqual([]);
  });

  test('staging directories a killed run left (a new fleet directory, a new cluster) are removed whole by the next writer, and said so', () => {
    const s = track(scratch());
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    const before = snapshot(s.out);
    // what a run killed before its journal leaves: half-filled staging directories (pid 1 is never this process)
    const strays = [path.join(s.out, '.other.mm-tmp-1-0000abcd'), path.join(s.out, 'sites', '.osl-1.mm-tmp-1-0000abce')];
    for (const d of strays) {
      fs.mkdirSync(path.join(d, 'sub'), { recursive: true });
      fs.writeFileSync(path.join(d, 'sub', 'ConfigMap.x.y.yaml'), 'half\n');
    }
    fs.mkdirSync(path.join(s.out, '.sites.mm-tmp-1-0000abcf')); // the fleet directory's own staging name
    const session = openSession([path.join(s.out, 'sites')], []);
    if (Array.isArray(session)) throw new Error(JSON.stringify(session));
    closeSession(session);
    expect(session.notices.join('\n')).toMatch(/removed 2 leftover .* of an interrupted run \(pid 1\)/);
    expect(snapshot(s.out)).toEqual(new Map([...before, ['.other.mm-tmp-1-0000abcd', '<dir>'], ['.other.mm-tmp-1-0000abcd/sub', '<dir>'],
      ['.other.mm-tmp-1-0000abcd/sub/ConfigMap.x.y.yaml', 'half\n']])); // another fleet's staging directory is that fleet's writer's to remove
  });

  test('ENOSPC and EACCES while preparing: coded, and nothing is touched', () => {
    const s = track(scratch());
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    const before = snapshot(s.out);
    grow(s.fleet);
    const pending = renderFleetDirectory({ fleetFile: s.fleet, outdir: s.out });
    for (const [code, want] of [['ENOSPC', 'write/no-space'], ['EACCES', 'write/denied'], ['EPERM', 'write/denied'], ['EROFS', 'write/read-only']]) {
      let n = 0;
      const failing: WriterFs = { ...fs, writeFileSync: ((f: fs.PathOrFileDescriptor, d: string, o?: fs.WriteFileOptions) => {
        if (++n === 3) throw Object.assign(new Error(`${code}: injected, open '${f}'`), { code });
        fs.writeFileSync(f, d, o);
      }) as typeof fs.writeFileSync };
      let err: unknown;
      try { writeFleetDirectories([pending], failing); } catch (e) { err = e; }
      expect((err as OutputWriteError).codes).toEqual([want]);
      expect((err as Error).message).toMatch(/fix: .*nothing was written/);
      expect(snapshot(s.out)).toEqual(before);
    }
  });

  test('a full file system (a 64 KiB tmpfs as --out) fails with no-space and leaves it as it was', () => {
    const s = track(scratch());
    const small = path.join(s.dir, 'small');
    if (!mountTmpfs(small, 'size=64k')) return;
    try {
      fs.writeFileSync(path.join(small, 'mine.txt'), 'kept\n');
      const vep = path.join(root, 'examples', 'vep-10-clusters.fleet.yaml');
      const r = run(['synth', vep, '--out', small, '--ledger', path.join(s.dir, 'vep.ledger.yaml')]);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/\[write\/no-space\] .*small.*fix: .*nothing was written/);
      expect([...snapshot(small).keys()]).toEqual(['mine.txt']);
      expect(fs.existsSync(path.join(s.dir, 'vep.ledger.yaml'))).toBe(false);
    } finally {
      umount(small);
    }
  });

  test('reclaim writes the ledger atomically: on a read-only file system it fails with a code and the ledger stays', () => {
    const s = track(scratch());
    const ro = path.join(s.dir, 'ro');
    if (!mountTmpfs(ro, 'size=1m')) return;
    try {
      const fleet = path.join(ro, 'sites.fleet.yaml');
      fs.copyFileSync(s.fleet, fleet);
      fs.copyFileSync(s.ledger, path.join(ro, 'sites.ledger.yaml'));
      // remove a cluster: its addresses go into quarantine in the ledger
      fs.writeFileSync(fleet, fs.readFileSync(fleet, 'utf8').replace(/\n    - name: par-1[\s\S]*?(?=\n    - |\n\S|$)/, ''));
      expect(run(['synth', fleet, '--out', s.out]).code).toBe(0);
      const ledger = fs.readFileSync(path.join(ro, 'sites.ledger.yaml'), 'utf8');
      expect(ledger).toMatch(/released/);
      expect(spawnSync('mount', ['-o', 'remount,ro', ro]).status).toBe(0);
      const r = run(['reclaim', fleet, '--all']);
      expect(r.code).toBe(1);
      expect(r.err).toMatch(/\[write\/read-only\] .*sites\.ledger\.yaml/);
      expect(fs.readFileSync(path.join(ro, 'sites.ledger.yaml'), 'utf8')).toBe(ledger);
      expect(spawnSync('mount', ['-o', 'remount,rw', ro]).status).toBe(0);
      expect(run(['reclaim', fleet, '--all']).code).toBe(0);
      expect(fs.readdirSync(ro).sort()).toEqual(['sites.fleet.yaml', 'sites.ledger.yaml']); // no temp file left
    } finally {
      umount(ro);
    }
  });
});

describe('synth owns only the files it generated', () => {
  test('the user\'s own files in out/<fleet>/ survive synth; files we no longer generate are removed', () => {
    const s = track(scratch());
    const dir = path.join(s.out, 'sites');
    fs.mkdirSync(path.join(dir, 'fra-1'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'README.md'), 'notes of the network team\n');
    fs.writeFileSync(path.join(dir, 'fra-1', 'extra-rbac.yaml'), 'kind: Role\n');
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    expect(fs.readFileSync(path.join(dir, 'README.md'), 'utf8')).toBe('notes of the network team\n');
    expect(fs.readFileSync(path.join(dir, 'fra-1', 'extra-rbac.yaml'), 'utf8')).toBe('kind: Role\n');
    expect(fs.readFileSync(path.join(dir, MANIFEST_FILE), 'utf8')).not.toMatch(/README|extra-rbac/);
    // remove a cluster: its generated files go, the user's file beside them stays
    fs.writeFileSync(path.join(dir, 'par-1-notes.txt'), 'mine\n');
    fs.writeFileSync(s.fleet, fs.readFileSync(s.fleet, 'utf8').replace(/\n    - name: par-1[\s\S]*?(?=\n    - |\n\S|$)/, ''));
    const r = run(['synth', s.fleet, '--out', s.out]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/removed \d+ files synth no longer generates/);
    expect(fs.existsSync(path.join(dir, 'par-1'))).toBe(false);
    expect(fs.readFileSync(path.join(dir, 'par-1-notes.txt'), 'utf8')).toBe('mine\n');
    expect(fs.readFileSync(path.join(dir, 'README.md'), 'utf8')).toBe('notes of the network team\n');
  });

  test('a file that is not ours at a path we generate is refused, untouched, with the path and a fix', () => {
    const s = track(scratch());
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    const kz = path.join(s.out, 'sites', 'fra-1', 'kustomization.yaml');
    fs.writeFileSync(kz, 'resources: [my-own.yaml]\n'); // edited by hand since synth wrote it
    grow(s.fleet);
    const before = snapshot(s.out);
    const r = run(['synth', s.fleet, '--out', s.out]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/\[write\/not-ours\] .*fra-1\/kustomization\.yaml: was edited since synth wrote it.*fix: /);
    expect(snapshot(s.out)).toEqual(before);
  });

  test('a tree without a manifest: a user file where we write is refused; our old files are adopted', () => {
    const s = track(scratch());
    const dir = path.join(s.out, 'sites');
    fs.mkdirSync(path.join(dir, 'ams-1'), { recursive: true });
    fs.writeFileSync(path.join(dir, 'ams-1', 'kustomization.yaml'), 'resources: [handmade.yaml]\n');
    const r = run(['synth', s.fleet, '--out', s.out]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/\[write\/not-ours\] .*ams-1\/kustomization\.yaml: exists and is not a file synth generated/);
    expect([...snapshot(s.out).keys()]).toEqual(['sites', 'sites/ams-1', 'sites/ams-1/kustomization.yaml']);
  });

  test('an older version\'s tree (no manifest; dist/ of this repo) is adopted: only the manifest is added, unknown files are listed and kept', () => {
    const s = track(scratch());
    const dir = path.join(s.out, 'sites');
    fs.cpSync(path.join(root, 'dist', 'sites'), dir, { recursive: true });
    fs.rmSync(path.join(dir, MANIFEST_FILE), { force: true });
    // an object an older version wrote with different content (this fleet's label): ours, rewritten
    const cm = path.join(dir, 'fra-1', 'ConfigMap.migration-mesh.migration-mesh-gateway.yaml');
    const current = fs.readFileSync(cm, 'utf8');
    const older = current.replace(/\n {2}[a-z-]+\.conf: [^\n]*/, '');
    expect(older).not.toBe(current);
    fs.writeFileSync(cm, older);
    fs.writeFileSync(path.join(dir, 'ams-1', 'old-notes.txt'), 'x\n');
    const before = snapshot(dir);
    const r = run(['synth', s.fleet, '--out', s.out, '--ledger', path.join(s.dir, 'l.yaml')]);
    expect(r.code).toBe(0);
    expect(r.out).toMatch(/1 file in .*sites\/ not generated by synth, left alone: ams-1\/old-notes\.txt/);
    const after = snapshot(dir);
    expect([...after.keys()].sort()).toEqual([...before.keys(), MANIFEST_FILE].sort());
    expect(after.get('fra-1/ConfigMap.migration-mesh.migration-mesh-gateway.yaml')).toBe(current);
  });

  test('out/<fleet> as a regular file, or a symlink out of the output tree, is refused and left as it was', () => {
    const s = track(scratch());
    fs.mkdirSync(s.out);
    fs.writeFileSync(path.join(s.out, 'sites'), 'my notes, not a directory\n');
    let r = run(['synth', s.fleet, '--out', s.out]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/\[write\/not-a-directory\] .*out\/sites: is a file, not the fleet's output directory.*fix: /);
    expect(fs.readFileSync(path.join(s.out, 'sites'), 'utf8')).toBe('my notes, not a directory\n');
    fs.rmSync(path.join(s.out, 'sites'));
    const elsewhere = path.join(s.dir, 'elsewhere');
    fs.mkdirSync(elsewhere);
    fs.writeFileSync(path.join(elsewhere, 'keep.txt'), 'k\n');
    fs.symlinkSync(elsewhere, path.join(s.out, 'sites'));
    r = run(['synth', s.fleet, '--out', s.out]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/\[write\/symlink\] .*out\/sites: is a symbolic link to .*elsewhere, outside the output directory/);
    expect(fs.readdirSync(elsewhere)).toEqual(['keep.txt']);
    expect(fs.readlinkSync(path.join(s.out, 'sites'))).toBe(elsewhere);
  });

  test('a symlink inside the tree leading out, and a manifest not in its format, are refused before anything is written', () => {
    const s = track(scratch());
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    const elsewhere = path.join(s.dir, 'elsewhere');
    fs.mkdirSync(elsewhere);
    const fra = path.join(s.out, 'sites', 'fra-1');
    fs.rmSync(fra, { recursive: true });
    fs.symlinkSync(elsewhere, fra);
    let r = run(['synth', s.fleet, '--out', s.out]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/\[write\/symlink\] .*sites\/fra-1: is a symbolic link inside the output tree/);
    expect(fs.readdirSync(elsewhere)).toEqual([]);
    fs.unlinkSync(fra);
    fs.appendFileSync(path.join(s.out, 'sites', MANIFEST_FILE), 'not a line of sha256sum\n');
    r = run(['synth', s.fleet, '--out', s.out]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/\[write\/manifest-invalid\] .*\.migration-mesh\.manifest: line 'not a line of sha256sum'/);
    expect(fs.existsSync(fra)).toBe(false);
  });

  test('a generated file edited by hand is not removed when synth stops generating it', () => {
    const s = track(scratch());
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    const kz = path.join(s.out, 'sites', 'par-1', 'kustomization.yaml');
    fs.appendFileSync(kz, '# my note\n');
    fs.writeFileSync(s.fleet, fs.readFileSync(s.fleet, 'utf8').replace(/\n    - name: par-1[\s\S]*?(?=\n    - |\n\S|$)/, ''));
    const before = snapshot(s.out);
    const r = run(['synth', s.fleet, '--out', s.out]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/\[write\/not-ours\] .*par-1\/kustomization\.yaml: synth generated it and no longer does, but it was edited since/);
    expect(snapshot(s.out)).toEqual(before);
  });

  test('normal permissions: directories 0755 and files 0644 under umask 022 (0750/0640 under 027)', () => {
    for (const [mask, d, f] of [[0o022, 0o755, 0o644], [0o027, 0o750, 0o640]]) {
      const s = track(scratch());
      fs.rmSync(s.ledger); // written anew, so its mode comes from the umask too
      const old = process.umask(mask);
      try {
        expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
      } finally {
        process.umask(old);
      }
      for (const p of [s.out, path.join(s.out, 'sites'), path.join(s.out, 'sites', 'fra-1')]) expect([p, fs.statSync(p).mode & 0o777]).toEqual([p, d]);
      for (const p of [path.join(s.out, 'sites', 'fra-1', 'kustomization.yaml'), path.join(s.out, 'sites', MANIFEST_FILE), s.ledger]) {
        expect([p, fs.statSync(p).mode & 0o777]).toEqual([p, f]);
      }
    }
  });

  test('a re-run that changes nothing rewrites nothing (files keep their inode and mtime)', () => {
    const s = track(scratch());
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    const f = path.join(s.out, 'sites', 'fra-1', 'kustomization.yaml');
    const st = fs.statSync(f);
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    expect([fs.statSync(f).ino, fs.statSync(f).mtimeMs]).toEqual([st.ino, st.mtimeMs]);
  });
});

describe('every path error ends fast, in one line, with the path and a fix', () => {
  // in a child process with a time limit: on a build that loops, the test fails instead of hanging
  const synthIn = (out: string, ledger: string) => spawnSync(process.execPath, ['-e',
    `process.exitCode = require(${JSON.stringify(path.join(root, 'lib', 'cli', 'cli.js'))}).main(process.argv.slice(1))`,
    'synth', example, '--out', out, '--ledger', ledger], { encoding: 'utf8', timeout: 20_000 });

  test.each([
    ['/proc (mkdir -p loops forever there in Node)', '/proc/mm-w12a-out', /\[write\/failed\] \/proc\/mm-w12a-out: cannot write here \(ENOENT.*fix: /],
    ['/proc/sys', '/proc/sys/mm-w12a/out', /\[write\/(failed|denied)\] \/proc\/sys\/mm-w12a.*fix: /],
    ['/sys', '/sys/mm-w12a-out', /\[write\/denied\] \/sys\/mm-w12a-out: permission denied.*fix: /],
  ])('--out under %s', (_what, out, want) => {
    const dir = track({ dir: fs.mkdtempSync(path.join(os.tmpdir(), 'mm-w12a-proc-')) }).dir;
    const t0 = Date.now();
    const r = synthIn(out, path.join(dir, 'l.yaml'));
    expect(r.error).toBeUndefined(); // not killed by the time limit
    expect(Date.now() - t0).toBeLessThan(15_000);
    expect(r.status).toBe(1);
    expect(r.stderr).toMatch(want);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(fs.existsSync(path.join(dir, 'l.yaml'))).toBe(false); // the ledger is not written either
  });

  test('--out under a regular file (ENOTDIR)', () => {
    const s = track(scratch());
    fs.writeFileSync(path.join(s.dir, 'file'), 'x');
    const r = run(['synth', s.fleet, '--out', path.join(s.dir, 'file', 'out')]);
    expect(r.code).toBe(1);
    expect(r.err).toMatch(/^error: \[write\/not-a-directory\] .*\/file: is a file, but .* needs it to be a directory; fix: .*nothing was written\)\n$/);
  });
});

describe('dist/ after a git merge', () => {
  test('two branches each add a cluster and synth: the merge conflicts in dist/; synth on the merged fleet resolves every conflict, no hand deletions', () => {
    const s = track(scratch());
    const git = (...a: string[]): string => execFileSync('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.org', ...a], { cwd: s.dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    const addCluster = (name: string): void => {
      fs.writeFileSync(s.fleet, fs.readFileSync(s.fleet, 'utf8').replace(/(\n  clusters:\n)/, `$1    - {name: ${name}, nodes: 2}\n`));
    };
    const wider = (text: string): string => text.replace('"172.30.8.96/30"]', '"172.30.8.96/30", "172.30.8.120-172.30.8.127"]');
    fs.writeFileSync(s.fleet, wider(fs.readFileSync(s.fleet, 'utf8'))); // room for both branches' clusters
    git('init', '-q', '-b', 'main');
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    git('add', '-A');
    git('commit', '-qm', 'base');
    git('checkout', '-qb', 'osl');
    addCluster('osl-1');
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    git('add', '-A');
    git('commit', '-qm', 'osl-1');
    git('checkout', '-q', 'main');
    addCluster('zrh-9');
    expect(run(['synth', s.fleet, '--out', s.out]).code).toBe(0);
    git('add', '-A');
    git('commit', '-qm', 'zrh-9');
    const merge = spawnSync('git', ['merge', '-q', 'osl'], { cwd: s.dir, encoding: 'utf8' });
    expect(merge.status).not.toBe(0);
    const conflicted = git('diff', '--name-only', '--diff-filter=U').trim().split('\n');
    expect(conflicted).toEqual(expect.arrayContaining([`out/sites/${MANIFEST_FILE}`, 'out/sites/fleet.svg']));
    // the person merging decides the fleet and the ledger: both clusters, the ledger of either side
    fs.writeFileSync(s.fleet, wider(fs.readFileSync(example, 'utf8')));
    addCluster('osl-1');
    addCluster('zrh-9');
    git('checkout', 'HEAD', '--', 'sites.ledger.yaml');
    const r = run(['synth', s.fleet, '--out', s.out]);
    expect({ code: r.code, err: r.err }).toEqual({ code: 0, err: '' });
    const tree = snapshot(s.out);
    expect([...tree.values()].filter((c) => /^(<{7}|>{7}) /m.test(c))).toEqual([]);
    expect(run(['diff', s.fleet, '--out', s.out]).code).toBe(0);
    // the tree is what synth writes for the merged fleet from scratch into a fresh directory, given that ledger
    const fresh = path.join(s.dir, 'fresh');
    expect(run(['synth', s.fleet, '--out', fresh]).code).toBe(0);
    expect(snapshot(path.join(s.out, 'sites'))).toEqual(snapshot(path.join(fresh, 'sites')));
  });
});
