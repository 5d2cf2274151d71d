/**
 * Issue 51 item 4: a move's state judged from the hub's Plan/Migration and both sides' VMIM, and its
 * rendering (bar, plain line, JSON line, redraw frame) and the watch's exit status.
 */
import { MoveObservation, WATCH_EXIT, allSettled, barLine, humanBytes, jsonLine, moveProgress, plainLine, reasonsOnce, redrawFrame, watchExit } from '../src/forklift/progress';

const base: MoveObservation = { plan: 'mm/east-west', vm: 'apps/db', tunnel: 'east->west' };
const GiB = 1024 ** 3;

describe('move state', () => {
  test('nothing observed yet is pending', () => {
    expect(moveProgress(base)).toMatchObject({ state: 'pending', phase: 'Pending' });
  });
  const bytes = { processed: 3 * GiB, remaining: GiB, rateBytesPerSecond: 100 * 1024 * 1024, source: 'virt-handler' as const };
  const tunnelBytes = { peer: 'west', txBytes: 2.9 * GiB, rxBytes: 1024, rateBytesPerSecond: 99 * 1024 * 1024, gateways: 2, source: 'gateway' as const };
  test('a running VMIM with virt-handler\'s bytes and the tunnel\'s: X of Y, the rate, what the tunnel carried', () => {
    const p = moveProgress({ ...base, sourceVmim: { phase: 'Running' }, targetVmim: { phase: 'Synchronizing' }, bytes, tunnelBytes });
    expect(p).toEqual({ plan: base.plan, vm: base.vm, tunnel: { path: 'east->west', ...tunnelBytes }, state: 'running', phase: 'Running', bytes });
    expect(plainLine(p)).toBe('apps/db via east->west: running Running, 3.0 GiB of 4.0 GiB, 100.0 MiB/s, tunnel west 2.9 GiB at 99.0 MiB/s');
    expect(barLine(p, 8)).toBe('apps/db [######..]  75% Running 3.0 GiB of 4.0 GiB, 100.0 MiB/s, tunnel west 2.9 GiB at 99.0 MiB/s');
  });
  test('the bar is processed / (processed + remaining); without remaining no percentage', () => {
    const p = (b: object) => moveProgress({ ...base, sourceVmim: { phase: 'Running' }, bytes: { source: 'virt-handler', ...b } });
    expect(barLine(p({ processed: GiB, remaining: 3 * GiB }), 4)).toBe('apps/db [#...]  25% Running 1.0 GiB of 4.0 GiB');
    expect(barLine(p({ processed: 0, remaining: 0 }), 4)).toBe('apps/db [....]   0% Running 0 B of 0 B');
    expect(barLine(p({ processed: GiB }), 4)).toBe('apps/db [????]   ?% Running 1.0 GiB');
  });
  test('bytes unknown are shown unknown with the reason, not guessed; the terminal shows a reason once', () => {
    const p = moveProgress({ ...base, migrationVm: { phase: 'StartMigration' } });
    expect(p.bytes).toBeUndefined();
    expect(barLine(p, 4)).toBe('apps/db [????]   ?% StartMigration ? B');
    const refused = moveProgress({ ...base, sourceVmim: { phase: 'Running' }, bytes: { source: 'virt-handler', unknown: 'HTTP 403: forbidden' },
      tunnelBytes: { peer: 'west', source: 'gateway', unknown: 'no answer in 4000 ms' } });
    expect(plainLine(refused)).toBe('apps/db via east->west: running Running, ? B (HTTP 403: forbidden), tunnel west ? B (no answer in 4000 ms)');
    const shown = new Set<string>();
    expect(plainLine(reasonsOnce(refused, shown))).toBe(plainLine(refused));
    expect(plainLine(reasonsOnce(refused, shown))).toBe('apps/db via east->west: running Running, ? B, tunnel west ? B');
    const other = moveProgress({ ...base, sourceVmim: { phase: 'Running' }, bytes: { source: 'virt-handler', unknown: 'HTTP 503' } });
    expect(plainLine(reasonsOnce(other, shown))).toBe('apps/db via east->west: running Running, ? B (HTTP 503)');
  });
  test('completed only when the source and the target VMIM both say so', () => {
    const half = moveProgress({ ...base, sourceVmim: { phase: 'Succeeded' }, targetVmim: { phase: 'Running' } });
    expect(half.state).toBe('running');
    const done = moveProgress({ ...base, sourceVmim: { phase: 'Succeeded', migrationState: { completed: true } }, targetVmim: { phase: 'Succeeded' },
      bytes: { processed: 4 * GiB, remaining: 12345, rateBytesPerSecond: 5, source: 'virt-handler' } });
    expect(done).toMatchObject({ state: 'completed', bytes: { processed: 4 * GiB, remaining: 0, source: 'virt-handler' } });
    expect(barLine(done, 4)).toBe('apps/db [####] 100% Succeeded 4.0 GiB of 4.0 GiB');
    expect(moveProgress({ ...base, planConditions: [{ type: 'Succeeded', status: 'True' }] }).state).toBe('completed');
  });
  test('failure from any side wins, with its reason', () => {
    const vmim = moveProgress({ ...base, sourceVmim: { phase: 'Running' }, targetVmim: { phase: 'Failed', migrationState: { failed: true, failureReason: 'target pod unschedulable' } } });
    expect(vmim).toMatchObject({ state: 'failed', reason: 'target pod unschedulable' });
    const mig = moveProgress({ ...base, migrationVm: { phase: 'StartMigration', error: { phase: 'StartMigration', reasons: ['timed out'] } } });
    expect(mig).toMatchObject({ state: 'failed', reason: 'timed out' });
    const canceled = moveProgress({ ...base, planConditions: [{ type: 'Canceled', status: 'True', message: 'by user' }] });
    expect(canceled).toMatchObject({ state: 'failed', reason: 'by user' });
    expect(plainLine(vmim)).toContain('(target pod unschedulable)');
  });
});

