import { ApiObject, Duration, JsonPatch, Size } from 'cdk8s';
import { canonicalQuantitiesOf } from '../base/canonical-quantities';
import * as kplus from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { Placement } from '../../src/fleet/schema';
import { GATEWAY_CONFIG_FILE, GATEWAY_CONFIG_MOUNT } from '../../src/gateway/config';
import { GATEWAY_KEEPALIVED_FILE, KEEPALIVED_RUN_DIR, keepalivedArgs } from '../../src/gateway/failover';
import {
  DEFAULT_GATEWAY_INTERFACES, GATEWAY_REPLICA_LABEL, GATEWAY_RESTART_HASH_ANNOTATION, GATEWAY_SET_LABEL, MULTUS_NETWORKS_ANNOTATION,
  gatewayDeploymentName, gatewayNetworkSelection,
} from '../../src/gateway/pod';
import { GatewayReplicaPlan } from '../../src/addressing/planner';
import { GATEWAY_METRICS_PORT_NAME } from './metrics';
import { GatewayPodOptions } from './pod-options';
import { projectedVolume } from '../base/projected-volume';
import { refuseImage } from '../../src/base/image-reference';
import { hardenPodSpec, placeReplica } from './replica-parts';

/** UID/GID the runtime container runs as (distroless `nonroot`). */
export const GATEWAY_RUN_AS = 65532;

/** Pod labels and annotations the gateway owns: `addPodLabel`/`addPodAnnotation` refuse them. */
const RESERVED_POD_KEYS = ['app.kubernetes.io/name', GATEWAY_SET_LABEL, GATEWAY_REPLICA_LABEL, MULTUS_NETWORKS_ANNOTATION, GATEWAY_RESTART_HASH_ANNOTATION];

/** Default resources of the runtime container: no CPU limit (CFS throttling of a data-path proxy stalls migrations). */
export const DEFAULT_GATEWAY_RESOURCES: kplus.ContainerResources = {
  cpu: { request: kplus.Cpu.millis(500) },
  memory: { request: Size.mebibytes(256), limit: Size.gibibytes(1) },
};

/** A container securityContext: uid 0, read-only root FS, no escalation, every capability dropped but `caps`. */
function rootWithOnly(caps: kplus.Capability[]): kplus.ContainerSecurityContextProps {
  return {
    user: 0,
    group: 0,
    ensureNonRoot: false,
    privileged: false,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { add: caps, drop: [kplus.Capability.ALL] },
  };
}

/** An in-memory emptyDir of `mib` MiB. */
const memoryDir = (scope: Construct, id: string, name: string, mib: number): kplus.Volume =>
  kplus.Volume.fromEmptyDir(scope, id, name, { medium: kplus.EmptyDirMedium.MEMORY, sizeLimit: Size.mebibytes(mib) });

/**
 * Properties for `GatewayDeployment`. The `GatewayPodOptions` fields are sugar for the `add...`/`set...`
 * methods.
 */
