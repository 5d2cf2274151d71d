/**
 * Fleet-file section for customizing the gateway pods and labelling every emitted object
 * (`spec.labels`, `spec.gateway.pod`, `spec.clusters[].labels`, `spec.clusters[].gateway.pod`).
 *
 * Documentation in the editor: zod-inferred types lose the doc comments of their fields in the
 * published `.d.ts`, so the types users see are the explicit, documented interfaces below; the zod
 * schemas validate the files, and a compile-time equality check (`_sameShape` at the end) fails the
 * build when an interface and its schema drift apart. No cdk8s import (the constructs translate these
 * plain values into cdk8s-plus-28 objects).
 */
import { z } from 'zod';
import { dnsSubdomain, labelValue, qualifiedKey } from '../base/k8s-names';

/**
 * Labels (Kubernetes `metadata.labels`) added to every object of a cluster's output.
 *
 * @see https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/
 */
export type ObjectLabels = { [key: string]: string };

/** CPU and memory of one container, as Kubernetes quantities. */
export interface GatewayResourceQuantities {
  /**
   * CPU, in cores (`2`, `0.5`) or millicores (`500m`).
   *
   * @default - not set
   * @see https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#meaning-of-cpu
   */
  cpu?: string;
  /**
   * Memory, a whole number of MiB written with a binary suffix (`256Mi`, `1Gi`, `524288Ki`); emitted in
   * `Mi` (cdk8s-plus-28 writes memory in MiB).
   *
   * @default - not set
   * @see https://kubernetes.io/docs/concepts/configuration/manage-resources-containers/#meaning-of-memory
   */
  memory?: string;
}

/**
 * Resources of the gateway runtime container.
 *
 * @see https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#resources
 */
export interface GatewayResourcesSpec {
  /**
   * What the scheduler reserves.
   *
   * @default - not set
   */
  requests?: GatewayResourceQuantities;
  /**
   * Hard caps. Prefer no CPU limit: CFS throttling of a data-path proxy stalls migrations.
   *
   * @default - not set
   */
  limits?: GatewayResourceQuantities;
}

/**
 * A toleration of a node taint (core/v1 Toleration).
 *
 * @see https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#scheduling
 */
export interface GatewayTolerationSpec {
  /**
   * Taint key; omitted with `operator: Exists` to tolerate every taint.
   *
   * @default - every key (only with `operator: Exists`)
   */
  key?: string;
  /**
   * `Equal` (key and value match) or `Exists` (the key is present).
   *
   * @default Equal
   */
  operator?: 'Equal' | 'Exists';
  /**
   * Taint value (`Equal` only).
   *
   * @default - empty
   */
  value?: string;
  /**
   * Taint effect to tolerate.
   *
   * @default - every effect
   */
  effect?: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute';
  /**
   * Seconds the pod stays bound after a `NoExecute` taint appears.
   *
   * @default - forever
   */
  tolerationSeconds?: number;
}

/**
 * Customizations of the gateway pods (`spec.gateway.pod` fleet-wide, `spec.clusters[].gateway.pod` per
 * cluster). Per cluster, maps (`labels`, `annotations`) are merged key by key over the fleet's, lists
 * (`imagePullSecrets`, `tolerations`) are appended to the fleet's, and the other fields replace the
 * fleet's value (`mergeGatewayPodOptions` in constructs/gateway/pod-options.ts).
 */
export interface GatewayPodSpec {
  /**
   * Extra labels on every gateway pod (the pod template). The gateway's own selector labels
   * (`app.kubernetes.io/name`, `migrationmesh.dev/gateway-set`, `migrationmesh.dev/gateway-replica`)
   * cannot be overridden.
   *
   * @default - none
   * @see https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-template-v1/
   */
  labels?: { [key: string]: string };
  /**
   * Extra annotations on every gateway pod. `k8s.v1.cni.cncf.io/networks` and
   * `migrationmesh.dev/restart-hash` are the gateway's own and cannot be overridden.
   *
   * @default - none
   */
  annotations?: { [key: string]: string };
  /**
   * Resources of the gateway runtime container (replaces the default as a whole).
   *
   * @default {requests: {cpu: '500m', memory: '256Mi'}, limits: {memory: '1024Mi'}} (no CPU limit)
   */
  resources?: GatewayResourcesSpec;
  /**
   * Image pull policy of every gateway container.
   *
   * @default IfNotPresent
   * @see https://kubernetes.io/docs/concepts/containers/images/#image-pull-policy
   */
  imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /**
   * Secrets (in the gateway namespace) holding registry credentials.
   *
   * @default - none
   * @see https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#containers (imagePullSecrets)
   */
  imagePullSecrets?: string[];
  /**
   * PriorityClass of the gateway pods.
   *
   * @default - none
   * @see https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/
   */
  priorityClassName?: string;
  /**
   * Node taints the gateway pods tolerate (added to `spec.gateway.placement.tolerations`).
   *
   * @default - none
   */
  tolerations?: GatewayTolerationSpec[];
}

