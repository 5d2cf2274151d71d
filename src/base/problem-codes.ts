/**
 * Every problem code, what it means and where it comes from: the single list behind the `code` of each
 * `FleetProblem` (a code not listed here does not type-check) and behind docs/errors.md (generated
 * from it by `npm run docs:errors`; a test fails when the file is stale or a code is never raised).
 * Codes are stable: rename or reuse one only with a note in the changelog.
 */

interface CodeInfo {
  /** Where in the pipeline the problem is found. */
  readonly stage: 'parse' | 'validate' | 'plan' | 'deliver' | 'moves' | 'props' | 'write' | 'status';
  /** What the problem means, one line. */
  readonly meaning: string;
}

export const PROBLEM_CODES = {
  // ---- reading the fleet file ----
  'yaml-syntax': { stage: 'parse', meaning: 'The fleet file is not valid YAML; the path names line and column.' },
  'schema-invalid': { stage: 'parse', meaning: 'A field has the wrong type or a value the fleet schema refuses (range, pattern, length).' },
  'unknown-field': { stage: 'parse', meaning: 'A field the fleet format does not have (often a typo); the API server would prune it.' },
  'unknown-attachment-type': { stage: 'parse', meaning: 'An attachment type other than macvlan, bridge, ipvlan or host-device.' },
  'file-unreadable': { stage: 'parse', meaning: 'An input file cannot be read: missing, no permission, a directory or a socket.' },
  'file-too-large': { stage: 'parse', meaning: 'An input larger than 4 MiB (refused before it is parsed): a regular file from its size, before it is read; a device, FIFO or pipe once 4 MiB + 1 byte have come (/dev/zero).' },
  'file-stalled': { stage: 'parse', meaning: 'A FIFO, pipe or device given as an input that sent nothing within 3 s (no writer), went silent for 30 s without closing, or was still sending after 120 s.' },
  'file-encoding': { stage: 'parse', meaning: 'An input that is not UTF-8 text (UTF-16 from some editors, binary).' },
  'file-empty': { stage: 'parse', meaning: 'An input with no YAML document (empty, or only comments).' },
  'yaml-multi-document': { stage: 'parse', meaning: 'An input with several YAML documents (---); one file holds one fleet, ledger or moves document.' },
  'yaml-aliases': { stage: 'parse', meaning: 'An input expanding YAML aliases more than 100 times (an alias bomb); refused whole.' },
  'yaml-too-deep': { stage: 'parse', meaning: 'An input nesting maps and lists more than 64 deep.' },
  'ledger-syntax': { stage: 'parse', meaning: 'The address ledger is not valid YAML.' },
  'ledger-malformed': { stage: 'parse', meaning: 'The address ledger does not have the ledger format.' },
  // ---- addresses and CIDRs ----
  'address-syntax': { stage: 'validate', meaning: 'Not an address, an a-b range or a CIDR (pool, exclusion, router, route next hop).' },
  'cidr-syntax': { stage: 'validate', meaning: 'Not a CIDR, or a prefix longer than the address allows.' },
  'cidr-host-bits': { stage: 'validate', meaning: 'A CIDR with host bits set; the fix names the masked network address.' },
  'cidr-overlap': { stage: 'validate', meaning: 'Two ranges that must be disjoint overlap (migration CIDRs, pool, pod/service CIDRs, supernet).' },
  'family-mismatch': { stage: 'validate', meaning: 'IPv4 and IPv6 mixed where one family is needed.' },
  'pool-overlap': { stage: 'validate', meaning: 'Two entries of the cross-cluster pool overlap.' },
  'exclude-outside-pool': { stage: 'validate', meaning: 'An exclusion that is not inside the pool (or the cluster CIDR) it excludes from.' },
  'exclude-overlap': { stage: 'validate', meaning: 'Two exclusions overlap.' },
  'prefix-too-long': { stage: 'validate', meaning: 'A prefix length longer than the address family allows, or one that leaves no room for hosts.' },
  'prefix-too-short': { stage: 'validate', meaning: 'A per-cluster prefix length shorter than the supernet it is carved from.' },
  'router-outside-subnet': { stage: 'validate', meaning: 'The shared network router is outside every subnet of the pool.' },
  'pool-spans-subnets': { stage: 'validate', meaning: 'The pool spans several subnets (routes cannot join them: declare one site per subnet).' },
  'route-off-link': { stage: 'validate', meaning: 'A route whose next hop is not on the shared subnet (the kernel refuses it: "Nexthop has invalid gateway").' },
  // ---- sites (one subnet per data centre, joined by routers) ----
  'shared-network-missing': { stage: 'validate', meaning: 'The shared network gives neither addresses nor sites, or both.' },
  'duplicate-site-name': { stage: 'validate', meaning: 'Two sites with one name.' },
  'site-overlap': { stage: 'validate', meaning: 'Two sites whose subnets overlap (routed sites need disjoint subnets).' },
  'site-router-missing': { stage: 'validate', meaning: 'A site of a fleet with two or more sites has no router.' },
  'router-in-pool': { stage: 'validate', meaning: 'A site router inside a pool (the planner would give it to a member).' },
  'site-mtu-mismatch': { stage: 'validate', meaning: 'Sites (or a site and its attachment) with different MTUs: the smallest MTU on a path bounds the tunnel.' },
  'site-unknown': { stage: 'validate', meaning: 'A cluster in a site the fleet does not declare, or in no site of a fleet with several.' },
  'site-empty': { stage: 'validate', meaning: 'A declared site with no cluster in it.' },
  'harvester-routes-unsupported': { stage: 'deliver', meaning: 'A Harvester cluster whose handlers need routes (a fleet across sites, or addresses.routes): the vm-migration-network setting cannot carry them.' },
  'network-not-dialable': { stage: 'validate', meaning: 'A pool, supernet or migration CIDR in a range the gateway refuses to dial (its own list in proxy/src/config.ts: link-local, loopback, multicast, "this network", ...).' },
  'gateway-port-conflict': { stage: 'validate', meaning: 'spec.gateway.tunnelPort equal to a port the gateway pod already listens on (intercept 15001, admin 15090).' },
  'mtu-too-small': { stage: 'validate', meaning: 'An MTU below the IPv6 minimum of 1280 on an IPv6 network.' },
  'image-invalid': { stage: 'validate', meaning: 'spec.gateway.image is not a reference the kubelet can parse (distribution/reference: lowercase path, tag, digest, registry host and port); the pods would stay in InvalidImageName.' },
  // ---- gateway tunnel ----
  'splice-without-kubevirt-tls': { stage: 'validate', meaning: "spec.gateway.payload: splice while migrationPolicy.disableTLS is true: VM memory would cross the shared network in clear." },
  'splice-without-mtls': { stage: 'validate', meaning: 'spec.gateway.payload: splice with a plaintext tunnel (splice authenticates the gateways with mutual TLS).' },
  // ---- clusters and versions ----
  'duplicate-cluster-name': { stage: 'validate', meaning: 'Two clusters with one name.' },
  'duplicate-fleet-name': { stage: 'validate', meaning: 'Two fleet files given together with one metadata.name (their output directories would collide).' },
  'kubevirt-too-old': { stage: 'validate', meaning: 'A KubeVirt version without decentralized live migration (before 1.6).' },
  'native-needs-pr17922': { stage: 'validate', meaning: 'Native datapath on a KubeVirt version without the PR #17922 fields.' },
  'kubevirt-cn-skew': { stage: 'validate', meaning: 'Direct-mode clusters mix KubeVirt older than 1.7 with 1.7 or later: their migration client certificate CN types differ.' },
  'migration-field-unsupported': { stage: 'validate', meaning: 'A migration policy field the cluster\'s KubeVirt version does not have.' },
  'unknown-product-version': { stage: 'validate', meaning: 'A product/version the capability table does not know (another major, before the product had cross-cluster migration, or not a version); the fix lists the known ones.' },
  'product-version-newer': { stage: 'validate', meaning: 'Warning: a newer minor than the capability table knows for the product; its later facts are not checked (shown by validate, synth and plan).' },
  'unknown-feature-gate': { stage: 'validate', meaning: 'A disabledFeatureGates name the capability table does not know for the cluster\'s KubeVirt version (a typo disables nothing).' },
  'feature-gate-ga': { stage: 'validate', meaning: 'A disabledFeatureGates entry that is GA in the cluster\'s KubeVirt version: KubeVirt ignores disabling it.' },
  'feature-gate-conflict': { stage: 'validate', meaning: 'A gate both enabled (by the fleet or kubevirt.existing.featureGates) and disabled: KubeVirt\'s admitter refuses it.' },
  'compression-unsupported': { stage: 'validate', meaning: 'migrationPolicy.compression for a cluster whose KubeVirt predates 1.9 (MigrationPolicy spec.experimental.compression, capability table).' },
  'network-policy-vrrp': { stage: 'validate', meaning: 'A gateway cluster with a VIP (VRRP failover) declares a default-deny on its secondary networks: VRRP cannot be allowed by any (Multi)NetworkPolicy.' },
  'migration-network-fallback': { stage: 'validate', meaning: 'The fleet would set KubeVirt\'s proposed migrations.allowMigrationNetworkFallback (PR #16940): migration traffic on the pod network when the migration network breaks; refused for security.' },
  'existing-kubevirt-invalid': { stage: 'validate', meaning: 'kubevirt.existing patches that are not JSON, jsonpatch operations for a cluster not delivered through HCO, or so many that the HCO annotation would pass the API server\'s 256 KiB limit.' },
  'migration-network-missing': { stage: 'validate', meaning: 'Gateway or native mode without an in-cluster migration attachment or CIDR.' },
  'migration-field-out-of-range': { stage: 'validate', meaning: 'A migration policy value that does not fit KubeVirt\'s Go type (virt-operator could not decode the CR).' },
  'placement-invalid': { stage: 'validate', meaning: 'A nodeSelector, affinity or toleration Kubernetes validation would refuse.' },
  // ---- capacity ----
  'cidr-too-small': { stage: 'validate', meaning: 'An in-cluster CIDR (explicit, carved or from the ledger) too small for nodes + sync controllers + gateways + surge.' },
  'pool-too-small': { stage: 'validate', meaning: 'The cross-cluster pool holds fewer usable addresses than the fleet needs in its modes.' },
  'pool-exhausted': { stage: 'plan', meaning: 'The pool ran out of free addresses while planning.' },
  'supernet-exhausted': { stage: 'plan', meaning: 'The supernet has no free block left to carve a cluster CIDR from.' },
  'slice-spans-subnets': { stage: 'plan', meaning: 'A direct/native cluster would hold shared addresses in more than one subnet.' },
  // ---- the ledger ----
  'ledger-missing': { stage: 'plan', meaning: '--frozen without a ledger.' },
  'ledger-other-fleet': { stage: 'plan', meaning: 'The ledger belongs to another fleet (a rename needs --renamed-from).' },
  'ledger-renamed': { stage: 'plan', meaning: '--renamed-from given, but the ledger already belongs to this fleet; or --frozen while carrying a renamed ledger over.' },
  'router-takes-planned-address': { stage: 'plan', meaning: 'The shared network router is an address the ledger gives a cluster.' },
  'ledger-not-an-address': { stage: 'plan', meaning: 'A ledger entry that is not an address (or not a CIDR where a CIDR belongs), e.g. after a hand edit.' },
  'ledger-wrong-family': { stage: 'plan', meaning: 'A ledger entry of the other address family than its network.' },
  'ledger-conflict': { stage: 'plan', meaning: 'One address or CIDR held by two owners in the ledger (two clusters on one or overlapping CIDRs after a Git merge, a shared address twice, a VIP equal to a gateway address, a quarantined address still held, a ledger CIDR on another cluster\'s explicit one); both owners are named.' },
  'reclaim/no-ledger': { stage: 'plan', meaning: '`reclaim` without a ledger beside the fleet file (or at --ledger).' },
  'reclaim/no-match': { stage: 'plan', meaning: '`reclaim --cluster/--address` names nothing the ledger quarantines (`--all` with nothing quarantined succeeds).' },
  'ledger-would-change': { stage: 'plan', meaning: '--frozen, and the plan would change the ledger (addresses would move or be added).' },
  // ---- delivery: GitOps and Harvester ----
  'gitops-path': { stage: 'deliver', meaning: 'spec.gitops.path is not a relative path inside the repository.' },
  'gitops-repo-missing': { stage: 'deliver', meaning: 'Argo CD delivery without spec.gitops.repoURL.' },
  'gitops-unknown-cluster': { stage: 'deliver', meaning: 'A GitOps entry names a cluster the fleet does not have.' },
  'gitops-server-missing': { stage: 'deliver', meaning: 'Argo CD clusterServers lists no API server for some clusters.' },
  'gitops-name-too-long': { stage: 'deliver', meaning: 'An Argo CD Application or Flux Kustomization name over 63 characters (it becomes a label value on every applied object).' },
  'gitops-duration': { stage: 'deliver', meaning: 'A Flux interval or timeout that the Flux CRD refuses (its pattern: digits with ms, s, m or h), past Go\'s time.Duration range, or zero.' },
  'gitops-conflict': { stage: 'deliver', meaning: 'Two GitOps settings that exclude each other (Flux inCluster with kubeconfig Secrets).' },
  // ---- what the API server refuses of any emitted object (src/delivery/api-limits.ts; the path names the output file) ----
  'object-annotations-too-large': { stage: 'deliver', meaning: 'An emitted object whose annotations (or its pod template\'s) total more than 256 KiB, len(key) + len(value) in bytes: the API server refuses it (TotalAnnotationSizeLimitB).' },
  'object-name-too-long': { stage: 'deliver', meaning: 'An emitted object whose name is over 253 characters, or over 63 for a Namespace or Service (DNS label): the API server refuses it.' },
  'object-label-too-long': { stage: 'deliver', meaning: 'An emitted object with a label value, or a label key\'s name part, over 63 characters: the API server refuses it.' },
  'harvester-needs-direct': { stage: 'deliver', meaning: 'A Harvester cluster in a datapath other than direct.' },
  'harvester-vlan': { stage: 'deliver', meaning: 'A VLAN Harvester\'s webhook refuses (outside 0-4094, or 0/1 on mgmt).' },
  'harvester-range': { stage: 'deliver', meaning: 'A vm-migration-network range or exclusion Harvester\'s webhook refuses.' },
  'harvester-ipv4-only': { stage: 'deliver', meaning: 'Harvester\'s vm-migration-network on an IPv6 shared network.' },
  'harvester-cluster-network-name': { stage: 'deliver', meaning: 'A ClusterNetwork name too long for its bridge interface name (Harvester refuses it).' },
  'harvester-too-few-addresses': { stage: 'deliver', meaning: 'A Harvester cluster\'s slice holds fewer addresses than its nodes (or nodes + sync controllers + surge).' },
  // ---- KubeVirt CA rotation and trust exchange (docs/trust.md) ----
  'trust/bad-duration': { stage: 'validate', meaning: 'A rotation or re-push duration that is not a (positive) Go duration.' },
  'trust/kubevirt-ca-renew-exceeds-duration': { stage: 'validate', meaning: 'ca.renewBefore longer than ca.duration (KubeVirt\'s webhook refuses it).' },
  'trust/kubevirt-server-renew-exceeds-duration': { stage: 'validate', meaning: 'server.renewBefore longer than server.duration (KubeVirt\'s webhook refuses it).' },
  'trust/kubevirt-server-outlives-ca': { stage: 'validate', meaning: 'server.duration longer than ca.duration (KubeVirt\'s and HCO\'s webhooks refuse it).' },
  'trust/ca-overlap-too-short': { stage: 'validate', meaning: 'The CA overlap is too short for peers to receive the new CA before the old one expires.' },
  'trust/hco-below-minimum': { stage: 'validate', meaning: 'A rotation setting below HCO\'s minimum of 10m on an HCO-delivered cluster.' },
  'trust/peer-rotation-exceeds-overlap': { stage: 'validate', meaning: 'A peer rotates its CA faster than this cluster\'s overlap keeps the old one.' },
  'trust/repush-too-fast': { stage: 'validate', meaning: 'A trust re-push interval below 10s.' },
  'trust/repush-too-slow': { stage: 'validate', meaning: 'A trust re-push interval too long for the CA overlap.' },
  'trust/unknown-cluster': { stage: 'validate', meaning: 'A trust entry names a cluster the fleet does not have.' },
  // ---- Forklift moves (docs/migrations.md) ----
  'forklift/moves-syntax': { stage: 'moves', meaning: 'The moves file is not valid YAML.' },
  'forklift/moves-invalid': { stage: 'moves', meaning: 'The moves file does not have the moves format.' },
  'forklift/moves-fleet': { stage: 'moves', meaning: 'The moves file names another fleet.' },
  'forklift/moves-twice': { stage: 'moves', meaning: 'Moves listed both in spec.forklift.moves and in the moves file.' },
  'forklift/no-hub': { stage: 'moves', meaning: 'Moves without spec.forklift (no hub to run them).' },
  'forklift/unknown-cluster': { stage: 'moves', meaning: 'A move, provider, network or storage entry names a cluster the fleet does not have.' },
  'forklift/same-cluster': { stage: 'moves', meaning: 'A move from a cluster to itself.' },
  'forklift/moved-twice': { stage: 'moves', meaning: 'One VM moved twice in one batch.' },
  'forklift/target-collision': { stage: 'moves', meaning: 'Two VMs would land under one name on one cluster in one batch.' },
  'forklift/mac-conflict': { stage: 'moves', meaning: 'Two moves into one target cluster declare the same VM MAC address (Forklift no longer checks this, PR #8293).' },
  'forklift/swap': { stage: 'moves', meaning: 'Two moves of one batch swap same-named VMs between two clusters (each lands where the other still runs).' },
  'forklift/started-twice': { stage: 'moves', meaning: 'One VM moved by two started batches (two migrations of one VM at once, or a move from where another batch is only bringing it).' },
  'forklift/start-mismatch': { stage: 'moves', meaning: 'Moves of one Plan disagree on when to start.' },
  'forklift/hub-provider': { stage: 'moves', meaning: 'A provider entry for the hub cluster (Forklift reaches it through its host provider).' },
  'forklift/no-provider': { stage: 'moves', meaning: 'A cluster that moves use has no provider.' },
  'forklift/not-reachable': { stage: 'moves', meaning: 'Two clusters of a move cannot live-migrate to each other (datapath modes).' },
  'forklift/libvirt-hooks': { stage: 'moves', meaning: 'Warning: a move into another namespace of a KubeVirt 1.9 target, where the libvirt hooks (on by default) break it until kubevirt PR #18526.' },
  'forklift/compression-no-selector': { stage: 'moves', meaning: 'A move asks for compression but names no vmiLabels (a MigrationPolicy selects VMIs only by labels; a VMI carries none naming its VM).' },
  'forklift/compression-unsupported': { stage: 'moves', meaning: 'A move asks for compression while its source or target KubeVirt predates 1.9 (capability table).' },
  'forklift/compression-uncovered': { stage: 'moves', meaning: 'Warning: spec.migrationPolicy.compression is set, but a move into a Harvester cluster migrates uncompressed (the target\'s MigrationPolicy decides; we emit none there).' },
  'forklift/compression-harvester': { stage: 'moves', meaning: 'A move asks for compression into a Harvester cluster, where the target\'s MigrationPolicy would decide and we emit none.' },
  'forklift/compression-conflict': { stage: 'moves', meaning: 'Two moves\' compression policies select the same VMIs of one target namespace (label sets nest) with different compression, or one VM twice with other labels.' },
  'forklift/feature-gate': { stage: 'moves', meaning: 'A cluster of a move lacks the DecentralizedLiveMigration feature gate.' },
  'forklift/trust-disabled': { stage: 'moves', meaning: 'The trust exchange is off for a cluster pair that moves use.' },
  'forklift/live-disabled': { stage: 'moves', meaning: 'Live migration is turned off in the Forklift controller while moves are listed.' },
  'forklift/mesh-network': { stage: 'moves', meaning: 'A VM network that is one of the fleet\'s migration networks.' },
  'forklift/network-unknown': { stage: 'moves', meaning: 'A network reference neither declared nor created by the fleet.' },
  'forklift/network-duplicate': { stage: 'moves', meaning: 'A network mapped twice for one cluster pair.' },
  'forklift/network-unmapped': { stage: 'moves', meaning: 'Warning: a network with no counterpart on the target cluster.' },
  'forklift/storage-missing': { stage: 'moves', meaning: 'No storage class mapping for a cluster pair that moves use.' },
  'forklift/storage-duplicate': { stage: 'moves', meaning: 'A storage class mapped twice for one cluster pair.' },
  // ---- props of constructs and helpers ----
  'customize-async': { stage: 'props', meaning: 'The `customize` or `customizeCluster` hook returned a promise: synthesis is synchronous, so an async hook would run after the tree is written; make it synchronous.' },
  'prop-invalid': { stage: 'props', meaning: 'A construct or helper prop out of range or empty (port, interface name, TLS source, IPAM range).' },
  'wrong-datapath': { stage: 'props', meaning: 'A construct or helper used for a cluster in a datapath it does not serve.' },
  // ---- writing the output tree and the ledger (nothing is written when one of these is found) ----
  'write/not-a-directory': { stage: 'write', meaning: 'A path the output needs as a directory is a file (or another non-directory), e.g. --out under a regular file.' },
  'write/symlink': { stage: 'write', meaning: 'The fleet directory, or a path inside it that synth writes, is a symbolic link leading out of the output tree.' },
  'write/not-ours': { stage: 'write', meaning: 'A file synth would write or remove is not one it generated (not in the manifest), or was edited since.' },
  'write/manifest-invalid': { stage: 'write', meaning: 'The manifest of generated files (.migration-mesh.manifest) is not in its format.' },
  'write/denied': { stage: 'write', meaning: 'Permission denied writing the output or the ledger (EACCES, EPERM).' },
  'write/read-only': { stage: 'write', meaning: 'The output or the ledger is on a read-only file system (EROFS).' },
  'write/no-space': { stage: 'write', meaning: 'No space left (ENOSPC, EDQUOT) while writing the output or the ledger.' },
  'write/failed': { stage: 'write', meaning: 'Another file system error while writing the output or the ledger (the message names it).' },
  'diff/old-ledger-missing': { stage: 'parse', meaning: 'Warning of two-file `diff`: OLD has no ledger beside it (nor --ledger) while NEW has one; OLD is planned from scratch and address moves are not compared.' },
  'diff/old-moves-missing': { stage: 'parse', meaning: 'Warning of two-file `diff`: OLD has no moves file beside it while NEW has one; OLD takes NEW\'s moves, and no move or run is called new (moves are not compared).' },
  'write/locked': { stage: 'write', meaning: 'Another migration-mesh writer holds the lock beside the output or the ledger (a live process; a dead one\'s lock is taken over).' },
  'write/input': { stage: 'write', meaning: 'A file to write is one of the run\'s inputs (the fleet, its ledger or moves file): `plan --svg` never overwrites an input.' },
  // ---- `migration-mesh status`: findings about live clusters (docs/status.md) ----
  'status/unreachable': { stage: 'status', meaning: 'A cluster that did not answer: no such kubeconfig context, connection refused, TLS, or no answer within --timeout.' },
  'status/object-missing': { stage: 'status', meaning: 'A generated object that is not in the cluster.' },
  'status/object-different': { stage: 'status', meaning: 'A generated object whose live copy differs in a field we write (the first such field is named).' },
  'status/kubevirt-missing': { stage: 'status', meaning: 'The KubeVirt CR the fleet configures is not in the cluster.' },
  'status/kubevirt-network': { stage: 'status', meaning: 'The live KubeVirt CR names another migration network (or none).' },
  'status/feature-gate-off': { stage: 'status', meaning: 'A feature gate the fleet turns on is missing from the live KubeVirt CR.' },
  'status/gateway-not-ready': { stage: 'status', meaning: 'No gateway replica ready (error), or fewer than planned (warning).' },
  'status/gateway-admin-unreachable': { stage: 'status', meaning: 'Warning: a ready gateway pod whose admin /status cannot be read through the API server\'s pod proxy.' },
  'status/vip-unheld': { stage: 'status', meaning: 'No gateway pod holds the cluster\'s VIP (the handlers\' next hop): outgoing migrations cannot reach a gateway.' },
  'status/vip-held-twice': { stage: 'status', meaning: 'Two gateway pods hold the VIP at once (keepalived split brain).' },
  'status/peer-gateway-unreachable': { stage: 'status', meaning: 'Warning: no gateway of a peer accepted the last trust publication (unreachable or refused): tunnels to it fail too.' },
  'status/pods-unreadable': { stage: 'status', meaning: 'Warning: the gateway, virt-handler or sync controller pods could not be listed (RBAC: see the status ClusterRole, or an API error); their checks are skipped.' },
  'status/not-attached': { stage: 'status', meaning: 'A virt-handler or sync controller pod whose network-status annotation shows no address on the migration network.' },
  'status/kubevirt-ca-missing': { stage: 'status', meaning: 'The cluster\'s kubevirt-ca ConfigMap is missing or holds no certificate.' },
  'status/peer-ca-untrusted': { stage: 'status', meaning: 'A cluster\'s kubevirt-ca lacks the current CA of a cluster it migrates with.' },
  'status/different-groups': { stage: 'status', meaning: 'Two clusters in datapath modes that cannot migrate to each other.' },
  'status/move-pair-not-ready': { stage: 'status', meaning: '--moves: the source and target cluster of a planned move are not ready to migrate (the pair\'s reason is given).' },
  'status/move-namespace-missing': { stage: 'status', meaning: '--moves: the Plan\'s target namespace does not exist in the target cluster.' },
  'status/move-name-taken': { stage: 'status', meaning: '--moves: a VM of the moving VM\'s name already exists in the target namespace.' },
  'status/move-source-missing': { stage: 'status', meaning: '--moves: the moving VM is not in the source cluster.' },
  'status/move-network-missing': { stage: 'status', meaning: '--moves: a NAD the pair\'s NetworkMap maps to is not in the target cluster.' },
  'status/move-storage-missing': { stage: 'status', meaning: '--moves: a storage class the pair\'s StorageMap maps to is not in the target cluster.' },
  'status/move-mac-conflict': { stage: 'status', meaning: '--moves: a VM in the target cluster has the moving VM\'s MAC address (Forklift no longer checks this between KubeVirt clusters).' },
  'plan-inconsistent': { stage: 'props', meaning: 'A plan that the planner cannot have made (hand-built or edited); report it if the planner made it.' },
} as const satisfies Record<string, CodeInfo>;

