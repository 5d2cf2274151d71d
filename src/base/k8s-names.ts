/**
 * Kubernetes' name and label forms as zod schemas (apimachinery's validation: IsQualifiedName, IsValidLabelValue,
 * IsDNS1123Subdomain), for every fleet field that ends up as a label key, label value or object name. Pure.
 */
import { z } from 'zod';

const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/** A label or annotation key: `name` or `prefix/name` (a DNS subdomain prefix). */
export const qualifiedKey = z.string().max(316).regex(QUALIFIED_NAME, { message: 'must be a qualified name such as team or example.com/team (Kubernetes label/annotation key)' });
/** A label value: at most 63 of [A-Za-z0-9_.-], starting and ending alphanumeric, or empty. */
export const labelValue = z.string().max(63).regex(LABEL_VALUE, { message: 'must be a label value: at most 63 of [A-Za-z0-9_.-], starting and ending alphanumeric' });
/** An object name most kinds take: a DNS-1123 subdomain. */
export const dnsSubdomain = z.string().max(253).regex(DNS1123_SUBDOMAIN, { message: 'must be a DNS-1123 subdomain (lowercase letters, digits, "-" and ".")' });
/** A label selector's matchLabels (or a nodeSelector): qualified keys, label values. */
export const matchLabels = z.record(qualifiedKey, labelValue);
