/**
 * Kubernetes' own validation of pod placement (nodeSelector, affinity, tolerations), ported as rules
 * (not code) so a placement we render where no API server checks it (a KubeVirt `customizeComponents`
 * patch is only checked to be JSON: kubevirt/kubevirt @d923fdb8
 * pkg/virt-operator/webhooks/kubevirt-update-admitter.go validateCustomizeComponents) is refused by us
 * with the message the API server would give. Rules from kubernetes/kubernetes @000f2605
 * pkg/apis/core/validation/validation.go (ValidateTolerations, ValidateNodeSelector,
 * ValidateNodeSelectorTerm, validateNodeSelectorRequirement, validatePodAffinityTerm,
 * validateWeightedPodAffinityTerms) and k8s.io/apimachinery pkg/util/validation (IsQualifiedName,
 * IsValidLabelValue). Stricter on one point, said here: unknown keys are refused (the API server would
 * prune them from a typed field, and a strategic patch would carry them silently). Pure, no cdk8s import.
 */
import { FleetProblem } from '../base/errors';

const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** apimachinery IsQualifiedName: `[prefix/]name`, name <= 63 of [A-Za-z0-9-_.] alnum at both ends, prefix a DNS-1123 subdomain <= 253. */
function qualifiedNameErrors(value: string): string[] {
  const parts = value.split('/');
  let name = value;
  const errs: string[] = [];
  if (parts.length === 2) {
    const [prefix, n] = parts;
    name = n;
    if (prefix.length === 0) errs.push('prefix part must be non-empty');
    else if (prefix.length > 253 || !DNS1123_SUBDOMAIN.test(prefix)) errs.push('prefix part must be a lowercase DNS-1123 subdomain (at most 253 characters)');
  } else if (parts.length > 2) {
    return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', with an optional DNS subdomain prefix and '/'"];
  }
  if (name.length === 0) errs.push('name part must be non-empty');
  else if (name.length > 63) errs.push('name part must be no more than 63 characters');
  else if (!QUALIFIED_NAME_PART.test(name)) errs.push("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character");
  return errs;
}

/** apimachinery IsValidLabelValue: empty, or <= 63 of [A-Za-z0-9-_.] starting and ending alphanumeric. */
function labelValueErrors(value: string): string[] {
  if (value.length > 63) return ['must be no more than 63 characters'];
  if (value !== '' && !QUALIFIED_NAME_PART.test(value)) return ["a valid label value must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"];
  return [];
}

type Obj = Record<string, unknown>;
const isObj = (x: unknown): x is Obj => typeof x === 'object' && x !== null && !Array.isArray(x);

class Collector {
  readonly list: FleetProblem[] = [];
  add(path: string, message: string, fix: string): void { this.list.push({ code: 'placement-invalid', path, message, fix }); }
  keys(o: Obj, path: string, allowed: string[]): void {
    for (const k of Object.keys(o)) {
      if (!allowed.includes(k)) this.add(`${path}.${k}`, `unknown field '${k}'`, `use only ${allowed.join(', ')} (Kubernetes core/v1)`);
    }
  }
  obj(x: unknown, path: string): Obj | undefined {
    if (isObj(x)) return x;
    this.add(path, 'must be an object', 'see the Kubernetes core/v1 API reference');
    return undefined;
  }
  arr(x: unknown, path: string): unknown[] {
    if (Array.isArray(x)) return x;
    this.add(path, 'must be a list', 'see the Kubernetes core/v1 API reference');
    return [];
  }
  str(x: unknown, path: string): string | undefined {
    if (typeof x === 'string') return x;
    this.add(path, 'must be a string', 'quote the value');
    return undefined;
  }
}

const TAINT_EFFECTS = ['NoSchedule', 'PreferNoSchedule', 'NoExecute'];

