/**
 * A served namespace that already exists (issue 40 item 2): OVN-Kubernetes gives a namespace its primary
 * user-defined network only when the label `k8s.ovn.org/primary-user-defined-network` is there at
 * creation (user-defined-networks.md:111-114), so an existing namespace without it is refused, never
 * patched: adding the label later changes nothing and the VMs would stay on the default network. For the
 * CLI and the constructs to call with what a cluster holds. Pure, no cdk8s import.
 */
import { FleetProblem } from '../base/errors';
import { ClusterVmNetworks, PRIMARY_UDN_NAMESPACE_LABEL } from './resolved';

/** A namespace as the cluster has it. */
export interface ExistingNamespace {
  readonly name: string;
  /** @default - none */
  readonly labels?: Readonly<Record<string, string>>;
}

/** The served namespaces of the cluster's primary networks that exist without the primary-network label. */
export function servedNamespaceProblems(c: ClusterVmNetworks, existing: readonly ExistingNamespace[]): FleetProblem[] {
  const have = new Map(existing.map((n) => [n.name, n]));
  const out: FleetProblem[] = [];
  for (const net of c.networks.filter((n) => n.primaryNamespaces)) {
    net.namespaces.forEach((ns, j) => {
      const found = have.get(ns);
      if (!found || found.labels?.[PRIMARY_UDN_NAMESPACE_LABEL] !== undefined) return;
      out.push({
        code: 'vmnet-namespace-label', path: `spec.vmNetworks[${net.index}].namespaces[${j}]`,
        message: `namespace ${ns} already exists on cluster ${c.cluster} without the label ${PRIMARY_UDN_NAMESPACE_LABEL}; OVN-Kubernetes reads it only when the namespace is created, so ${net.name} would never be its primary network (and the fleet does not patch it)`,
        fix: `move the workloads out and delete namespace ${ns} on ${c.cluster} so the fleet creates it with the label, or serve ${net.name} in a new namespace`,
      });
    });
  }
  return out;
}
