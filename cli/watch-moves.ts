/**
 * `migration-mesh watch-moves FLEET.yaml`: every planned move watched until it completes or fails, or
 * --timeout runs out (issue 51 item 4). Watches (client-node Watch, reconnected with a bounded backoff,
 * never a tight poll) on the hub's Forklift Plans and Migrations and on each side's
 * VirtualMachineInstanceMigrations; src/forklift/progress.ts judges and renders. A bar per move on a
 * terminal (redrawn in place), a plain line per change otherwise, a JSON line per change with --output json.
 * Bytes: the API has none; while a move runs, cli/move-metrics.ts reads virt-handler's migration metrics on the
 * source node and the source gateways' tunnel counter, every `meterIntervalMs`.
 */
import * as k8s from '@kubernetes/client-node';
import { MoveObservation, MoveProgress, VmimStatus, allSettled, barLine, jsonLine, moveProgress, plainLine, reasonsOnce, redrawFrame, watchExit, WATCH_EXIT } from '../src/forklift/progress';
import { MoveClientOptions, PlannedMove, moveClients } from './move-clients';
import { MoveMeter } from './move-metrics';

export interface WatchOptions extends MoveClientOptions {
  /** @default 3600000 (an hour) */
  readonly timeoutMs?: number;
  /** @default 'text' */
  readonly output?: 'text' | 'json';
  /** Whether to draw bars (a terminal). @default false */
  readonly tty?: boolean;
  /** How often a running move's bytes are read (at most one read per pod per interval). @default 5000 */
  readonly meterIntervalMs?: number;
  readonly write: (s: string) => void;
}

type Obj = { metadata?: { name?: string; namespace?: string; uid?: string }; spec?: Record<string, unknown>; status?: Record<string, unknown> };
type Handler = (type: string, o: Obj) => void;

/** One watch on `path`, re-opened after it ends (at most once a second, 600 times) until `stop()`. */
function keepWatching(kc: k8s.KubeConfig, path: string, on: Handler): () => void {
  let stopped = false;
  let abort: AbortController | undefined;
  let reconnects = 0;
  const open = (): void => {
    if (stopped || reconnects++ > 600) return;
    const again = () => { if (!stopped) setTimeout(open, 1000).unref(); };
    new k8s.Watch(kc).watch(path, {}, (t, o) => on(t, o as Obj), again).then((a) => { abort = a; if (stopped) a.abort(); }, again);
  };
  open();
  return () => { stopped = true; abort?.abort(); };
}

const keyOf = (m: PlannedMove) => `${m.plan} ${m.vm.namespace}/${m.vm.name}`;

function vmimPaths(m: PlannedMove): [string, string] {
  return [`/apis/kubevirt.io/v1/namespaces/${m.vm.namespace}/virtualmachineinstancemigrations`,
    `/apis/kubevirt.io/v1/namespaces/${m.targetNamespace}/virtualmachineinstancemigrations`];
}

/** Fold an event into the observations of the moves it is about. */
function fold(obs: Map<string, MoveObservation>, moves: PlannedMove[], what: 'plan' | 'migration' | 'source' | 'target', o: Obj): void {
  const ns = o.metadata?.namespace;
  for (const m of moves) {
    const cur = obs.get(keyOf(m))!;
    const [pns, pname] = m.plan.split('/');
    if (what === 'plan' && ns === pns && o.metadata?.name === pname) {
      obs.set(keyOf(m), { ...cur, planConditions: (o.status?.conditions ?? []) as MoveObservation['planConditions'] });
    } else if (what === 'migration' && ns === pns && (o.spec?.plan as { name?: string } | undefined)?.name === pname) {
      const vms = (o.status?.vms ?? []) as { name?: string; namespace?: string }[];
      const vm = vms.find((v) => v.name === m.vm.name && (!v.namespace || v.namespace === m.vm.namespace));
      if (vm) obs.set(keyOf(m), { ...cur, migrationVm: vm as MoveObservation['migrationVm'] });
    } else if ((what === 'source' || what === 'target') && o.spec?.vmiName === m.vm.name
      && ns === (what === 'source' ? m.vm.namespace : m.targetNamespace)) {
      obs.set(keyOf(m), { ...cur, [what === 'source' ? 'sourceVmim' : 'targetVmim']: (o.status ?? {}) as VmimStatus });
    }
  }
}

