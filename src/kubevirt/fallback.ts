/**
 * `migrations.allowMigrationNetworkFallback` (kubevirt PR #16940, open): when the dedicated migration
 * network is missing or has no address, virt-handler and the sync controller would use the pod IP
 * instead of failing. A maintainer (PR #17922 review): "Migration network does not fall back to pod
 * network, for security reasons". Cross-cluster migration traffic on the pod network also bypasses the
 * gateway and every address plan of the mesh. So the fleet refuses it however it would be set: a field
 * under `migrationPolicy`, a jsonpatch operation or a customizeComponents patch (issue #29 item 4).
 * Pure, no cdk8s import.
 */
import { FleetProblem } from '../base/errors';
import { ExistingKubevirtSpec } from './existing';

export const FALLBACK_FIELD = 'allowMigrationNetworkFallback';

/** The refusal, at `path`, saying what was found there. */
export function fallbackProblem(path: string, found: string): FleetProblem {
  return {
    code: 'migration-network-fallback', path,
    message: `${found} would set migrations.${FALLBACK_FIELD} (kubevirt PR #16940): with a broken migration network, virt-handler and the sync controller would `
      + 'move VM memory over the pod network instead of failing, outside the migration network, the gateways and their policies; '
      + 'KubeVirt\'s maintainers refuse that fallback for security reasons',
    fix: `remove it: a broken migration network must fail the migration (check the NAD and the handlers' migration0 addresses: docs/node-prerequisites.md)`,
  };
}

const mentions = (x: unknown): boolean => JSON.stringify(x ?? null).includes(FALLBACK_FIELD);

function existingProblems(base: string, e: ExistingKubevirtSpec | undefined): FleetProblem[] {
  const out: FleetProblem[] = [];
  (e?.kubevirtJsonPatch ?? []).forEach((op, j) => {
    if (mentions(op.path) || mentions(op.value)) out.push(fallbackProblem(`${base}.existing.kubevirtJsonPatch[${j}]`, `the jsonpatch operation ${op.op} ${op.path}`));
  });
  (e?.customizeComponentsPatches ?? []).forEach((p, j) => {
    if (p.patch.includes(FALLBACK_FIELD)) out.push(fallbackProblem(`${base}.existing.customizeComponentsPatches[${j}].patch`, `the patch of ${p.resourceType} ${p.resourceName}`));
  });
  return out;
}

interface WithExisting { readonly kubevirt?: { readonly existing?: ExistingKubevirtSpec } }
interface DocLike {
  readonly spec: WithExisting & { readonly clusters: readonly WithExisting[] };
}

/** Every place of a schema-valid fleet that would set the fallback (fleet-wide and per-cluster `kubevirt.existing`). */
export function migrationNetworkFallbackProblems(doc: DocLike): FleetProblem[] {
  return [
    ...existingProblems('spec.kubevirt', doc.spec.kubevirt?.existing),
    ...doc.spec.clusters.flatMap((c, i) => existingProblems(`spec.clusters[${i}].kubevirt`, c.kubevirt?.existing)),
  ];
}
