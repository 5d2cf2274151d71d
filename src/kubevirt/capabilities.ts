/**
 * What each virtualization product does about cross-cluster live migration, by version: one table, each
 * row with its upstream source (file at a commit, PR or release note). The rows that apply to a cluster drive
 * the gates we leave to the product (HCO writes some itself) and are shown by `migration-mesh plan`.
 * Pure, no cdk8s import.
 */
import { FleetProblem } from '../base/errors';
import { KubevirtVersion, parseKubevirtVersion } from './versions';
import { Datapath, datapathMode } from '../fleet/datapath-modes';

/**
 * The gate of decentralized (cross-cluster) live migration; its row is in the table below. Defined here, in
 * the leaf (./gates.ts re-exports it), so the delivery-form registry reads this table without a circle
 * through admission.ts.
 */
export const FEATURE_GATE_DLM = 'DecentralizedLiveMigration';

export type Product = 'kubevirt' | 'openshift-virtualization' | 'harvester';

export interface CapabilityRow {
  readonly product: Product;
  /** First product version the row applies to (the product's own numbering). */
  readonly since: string;
  /** What holds from that version on, and what the generator does about it. */
  readonly fact: string;
  /** Feature gates the product writes into the KubeVirt CR itself: never added again. */
  readonly writesGates: readonly string[];
  /** Where the fact comes from (upstream file at a commit or tag, PR or release note). */
  readonly source: string;
  /** Fleet options the row makes available (checked per cluster: `productHas`). @default - none */
  readonly features?: readonly Feature[];
}

/** Fleet options that exist only from some product version on. */
export type Feature = 'migration-compression';

export const CAPABILITIES: readonly CapabilityRow[] = [
  {
    product: 'kubevirt', since: '1.6',
    fact: `decentralized live migration exists; ${FEATURE_GATE_DLM} is Alpha/Beta and must be listed (Forklift reads the explicit list): we list it`,
    writesGates: [], source: 'kubevirt v1.6.0-v1.9.0 pkg/virt-config/featuregate/active.go (DecentralizedLiveMigration Alpha); forklift @d42511bb pkg/controller/plan/adapter/ocp/validator.go:134-172 (the gate listed in featureGates)',
  },
  {
    product: 'kubevirt', since: '1.9',
    fact: 'LibvirtHooksServerAndClient is Beta, on by default: decentralized migrations whose target name or namespace differs from the source fail until kubevirt PR #18526 lands (mitigation: disabledFeatureGates: [LibvirtHooksServerAndClient])',
    writesGates: [], source: 'kubevirt v1.9.0 pkg/virt-config/featuregate/active.go:80-83,293 (LibvirtHooksServerAndClient Beta); kubevirt PR #18526 (open)',
  },
  {
    product: 'kubevirt', since: '1.9',
    fact: 'migration compression (none|zstd, libvirt multifd) exists in MigrationPolicy spec.experimental.compression only, not in the KubeVirt CR; no feature gate or admitter guards it: spec.migrationPolicy.compression becomes one MigrationPolicy per cluster',
    writesGates: [], features: ['migration-compression'],
    source: 'kubevirt v1.9.0 @79d34c17 staging/src/kubevirt.io/api/core/v1/types.go:3454-3475 (ExperimentalMigrationOptions), :3545-3601 (MigrationConfiguration, no experimental), api/migrations/v1alpha1/types.go:60-63; merge of PR #17509',
  },
  {
    product: 'openshift-virtualization', since: '4.20',
    fact: `cross-cluster live migration is Technology Preview; the ${FEATURE_GATE_DLM} gate is set by us through HCO's jsonpatch`,
    writesGates: [], source: 'kubev2v/forklift-documentation PRs #968/#969 (2026-08-20)',
  },
  {
    product: 'openshift-virtualization', since: '4.21.1',
    fact: `cross-cluster live migration is GA with no feature flag; HCO defaults featureGates.decentralizedLiveMigration: true and writes ${FEATURE_GATE_DLM} itself: we do not append it`,
    writesGates: [FEATURE_GATE_DLM],
    source: 'openshift/openshift-docs PR #109154; HCO api/v1beta1/hyperconverged_types.go:70,630, controllers/handlers/kubevirt.go:949-950',
  },
  {
    product: 'harvester', since: '1.0',
    fact: 'Harvester renders its own KubeVirt CR: we write no KubeVirt featureGates (Forklift needs spec.forklift.providers.<cluster>.externalFeatureGates)',
    writesGates: [], source: 'harvester/harvester issue #9792 (open, candidate v1.10.0); docs.harvesterhci.io v1.6 vm-migration-network',
  },
];

