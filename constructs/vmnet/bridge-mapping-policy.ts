import { ApiObject } from 'cdk8s';
import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { managedByLabels } from '../../src/base/names';
import { vmPruneGuardAnnotations } from '../../src/vmnet/prune-guard';

/** nmstate's API group and version of `NodeNetworkConfigurationPolicy`. */
export const NMSTATE_API_VERSION = 'nmstate.io/v1';

/**
 * Properties for `BridgeMappingPolicy`.
 */
export interface BridgeMappingPolicyProps {
  /** The physical network: the `localnet` key of the mapping, which Localnet networks name in `physicalNetworkName`. */
  readonly physicalNetworkName: string;
  /**
   * The OVS bridge the physical network is on.
   *
   * @default 'br-ex' (the cluster's external bridge: only the mapping is written)
   */
  readonly bridge?: string;
  /**
   * The node interface (NIC or bond) of a dedicated bridge: when given, the policy also creates the OVS bridge with
   * this port. Leave it out for a bridge that exists already (such as `br-ex`).
   *
   * @default - no bridge is created
   */
  readonly port?: string;
  /**
   * The policy's name.
   *
   * @default `mm-<physicalNetworkName>-bridge-mapping`
   */
  readonly name?: string;
  /**
   * Nodes to configure (`spec.nodeSelector`): the nodes VMs on this network run on.
   *
   * @default - every node
   */
  readonly nodeSelector?: Record<string, string>;
  /**
   * How many nodes nmstate configures at a time (`spec.maxUnavailable`, a count or a percentage).
   *
   * @default - nmstate's default (50%)
   */
  readonly maxUnavailable?: number | string;
}

const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
/** A label key (the NNCP CRD's CEL rule `format.qualifiedName()` on nodeSelector keys). */
const QUALIFIED_NAME = /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/;

/** `desiredState` of one bridge mapping (and its dedicated bridge). */
export function bridgeMappingState(p: Pick<BridgeMappingPolicyProps, 'physicalNetworkName' | 'bridge' | 'port'>): Record<string, unknown> {
  const bridge = p.bridge ?? 'br-ex';
  const mapping = { ovn: { 'bridge-mappings': [{ localnet: p.physicalNetworkName, bridge, state: 'present' }] } };
  if (!p.port) return mapping;
  return {
    interfaces: [{ name: bridge, type: 'ovs-bridge', state: 'up', bridge: { 'allow-extra-patch-ports': true, port: [{ name: p.port }] } }],
    ...mapping,
  };
}

/**
 * An nmstate `NodeNetworkConfigurationPolicy` (nmstate.io/v1, cluster-scoped) that maps a physical network to an
 * OVS bridge on the nodes (`ovn.bridge-mappings`), which a Localnet network needs before its VMs get a port.
 * One policy per physical network: nmstate refuses two mappings with the same `localnet` key on a node.
 */
export class BridgeMappingPolicy extends Construct {
  public readonly name: string;
  /** L1: cdk8s has no typed NodeNetworkConfigurationPolicy. */
  public readonly apiObject: ApiObject;

  constructor(scope: Construct, id: string, props: BridgeMappingPolicyProps) {
    super(scope, id);
    this.name = props.name ?? `mm-${props.physicalNetworkName}-bridge-mapping`;
    if (!DNS1123_SUBDOMAIN.test(this.name) || this.name.length > 253) {
      throw new InvalidPropsError({
        code: 'prop-invalid', path: props.name ? 'name' : 'physicalNetworkName',
        message: `'${this.name}' is not a DNS-1123 subdomain, so it cannot name the NodeNetworkConfigurationPolicy`,
        fix: 'give name: lowercase letters, digits, "-" and ".", starting and ending with a letter or digit, at most 253 characters',
      });
    }
    for (const key of Object.keys(props.nodeSelector ?? {})) {
      if (QUALIFIED_NAME.test(key) && key.split('/')[0].length <= 253) continue;
      throw new InvalidPropsError({
        code: 'prop-invalid', path: `nodeSelector.${key}`, message: `'${key}' is not a label key (a qualified name); the NodeNetworkConfigurationPolicy CRD refuses it`,
        fix: 'use a node label key such as node-role.kubernetes.io/worker or example.com/vms',
      });
    }
    this.apiObject = new ApiObject(this, 'Resource', {
      apiVersion: NMSTATE_API_VERSION,
      kind: 'NodeNetworkConfigurationPolicy',
      metadata: { name: this.name, labels: managedByLabels(), annotations: vmPruneGuardAnnotations() },
      spec: {
        ...(props.nodeSelector && Object.keys(props.nodeSelector).length ? { nodeSelector: { ...props.nodeSelector } } : {}),
        ...(props.maxUnavailable !== undefined ? { maxUnavailable: props.maxUnavailable } : {}),
        desiredState: bridgeMappingState(props),
      },
    });
  }
}
