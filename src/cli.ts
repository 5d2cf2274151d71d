#!/usr/bin/env node
/**
 * migration-mesh CLI: the same fleet as YAML, through the same schema, planner and constructs.
 *
 *   migration-mesh synth  FLEET.yaml... [--out DIR] [--frozen] [--ledger FILE]
 *   migration-mesh validate FLEET.yaml...
 */
import * as fs from 'fs';
import * as path from 'path';
import { FleetValidationError } from './errors';
import { formatLedgerChange, serializeLedger } from './ledger';
import { ledgerPathFor, loadFleetFile, loadLedgerFile } from './load';
import { parseFleetDocument, resolveFleet } from './resolve';
import { synthesizeFleet, writeFiles } from './synth';

interface Args { cmd: string; files: string[]; flags: Map<string, string | true> }

function parseArgs(argv: string[]): Args {
  const [cmd = 'help', ...rest] = argv;
  const files: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < rest.length; i++) {
    const a = rest[i];
    if (a.startsWith('--')) {
      const [k, v] = a.slice(2).split('=', 2);
      if (v !== undefined) flags.set(k, v);
      else if (['out', 'ledger', 'output'].includes(k) && rest[i + 1] && !rest[i + 1].startsWith('--')) flags.set(k, rest[++i]);
      else flags.set(k, true);
    } else if (a === '-o') flags.set('out', rest[++i]);
    else files.push(a);
  }
  return { cmd, files, flags };
}

const USAGE = `usage:
  migration-mesh synth FLEET.yaml... [--out DIR] [--frozen] [--ledger FILE]
      validate, plan against the ledger beside each fleet file (FLEET.ledger.yaml), write
      DIR/<fleet>/<cluster>/... (default DIR: dist) and the updated ledger. --frozen fails
      instead when the ledger would change (CI).
  migration-mesh validate FLEET.yaml...
      check fleet files; every problem is listed with its field path and a fix.
`;

export function main(argv: string[], out: (s: string) => void = (s) => process.stdout.write(s), err: (s: string) => void = (s) => process.stderr.write(s)): number {
  const args = parseArgs(argv);
  try {
    switch (args.cmd) {
      case 'synth': return synth(args, out);
      case 'validate':
        for (const f of need(args.files)) { resolveFleet(parseFleetDocument(loadFleetFile(f), f), f); out(`${f}: valid\n`); }
        return 0;
      case 'help': case '--help': case '-h':
        out(USAGE); return 0;
      default:
        err(`unknown command '${args.cmd}'\n${USAGE}`); return 2;
    }
  } catch (e) {
    if (e instanceof FleetValidationError) { err(`${e.message}\n`); return 1; }
    err(`error: ${(e as Error).message}\n`);
    return 1;
  }
}

function need(files: string[]): string[] {
  if (files.length === 0) throw new Error(`no fleet file given\n${USAGE}`);
  return files;
}

function synth(args: Args, out: (s: string) => void): number {
  const outRoot = String(args.flags.get('out') ?? process.env.CDK8S_OUTDIR ?? 'dist');
  const frozen = args.flags.get('frozen') === true;
  const results = need(args.files).map((f) => {
    const doc = loadFleetFile(f);
    const ledgerFile = typeof args.flags.get('ledger') === 'string' ? String(args.flags.get('ledger')) : ledgerPathFor(f);
    const ledger = loadLedgerFile(ledgerFile);
    return { f, doc, ledgerFile, ledger, r: synthesizeFleet(doc, { ledger, frozen }) };
  });
  // every fleet validated and synthesized in memory before anything is written
  const names = new Set<string>();
  for (const { doc, f } of results) {
    if (names.has(doc.metadata.name)) throw new Error(`${f}: another fleet file is also named '${doc.metadata.name}'; output directories would collide`);
    names.add(doc.metadata.name);
  }
  for (const { f, doc, ledgerFile, r } of results) {
    const dir = path.join(outRoot, doc.metadata.name);
    writeFiles(dir, r.files);
    const ledgerText = serializeLedger(r.ledger);
    if (!fs.existsSync(ledgerFile) || fs.readFileSync(ledgerFile, 'utf8') !== ledgerText) fs.writeFileSync(ledgerFile, ledgerText);
    out(`${f}: ${r.plan.clusters.length} clusters, ${r.files.size} files -> ${dir}/\n`);
    if (r.changes.length) out(`  ledger ${ledgerFile}: ${r.changes.length} change${r.changes.length === 1 ? '' : 's'}\n${r.changes.slice(0, 20).map((c) => `    ${formatLedgerChange(c)}\n`).join('')}${r.changes.length > 20 ? `    ... ${r.changes.length - 20} more\n` : ''}`);
  }
  return 0;
}

if (require.main === module) process.exitCode = main(process.argv.slice(2));