/** `metadata.labels`: qualified keys, values of at most 63 characters. */
/**
 * Label keys the output sets itself (selectors, GitOps tracking, the restart hash) or that Kubernetes
 * reserves for its core components: a user label there would silently lose to ours, or break a selector.
 */
const RESERVED_LABEL = /^(migrationmesh\.dev\/|([a-z0-9.-]+\.)?(kubernetes\.io|k8s\.io)\/|app\.kubernetes\.io\/(name|component|managed-by)$)/;
const labelKey = qualifiedKey.refine((k) => !RESERVED_LABEL.test(k) || /^app\.kubernetes\.io\/(?!(name|component|managed-by)$)/.test(k), {
  message: 'is a reserved label key: migrationmesh.dev/ and app.kubernetes.io/name, component and managed-by are set by Migration Mesh, kubernetes.io/ and k8s.io/ are reserved for Kubernetes; use a prefix of your own, e.g. example.org/team',
});
const objectLabelsSchema = z.record(labelKey, labelValue);
const annotationsSchema = z.record(qualifiedKey, z.string());

/** Bytes per unit of the binary suffixes cdk8s-plus-28 can express for memory. */
export const MEMORY_UNITS: Record<string, number> = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4 };
const memoryQuantity = z.string()
  .regex(/^[0-9]+(Ki|Mi|Gi|Ti)$/, { message: 'must be a whole number with a binary suffix such as 256Mi or 1Gi' })
  // only for well-formed quantities: one problem per value
  .refine((q) => !/^[0-9]+(Ki|Mi|Gi|Ti)$/.test(q) || memoryMebibytes(q) !== undefined, { message: 'must be a whole number of MiB (cdk8s-plus-28 writes memory in Mi), e.g. 1024Ki, 256Mi, 1Gi' });
const cpuQuantity = z.string().regex(/^([0-9]+m|[0-9]+(\.[0-9]{1,3})?)$/, { message: 'must be cores (2, 0.5) or millicores (500m)' });

/** A memory quantity in MiB, or undefined when it is not a whole number of MiB. */
export function memoryMebibytes(q: string): number | undefined {
  const m = /^([0-9]+)(Ki|Mi|Gi|Ti)$/.exec(q);
  if (!m) return undefined;
  const mib = (Number(m[1]) * MEMORY_UNITS[m[2]]) / MEMORY_UNITS.Mi;
  return Number.isInteger(mib) ? mib : undefined;
}

const quantities = z.object({ cpu: cpuQuantity.optional(), memory: memoryQuantity.optional() }).strict();

const tolerationSchema = z.object({
  key: qualifiedKey.optional(),
  operator: z.enum(['Equal', 'Exists']).optional(),
  value: z.string().max(63).optional(),
  effect: z.enum(['NoSchedule', 'PreferNoSchedule', 'NoExecute']).optional(),
  tolerationSeconds: z.number().int().min(0).optional(),
}).strict()
  .refine((t) => t.key !== undefined || t.operator === 'Exists', { message: 'a toleration without key must have operator: Exists (it tolerates every taint)' })
  .refine((t) => t.operator !== 'Exists' || t.value === undefined, { message: 'operator: Exists takes no value' })
  .refine((t) => t.tolerationSeconds === undefined || t.effect === 'NoExecute', { message: 'tolerationSeconds needs effect: NoExecute' });

/** Schema of `GatewayPodSpec` (fleet-wide `spec.gateway.pod`, per cluster `spec.clusters[].gateway.pod`). */
const gatewayPodSchema = z.object({
  labels: objectLabelsSchema.optional(),
  annotations: annotationsSchema.optional(),
  resources: z.object({ requests: quantities.optional(), limits: quantities.optional() }).strict().optional(),
  imagePullPolicy: z.enum(['Always', 'IfNotPresent', 'Never']).optional(),
  imagePullSecrets: z.array(dnsSubdomain).optional(),
  priorityClassName: dnsSubdomain.optional(),
  tolerations: z.array(tolerationSchema).optional(),
}).strict();

/** Exact type equality (readonly and optionality included). */
export type TypeEquals<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
/** Fails to compile when the documented interfaces and the schemas disagree. */
export const _sameShape: [
  TypeEquals<z.infer<typeof gatewayPodSchema>, GatewayPodSpec>,
  TypeEquals<z.infer<typeof objectLabelsSchema>, ObjectLabels>,
] = [true, true];

/**
 * The schemas typed by their documented interfaces (checked equal above): embedded in the fleet
 * schema, they make `FleetSpec` name `GatewayPodSpec` and `ObjectLabels`, whose doc comments the editor shows.
 */
export const gatewayPodSpecSchema: z.ZodType<GatewayPodSpec, GatewayPodSpec> = gatewayPodSchema;
export const objectLabelsSpecSchema: z.ZodType<ObjectLabels, ObjectLabels> = objectLabelsSchema;