export interface GatewayDeploymentProps extends GatewayPodOptions {
  /** Namespace of the gateway objects. */
  readonly namespace: string;
  /** The replica: its index and planned static addresses on both networks. */
  readonly replica: GatewayReplicaPlan;
  /** Labels every gateway pod of this cluster carries (selector of the spread, anti-affinity, PDB, Service). */
  readonly setLabels: Record<string, string>;
  /** Gateway container image (runtime and init step). */
  readonly image: string;
  /** In-cluster migration NAD (static IPAM, per-pod `ips`) in `namespace`. */
  readonly inClusterNad: string;
  /** Cross-cluster NAD (static IPAM, per-pod `ips`) in `namespace`. */
  readonly crossClusterNad: string;
  /** ConfigMap holding `config.json` (the runtime config). */
  readonly configMapName: string;
  /** ServiceAccount of the pods (its token is not mounted). */
  readonly serviceAccount: kplus.IServiceAccount;
  /** Ports the runtime listens on (from the runtime config). */
  readonly ports: { readonly intercept: number; readonly tunnel: number; readonly admin: number };
  /**
   * Secret with `ca.crt`, `tls.crt`, `tls.key`, projected next to the config under `tls/`, into the runtime
   * container only (`runtimeVolume`).
   *
   * @default - no TLS material (plaintext tunnel)
   */
  readonly tlsSecretName?: string;
  /**
   * Hash of the config fields the runtime cannot reload, put on the pod template (a change restarts the
   * pod). Peer-table changes are not part of it: the runtime reloads them from the mounted ConfigMap.
   *
   * @default - no restart annotation
   */
  readonly restartHash?: string;
  /**
   * nodeSelector / affinity / tolerations (core/v1 shapes, from the fleet file). Use it to keep gateways
   * on nodes that have the cross-cluster network. In TypeScript prefer `deployment.scheduling`
   * (`attract`, `colocate`, `separate`) and `addToleration`: `affinity` here is applied as a JSON patch,
   * so for the same affinity kind (e.g. `nodeAffinity`) it replaces what `scheduling` produced.
   *
   * @default - any node (then every node must have the cross-cluster network)
   * @see https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#scheduling
   */
  readonly placement?: Placement;
  /**
   * Interface names inside the pod (at most 15 characters).
   *
   * @default {inCluster: 'mig0', crossCluster: 'xc0'}
   */
  readonly interfaces?: { readonly inCluster: string; readonly crossCluster: string };
  /**
   * Seconds between SIGTERM and SIGKILL; the runtime drains open tunnels for `limits.drainTimeoutMs`.
   *
   * @default 35
   * @see https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/pod-v1/#lifecycle
   */
  readonly terminationGracePeriodSeconds?: number;
  /**
   * Labels for the Deployment and its pods (added to `setLabels`).
   *
   * @default - none
   */
  readonly labels?: Record<string, string>;
  /**
   * Run the failover sidecar: keepalived (VRRP only) with `keepalived.conf` from the ConfigMap,
   * holding the cluster's gateway VIP while this replica is the elected one (src/gateway/failover.ts).
   * It is the only long-running container with capabilities: NET_ADMIN (add/remove the VIP), NET_RAW
   * (VRRP and gratuitous ARP), SETUID/SETGID (its readiness check of the runtime runs as `nobody`).
   *
   * @default false
   */
  readonly failover?: boolean;
}

/**
 * One gateway replica as its own cdk8s-plus-28 `Deployment`: a static address cannot be shared by two
 * pods, so `replicas: 1` and `strategy: Recreate` (the old pod releases the addresses before the new one
 * takes them). The pod template carries the Multus selection with the replica's planned addresses; an
 * init container (root, NET_ADMIN only) installs the nat REDIRECT rules in the pod's network namespace;
 * the runtime container runs non-root, read-only, with no capabilities; with `failover` a keepalived
 * sidecar holds the cluster's gateway VIP while this replica is the elected one. Replicas of one cluster
 * spread over distinct nodes (required anti-affinity and a hostname topology spread).
 *
 * Extend it through `deployment` (the cdk8s-plus-28 object) or the `add...` methods. Fields cdk8s-plus-28
 * has no API for (revisionHistoryLimit, enableServiceLinks, the pod seccomp profile, topology spread,
 * nodeSelector, imagePullSecrets by name, priorityClassName) are JSON patches on the Deployment.
 */
export class GatewayDeployment extends Construct {
  /** Name of the Deployment. */
  public readonly name: string;
  /** The cdk8s-plus-28 Deployment: `scheduling`, `podMetadata`, `addContainer`, `addVolume`, ... */
  public readonly deployment: kplus.Deployment;
  /** The runtime container (`gateway`). */
  public readonly container: kplus.Container;
  /** The rule-setup init container (`setup-rules`). */
  public readonly setupContainer: kplus.Container;
  /** The keepalived sidecar (`failover`); undefined without failover. */
  public readonly failoverContainer?: kplus.Container;
  /**
   * The volume holding `config.json` alone (no TLS file, no keepalived.conf): what `setup-rules` and the
   * trust container mount, and what a sidecar that reads the config should mount (read-only).
   */
  public readonly configVolume: kplus.Volume;
  /**
   * The runtime container's own volume: `config.json` and, with TLS, the TLS files under `tls/` (the private
   * key among them). Mounted into the `gateway` container only: no other container gets the key.
   */
  public readonly runtimeVolume: kplus.Volume;
  /** The L1 object under `deployment` (for JSON patches). */
  public readonly apiObject: ApiObject;
  private readonly pullSecrets: { name: string }[] = [];