/** A cluster's product and the version that table rows are compared with. */
export interface ProductVersion {
  readonly product: Product;
  /** The product's own version (OpenShift Virtualization 4.21.1); for plain KubeVirt its KubeVirt version. */
  readonly productVersion?: KubevirtVersion;
  /** Set when the version is a newer minor than the table knows: the table's newest, and the fleet path that declares it. */
  readonly newer?: { readonly newest: string; readonly path: string };
}

/**
 * The versions the table knows per product: one major, from the first version the product has
 * cross-cluster live migration to the newest one the rows were read against.
 */
const KNOWN_VERSIONS: Readonly<Record<Product, { readonly oldest: string; readonly newest: string }>> = {
  // decentralized live migration from v1.6.0; main @d923fdb8 is 1.10 development (pkg/virt-config/featuregate/active.go at each tag)
  'kubevirt': { oldest: '1.6', newest: '1.10' },
  // TP in 4.20, GA in 4.21.1 and 4.22 (openshift-docs PR #109154; forklift-documentation PRs #968/#969)
  'openshift-virtualization': { oldest: '4.20', newest: '4.22' },
  // the docs read are v1.6 (docs.harvesterhci.io); CCLM is only a v1.10 candidate (#9792)
  'harvester': { oldest: '1.0', newest: '1.6' },
};

const knownList = (): string => Object.entries(KNOWN_VERSIONS).map(([p, k]) => `${p} ${k.oldest}-${k.newest}`).join(', ');

/**
 * A declared product version against the table: refused (`unknown-product-version`) when it is not
 * semver-like, of another major, or older than the product's first known version (plain KubeVirt older
 * than 1.6 is `kubevirt-too-old`, reported elsewhere); `newest` when it is a newer minor than the table knows.
 */
export function productVersionVerdict(product: Product, text: string, path: string): { problem?: FleetProblem; newest?: string } {
  const k = KNOWN_VERSIONS[product];
  const oldest = parseKubevirtVersion(k.oldest)!;
  const newest = parseKubevirtVersion(k.newest)!;
  const v = /^v?\d+\.\d+(\.\d+)?$/.test(text) || product === 'kubevirt' ? parseKubevirtVersion(text) : undefined;
  const tooOld = v && !notBefore(v, oldest) && product !== 'kubevirt';
  if (!v || v.major !== oldest.major || tooOld) {
    return {
      problem: {
        code: 'unknown-product-version', path,
        message: `${product} ${text} is not a version the capability table knows (src/kubevirt/capabilities.ts): ${!v ? 'not a version like 4.21.1' : tooOld ? `before ${k.oldest}, the first with cross-cluster live migration` : `${product} versions are ${oldest.major}.x`}; its facts (gates, GA or not) are unknown`,
        fix: `declare a version the table knows: ${knownList()} (a newer minor of a known major is accepted with a warning)`,
      },
    };
  }
  return v.minor > newest.minor ? { newest: k.newest } : {};
}

interface PlanClusters { readonly clusters: readonly { readonly name: string; readonly kubevirt: { readonly product: ProductVersion } }[] }

/** The `product-version-newer` warnings of a plan: clusters declaring a newer minor than the table knows. */
export function productVersionWarnings(plan: PlanClusters): FleetProblem[] {
  return plan.clusters.flatMap((c) => {
    const p = c.kubevirt.product;
    if (!p.newer || !p.productVersion) return [];
    return [{
      code: 'product-version-newer' as const, path: p.newer.path,
      message: `cluster ${c.name} declares ${p.product} ${p.productVersion.text}: the newest the capability table knows is ${p.newer.newest}, so facts of later versions (gates that changed state, fields added or removed) are not checked`,
      fix: `check the cluster against the release notes of ${p.product} after ${p.newer.newest}, or declare ${p.newer.newest} if it behaves the same`,
    }];
  });
}

const notBefore = (v: KubevirtVersion, since: KubevirtVersion): boolean =>
  v.major !== since.major ? v.major > since.major : v.minor !== since.minor ? v.minor > since.minor : v.patch >= since.patch;

/** The rows that apply to this cluster, in table order. A product with no declared version matches no versioned row. */
export function capabilitiesFor(p: ProductVersion): CapabilityRow[] {
  return CAPABILITIES.filter((r) => r.product === p.product && p.productVersion !== undefined && notBefore(p.productVersion, parseKubevirtVersion(r.since)!));
}

