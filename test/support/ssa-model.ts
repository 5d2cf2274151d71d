/**
 * A small model of Kubernetes server-side apply (SSA) field ownership, for exactly the shapes our
 * KubeVirt / HyperConverged objects use: objects are granular maps (every key its own field), every list
 * is `x-kubernetes-list-type: atomic` (the whole list is one field, like a scalar), and annotations are
 * a granular map of string values. test/field-ownership.real.test.ts runs every case this model serves on a real
 * kube-apiserver as well, step by step, and shows the two agree (conflicts, resulting object, owned fields).
 *
 * Rules modelled (Kubernetes docs, "Server-Side Apply", https://kubernetes.io/docs/reference/using-api/server-side-apply/,
 * sections "Field management", "Conflicts", "Merge strategy"; implemented in sigs.k8s.io/structured-merge-diff,
 * `merge/update.go` Updater.Apply, and `typed/merge.go` where an atomic list is compared and replaced as one value):
 *   1. An apply sets every field in the applied configuration; the applier becomes an owner of each.
 *   2. A field owned by another manager whose live value differs from the applied value is a conflict;
 *      without force the whole apply is refused; with force the other managers lose that field.
 *   3. Equal values: ownership is shared, no conflict.
 *   4. A field the applier owned before and no longer applies is removed from the object when no other
 *      manager owns it (otherwise only the applier's ownership goes).
 *   5. Atomic lists (`x-kubernetes-list-type: atomic`, as KubeVirt's `featureGates` and
 *      `customizeComponents.patches`): the list is a single field; applying a list replaces it whole.
 *
 * Not modelled: associative lists (`list-type: map`/`set`, per-element ownership), `map-type: atomic`,
 * Update (non-apply) operations as separate managedFields entries, parent-field (`.`) ownership of
 * empty objects, defaulting and resetting to defaults, version conversion, the `managedFields` wire format.
 */
export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
type Obj = { [k: string]: Json };

const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Leaf fields of an applied configuration: path (JSON array of keys) -> value. Lists and scalars are leaves. */
export function leaves(o: Json, prefix: string[] = [], out = new Map<string, Json>()): Map<string, Json> {
  if (isObj(o) && Object.keys(o).length) {
    for (const [k, v] of Object.entries(o)) leaves(v, [...prefix, k], out);
  } else if (prefix.length) {
    out.set(JSON.stringify(prefix), o);
  }
  return out;
}

const get = (o: Json, path: string[]): Json | undefined => path.reduce<Json | undefined>((cur, k) => (isObj(cur) ? cur[k] : undefined), o);

function set(o: Obj, path: string[], v: Json): void {
  let cur = o;
  for (const k of path.slice(0, -1)) {
    if (!isObj(cur[k])) cur[k] = {};
    cur = cur[k] as Obj;
  }
  cur[path[path.length - 1]] = v;
}

function remove(o: Obj, path: string[]): void {
  const parent = get(o, path.slice(0, -1));
  if (isObj(parent)) delete parent[path[path.length - 1]];
}

const same = (a: Json | undefined, b: Json | undefined) => JSON.stringify(a) === JSON.stringify(b);

export interface Conflict { readonly field: string; readonly manager: string }

/** One object as the API server holds it: the value and, per manager, the fields it owns. */
export class SsaObject {
  public live: Obj = {};
  public readonly managers = new Map<string, Set<string>>();

  /** Server-side apply `config` as `manager`. Returns the conflicts; the object is unchanged when there are some and not `force`. */
  public apply(manager: string, config: Obj, opts: { force?: boolean } = {}): Conflict[] {
    const fields = leaves(config);
    const conflicts: Conflict[] = [];
    for (const [f, v] of fields) {
      for (const [m, owned] of this.managers) {
        if (m !== manager && owned.has(f) && !same(get(this.live, JSON.parse(f)), v)) conflicts.push({ field: f, manager: m });
      }
    }
    if (conflicts.length && !opts.force) return conflicts;
    for (const c of conflicts) this.managers.get(c.manager)!.delete(c.field);
    const before = this.managers.get(manager) ?? new Set<string>();
    for (const f of before) {
      if (fields.has(f)) continue;
      const ownedElsewhere = [...this.managers].some(([m, owned]) => m !== manager && owned.has(f));
      if (!ownedElsewhere) remove(this.live, JSON.parse(f));
    }
    for (const [f, v] of fields) set(this.live, JSON.parse(f), JSON.parse(JSON.stringify(v)));
    this.managers.set(manager, new Set(fields.keys()));
    return conflicts;
  }

  /** Fields `manager` owns, as dotted paths (for assertions). */
  public owned(manager: string): string[] {
    return [...(this.managers.get(manager) ?? [])].map((f) => (JSON.parse(f) as string[]).join('.')).sort();
  }
}
