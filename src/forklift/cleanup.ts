/**
 * What a failed or cancelled move left on the target (issue 51 item 5), chosen from a listing of the
 * target namespace. Pure: cli/cleanup-move.ts lists and deletes.
 *
 * The markers are Forklift's own: the objects its controller creates for a Plan carry the labels
 * `plan` (value: the Plan's UID) and `migration` (value: the Migration's UID) (forklift
 * pkg/controller/plan/kubevirt.go, "Labels": kPlan, kMigration). A UID is never reused, so a same-named
 * object without them (made by hand, or by another move) is not the move's and is refused. What Forklift
 * does not label itself (the target VMI and its virt-launcher pod, the receiver) is taken through
 * `ownerReferences` to an object that is marked: VMI -> VM, pod -> VMI, PVC -> DataVolume.
 */

/** The kinds a move creates on the target, in the order they are deleted (owners first; the garbage collector follows). */
export const CLEANUP_KINDS = ['VirtualMachine', 'VirtualMachineInstance', 'DataVolume', 'PersistentVolumeClaim', 'Pod'] as const;
export type CleanupKind = typeof CLEANUP_KINDS[number];

export interface TargetObject {
  readonly kind: CleanupKind;
  readonly name: string;
  readonly namespace: string;
  readonly uid: string;
  readonly labels?: Readonly<Record<string, string>>;
  readonly ownerReferences?: readonly { uid: string; kind: string; name: string }[];
}

export interface CleanupMove {
  /** The Plan's UID on the hub. */
  readonly planUid: string;
  /** The UIDs of the Plan's Migrations (a retried plan has several). */
  readonly migrationUids: readonly string[];
  /** The moving VM's name (the target VM has the same). */
  readonly vmName: string;
}

export interface CleanupSelection {
  /** Objects to delete, in CLEANUP_KINDS order. */
  readonly delete: readonly TargetObject[];
  /** Objects named like the move's but without its markers: never deleted, listed so a person sees why. */
  readonly refused: readonly (TargetObject & { readonly why: string })[];
}

/**
 * A Plan moves several VMs under one plan/migration label: a marked object is this VM's when named as it
 * (VM, VMI) or after it (DataVolumes, PVCs: `<vm>-...`).
 */
const namedFor = (o: TargetObject, vm: string): boolean =>
  o.name === vm || ((o.kind === 'DataVolume' || o.kind === 'PersistentVolumeClaim') && o.name.startsWith(`${vm}-`));
const marked = (o: TargetObject, m: CleanupMove): boolean =>
  o.labels?.plan === m.planUid && m.migrationUids.includes(o.labels?.migration ?? '') && namedFor(o, m.vmName);

/** The move's objects: marked, or owned (transitively) by a marked one. */
function ownedClosure(objs: readonly TargetObject[], m: CleanupMove): Set<string> {
  const mine = new Set(objs.filter((o) => marked(o, m)).map((o) => o.uid));
  for (let grew = true; grew;) {
    grew = false;
    for (const o of objs) {
      if (!mine.has(o.uid) && (o.ownerReferences ?? []).some((r) => mine.has(r.uid))) { mine.add(o.uid); grew = true; }
    }
  }
  return mine;
}

function refusal(o: TargetObject, m: CleanupMove): string {
  if (o.labels?.plan && o.labels.plan !== m.planUid) return `labelled for another plan (plan=${o.labels.plan})`;
  if (o.labels?.plan === m.planUid) return `labelled for this plan but a migration not of it (migration=${o.labels?.migration ?? 'none'})`;
  return 'no Forklift plan/migration labels and no owner that has them';
}

/** Choose exactly what the move created; same-named unmarked objects are refused. */
export function selectLeftovers(objs: readonly TargetObject[], m: CleanupMove): CleanupSelection {
  const mine = ownedClosure(objs, m);
  const order = (o: TargetObject) => CLEANUP_KINDS.indexOf(o.kind);
  const del = objs.filter((o) => mine.has(o.uid)).sort((a, b) => order(a) - order(b) || a.name.localeCompare(b.name));
  const namedLikeIt = (o: TargetObject) => o.name === m.vmName || o.name.startsWith(`${m.vmName}-`) || o.name.startsWith(`virt-launcher-${m.vmName}-`);
  const refused = objs.filter((o) => !mine.has(o.uid) && namedLikeIt(o)).map((o) => ({ ...o, why: refusal(o, m) }));
  return { delete: del, refused };
}

/** Whether the source VM still runs: what the cleanup must not make worse. */
export type SourceVmState = { readonly found: false } | { readonly found: true; readonly printableStatus?: string; readonly ready?: boolean };

/** A problem with the source VM, or undefined when it runs. */
export function sourceVmProblem(s: SourceVmState, vm: string): string | undefined {
  if (!s.found) return `source VM ${vm} not found: the move may have completed or the VM was deleted; nothing is deleted on the target`;
  if (s.printableStatus !== 'Running') return `source VM ${vm} is ${s.printableStatus ?? 'of unknown status'}, not Running: the target copy may be the only one; nothing is deleted`;
  return undefined;
}

/** The dry-run listing (and, with --apply, what was deleted). */
export function renderCleanup(sel: CleanupSelection, applied: boolean): string {
  const verb = applied ? 'deleted' : 'would delete';
  const lines = sel.delete.map((o) => `${verb} ${o.kind} ${o.namespace}/${o.name}`);
  for (const r of sel.refused) lines.push(`kept ${r.kind} ${r.namespace}/${r.name}: ${r.why}`);
  if (sel.delete.length === 0) lines.push('nothing the move created is left on the target');
  if (!applied && sel.delete.length > 0) lines.push('dry run: nothing deleted; add --apply to delete');
  return `${lines.join('\n')}\n`;
}
