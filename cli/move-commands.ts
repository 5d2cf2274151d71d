/**
 * The command-line side of watch-moves and cleanup-move: options read from Args, output written,
 * exit status returned (cli/cli.ts registers them; client-node is loaded only when they run).
 */
import { Args } from './args';
import { readFleetFile } from '../src/fleet/load';
import { loadContextMap } from './status';
import { cleanupHints, watchMoves } from './watch-moves';
import { cleanupMove, renderCleanupReport } from './cleanup-move';
import { why } from './status-runtime';

type Sink = (s: string) => void;

function clientOptions(args: Args) {
  const fleetFile = args.files[0];
  const names = () => readFleetFile(fleetFile).spec.clusters.map((c) => c.name);
  return {
    fleetFile,
    outDir: String(args.flags.get('out') ?? process.env.CDK8S_OUTDIR ?? 'dist'),
    contexts: args.flags.has('context-map') ? loadContextMap(String(args.flags.get('context-map')), names()) : undefined,
    kubeconfig: args.flags.has('kubeconfig') ? String(args.flags.get('kubeconfig')) : undefined,
  };
}

/** Run watch-moves or cleanup-move; `tty` says whether stdout is a terminal (bars) or not (lines). */
export async function moveCommand(args: Args, out: Sink, err: Sink, tty = !!process.stdout.isTTY && !process.env.CI): Promise<number> {
  const json = args.flags.get('output') === 'json';
  try {
    if (args.cmd === 'watch-moves') {
      const r = await watchMoves({ ...clientOptions(args), write: out, tty, output: json ? 'json' : 'text',
        timeoutMs: args.flags.has('timeout') ? Number(args.flags.get('timeout')) * 1000 : undefined });
      err(cleanupHints(args.files[0], r.moves));
      return r.code;
    }
    const r = await cleanupMove({ ...clientOptions(args), move: String(args.flags.get('move')), apply: args.flags.has('apply') });
    out(json ? `${JSON.stringify(r, null, 2)}\n` : renderCleanupReport(r));
    return r.ok ? 0 : 1;
  } catch (e) {
    err(`error: ${why(e)}\n`);
    return 1;
  }
}
