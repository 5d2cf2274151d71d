/**
 * Errors are values: a field path, what was given, what is wrong, and how to fix it. Validation
 * collects every problem; `FleetValidationError` carries them all at once.
 */

export interface FleetProblem {
  /** Dotted field path in the fleet document, e.g. `spec.clusters[2].migrationNetwork.cidr`. */
  readonly path: string;
  /** What is wrong, including what was given and what is expected. */
  readonly message: string;
  /** How to fix it. */
  readonly fix?: string;
  /** Stable code (e.g. `forklift/not-reachable`), for filtering. @default - none */
  readonly code?: string;
}

export function formatProblem(p: FleetProblem): string {
  return `${p.path}: ${p.code ? `[${p.code}] ` : ''}${p.message}${p.fix ? `\n    fix: ${p.fix}` : ''}`;
}

export class FleetValidationError extends Error {
  public readonly problems: readonly FleetProblem[];
  constructor(problems: readonly FleetProblem[], source?: string) {
    const head = `${source ? `${source}: ` : ''}fleet is invalid (${problems.length} problem${problems.length === 1 ? '' : 's'}); nothing was written`;
    super(`${head}\n${problems.map((p) => `  - ${formatProblem(p)}`).join('\n')}`);
    this.name = 'FleetValidationError';
    this.problems = problems;
  }
}

/** Render a path array (zod style) as `a.b[2].c`. */
export function pathToString(parts: readonly PropertyKey[]): string {
  let out = '';
  for (const p of parts) {
    if (typeof p === 'number') out += `[${p}]`;
    else out += out ? `.${String(p)}` : String(p);
  }
  return out;
}

/** Collects problems during validation. */
export class Problems {
  public readonly list: FleetProblem[] = [];
  add(path: string, message: string, fix?: string): void {
    this.list.push({ path, message, fix });
  }
  get empty(): boolean {
    return this.list.length === 0;
  }
  throwIfAny(source?: string): void {
    if (!this.empty) throw new FleetValidationError(this.list, source);
  }
}
