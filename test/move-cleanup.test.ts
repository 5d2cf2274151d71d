/**
 * Issue 51 item 5: exactly what a failed move created on the target, by Forklift's plan/migration UID
 * labels and ownerReferences; same-named unmarked objects and other moves' objects are refused.
 */
import { CleanupMove, TargetObject, renderCleanup, selectLeftovers, sourceVmProblem } from '../src/forklift/cleanup';

const move: CleanupMove = { planUid: 'plan-1', migrationUids: ['mig-1', 'mig-2'], vmName: 'db' };
const ns = 'apps';
const mk = (kind: TargetObject['kind'], name: string, uid: string, extra: Partial<TargetObject> = {}): TargetObject => ({ kind, name, namespace: ns, uid, ...extra });
const ours = { plan: 'plan-1', migration: 'mig-2' };

const objects: TargetObject[] = [
  mk('VirtualMachine', 'db', 'vm', { labels: ours }),
  mk('VirtualMachineInstance', 'db', 'vmi', { ownerReferences: [{ uid: 'vm', kind: 'VirtualMachine', name: 'db' }] }),
  mk('Pod', 'virt-launcher-db-abcde', 'pod', { ownerReferences: [{ uid: 'vmi', kind: 'VirtualMachineInstance', name: 'db' }] }),
  mk('DataVolume', 'db-disk0', 'dv', { labels: ours }),
  mk('PersistentVolumeClaim', 'db-disk0', 'pvc', { ownerReferences: [{ uid: 'dv', kind: 'DataVolume', name: 'db-disk0' }] }),
  // decoys
  mk('PersistentVolumeClaim', 'db-scratch', 'hand', {}),
  mk('DataVolume', 'db-disk1', 'other', { labels: { plan: 'plan-9', migration: 'mig-9' } }),
  mk('DataVolume', 'db-disk2', 'stale', { labels: { plan: 'plan-1', migration: 'mig-old' } }),
  mk('VirtualMachine', 'web', 'web', { labels: { plan: 'plan-9', migration: 'mig-9' } }),
  // another VM of the same Plan: the same plan/migration labels, its own name
  mk('VirtualMachine', 'cache', 'cache', { labels: ours }),
  mk('DataVolume', 'cache-disk0', 'cachedv', { labels: ours }),
  mk('Pod', 'virt-launcher-web-xyz', 'webpod', { ownerReferences: [{ uid: 'web', kind: 'VirtualMachine', name: 'web' }] }),
];

test('deletes the marked objects and what they own, owners first', () => {
  const sel = selectLeftovers(objects, move);
  expect(sel.delete.map((o) => `${o.kind}/${o.name}`)).toEqual([
    'VirtualMachine/db', 'VirtualMachineInstance/db', 'DataVolume/db-disk0', 'PersistentVolumeClaim/db-disk0', 'Pod/virt-launcher-db-abcde',
  ]);
});

test('refuses same-named objects without the markers, saying why; ignores other moves entirely', () => {
  const sel = selectLeftovers(objects, move);
  expect(Object.fromEntries(sel.refused.map((o) => [o.name, o.why]))).toEqual({
    'db-scratch': 'no Forklift plan/migration labels and no owner that has them',
    'db-disk1': 'labelled for another plan (plan=plan-9)',
    'db-disk2': 'labelled for this plan but a migration not of it (migration=mig-old)',
  });
  expect(sel.delete.map((o) => o.uid)).not.toEqual(expect.arrayContaining(['hand', 'other', 'stale', 'web', 'webpod', 'cache', 'cachedv']));
});

test('nothing marked: nothing deleted, a name alone is never enough', () => {
  const sel = selectLeftovers([mk('VirtualMachine', 'db', 'x')], move);
  expect(sel.delete).toEqual([]);
  expect(renderCleanup(sel, false)).toBe('kept VirtualMachine apps/db: no Forklift plan/migration labels and no owner that has them\nnothing the move created is left on the target\n');
});

test('dry run says so; apply says deleted', () => {
  const sel = selectLeftovers(objects.slice(0, 1), move);
  expect(renderCleanup(sel, false)).toBe('would delete VirtualMachine apps/db\ndry run: nothing deleted; add --apply to delete\n');
  expect(renderCleanup(sel, true)).toBe('deleted VirtualMachine apps/db\n');
});

test('the source VM must be Running', () => {
  expect(sourceVmProblem({ found: true, printableStatus: 'Running' }, 'apps/db')).toBeUndefined();
  expect(sourceVmProblem({ found: true, printableStatus: 'Stopped' }, 'apps/db')).toMatch(/Stopped, not Running/);
  expect(sourceVmProblem({ found: false }, 'apps/db')).toMatch(/not found/);
});
