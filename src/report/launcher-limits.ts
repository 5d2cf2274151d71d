/**
 * The capacity check's LimitRange part: the virt-launcher pod KubeVirt would create for the VM on the target,
 * container by container, judged as the API server's LimitRanger admission plugin judges a pod. Pure.
 *
 * The pod (KubeVirt v1.8.4, pkg/virt-controller/services/template.go and serialconsolelog.go,
 * https://github.com/kubevirt/kubevirt/blob/v1.8.4/pkg/virt-controller/services/template.go):
 * - `compute`: requests = the VM's requests plus the memory overhead (readiness.ts memoryOverhead); limits = the
 *   VM's `domain.resources.limits`, memory plus the same overhead (renderresources.go WithMemoryOverhead); no
 *   limit where the VM sets none;
 * - `guest-console-log`, an init container with restartPolicy Always (a sidecar: it counts into the pod's sum),
 *   unless the VM sets `autoattachSerialConsole: false` or `logSerialConsole: false`, or the KubeVirt CR sets
 *   `virtualMachineOptions.disableSerialConsoleLog` (and the VM does not set `logSerialConsole: true`): requests
 *   5m CPU and 35M memory, limits 15m and 60M, each replaced by the CR's `supportContainerResources` entry of type
 *   `guest-console-log`.
 * Not modelled (a VM moved by decentralized live migration has PVC disks): containerDisk containers and their
 * `container-disk-binary` init container, kernel boot, virtiofs and hook sidecar containers; a dedicated-CPU or
 * Guaranteed VM's console container (requests raised to its limits); KubeVirt's automatic CPU and memory limits
 * from namespace labels and quotas; resources other than CPU and memory.
 *
 * LimitRanger (Kubernetes v1.34, plugin/pkg/admission/limitranger/admission.go,
 * https://github.com/kubernetes/kubernetes/blob/v1.34.2/plugin/pkg/admission/limitranger/admission.go): a stored
 * Container item has `default` filled from `max` and `defaultRequest` from `default`, then `min`
 * (SetDefaults_LimitRangeItem, pkg/apis/core/v1/defaults.go; applied here too, for facts not read from an API
 * server); every LimitRange of the namespace first fills each container's missing limits and requests from its
 * Container item (a container's own values win; the LimitRanges in name order), then pod validation refuses a
 * request above its limit, then each item is checked: `Container` items against every container (init and
 * sidecar ones too), `Pod` items against the pod's sum (containers plus sidecars, the larger of that and any
 * plain init container), each with `min` (a request is needed, and it and any limit at least min), `max` (a
 * limit is needed, and it and any request at most max) and `maxLimitRequestRatio` (limit / request at most it).
 * A model of that plugin (it runs inside the API server, not on facts): test/readiness.real.test.ts (phase 3) creates
 * the pod modelled here in a real kube-apiserver under the same LimitRange and gets the refusals this file gives.
 */
import { KubevirtSide, LimitItemFacts, LimitRangeFacts, Resources, VmNeeds } from './readiness-facts';

type R = Partial<Resources>;

type Key = keyof Resources;
const KEYS: readonly Key[] = ['cpuMilli', 'memoryBytes'];
const NAME: Record<Key, string> = { cpuMilli: 'cpu', memoryBytes: 'memory' };

/** One container of the virt-launcher pod: what it requests and limits (absent: not set). */
export interface LauncherContainer {
  readonly name: string;
  /** An init container with restartPolicy Always (KubeVirt's guest-console-log): counted into the pod's sum. */
  readonly sidecar: boolean;
  readonly requests: R;
  readonly limits: R;
}

/** A refusal: which LimitRange and item, and what the API server would say. */
export interface LimitRefusal {
  readonly limitRange: string;
  /** `spec.limits[i]` of the item, or the defaulting that made a request exceed its limit. */
  readonly item: string;
  readonly type: string;
  readonly message: string;
  /** The field to change: `spec.limits[i].max.memory`. */
  readonly field: string;
}

