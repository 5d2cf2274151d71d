/**
 * What `plan` and `diff` print with `--output json` when they fail, so a pipeline reading their stdout
 * gets data either way (validate's per-file objects carry their problems the same way): the file the
 * failure belongs to, the message, and every problem with its stable code (docs/errors.md).
 */
import { FleetProblem, FleetValidationError, MigrationMeshError } from '../src/base/errors';

/** One problem as JSON (the fix only when there is one). */
export const problemJson = ({ code, path, message, fix }: FleetProblem) => ({ code, path, message, ...(fix ? { fix } : {}) });

/**
 * `{ok: false, file, message, problems}`: `file` is the one the error names (a FleetValidationError's
 * source), else `file` as given; problems are empty for an error without codes (a usage error).
 */
export function failureJson(e: unknown, file?: string): string {
  const source = e instanceof FleetValidationError && e.source ? e.source : file;
  const problems = e instanceof MigrationMeshError ? e.problems.map(problemJson) : [];
  const message = e instanceof Error ? e.message : String(e);
  return `${JSON.stringify({ ok: false, ...(source ? { file: source } : {}), message, problems }, null, 2)}\n`;
}
