/**
 * Container image references as the kubelet reads them: `reference.ParseNormalizedNamed` of
 * github.com/distribution/reference (a reference that fails it leaves the pod in `InvalidImageName`,
 * after the API server has accepted it). The grammar (reference.go, regexp.go):
 *
 *   reference        := name [ ":" tag ] [ "@" digest ]
 *   name             := [domain "/"] path-component ["/" path-component]*     (at most 255 characters)
 *   domain           := host [":" port-number]
 *   host             := domain-name | "[" IPv6address "]"
 *   domain-component := /([a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])/
 *   path-component   := /[a-z0-9]+/ (separator /[a-z0-9]+/)*    separator := [_.] | "__" | "-"+
 *   tag              := /[\w][\w.-]{0,127}/
 *   digest           := algorithm ":" hex, and go-digest accepts only sha256 (64), sha384 (96),
 *                       sha512 (128) lowercase hex digits
 *
 * The first component is the registry when it holds a "." or ":", is `localhost`, or has an uppercase
 * letter; otherwise it is part of the path (docker.io). A name of 64 hex digits alone is refused (it is
 * an image id). Pure, no cdk8s import.
 */
import { InvalidPropsError } from './errors';

const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const HOST = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])`;
const DOMAIN = new RegExp(`^${HOST}(?::[0-9]+)?$`);
const PATH_COMPONENT = /^[a-z0-9]+(?:(?:[_.]|__|-+)[a-z0-9]+)*$/;
const TAG = /^\w[\w.-]{0,127}$/;
const DIGEST = /^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}$/;
const DIGEST_HEX: Record<string, number> = { sha256: 64, sha384: 96, sha512: 128 };
const NAME_MAX = 255;

/** Why the kubelet would refuse `ref` as an image reference, or undefined when it parses. */
export function imageReferenceProblem(ref: string): string | undefined {
  if (ref.trim() !== ref) return 'has leading or trailing space (the API server refuses it)';
  if (ref === '') return 'is empty';
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(ref)) return 'starts with a URL scheme; an image reference has none';
  const at = ref.indexOf('@');
  const nameTag = at < 0 ? ref : ref.slice(0, at);
  if (at >= 0) {
    const why = digestProblem(ref.slice(at + 1));
    if (why) return why;
  }
  // the tag is after the last ':' that follows the last '/' (a ':' before it is the registry's port)
  const colon = nameTag.lastIndexOf(':');
  const hasTag = colon > nameTag.lastIndexOf('/') && !nameTag.slice(colon).includes(']');
  const name = hasTag ? nameTag.slice(0, colon) : nameTag;
  if (hasTag && !TAG.test(nameTag.slice(colon + 1))) {
    return `has the tag '${nameTag.slice(colon + 1)}'; a tag is 1-128 letters, digits, "_", "." and "-", not starting with "." or "-"`;
  }
  if (name.length > NAME_MAX) return `has a name of ${name.length} characters; the limit is ${NAME_MAX}`;
  return nameProblem(name);
}

function digestProblem(digest: string): string | undefined {
  if (!DIGEST.test(digest)) return `has the digest '${digest}', which is not algorithm:hex`;
  const [algorithm, hex] = digest.split(':');
  const want = DIGEST_HEX[algorithm];
  if (want === undefined) return `has a digest of algorithm '${algorithm}'; the kubelet knows sha256, sha384 and sha512`;
  if (hex.length !== want || !/^[0-9a-f]+$/.test(hex)) return `has a ${algorithm} digest that is not ${want} lowercase hex digits`;
  return undefined;
}

function nameProblem(name: string): string | undefined {
  if (/^[a-f0-9]{64}$/.test(name)) return 'is 64 hex digits: an image id, which the kubelet does not take as a name';
  const parts = name.split('/');
  const first = parts[0];
  const isDomain = parts.length > 1 && (/[.:]/.test(first) || first === 'localhost' || first.toLowerCase() !== first);
  if (isDomain && !DOMAIN.test(first)) return `has the registry '${first}', which is not a host name (or [IPv6]) with an optional numeric port`;
  const repo = isDomain ? parts.slice(1) : parts;
  if (repo.some((c) => c.toLowerCase() !== c && PATH_COMPONENT.test(c.toLowerCase()))) {
    return `has the repository path '${repo.join('/')}'; it must be lowercase (only the registry host may have capitals)`;
  }
  const bad = repo.find((c) => !PATH_COMPONENT.test(c));
  if (bad !== undefined) {
    return `is not a valid reference: the path component '${bad}' must be lowercase letters and digits, separated by ".", "_", "__" or "-"`;
  }
  return undefined;
}

/**
 * A construct's `image` prop the kubelet could not parse: thrown as `prop-invalid` (the fleet path refuses
 * it earlier, as image-invalid). The API server would take it and the pods would stay in InvalidImageName.
 */
export function refuseImage(image: string, prop = 'image'): void {
  const why = imageReferenceProblem(image);
  if (!why) return;
  throw new InvalidPropsError({
    code: 'prop-invalid', path: prop, message: `${prop} '${image}' ${why}; the kubelet would refuse it (InvalidImageName)`,
    fix: 'give a reference such as ghcr.io/migration-mesh/proxy:0.1.0 or registry/path@sha256:<digest>',
  });
}
