/**
 * cdk8s app entry (cdk8s.yaml): synthesizes every bundled example fleet into $CDK8S_OUTDIR (dist/),
 * one directory per fleet and cluster, keeping each fleet's ledger beside it.
 */
import * as fs from 'fs';
import * as path from 'path';
import { main } from './cli/cli';

const examples = path.join(__dirname, '..', 'examples');
const fleets = fs.readdirSync(examples).filter((f) => f.endsWith('.fleet.yaml')).sort().map((f) => path.join(examples, f));
process.exitCode = main(['synth', ...fleets, '--out', process.env.CDK8S_OUTDIR ?? path.join(__dirname, '..', 'dist'), ...process.argv.slice(2)]);
