/**
 * What the API server refuses of any object, checked on every object synthesis emits (issue #39), so that
 * `validate` refuses it instead of `kubectl apply` or the GitOps controller:
 *
 * - annotations: at most 256 KiB in total, the sum over annotations of len(key) + len(value) in bytes
 *   (k8s.io/apimachinery/pkg/api/validation/objectmeta.go, `TotalAnnotationSizeLimitB`), in the object's
 *   metadata and in a workload's pod template (validated as object metadata too);
 * - names: a DNS subdomain of at most 253 characters for every kind; a DNS label of at most 63 for the
 *   kinds whose names must be one (Namespace, Service);
 * - label values at most 63 characters, and a label key's name part too
 *   (k8s.io/apimachinery/pkg/util/validation/validation.go).
 *
 * Pure, no cdk8s import: objects in, problems out (cli/synthesize-fleet.ts runs it per cluster).
 */
import { FleetProblem } from '../base/errors';
import { Manifest } from './manifest';
import { formsWhere } from '../kubevirt/delivery-forms';

/** `TotalAnnotationSizeLimitB`. */
const MAX_ANNOTATION_BYTES = 256 * 1024;
const MAX_SUBDOMAIN = 253;
const MAX_LABEL = 63;
/** Kinds whose names the API server validates as DNS-1123 labels (ValidateNamespaceName, ValidateServiceName). */
const DNS_LABEL_KINDS = new Set(['Namespace', 'Service']);

/** What to do about a large annotation the library itself writes, by key. */
const ANNOTATION_FIX: Record<string, string> = {
  'kubevirt.kubevirt.io/jsonpatch': `HCO's jsonpatch annotation carries kubevirt.existing (kubevirtJsonPatch, customizeComponentsPatches) beside ours: keep only what the cluster really has, or deliver the cluster as ${formsWhere((f) => !f.jsonPatchAnnotation)}`,
};

const bytes = (s: string): number => Buffer.byteLength(s, 'utf8');

interface MetaLike { readonly labels?: Record<string, unknown>; readonly annotations?: Record<string, unknown> }

/** Every limit the object breaks; `at` names it in the output (`(output) <fleet>/<cluster>/<file>`). */
export function apiLimitProblems(o: Manifest, at: string): FleetProblem[] {
  const out: FleetProblem[] = [];
  const kind = String(o?.kind ?? 'object');
  const name = String(o?.metadata?.name ?? '');
  const ns = o?.metadata?.namespace;
  const what = `${kind} ${ns ? `${ns}/` : ''}${name}`;
  const max = DNS_LABEL_KINDS.has(kind) ? MAX_LABEL : MAX_SUBDOMAIN;
  if (name.length > max) {
    out.push({
      code: 'object-name-too-long', path: `${at} metadata.name`,
      message: `the ${kind} name '${name}' has ${name.length} characters; ${max === MAX_LABEL ? `a ${kind} name is a DNS label of at most ${MAX_LABEL}` : `an object name is at most ${MAX_SUBDOMAIN}`}`,
      fix: 'shorten the name (where it is made from fleet names, shorten those)',
    });
  }
  const meta = (m: MetaLike | undefined, field: string): void => {
    if (!m) return;
    for (const [key, value] of Object.entries(m.labels ?? {})) {
      const v = String(value);
      const keyName = key.slice(key.indexOf('/') + 1);
      if (v.length > MAX_LABEL || keyName.length > MAX_LABEL) {
        const part = v.length > MAX_LABEL ? `a value of ${v.length} characters; a label value` : `a name part of ${keyName.length} characters; a label key's name part`;
        out.push({ code: 'object-label-too-long', path: `${at} ${field}.labels`, message: `the ${what} has the label ${key} with ${part} is at most ${MAX_LABEL}`, fix: 'shorten the label (where it is made from fleet names, shorten those)' });
      }
    }
    const entries = Object.entries(m.annotations ?? {}).map(([k, v]) => ({ key: k, size: bytes(k) + bytes(String(v)) }));
    const total = entries.reduce((n, e) => n + e.size, 0);
    if (total > MAX_ANNOTATION_BYTES) {
      const largest = entries.reduce((a, b) => (b.size > a.size ? b : a));
      out.push({
        code: 'object-annotations-too-large', path: `${at} ${field}.annotations`,
        message: `the annotations of ${what}${field === 'metadata' ? '' : ` (${field})`} total ${total} bytes (the largest, ${largest.key}, ${largest.size}); the API server refuses an object whose annotations total more than ${MAX_ANNOTATION_BYTES} bytes (256 KiB)`,
        fix: ANNOTATION_FIX[largest.key] ?? 'make the annotations smaller: keep large data in a ConfigMap\'s data, not in annotations',
      });
    }
  };
  meta(o?.metadata, 'metadata');
  meta(o?.spec?.template?.metadata, 'spec.template.metadata');
  return out;
}
