import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { Placement } from '../src/fleet-schema';
import { GATEWAY_CONFIG_FILE, GATEWAY_CONFIG_MOUNT } from '../src/gateway-config';
import { GATEWAY_KEEPALIVED_FILE, KEEPALIVED_RUN_DIR, keepalivedArgs } from '../src/gateway-failover';
import {
  DEFAULT_GATEWAY_INTERFACES, GATEWAY_REPLICA_LABEL, GATEWAY_RESTART_HASH_ANNOTATION, MULTUS_NETWORKS_ANNOTATION,
  gatewayDeploymentName, gatewayNetworkSelection,
} from '../src/gateway-pod';
import { GatewayReplicaPlan } from '../src/planner';
import { GATEWAY_METRICS_PORT_NAME } from './gateway-metrics';

/** UID/GID the runtime container runs as (distroless `nonroot`). */
export const GATEWAY_RUN_AS = 65532;

/** Container resources, as in core/v1 ResourceRequirements. */
export interface GatewayResources {
  readonly requests?: Record<string, string>;
  readonly limits?: Record<string, string>;
}

/** A container securityContext: uid 0, read-only root FS, no escalation, every capability dropped but `caps`. */
function rootWithOnly(caps: string[]): Record<string, unknown> {
  return {
    runAsUser: 0,
    runAsGroup: 0,
    runAsNonRoot: false,
    allowPrivilegeEscalation: false,
    readOnlyRootFilesystem: true,
    capabilities: { add: caps, drop: ['ALL'] },
  };
}

/**
 * Properties for `GatewayDeployment`.
 */
export interface GatewayDeploymentProps {
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
  /** ServiceAccount of the pods. */
  readonly serviceAccountName: string;
  /** Ports the runtime listens on (from the runtime config). */
  readonly ports: { readonly intercept: number; readonly tunnel: number; readonly admin: number };
  /**
   * Secret with `ca.crt`, `tls.crt`, `tls.key`, projected next to the config under `tls/`.
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
   * nodeSelector / affinity / tolerations. Use it to keep gateways on nodes that have the cross-cluster
   * network (the physical interface or bridge the cross-cluster NAD names).
   *
   * @default - any node (then every node must have the cross-cluster network)
   */
  readonly placement?: Placement;
  /**
   * Interface names inside the pod (at most 15 characters).
   *
   * @default {inCluster: 'mig0', crossCluster: 'xc0'}
   */
  readonly interfaces?: { readonly inCluster: string; readonly crossCluster: string };
  /**
   * Resources of the runtime container. No CPU limit by default: CFS throttling of a data-path proxy
   * stalls migrations.
   *
   * @default {requests: {cpu: '500m', memory: '256Mi'}, limits: {memory: '1Gi'}}
   */
  readonly resources?: GatewayResources;
  /**
   * Image pull policy.
   *
   * @default IfNotPresent
   */
  readonly imagePullPolicy?: 'Always' | 'IfNotPresent' | 'Never';
  /**
   * Seconds between SIGTERM and SIGKILL; the runtime drains open tunnels for `limits.drainTimeoutMs`.
   *
   * @default 35
   */
  readonly terminationGracePeriodSeconds?: number;
  /**
   * PriorityClass of the pods.
   *
   * @default - none
   */
  readonly priorityClassName?: string;
  /**
   * Labels for the Deployment and its pods (added to `setLabels`).
   *
   * @default - none
   */
  readonly labels?: Record<string, string>;
  /**
   * Run the failover sidecar: keepalived (VRRP only) with `keepalived.conf` from the ConfigMap,
   * holding the cluster's gateway VIP while this replica is the elected one (src/gateway-failover.ts).
   * It is the only long-running container with capabilities: NET_ADMIN (add/remove the VIP), NET_RAW
   * (VRRP and gratuitous ARP), SETUID/SETGID (its readiness check of the runtime runs as `nobody`).
   *
   * @default false
   */
  readonly failover?: boolean;
  /**
   * The trust container (issue #10, `GatewayTrust`): its container, the pod volumes it needs and the
   * runtime's mount of the socket directory. The pod keeps `automountServiceAccountToken: false`.
   *
   * @default - no trust container
   */
  readonly trust?: { readonly container: Record<string, unknown>; readonly volumes: Record<string, unknown>[]; readonly runtimeMount: Record<string, unknown> };
}