/** Every interval, each running move's bytes and tunnel read (each read bounded; a tick still running is not doubled). */
function meterLoop(meter: MoveMeter, moves: PlannedMove[], obs: Map<string, MoveObservation>, intervalMs: number, changed: () => void): () => void {
  let busy = false;
  const tick = async (): Promise<void> => {
    if (busy) return;
    busy = true;
    const running = moves.filter((m) => moveProgress(obs.get(keyOf(m))!).state === 'running');
    await Promise.all(running.map(async (m) => {
      const [bytes, tunnelBytes] = await Promise.all([meter.migration(m, obs.get(keyOf(m))!.sourceVmim), meter.tunnel(m)]);
      obs.set(keyOf(m), { ...obs.get(keyOf(m))!, bytes, tunnelBytes });
    }));
    busy = false;
    if (running.length) changed();
  };
  const timer = setInterval(() => void tick(), intervalMs);
  return () => clearInterval(timer);
}

/** Watch until every move settled or the time ran out; the exit status of src/forklift/progress.ts and the last state of each move. */
export async function watchMoves(o: WatchOptions): Promise<{ code: number; moves: MoveProgress[] }> {
  const { moves, hub, fleetDir, kcOf } = moveClients(o);
  if (moves.length === 0) { o.write('no planned moves (no generated Forklift Plans)\n'); return { code: WATCH_EXIT.completed, moves: [] }; }
  const obs = new Map(moves.map((m) => [keyOf(m), { plan: m.plan, vm: `${m.vm.namespace}/${m.vm.name}`, tunnel: `${m.from}->${m.to}` } as MoveObservation]));
  const last = new Map<string, string>();
  const shown = new Set<string>();
  let drawn = 0;
  const render = (): MoveProgress[] => {
    const ps = moves.map((m) => moveProgress(obs.get(keyOf(m))!));
    if (o.tty && o.output !== 'json') { o.write(redrawFrame(ps.map((p) => barLine(reasonsOnce(p, shown))), drawn)); drawn = ps.length; return ps; }
    for (const p of ps) {
      // a change is judged on the whole line; a reason already shown is left out of the plain line written
      const line = o.output === 'json' ? jsonLine(p, '') : plainLine(p);
      if (last.get(p.plan + p.vm) === line) continue;
      last.set(p.plan + p.vm, line);
      o.write(o.output === 'json' ? jsonLine(p, new Date().toISOString()) : `${plainLine(reasonsOnce(p, shown))}\n`);
    }
    return ps;
  };
  return new Promise((resolve) => {
    const stops: (() => void)[] = [];
    let finished = false;
    const clock: { timer?: NodeJS.Timeout } = {};
    const finish = (ps: MoveProgress[]) => {
      if (finished) return;
      finished = true;
      clearTimeout(clock.timer);
      stops.forEach((s) => s());
      resolve({ code: watchExit(ps), moves: ps });
    };
    const changed = () => {
      if (finished) return;
      const ps = render();
      if (allSettled(ps)) finish(ps);
    };
    const onEvent = (what: Parameters<typeof fold>[2]) => (type: string, x: Obj) => {
      if (type === 'ERROR' || finished) return;
      fold(obs, moves, what, x);
      changed();
    };
    const interval = o.meterIntervalMs ?? 5000;
    stops.push(meterLoop(new MoveMeter({ kcOf, fleetDir, intervalMs: interval }), moves, obs, interval, changed));
    const hubKc = kcOf(hub);
    for (const pns of new Set(moves.map((m) => m.plan.split('/')[0]))) {
      stops.push(keepWatching(hubKc, `/apis/forklift.konveyor.io/v1beta1/namespaces/${pns}/plans`, onEvent('plan')));
      stops.push(keepWatching(hubKc, `/apis/forklift.konveyor.io/v1beta1/namespaces/${pns}/migrations`, onEvent('migration')));
    }
    const seen = new Set<string>();
    for (const m of moves) {
      const [src, dst] = vmimPaths(m);
      if (!seen.has(`${m.from}${src}`)) { seen.add(`${m.from}${src}`); stops.push(keepWatching(kcOf(m.from), src, onEvent('source'))); }
      if (!seen.has(`${m.to}${dst}`)) { seen.add(`${m.to}${dst}`); stops.push(keepWatching(kcOf(m.to), dst, onEvent('target'))); }
    }
    clock.timer = setTimeout(() => finish(render()), o.timeoutMs ?? 3_600_000);
    render();
  });
}

/** The cleanup command to print for each failed move at the end of a watch. */
export function cleanupHints(fleetFile: string, ps: readonly MoveProgress[]): string {
  return ps.filter((p) => p.state === 'failed').map((p) => `cleanup: migration-mesh cleanup-move ${fleetFile} --move ${p.vm}   (dry run; --apply deletes)\n`).join('');
}
