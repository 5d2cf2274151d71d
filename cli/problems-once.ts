/**
 * The writer checks every file it would write or remove, so one directory on the way that it cannot use
 * (a symbolic link inside the tree, a file where a directory goes) is found once for each file below
 * it: hundreds of identical lines for one cause. Here they become one problem that says how many
 * files it blocks. Used where the writer throws its problems (cli/write-tree.ts).
 */
import { FleetProblem } from '../src/base/errors';

/** One problem per code and path, in first-seen order; a repeated one says for how many files it was found. */
export function oncePerPath(problems: readonly FleetProblem[]): FleetProblem[] {
  const seen = new Map<string, { problem: FleetProblem; count: number }>();
  for (const p of problems) {
    const key = `${p.code}\u0000${p.path}`;
    const entry = seen.get(key);
    if (entry) entry.count += 1;
    else seen.set(key, { problem: p, count: 1 });
  }
  return [...seen.values()].map(({ problem, count }) => (count === 1 ? problem : { ...problem, message: `${problem.message} (${count} files below it)` }));
}
