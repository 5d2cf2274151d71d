/**
 * The moves file beside a fleet file (`prod.fleet.yaml` -> `prod.moves.yaml`): read, checked with the
 * same zod schema as `spec.forklift.moves`, every problem with its path. Reads through
 * src/base/input-file.ts (like load.ts), no cdk8s import.
 */
import * as fs from 'fs';
import * as path from 'path';
import { parseYamlInput } from '../base/yaml-input';
import { readInputText } from '../base/input-file';
import { FleetProblem, FleetValidationError, pathToString } from '../base/errors';
import { movesDocumentSchema } from './schema';
import { MovesInput } from './checks';

/** `prod.fleet.yaml` -> `prod.moves.yaml` in the same directory. */
export function movesPathFor(fleetFile: string): string {
  const base = path.basename(fleetFile).replace(/(\.fleet)?\.(ya?ml|json)$/, '');
  return path.join(path.dirname(fleetFile), `${base}.moves.yaml`);
}

/** Parse a moves document; `fleet` must match its metadata.name. */
export function parseMovesText(text: string, source: string, fleet: string): MovesInput {
  const r = movesDocumentSchema.safeParse(parseYamlInput(text, source, 'forklift/moves-syntax', 'moves file', source));
  if (!r.success) {
    const problems: FleetProblem[] = r.error.issues.map((i) => ({ code: 'forklift/moves-invalid', path: pathToString(i.path) || '(document)', message: i.message }));
    throw new FleetValidationError(problems, source, 'moves file');
  }
  if (r.data.metadata.name !== fleet) {
    throw new FleetValidationError([{ code: 'forklift/moves-fleet', path: 'metadata.name', message: `'${r.data.metadata.name}' is not the fleet '${fleet}' these moves sit beside`, fix: `set metadata.name: ${fleet}` }], source, 'moves file');
  }
  return { moves: r.data.moves, path: `${path.basename(source)}: moves` };
}

/** The moves file beside a fleet file, if there is one. */
export function loadMovesFile(file: string, fleet: string): MovesInput | undefined {
  if (!fs.existsSync(file)) return undefined;
  return parseMovesText(readInputText(file, 'moves file'), file, fleet);
}