/**
 * Whether the KubeVirt a cluster runs has a fleet option. Read with the KubeVirt version whatever the
 * product (OpenShift Virtualization and Harvester run a KubeVirt of that version too).
 */
export function kubevirtHas(version: KubevirtVersion, feature: Feature): boolean {
  return capabilitiesFor({ product: 'kubevirt', productVersion: version }).some((r) => r.features?.includes(feature));
}

/** The first KubeVirt version the table gives a fleet option. */
export function kubevirtSinceFor(feature: Feature): string {
  return CAPABILITIES.find((r) => r.product === 'kubevirt' && r.features?.includes(feature))!.since;
}

/** Feature gates the cluster's product already writes into its KubeVirt CR. */
export function gatesWrittenByProduct(p: ProductVersion): string[] {
  return [...new Set(capabilitiesFor(p).flatMap((r) => r.writesGates))];
}

/** What the version-skew check reads of a resolved cluster, with the fleet path of its declared version. */
export interface SkewInput {
  readonly name: string;
  readonly datapath: Datapath;
  readonly version: KubevirtVersion;
  readonly versionPath: string;
}

/**
 * Direct mode: virt-handlers of different clusters talk migration mTLS to each other. From v1.7.0 the
 * migration server accepts client CN types `virt-handler` and `migration` and uses a separate migration
 * client secret; before it only the in-cluster transition was handled (kubevirt
 * cmd/virt-handler/virt-handler.go:141,807 @cc62b9425f, https://github.com/kubevirt/kubevirt/blob/d923fdb815cd2016ddaebdaaa51db04133576d72/cmd/virt-handler/virt-handler.go#L141; PR #18870). A direct fleet mixing both sides is refused.
 */
export function cnSkewProblems(clusters: readonly SkewInput[]): FleetProblem[] {
  const direct = clusters.filter((c) => datapathMode(c.datapath).sharedMigrationNetwork);
  const before = (c: SkewInput) => c.version.major < 1 || (c.version.major === 1 && c.version.minor < 7);
  const old = direct.filter(before);
  const newer = direct.filter((c) => !before(c));
  if (!old.length || !newer.length) return [];
  return old.map((c) => ({
    code: 'kubevirt-cn-skew' as const,
    path: c.versionPath,
    message: `cluster ${c.name} runs KubeVirt ${c.version.text} (before 1.7) in direct mode beside ${newer.map((x) => `${x.name} (${x.version.text})`).join(', ')}: `
      + 'from 1.7 virt-handler presents and accepts migration client certificates with other CN types (a separate migration client secret), so cross-cluster migrations between the two sides are refused by mTLS',
    fix: `upgrade ${c.name} to KubeVirt 1.7 or later before putting it in a direct fleet with 1.7+ clusters`,
  }));
}

// ---- feature gates the table knows, by KubeVirt version (issue #29: disabledFeatureGates) ----------

export type GateState = 'Alpha' | 'Beta' | 'GA';

export interface GateRow {
  readonly name: string;
  /** The gate's state from each KubeVirt version on (ascending). */
  readonly states: readonly { readonly since: string; readonly state: GateState }[];
  /** Only in builds carrying this semver build tag (PR #17922's gate). */
  readonly build?: string;
  readonly source: string;
}

/** Every KubeVirt feature gate the generator reads or writes, with its state per version ("1.10" is main @d923fdb8). */
const KNOWN_GATES: readonly GateRow[] = [
  { name: FEATURE_GATE_DLM, states: [{ since: '1.6', state: 'Alpha' }, { since: '1.10', state: 'Beta' }], source: 'pkg/virt-config/featuregate/active.go v1.9.0:315 (Alpha), main:310 (Beta)' },
  { name: 'CrossClusterMigrationProxy', states: [{ since: '1.9', state: 'Alpha' }], build: 'pr17922', source: 'kubevirt PR #17922 (open)' },
  { name: 'MigrationStallDetection', states: [{ since: '1.9', state: 'Alpha' }], source: 'active.go v1.9.0:337, main:331' },
  { name: 'MigrationDowntimeTuning', states: [{ since: '1.10', state: 'Alpha' }], source: 'active.go main:332' },
  {
    name: 'LibvirtHooksServerAndClient', states: [{ since: '1.8', state: 'Alpha' }, { since: '1.9', state: 'Beta' }, { since: '1.10', state: 'GA' }],
    source: 'active.go v1.8.0:236 (Alpha), v1.9.0:293 (Beta); main inactive.go:253 (GA)',
  },
];