const Mi = 1024 * 1024;
const fmtQuantity = (k: Key, v: number) => (k === 'cpuMilli' ? `${v}m` : v % Mi === 0 ? `${v / Mi}Mi` : `${v}`);

/** SetDefaults_LimitRangeItem: a Container item's default from max, defaultRequest from default, then min. */
function defaultedItem(i: LimitItemFacts): LimitItemFacts {
  if (i.type !== 'Container') return i;
  const def = { ...i.max, ...i.default };
  return { ...i, default: def, defaultRequest: { ...i.min, ...def, ...i.defaultRequest } };
}

/** A container after the defaults, and which LimitRange item gave each limit it did not set itself. */
type Defaulted = LauncherContainer & { readonly limitFrom: Partial<Record<Key, { limitRange: string; index: number }>> };

/** The containers after every LimitRange's Container defaults (a container's own values win; first LimitRange first). */
function withDefaults(containers: readonly LauncherContainer[], ranges: readonly LimitRangeFacts[]): Defaulted[] {
  return containers.map((c) => {
    const requests: Partial<Record<Key, number>> = { ...c.requests };
    const limits: Partial<Record<Key, number>> = { ...c.limits };
    const limitFrom: Defaulted['limitFrom'] = {};
    for (const lr of ranges) {
      lr.items.forEach((raw, index) => {
        if (raw.type !== 'Container') return;
        const item = defaultedItem(raw);
        for (const k of KEYS) {
          if (limits[k] === undefined && item.default[k] !== undefined) { limits[k] = item.default[k]; limitFrom[k] = { limitRange: lr.name, index }; }
          if (requests[k] === undefined && item.defaultRequest[k] !== undefined) requests[k] = item.defaultRequest[k];
        }
      });
    }
    return { ...c, requests, limits, limitFrom };
  });
}

/** The pod's requests or limits as LimitRanger sums them: containers and sidecars (no plain init containers here). */
function podSum(cs: readonly LauncherContainer[], of: 'requests' | 'limits'): R {
  const out: Partial<Record<Key, number>> = {};
  for (const c of cs) for (const k of KEYS) if (c[of][k] !== undefined) out[k] = (out[k] ?? 0) + c[of][k]!;
  return out;
}

/** minConstraint, maxConstraint and limitRequestRatioConstraint of one item against one set of requests and limits. */
function itemErrors(item: LimitItemFacts, req: R, lim: R): { key: Key; field: 'min' | 'max' | 'maxLimitRequestRatio'; text: string }[] {
  const out: { key: Key; field: 'min' | 'max' | 'maxLimitRequestRatio'; text: string }[] = [];
  const per = `per ${item.type}`;
  for (const k of KEYS) {
    const [r, l, min, max, ratio] = [req[k], lim[k], item.min[k], item.max[k], item.maxLimitRequestRatio[k]];
    const q = (v: number) => fmtQuantity(k, v);
    if (min !== undefined) {
      if (r === undefined) out.push({ key: k, field: 'min', text: `minimum ${NAME[k]} usage ${per} is ${q(min)}. No request is specified` });
      else if (r < min) out.push({ key: k, field: 'min', text: `minimum ${NAME[k]} usage ${per} is ${q(min)}, but request is ${q(r)}` });
      else if (l !== undefined && l < min) out.push({ key: k, field: 'min', text: `minimum ${NAME[k]} usage ${per} is ${q(min)}, but limit is ${q(l)}` });
    }
    if (max !== undefined) {
      if (l === undefined) out.push({ key: k, field: 'max', text: `maximum ${NAME[k]} usage ${per} is ${q(max)}. No limit is specified` });
      else if (l > max) out.push({ key: k, field: 'max', text: `maximum ${NAME[k]} usage ${per} is ${q(max)}, but limit is ${q(l)}` });
      else if (r !== undefined && r > max) out.push({ key: k, field: 'max', text: `maximum ${NAME[k]} usage ${per} is ${q(max)}, but request is ${q(r)}` });
    }
    if (ratio !== undefined) {
      if (!r) out.push({ key: k, field: 'maxLimitRequestRatio', text: `${NAME[k]} max limit to request ratio ${per} is ${ratio}, but no request is specified or request is 0` });
      else if (!l) out.push({ key: k, field: 'maxLimitRequestRatio', text: `${NAME[k]} max limit to request ratio ${per} is ${ratio}, but no limit is specified or limit is 0` });
      else if (l / r > ratio) out.push({ key: k, field: 'maxLimitRequestRatio', text: `${NAME[k]} max limit to request ratio ${per} is ${ratio}, but provided ratio is ${(l / r).toFixed(6)}` });
    }
  }
  return out;
}

