/**
 * The fleet description: one zod schema, the single source of truth for the YAML/JSON file format and
 * for the TypeScript props (types are inferred from it). Structural checks live here; checks that
 * relate several fields (overlaps, capacity, versions) live in resolve.ts and the phases it runs
 * (shared-network.ts, clusters.ts). No cdk8s import.
 *
 * Over 400 lines on purpose: this file is the fleet format a user reads top to bottom (docs/fleet.md links here),
 * so every field and its documented default stays in one place; parts owned by one domain already live
 * with it (gateway/fleet-pod, forklift/schema, trust/schema, kubevirt/existing) and are imported.
 */
import { z } from 'zod';
import { gatewayPodSpecSchema, objectLabelsSpecSchema } from '../gateway/fleet-pod';
import { forkliftSchema } from '../forklift/schema';
import { trustSchema } from '../trust/schema';
import { existingKubevirtSchema } from '../kubevirt/existing';
import { DELIVERY_FORM_NAMES, DeliveryForm } from '../kubevirt/delivery-forms';
import { DATAPATH_NAMES } from './datapath-modes';
import { imageReferenceProblem } from '../base/image-reference';
import { ovnKubernetesSchema, vmNetworkDeletionSchema, vmNetworkSchema } from '../vmnet/schema';

export const FLEET_API_VERSION = 'migrationmesh.dev/v1alpha1';
export const FLEET_KIND = 'Fleet';

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
/** Linux interface names: IFNAMSIZ 16 including the NUL. */
const MAX_IFNAME = 15;

const dnsLabel = z.string()
  .max(63, { message: 'must be at most 63 characters (a DNS-1123 label)' })
  .regex(DNS1123_LABEL, { message: 'must be a DNS-1123 label: lowercase letters, digits and "-", starting and ending with a letter or digit' });

const ifName = z.string().min(1)
  .max(MAX_IFNAME, { message: `must be at most ${MAX_IFNAME} characters (Linux IFNAMSIZ)` })
  .regex(/^[^\s/:]+$/, { message: 'must not contain spaces, "/" or ":"' });

const mtu = z.number().int({ message: 'must be a whole number' })
  .min(576, { message: 'must be at least 576 (IPv4 minimum datagram; IPv6 needs 1280)' })
  .max(9216, { message: 'must be at most 9216 (largest jumbo frame NICs commonly accept)' });

// ---- image references (issue #23): the kubelet's grammar, src/base/image-reference.ts ----
const imageReference = z.string().superRefine((ref, ctx) => {
  const why = imageReferenceProblem(ref);
  if (why) {
    ctx.addIssue({ code: 'custom', message: `'${ref}' ${why}; the kubelet would refuse it (InvalidImageName) and the gateway pods would never start`,
      params: { code: 'image-invalid', fix: 'write registry/path:tag or registry/path@sha256:<digest>, lowercase path, e.g. ghcr.io/migration-mesh/proxy:0.1.0' } });
  }
});

/** Kubernetes quantity, e.g. `1Gi`, `500Mi`, `64M`. */
const quantity = z.string().regex(/^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|k|M|G|T|P|E)?$/, { message: 'must be a Kubernetes quantity such as 1Gi or 500Mi' });

/** How a pod attaches to a physical or virtual network: the CNI main plugin and its keys. */
const attachmentSchema = z.discriminatedUnion('type', [
  z.object({
    type: z.literal('macvlan'),
    /** Host interface the macvlan sits on. */
    master: ifName,
    /** @default bridge */
    mode: z.enum(['bridge', 'private', 'vepa', 'passthru']).optional(),
    mtu: mtu.optional(),
  }).strict(),
  z.object({
    type: z.literal('bridge'),
    /** Linux bridge on every node. */
    bridge: ifName,
    /** 802.1Q VLAN id tagged on the pod's bridge port. */
    vlan: z.number().int().min(1, { message: 'must be 1-4094 (802.1Q)' }).max(4094, { message: 'must be 1-4094 (802.1Q)' }).optional(),
    mtu: mtu.optional(),
  }).strict(),
  z.object({
    type: z.literal('ipvlan'),
    master: ifName,
    /** @default l2 */
    mode: z.enum(['l2', 'l3', 'l3s']).optional(),
    mtu: mtu.optional(),
  }).strict(),
  z.object({
    type: z.literal('host-device'),
    /** Host NIC moved into the pod (one pod per node can hold it). */
    device: ifName,
  }).strict(),
]);
export type Attachment = z.infer<typeof attachmentSchema>;

