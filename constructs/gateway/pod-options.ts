import { Duration, Size } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { GatewayPodSpec, GatewayResourceQuantities, GatewayTolerationSpec, memoryMebibytes } from '../../src/gateway/fleet-pod';

/**
 * What a user may change on every gateway pod, in cdk8s-plus-28 types. Each field is sugar for the
 * `add...`/`set...` method of the same name on `GatewayDeployment` and `MigrationProxy`.
 */
export interface GatewayPodOptions {
  /**
   * Extra labels on the pod template. The gateway's selector labels cannot be overridden.
   *
   * @default - none
   * @see https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-template-v1/
   */
  readonly podLabels?: Record<string, string>;
  /**
   * Extra annotations on the pod template. The Multus selection and the restart hash cannot be overridden.
   *
   * @default - none
   */
  readonly podAnnotations?: Record<string, string>;
  /**
   * Resources of the gateway runtime container. No CPU limit by default: CFS throttling of a data-path
   * proxy stalls migrations.
   *
   * @default {cpu: {request: Cpu.millis(500)}, memory: {request: Size.mebibytes(256), limit: Size.gibibytes(1)}}
   * @see https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#resources
   */
  readonly resources?: kplus.ContainerResources;
  /**
   * Image pull policy of the gateway's own containers (sidecars you add keep their own).
   *
   * @default ImagePullPolicy.IF_NOT_PRESENT
   * @see https://kubernetes.io/docs/concepts/containers/images/#image-pull-policy
   */
  readonly imagePullPolicy?: kplus.ImagePullPolicy;
  /**
   * Secrets with registry credentials (pod `imagePullSecrets`), by name, in the gateway namespace.
   *
   * @default - none
   * @see https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#containers
   */
  readonly imagePullSecrets?: string[];
  /**
   * PriorityClass of the pods (pod `priorityClassName`).
   *
   * @default - none
   * @see https://kubernetes.io/docs/concepts/scheduling-eviction/pod-priority-preemption/
   */
  readonly priorityClassName?: string;
  /**
   * Taints the pods tolerate (pod `tolerations`), e.g. `NodeTaintQuery.exists('dedicated')`.
   *
   * @default - none
   * @see https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#scheduling
   */
  readonly tolerations?: kplus.NodeTaintQuery[];
}

/**
 * Layers of options merged into one (later layers win): maps merged by key, lists appended, the other
 * fields replaced. The fleet file's fleet-wide and per-cluster `gateway.pod` merge by the same rules.
 */
export function mergeGatewayPodOptions(...layers: (GatewayPodOptions | undefined)[]): GatewayPodOptions {
  let out: GatewayPodOptions = {};
  for (const l of layers) {
    if (!l) continue;
    out = {
      podLabels: l.podLabels ? { ...out.podLabels, ...l.podLabels } : out.podLabels,
      podAnnotations: l.podAnnotations ? { ...out.podAnnotations, ...l.podAnnotations } : out.podAnnotations,
      imagePullSecrets: l.imagePullSecrets ? [...(out.imagePullSecrets ?? []), ...l.imagePullSecrets] : out.imagePullSecrets,
      tolerations: l.tolerations ? [...(out.tolerations ?? []), ...l.tolerations] : out.tolerations,
      resources: l.resources ?? out.resources,
      imagePullPolicy: l.imagePullPolicy ?? out.imagePullPolicy,
      priorityClassName: l.priorityClassName ?? out.priorityClassName,
    };
  }
  return out;
}

/** The fleet file's `gateway.pod` section (plain strings) as cdk8s-plus-28 options. */
export function gatewayPodOptionsOf(spec: GatewayPodSpec | undefined): GatewayPodOptions {
  if (!spec) return {};
  return {
    podLabels: spec.labels,
    podAnnotations: spec.annotations,
    resources: spec.resources ? containerResourcesOf(spec.resources.requests, spec.resources.limits) : undefined,
    imagePullPolicy: spec.imagePullPolicy as kplus.ImagePullPolicy | undefined,
    imagePullSecrets: spec.imagePullSecrets,
    priorityClassName: spec.priorityClassName,
    tolerations: spec.tolerations?.map((t, i) => taintQueryOf(t, `tolerations[${i}]`)),
  };
}

