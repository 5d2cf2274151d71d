/**
 * Where synth's time goes: a V8 CPU profile (`node --cpu-prof`) of one `synth` run, each sample given to
 * the innermost frame on its stack that names a part of the pipeline (samples in native code, e.g. a
 * file system call or the garbage collector inside YAML rendering, go to the part that called them).
 */
import * as fs from 'fs';

interface CallFrame { functionName: string; url: string }
interface ProfileNode { id: number; callFrame: CallFrame; children?: number[] }
interface CpuProfile { nodes: ProfileNode[]; samples: number[]; timeDeltas: number[] }

/** The parts, in the order printed. */
export const PARTS = [
  'planning (src/, zod)', 'constructs (ours, cdk8s)', 'cdk8s-plus', 'objects to JSON (cdk8s toJson)', 'YAML text',
  'manifest hashing', 'writer: checks, temp files, links', 'writer: flush (sync)', 'writer: renames, lock, journal',
  'module loading', 'garbage collection', 'other',
] as const;
export type Part = typeof PARTS[number];

/** The part one frame names, if any (innermost wins). */
function partOf(f: CallFrame): Part | undefined {
  const u = f.url;
  const fn = f.functionName;
  if (fn === '(garbage collector)') return 'garbage collection';
  if (u.includes('/cli/write-checks.js') && fn === 'sha256') return 'manifest hashing';
  if (u.includes('/cli/write-tree.js') && fn === 'flush') return 'writer: flush (sync)';
  if (u.includes('/cli/write-tree.js') && (fn === 'commit' || fn === 'prune')) return 'writer: renames, lock, journal';
  if (u.includes('/cli/write-guard.js')) return 'writer: renames, lock, journal';
  if (u.includes('/cli/write-tree.js') || u.includes('/cli/write-checks.js')) return 'writer: checks, temp files, links';
  if (u.includes('/src/base/yaml-text.js') || u.includes('/node_modules/yaml/')) return 'YAML text';
  if (u.includes('/node_modules/cdk8s-plus-')) return 'cdk8s-plus';
  if (u.includes('/node_modules/cdk8s/') && fn === 'toJson') return 'objects to JSON (cdk8s toJson)';
  if (u.includes('/lib/constructs/') || u.includes('/node_modules/cdk8s/') || u.includes('/node_modules/constructs/') || u.includes('/lib/imports/')) return 'constructs (ours, cdk8s)';
  if (u.includes('/lib/src/') || u.includes('/node_modules/zod/') || u.includes('/node_modules/ipaddr.js/')) return 'planning (src/, zod)';
  if (u.startsWith('node:internal/modules/')) return 'module loading';
  // the glue between the parts (the per-cluster loop, the bench itself): not the writer it runs inside
  if (u.includes('/cli/synthesize-') || u.includes('/cli/fleet-directory.js') || u.includes('/bench/')) return 'other';
  return undefined;
}

/** Milliseconds per part, from a `.cpuprofile` file. */
export function profileBreakdown(file: string): Map<Part, number> {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const partOfNode = new Map<number, Part>();
  const resolve = (id: number): Part => {
    const known = partOfNode.get(id);
    if (known) return known;
    const own = partOf(byId.get(id)!.callFrame);
    const up = parent.get(id);
    const part = own ?? (up === undefined ? 'other' : resolve(up));
    partOfNode.set(id, part);
    return part;
  };
  const out = new Map<Part, number>(PARTS.map((x) => [x, 0]));
  p.samples.forEach((id, i) => out.set(resolve(id), out.get(resolve(id))! + (p.timeDeltas[i] ?? 0) / 1000));
  return out;
}

/** Milliseconds a profiled thread was busy: every sample but those of an idle thread (`(idle)`). */
export function busyMs(file: string): number {
  const p = JSON.parse(fs.readFileSync(file, 'utf8')) as CpuProfile;
  const idle = new Set(p.nodes.filter((n) => n.callFrame.functionName === '(idle)').map((n) => n.id));
  return p.samples.reduce((ms, id, i) => (idle.has(id) ? ms : ms + (p.timeDeltas[i] ?? 0) / 1000), 0);
}
