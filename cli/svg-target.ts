/**
 * Where `plan --svg FILE` may write: never over an input of the run, into synth's tree, or over a file
 * that is not a picture this package drew (issue #23, class 6). The refusal names the option and the fix.
 */
import * as fs from 'fs';
import * as path from 'path';
import { FleetProblem } from '../src/base/errors';
import { MANIFEST_FILE } from './write-tree';

const sameFile = (a: string, b: string): boolean => {
  if (path.resolve(a) === path.resolve(b)) return true;
  try { return fs.realpathSync(a) === fs.realpathSync(b); } catch { return false; }
};

/** The picture this package draws (`renderFleetSvg`): its first two lines. */
const OUR_SVG = /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"[^\n]*>\n<title>Migration Mesh fleet [^<\n]*<\/title>\n/;

/**
 * `plan --svg FILE` never overwrites an input of the run (fleet, ledger, moves file), a file of synth's
 * tree (a directory with synth's manifest: synth writes fleet.svg there), or a file that is not a
 * picture `plan` or `synth` drew.
 */
export function svgTargetProblem(svg: string, inputs: [string, string][]): FleetProblem | undefined {
  const input = inputs.find(([file]) => sameFile(svg, file));
  if (input) {
    return { code: 'write/input', path: svg, message: `--svg ${svg} is ${input[1]}, an input of this run: it would be overwritten by the picture`, fix: 'give --svg a file of its own, e.g. --svg fleet.svg' };
  }
  if (fs.existsSync(path.join(path.dirname(path.resolve(svg)), MANIFEST_FILE))) {
    return { code: 'write/not-ours', path: svg, message: `--svg ${svg} is inside a tree synth writes (${MANIFEST_FILE} beside it): a picture written there would be an edit synth refuses to overwrite`, fix: 'give --svg a file outside synth\'s output, or let synth write fleet.svg there itself' };
  }
  let existing: string | undefined;
  try { existing = fs.statSync(svg).isFile() ? fs.readFileSync(svg, 'utf8') : undefined; } catch { existing = undefined; }
  if (existing !== undefined && !OUR_SVG.test(existing)) {
    return { code: 'write/not-ours', path: svg, message: `--svg ${svg} exists and is not a fleet picture drawn by migration-mesh: it would be overwritten`, fix: 'give --svg a new file (or one plan drew before), or move that file away' };
  }
  return undefined;
}
