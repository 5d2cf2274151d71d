/**
 * The KubeVirt configuration a cluster needs, as one canonical partial `KubeVirt` spec built from
 * fragments (migration network, policy, sync-controller placement, native datapath), and its three
 * delivery forms: a partial KubeVirt object for server-side apply, a kustomize patch, and the HCO
 * `HyperConverged` fields (what HCO lacks goes through its `kubevirt.kubevirt.io/jsonpatch`
 * annotation, because HCO overwrites direct KubeVirt edits). Pure, no cdk8s import.
 */
import { ClusterPlan, FleetPlan } from '../addressing/planner';
import { Placement } from '../fleet/schema';
import { InvalidPropsError } from '../base/errors';
import { disabledGatesFragment, featureGatesFor, featureGatesFragment } from './gates';
import { Json, JsonObject } from '../base/json';
import { NOT_IN_KUBEVIRT_CR } from './compression';
import { datapathMode } from '../fleet/datapath-modes';

export type { JsonObject } from '../base/json';
export { FEATURE_GATE_DLM } from './gates';
const SYNC_CONTROLLER_DEPLOYMENT = 'virt-synchronization-controller';
export const HCO_JSONPATCH_ANNOTATION = 'kubevirt.kubevirt.io/jsonpatch';

/** Deep merge: objects merge, arrays of strings union (first occurrence order), other arrays concatenate, scalars from b win. */
export function mergeSpec(a: JsonObject, b: JsonObject): JsonObject {
  const out: JsonObject = { ...a };
  for (const [k, v] of Object.entries(b)) {
    const cur = out[k];
    if (isObject(cur) && isObject(v)) {
      out[k] = mergeSpec(cur, v);
    } else if (Array.isArray(cur) && Array.isArray(v)) {
      out[k] = cur.every((x) => typeof x === 'string') && v.every((x) => typeof x === 'string')
        ? [...new Set([...(cur as string[]), ...(v as string[])])]
        : [...cur, ...v];
    } else {
      out[k] = v;
    }
  }
  return out;
}

const isObject = (x: unknown): x is JsonObject => typeof x === 'object' && x !== null && !Array.isArray(x);

/** `spec.configuration.migrations.network` and the cluster's feature gates (all of them: src/kubevirt/gates.ts). */
function migrationNetworkFragment(plan: FleetPlan, cluster: ClusterPlan): JsonObject {
  return mergeSpec(clusterGatesFragment(plan, cluster), { configuration: { migrations: { network: cluster.migrationNetwork.nadName } } });
}

/** The feature gates of one cluster, for every datapath and delivery form (the forms render this spec). */
function clusterGatesFragment(plan: Pick<FleetPlan, 'migrationPolicy'>, cluster: Pick<ClusterPlan, 'datapath' | 'kubevirt'>): JsonObject {
  return featureGatesFragment(featureGatesFor({ datapath: cluster.datapath, version: cluster.kubevirt.version, migrationPolicy: plan.migrationPolicy }));
}

/** Fleet migration policy into `spec.configuration.migrations` (field names are KubeVirt's; `compression` is a MigrationPolicy: ./compression.ts). */
export function migrationPolicyFragment(plan: FleetPlan): JsonObject {
  const migrations: JsonObject = {};
  for (const [k, v] of Object.entries(plan.migrationPolicy)) if (v !== undefined && !NOT_IN_KUBEVIRT_CR.includes(k)) migrations[k] = v as Json;
  return Object.keys(migrations).length ? { configuration: { migrations } } : {};
}

/** native mode: the PR #17922 fields (its gate comes from src/kubevirt/gates.ts). Only called for clusters whose version has them. */
export function nativeDatapathFragment(cluster: ClusterPlan): JsonObject {
  if (!datapathMode(cluster.datapath).kubevirtProxy) return {};
  if (!cluster.kubevirt.hasProxyApi) {
    throw new InvalidPropsError({ code: 'native-needs-pr17922', path: 'cluster', message: `cluster ${cluster.name}: KubeVirt ${cluster.kubevirt.version.text} lacks the cross-cluster proxy fields` });
  }
  return {
    configuration: {
      migrations: {
        decentralizedLiveMigrationDatapath: 'Proxy',
        crossClusterNetwork: cluster.crossClusterSync!.nadName,
      },
    },
  };
}

const placementJson = (p: Placement): JsonObject => {
  const out: JsonObject = {};
  if (p.nodeSelector) out.nodeSelector = { ...p.nodeSelector };
  if (p.affinity) out.affinity = p.affinity as JsonObject;
  if (p.tolerations) out.tolerations = p.tolerations as Json[];
  return out;
};

