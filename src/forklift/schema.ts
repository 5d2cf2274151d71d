/**
 * The fleet's `spec.forklift` section and the moves file: where Forklift runs, how it reaches each
 * cluster, the VM networks and storage classes to map, and the VMs to move. One zod schema for the
 * YAML and the TypeScript props. Pure, no cdk8s import. Facts: Forklift's CRDs @d42511bb
 * (https://github.com/kubev2v/forklift/tree/d42511bb28a605af9303b097333baa61d6c74a00/operator/config/crd/bases; copies in test/fixtures/upstream/forklift).
 */
import { z } from 'zod';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

const label = z.string()
  .max(63, { message: 'must be at most 63 characters (a DNS-1123 label)' })
  .regex(DNS1123_LABEL, { message: 'must be a DNS-1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit' });

const subdomain = z.string()
  .max(253, { message: 'must be at most 253 characters (a DNS-1123 subdomain)' })
  .regex(DNS1123_SUBDOMAIN, { message: 'must be a DNS-1123 subdomain: lowercase letters, digits, "-" and "."' });

/** `namespace/name` of a Multus network (NetworkAttachmentDefinition). */
const networkRef = z.string().regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?\/[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, {
  message: 'must be namespace/name of a NetworkAttachmentDefinition, e.g. vms/vlan100',
});

/** One cluster as Forklift sees it: an `openshift` Provider with the API URL and a Secret you create. */
export const forkliftProviderSchema = z.object({
  /** API server URL of the cluster, e.g. `https://api.east.example:6443`. */
  url: z.string().regex(/^https:\/\/\S+$/, { message: 'must be an https API server URL such as https://api.east.example:6443' }),
  /**
   * Name of the Secret (in the hub namespace) holding `token`, `ca.crt` and `insecureSkipVerify` for this
   * cluster. You create it; the fleet never holds a token.
   */
  secret: subdomain,
  /**
   * `DecentralizedLiveMigration` is listed in this cluster's KubeVirt `featureGates` by something other
   * than this fleet (e.g. a Harvester cluster, whose KubeVirt configuration Harvester writes). Only then
   * does the check accept a cluster whose generated configuration does not list the gate.
   * @default false
   */
  externalFeatureGates: z.boolean().optional(),
}).strict();

/** A VM network (Multus NetworkAttachmentDefinition) that VMs use, and the clusters that have it. */
export const forkliftNetworkSchema = z.object({
  name: subdomain,
  namespace: label,
  /** Clusters that have this network under this name. @default - every cluster of the fleet */
  clusters: z.array(label).optional(),
}).strict();

/** A counterpart override for one ordered cluster pair. */
export const forkliftNetworkMapSchema = z.object({
  from: label,
  to: label,
  /** `namespace/name` on the source cluster. */
  source: networkRef,
  /** `namespace/name` on the destination cluster, `pod` (the pod network) or `ignored`. */
  destination: z.union([networkRef, z.literal('pod'), z.literal('ignored')]),
}).strict();

/** Storage class mapping; without `from`/`to` it applies to every pair. */
export const forkliftStorageSchema = z.object({
  /** @default - every source cluster */
  from: label.optional(),
  /** @default - every destination cluster */
  to: label.optional(),
  /** Storage class of the VM's disks on the source cluster. */
  source: subdomain,
  /** Storage class for the blank target disks on the destination cluster. */
  storageClass: subdomain,
  /** @default - Forklift's choice from the storage profile */
  accessMode: z.enum(['ReadWriteOnce', 'ReadWriteMany', 'ReadOnlyMany']).optional(),
  /** @default - Forklift's choice from the storage profile */
  volumeMode: z.enum(['Filesystem', 'Block']).optional(),
}).strict();

/** A Kubernetes label key: an optional DNS-subdomain prefix (at most 253) and `/`, then a name of at most 63. */
const vmiLabelKey = z.string()
  .refine((k) => {
    const slash = k.lastIndexOf('/');
    const prefix = slash < 0 ? undefined : k.slice(0, slash);
    const name = k.slice(slash + 1);
    return (prefix === undefined || (prefix.length <= 253 && DNS1123_SUBDOMAIN.test(prefix)))
      && name.length <= 63 && /^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$/.test(name);
  }, { message: 'must be a label key: an optional DNS subdomain prefix and "/", then at most 63 of [A-Za-z0-9_.-] starting and ending alphanumeric (e.g. example.org/vm)' })
  .refine((k) => !KUBEVIRT_SET_LABELS.includes(k), { message: 'is a label KubeVirt sets on the VMI itself, with a value that changes with the node (kubevirt.io/nodeName, kubevirt.io/migrationTargetNodeName): name one of the VM\'s spec.template.metadata.labels' });

/** VMI labels virt-controller and virt-handler set per node (types.go NodeNameLabel, MigrationTargetNodeNameLabel). */
const KUBEVIRT_SET_LABELS = ['kubevirt.io/nodeName', 'kubevirt.io/migrationTargetNodeName'];

const vmiLabelValue = z.string().max(63, { message: 'must be at most 63 characters (a label value)' })
  .regex(/^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/, { message: 'must be a label value: [A-Za-z0-9_.-], starting and ending alphanumeric (or empty)' });

