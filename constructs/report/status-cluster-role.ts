import { ApiObject, Chart, Lazy } from 'cdk8s';
import { Construct } from 'constructs';
import { STATUS_ROLE_NAME, statusRoleRules } from '../../src/report/status-role';

/**
 * Properties for `StatusClusterRole`.
 */
export interface StatusClusterRoleProps {
  /**
   * The kinds the cluster's output holds (drift reads each with `get`).
   *
   * @default - every ApiObject of the enclosing chart, read when the chart is synthesized
   */
  readonly kinds?: readonly { apiVersion: string; kind: string }[];
}

/**
 * The read-only ClusterRole `migration-mesh-status` that `migration-mesh status` needs on a cluster:
 * `get` on every kind of the cluster's output, `list` of pods and VirtualMachines, `get` of pods/proxy
 * (the gateways' admin /status), ConfigMaps, namespaces, NADs and StorageClasses. Bind it to the identity
 * of your kubeconfig context with a ClusterRoleBinding of your own. Opt-in with
 * `spec.operatorView.statusClusterRole`; docs/status.md.
 */
export class StatusClusterRole extends Construct {
  /** The ClusterRole. */
  public readonly role: ApiObject;

  constructor(scope: Construct, id: string, props: StatusClusterRoleProps = {}) {
    super(scope, id);
    const chart = Chart.of(this);
    const kinds = () => props.kinds ?? chart.node.findAll()
      .filter((c): c is ApiObject => c instanceof ApiObject).map((o) => ({ apiVersion: o.apiVersion, kind: o.kind }));
    this.role = new ApiObject(this, 'ClusterRole', {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: STATUS_ROLE_NAME },
      // computed at synth time, so objects added to the chart after this construct count too
      rules: Lazy.any({ produce: () => statusRoleRules(kinds()) }),
    });
  }
}
