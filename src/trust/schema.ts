/**
 * The fleet's `spec.trust` section: KubeVirt CA rotation settings that let a pushed peer CA stay in
 * `kubevirt-ca`, and the gateways' continuous CA exchange (docs/trust.md). Structure only; the rules
 * that relate fields (KubeVirt's, HCO's and ours) live in trust.ts. Pure zod, no cdk8s import.
 */
import { z } from 'zod';

/** A Go duration as `metav1.Duration` parses it (`168h`, `1h30m`, `90s`). */
const goDuration = z.string().regex(/^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$/, {
  message: 'must be a Go duration such as 168h, 96h or 1h30m',
});

/** KubeVirt `CertConfig`: lifetime and how long before its end the replacement is issued. */
const certConfigSchema = z.object({
  /** Lifetime of each certificate (`duration`). */
  duration: goDuration.optional(),
  /** Issue the replacement this long before `notAfter` (`renewBefore`). For the CA it is also the overlap window. */
  renewBefore: goDuration.optional(),
}).strict();

/** `spec.certificateRotateStrategy.selfSigned` of the KubeVirt CR (`spec.certConfig` in HCO). */
export const rotationSchema = z.object({
  /**
   * KubeVirt CA. `renewBefore` must be at least half of `duration`, so a peer CA pushed into
   * `kubevirt-external-ca` survives virt-operator's merge (docs/trust.md).
   * @default {duration: 168h, renewBefore: 96h} (a new CA every 72h, old and peer CAs kept 96h)
   */
  ca: certConfigSchema.optional(),
  /**
   * Leaf certificates (virt-handler, sync controller, ...).
   * @default {duration: 24h, renewBefore: 12h}
   */
  server: certConfigSchema.optional(),
}).strict();

export const trustSchema = z.object({
  /**
   * Manage cross-cluster trust at all. `false` is the opt-out: no rotation settings are emitted and no
   * trust container runs (every other key of the section is then ignored). Without `spec.trust` the
   * fleet still manages trust for its gateway clusters when there are two or more (docs/trust.md).
   * @default true
   */
  enabled: z.boolean().optional(),
  /**
   * KubeVirt certificate rotation for every cluster. Changing a duration makes virt-operator rotate
   * that certificate at once (and a CA change reissues every leaf certificate).
   * @default - see `rotationSchema`
   */
  rotation: rotationSchema.optional(),
  /**
   * Per-cluster rotation overrides, by cluster name (e.g. a cluster that must keep HCO's 48h/24h).
   * @default - none
   */
  clusters: z.record(z.string(), rotationSchema).optional(),
  /** The gateways' CA exchange (gateway-mode clusters). */
  exchange: z.object({
    /** Run the trust container beside each gateway and exchange CA bundles. @default true */
    enabled: z.boolean().optional(),
    /**
     * Re-publish each cluster's CA bundle to every peer this often, besides publishing within seconds
     * of a change (watch). At most 1/100 of the shortest CA rotation period in the fleet.
     * @default 5m
     */
    repushInterval: goDuration.optional(),
  }).strict().optional(),
}).strict();

export type TrustSpec = z.infer<typeof trustSchema>;
export type RotationSpec = z.infer<typeof rotationSchema>;