/** Nodes that are not control-plane nodes. */
const WORKERS_AFFINITY: JsonObject = {
  nodeAffinity: {
    requiredDuringSchedulingIgnoredDuringExecution: {
      nodeSelectorTerms: [{ matchExpressions: [{ key: 'node-role.kubernetes.io/control-plane', operator: 'DoesNotExist' }] }],
    },
  },
};

/**
 * Sync-controller placement and replicas. Today's mechanism (KubeVirt main and releases): the sync
 * controller is an infra component, and virt-operator injects the control-plane affinity *after*
 * customizeComponents patches unless `spec.infra.nodePlacement` is set. So: set `spec.infra.nodePlacement`
 * (`{}` turns the injection off for all infra components) and pin the sync controller with a strategic
 * patch. The replica count rides the same patch, never `spec.infra.replicas`: that one scales every infra
 * Deployment (virt-api, virt-controller, ...) and turns off virt-api's auto-scaling (apply/apps.go
 * syncDeployment, which touches replicas only when it is set). In native mode (PR #17922)
 * `spec.synchronizationPlacement.nodePlacement` is used as well.
 */
export function syncPlacementFragment(cluster: Pick<ClusterPlan, 'syncPlacement' | 'syncReplicas' | 'datapath'>): JsonObject {
  const p = cluster.syncPlacement;
  const deploymentSpec: JsonObject = {};
  if (cluster.syncReplicas !== 2) deploymentSpec.replicas = cluster.syncReplicas;
  let out: JsonObject = {};
  let placement: JsonObject | undefined;
  if (p !== 'controlPlane') {
    placement = p === 'workers' ? { affinity: WORKERS_AFFINITY } : placementJson(p);
    const podSpec: JsonObject = {};
    if (placement.nodeSelector) podSpec.nodeSelector = placement.nodeSelector;
    if (placement.affinity) podSpec.affinity = placement.affinity;
    if (placement.tolerations) podSpec.tolerations = placement.tolerations;
    deploymentSpec.template = { spec: podSpec };
    out = { infra: { nodePlacement: {} } };
  }
  if (Object.keys(deploymentSpec).length) {
    out = mergeSpec(out, {
      customizeComponents: {
        patches: [{
          resourceType: 'Deployment',
          resourceName: SYNC_CONTROLLER_DEPLOYMENT,
          type: 'strategic',
          patch: JSON.stringify({ spec: deploymentSpec }),
        }],
      },
    });
  }
  if (placement && datapathMode(cluster.datapath).kubevirtProxy) {
    return mergeSpec(out, { synchronizationPlacement: { nodePlacement: placement } });
  }
  return out;
}

/** The canonical partial KubeVirt spec of one cluster. */
export function kubevirtSpecFor(plan: FleetPlan, cluster: ClusterPlan): JsonObject {
  return dedupePatches([
    existingListsFragment(cluster),
    migrationPolicyFragment(plan),
    migrationNetworkFragment(plan, cluster),
    disabledGatesFragment(cluster.kubevirt.disabledFeatureGates),
    syncPlacementFragment(cluster),
    nativeDatapathFragment(cluster),
  ].reduce(mergeSpec, {} as JsonObject));
}

/** HCO v1beta1 `spec.liveMigrationConfig` keys (hyperconverged_types.go), mapped 1:1 from `migrations`. */
const HCO_LIVE_MIGRATION_KEYS = [
  'parallelMigrationsPerCluster', 'parallelOutboundMigrationsPerNode', 'bandwidthPerMigration',
  'completionTimeoutPerGiB', 'progressTimeout', 'network', 'allowAutoConverge', 'allowPostCopy', 'allowWorkloadDisruption',
];

export interface HcoForm {
  readonly spec: JsonObject;
  /** JSON patch ops for the KubeVirt CR, carried by the HCO jsonpatch annotation; empty when HCO covers everything. */
  readonly kubevirtJsonPatch: JsonObject[];
}

/**
 * Translate the canonical KubeVirt spec into HyperConverged fields + jsonpatch ops for the rest. `present`:
 * feature gates the KubeVirt HCO builds already holds before the annotation is applied (declared, or
 * added by the declared operations): never appended again.
 */
