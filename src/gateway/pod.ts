/**
 * Pure helpers for the gateway pods: labels, the Multus selection annotation of one replica, the
 * restart hash, the MultiNetworkPolicy peer list. No cdk8s import (the constructs translate these into
 * API objects).
 */
import * as crypto from 'crypto';
import { DEFAULT_INTERCEPT_INTERFACE, DEFAULT_TUNNEL_INTERFACE, ProxyConfig, peerIdentityUri } from './runtime-config';
import { ClusterPlan, GatewayReplicaPlan } from '../addressing/planner';
import { InvalidPropsError } from '../base/errors';
import { APP_NAME_LABEL, GATEWAY_NAME } from '../base/names';

/** Multus selection annotation key (k8snetworkplumbingwg/multus-cni `k8s.v1.cni.cncf.io/networks`). */
export const MULTUS_NETWORKS_ANNOTATION = 'k8s.v1.cni.cncf.io/networks';
/** MultiNetworkPolicy: which network(s) the policy applies to (k8snetworkplumbingwg/multi-networkpolicy). */
export const MULTI_POLICY_FOR_ANNOTATION = 'k8s.v1.cni.cncf.io/policy-for';
/** Label shared by all gateway replicas of one cluster (topology spread, anti-affinity, PDB, Service). */
export const GATEWAY_SET_LABEL = 'migrationmesh.dev/gateway-set';
/** Label naming the replica index of one gateway pod. */
export const GATEWAY_REPLICA_LABEL = 'migrationmesh.dev/gateway-replica';
/** Pod-template annotation carrying the hash of the config fields the runtime cannot reload. */
export const GATEWAY_RESTART_HASH_ANNOTATION = 'migrationmesh.dev/restart-hash';

/**
 * Default interface names inside the gateway pod (Linux allows at most 15 characters): the runtime's own
 * defaults, so the Multus selection, the listeners' interfaces and the REDIRECT rules name the same interfaces.
 */
export const DEFAULT_GATEWAY_INTERFACES = { inCluster: DEFAULT_INTERCEPT_INTERFACE, crossCluster: DEFAULT_TUNNEL_INTERFACE } as const;

/** The two attachments' interface names inside a gateway pod. */
export interface GatewayInterfaces { readonly inCluster: string; readonly crossCluster: string }

/** One Multus network selection element (the keys Multus reads; kubevirt-api-facts.md s.7). */
export interface NetworkSelectionElement {
  readonly name: string;
  readonly namespace: string;
  readonly interface: string;
  readonly ips: string[];
}

/** Linux IFNAMSIZ - 1. */
const MAX_INTERFACE_NAME = 15;

function checkInterfaceName(field: string, name: string): void {
  if (!/^[A-Za-z0-9_.-]{1,15}$/.test(name) || name === '.' || name === '..') {
    throw new InvalidPropsError({
      code: 'prop-invalid', path: field, message: `interface name '${name}' is invalid`, fix: `use 1-${MAX_INTERFACE_NAME} characters of [A-Za-z0-9_.-] (Linux IFNAMSIZ)`,
    });
  }
}

/** Valid, distinct interface names for the two attachments (the listeners and rules are bound to them), or the error. */
export function checkGatewayInterfaces(ifs: GatewayInterfaces): GatewayInterfaces {
  checkInterfaceName('interfaces.inCluster', ifs.inCluster);
  checkInterfaceName('interfaces.crossCluster', ifs.crossCluster);
  if (ifs.inCluster === ifs.crossCluster) {
    throw new InvalidPropsError({ code: 'prop-invalid', path: 'interfaces', message: `inCluster and crossCluster are both '${ifs.inCluster}'`, fix: 'give them different names' });
  }
  if (ifs.inCluster === 'eth0' || ifs.crossCluster === 'eth0') {
    throw new InvalidPropsError({
      code: 'prop-invalid', path: 'interfaces', message: "'eth0' is the pod network's interface (the admin listener's)", fix: 'name the migration and shared networks\' attachments otherwise (defaults mig0, xc0)',
    });
  }
  return ifs;
}

/** The gateway's copy of the in-cluster migration NAD (in the gateway's namespace, with static IPAM). */
export const gatewayInClusterNadName = (migrationNad: string): string => `${migrationNad}-gateway`;

/** Name of the Deployment of one replica. */
export const gatewayDeploymentName = (replica: number): string => `${GATEWAY_NAME}-${replica}`;

/** Selector labels of every gateway pod of a cluster. */
export function gatewaySetLabels(cluster: string): Record<string, string> {
  return { [APP_NAME_LABEL]: GATEWAY_NAME, [GATEWAY_SET_LABEL]: cluster };
}

/**
 * The Multus selection list of one replica: the in-cluster network first (its own static address in the
 * cluster's migration CIDR), then the cross-cluster network (its planned shared address). Addresses are
 * written with their prefix so static IPAM configures the connected route.
 */
export function gatewayNetworkSelection(opts: {
  readonly namespace: string;
  readonly inClusterNad: string;
  readonly crossClusterNad: string;
  readonly replica: GatewayReplicaPlan;
  readonly interfaces?: { readonly inCluster: string; readonly crossCluster: string };
}): NetworkSelectionElement[] {
  const ifs = checkGatewayInterfaces(opts.interfaces ?? DEFAULT_GATEWAY_INTERFACES);
  return [
    { name: opts.inClusterNad, namespace: opts.namespace, interface: ifs.inCluster, ips: [opts.replica.inCluster] },
    { name: opts.crossClusterNad, namespace: opts.namespace, interface: ifs.crossCluster, ips: [opts.replica.crossCluster] },
  ];
}

/**
 * Hash of the config fields the runtime cannot change at run time (it rejects a reload that changes
 * fleet, cluster, listen endpoints or tls.mode). Put on the pod template: a change of these restarts
 * the pods; a peer-table change (new cluster, moved gateway) does not, the runtime reloads it from the
 * mounted ConfigMap. The failover sidecar's keepalived.conf, when there is one, is hashed too: keepalived
 * reads it only at start.
 */
export function gatewayRestartHash(config: ProxyConfig, keepalivedConfig?: string): string {
  const fixed = JSON.stringify([config.fleet, config.cluster, config.listen, config.tls.mode, ...(keepalivedConfig ? [keepalivedConfig] : [])]);
  return crypto.createHash('sha256').update(fixed).digest('hex').slice(0, 16);
}

/** Addresses (as /32 or /128 CIDRs) of every other cluster's gateways on the cross-cluster network. */
export function peerGatewayCidrs(cluster: ClusterPlan): string[] {
  const out: string[] = [];
  for (const p of cluster.peers) {
    for (const g of p.gateways) out.push(`${g.host}/${g.host.includes(':') ? 128 : 32}`);
  }
  return [...new Set(out)];
}

/** The URI SAN of a cluster's gateway certificate: the runtime's own `peerIdentityUri`, so both sides agree. */
export const gatewayIdentityUri = (fleet: string, cluster: string): string => peerIdentityUri(fleet, cluster);
