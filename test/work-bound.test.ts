/**
 * The real-API lane's work-bound waits (test/support/work-bound.ts, issue 53 item 5): a wait goes on while the work
 * moves, fails once it stalls for the quiet window, and stops at the cap however much it moves.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { sizeOf, untilQuiet } from './support/work-bound';

test('a wait that outlives its quiet window resolves while the work keeps moving (a log that grows)', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-work-bound-'));
  const log = path.join(dir, 'controller.log');
  try {
    const t0 = Date.now();
    const writer = setInterval(() => fs.appendFileSync(log, 'reconciling\n'), 40);
    const v = await untilQuiet('done', async () => (Date.now() - t0 > 600 ? 'done' : undefined), { quietMs: 150, capMs: 5_000, progress: () => sizeOf([log]), everyMs: 20 })
      .finally(() => clearInterval(writer));
    expect(v).toBe('done');
    expect(Date.now() - t0).toBeGreaterThan(600);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('a probe that keeps failing: the stall names its last error', async () => {
  await expect(untilQuiet('the registry', async () => { throw new Error('connect ECONNREFUSED 127.0.0.1:5000'); }, { quietMs: 100, capMs: 5_000, progress: () => 0, everyMs: 20 }))
    .rejects.toThrow(/^the registry: not after \d+ ms, nothing moved for the last 100 ms; the probe's last error: connect ECONNREFUSED 127\.0\.0\.1:5000$/);
});

test('a stall fails after the quiet window, with how long it waited', async () => {
  const t0 = Date.now();
  await expect(untilQuiet('the controller', async () => undefined, { quietMs: 150, capMs: 5_000, progress: () => 0, everyMs: 20 }))
    .rejects.toThrow(/^the controller: not after \d+ ms, nothing moved for the last 150 ms$/);
  expect(Date.now() - t0).toBeLessThan(1_000);
});

test('work that moves forever stops at the cap', async () => {
  let n = 0;
  const t0 = Date.now();
  await expect(untilQuiet('x', async () => undefined, { quietMs: 100, capMs: 400, progress: () => n++, everyMs: 20 }))
    .rejects.toThrow(/^x: not after \d+ ms \(the cap\), though the work was still moving$/);
  expect(Date.now() - t0).toBeGreaterThanOrEqual(400);
  expect(Date.now() - t0).toBeLessThan(2_000);
});

test('a dead process fails at once; a probe that throws counts as not yet; the missing files weigh 0', async () => {
  let calls = 0;
  await expect(untilQuiet('x', async () => { calls++; throw new Error('ECONNREFUSED'); }, { quietMs: 5_000, capMs: 5_000, progress: () => 0, dead: () => (calls >= 3 ? 'kustomize-controller exited (1)' : undefined), everyMs: 10 }))
    .rejects.toThrow('x: kustomize-controller exited (1)');
  expect(calls).toBe(3);
  expect(sizeOf(['/nonexistent/a.log'])).toBe(0);
});
