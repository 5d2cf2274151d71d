/**
 * Reading fleet and ledger files. The only module of the planning side that touches the file system.
 */
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { FleetValidationError, MigrationMeshError } from './errors';
import { FleetDocument } from './fleet-schema';
import { Ledger, parseLedger } from './ledger';
import { parseFleetDocument } from './resolve';

/** Parse fleet YAML/JSON text; syntax errors name line and column. */
export function parseFleetText(text: string, source = 'fleet'): FleetDocument {
  const doc = YAML.parseDocument(text, { prettyErrors: true, uniqueKeys: true });
  if (doc.errors.length > 0) {
    throw new FleetValidationError(doc.errors.map((e) => {
      const pos = e.linePos?.[0];
      return {
        code: 'yaml-syntax' as const,
        path: pos ? `line ${pos.line}, column ${pos.col}` : '(document)',
        message: `not valid YAML: ${e.message.split('\n')[0]}`,
        fix: 'correct the syntax at that position (indentation, a missing ":" or quote)',
      };
    }), source);
  }
  return parseFleetDocument(doc.toJS(), source);
}

export function loadFleetFile(file: string): FleetDocument {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (e) {
    const message = `cannot read fleet file ${file}: ${(e as Error).message}`;
    throw new MigrationMeshError(message, [{ code: 'file-unreadable', path: file, message, fix: 'check the path and its permissions' }]);
  }
  return parseFleetText(text, file);
}

/** Ledger path beside a fleet file: `prod.fleet.yaml` -> `prod.ledger.yaml`. */
export function ledgerPathFor(fleetFile: string): string {
  const dir = path.dirname(fleetFile);
  const base = path.basename(fleetFile).replace(/(\.fleet)?\.(ya?ml|json)$/, '');
  return path.join(dir, `${base}.ledger.yaml`);
}

export function loadLedgerFile(file: string): Ledger | undefined {
  if (!fs.existsSync(file)) return undefined;
  return parseLedger(fs.readFileSync(file, 'utf8'), file);
}