  constructor(scope: Construct, id: string, props: GatewayDeploymentProps) {
    super(scope, id);
    refuseImage(props.image);
    const r = props.replica;
    this.name = gatewayDeploymentName(r.replica);
    const selector = { ...props.setLabels, [GATEWAY_REPLICA_LABEL]: String(r.replica) };
    const podLabels = { ...props.labels, ...selector };
    const selection = gatewayNetworkSelection({
      namespace: props.namespace,
      inClusterNad: props.inClusterNad,
      crossClusterNad: props.crossClusterNad,
      replica: r,
      interfaces: props.interfaces ?? DEFAULT_GATEWAY_INTERFACES,
    });
    this.deployment = new kplus.Deployment(this, 'Deployment', {
      metadata: { name: this.name, namespace: props.namespace, labels: podLabels },
      replicas: 1,
      strategy: kplus.DeploymentStrategy.recreate(),
      // our own selector, not cdk8s-plus's `cdk8s.io/metadata.addr`: a Deployment's selector is immutable
      select: false,
      podMetadata: {
        labels: podLabels,
        annotations: {
          // on the pod template, not the Deployment: Multus reads pod annotations only
          [MULTUS_NETWORKS_ANNOTATION]: JSON.stringify(selection),
          ...(props.restartHash ? { [GATEWAY_RESTART_HASH_ANNOTATION]: props.restartHash } : {}),
        },
      },
      serviceAccount: props.serviceAccount,
      // the runtime reads files only; it never talks to the API server
      automountServiceAccountToken: false,
      terminationGracePeriod: Duration.seconds(props.terminationGracePeriodSeconds ?? 35),
      securityContext: { ensureNonRoot: true, user: GATEWAY_RUN_AS, group: GATEWAY_RUN_AS, fsGroup: GATEWAY_RUN_AS },
    });
    this.deployment.select(kplus.LabelSelector.of({ labels: selector }));
    this.apiObject = canonicalQuantitiesOf(ApiObject.of(this.deployment));
    hardenPodSpec(this.apiObject);
    this.runtimeVolume = this.buildRuntimeVolume(props);
    this.configVolume = projectedVolume(this, 'ConfigJsonVolume', 'config-json', {
      defaultMode: 0o440, sources: [{ configMap: { name: props.configMapName, items: [{ key: GATEWAY_CONFIG_FILE, path: GATEWAY_CONFIG_FILE }] } }],
    });
    const containers = this.addGatewayContainers(props);
    this.setupContainer = containers.setup;
    this.container = containers.runtime;
    this.failoverContainer = containers.failover;
    placeReplica(this, 'GatewaySet', this.deployment, props.setLabels, props.placement ?? {}, true);
    this.applyOptions(props);
  }

  /**
   * Add a container to every pod of this replica (cdk8s-plus-28 defaults apply to it: e.g. resources
   * 1000m/512Mi requested, `imagePullPolicy: Always`, non-root, read-only root filesystem).
   */
  public addSidecar(container: kplus.ContainerProps): kplus.Container {
    // cdk8s-plus-28 keeps the given volumeMounts array as the container's own: copy it, so props reused
    // for several replicas (MigrationProxy.addSidecar) do not share mounts added later with `mount()`
    return this.deployment.addContainer({ ...container, volumeMounts: container.volumeMounts ? [...container.volumeMounts] : undefined });
  }

  /** Add a volume to the pod (volumes mounted by a container are added automatically). */
  public addVolume(volume: kplus.Volume): void {
    this.deployment.addVolume(volume);
  }

  /** Tolerate node taints, e.g. `NodeTaintQuery.exists('dedicated', {effect: TaintEffect.NO_SCHEDULE})`. */
  public addToleration(...queries: kplus.NodeTaintQuery[]): void {
    this.deployment.scheduling.tolerate(kplus.Node.tainted(...queries));
  }

