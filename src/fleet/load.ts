/**
 * A fleet as given (a file, YAML/JSON text or an object) to a checked document, and reading ledger
 * files. Files are read through src/base/input-file.ts (bounded in size and time, whatever the path is).
 */
import * as fs from 'fs';
import * as path from 'path';
import { FleetValidationError } from '../base/errors';
import { parseYamlInput } from '../base/yaml-input';
import { readInputText } from '../base/input-file';
import { FleetDocument } from './schema';
import { Ledger, parseLedger } from '../addressing/ledger';
import { checkFleetDocument } from './document';
import { everyDocumentProblem, orEveryProblem, salvageFleetDocument } from './salvage';

/**
 * Structural validation of a fleet document (from YAML/JSON or a TS object). Throws FleetValidationError
 * with every problem: the schema's, and the cross-field rules' over the part of the document whose
 * values have the schema's shape (src/fleet/salvage.ts).
 */
export function parseFleetDocument(input: unknown, source?: string): FleetDocument {
  return orEveryProblem(checkFleetDocument(input), () => everyDocumentProblem(input), source);
}

/** Parse fleet YAML/JSON text; syntax errors name line and column. */
export function parseFleetText(text: string, source = 'fleet'): FleetDocument {
  return parseFleetDocument(parseYaml(text, source), source);
}

/** YAML/JSON text to data, without the schema; every refusal has a code (src/base/yaml-input.ts). */
function parseYaml(text: string, source: string): unknown {
  return parseYamlInput(text, source, 'yaml-syntax', 'fleet file');
}

function readText(file: string): string {
  return readInputText(file);
}

/** A fleet file, checked against the fleet schema. Throws FleetValidationError with every problem. */
export function loadFleetFile(file: string): FleetDocument {
  return parseFleetText(readText(file), file);
}

/**
 * A fleet file as written, for synthesis to check (the CLI's synth, validate, plan and diff): synthesis
 * reports the schema's problems together with those of every later layer. Only a document too
 * misshapen for any later check to read (a required field missing or of the wrong type) is refused
 * here; otherwise the document's shape holds, though a value may be out of range or, in an optional
 * field, of the wrong type (the schema check in synthesis reports it).
 */
export function readFleetFile(file: string): FleetDocument {
  const data = parseYaml(readText(file), file);
  const s = salvageFleetDocument(data);
  if (!s.value) throw new FleetValidationError(s.problems, file);
  return data as FleetDocument;
}

/** Ledger path beside a fleet file: `prod.fleet.yaml` -> `prod.ledger.yaml`. */
export function ledgerPathFor(fleetFile: string): string {
  const dir = path.dirname(fleetFile);
  const base = path.basename(fleetFile).replace(/(\.fleet)?\.(ya?ml|json)$/, '');
  return path.join(dir, `${base}.ledger.yaml`);
}

export function loadLedgerFile(file: string): Ledger | undefined {
  if (!fs.existsSync(file)) return undefined;
  return parseLedger(readInputText(file, 'ledger'), file);
}
