/**
 * What KubeVirt's own admission (and its Go types) would refuse in the KubeVirt configuration we emit,
 * refused first with the field path of the fleet file, plus the feature gate the declared version needs
 * for `maxDowntimeMs`. Sources (kubevirt/kubevirt):
 * - main @d923fdb815cd2016ddaebdaaa51db04133576d72 and v1.9.0 @79d34c1762169e5b0370ec491cef5ca12e6b504c,
 *   pkg/virt-operator/webhooks/kubevirt-update-admitter.go (validateMigrationConfiguration,
 *   validateCustomizeComponents, validateInfraPlacement, validateInfraReplicas, validateCertificates)
 * - pkg/virt-config/featuregate/active.go (gate names and the release they arrived in)
 * - staging/src/kubevirt.io/api/core/v1/types.go MigrationConfiguration (Go types of each field)
 * Pure, no cdk8s import.
 */
import { FleetProblem } from '../base/errors';
import { FleetDocument, Placement } from '../fleet/schema';
import { KubevirtVersion } from './versions';
import { placementProblems } from './placement-admission';

export const UINT32_MAX = 4_294_967_295;

/**
 * `maxDowntimeMs` is refused unless one of these Alpha gates is on (validateMigrationConfiguration):
 * v1.9.0 knows only MigrationStallDetection ("Alpha: v1.9.0"); main (v1.10 development) accepts
 * MigrationStallDetection or MigrationDowntimeTuning ("Alpha: v1.10.0"). MigrationStallDetection is the
 * one every version with the field accepts, so it is the gate we emit.
 */
const FEATURE_GATE_MAX_DOWNTIME = 'MigrationStallDetection';

/** The gate `maxDowntimeMs` needs on this version; undefined when the version has no such field (refused elsewhere). */
export function maxDowntimeGateFor(v: KubevirtVersion): string | undefined {
  return v.major > 1 || (v.major === 1 && v.minor >= 9) ? FEATURE_GATE_MAX_DOWNTIME : undefined;
}

/**
 * Numeric migration fields and the range their Go type holds (types.go MigrationConfiguration). The CRD
 * schema says only `format: int32`/`int64`, which the API server does not enforce for integers, so a value
 * past the Go type is stored and then breaks virt-operator's decoding of the whole CR.
 */
const MIGRATION_NUMERIC_LIMITS: Readonly<Record<string, { goType: string; max: number }>> = {
  parallelMigrationsPerCluster: { goType: '*uint32', max: UINT32_MAX },
  parallelOutboundMigrationsPerNode: { goType: '*uint32', max: UINT32_MAX },
  // int64 in Go; JSON numbers past 2^53 are not exact in JS, so we stop there
  completionTimeoutPerGiB: { goType: '*int64', max: Number.MAX_SAFE_INTEGER },
  progressTimeout: { goType: '*int64', max: Number.MAX_SAFE_INTEGER },
  maxDowntimeMs: { goType: '*uint64 (CRD: 1-2000000)', max: 2_000_000 },
};

function policyProblems(doc: FleetDocument): FleetProblem[] {
  const out: FleetProblem[] = [];
  const policy = (doc.spec.migrationPolicy ?? {}) as Record<string, unknown>;
  for (const [field, lim] of Object.entries(MIGRATION_NUMERIC_LIMITS)) {
    const v = policy[field];
    if (typeof v === 'number' && v > lim.max) {
      out.push({
        code: 'migration-field-out-of-range',
        path: `spec.migrationPolicy.${field}`,
        message: `${v} does not fit KubeVirt's ${lim.goType} migrations.${field} (at most ${lim.max}); the API server would store it and virt-operator would fail to decode the KubeVirt CR`,
        fix: `give at most ${lim.max}`,
      });
    }
  }
  return out;
}

/**
 * Placement is rendered where KubeVirt checks nothing but JSON validity (the customizeComponents
 * patch) and into `spec.infra.nodePlacement` (checked by a dry-run Deployment create only when infra
 * changes, validateInfraPlacement); the gateway placement goes into Deployments. Check all with
 * Kubernetes' rules here.
 */
function placementsOf(doc: FleetDocument): { path: string; placement: Placement }[] {
  const out: { path: string; placement: Placement }[] = [];
  const add = (path: string, p: unknown) => { if (p && typeof p === 'object') out.push({ path, placement: p as Placement }); };
  add('spec.syncControllers.placement', doc.spec.syncControllers?.placement);
  add('spec.gateway.placement', doc.spec.gateway?.placement);
  doc.spec.clusters.forEach((c, i) => add(`spec.clusters[${i}].syncControllers.placement`, c.syncControllers?.placement));
  return out;
}

/** Every problem KubeVirt's admission or Kubernetes' validation would raise on what this fleet makes us emit. */
export function kubevirtAdmissionProblems(doc: FleetDocument): FleetProblem[] {
  return [
    ...policyProblems(doc),
    ...placementsOf(doc).flatMap(({ path, placement }) => placementProblems(placement, path)),
  ];
}

/** Alpha gates that let `maxDowntimeMs` change, per version (featuregate/active.go at v1.9.0 and main). */
function maxDowntimeGatesKnown(v: KubevirtVersion): string[] {
  if (v.major > 1 || (v.major === 1 && v.minor >= 10)) return ['MigrationStallDetection', 'MigrationDowntimeTuning'];
  if (v.major === 1 && v.minor === 9) return ['MigrationStallDetection'];
  return [];
}

export interface AdmissionCause { readonly field: string; readonly message: string }
type Spec = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