describe('rendering', () => {
  test('human bytes', () => {
    expect([humanBytes(0), humanBytes(1023), humanBytes(1536), humanBytes(5 * GiB)]).toEqual(['0 B', '1023 B', '1.5 KiB', '5.0 GiB']);
  });
  test('redraw moves the cursor up over the previous frame and clears each line end (no screen clear)', () => {
    expect(redrawFrame(['a', 'b'], 0)).toBe('a\x1b[K\nb\x1b[K\n');
    expect(redrawFrame(['a', 'b'], 2)).toBe('\x1b[2Fa\x1b[K\nb\x1b[K\n');
    expect(redrawFrame(['a'], 2)).not.toContain('\x1b[2J');
  });
  test('JSON lines parse back, one object per line', () => {
    const p = moveProgress({ ...base, sourceVmim: { phase: 'Running' }, bytes: { processed: 10, remaining: 5, rateBytesPerSecond: 2, source: 'virt-handler' },
      tunnelBytes: { peer: 'west', txBytes: 12, rxBytes: 3, gateways: 1, source: 'gateway' } });
    const line = jsonLine(p, '2026-12-02T12:00:00Z');
    expect(line.endsWith('\n') && line.split('\n').length).toBe(2);
    expect(JSON.parse(line)).toEqual({ at: '2026-12-02T12:00:00Z', plan: 'mm/east-west', vm: 'apps/db', state: 'running', phase: 'Running',
      tunnel: { path: 'east->west', peer: 'west', txBytes: 12, rxBytes: 3, gateways: 1, source: 'gateway' },
      bytes: { processed: 10, remaining: 5, rateBytesPerSecond: 2, source: 'virt-handler' } });
  });
});

describe('exit status', () => {
  const done = moveProgress({ ...base, planConditions: [{ type: 'Succeeded', status: 'True' }] });
  const running = moveProgress({ ...base, sourceVmim: { phase: 'Running' } });
  const failed = moveProgress({ ...base, sourceVmim: { phase: 'Failed' } });
  test('0 all completed, 3 any failed (even with others open), 4 open when the wait ran out', () => {
    expect(watchExit([done, done])).toBe(WATCH_EXIT.completed);
    expect(watchExit([done, failed, running])).toBe(WATCH_EXIT.failed);
    expect(watchExit([done, running])).toBe(WATCH_EXIT.timedOut);
    expect(new Set(Object.values(WATCH_EXIT)).size).toBe(3);
  });
  test('settled when nothing is pending or running', () => {
    expect(allSettled([done, failed])).toBe(true);
    expect(allSettled([done, running])).toBe(false);
  });
});