function hcoFormOf(kv: JsonObject, present: ReadonlySet<string>, hcoDisabled: HcoDisabledGates): HcoForm {
  const spec: JsonObject = {};
  const ops: JsonObject[] = [];
  const cfg = (kv.configuration ?? {}) as JsonObject;
  const migrations = (cfg.migrations ?? {}) as JsonObject;
  const live: JsonObject = {};
  for (const [k, v] of Object.entries(migrations)) {
    if (HCO_LIVE_MIGRATION_KEYS.includes(k)) live[k] = v;
    else ops.push({ op: 'add', path: `/spec/configuration/migrations/${k}`, value: v });
  }
  if (Object.keys(live).length) spec.liveMigrationConfig = live;
  // Feature gates go through the jsonpatch too: `spec.featureGates.decentralizedLiveMigration` exists
  // only in newer HCO (where it is beta, on by default); the HCO CRD we validate against lacks it, and
  // the jsonpatch works with every HCO version. HCO always writes a featureGates list, so "-" appends;
  // JSON patch has no "add if absent", so a gate the list already holds is left out (it would be there twice)
  const gates = ((cfg.developerConfiguration as JsonObject | undefined)?.featureGates ?? []) as string[];
  for (const g of gates.filter((x) => !present.has(x))) {
    ops.push({ op: 'add', path: '/spec/configuration/developerConfiguration/featureGates/-', value: g });
  }
  ops.push(...disabledGateOps(((cfg.developerConfiguration as JsonObject | undefined)?.disabledFeatureGates ?? []) as string[], hcoDisabled));
  const infra = kv.infra as JsonObject | undefined;
  if (infra?.nodePlacement !== undefined) spec.infra = { nodePlacement: infra.nodePlacement };
  if (infra?.replicas !== undefined) {
    // HCO writes spec.infra only when it has a placement; the KubeVirt Go struct omits a nil infra
    ops.push(infra.nodePlacement !== undefined
      ? { op: 'add', path: '/spec/infra/replicas', value: infra.replicas }
      : { op: 'add', path: '/spec/infra', value: { replicas: infra.replicas } });
  }
  const certConfig = hcoCertConfigOf(kv);
  if (certConfig) spec.certConfig = certConfig;
  for (const k of Object.keys(kv).filter((x) => !['configuration', 'infra', 'certificateRotateStrategy'].includes(x)).sort()) {
    if (k === 'customizeComponents') {
      // customizeComponents is a non-pointer struct in KubeVirtSpec, so HCO's KubeVirt always has it
      ops.push({ op: 'add', path: '/spec/customizeComponents/patches', value: (kv.customizeComponents as JsonObject).patches ?? [] });
    } else {
      ops.push({ op: 'add', path: `/spec/${k}`, value: kv[k] });
    }
  }
  return { spec, kubevirtJsonPatch: ops };
}

/** What HCO writes into the KubeVirt CR's `disabledFeatureGates` itself (src/kubevirt/capabilities.ts `hcoDisabledGates`). */
export interface HcoDisabledGates {
  /** HCO writes the list (from release-1.19, KubeVirt 1.9): ours are appended to it. */
  readonly listWritten: boolean;
  /** The gates HCO's list already holds: never appended again. */
  readonly gates: readonly string[];
}

const DISABLED_GATES_PATH = '/spec/configuration/developerConfiguration/disabledFeatureGates';

/**
 * `disabledFeatureGates` through the jsonpatch. HCO applies the whole annotation or fails the KubeVirt
 * CR, so the form depends on whether HCO writes the list: where it does, append ("-", replacing it would
 * re-enable the Beta gates HCO turns off); where it does not, add the list (appending would fail).
 */
function disabledGateOps(disabled: readonly string[], hco: HcoDisabledGates): JsonObject[] {
  const todo = disabled.filter((g) => !hco.gates.includes(g));
  if (!todo.length) return [];
  return hco.listWritten ? todo.map((g) => ({ op: 'add', path: `${DISABLED_GATES_PATH}/-`, value: g })) : [{ op: 'add', path: DISABLED_GATES_PATH, value: todo }];
}

/**
 * HCO v1beta1 `spec.certConfig` ({ca, server} x {duration, renewBefore}) from the KubeVirt
 * `certificateRotateStrategy.selfSigned`: HCO copies certConfig 1:1 into the KubeVirt CR and would
 * overwrite a jsonpatch of the same field (hyperconverged_types.go:93; handlers/kubevirt.go:1141-1155).
 */
function hcoCertConfigOf(kv: JsonObject): JsonObject | undefined {
  const selfSigned = (kv.certificateRotateStrategy as JsonObject | undefined)?.selfSigned as JsonObject | undefined;
  if (!selfSigned) return undefined;
  const out: JsonObject = {};
  for (const k of ['ca', 'server']) if (selfSigned[k] !== undefined) out[k] = selfSigned[k];
  return Object.keys(out).length ? out : undefined;
}

// ---- what the cluster already has (issue #12): kept apart from the fragments above --------------------

/**
 * The feature gates and customizeComponents patches the cluster already has (`kubevirt.existing`). Both
 * lists are atomic in the KubeVirt CRD, so our object owns them whole: merged first, so the union lists
 * the cluster's own entries before ours. Empty when nothing is declared (the output is unchanged).
 */
