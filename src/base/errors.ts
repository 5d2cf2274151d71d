/**
 * Errors are values: a stable code, a field path, what is wrong (with what was given), and how to fix
 * it. Inside the library every check adds its problems to a `ProblemCollector` and returns a `Checked`
 * value; the public entry points (`resolveFleet`, `planFleet`, `parseFleetDocument`, the constructs)
 * throw once, at the boundary, with every problem at once.
 */
import { ProblemCode } from './problem-codes';

export type { ProblemCode } from './problem-codes';

export interface FleetProblem {
  /** Stable identifier of the kind of problem (docs/errors.md), for filtering and documentation. */
  readonly code: ProblemCode;
  /** Dotted field path in the fleet document, e.g. `spec.clusters[2].migrationNetwork.cidr`. */
  readonly path: string;
  /** What is wrong, including what was given and what is expected. */
  readonly message: string;
  /** How to fix it. */
  readonly fix?: string;
}

export function formatProblem(p: FleetProblem): string {
  return `[${p.code}] ${p.path}: ${p.message}${p.fix ? `\n    fix: ${p.fix}` : ''}`;
}

/** Base of every error the library throws on purpose: it carries the problems, each with its code. */
export class MigrationMeshError extends Error {
  public readonly problems: readonly FleetProblem[];
  constructor(message: string, problems: readonly FleetProblem[]) {
    super(message);
    this.name = 'MigrationMeshError';
    this.problems = problems;
  }

  /** The codes of the problems, in order (the first is the error's main code). */
  get codes(): ProblemCode[] {
    return this.problems.map((p) => p.code);
  }
}

/** The fleet (or its ledger) cannot be planned: every problem, nothing synthesized or written. */
export class FleetValidationError extends MigrationMeshError {
  /** The file the problems belong to, when the caller named it. */
  public readonly source?: string;
  /** The kind of input refused when it is not the fleet (`moves file`, `context map`, `kubeconfig`...). */
  public readonly input?: string;
  /**
   * `input`: the kind of file the problems are in, when it is not the fleet itself (a kubeconfig too
   * large is not "fleet is invalid").
   */
  constructor(problems: readonly FleetProblem[], source?: string, input?: string) {
    const n = `${problems.length} problem${problems.length === 1 ? '' : 's'}`;
    const other = input !== undefined && input !== 'fleet file' ? input : undefined;
    // a frozen ledger that would change is not an invalid fleet: say what it is
    const what = problems.length > 0 && problems.every((p) => p.code === 'ledger-would-change' || p.code === 'ledger-missing')
      ? `--frozen: the ledger would change (${n})`
      : other === 'ledger' || (problems.length > 0 && problems.every((p) => p.code.startsWith('ledger-')))
        ? `the address ledger cannot be used (${n})`
        : other ? `the ${other} is invalid (${n})` : `fleet is invalid (${n})`;
    const head = `${source ? `${source}: ` : ''}${what}; nothing was written`;
    super(`${head}\n${problems.map((p) => `  - ${formatProblem(p)}`).join('\n')}`, problems);
    this.name = 'FleetValidationError';
    this.source = source;
    this.input = other;
  }
}

/**
 * A construct or helper was given props it cannot use (the fleet path does not apply: the path is the
 * prop's). The message names the prop unless the problem's message already does.
 */
export class InvalidPropsError extends MigrationMeshError {
  constructor(problem: FleetProblem) {
    const what = problem.message.includes(problem.path) ? problem.message : `${problem.path}: ${problem.message}`;
    super(`${what}${problem.fix ? `; ${problem.fix}` : ''}`, [problem]);
    this.name = 'InvalidPropsError';
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

/** A value, or every problem that kept it from being made. */
export type Checked<T> =
  | { readonly ok: true; readonly value: T; readonly problems: readonly [] }
  | { readonly ok: false; readonly problems: readonly FleetProblem[] };

const ok = <T>(value: T): Checked<T> => ({ ok: true, value, problems: [] });

/**
 * What a check found, and the part of its value that later checks can still read although problems
 * were found (src/fleet/salvage.ts says which part). Lets one run report the problems of every layer (schema,
 * cross-field rules, planning, delivery) instead of stopping at the first layer that has some.
 */
export interface Salvaged<T> {
  readonly problems: readonly FleetProblem[];
  /** @default - nothing later checks could read */
  readonly value?: T;
}

/** A salvaged value as a checked one: the value only when there is no problem. */
export const checkedOf = <T>(s: Salvaged<T>): Checked<T> =>
  (s.problems.length === 0 && s.value !== undefined ? ok(s.value) : { ok: false, problems: [...s.problems] });

/** The boundary: the value, or one FleetValidationError with every problem. */
export function orThrow<T>(r: Checked<T>, source?: string): T {
  if (!r.ok) throw new FleetValidationError(r.problems, source);
  return r.value;
}

/** Collects problems while checks run; the phases of one check share one collector. */
export class ProblemCollector {
  private readonly list: FleetProblem[] = [];

  add(code: ProblemCode, path: string, message: string, fix?: string): void {
    this.list.push({ code, path, message, fix });
  }

  /**
   * Add problems found elsewhere. `newPathsOnly`: skip a problem whose path already has one (a second
   * pass over a malformed document repeats what the first found).
   */
  addAll(problems: readonly FleetProblem[], opts: { newPathsOnly?: boolean } = {}): void {
    const seen = new Set(this.list.map((p) => p.path));
    for (const p of problems) if (!opts.newPathsOnly || !seen.has(p.path)) this.list.push(p);
  }

  /** Merge the problems of a checked value; the value when it has one. */
  take<T>(r: Checked<T>): T | undefined {
    this.addAll(r.problems);
    return r.ok ? r.value : undefined;
  }

  get problems(): readonly FleetProblem[] {
    return this.list;
  }

  get empty(): boolean {
    return this.list.length === 0;
  }

  /** The collected problems as a failed result (callers check `empty` first when they have a value). */
  failed<T>(): Checked<T> {
    return { ok: false, problems: [...this.list] };
  }

  /** `value()` when nothing was collected, else every problem. */
  result<T>(value: () => T): Checked<T> {
    return this.empty ? ok(value()) : this.failed();
  }
}
