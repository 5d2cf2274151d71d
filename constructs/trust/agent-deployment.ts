import { ApiObject, Duration, Size } from 'cdk8s';
import { canonicalQuantitiesOf } from '../base/canonical-quantities';
import * as kplus from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { Placement } from '../../src/fleet/schema';
import { GATEWAY_CONFIG_FILE, GATEWAY_CONFIG_MOUNT } from '../../src/gateway/config';
import { DEFAULT_GATEWAY_INTERFACES, MULTUS_NETWORKS_ANNOTATION } from '../../src/gateway/pod';
import { TrustAgentReplicaPlan } from '../../src/addressing/planner';
import { GATEWAY_RUN_AS } from '../gateway/deployment';
import { GATEWAY_METRICS_PORT_NAME } from '../gateway/metrics';
import { projectedVolume } from '../base/projected-volume';
import { hardenPodSpec, placeReplica } from '../gateway/replica-parts';
import type { TrustPod } from '../gateway/trust';
import { refuseImage } from '../../src/base/image-reference';

/** Label naming the replica index of one trust agent pod. */
export const TRUST_AGENT_REPLICA_LABEL = 'migrationmesh.dev/trust-agent-replica';

/**
 * Properties for `TrustAgentDeployment`.
 */
export interface TrustAgentDeploymentProps {
  /** Namespace of the Deployment. */
  readonly namespace: string;
  /** The replica's planned address on the shared network. */
  readonly replica: TrustAgentReplicaPlan;
  /** Labels every replica of the cluster's trust agent carries (selector of the PDB and the policy). */
  readonly setLabels: Record<string, string>;
  /** The runtime image (the gateway image). */
  readonly image: string;
  /** The shared network's NAD in `namespace` (static IPAM, `ips` capability). */
  readonly crossClusterNad: string;
  /** ConfigMap holding the runtime config (`config.json`). */
  readonly configMapName: string;
  /** The pods' ServiceAccount (no token mounted into the pod). */
  readonly serviceAccount: kplus.IServiceAccount;
  /** Tunnel (PUBLISH) and admin ports of the runtime. */
  readonly ports: { readonly tunnel: number; readonly admin: number };
  /**
   * Secret with `ca.crt`, `tls.crt`, `tls.key` (the cluster's fleet mTLS identity).
   *
   * @default - none (plaintext fleets)
   */
  readonly tlsSecretName?: string;
  /**
   * Node selector, tolerations and affinity (the gateway's placement: the nodes that reach the shared network).
   *
   * @default - anywhere, one replica per node
   */
  readonly placement?: Placement;
  /**
   * Interface name of the shared-network attachment inside the pod.
   *
   * @default xc0
   */
  readonly crossClusterInterface?: string;
  /**
   * Image pull policy of the runtime container.
   *
   * @default IfNotPresent
   */
  readonly imagePullPolicy?: kplus.ImagePullPolicy;
}

/**
 * One replica of a trust agent (issue #30): a Deployment of one pod (`Recreate`: its static address
 * cannot be held by two pods) attached to the shared network only, running the gateway runtime in its
 * trust-only role (`trustAgentConfigFor`): no init step, no capabilities, non-root, read-only root
 * filesystem, no API token in the pod (`TrustAgent` adds the trust container, the only one with a token).
 */