/** One VM to move. Moves of one batch between one pair into one target namespace become one Plan. */
export const moveSchema = z.object({
  /** VirtualMachine name (also the target VM's name). */
  vm: label,
  /** Namespace of the VM on the source cluster. */
  namespace: label,
  from: label,
  to: label,
  /** @default - the source namespace */
  targetNamespace: label.optional(),
  /** Batch name: moves of one batch are planned (and started) together. */
  batch: label,
  /**
   * Commit a `Migration` for this move's Plan: merging it starts the run. Every move of one Plan must agree.
   * @default false
   */
  start: z.boolean().optional(),
  /**
   * Run number of the Plan's `Migration` (`<plan>-run-<n>`). A Migration is one run: to run a Plan again
   * (after a failure), raise the number. Every move of one Plan must agree.
   * @default 1
   */
  run: z.number().int().min(1).max(999).optional(),
  /**
   * The VM's interface MAC addresses (`aa:bb:cc:dd:ee:ff`), where you pin them. Forklift no longer checks
   * MAC conflicts for KubeVirt-to-KubeVirt moves (Forklift PR #8293); the fleet refuses a move whose MAC
   * another move into the same target cluster uses (docs/migrations.md).
   * @default - not known (not checked)
   */
  macAddresses: z.array(z.string().regex(/^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$/, { message: 'must be a MAC address such as 02:03:04:05:06:07' })).optional(),
  /**
   * Migration compression for this VM (KubeVirt 1.9+ on both clusters): one MigrationPolicy on the
   * TARGET cluster, whose virt-controller picks the policy of a cross-cluster migration
   * (docs/compression.md). Needs `vmiLabels`. Overrides `spec.migrationPolicy.compression` for this VM.
   * @default - the fleet's `spec.migrationPolicy.compression` (not set: no compression)
   */
  compression: z.enum(['none', 'zstd']).optional(),
  /**
   * Labels the moved VM's VMI carries (its `spec.template.metadata.labels`: KubeVirt copies exactly
   * those to the VMI, and adds none naming the VM). The move's MigrationPolicy selects VMIs of the
   * target namespace that carry all of them: name labels no other VM there carries. Read only with
   * `compression`.
   * @default - none (compression is then refused: nothing could select the VMI)
   */
  vmiLabels: z.record(vmiLabelKey, vmiLabelValue).optional(),
  /**
   * The VM's guest memory (`spec.template.spec.domain.memory.guest`, or its memory request), a quantity such as
   * `16Gi`: with `spec.migrationPolicy.crossCluster`, `validate` says how long its migration may take and needs.
   * @default - not known (the finish-time warning gives the time per GiB)
   */
  /**
   * The VM's CPU limit (`spec.template.spec.domain.resources.limits.cpu`) where it sets one, e.g. `4`: KubeVirt
   * then migrates it without multifd, and `validate` says so.
   * @default - none (no CPU limit)
   */
  cpuLimit: z.string().regex(/^[0-9]+(\.[0-9]+)?m?$/, { message: 'must be a CPU quantity such as 4 or 3500m' }).optional(),
  memory: z.string().regex(/^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/, { message: 'must be a Kubernetes quantity such as 16Gi' }).optional(),
}).strict();

export const movesSchema = z.array(moveSchema);

/** The moves file beside the fleet (`<fleet>.moves.yaml`). */
export const movesDocumentSchema = z.object({
  apiVersion: z.literal('migrationmesh.dev/v1alpha1', { message: 'must be migrationmesh.dev/v1alpha1' }),
  kind: z.literal('Moves', { message: 'must be Moves' }),
  /** Name of the fleet these moves belong to. */
  metadata: z.object({ name: label }).strict(),
  moves: movesSchema,
}).strict();

/** `spec.forklift`: Forklift (MTV) as the orchestrator of cross-cluster live migrations. */
export const forkliftSchema = z.object({
  /** Where Forklift runs. */
  hub: z.object({
    /**
     * The hub cluster: a fleet member (then it is reached through Forklift's own `host` provider) or
     * another cluster (output still goes to `_forklift/`).
     */
    cluster: label,
    /** Namespace Forklift runs in (`openshift-mtv` for MTV, `konveyor-forklift` upstream). */
    namespace: label,
  }).strict(),
  /** One Provider per cluster, by cluster name (not for a hub that is a fleet member). @default - none */
  providers: z.record(z.string(), forkliftProviderSchema).optional(),
  /**
   * Emit a partial `ForkliftController` that sets `feature_ocp_live_migration`. `false` with moves is
   * refused (Forklift then runs live Plans as cold ones).
   * @default - not managed (Forklift's own default, "true" since 2.11)
   */
  controller: z.object({
    liveMigration: z.boolean(),
    /** @default forklift-controller */
    name: subdomain.optional(),
  }).strict().optional(),
  /** VM networks the moved VMs use. @default - none (pod network only) */
  networks: z.array(forkliftNetworkSchema).optional(),
  /** Counterpart overrides per ordered pair. @default - the same network on the destination */
  networkMaps: z.array(forkliftNetworkMapSchema).optional(),
  /** Storage class mappings (each pair with moves needs at least one). @default - none */
  storage: z.array(forkliftStorageSchema).optional(),
  /** The moves, when kept in the fleet instead of `<fleet>.moves.yaml`. @default - none */
  moves: movesSchema.optional(),
}).strict();

export type ForkliftSpec = z.infer<typeof forkliftSchema>;
export type Move = z.infer<typeof moveSchema>;
export type MovesDocument = z.infer<typeof movesDocumentSchema>;
export type ForkliftStorage = z.infer<typeof forkliftStorageSchema>;