const routeSchema = z.object({ dst: z.string(), gw: z.string() }).strict();

const placementSchema = z.object({
  nodeSelector: z.record(z.string(), z.string()).optional(),
  /** core/v1 Affinity, passed through. */
  affinity: z.record(z.string(), z.unknown()).optional(),
  /** core/v1 Toleration list, passed through. */
  tolerations: z.array(z.record(z.string(), z.unknown())).optional(),
}).strict();
export type Placement = z.infer<typeof placementSchema>;

const syncControllersSchema = z.object({
  /** virt-synchronization-controller replicas, and only those (a customizeComponents patch; never `spec.infra.replicas`). @default 2 */
  replicas: z.number().int().min(1).max(255).optional(),
  /**
   * `controlPlane` (KubeVirt's default), `workers` (off the control plane), or an explicit placement.
   * @default controlPlane
   */
  placement: z.union([z.literal('controlPlane'), z.literal('workers'), placementSchema]).optional(),
}).strict();

const kubevirtSchema = z.object({
  /** Namespace KubeVirt is installed in (the NADs go there). @default kubevirt (kubevirt-hyperconverged for hco: src/kubevirt/delivery-forms.ts) */
  namespace: dnsLabel.optional(),
  /** KubeVirt version, `1.8`, `v1.9.0`; `+pr17922` marks a build carrying the cross-cluster proxy. @default 1.8 */
  version: z.string().regex(/^v?\d+\.\d+(\.\d+)?(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$/, { message: 'must look like 1.8, v1.9.0 or 1.9.0+pr17922' }).optional(),
  /** How the KubeVirt configuration is delivered: a form of src/kubevirt/delivery-forms.ts. @default kubevirt-cr */
  configDelivery: z.enum(DELIVERY_FORM_NAMES).optional(),
  /** Name of the KubeVirt (or HyperConverged) object. @default kubevirt (kubevirt-hyperconverged for hco) */
  name: dnsLabel.optional(),
  /**
   * What the cluster's KubeVirt already has in the lists our object owns whole (feature gates,
   * customizeComponents patches, HCO's jsonpatch annotation); the output carries the union. Fleet-wide
   * and per-cluster lists are joined. See docs/field-ownership.md.
   * @default - none
   */
  existing: existingKubevirtSchema.optional(),
  /**
   * KubeVirt feature gates to turn off (`developerConfiguration.disabledFeatureGates`), e.g.
   * `[LibvirtHooksServerAndClient]` on KubeVirt 1.9 (the mitigation for kubevirt PR #18526). Names must
   * be gates the capability table knows for the cluster's version, neither GA nor enabled by us or
   * `existing.featureGates`. A per-cluster list replaces the fleet's. HCO: see docs/field-ownership.md.
   * @default - none
   */
  disabledFeatureGates: z.array(z.string().regex(/^[A-Za-z0-9]+$/, { message: 'must be a KubeVirt feature gate name such as LibvirtHooksServerAndClient' })).optional(),
  // ---- issue #29: the product and its own version (src/kubevirt/capabilities.ts) ----
  /** The virtualization product: `kubevirt`, `openshift-virtualization` (HCO) or `harvester`. @default kubevirt */
  product: z.enum(['kubevirt', 'openshift-virtualization', 'harvester']).optional(),
  /**
   * The product's own version, e.g. OpenShift Virtualization `4.21.1`; selects the capability rows
   * (`migration-mesh plan` shows them). For `kubevirt` the KubeVirt `version` is used. A version the
   * table does not know is refused (the error lists the known ones); a newer minor is warned.
   * @default - none (no product-specific row applies)
   */
  // checked against the capability table in resolve (`unknown-product-version`, which lists the known versions)
  productVersion: z.string().optional(),
}).strict();

const migrationPolicySchema = z.object({
  bandwidthPerMigration: quantity.optional(),
  parallelMigrationsPerCluster: z.number().int().min(1).optional(),
  parallelOutboundMigrationsPerNode: z.number().int().min(1).optional(),
  completionTimeoutPerGiB: z.number().int().min(1).optional(),
  progressTimeout: z.number().int().min(1).optional(),
  maxDowntimeMs: z.number().int().min(1).max(2_000_000).optional(),
  allowAutoConverge: z.boolean().optional(),
  allowPostCopy: z.boolean().optional(),
  allowWorkloadDisruption: z.boolean().optional(),
  disableTLS: z.boolean().optional(),
  /**
   * Compress migration data (`zstd` on libvirt's multifd channels; KubeVirt 1.9+, refused for older
   * clusters). KubeVirt has the field only in `MigrationPolicy` (`spec.experimental.compression`), not
   * in the KubeVirt CR, so each cluster gets one MigrationPolicy that selects every VMI (docs/compression.md).
   * @default - not set (no MigrationPolicy; KubeVirt does not compress)
   */
  compression: z.enum(['none', 'zstd']).optional(),
  /**
   * Settings for cross-cluster moves (issue 51): how much bandwidth the path between two clusters gives
   * migrations. Each move that names its VM's `vmiLabels` gets a MigrationPolicy on its target cluster whose
   * `bandwidthPerMigration`, `completionTimeoutPerGiB`, auto-converge and post-copy follow from it
   * (src/forklift/move-policy.ts; docs/migrations.md), and `validate` warns about moves that cannot finish
   * within the timeout they get. Not written into the KubeVirt CR.
   * @default - not set (moves get the clusters' own migration settings; no finish-time check)
   */
  crossCluster: z.object({
    /**
     * Bytes per second that the migrations between two clusters may take on the path between them (the
     * inter-site link, or the gateways' budget), a quantity such as `125M` (1 Gbit/s) or `1Gi`.
     */
    bandwidth: quantity,
    /**
     * Let KubeVirt throttle the guest's vCPUs until its memory converges over the slower path.
     * @default true
     */
    allowAutoConverge: z.boolean().optional(),
    /**
     * Let a migration that does not converge switch to post-copy: the VM then runs on the target while its
     * memory still arrives, and a break of the path between the clusters loses the VM. Off unless you accept that.
     * @default false
     */
    allowPostCopy: z.boolean().optional(),
  }).strict().optional(),
}).strict();

// ---- sites (issue #24): one block, so other schema edits merge cleanly ----

/** The shared network at one site: its own subnet(s), its router to the other sites, its attachment and MTU. */
const siteSchema = z.object({
  /** Site name, as clusters name it in `site`. */
  name: dnsLabel,
  /** This site's part of the shared network: any mix of CIDRs, `a-b` ranges and single addresses, all in one subnet. */
  pool: z.array(z.string()).min(1, { message: 'must list at least one CIDR, range or address' }),
  /** Addresses inside the site's pool that must never be assigned. @default - none */
  exclude: z.array(z.string()).optional(),
  /** Prefix length of the site's subnet as configured on each interface. */
  prefixLength: z.number().int().min(1).max(128),
  /**
   * The site's router on its subnet (outside the pool): the next hop of every route to the other sites'
   * subnets (a VRRP address where the site has redundant routers). Needed when the fleet has 2+ sites.
   * @default - none (a single site needs no router)
   */
  router: z.string().optional(),
  /** This site's attachment (master, bridge, VLAN may differ per site). @default spec.crossClusterNetwork.attachment */
  attachment: attachmentSchema.optional(),
  /** MTU of the site's shared network (set on its attachment). @default - the attachment's own mtu, else the plugin default */
  mtu: mtu.optional(),
}).strict();
export type SiteSpec = z.infer<typeof siteSchema>;

const crossClusterNetworkSchema = z.object({
  /** NAD name of the shared cross-cluster network. @default lm-crosscluster */
  name: dnsLabel.optional(),
  attachment: attachmentSchema,
  /**
   * The shared network of a fleet spread over sites (data centres), each its own subnet joined by
   * routers; every cluster names its `site`. Give either `sites` or `addresses`.
   * @default - one site: `addresses`
   */
  sites: z.array(siteSchema).min(1, { message: 'must list at least one site' }).optional(),
  /** The shared network of a fleet on one subnet. Required unless `sites` is given. */
  addresses: z.object({
    /** Any mix of CIDRs, `a-b` ranges and single addresses. */
    pool: z.array(z.string()).min(1, { message: 'must list at least one CIDR, range or address' }),
    /** Addresses inside the pool that must never be assigned. */
    exclude: z.array(z.string()).optional(),
    /** Prefix length of the shared subnet as configured on each interface. */
    prefixLength: z.number().int().min(1).max(128),
    /** Router on the shared network, if it is routed (subtracted from usable addresses). */
    gateway: z.string().optional(),
    /** Static routes for the cross-cluster interface (e.g. to other sites' subnets via `gateway`). */
    routes: z.array(routeSchema).optional(),
  }).strict().optional(),
}).strict();

const migrationNetworkSchema = z.object({
  /** NAD name of the in-cluster migration network (`migrations.network`). @default lm-migration */
  name: dnsLabel.optional(),
  attachment: attachmentSchema,
  /** Per-cluster CIDRs are carved from this supernet when a cluster gives none. */
  supernet: z.string().optional(),
  /** Prefix length of each carved per-cluster CIDR. @default 24 (IPv4), 64 (IPv6) */
  clusterPrefixLength: z.number().int().min(1).max(128).optional(),
}).strict();

/** One pair of sites or of clusters and its budget (`spec.gateway.bandwidth.sites[]`, `.clusters[]`). */
const gatewayBandwidthPairSchema = z.object({
  /** The two sites (or clusters), in either order: `[fra, ams]` is also `[ams, fra]`. One site twice, `[fra, fra]`, is the pair within that site. */
  between: z.tuple([dnsLabel, dnsLabel]),
  /** Bytes per second each of the pair's gateways may send toward the other, a quantity such as `125M`. */
  bandwidth: quantity,
}).strict();
export type GatewayBandwidthPair = z.infer<typeof gatewayBandwidthPairSchema>;

/** `spec.gateway.bandwidth`: one quantity for every pair of clusters, or the budgets per pair. */
const gatewayBandwidthSchema = z.union([quantity, z.object({
  /** The budget of every pair of clusters without one of its own (below). @default - none (such pairs have no budget) */
  default: quantity.optional(),
  /**
   * Per pair of sites (`spec.crossClusterNetwork.sites`): every pair of gateway clusters, one in each site, or both
   * in the site for `[site, site]`. Refused in a fleet without sites. Overrides `default`. @default - none
   */
  sites: z.array(gatewayBandwidthPairSchema).optional(),
  /** Per pair of gateway clusters. Overrides their sites' pair and `default`. @default - none */
  clusters: z.array(gatewayBandwidthPairSchema).optional(),
}).strict()]);
export type GatewayBandwidthSpec = z.infer<typeof gatewayBandwidthSchema>;

const gatewaySchema = z.object({
  /** Gateway replicas per cluster: each holds one static address on each network. @default 2 */
  replicas: z.number().int().min(1).max(16).optional(),
  /**
   * Gateway container image (also the trust container's): a reference the kubelet can parse, e.g.
   * `registry.example.com:5000/mm/proxy:0.1.0` or `...@sha256:<64 hex>` (docs/errors.md, `image-invalid`).
   * Name it by digest (`repo@sha256:<digest>` or `repo:tag@sha256:<digest>`): the Deployments carry it as
   * given, and validate warns about a tag-only image unless `spec.environment` is `lab` (`gateway-image-tag-only`).
   * @default ghcr.io/migration-mesh/proxy:0.1.0
   */
  image: imageReference.optional(),
  /** TCP port of the tunnel listener on the cross-cluster network. @default 15443 */
  tunnelPort: z.number().int().min(1).max(65535).optional(),
  placement: placementSchema.optional(),
  /**
   * mTLS material: cert-manager issuer (default) or an existing Secret per cluster. `{plaintext: true}`
   * (trusted networks only) authenticates nobody, so the gateways' CA exchange must then be off
   * (`spec.trust.exchange.enabled: false`; validate refuses it otherwise: trust/exchange-without-mtls).
   */
  tls: z.union([
    z.object({ issuerRef: z.object({ name: z.string().min(1), kind: z.enum(['Issuer', 'ClusterIssuer']).optional() }).strict() }).strict(),
    z.object({ secretName: dnsLabel }).strict(),
    z.object({ plaintext: z.literal(true) }).strict(),
  ]).optional(),
  /**
   * How the tunnel carries migration traffic once both gateways are authenticated (mutual TLS, fleet CA, exact
   * identity, the tunnel header and the terminus' policy, in both modes). `splice`: the payload, already
   * KubeVirt's own mutual TLS, is spliced in the kernel without a second encryption (about 3x the bandwidth of
   * `tls`); allowed only while KubeVirt's migration TLS is on (`migrationPolicy.disableTLS` not true). `tls`: the
   * payload is encrypted again inside the gateways' TLS. Ignored with `tls.plaintext`.
   * @default splice (tls when migrationPolicy.disableTLS is true)
   */
  payload: z.enum(['splice', 'tls']).optional(),
  /**
   * Bandwidth budgets between clusters: the bytes per second a gateway may send toward a peer cluster over the shared
   * network, summed over all its tunnels to that peer and shared fairly between them (docs/gateway.md, "Bandwidth
   * budgets"). A Kubernetes quantity in bytes per second like KubeVirt's `bandwidthPerMigration`, e.g. `125M`
   * (1 Gbit/s) or `1Gi`: one for every pair of clusters, or `{default, sites, clusters}` per pair of sites or of
   * clusters (a cluster pair overrides its sites' pair, which overrides `default`). A pair's budget holds in each
   * direction: each of its gateways enforces it on what it sends toward the other (unprivileged, no tc), in tls.mode
   * plaintext and with payload splice; payload tls (tls.mode mtls) is refused with it (`gateway-bandwidth-needs-splice`).
   * validate warns when a budget cannot carry `parallelMigrationsPerCluster` migrations at `bandwidthPerMigration`
   * (`gateway-bandwidth-below-migrations`).
   * @default - none (no budget)
   */
  bandwidth: gatewayBandwidthSchema.optional(),
  /** Emit a Prometheus Operator ServiceMonitor. @default false */
  serviceMonitor: z.boolean().optional(),
  /**
   * Emit a Prometheus Operator PrometheusRule with the gateway's alerts beside the ServiceMonitor (runbook:
   * docs/alerts.md). `true` without a ServiceMonitor is allowed when you scrape the gateways yourself
   * (the rules expect job `migration-mesh-gateway-metrics`).
   * @default the value of serviceMonitor
   */
  alerts: z.boolean().optional(),
  /**
   * Failover between a cluster's gateway replicas. `vip` (used only where a cluster has 2 or more
   * replicas): one more in-cluster address, held by one replica at a time through VRRP (a keepalived
   * sidecar), is the next hop of the handlers' routes, so losing a replica moves the next hop to
   * another within seconds. `none`: routes point at replica 0 and the other replicas only serve
   * tunnels arriving from other clusters.
   */
  failover: z.object({
    /** @default vip */
    mode: z.enum(['vip', 'none']).optional(),
    /** VRRP virtual router id, unique on each in-cluster migration network segment. @default 51 */
    virtualRouterId: z.number().int().min(1).max(255).optional(),
  }).strict().optional(),
  /** Gateway pod customizations (labels, annotations, resources, pull policy and secrets, priority, tolerations). @default - none */
  pod: gatewayPodSpecSchema.optional(),
}).strict();

/** Argo CD wiring: one ApplicationSet, one Application per cluster (see docs/gitops.md). */
const argocdSchema = z.object({
  /** Namespace Argo CD runs in (the ApplicationSet goes there). @default argocd */
  namespace: dnsLabel.optional(),
  /** Argo CD project of the generated Applications. @default default */
  project: dnsLabel.optional(),
  /**
   * API server URL per cluster (`destination.server`). When given it must list every cluster.
   * @default - `destination.name: <cluster>`: register each cluster in Argo CD under its fleet name
   */
  clusterServers: z.record(z.string(), z.string().regex(/^https?:\/\/\S+$/, { message: 'must be an API server URL such as https://10.0.0.1:6443' })).optional(),
  /** Sync automatically (with prune and self-heal). @default true */
  automated: z.boolean().optional(),
}).strict();

/** Flux wiring: per cluster, one Kustomization per rollout stage, chained with dependsOn. */
const fluxSchema = z.object({
  /** The Flux source holding the synthesized tree (e.g. a GitRepository). */
  sourceRef: z.object({
    /** @default GitRepository */
    kind: z.enum(['GitRepository', 'OCIRepository', 'Bucket', 'ExternalArtifact']).optional(),
    name: dnsLabel,
    /** @default - the Kustomizations' namespace */
    namespace: dnsLabel.optional(),
  }).strict(),
  /** Namespace of the generated Kustomizations (on the management cluster). @default flux-system */
  namespace: dnsLabel.optional(),
  /**
   * Reconcile interval: a positive duration as the Flux CRD takes it (digits with ms, s, m or h: `10m`,
   * `1h30m`), within Go's time.Duration; checked in src/delivery/gitops.ts (`gitops-duration`).
   * @default 10m
   */
  interval: z.string().optional(),
  /** How long a stage may take to become Ready (the gateway stage waits for its Deployments); same form as `interval`. @default 5m */
  timeout: z.string().optional(),
  /**
   * How soon a stage that failed (or ran past `timeout`) is tried again; same form as `interval`. Flux's own default
   * is `interval`: a gateway slower than `timeout` would then hold every later stage for up to `interval` more after
   * its pods are Ready (seen on the real kustomize-controller, test/flux.real.test.ts).
   * @default 1m
   */
  retryInterval: z.string().optional(),
  /**
   * Secret (in `namespace`) with the kubeconfig of each cluster, per cluster name.
   * @default `<cluster>-kubeconfig` (the Cluster API convention, key `value`)
   */
  kubeConfigSecrets: z.record(z.string(), dnsLabel).optional(),
  /** Apply to the cluster Flux runs in (no kubeConfig), for a Flux installed in every cluster. @default false */
  inCluster: z.boolean().optional(),
}).strict();

/** Optional GitOps delivery of the synthesized tree (written to `<out>/<fleet>/_gitops/`). */
const gitopsSchema = z.object({
  /** Git repository holding the synthesized tree (needed for Argo CD). */
  repoURL: z.string().min(1).optional(),
  /** Branch, tag or commit. @default HEAD */
  targetRevision: z.string().min(1).optional(),
  /** Path of this fleet's output inside the repository. @default dist/<fleet> */
  path: z.string().min(1).optional(),
  argocd: argocdSchema.optional(),
  flux: fluxSchema.optional(),
}).strict();

/** Deliver this cluster's migration network through Harvester's own `vm-migration-network` setting. */
const harvesterSchema = z.object({
  /** Harvester ClusterNetwork carrying the migration VLAN (its bridge is `<clusterNetwork>-br`). */
  clusterNetwork: dnsLabel,
  /** VLAN id on that cluster network (0 = untagged). @default the shared network attachment's vlan, else 0 */
  vlan: z.number().int().min(0).max(4094, { message: 'must be 0-4094 (Harvester rejects larger VLAN ids)' }).optional(),
}).strict();

/**
 * Network policies a cluster already enforces that would drop the fleet's paths (issue #29, docs/network-policies.md).
 * When declared, the mesh emits exactly the allow-policies the fleet's flows need.
 */
const networkPoliciesSchema = z.object({
  /**
   * `kubevirt`: KubeVirt's optional `kubevirt-network-policies.yaml` (or HCO's bundled copy) is applied:
   * virt-handler is isolated for ingress and egress, the sync controller for ingress. `default-deny`: every
   * pod of KubeVirt's, the gateway's and the trust agent's namespaces is isolated both ways, on the pod
   * network and (with `multiNetworkPolicy: true`) on the secondary networks. `none`: nothing is emitted.
   * @default none
   */
  installed: z.enum(['none', 'kubevirt', 'default-deny']),
  /**
   * API server endpoints (CIDRs of the endpoint addresses, not the service IP) the gateway and trust agents
   * reach to exchange CAs under `default-deny`.
   * @default - TCP 443 and 6443 to any address
   */
  apiServerCidrs: z.array(z.string()).optional(),
}).strict();

const clusterSchema = z.object({
  name: dnsLabel,
  /** The site (`spec.crossClusterNetwork.sites[].name`) the cluster is in. @default - the only site */
  site: dnsLabel.optional(),
  /** Nodes running virt-handler (one migration address each in direct mode). */
  nodes: z.number().int().min(1, { message: 'must be at least 1' }).max(100_000),
  datapath: z.enum(DATAPATH_NAMES).optional(),
  kubevirt: kubevirtSchema.optional(),
  syncControllers: syncControllersSchema.optional(),
  migrationNetwork: z.object({
    /** This cluster's in-cluster migration CIDR (else carved from the supernet). */
    cidr: z.string().optional(),
    attachment: attachmentSchema.optional(),
    /** In-cluster addresses never to hand out. */
    exclude: z.array(z.string()).optional(),
  }).strict().optional(),
  gateway: z.object({
    replicas: z.number().int().min(1).max(16).optional(),
    /** This cluster's gateway pod customizations, merged over `spec.gateway.pod`. @default - none */
    pod: gatewayPodSpecSchema.optional(),
  }).strict().optional(),
  /** Labels on every object of this cluster's output, merged over `spec.labels`. @default - none */
  labels: objectLabelsSpecSchema.optional(),
  /** Declared pod network CIDR(s), checked for overlap. */
  podCidrs: z.array(z.string()).optional(),
  /** Declared service CIDR(s), checked for overlap. */
  serviceCidrs: z.array(z.string()).optional(),
  /** Policies this cluster enforces (replaces `spec.networkPolicies` whole). @default - `spec.networkPolicies` */
  networkPolicies: networkPoliciesSchema.optional(),
  /** The cluster runs the multi-networkpolicy controller (a MultiNetworkPolicy is emitted). @default false */
  multiNetworkPolicy: z.boolean().optional(),
  /**
   * The cluster is OpenShift (OCP/OKD): the gateway gets an SCC allowing exactly what its pods need, and
   * a Role binding its ServiceAccount to it (docs/gateway.md, "OpenShift").
   * @default true with configDelivery hco, else false
   */
  openshift: z.boolean().optional(),
  /**
   * The cluster is Harvester: emit the `vm-migration-network` Setting instead of a NAD and KubeVirt patch
   * (direct datapath only). `nodes` counts non-witness nodes.
   * @default - not Harvester
   */
  harvester: harvesterSchema.optional(),
  /** What the cluster's OVN-Kubernetes can do, read by `spec.vmNetworks` checks (docs/vm-networks.md). @default - derived from the product */
  ovnKubernetes: ovnKubernetesSchema.optional(),
}).strict();

export const fleetSpecSchema = z.object({
  /**
   * What the fleet is for. `production`: validate warns about what a production fleet should not do (a gateway
   * image named by tag only, `gateway-image-tag-only`). `lab`: a test or development fleet that follows moving
   * tags on purpose; those warnings are left out. Nothing generated differs.
   * @default production
   */
  environment: z.enum(['production', 'lab']).optional(),
  /** @default gateway */
  datapath: z.enum(DATAPATH_NAMES).optional(),
  kubevirt: kubevirtSchema.optional(),
  migrationPolicy: migrationPolicySchema.optional(),
  crossClusterNetwork: crossClusterNetworkSchema,
  migrationNetwork: migrationNetworkSchema.optional(),
  gateway: gatewaySchema.optional(),
  syncControllers: syncControllersSchema.optional(),
  /** Policies every cluster enforces, unless it declares its own (docs/network-policies.md). @default {installed: none} */
  networkPolicies: networkPoliciesSchema.optional(),
  /** Addresses held back per cluster for rollout surge and terminating pods. @default 2 */
  addressSurge: z.number().int().min(0).max(1000).optional(),
  clusters: z.array(clusterSchema).min(1, { message: 'must list at least one cluster' }),
  /** Argo CD / Flux wiring for the synthesized tree. @default - none */
  gitops: gitopsSchema.optional(),
  /** Labels on every object of every cluster's output. @default - none */
  labels: objectLabelsSpecSchema.optional(),
  /** Forklift (MTV) as the orchestrator of cross-cluster live migrations (docs/migrations.md). @default - none */
  forklift: forkliftSchema.optional(),
  /**
   * KubeVirt CA rotation and the gateways' CA exchange (docs/trust.md). `{enabled: false}` opts out.
   * @default - managed for the gateway clusters (rotation 168h/96h + exchange) when there are two or more
   * (also with migrationPolicy.disableTLS: the sync channel is mTLS regardless); nothing for native/direct clusters
   */
  trust: trustSchema.optional(),
  /** What the operators of the running fleet get beside the mesh (docs/status.md). @default - nothing */
  operatorView: z.object({
    /** Emit the read-only ClusterRole `migration-mesh-status` that `migration-mesh status` needs, in every cluster's output. @default false */
    statusClusterRole: z.boolean().optional(),
    /** Emit the gateway's Grafana dashboard in a ConfigMap labelled `grafana_dashboard: "1"` (gateway clusters). @default false */
    dashboard: z.boolean().optional(),
    /** Namespace of the dashboard ConfigMap (where your Grafana sidecar looks). @default - the gateway namespace */
    dashboardNamespace: dnsLabel.optional(),
  }).strict().optional(),
  /**
   * VM networks that keep a VM's address across clusters: primary Layer2 and secondary localnet
   * ClusterUserDefinedNetworks, their subnets split by the ledger (docs/vm-networks.md, src/vmnet/schema.ts).
   * @default - none
   */
  vmNetworks: z.array(vmNetworkSchema).optional(),
  /**
   * What may be deleted under running VMs, said explicitly (issue 50 item 2): a VM network removed from
   * `vmNetworks` (`{network}`), or served no more on some clusters (`{network, clusters}`, with
   * `clusters.<name>.served: false`). Without an entry, an edit that would delete a network's
   * ClusterUserDefinedNetwork, NodeNetworkConfigurationPolicy or guards is refused (`vmnet-would-delete`).
   * @default - none
   */
  vmNetworkDeletions: z.array(vmNetworkDeletionSchema).optional(),
}).strict();

export const fleetDocumentSchema = z.object({
  apiVersion: z.literal(FLEET_API_VERSION, { message: `must be ${FLEET_API_VERSION}` }),
  kind: z.literal(FLEET_KIND, { message: `must be ${FLEET_KIND}` }),
  metadata: z.object({ name: dnsLabel }).strict(),
  spec: fleetSpecSchema,
}).strict();

export type FleetSpec = z.infer<typeof fleetSpecSchema>;
export type FleetDocument = z.infer<typeof fleetDocumentSchema>;
export type ClusterSpec = z.infer<typeof clusterSchema>;
/** A datapath mode (src/fleet/datapath-modes.ts): the schema's enums are the registry's keys. */
export type { Datapath } from './datapath-modes';
/** A delivery form (src/kubevirt/delivery-forms.ts): the schema's enum is the registry's keys. */
export type ConfigDelivery = DeliveryForm;
export type SyncPlacement = NonNullable<z.infer<typeof syncControllersSchema>['placement']>;
export type GitopsSpec = z.infer<typeof gitopsSchema>;

export type HarvesterSpec = z.infer<typeof harvesterSchema>;
