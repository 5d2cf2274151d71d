/**
 * Issue 51 item 4: a move's state judged from the hub's Plan/Migration and both sides' VMIM, and its
 * rendering (bar, plain line, JSON line, redraw frame) and the watch's exit status.
 */
import { MoveObservation, WATCH_EXIT, allSettled, barLine, humanBytes, jsonLine, moveProgress, plainLine, redrawFrame, watchExit } from '../src/forklift/progress';

const base: MoveObservation = { plan: 'mm/east-west', vm: 'apps/db', tunnel: 'east->west' };
const GiB = 1024 ** 3;

describe('move state', () => {
  test('nothing observed yet is pending', () => {
    expect(moveProgress(base)).toMatchObject({ state: 'pending', phase: 'Pending' });
  });
  test('a running VMIM with virt-handler bytes: phase, bytes, remaining, throughput', () => {
    const p = moveProgress({ ...base, sourceVmim: { phase: 'Running' }, targetVmim: { phase: 'Synchronizing' },
      bytes: { processed: 3 * GiB, total: 4 * GiB, rate: 100 * 1024 * 1024 } });
    expect(p).toEqual({ ...base, state: 'running', phase: 'Running', bytesProcessed: 3 * GiB, bytesRemaining: GiB, throughput: 100 * 1024 * 1024 });
    expect(plainLine(p)).toBe('apps/db via east->west: running Running, 3.0 GiB sent, 1.0 GiB left, 100.0 MiB/s');
    expect(barLine(p, 8)).toBe('apps/db [######..]  75% Running 3.0 GiB sent, 1.0 GiB left, 100.0 MiB/s');
  });
  test('bytes unknown are shown unknown, not guessed', () => {
    const p = moveProgress({ ...base, migrationVm: { phase: 'StartMigration' } });
    expect(p.bytesProcessed).toBeUndefined();
    expect(barLine(p, 4)).toBe('apps/db [????]   ?% StartMigration ? B sent, remaining unknown');
  });
  test('completed only when the source and the target VMIM both say so', () => {
    const half = moveProgress({ ...base, sourceVmim: { phase: 'Succeeded' }, targetVmim: { phase: 'Running' } });
    expect(half.state).toBe('running');
    const done = moveProgress({ ...base, sourceVmim: { phase: 'Succeeded', migrationState: { completed: true } }, targetVmim: { phase: 'Succeeded' } });
    expect(done).toMatchObject({ state: 'completed', bytesRemaining: 0 });
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
    const p = moveProgress({ ...base, sourceVmim: { phase: 'Running' }, bytes: { processed: 10, remaining: 5 } });
    const line = jsonLine(p, '2026-12-02T12:00:00Z');
    expect(line.endsWith('\n') && line.split('\n').length).toBe(2);
    expect(JSON.parse(line)).toEqual({ at: '2026-12-02T12:00:00Z', plan: 'mm/east-west', vm: 'apps/db', tunnel: 'east->west', state: 'running', phase: 'Running', bytesProcessed: 10, bytesRemaining: 5 });
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
