/**
 * A synthesized Kubernetes manifest: plain JSON of any kind (Deployment, NAD, KubeVirt, Argo CD and
 * Flux objects, ...). Producers fill it, the writer and the rollout order read `kind` and `metadata`,
 * and callers (tests, users post-processing the result) walk the rest freely; no one static type fits
 * every kind, so this is the one place that says `any`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- see above: manifests of every kind
export type Manifest = any;
