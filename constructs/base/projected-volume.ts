import * as kplus from 'cdk8s-plus-28';
import { Construct } from 'constructs';

/**
 * core/v1 ProjectedVolumeSource (several ConfigMaps/Secrets under one directory).
 *
 * @see https://kubernetes.io/docs/concepts/storage/projected-volumes/
 */
export interface ProjectedVolumeSource {
  /**
   * Mode bits of the projected files.
   *
   * @default 0o644 (Kubernetes)
   */
  readonly defaultMode?: number;
  /**
   * The projections, core/v1 shapes but with cdk8s's typed key names (`configMap`, `secret`,
   * `serviceAccountToken`, `downwardApi`): they pass through cdk8s-plus-28's typed serializer, which
   * drops a key it does not know (`downwardAPI` would become an empty source).
   */
  readonly sources: Record<string, unknown>[];
}

/**
 * A cdk8s-plus-28 `Volume` backed by a projected source. cdk8s-plus-28 has no projected volume and its
 * `Volume` constructor is private in the typings, so this calls it as its own `Volume.from...`
 * factories do (`new Volume(scope, id, name, config)`, where `config` is the core/v1 volume source);
 * the result is a real `Volume` that containers mount with `mount()`/`volumeMounts`. Pinned by the
 * gateway tests (the projected volume and its mounts are asserted on the synthesized pod).
 */
export function projectedVolume(scope: Construct, id: string, name: string, projected: ProjectedVolumeSource): kplus.Volume {
  const VolumeCtor = kplus.Volume as unknown as new (s: Construct, i: string, n: string, config: Record<string, unknown>) => kplus.Volume;
  return new VolumeCtor(scope, id, name, { projected });
}
