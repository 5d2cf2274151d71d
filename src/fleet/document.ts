/**
 * Fleet validation, structure: the fleet document against its schema (the first stage of the main
 * path), every problem with its path. What a document with problems can still be checked for is
 * salvage.ts's to decide. Pure, no cdk8s import.
 */
import { z } from 'zod';
import { Checked, FleetProblem, ProblemCode, pathToString } from '../base/errors';
import { FALLBACK_FIELD, fallbackProblem } from '../kubevirt/fallback';
import { FleetDocument, FleetSpec, FLEET_API_VERSION, FLEET_KIND, fleetDocumentSchema } from './schema';

/** A whole fleet document, or just a name and a spec. */
export type FleetInput = FleetDocument | { readonly name: string; readonly spec: FleetSpec };

export function toFleetDocument(fleet: FleetInput): FleetDocument {
  return 'apiVersion' in fleet
    ? fleet
    : { apiVersion: FLEET_API_VERSION, kind: FLEET_KIND, metadata: { name: fleet.name }, spec: fleet.spec };
}

/** The schema check: the parsed document, or every problem the schema finds. */
export function checkFleetDocument(input: unknown): Checked<FleetDocument> {
  const r = fleetDocumentSchema.safeParse(input);
  return r.success ? { ok: true, value: r.data, problems: [] } : { ok: false, problems: zodProblems(r.error, input) };
}

/** The schema's issues as problems, each with its path, and a fix where one is known. */
export function zodProblems(err: z.ZodError, input?: unknown): FleetProblem[] {
  return err.issues.flatMap((issue): FleetProblem[] => {
    const path = pathToString(issue.path) || '(document)';
    if (issue.code === 'unrecognized_keys' && issue.keys.includes(FALLBACK_FIELD)) {
      const others = issue.keys.filter((k) => k !== FALLBACK_FIELD);
      const rest = others.length ? [problemOf({ ...issue, keys: others }, path, input)] : [];
      return [fallbackProblem(`${path}.${FALLBACK_FIELD}`, `the field ${FALLBACK_FIELD}`), ...rest];
    }
    return unionProblems(issue, input) ?? [problemOf(issue, path, input)];
  });
}

/**
 * A value no option of a union takes: zod says only "Invalid input". When exactly one option takes the value's type
 * (the others refuse it at the top, e.g. a quantity or its per-pair map), its own issues are the problems, at their
 * full paths; a number or boolean where one option takes a string gets the YAML hint. Otherwise undefined.
 */
function unionProblems(issue: z.core.$ZodIssue, input: unknown): FleetProblem[] | undefined {
  if (issue.code !== 'invalid_union' || !('errors' in issue) || !Array.isArray(issue.errors)) return undefined;
  const atTop = (i: z.core.$ZodIssue) => i.code === 'invalid_type' && i.path.length === 0;
  const fitting = issue.errors.filter((list) => !list.some(atTop));
  const within = (i: z.core.$ZodIssue) => ({ ...i, path: [...issue.path, ...i.path] }) as z.core.$ZodIssue;
  if (fitting.length === 1) return fitting[0].map((i) => problemOf(within(i), pathToString(within(i).path) || '(document)', input));
  const stringy = fitting.length === 0 && issue.errors.flat().find((i) => atTop(i) && i.code === 'invalid_type' && i.expected === 'string');
  return stringy ? [problemOf(within(stringy), pathToString(issue.path) || '(document)', input)] : undefined;
}

function problemOf(issue: z.core.$ZodIssue, path: string, input: unknown): FleetProblem {
  if (issue.code === 'unrecognized_keys') {
    return {
      code: 'unknown-field', path,
      message: `unknown field${issue.keys.length > 1 ? 's' : ''} ${issue.keys.map((k) => `'${k}'`).join(', ')}`,
      fix: 'remove it or check its spelling against the fleet format in docs/fleet.md',
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
  // a schema rule with a code of its own (params: {code, fix}), e.g. image-invalid
  const own = issue.code === 'custom' ? (issue.params as { code?: ProblemCode; fix?: string } | undefined) : undefined;
  if (own?.code) return { code: own.code, path, message: issue.message, fix: own.fix };
  return { code: 'schema-invalid', path, message: issue.message };
}

export const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null;
