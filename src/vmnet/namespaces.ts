/**
 * A served namespace that already exists (issue 40 item 2): OVN-Kubernetes gives a namespace its primary
 * user-defined network only when the label `k8s.ovn.org/primary-user-defined-network` is there at
 * creation (OVN-Kubernetes @8871cd9c, https://github.com/ovn-kubernetes/ovn-kubernetes/blob/8871cd9cec9c45d6da1baf9e3b06eb575f49039c/docs/features/user-defined-networks/user-defined-networks.md#L111-L114), so an existing namespace without it is refused, never
 * patched: adding the label later changes nothing and the VMs would stay on the default network. The words
 * are one text for both places that refuse it: `migration-mesh status` (servedNamespaceProblems, from what a
 * cluster holds) and the cluster itself (constructs/vmnet/existing-namespace-guard.ts, the admission policy
 * that refuses an apply adding the label). Pure, no cdk8s import.
 */
import { FleetProblem } from '../base/errors';
import { ClusterVmNetworks, PRIMARY_UDN_NAMESPACE_LABEL } from './resolved';

/** A namespace as the cluster has it. */
export interface ExistingNamespace {
  readonly name: string;
  /** @default - none */
  readonly labels?: Readonly<Record<string, string>>;
}

/** Name of the ValidatingAdmissionPolicy (and its binding) that refuses the label on an existing served namespace. */
export const SERVED_NAMESPACE_GUARD_NAME = 'migration-mesh-served-namespace-label';

/** Problem and fix of a served namespace `ns` of network `network` that exists on `cluster` without the label. */
export function existingNamespaceWords(ns: string, cluster: string, network: string): { message: string; fix: string } {
  return {
    message: `namespace ${ns} already exists on cluster ${cluster} without the label ${PRIMARY_UDN_NAMESPACE_LABEL}; OVN-Kubernetes reads it only when the namespace is created, so ${network} would never be its primary network (and the fleet does not patch it)`,
    fix: `move the workloads out and delete namespace ${ns} on ${cluster} so the fleet creates it with the label, or serve ${network} in a new namespace`,
  };
}

/**
 * The served namespaces of the cluster's primary networks that exist without the primary-network label. `declared` is
 * the fleet's `spec.vmNetworks` as written, so each path indexes the namespace in the user's list (the resolved list is
 * sorted); without it, the index is in the resolved list.
 */
export function servedNamespaceProblems(
  c: ClusterVmNetworks, existing: readonly ExistingNamespace[], declared?: readonly { readonly namespaces: readonly string[] }[],
): FleetProblem[] {
  const have = new Map(existing.map((n) => [n.name, n]));
  const out: FleetProblem[] = [];
  for (const net of c.networks.filter((n) => n.primaryNamespaces)) {
    net.namespaces.forEach((ns, j) => {
      const found = have.get(ns);
      if (!found || found.labels?.[PRIMARY_UDN_NAMESPACE_LABEL] !== undefined) return;
      const at = declared?.[net.index]?.namespaces.indexOf(ns) ?? -1;
      out.push({ code: 'vmnet-namespace-label', path: `spec.vmNetworks[${net.index}].namespaces[${at >= 0 ? at : j}]`, ...existingNamespaceWords(ns, c.cluster, net.name) });
    });
  }
  return out;
}

/** A CEL string literal. */
const celString = (s: string): string => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * The admission rule for one primary network's served namespaces on one cluster, as CEL for a
 * ValidatingAdmissionPolicy on namespace UPDATEs: refused when the namespace is one of `namespaces` and the
 * update adds the label the old object lacks; allowed otherwise (keeping or removing the label, other namespaces).
 * `messageExpression` gives existingNamespaceWords' problem and fix with the namespace's name.
 */
export function servedNamespaceRule(cluster: string, network: string, namespaces: readonly string[]): { expression: string; messageExpression: string } {
  const has = (o: string) => `(has(${o}.metadata.labels) && ${celString(PRIMARY_UDN_NAMESPACE_LABEL)} in ${o}.metadata.labels)`;
  const names = `[${[...new Set(namespaces)].sort().map(celString).join(', ')}]`;
  const marker = '\u0000';
  const w = existingNamespaceWords(marker, cluster, network);
  const text = `${w.message}: ${w.fix}`;
  return {
    expression: `!(object.metadata.name in ${names}) || ${has('oldObject')} || !${has('object')}`,
    messageExpression: text.split(marker).map(celString).join(' + object.metadata.name + '),
  };
}
