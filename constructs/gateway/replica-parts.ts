import { ApiObject, JsonPatch } from 'cdk8s';
import * as kplus from 'cdk8s-plus-28';
import { Construct } from 'constructs';
import { staticIpam } from '../../src/addressing/cni';
import { FleetPlan, ClusterPlan } from '../../src/addressing/planner';
import { NETWORK_LABEL } from '../../src/base/names';
import { Placement } from '../../src/fleet/schema';
import { peerGatewayCidrs } from '../../src/gateway/pod';
import { GatewayCrossClusterPolicy } from './policy';
import { taintQueryOf } from './pod-options';
import { NetworkAttachment } from '../addressing/network-attachment';

/**
 * What the gateway (`MigrationProxy`, `GatewayDeployment`) and the trust agent (`TrustAgent`,
 * `TrustAgentDeployment`) build alike: the shared network's NAD, the PDB, the MultiNetworkPolicy, the
 * pod hardening cdk8s-plus-28 has no API for, and the placement of one-pod-per-replica Deployments.
 */

/** The shared network's NAD in `namespace`: the cluster's site's attachment, static IPAM with its routes, `ips` capability (a planned address each). */
export function crossClusterNad(scope: Construct, plan: FleetPlan, cluster: ClusterPlan, namespace: string): NetworkAttachment {
  return new NetworkAttachment(scope, 'CrossClusterNad', {
    name: plan.crossCluster.nadName,
    namespace,
    attachment: cluster.site.attachment,
    ipam: staticIpam(cluster.site.routes),
    ipsCapability: true,
    labels: { [NETWORK_LABEL]: 'cross-cluster' },
  });
}

/** A PodDisruptionBudget (L1: cdk8s-plus-28 has none) allowing one voluntary eviction at a time across the replicas: a drain never takes them all. */
export function replicaSetDisruptionBudget(scope: Construct, name: string, namespace: string, labels: Record<string, string>,
  setLabels: Record<string, string>): ApiObject {
  return new ApiObject(scope, 'PodDisruptionBudget', {
    apiVersion: 'policy/v1', kind: 'PodDisruptionBudget',
    metadata: { name, namespace, labels },
    spec: { maxUnavailable: 1, selector: { matchLabels: setLabels } },
  });
}

/** The MultiNetworkPolicy on the shared attachment of the pods `setLabels` selects (tunnel port from the peers only). */
export function crossClusterPolicyFor(scope: Construct, cluster: ClusterPlan, p: {
  namespace: string; crossClusterNad: string; setLabels: Record<string, string>; tunnelPort: number; labels: Record<string, string>;
}): GatewayCrossClusterPolicy {
  return new GatewayCrossClusterPolicy(scope, 'CrossClusterPolicy', {
    namespace: p.namespace,
    crossClusterNad: p.crossClusterNad,
    podSelector: p.setLabels,
    peerCidrs: peerGatewayCidrs(cluster),
    tunnelPort: p.tunnelPort,
    labels: p.labels,
  });
}

/** Pod fields cdk8s-plus-28 has no API for (they exist in the k8s 1.28 schema, so the patch survives). */
export function hardenPodSpec(deployment: ApiObject): void {
  deployment.addJsonPatch(
    JsonPatch.add('/spec/revisionHistoryLimit', 3),
    JsonPatch.add('/spec/template/spec/enableServiceLinks', false),
    JsonPatch.add('/spec/template/spec/securityContext/seccompProfile', { type: 'RuntimeDefault' }),
  );
}

/**
 * Placement of one replica's Deployment: one pod of the set per node (required anti-affinity on
 * `setLabels`, the set selected through a construct `setId` in `owner`), the placement's tolerations,
 * node selector and affinity; the user's required anti-affinity terms go before ours, as they did before
 * cdk8s-plus. `spreadOverNodes` adds a topologySpreadConstraint on the hostname (the gateway's).
 */
export function placeReplica(owner: Construct, setId: string, deployment: kplus.Deployment, setLabels: Record<string, string>, placement: Placement,
  spreadOverNodes = false): void {
  const spec = '/spec/template/spec';
  deployment.scheduling.separate(kplus.Pods.select(owner, setId, { labels: setLabels }), { topology: kplus.Topology.HOSTNAME });
  placement.tolerations?.forEach((t, i) => deployment.scheduling.tolerate(kplus.Node.tainted(taintQueryOf(t, `placement.tolerations[${i}]`))));
  const patches = spreadOverNodes ? [JsonPatch.add(`${spec}/topologySpreadConstraints`, [
    { maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: setLabels } },
  ])] : [];
  if (placement.nodeSelector) patches.push(JsonPatch.add(`${spec}/nodeSelector`, placement.nodeSelector));
  const { podAntiAffinity: userAnti = {}, ...otherAffinity } = (placement.affinity ?? {}) as Record<string, unknown>;
  const { requiredDuringSchedulingIgnoredDuringExecution: userRequired = [], ...otherAnti } = userAnti as Record<string, unknown>;
  (userRequired as unknown[]).forEach((term, i) => patches.push(JsonPatch.add(`${spec}/affinity/podAntiAffinity/requiredDuringSchedulingIgnoredDuringExecution/${i}`, term)));
  for (const [k, v] of Object.entries(otherAnti)) patches.push(JsonPatch.add(`${spec}/affinity/podAntiAffinity/${k}`, v));
  for (const [k, v] of Object.entries(otherAffinity)) patches.push(JsonPatch.add(`${spec}/affinity/${k}`, v));
  if (patches.length > 0) ApiObject.of(deployment).addJsonPatch(...patches);
}