/** ValidateTolerations: key a qualified name; empty key needs Exists; Exists needs no value; Equal needs a label value; tolerationSeconds needs NoExecute. */
export function tolerationProblems(tolerations: unknown, path: string): FleetProblem[] {
  const c = new Collector();
  c.arr(tolerations, path).forEach((t, i) => {
    const p = `${path}[${i}]`;
    const o = c.obj(t, p);
    if (!o) return;
    c.keys(o, p, ['key', 'operator', 'value', 'effect', 'tolerationSeconds']);
    const key = o.key === undefined ? '' : c.str(o.key, `${p}.key`) ?? '';
    const op = o.operator === undefined ? '' : c.str(o.operator, `${p}.operator`) ?? '';
    const value = o.value === undefined ? '' : c.str(o.value, `${p}.value`) ?? '';
    const effect = o.effect === undefined ? '' : c.str(o.effect, `${p}.effect`) ?? '';
    if (key) for (const e of qualifiedNameErrors(key)) c.add(`${p}.key`, `'${key}': ${e}`, 'use a label key such as node-role.kubernetes.io/infra');
    if (!key && op !== 'Exists') c.add(`${p}.operator`, 'operator must be Exists when `key` is empty, which means "match all values and all keys"', 'give a key, or use operator: Exists');
    if (o.tolerationSeconds !== undefined && effect !== 'NoExecute') c.add(`${p}.effect`, "effect must be 'NoExecute' when `tolerationSeconds` is set", 'set effect: NoExecute or drop tolerationSeconds');
    if (o.tolerationSeconds !== undefined && !Number.isSafeInteger(o.tolerationSeconds)) c.add(`${p}.tolerationSeconds`, 'must be a whole number (int64)', 'give seconds as an integer');
    if (op === 'Equal' || op === '') {
      for (const e of labelValueErrors(value)) c.add(`${p}.value`, `'${value}': ${e}`, 'use a label value');
    } else if (op === 'Exists') {
      if (value) c.add(`${p}.value`, "value must be empty when `operator` is 'Exists'", 'drop the value, or use operator: Equal');
    } else {
      c.add(`${p}.operator`, `Unsupported value: '${op}': supported values: "Equal", "Exists"`, 'use operator Equal or Exists');
    }
    if (effect && !TAINT_EFFECTS.includes(effect)) c.add(`${p}.effect`, `Unsupported value: '${effect}': supported values: ${TAINT_EFFECTS.map((x) => `"${x}"`).join(', ')}`, 'use one of the taint effects, or leave it empty (all effects)');
  });
  return c.list;
}

/** ValidateLabels on nodeSelector: keys qualified names, values label values. */
export function nodeSelectorMapProblems(sel: unknown, path: string): FleetProblem[] {
  const c = new Collector();
  const o = c.obj(sel, path);
  if (!o) return c.list;
  for (const [k, v] of Object.entries(o)) {
    for (const e of qualifiedNameErrors(k)) c.add(`${path}.${k}`, `key '${k}': ${e}`, 'use a label key such as node-role.kubernetes.io/infra');
    const s = c.str(v, `${path}.${k}`);
    if (s !== undefined) for (const e of labelValueErrors(s)) c.add(`${path}.${k}`, `value '${s}': ${e}`, 'use a label value (empty is allowed)');
  }
  return c.list;
}