/**
 * The KubeVirt update admitter's verdict on a new spec (old spec for the "changed" rules), for the rules
 * that touch fields we emit: validateMigrationConfiguration, validateCustomizeComponents,
 * validateInfraReplicas, validateFeatureGates; Alpha gates count as enabled only when listed
 * (featuregate.IsEnabled). Placement inside patches is checked with Kubernetes' rules on top (KubeVirt
 * does not: ours, stricter).
 */
export function kubevirtUpdateVerdict(oldSpec: Spec, newSpec: Spec, v: KubevirtVersion): AdmissionCause[] {
  const causes: AdmissionCause[] = [];
  const cfg = newSpec.configuration ?? {};
  const gates: string[] = cfg.developerConfiguration?.featureGates ?? [];
  const disabled: string[] = cfg.developerConfiguration?.disabledFeatureGates ?? [];
  const enabled = (g: string) => gates.includes(g) && !disabled.includes(g);
  const newMax = cfg.migrations?.maxDowntimeMs;
  const oldMax = oldSpec.configuration?.migrations?.maxDowntimeMs;
  if (newMax !== undefined && newMax !== oldMax && !maxDowntimeGatesKnown(v).some(enabled)) {
    const names = maxDowntimeGatesKnown(v).join(' or ') || FEATURE_GATE_MAX_DOWNTIME;
    causes.push({ field: 'spec.configuration.migrationConfiguration.maxDowntimeMs', message: `maxDowntimeMs cannot be modified without enabling the ${names} feature gate` });
  }
  for (const g of gates) if (disabled.includes(g)) causes.push({ field: 'spec.configuration.developerConfiguration.featureGates', message: `feature gate "${g}" exists on both "FeatureGates" and "DisabledFeatureGates"` });
  if (newSpec.infra?.replicas === 0) causes.push({ field: 'spec.infra.replicas', message: "infra replica count can't be 0" });
  for (const [i, p] of ((newSpec.customizeComponents?.patches ?? []) as Spec[]).entries()) {
    let parsed: Spec | undefined;
    try { parsed = JSON.parse(p.patch); } catch { causes.push({ field: `spec.customizeComponents.patches[${i}].patch`, message: `patch ${JSON.stringify(p.patch)} is not valid JSON` }); }
    const pod = parsed?.spec?.template?.spec;
    const at = `spec.customizeComponents.patches[${i}].patch:spec.template.spec`;
    if (pod) for (const x of placementProblems(pod, at)) causes.push({ field: x.path, message: `${x.message} (Kubernetes validation, checked by us)` });
  }
  // validateInfraPlacement: a dry-run Deployment create, i.e. Kubernetes' pod validation of the placement
  const infraPlacement = newSpec.infra?.nodePlacement;
  if (infraPlacement) for (const x of placementProblems(infraPlacement, 'spec.infra.nodePlacement')) causes.push({ field: x.path, message: x.message });
  for (const [k, lim] of Object.entries(MIGRATION_NUMERIC_LIMITS)) {
    const x = cfg.migrations?.[k];
    if (typeof x === 'number' && (x > lim.max || x < 0)) causes.push({ field: `spec.configuration.migrations.${k}`, message: `${x} does not decode into ${lim.goType}` });
  }
  return causes;
}

/**
 * virt-api's MigrationPolicy admitter (pkg/virt-api/webhooks/validating-webhook/admitters/
 * migrationpolicy-admitter.go, Admit at v1.9.0:54-167 and main:56-200): a negative completionTimeoutPerGiB;
 * maxDowntimeMs, experimental.stallDetector (and on main experimental.downtimeTuning, never both) changed
 * without their Alpha gate among the cluster's `enabledGates`. `experimental.compression` is checked by
 * nothing but the CRD enum (none|zstd): no gate guards it in v1.9.0 or main (featuregate/active.go).
 */
export function migrationPolicyVerdict(oldSpec: Spec, newSpec: Spec, v: KubevirtVersion, enabledGates: readonly string[]): AdmissionCause[] {
  const causes: AdmissionCause[] = [];
  const on = (g: string) => enabledGates.includes(g);
  const changed = (f: (s: Spec) => unknown) => JSON.stringify(f(oldSpec) ?? null) !== JSON.stringify(f(newSpec) ?? null);
  if (typeof newSpec.completionTimeoutPerGiB === 'number' && newSpec.completionTimeoutPerGiB < 0) {
    causes.push({ field: 'spec.completionTimeoutPerGiB', message: 'must not be negative' });
  }
  if (newSpec.maxDowntimeMs !== undefined && changed((s) => s.maxDowntimeMs) && !maxDowntimeGatesKnown(v).some(on)) {
    causes.push({ field: 'spec.maxDowntimeMs', message: `maxDowntimeMs cannot be modified without enabling the ${maxDowntimeGatesKnown(v).join(' or ') || FEATURE_GATE_MAX_DOWNTIME} feature gate` });
  }
  const exp = newSpec.experimental ?? {};
  if (exp.stallDetector !== undefined && changed((s) => s.experimental?.stallDetector) && !on(FEATURE_GATE_MAX_DOWNTIME)) {
    causes.push({ field: 'spec.experimental.stallDetector', message: `experimental.stallDetector cannot be modified without enabling the ${FEATURE_GATE_MAX_DOWNTIME} feature gate` });
  }
  if (exp.downtimeTuning !== undefined && changed((s) => s.experimental?.downtimeTuning) && !on('MigrationDowntimeTuning')) {
    causes.push({ field: 'spec.experimental.downtimeTuning', message: 'experimental.downtimeTuning cannot be modified without enabling the MigrationDowntimeTuning feature gate' });
  }
  if (exp.stallDetector !== undefined && exp.downtimeTuning !== undefined) {
    causes.push({ field: 'spec.experimental', message: 'experimental.stallDetector and experimental.downtimeTuning are mutually exclusive' });
  }
  return causes;
}