/** Every refusal of the namespace's LimitRanges for these containers, as the API server would refuse the pod. */
export function limitRangeRefusals(containers: readonly LauncherContainer[], ranges: readonly LimitRangeFacts[]): LimitRefusal[] {
  const sorted = [...ranges].sort((a, b) => a.name.localeCompare(b.name));
  const cs = withDefaults(containers, sorted);
  const out: LimitRefusal[] = [];
  // pod validation after the defaults: a request above the limit a LimitRange's default set
  for (const c of cs) {
    for (const k of KEYS) {
      const [r, l, from] = [c.requests[k], c.limits[k], c.limitFrom[k]];
      if (r === undefined || l === undefined || r <= l || !from) continue;
      out.push({ limitRange: from.limitRange, item: `spec.limits[${from.index}]`, type: 'Container', field: `spec.limits[${from.index}].default.${NAME[k]}`,
        message: `container ${c.name}: its ${NAME[k]} request ${fmtQuantity(k, r)} is above the limit ${fmtQuantity(k, l)} the LimitRange's default gives it (the pod is invalid)` });
    }
  }
  for (const lr of sorted) {
    lr.items.forEach((raw, i) => {
      const item = defaultedItem(raw);
      const judged = item.type === 'Container' ? cs.map((c) => ({ who: `container ${c.name}`, req: c.requests, lim: c.limits }))
        : item.type === 'Pod' ? [{ who: 'the pod', req: podSum(cs, 'requests'), lim: podSum(cs, 'limits') }] : [];
      for (const j of judged) {
        for (const e of itemErrors(item, j.req, j.lim)) {
          out.push({ limitRange: lr.name, item: `spec.limits[${i}]`, type: item.type, field: `spec.limits[${i}].${e.field}.${NAME[e.key]}`, message: `${j.who}: ${e.text}` });
        }
      }
    });
  }
  return out;
}

/** KubeVirt's guest-console-log container (serialconsolelog.go resourcesForSerialConsoleLogContainer): 5m/35M requested, 15m/60M limit. */
const CONSOLE_LOG = { requests: { cpuMilli: 5, memoryBytes: 35_000_000 }, limits: { cpuMilli: 15, memoryBytes: 60_000_000 } };

/**
 * The virt-launcher pod's containers for `vm` on a target whose KubeVirt CR is `kv`: `compute` with `requests`
 * (the VM's plus the overhead) and the VM's limits (memory plus `overhead`), and guest-console-log unless off.
 */
export function launcherContainers(vm: VmNeeds, kv: KubevirtSide, requests: Resources, overhead: number): LauncherContainer[] {
  const limits: R = {
    ...(vm.limits.cpuMilli !== undefined ? { cpuMilli: vm.limits.cpuMilli } : {}),
    ...(vm.limits.memoryBytes !== undefined ? { memoryBytes: vm.limits.memoryBytes + overhead } : {}),
  };
  const compute: LauncherContainer = { name: 'compute', sidecar: false, requests: { ...requests }, limits };
  if (!(vm.serialConsoleLog ?? !kv.serialConsoleLogDisabled)) return [compute];
  return [compute, {
    name: 'guest-console-log', sidecar: true,
    requests: { ...CONSOLE_LOG.requests, ...kv.guestConsoleLog?.requests }, limits: { ...CONSOLE_LOG.limits, ...kv.guestConsoleLog?.limits },
  }];
}
