/**
 * The KubeVirt CR HCO builds from our HyperConverged: HCO's own featureGates (and, from HCO
 * release-1.19 with KubeVirt 1.9, its disabledFeatureGates: every KubeVirt Beta gate it does not
 * enable, controllers/handlers/kubevirt.go getKvDisabledFeatureGateList, HCO PR #4223), its
 * liveMigrationConfig, then the `kubevirt.kubevirt.io/jsonpatch` operations applied in order (HCO
 * operands.ApplyPatchToSpec: a failing operation fails the whole KubeVirt CR).
 */
type Obj = Record<string, any>;

/** Gates HCO itself writes into the KubeVirt CR it builds (a subset; the point is the list exists). */
export const HCO_OWN_GATES = ['CPUManager', 'Snapshot', 'HotplugVolumes'];

/** Apply JSON patch `add` operations (what our annotation holds) the way HCO does, to a copy; throws where HCO's patch would fail. */
export function applyAdds(doc: Obj, ops: Obj[]): Obj {
  const out = JSON.parse(JSON.stringify(doc));
  for (const op of ops) {
    if (op.op !== 'add') throw new Error(`unexpected op ${op.op}`);
    const keys = (op.path as string).split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = keys.pop()!;
    let at = out;
    for (const k of keys) {
      if (at[k] === undefined) throw new Error(`path ${op.path}: ${k} missing`);
      at = at[k];
    }
    if (!Array.isArray(at)) at[last] = op.value;
    else if (last === '-') at.push(op.value);
    else at.splice(Number(last), 0, op.value);
  }
  return out;
}

/**
 * The KubeVirt spec the cluster ends up with, from the emitted objects of any delivery form.
 * `hcoDisabled`: the disabledFeatureGates list HCO writes (undefined: HCO writes none, before release-1.19).
 */
export function kubevirtSpecOf(objs: Obj[], hcoDisabled?: string[]): Obj {
  const kv = objs.find((o) => o.kind === 'KubeVirt');
  if (kv) return kv.spec;
  const hco = objs.find((o) => o.kind === 'HyperConverged');
  if (!hco) throw new Error('no KubeVirt configuration emitted');
  const developerConfiguration = { featureGates: [...HCO_OWN_GATES], ...(hcoDisabled ? { disabledFeatureGates: [...hcoDisabled] } : {}), diskVerification: { memoryLimit: '2Gi' } };
  const configuration = { developerConfiguration, migrations: { ...hco.spec.liveMigrationConfig } };
  const built = { spec: { configuration, customizeComponents: {} } };
  const ops = JSON.parse(hco.metadata.annotations?.['kubevirt.kubevirt.io/jsonpatch'] ?? '[]');
  return applyAdds(built, ops).spec;
}