  /** Add a label to the pod template. Throws for the gateway's selector labels. */
  public addPodLabel(key: string, value: string): void {
    checkNotReserved('pod label', key);
    this.deployment.podMetadata.addLabel(key, value);
  }

  /** Add an annotation to the pod template. Throws for the Multus selection and the restart hash. */
  public addPodAnnotation(key: string, value: string): void {
    checkNotReserved('pod annotation', key);
    this.deployment.podMetadata.addAnnotation(key, value);
  }

  /** Pull images with the credentials in this Secret (pod `imagePullSecrets`). */
  public addImagePullSecret(secret: string | kplus.ISecret): void {
    const name = typeof secret === 'string' ? secret : secret.name;
    if (this.pullSecrets.some((s) => s.name === name)) return;
    // the list is read when the Deployment is synthesized: one patch serves every later call
    if (this.pullSecrets.length === 0) this.apiObject.addJsonPatch(JsonPatch.add('/spec/template/spec/imagePullSecrets', this.pullSecrets));
    this.pullSecrets.push({ name });
  }

  /** Set the pod's PriorityClass (pod `priorityClassName`); a later call replaces an earlier one. */
  public setPriorityClassName(name: string): void {
    this.apiObject.addJsonPatch(JsonPatch.add('/spec/template/spec/priorityClassName', name));
  }

  /**
   * Secrets only where needed (issue 49): each container mounts only the files it reads. The runtime's
   * volume projects the ConfigMap and the TLS Secret under one directory, so its directory watch sees both
   * a peer-table change and a certificate rotation (no subPath: subPath mounts are never updated).
   */
  private buildRuntimeVolume(props: GatewayDeploymentProps): kplus.Volume {
    const sources: Record<string, unknown>[] = [{ configMap: { name: props.configMapName, items: [{ key: GATEWAY_CONFIG_FILE, path: GATEWAY_CONFIG_FILE }] } }];
    if (props.tlsSecretName) {
      sources.push({
        secret: {
          name: props.tlsSecretName,
          items: [{ key: 'ca.crt', path: 'tls/ca.crt' }, { key: 'tls.crt', path: 'tls/tls.crt' }, { key: 'tls.key', path: 'tls/tls.key' }],
        },
      });
    }
    return projectedVolume(this, 'ConfigVolume', 'config', { defaultMode: 0o440, sources });
  }

  /** keepalived's volume: keepalived.conf alone (it parses VRRP from the network: no config.json, no TLS file). */
  private keepalivedVolume(props: GatewayDeploymentProps): kplus.Volume {
    return projectedVolume(this, 'KeepalivedConfigVolume', 'keepalived-config', {
      defaultMode: 0o440, sources: [{ configMap: { name: props.configMapName, items: [{ key: GATEWAY_KEEPALIVED_FILE, path: GATEWAY_KEEPALIVED_FILE }] } }],
    });
  }