/**
 * One gateway replica as its own Deployment: a static address cannot be shared by two pods, so
 * `replicas: 1` and `strategy: Recreate` (the old pod releases the addresses before the new one takes
 * them). The pod template carries the Multus selection with the replica's planned addresses; an init
 * container (root, NET_ADMIN only) installs the nat REDIRECT rules in the pod's network namespace; the
 * runtime container runs non-root, read-only, with no capabilities; with `failover` a keepalived
 * sidecar holds the cluster's gateway VIP while this replica is the elected one. Replicas of one cluster spread over
 * distinct nodes (required anti-affinity and a hostname topology spread).
 */
export class GatewayDeployment extends Construct {
  public readonly name: string;
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: GatewayDeploymentProps) {
    super(scope, id);
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
    const configPath = `${GATEWAY_CONFIG_MOUNT}/${GATEWAY_CONFIG_FILE}`;
    const placement = props.placement ?? {};
    const userAffinity = (placement.affinity ?? {}) as Record<string, any>;
    const userAnti = (userAffinity.podAntiAffinity ?? {}) as Record<string, any>;
    const spreadSelector = { matchLabels: props.setLabels };

    // One projected volume: the ConfigMap and the TLS Secret appear under one directory, so the
    // runtime's directory watch sees both a peer-table change and a certificate rotation (no subPath:
    // subPath mounts are never updated).
    const cmItems = [{ key: GATEWAY_CONFIG_FILE, path: GATEWAY_CONFIG_FILE }];
    if (props.failover) cmItems.push({ key: GATEWAY_KEEPALIVED_FILE, path: GATEWAY_KEEPALIVED_FILE });
    const sources: any[] = [{ configMap: { name: props.configMapName, items: cmItems } }];
    if (props.tlsSecretName) {
      sources.push({
        secret: {
          name: props.tlsSecretName,
          items: [{ key: 'ca.crt', path: 'tls/ca.crt' }, { key: 'tls.crt', path: 'tls/tls.crt' }, { key: 'tls.key', path: 'tls/tls.key' }],
        },
      });
    }
    const configMount = { name: 'config', mountPath: GATEWAY_CONFIG_MOUNT, readOnly: true };

    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: this.name, namespace: props.namespace, labels: podLabels },
      spec: {
        replicas: 1,
        strategy: { type: 'Recreate' },
        revisionHistoryLimit: 3,
        selector: { matchLabels: selector },
        template: {
          metadata: {
            labels: podLabels,
            annotations: {
              // on the pod template, not the Deployment: Multus reads pod annotations only
              [MULTUS_NETWORKS_ANNOTATION]: JSON.stringify(selection),
              ...(props.restartHash ? { [GATEWAY_RESTART_HASH_ANNOTATION]: props.restartHash } : {}),
            },
          },
          spec: {
            serviceAccountName: props.serviceAccountName,
            // the runtime reads files only; it never talks to the API server
            automountServiceAccountToken: false,
            enableServiceLinks: false,
            terminationGracePeriodSeconds: props.terminationGracePeriodSeconds ?? 35,
            ...(props.priorityClassName ? { priorityClassName: props.priorityClassName } : {}),
            securityContext: {
              runAsNonRoot: true,
              runAsUser: GATEWAY_RUN_AS,
              runAsGroup: GATEWAY_RUN_AS,
              fsGroup: GATEWAY_RUN_AS,
              seccompProfile: { type: 'RuntimeDefault' },
            },
            ...(placement.nodeSelector ? { nodeSelector: placement.nodeSelector } : {}),
            ...(placement.tolerations ? { tolerations: placement.tolerations } : {}),
            affinity: {
              ...userAffinity,
              podAntiAffinity: {
                ...userAnti,
                requiredDuringSchedulingIgnoredDuringExecution: [
                  ...(userAnti.requiredDuringSchedulingIgnoredDuringExecution ?? []),
                  { labelSelector: spreadSelector, topologyKey: 'kubernetes.io/hostname' },
                ],
              },
            },
            topologySpreadConstraints: [
              { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: spreadSelector },
            ],
            initContainers: [{
              name: 'setup-rules',
              image: props.image,
              imagePullPolicy: props.imagePullPolicy ?? 'IfNotPresent',
              command: ['migration-mesh-proxy'],
              args: ['setup-rules', '--config', configPath],
              // iptables needs uid 0 and CAP_NET_ADMIN in the pod's own network namespace; it exits
              // before the runtime starts
              securityContext: rootWithOnly(['NET_ADMIN']),
              resources: { requests: { cpu: '10m', memory: '32Mi' }, limits: { memory: '128Mi' } },
              volumeMounts: [configMount, { name: 'xtables-lock', mountPath: '/run' }],
            }],
            containers: [{
              name: 'gateway',
              image: props.image,
              imagePullPolicy: props.imagePullPolicy ?? 'IfNotPresent',
              command: ['migration-mesh-proxy'],
              args: ['run', '--config', configPath],
              ports: [
                { name: 'intercept', containerPort: props.ports.intercept, protocol: 'TCP' },
                { name: 'tunnel', containerPort: props.ports.tunnel, protocol: 'TCP' },
                { name: GATEWAY_METRICS_PORT_NAME, containerPort: props.ports.admin, protocol: 'TCP' },
              ],
              securityContext: {
                runAsNonRoot: true,
                allowPrivilegeEscalation: false,
                readOnlyRootFilesystem: true,
                privileged: false,
                capabilities: { drop: ['ALL'] },
              },
              resources: props.resources ?? { requests: { cpu: '500m', memory: '256Mi' }, limits: { memory: '1Gi' } },
              startupProbe: { httpGet: { path: '/healthz', port: GATEWAY_METRICS_PORT_NAME }, periodSeconds: 2, failureThreshold: 30 },
              livenessProbe: { httpGet: { path: '/healthz', port: GATEWAY_METRICS_PORT_NAME }, periodSeconds: 10, timeoutSeconds: 3, failureThreshold: 3 },
              readinessProbe: { httpGet: { path: '/readyz', port: GATEWAY_METRICS_PORT_NAME }, periodSeconds: 5, timeoutSeconds: 3, failureThreshold: 2 },
              volumeMounts: [configMount, { name: 'tmp', mountPath: '/tmp' }, ...(props.trust ? [props.trust.runtimeMount] : [])],
            },
            ...(props.trust ? [props.trust.container] : []),
            ...(props.failover ? [{
              name: 'failover',
              image: props.image,
              imagePullPolicy: props.imagePullPolicy ?? 'IfNotPresent',
              command: ['keepalived'],
              args: keepalivedArgs(`${GATEWAY_CONFIG_MOUNT}/${GATEWAY_KEEPALIVED_FILE}`, r.replica),
              // VRRP needs uid 0 with NET_ADMIN (add/remove the VIP) and NET_RAW (adverts, gratuitous ARP);
              // SETUID/SETGID let keepalived drop to `nobody` for the readiness check (without them the
              // check never runs: seen in the fleet netns test, keepalived logs "Couldn't setgroups")
              securityContext: rootWithOnly(['NET_ADMIN', 'NET_RAW', 'SETUID', 'SETGID']),
              resources: { requests: { cpu: '10m', memory: '16Mi' }, limits: { memory: '64Mi' } },
              volumeMounts: [configMount, { name: 'keepalived-run', mountPath: KEEPALIVED_RUN_DIR }],
            }] : []),
            ],
            volumes: [
              { name: 'config', projected: { defaultMode: 0o440, sources } },
              { name: 'tmp', emptyDir: { medium: 'Memory', sizeLimit: '16Mi' } },
              // iptables-legacy takes /run/xtables.lock; the root filesystem is read-only
              { name: 'xtables-lock', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } },
              ...(props.failover ? [{ name: 'keepalived-run', emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } }] : []),
              ...(props.trust ? props.trust.volumes : []),
            ],
          },
        },
      },
    });
  }
}