function requirementProblems(c: Collector, r: unknown, p: string, fields: boolean): void {
  const o = c.obj(r, p);
  if (!o) return;
  c.keys(o, p, ['key', 'operator', 'values']);
  const key = c.str(o.key, `${p}.key`) ?? '';
  const op = c.str(o.operator, `${p}.operator`) ?? '';
  const values = o.values === undefined ? [] : c.arr(o.values, `${p}.values`);
  if (fields) {
    // validateNodeFieldSelectorRequirement: only metadata.name, In/NotIn with exactly one value
    if (key !== 'metadata.name') c.add(`${p}.key`, `Unsupported value: '${key}': supported values: "metadata.name"`, 'matchFields only selects on metadata.name');
    if (op !== 'In' && op !== 'NotIn') c.add(`${p}.operator`, `Unsupported value: '${op}': supported values: "In", "NotIn"`, 'use In or NotIn');
    else if (values.length !== 1) c.add(`${p}.values`, 'must have one element', 'give exactly one node name');
    return;
  }
  for (const e of qualifiedNameErrors(key)) c.add(`${p}.key`, `'${key}': ${e}`, 'use a label key');
  if (op === 'In' || op === 'NotIn') {
    if (values.length === 0) c.add(`${p}.values`, 'must be specified when `operator` is \'In\' or \'NotIn\'', 'list at least one value');
  } else if (op === 'Exists' || op === 'DoesNotExist') {
    if (values.length > 0) c.add(`${p}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'", 'drop the values');
  } else if (op === 'Gt' || op === 'Lt') {
    if (values.length !== 1) c.add(`${p}.values`, 'must be specified single value when `operator` is \'Lt\' or \'Gt\'', 'give exactly one integer value');
    else if (!/^-?\d+$/.test(String(values[0]))) c.add(`${p}.values[0]`, `'${String(values[0])}' must be an integer`, 'give an integer');
  } else {
    c.add(`${p}.operator`, `'${op}' is not a valid node selector operator`, 'use In, NotIn, Exists, DoesNotExist, Gt or Lt');
  }
  values.forEach((v, j) => c.str(v, `${p}.values[${j}]`));
}

function nodeSelectorTermProblems(c: Collector, t: unknown, p: string): void {
  const o = c.obj(t, p);
  if (!o) return;
  c.keys(o, p, ['matchExpressions', 'matchFields']);
  if (o.matchExpressions !== undefined) c.arr(o.matchExpressions, `${p}.matchExpressions`).forEach((r, i) => requirementProblems(c, r, `${p}.matchExpressions[${i}]`, false));
  if (o.matchFields !== undefined) c.arr(o.matchFields, `${p}.matchFields`).forEach((r, i) => requirementProblems(c, r, `${p}.matchFields[${i}]`, true));
}

function weightProblems(c: Collector, w: unknown, p: string): void {
  if (typeof w !== 'number' || !Number.isInteger(w) || w < 1 || w > 100) c.add(`${p}.weight`, `${JSON.stringify(w)}: must be in the range 1-100`, 'give a weight of 1-100');
}

function labelSelectorProblems(c: Collector, s: unknown, p: string): void {
  const o = c.obj(s, p);
  if (!o) return;
  c.keys(o, p, ['matchLabels', 'matchExpressions']);
  if (o.matchLabels !== undefined) c.list.push(...nodeSelectorMapProblems(o.matchLabels, `${p}.matchLabels`));
  if (o.matchExpressions !== undefined) {
    c.arr(o.matchExpressions, `${p}.matchExpressions`).forEach((r, i) => {
      const rp = `${p}.matchExpressions[${i}]`;
      const ro = c.obj(r, rp);
      if (!ro) return;
      c.keys(ro, rp, ['key', 'operator', 'values']);
      const key = c.str(ro.key, `${rp}.key`) ?? '';
      for (const e of qualifiedNameErrors(key)) c.add(`${rp}.key`, `'${key}': ${e}`, 'use a label key');
      const op = ro.operator;
      const values = ro.values === undefined ? [] : c.arr(ro.values, `${rp}.values`);
      if (op === 'In' || op === 'NotIn') {
        if (values.length === 0) c.add(`${rp}.values`, 'must be specified when `operator` is \'In\' or \'NotIn\'', 'list at least one value');
      } else if (op === 'Exists' || op === 'DoesNotExist') {
        if (values.length) c.add(`${rp}.values`, "may not be specified when `operator` is 'Exists' or 'DoesNotExist'", 'drop the values');
      } else {
        c.add(`${rp}.operator`, `'${String(op)}' is not a valid label selector operator`, 'use In, NotIn, Exists or DoesNotExist');
      }
    });
  }
}

const POD_TERM_KEYS = ['labelSelector', 'namespaces', 'topologyKey', 'namespaceSelector', 'matchLabelKeys', 'mismatchLabelKeys'];

function podAffinityTermProblems(c: Collector, t: unknown, p: string): void {
  const o = c.obj(t, p);
  if (!o) return;
  c.keys(o, p, POD_TERM_KEYS);
  const tk = o.topologyKey === undefined ? '' : c.str(o.topologyKey, `${p}.topologyKey`) ?? '';
  if (!tk) c.add(`${p}.topologyKey`, 'can not be empty', 'use e.g. kubernetes.io/hostname');
  else for (const e of qualifiedNameErrors(tk)) c.add(`${p}.topologyKey`, `'${tk}': ${e}`, 'use a label key');
  if (o.labelSelector !== undefined) labelSelectorProblems(c, o.labelSelector, `${p}.labelSelector`);
  if (o.namespaceSelector !== undefined) labelSelectorProblems(c, o.namespaceSelector, `${p}.namespaceSelector`);
  const nsOk = (n: unknown) => typeof n === 'string' && n.length <= 63 && /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(n);
  if (o.namespaces !== undefined) {
    c.arr(o.namespaces, `${p}.namespaces`).forEach((n, i) => {
      if (!nsOk(n)) c.add(`${p}.namespaces[${i}]`, `${JSON.stringify(n)} is not a namespace name (DNS-1123 label)`, 'give a namespace name');
    });
  }
}

function podAffinityProblems(c: Collector, a: unknown, p: string): void {
  const o = c.obj(a, p);
  if (!o) return;
  c.keys(o, p, ['requiredDuringSchedulingIgnoredDuringExecution', 'preferredDuringSchedulingIgnoredDuringExecution']);
  const req = o.requiredDuringSchedulingIgnoredDuringExecution;
  if (req !== undefined) c.arr(req, `${p}.requiredDuringSchedulingIgnoredDuringExecution`).forEach((t, i) => podAffinityTermProblems(c, t, `${p}.requiredDuringSchedulingIgnoredDuringExecution[${i}]`));
  weightedTermsProblems(c, o.preferredDuringSchedulingIgnoredDuringExecution, p, 'podAffinityTerm', podAffinityTermProblems);
}

function nodeAffinityProblems(c: Collector, a: unknown, p: string): void {
  const o = c.obj(a, p);
  if (!o) return;
  c.keys(o, p, ['requiredDuringSchedulingIgnoredDuringExecution', 'preferredDuringSchedulingIgnoredDuringExecution']);
  const req = o.requiredDuringSchedulingIgnoredDuringExecution;
  if (req !== undefined) {
    const rp = `${p}.requiredDuringSchedulingIgnoredDuringExecution`;
    const ro = c.obj(req, rp);
    if (ro) {
      c.keys(ro, rp, ['nodeSelectorTerms']);
      const terms = ro.nodeSelectorTerms === undefined ? [] : c.arr(ro.nodeSelectorTerms, `${rp}.nodeSelectorTerms`);
      if (terms.length === 0) c.add(`${rp}.nodeSelectorTerms`, 'must have at least one node selector term', 'give a term, or drop requiredDuringSchedulingIgnoredDuringExecution');
      terms.forEach((t, i) => nodeSelectorTermProblems(c, t, `${rp}.nodeSelectorTerms[${i}]`));
    }
  }
  weightedTermsProblems(c, o.preferredDuringSchedulingIgnoredDuringExecution, p, 'preference', nodeSelectorTermProblems);
}

/** `preferredDuringSchedulingIgnoredDuringExecution`: a list of {weight, <term>}, the same walk for node and pod affinity. */
function weightedTermsProblems(c: Collector, pref: unknown, p: string, termKey: string,
  termProblems: (c: Collector, t: unknown, path: string) => void): void {
  if (pref === undefined) return;
  c.arr(pref, `${p}.preferredDuringSchedulingIgnoredDuringExecution`).forEach((w, i) => {
    const wp = `${p}.preferredDuringSchedulingIgnoredDuringExecution[${i}]`;
    const wo = c.obj(w, wp);
    if (!wo) return;
    c.keys(wo, wp, ['weight', termKey]);
    weightProblems(c, wo.weight, wp);
    termProblems(c, wo[termKey], `${wp}.${termKey}`);
  });
}

/** validateAffinity: node affinity, pod affinity, pod anti-affinity. */
export function affinityProblems(affinity: unknown, path: string): FleetProblem[] {
  const c = new Collector();
  const o = c.obj(affinity, path);
  if (!o) return c.list;
  c.keys(o, path, ['nodeAffinity', 'podAffinity', 'podAntiAffinity']);
  if (o.nodeAffinity !== undefined) nodeAffinityProblems(c, o.nodeAffinity, `${path}.nodeAffinity`);
  if (o.podAffinity !== undefined) podAffinityProblems(c, o.podAffinity, `${path}.podAffinity`);
  if (o.podAntiAffinity !== undefined) podAffinityProblems(c, o.podAntiAffinity, `${path}.podAntiAffinity`);
  return c.list;
}

/** A `{nodeSelector, affinity, tolerations}` placement, as KubeVirt's NodePlacement and a pod spec carry it. */
export function placementProblems(p: { nodeSelector?: unknown; affinity?: unknown; tolerations?: unknown }, path: string): FleetProblem[] {
  return [
    ...(p.nodeSelector !== undefined ? nodeSelectorMapProblems(p.nodeSelector, `${path}.nodeSelector`) : []),
    ...(p.affinity !== undefined ? affinityProblems(p.affinity, `${path}.affinity`) : []),
    ...(p.tolerations !== undefined ? tolerationProblems(p.tolerations, `${path}.tolerations`) : []),
  ];
}
