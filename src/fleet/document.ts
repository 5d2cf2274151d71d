/**
 * Fleet validation, structure: the fleet document against its schema, every problem with its path,
 * and the document later checks can still read when the structure is wrong. Pure, no cdk8s import.
 */
import { z } from 'zod';
import { FleetProblem, Salvaged, pathToString } from '../base/errors';
import { FleetDocument, fleetDocumentSchema } from './schema';

function zodProblems(err: z.ZodError, input?: unknown): FleetProblem[] {
  return err.issues.map((issue): FleetProblem => {
    const path = pathToString(issue.path) || '(document)';
    if (issue.code === 'unrecognized_keys') {
      return {
        code: 'unknown-field', path,
        message: `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')}`,
        fix: 'remove it or check its spelling against the fleet format in README',
      };
    }
    if (issue.code === 'invalid_union' && 'note' in issue && issue.note === 'No matching discriminator') {
      return { code: 'unknown-attachment-type', path, message: 'unknown attachment type', fix: 'use one of macvlan, bridge, ipvlan, host-device' };
    }
    // a record key the schema refuses: say which key and why (zod's own text is "Invalid key in record")
    if (issue.code === 'invalid_key' && issue.issues.length) {
      return { code: 'schema-invalid', path, message: `the key ${issue.issues.map((i) => i.message).join('; ')}` };
    }
    // YAML reads an unquoted 1.10 as the number 1.1, an unquoted 1 as 1: say so
    const given = issue.path.reduce<unknown>((o, k) => (isRecord(o) || Array.isArray(o) ? (o as Record<string, unknown>)[k as string] : undefined), input);
    if (issue.code === 'invalid_type' && issue.expected === 'string' && (typeof given === 'number' || typeof given === 'boolean')) {
      return {
        code: 'schema-invalid', path,
        message: `${issue.message}: YAML read the unquoted ${String(given)} as a ${typeof given} (an unquoted 1.10 even becomes 1.1)`,
        fix: `quote it: ${issue.path[issue.path.length - 1] as string}: "${String(given)}"`,
      };
    }
    return { code: 'schema-invalid', path, message: issue.message };
  });
}

/** Issues about a value's type or shape; the others (range, format, enum) leave a value of the right type. */
const SHAPE_ISSUES = new Set(['invalid_type', 'invalid_union', 'unrecognized_keys', 'invalid_key', 'invalid_element']);
const isShapeIssue = (i: z.core.$ZodIssue): boolean => SHAPE_ISSUES.has(i.code);

/** A copy of `input` without the values of the wrong type or shape (and without unknown keys). */
function withoutMisshapenValues(input: unknown, issues: readonly z.core.$ZodIssue[]): unknown {
  const copy: unknown = structuredClone(input);
  for (const issue of issues.filter(isShapeIssue)) {
    const parent = issue.path.slice(0, -1).reduce<unknown>((o, k) => (isRecord(o) ? o[k as string] : undefined), copy);
    if (issue.code === 'unrecognized_keys') {
      const at = issue.path.reduce<unknown>((o, k) => (isRecord(o) ? o[k as string] : undefined), copy);
      if (isRecord(at)) for (const k of issue.keys) delete at[k];
    } else if (isRecord(parent) && issue.path.length > 0 && !Array.isArray(parent)) {
      delete parent[issue.path[issue.path.length - 1] as string];
    }
  }
  return copy;
}

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null;

/** A salvaged fleet document; see `salvageFleetDocument`. */
export interface SalvagedDocument extends Salvaged<FleetDocument> {
  /**
   * When clusters were left out: the place in the input of each cluster the document kept.
   * @default - every cluster kept, in place
   */
  readonly clusterIndex?: readonly number[];
}

/**
 * The schema check alone, with the document later checks can still read: the parsed document, or the
 * input without its misshapen values (values only out of range or format keep their place). A
 * cluster whose required value is unreadable is left out (`clusterIndex` says where the others were);
 * nothing when a fleet-level required value is.
 */
export function salvageFleetDocument(input: unknown): SalvagedDocument {
  const r = fleetDocumentSchema.safeParse(input);
  if (r.success) return { problems: [], value: r.data };
  const problems = zodProblems(r.error, input);
  const rest = withoutMisshapenValues(input, r.error.issues);
  const again = fleetDocumentSchema.safeParse(rest);
  if (again.success) return { problems, value: again.data };
  const unreadable = new Set<number>();
  for (const { path } of again.error.issues.filter(isShapeIssue)) {
    if (path[0] !== 'spec' || path[1] !== 'clusters' || typeof path[2] !== 'number') return { problems };
    unreadable.add(path[2]);
  }
  if (unreadable.size === 0) return { problems, value: rest as FleetDocument };
  const spec = (rest as { spec: { clusters: unknown[] } }).spec;
  const clusterIndex = spec.clusters.map((_, i) => i).filter((i) => !unreadable.has(i));
  const fewer = { ...(rest as object), spec: { ...spec, clusters: clusterIndex.map((i) => spec.clusters[i]) } };
  const third = fleetDocumentSchema.safeParse(fewer);
  if (!third.success && third.error.issues.some(isShapeIssue)) return { problems };
  return { problems, value: third.success ? third.data : (fewer as FleetDocument), clusterIndex };
}

/** Problems found in a document that left clusters out, with every `spec.clusters[i]` as the input numbers it. */
export function reindexProblems(problems: readonly FleetProblem[], clusterIndex: readonly number[] | undefined): FleetProblem[] {
  if (!clusterIndex) return [...problems];
  const renumber = (s: string): string => s.replace(/spec\.clusters\[(\d+)\]/g, (_, j: string) => `spec.clusters[${clusterIndex[Number(j)] ?? j}]`);
  return problems.map((p) => ({ ...p, path: renumber(p.path), message: renumber(p.message), ...(p.fix ? { fix: renumber(p.fix) } : {}) }));
}
