/**
 * The delivery forms of a cluster's KubeVirt configuration (`kubevirt.configDelivery`), as one registry:
 * each form's name (the fleet schema's enum is derived from the keys), what planning and validation read of
 * it, and its docs. Adding a form is adding one entry here; the compiler then names every other place that
 * must handle it: the construct that renders it (constructs/kubevirt/delivery-renderers.ts, a
 * `Record<DeliveryForm, ...>`) and every exhaustive `switch` over the form or its properties
 * (`assertNever`). No code compares a form's name: it reads a property of the form's entry.
 * docs/dev/architecture.md shows the steps and the compiler's errors. Pure, no cdk8s import.
 */
import { Product, hcoDisabledGates } from './capabilities';
import { KubevirtVersion } from './versions';

/** What HCO writes into the KubeVirt CR's `disabledFeatureGates` itself (capabilities.ts `hcoDisabledGates`). */
export interface OperatorDisabledGates {
  /** The operator writes the list (HCO from release-1.19, KubeVirt 1.9): ours are appended to it. */
  readonly listWritten: boolean;
  /** The gates the operator's list already holds: never appended again. */
  readonly gates: readonly string[];
}

/** One delivery form: every property is required, so a new entry decides each of them. */
export interface DeliveryFormSpec {
  /** What the form emits, in one sentence (the docs' and `KubevirtConfiguration`'s words). */
  readonly summary: string;
  /** The kind of the one object the form emits for the cluster's KubeVirt configuration. */
  readonly kind: 'KubeVirt' | 'HyperConverged';
  /** `kubevirt.namespace` when the fleet does not declare it. */
  readonly defaultNamespace: string;
  /** `kubevirt.name` (of the KubeVirt or HyperConverged object) when the fleet does not declare it. */
  readonly defaultName: string;
  /**
   * How the writer puts the object into the cluster's tree: `object` (a file `<Kind>.<namespace>.<name>.yaml`
   * listed in the kustomization) or `kustomize-component` (`components/kubevirt/`, a Component patching the
   * cluster's own KubeVirt CR; not listed among the resources).
   */
  readonly file: 'object' | 'kustomize-component';
  /** The form implies OpenShift when the cluster does not declare `openshift` (the gateway pods then get an SCC). */
  readonly impliesOpenshift: boolean;
  /** The product the VM-network gates assume when `kubevirt.product` is not declared (src/vmnet/fleet-checks.ts). */
  readonly impliedProduct: Product;
  /** The operator behind the form always deploys kubevirt/ipam-extensions (src/vmnet/gates.ts). */
  readonly deploysIpamExtensions: boolean;
  /**
   * The object carries HCO's `kubevirt.kubevirt.io/jsonpatch` annotation: `kubevirt.existing.kubevirtJsonPatch`
   * goes into it and, with the declared customizeComponents patches, counts against the API server's
   * 256 KiB annotation limit (src/kubevirt/existing.ts). Without it, declared operations are refused.
   */
  readonly jsonPatchAnnotation: boolean;
  /** What the form's operator writes into the KubeVirt CR's `disabledFeatureGates` itself, for a KubeVirt version. */
  readonly operatorDisabledGates: (v: KubevirtVersion) => OperatorDisabledGates;
  /**
   * The shortest `certConfig` duration or renewBefore the form's operator's webhook accepts, and whose
   * webhook it is (src/trust/plan.ts, problem `trust/hco-below-minimum`); undefined: none beyond KubeVirt's.
   */
  readonly certMinimum: { readonly seconds: number; readonly operator: string } | undefined;
  /**
   * The migration defaults the form's operator writes when the fleet sets none (issue 51: moves that finish, waves
   * of an evacuation): `completionTimeoutPerGiB` and `parallelOutboundMigrationsPerNode`. KubeVirt's own are 150 and
   * 2 (pkg/virt-config/virt-config.go); HCO's are 20 and 1 since hyperconverged-cluster-operator PR #4426 (2026-07-22).
   */
  readonly migrationDefaults: { readonly completionTimeoutPerGiB: number; readonly parallelOutboundMigrationsPerNode: number };
}