  private addGatewayContainers(props: GatewayDeploymentProps): { setup: kplus.Container; runtime: kplus.Container; failover?: kplus.Container } {
    const configPath = `${GATEWAY_CONFIG_MOUNT}/${GATEWAY_CONFIG_FILE}`;
    // one path, three volumes: the runtime's (config and TLS), setup-rules' (config only), keepalived's (its conf only)
    const runtimeMount: kplus.VolumeMount = { path: GATEWAY_CONFIG_MOUNT, volume: this.runtimeVolume, readOnly: true };
    const configMount: kplus.VolumeMount = { path: GATEWAY_CONFIG_MOUNT, volume: this.configVolume, readOnly: true };
    const imagePullPolicy = props.imagePullPolicy ?? kplus.ImagePullPolicy.IF_NOT_PRESENT;
    const admin = props.ports.admin;
    const probe = (path: string, period: number, failures: number, timeout?: number): kplus.Probe => kplus.Probe.fromHttpGet(path, {
      port: admin, periodSeconds: Duration.seconds(period), failureThreshold: failures, timeoutSeconds: timeout ? Duration.seconds(timeout) : undefined,
    });
    const runtime = this.deployment.addContainer({
      name: 'gateway',
      image: props.image,
      imagePullPolicy,
      command: ['migration-mesh-proxy'],
      args: ['run', '--config', configPath],
      ports: [
        { name: 'intercept', number: props.ports.intercept, protocol: kplus.Protocol.TCP },
        { name: 'tunnel', number: props.ports.tunnel, protocol: kplus.Protocol.TCP },
        { name: GATEWAY_METRICS_PORT_NAME, number: admin, protocol: kplus.Protocol.TCP },
      ],
      securityContext: {
        ensureNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false,
        capabilities: { drop: [kplus.Capability.ALL] },
      },
      resources: props.resources ?? DEFAULT_GATEWAY_RESOURCES,
      startup: probe('/healthz', 2, 30),
      liveness: probe('/healthz', 10, 3, 3),
      readiness: probe('/readyz', 5, 2, 3),
      volumeMounts: [runtimeMount, { path: '/tmp', volume: memoryDir(this, 'Tmp', 'tmp', 16) }],
    });
    const failover = props.failover ? this.deployment.addContainer({
      name: 'failover',
      image: props.image,
      imagePullPolicy,
      command: ['keepalived'],
      args: keepalivedArgs(`${GATEWAY_CONFIG_MOUNT}/${GATEWAY_KEEPALIVED_FILE}`, props.replica.replica),
      // VRRP needs uid 0 with NET_ADMIN (add/remove the VIP) and NET_RAW (adverts, gratuitous ARP);
      // SETUID/SETGID let keepalived drop to `nobody` for the readiness check (without them the
      // check never runs: seen in the fleet netns test, keepalived logs "Couldn't setgroups")
      securityContext: rootWithOnly([kplus.Capability.NET_ADMIN, kplus.Capability.NET_RAW, kplus.Capability.SETUID, kplus.Capability.SETGID]),
      resources: { cpu: { request: kplus.Cpu.millis(10) }, memory: { request: Size.mebibytes(16), limit: Size.mebibytes(64) } },
      volumeMounts: [
        { path: GATEWAY_CONFIG_MOUNT, volume: this.keepalivedVolume(props), readOnly: true },
        { path: KEEPALIVED_RUN_DIR, volume: memoryDir(this, 'KeepalivedRun', 'keepalived-run', 1) },
      ],
    }) : undefined;
    const setup = this.deployment.addInitContainer({
      name: 'setup-rules',
      image: props.image,
      imagePullPolicy,
      command: ['migration-mesh-proxy'],
      args: ['setup-rules', '--config', configPath],
      // iptables needs uid 0 and CAP_NET_ADMIN in the pod's own network namespace; it exits before the
      // runtime starts. Explicit resources: cdk8s-plus-28 would otherwise give it 1000m/512Mi.
      securityContext: rootWithOnly([kplus.Capability.NET_ADMIN]),
      resources: { cpu: { request: kplus.Cpu.millis(10) }, memory: { request: Size.mebibytes(32), limit: Size.mebibytes(128) } },
      // iptables-legacy takes /run/xtables.lock; the root filesystem is read-only
      volumeMounts: [configMount, { path: '/run', volume: memoryDir(this, 'XtablesLock', 'xtables-lock', 1) }],
    });
    return { setup, runtime, failover };
  }

  /**
   * Required anti-affinity on the gateway set (cdk8s-plus `separate`), tolerations (`tolerate`); what
   * cdk8s-plus-28 cannot express (nodeSelector, topology spread, raw affinity terms) as JSON patches.
   */

  private applyOptions(o: GatewayPodOptions): void {
    for (const [k, v] of Object.entries(o.podLabels ?? {})) this.addPodLabel(k, v);
    for (const [k, v] of Object.entries(o.podAnnotations ?? {})) this.addPodAnnotation(k, v);
    for (const s of o.imagePullSecrets ?? []) this.addImagePullSecret(s);
    if (o.tolerations?.length) this.addToleration(...o.tolerations);
    if (o.priorityClassName) this.setPriorityClassName(o.priorityClassName);
  }
}

function checkNotReserved(what: string, key: string): void {
  if (RESERVED_POD_KEYS.includes(key)) throw new Error(`${what} '${key}' belongs to the gateway (selectors, Multus, restart hash); choose another key`);
}