export type ProblemCode = keyof typeof PROBLEM_CODES;

/** The Forklift codes without their `forklift/` prefix (src/forklift/checks.ts adds it). */
export type ForkliftCode = ProblemCode extends infer C ? (C extends `forklift/${infer K}` ? K : never) : never;

/** docs/errors.md, generated from PROBLEM_CODES. */
export function problemCodesMarkdown(): string {
  const stages: Record<CodeInfo['stage'], string> = {
    parse: 'Reading the fleet and ledger files',
    validate: 'Validation (structure and cross-field rules)',
    plan: 'Address planning against the ledger',
    deliver: 'Delivery forms (GitOps, Harvester)',
    moves: 'Forklift moves (docs/migrations.md)',
    props: 'Construct and helper props (cdk8s apps of your own)',
    write: 'Writing the output tree and the ledger (nothing is written)',
    status: '`migration-mesh status`: findings about live clusters (docs/status.md)',
  };
  const lines = [
    '# Problem codes',
    '',
    '<!-- generated from src/base/problem-codes.ts by `npm run docs:errors`; test/problem-codes.test.ts fails when it is stale -->',
    '',
    'Every problem Migration Mesh reports carries a stable code next to its field path, message and fix:',
    '`[pool-too-small] spec.crossClusterNetwork.addresses.pool: ...` in text, `"code": "pool-too-small"` in',
    '`migration-mesh validate --output json`, and `error.problems[i].code` on the `FleetValidationError` /',
    '`InvalidPropsError` a library call throws. Filter on the code, never on the message text.',
    '',
  ];
  for (const [stage, title] of Object.entries(stages)) {
    lines.push(`## ${title}`, '', '| code | meaning |', '|---|---|');
    for (const [code, info] of Object.entries(PROBLEM_CODES) as [ProblemCode, CodeInfo][]) {
      if (info.stage === stage) lines.push(`| \`${code}\` | ${info.meaning} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}