const KUBEVIRT_MIGRATION_DEFAULTS = { completionTimeoutPerGiB: 150, parallelOutboundMigrationsPerNode: 2 };

const NONE: OperatorDisabledGates = { listWritten: false, gates: [] };

/** What both forms that write KubeVirt's own CR (no operator on top) share; each form still states its summary and file. */
const PLAIN_KUBEVIRT = {
  kind: 'KubeVirt',
  defaultNamespace: 'kubevirt',
  defaultName: 'kubevirt',
  impliesOpenshift: false,
  impliedProduct: 'kubevirt',
  deploysIpamExtensions: false,
  jsonPatchAnnotation: false,
  operatorDisabledGates: () => NONE,
  certMinimum: undefined,
  migrationDefaults: KUBEVIRT_MIGRATION_DEFAULTS,
} as const satisfies Omit<DeliveryFormSpec, 'summary' | 'file'>;

/** The registry. The order is the schema enum's (and its error message's). */
export const DELIVERY_FORMS = {
  'kubevirt-cr': {
    ...PLAIN_KUBEVIRT,
    summary: 'a partial KubeVirt object holding only the fields we manage, for server-side apply',
    file: 'object',
  },
  'kustomize-patch': {
    ...PLAIN_KUBEVIRT,
    summary: 'the same partial KubeVirt object, written as a kustomize Component patch over the cluster\'s own KubeVirt CR',
    file: 'kustomize-component',
  },
  hco: {
    summary: 'HyperConverged fields, plus the kubevirt.kubevirt.io/jsonpatch annotation for what HCO lacks (HCO overwrites direct KubeVirt edits)',
    kind: 'HyperConverged',
    defaultNamespace: 'kubevirt-hyperconverged',
    defaultName: 'kubevirt-hyperconverged',
    file: 'object',
    impliesOpenshift: true,
    impliedProduct: 'openshift-virtualization',
    deploysIpamExtensions: true,
    jsonPatchAnnotation: true,
    operatorDisabledGates: (v) => hcoDisabledGates(v),
    // HCO's webhook (validator.go:252-280) refuses any certConfig value below 10m
    certMinimum: { seconds: 600, operator: 'HCO' },
    migrationDefaults: { completionTimeoutPerGiB: 20, parallelOutboundMigrationsPerNode: 1 },
  },
} as const satisfies Record<string, DeliveryFormSpec>;

/** A delivery form's name: a key of the registry. */
export type DeliveryForm = keyof typeof DELIVERY_FORMS;

/** Every form's name, in the registry's order (the fleet schema's `z.enum`). */
export const DELIVERY_FORM_NAMES = Object.keys(DELIVERY_FORMS) as [DeliveryForm, ...DeliveryForm[]];

/** The form of a cluster that declares none. */
export const DEFAULT_DELIVERY_FORM: DeliveryForm = 'kubevirt-cr';

/** A form's entry, typed as the interface (so every property reads as its declared union, not one entry's literal). */
export const deliveryForm = (name: DeliveryForm): DeliveryFormSpec => DELIVERY_FORMS[name];

/** The names of the forms whose entry passes `test`, joined for a message ("kubevirt-cr or kustomize-patch"). */
export const formsWhere = (test: (f: DeliveryFormSpec) => boolean): string =>
  DELIVERY_FORM_NAMES.filter((n) => test(deliveryForm(n))).join(' or ');

/** The kinds the forms emit (status, Forklift and GitOps find a cluster's KubeVirt configuration by them). */
export const DELIVERY_KINDS: ReadonlySet<string> = new Set(DELIVERY_FORM_NAMES.map((n) => deliveryForm(n).kind));
