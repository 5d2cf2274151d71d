/**
 * Names, labels and ports the emitted objects share, in one place: the planning helpers, the constructs
 * and the GitOps wiring all take them from here. Changing one changes the synthesized output.
 */

/** The gateway's name: its ConfigMap, ServiceAccount, PodDisruptionBudget, Certificate, and the prefix of its other objects. */
export const GATEWAY_NAME = 'migration-mesh-gateway';

/** TCP port of the gateway's tunnel listener on the shared network, unless the fleet sets `gateway.tunnelPort`. */
export const DEFAULT_TUNNEL_PORT = 15443;

/** The trust agent's name: its Deployment, ConfigMap, ServiceAccount and PodDisruptionBudget. */
export const TRUST_AGENT_NAME = 'migration-mesh-trust';
/** Selects every trust-agent pod of one cluster. */
export const TRUST_AGENT_SET_LABEL = 'migrationmesh.dev/trust-agent-set';

/** Value of `app.kubernetes.io/managed-by` on what we own. */
const MANAGED_BY = 'migration-mesh';
const MANAGED_BY_LABEL = 'app.kubernetes.io/managed-by';
/** `app.kubernetes.io/name` of every gateway pod. */
export const APP_NAME_LABEL = 'app.kubernetes.io/name';

/** Fleet name on every chart's objects and on the GitOps objects. */
export const FLEET_LABEL = 'migrationmesh.dev/fleet';
/** Cluster name on the per-cluster GitOps objects. */
export const CLUSTER_LABEL = 'migrationmesh.dev/cluster';
/** Rollout stage of a Flux Kustomization. */
export const STAGE_LABEL = 'migrationmesh.dev/stage';
/** Which network a NetworkAttachmentDefinition is: `migration` (in-cluster) or `cross-cluster` (shared). */
export const NETWORK_LABEL = 'migrationmesh.dev/network';

/** `app.kubernetes.io/managed-by: migration-mesh`. */
export const managedByLabels = (): Record<string, string> => ({ [MANAGED_BY_LABEL]: MANAGED_BY });