/** The gate's state on this KubeVirt version; undefined when the version does not have it. */
function gateStateAt(name: string, v: KubevirtVersion): GateState | undefined {
  const row = KNOWN_GATES.find((g) => g.name === name);
  if (!row || (row.build && !v.build.includes(row.build))) return undefined;
  return [...row.states].reverse().find((s) => notBefore(v, parseKubevirtVersion(s.since)!))?.state;
}

/**
 * HCO from release-1.19 (PR #4223, 2026-05-19; it vendors kubevirt.io/api v1.9.0) writes
 * `disabledFeatureGates` itself: every KubeVirt Beta gate it does not enable
 * (controllers/handlers/kubevirt.go getKVDevConfig:842-843, getKvDisabledFeatureGateList:1128, HCO main
 * @03da3cff). HCO 1.18 (KubeVirt 1.8.4) writes no such list. HCO enables DecentralizedLiveMigration.
 */
export function hcoDisabledGates(v: KubevirtVersion): { readonly listWritten: boolean; readonly gates: string[] } {
  if (!notBefore(v, parseKubevirtVersion('1.9')!)) return { listWritten: false, gates: [] };
  return { listWritten: true, gates: KNOWN_GATES.filter((g) => g.name !== FEATURE_GATE_DLM && gateStateAt(g.name, v) === 'Beta').map((g) => g.name) };
}

/** What the disabled-gate check reads of one cluster. */
export interface DisabledGatesInput {
  readonly cluster: string;
  readonly version: KubevirtVersion;
  readonly disabled: readonly string[];
  /** Fleet path of the list (`spec.kubevirt.disabledFeatureGates` or the cluster's). */
  readonly path: string;
  /** Gates the cluster's KubeVirt lists as enabled: ours (src/kubevirt/gates.ts) and `existing.featureGates`. */
  readonly enabled: readonly string[];
}

/** Names the table does not know for the version, GA gates (KubeVirt ignores disabling them), gates also enabled. */
export function disabledGateProblems(x: DisabledGatesInput): FleetProblem[] {
  return x.disabled.flatMap((g, j): FleetProblem[] => {
    const path = `${x.path}[${j}]`;
    const state = gateStateAt(g, x.version);
    if (!state) {
      const row = KNOWN_GATES.find((r) => r.name === g);
      const known = KNOWN_GATES.filter((r) => gateStateAt(r.name, x.version)).map((r) => r.name).join(', ');
      return [{
        code: 'unknown-feature-gate', path,
        message: row
          ? `cluster ${x.cluster}'s KubeVirt ${x.version.text} has no ${g} gate (it arrives in ${row.build ? `builds with +${row.build}` : row.states[0].since})`
          : `${g} is not a feature gate the capability table knows (src/kubevirt/capabilities.ts KNOWN_GATES); KubeVirt ignores unknown names, so a typo disables nothing`,
        fix: `use one the table knows for KubeVirt ${x.version.text}: ${known}`,
      }];
    }
    if (state === 'GA') {
      return [{ code: 'feature-gate-ga', path, message: `${g} is GA in KubeVirt ${x.version.text} (cluster ${x.cluster}): KubeVirt treats GA gates as always on and ignores disabling them`, fix: `remove ${g} from the list` }];
    }
    if (x.enabled.includes(g)) {
      return [{
        code: 'feature-gate-conflict', path,
        message: `${g} would be in both featureGates and disabledFeatureGates of cluster ${x.cluster}'s KubeVirt (we enable it, or kubevirt.existing.featureGates lists it): KubeVirt's update admitter refuses that (validateFeatureGates)`,
        fix: `remove ${g} from disabledFeatureGates${g === FEATURE_GATE_DLM ? ' (cross-cluster migration needs it)' : ', or the setting that enables it'}`,
      }];
    }
    return [];
  });
}

interface HooksInput { readonly version: KubevirtVersion; readonly disabledFeatureGates: readonly string[] }

/**
 * LibvirtHooksServerAndClient is on for a KubeVirt 1.9 cluster (Beta, on by default: kubevirt PR #18526
 * risk) unless the fleet disables it or the delivery form's operator does (`operatorDisabled`: HCO writes
 * it into disabledFeatureGates itself; src/kubevirt/delivery-forms.ts `operatorDisabledGates`).
 */
export function libvirtHooksOn(kv: HooksInput, operatorDisabled: readonly string[]): boolean {
  const g = 'LibvirtHooksServerAndClient';
  if (gateStateAt(g, kv.version) !== 'Beta' || kv.disabledFeatureGates.includes(g)) return false;
  return !operatorDisabled.includes(g);
}