function cpuOf(q: string): kplus.Cpu {
  return q.endsWith('m') ? kplus.Cpu.millis(Number(q.slice(0, -1))) : kplus.Cpu.units(Number(q));
}

function memoryOf(q: string): Size {
  const mib = memoryMebibytes(q);
  if (mib === undefined) throw new Error(`memory '${q}' is not a whole number of MiB; write it as e.g. 256Mi or 1Gi`);
  return Size.mebibytes(mib);
}

function containerResourcesOf(requests?: GatewayResourceQuantities, limits?: GatewayResourceQuantities): kplus.ContainerResources {
  const cpu = requests?.cpu || limits?.cpu
    ? { request: requests?.cpu ? cpuOf(requests.cpu) : undefined, limit: limits?.cpu ? cpuOf(limits.cpu) : undefined }
    : undefined;
  const memory = requests?.memory || limits?.memory
    ? { request: requests?.memory ? memoryOf(requests.memory) : undefined, limit: limits?.memory ? memoryOf(limits.memory) : undefined }
    : undefined;
  return { cpu, memory };
}

const EFFECTS: Record<string, kplus.TaintEffect> = {
  NoSchedule: kplus.TaintEffect.NO_SCHEDULE,
  PreferNoSchedule: kplus.TaintEffect.PREFER_NO_SCHEDULE,
  NoExecute: kplus.TaintEffect.NO_EXECUTE,
};

/**
 * A core/v1 Toleration as a cdk8s-plus-28 `NodeTaintQuery`. Every well-formed toleration has one:
 * `Equal` -> `is`, `Exists` with a key -> `exists`, `Exists` without key or effect -> `any`, `Exists`
 * without key but with an effect -> the same query through NodeTaintQuery's constructor.
 */
export function taintQueryOf(t: GatewayTolerationSpec | Record<string, unknown>, field = 'toleration'): kplus.NodeTaintQuery {
  const key = t.key as string | undefined;
  const operator = (t.operator as string | undefined) ?? 'Equal';
  const effectName = t.effect as string | undefined;
  const effect = effectName === undefined ? undefined : EFFECTS[effectName];
  if (effectName !== undefined && effect === undefined) throw new Error(`${field}.effect: '${effectName}' is not a taint effect; use NoSchedule, PreferNoSchedule or NoExecute`);
  const seconds = t.tolerationSeconds as number | undefined;
  if (seconds !== undefined && effect !== kplus.TaintEffect.NO_EXECUTE) throw new Error(`${field}.tolerationSeconds: needs effect NoExecute`);
  const evictAfter = seconds === undefined ? undefined : Duration.seconds(seconds);
  if (operator === 'Exists') {
    if (t.value !== undefined) throw new Error(`${field}.value: operator Exists takes no value; remove it or use operator Equal`);
    if (key !== undefined) return kplus.NodeTaintQuery.exists(key, { effect, evictAfter });
    if (effect === undefined && evictAfter === undefined) return kplus.NodeTaintQuery.any();
    // every taint of one effect: valid Kubernetes, but cdk8s-plus-28's factories cannot say it; its
    // constructor (private in the typings) takes (operator, key, value, effect, evictAfter) as `is`/`exists` pass them
    type QueryCtor = new (op: string, key?: string, value?: string, effect?: kplus.TaintEffect, evictAfter?: Duration) => kplus.NodeTaintQuery;
    const Query = kplus.NodeTaintQuery as unknown as QueryCtor;
    return new Query('Exists', undefined, undefined, effect, evictAfter);
  }
  if (operator !== 'Equal') throw new Error(`${field}.operator: '${operator}' is not Equal or Exists`);
  if (key === undefined) throw new Error(`${field}.key: operator Equal needs a key; add it, or use operator Exists`);
  return kplus.NodeTaintQuery.is(key, (t.value as string | undefined) ?? '', { effect, evictAfter });
}