export function existingListsFragment(cluster: Pick<ClusterPlan, 'kubevirt'>): JsonObject {
  const e = cluster.kubevirt.existing;
  const out: JsonObject = {};
  if (e.featureGates.length) out.configuration = { developerConfiguration: { featureGates: [...e.featureGates] } };
  if (e.customizeComponentsPatches.length) {
    out.customizeComponents = { patches: e.customizeComponentsPatches.map((p) => ({ ...p })) };
  }
  return out;
}

/** `mergeSpec`, with customizeComponents patches that are equal kept once (a declared patch may equal ours). */
export function dedupePatches(spec: JsonObject): JsonObject {
  const cc = spec.customizeComponents as JsonObject | undefined;
  if (!cc || !Array.isArray(cc.patches)) return spec;
  const patches = [...new Map(cc.patches.map((p) => [JSON.stringify(p), p])).values()];
  return { ...spec, customizeComponents: { ...cc, patches } };
}

const GATES_PATH = '/spec/configuration/developerConfiguration/featureGates';

/** The gates a list of declared operations puts into the feature gate list (one gate, or the whole list). */
function gatesAddedBy(ops: readonly JsonObject[]): string[] {
  return ops.filter((o) => (o.op === 'add' || o.op === 'replace') && typeof o.path === 'string' && o.path.startsWith(GATES_PATH))
    .flatMap((o) => (o.path === GATES_PATH && Array.isArray(o.value) ? o.value : /^\/(-|\d+)$/.test((o.path as string).slice(GATES_PATH.length)) ? [o.value] : []))
    .filter((g): g is string => typeof g === 'string');
}

/**
 * HCO form with the annotation's existing operations first (`kubevirt.existing.kubevirtJsonPatch`). The
 * gate operations add only what the cluster's list lacks: the declared gates (`kubevirt.existing.featureGates`,
 * HCO's own among them) and those the declared operations add are there already.
 */
export function hcoFormWithExisting(
  kv: JsonObject, existingOps: readonly JsonObject[], existingGates: readonly string[] = [], hcoDisabled: HcoDisabledGates = { listWritten: false, gates: [] },
): HcoForm {
  const form = hcoFormOf(dedupePatches(kv), new Set([...existingGates, ...gatesAddedBy(existingOps)]), hcoDisabled);
  return { spec: form.spec, kubevirtJsonPatch: [...existingOps, ...form.kubevirtJsonPatch] };
}

/** The KubeVirt CR HCO writes from a HyperConverged CR, and what our HCO form puts into it. */
export interface HcoKubevirt {
  readonly name: string;
  readonly namespace: string;
  /** `spec.configuration.migrations.network` once HCO has applied our form. */
  readonly network?: string;
  /** Feature gates the KubeVirt CR must hold: those the fleet declares it has, then those the jsonpatch adds. */
  readonly gates: string[];
}

/**
 * Where HCO writes the KubeVirt CR of a HyperConverged CR, and what it must hold for our HCO form.
 * HCO names it `kubevirt-<HyperConverged name>` in the HyperConverged's namespace
 * (kubevirt/hyperconverged-cluster-operator controllers/handlers/kubevirt.go, `NewKubeVirtWithNameOnly`:
 * `Name: "kubevirt-" + hc.Name`, `Namespace: operands.GetNamespace(hc.Namespace, opts)`; so
 * `kubevirt-kubevirt-hyperconverged` for the default HyperConverged). `NewKubeVirt` there copies
 * `spec.liveMigrationConfig.network` to `spec.configuration.migrations.network` (`hcLiveMigrationToKv`)
 * and applies the `kubevirt.kubevirt.io/jsonpatch` annotation last (`ApplyPatchToSpec`), so the KubeVirt
 * CR, not the HyperConverged, says whether HCO took what we own. `declaredGates`: the cluster's declared
 * gates (`kubevirt.existing.featureGates`), which the form leaves out of the patch because they are there.
 */
export function hcoKubevirtOf(hc: { metadata: { name: string; namespace?: string }; spec?: unknown }, declaredGates: readonly string[] = []): HcoKubevirt {
  const annotations = (hc.metadata as { annotations?: Record<string, string> }).annotations ?? {};
  let ops: JsonObject[] = [];
  try { ops = JSON.parse(annotations[HCO_JSONPATCH_ANNOTATION] ?? '[]') as JsonObject[]; } catch { ops = []; }
  const networkOp = ops.filter((o) => (o.op === 'add' || o.op === 'replace') && o.path === '/spec/configuration/migrations/network').pop();
  const lm = ((hc.spec ?? {}) as { liveMigrationConfig?: { network?: string } }).liveMigrationConfig;
  const network = typeof networkOp?.value === 'string' ? networkOp.value : lm?.network;
  return {
    name: `kubevirt-${hc.metadata.name}`,
    namespace: hc.metadata.namespace ?? 'default',
    ...(network !== undefined ? { network } : {}),
    gates: [...new Set([...declaredGates, ...gatesAddedBy(ops)])],
  };
}
