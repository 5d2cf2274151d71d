/**
 * Every KubeVirt feature gate we emit, decided in one place for every datapath (gateway | direct |
 * native) and every delivery form (partial KubeVirt CR, kustomize patch, HCO jsonpatch): the delivery
 * forms only render the canonical spec, so a gate listed here reaches all three (issue #29). Sources:
 * - `DecentralizedLiveMigration`: Alpha in KubeVirt 1.6-1.9, needed by sendTo/receive and checked by
 *   Forklift (KubeVirt pkg/virt-config/featuregate/active.go at each tag;
 *   https://github.com/kubev2v/forklift/blob/d42511bb28a605af9303b097333baa61d6c74a00/pkg/controller/plan/adapter/ocp/validator.go#L134-L172).
 * - `CrossClusterMigrationProxy`: only in builds with kubevirt/kubevirt PR #17922 (native datapath).
 * - `MigrationStallDetection`: `migrations.maxDowntimeMs` is refused by the update admitter without it
 *   (src/kubevirt/admission.ts, `maxDowntimeGateFor`).
 * And the gates the fleet turns off (`kubevirt.disabledFeatureGates`, checked against the capability
 * table in src/kubevirt/capabilities.ts), e.g. `LibvirtHooksServerAndClient` on KubeVirt 1.9.
 * Pure, no cdk8s import.
 */
import { JsonObject } from '../base/json';
import { maxDowntimeGateFor } from './admission';
import { KubevirtVersion } from './versions';
import { FEATURE_GATE_DLM } from './capabilities';
import { Datapath, datapathMode } from '../fleet/datapath-modes';

export { FEATURE_GATE_DLM };
const FEATURE_GATE_PROXY = 'CrossClusterMigrationProxy';

/** What the gates of one cluster depend on: its datapath and version, and the fleet's migration policy. */
export interface GateInputs {
  readonly datapath: Datapath;
  readonly version: KubevirtVersion;
  readonly migrationPolicy: Readonly<Record<string, unknown>>;
}

/** The feature gates one cluster's KubeVirt configuration lists, in emission order. */
export function featureGatesFor(x: GateInputs): string[] {
  const gates = [FEATURE_GATE_DLM];
  if (datapathMode(x.datapath).kubevirtProxy) gates.push(FEATURE_GATE_PROXY);
  const downtime = x.migrationPolicy.maxDowntimeMs !== undefined ? maxDowntimeGateFor(x.version) : undefined;
  if (downtime) gates.push(downtime);
  return gates;
}

/** `developerConfiguration.featureGates` fragment of the canonical KubeVirt spec. */
export function featureGatesFragment(gates: readonly string[]): JsonObject {
  return gates.length ? { configuration: { developerConfiguration: { featureGates: [...gates] } } } : {};
}

/** `developerConfiguration.disabledFeatureGates` fragment: the gates the fleet turns off (`kubevirt.disabledFeatureGates`). */
export function disabledGatesFragment(disabled: readonly string[]): JsonObject {
  return disabled.length ? { configuration: { developerConfiguration: { disabledFeatureGates: [...disabled] } } } : {};
}
