/**
 * The gateway image named by tag only (issue 49): a tag is a pointer the registry lets anyone with push rights move,
 * so a fleet whose Deployments say `proxy:0.1.0` runs whatever bytes the tag names when a node pulls it (a new
 * node, an evicted pod), not the image that was reviewed and tested, and two replicas can run different ones.
 * Pinned, the reference is `repo@sha256:<digest>` or `repo:tag@sha256:<digest>` (the kubelet pulls by the digest;
 * the tag stays for people), and the generated Deployments carry it exactly as given.
 *
 * A warning, not a refusal: a lab or development fleet follows a moving tag on purpose, and says so with
 * `spec.environment: lab`. Every other fleet is taken as production (the default). Pure, no cdk8s import.
 */
import type { FleetProblem } from '../base/errors';

/** What the check reads from the fleet. */
export interface GatewayImageUse {
  /** The resolved image (`spec.gateway.image` or the library's default). */
  readonly image: string;
  /** Whether `spec.gateway.image` was set (the message then says the default was taken). */
  readonly given: boolean;
  /** `spec.environment` (default production). */
  readonly environment: 'production' | 'lab';
  /** The clusters whose output runs the image (gateway and trust containers), in plan order. */
  readonly clusters: readonly string[];
}

/** Whether a (kubelet-valid) image reference carries a digest. */
const hasDigest = (image: string): boolean => image.includes('@');

/** The `gateway-image-tag-only` warning, or none (lab fleet, pinned image, or no cluster runs the image). */
export function gatewayImageWarnings(u: GatewayImageUse): FleetProblem[] {
  if (u.environment === 'lab' || u.clusters.length === 0 || hasDigest(u.image)) return [];
  const what = u.given ? `spec.gateway.image '${u.image}'` : `spec.gateway.image is not set, so the default '${u.image}'`;
  const who = u.clusters.length > 3 ? `${u.clusters.slice(0, 3).join(', ')} and ${u.clusters.length - 3} more` : u.clusters.join(', ');
  return [{
    code: 'gateway-image-tag-only', path: 'spec.gateway.image',
    message: `${what} names the gateway image by tag only: the registry can move a tag, so the gateway and trust containers of ${who} `
      + 'run whatever the tag names when a node pulls it, not the image that was tested, and replicas may differ',
    fix: `name it by digest: image: ${u.image}@sha256:<digest> (the digest: skopeo inspect --format '{{.Digest}}' docker://${u.image}, `
      + `or crane digest ${u.image}, or docker buildx imagetools inspect ${u.image}); a lab or development fleet that follows the tag on purpose sets spec.environment: lab`,
  }];
}