export class TrustAgentDeployment extends Construct implements TrustPod {
  /** Name of the Deployment (`migration-mesh-trust-<replica>`). */
  public readonly name: string;
  /** The Deployment (cdk8s-plus-28). */
  public readonly deployment: kplus.Deployment;
  /** The runtime container (network-facing, no credentials). */
  public readonly container: kplus.Container;
  /** `config.json` alone (no TLS file): what the trust container mounts. */
  public readonly configVolume: kplus.Volume;
  /** The runtime container's own volume: `config.json` and the TLS files (the private key among them); no other container mounts it. */
  public readonly runtimeVolume: kplus.Volume;
  /** The Deployment's ApiObject, for JSON patches. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: TrustAgentDeploymentProps) {
    super(scope, id);
    refuseImage(props.image);
    const r = props.replica;
    this.name = `migration-mesh-trust-${r.replica}`;
    const selector = { ...props.setLabels, [TRUST_AGENT_REPLICA_LABEL]: String(r.replica) };
    const selection = [{
      name: props.crossClusterNad, namespace: props.namespace,
      interface: props.crossClusterInterface ?? DEFAULT_GATEWAY_INTERFACES.crossCluster, ips: [r.crossCluster],
    }];
    this.deployment = new kplus.Deployment(this, 'Deployment', {
      metadata: { name: this.name, namespace: props.namespace, labels: selector },
      replicas: 1,
      strategy: kplus.DeploymentStrategy.recreate(),
      select: false,
      podMetadata: { labels: selector, annotations: { [MULTUS_NETWORKS_ANNOTATION]: JSON.stringify(selection) } },
      serviceAccount: props.serviceAccount,
      automountServiceAccountToken: false,
      terminationGracePeriod: Duration.seconds(35),
      securityContext: { ensureNonRoot: true, user: GATEWAY_RUN_AS, group: GATEWAY_RUN_AS, fsGroup: GATEWAY_RUN_AS },
    });
    this.deployment.select(kplus.LabelSelector.of({ labels: selector }));
    this.apiObject = canonicalQuantitiesOf(ApiObject.of(this.deployment));
    hardenPodSpec(this.apiObject);
    const sources: Record<string, unknown>[] = [{ configMap: { name: props.configMapName, items: [{ key: GATEWAY_CONFIG_FILE, path: GATEWAY_CONFIG_FILE }] } }];
    if (props.tlsSecretName) {
      sources.push({
        secret: {
          name: props.tlsSecretName,
          items: [{ key: 'ca.crt', path: 'tls/ca.crt' }, { key: 'tls.crt', path: 'tls/tls.crt' }, { key: 'tls.key', path: 'tls/tls.key' }],
        },
      });
    }
    this.runtimeVolume = projectedVolume(this, 'ConfigVolume', 'config', { defaultMode: 0o440, sources });
    this.configVolume = projectedVolume(this, 'ConfigJsonVolume', 'config-json', { defaultMode: 0o440, sources: sources.slice(0, 1) });
    const admin = props.ports.admin;
    const probe = (path: string, period: number, failures: number, timeout?: number): kplus.Probe => kplus.Probe.fromHttpGet(path, {
      port: admin, periodSeconds: Duration.seconds(period), failureThreshold: failures, timeoutSeconds: timeout ? Duration.seconds(timeout) : undefined,
    });
    this.container = this.deployment.addContainer({
      name: 'runtime',
      image: props.image,
      imagePullPolicy: props.imagePullPolicy ?? kplus.ImagePullPolicy.IF_NOT_PRESENT,
      command: ['migration-mesh-proxy'],
      args: ['run', '--config', `${GATEWAY_CONFIG_MOUNT}/${GATEWAY_CONFIG_FILE}`],
      ports: [
        { name: 'tunnel', number: props.ports.tunnel, protocol: kplus.Protocol.TCP },
        { name: GATEWAY_METRICS_PORT_NAME, number: admin, protocol: kplus.Protocol.TCP },
      ],
      securityContext: {
        ensureNonRoot: true, allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, privileged: false,
        capabilities: { drop: [kplus.Capability.ALL] },
      },
      resources: { cpu: { request: kplus.Cpu.millis(20) }, memory: { request: Size.mebibytes(96), limit: Size.mebibytes(256) } },
      startup: probe('/healthz', 2, 30),
      liveness: probe('/healthz', 10, 3, 3),
      readiness: probe('/readyz', 5, 2, 3),
      volumeMounts: [
        { path: GATEWAY_CONFIG_MOUNT, volume: this.runtimeVolume, readOnly: true },
        { path: '/tmp', volume: kplus.Volume.fromEmptyDir(this, 'Tmp', 'tmp', { medium: kplus.EmptyDirMedium.MEMORY, sizeLimit: Size.mebibytes(16) }) },
      ],
    });
    placeReplica(this, 'TrustAgentSet', this.deployment, props.setLabels, props.placement ?? {});
  }

  /** Add a container to the pod (the trust container, or your own). */
  public addSidecar(container: kplus.ContainerProps): kplus.Container {
    return this.deployment.addContainer({ ...container, volumeMounts: container.volumeMounts ? [...container.volumeMounts] : undefined });
  }
}
