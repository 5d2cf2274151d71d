/**
 * What each KubeVirt version accepts, read in KubeVirt's API types at each release tag
 * (staging/src/kubevirt.io/api/core/v1/types.go, https://github.com/kubevirt/kubevirt/tree/v1.9.0 and the other tags). The API server
 * prunes (or, under strict field validation, rejects) fields its CRD schema lacks, so we never emit a
 * field for a cluster whose declared version does not have it.
 */

export interface KubevirtVersion {
  readonly text: string;
  readonly major: number;
  readonly minor: number;
  readonly patch: number;
  /** Semver build metadata, e.g. `pr17922`. */
  readonly build: readonly string[];
}

export function parseKubevirtVersion(text: string): KubevirtVersion | undefined {
  const m = /^v?(\d+)\.(\d+)(?:\.(\d+))?(?:-[0-9A-Za-z.-]+)?(?:\+([0-9A-Za-z.-]+))?$/.exec(text);
  if (!m) return undefined;
  return { text, major: +m[1], minor: +m[2], patch: m[3] ? +m[3] : 0, build: m[4] ? m[4].split('.') : [] };
}

const atLeast = (v: KubevirtVersion, major: number, minor: number): boolean =>
  v.major > major || (v.major === major && v.minor >= minor);

/** Decentralized live migration (sendTo/receive, sync controller) exists from v1.6.0 (Alpha in 1.6-1.9). */
export const supportsDecentralizedMigration = (v: KubevirtVersion): boolean => atLeast(v, 1, 6);

/**
 * `migrations.decentralizedLiveMigrationDatapath`, `migrations.crossClusterNetwork`,
 * `spec.synchronizationPlacement` and feature gate `CrossClusterMigrationProxy` exist only in the open
 * kubevirt/kubevirt PR #17922. No release carries them (v1.9.0 and main @d923fdb8 lack them), so a
 * cluster must declare a build that does, with semver build metadata `+pr17922`.
 */
export const hasCrossClusterProxyApi = (v: KubevirtVersion): boolean => v.build.includes('pr17922');

/** Migration policy fields and the first version whose KubeVirt CRD has them. */
export const MIGRATION_FIELD_SINCE: Readonly<Record<string, [number, number]>> = {
  maxDowntimeMs: [1, 9],
  utilityVolumesTimeout: [1, 8],
};

export function fieldSupported(v: KubevirtVersion, field: string): boolean {
  const since = MIGRATION_FIELD_SINCE[field];
  return !since || atLeast(v, since[0], since[1]);
}

export const DEFAULT_KUBEVIRT_VERSION = '1.8';
