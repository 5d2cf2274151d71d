/**
 * The source side of a keep-the-address move (issue 40 item 4): the addresses an `IPAMClaim` holds (read
 * by the CLI from the source cluster and passed to `checkKeepAddressMove`), and the patch that pins them on
 * the source VM's template before the Forklift Plan runs. Facts: the IPAMClaim CRD (k8snetworkplumbingwg/ipamclaims @d97058c3, copy
 * in test/fixtures/upstream/ipamclaims), ipam-extensions' claims (https://github.com/kubevirt/ipam-extensions/blob/edb24dec884f176498021d3c8bbfbed2f9ec76ea/pkg/claims/claims.go)
 * (`status.ips` are `address/prefix` strings behind the status subresource; `spec.network` is the NAD
 * config name, `cluster_udn_<network>` for a ClusterUserDefinedNetwork). Pure, no cdk8s import.
 */
import { FleetProblem } from '../base/errors';
import { formatAddr, parseAddr } from '../base/ip';

/** The NAD config name OVN-K gives a ClusterUserDefinedNetwork, which its IPAMClaims name in `spec.network`. */
export const claimNetworkOf = (network: string): string => `cluster_udn_${network}`;

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The bare addresses of an IPAMClaim of VM network `network` (IPv4 first), or why it cannot be used:
 * a claim of another network, no `status.ips` yet (its VM never started), an entry that is not
 * `address/prefix`.
 */
export function addressesFromIpamClaim(claim: unknown, network: string, path = 'IPAMClaim'): { addresses: string[]; problems: FleetProblem[] } {
  const problems: FleetProblem[] = [];
  const name = isRecord(claim) && isRecord(claim.metadata) ? String(claim.metadata.name) : '?';
  const spec = isRecord(claim) && isRecord(claim.spec) ? claim.spec : {};
  const status = isRecord(claim) && isRecord(claim.status) ? claim.status : {};
  const fail = (message: string, fix: string) => { problems.push({ code: 'vmnet-move-address', path: `${path} ${name}`, message, fix }); return { addresses: [], problems }; };
  if (spec.network !== claimNetworkOf(network)) {
    return fail(`IPAMClaim ${name} is of network '${String(spec.network)}', not ${network} ('${claimNetworkOf(network)}')`, `read the VM's claim of ${network} (spec.network ${claimNetworkOf(network)})`);
  }
  const ips = Array.isArray(status.ips) ? status.ips : [];
  if (!ips.length) return fail(`IPAMClaim ${name} holds no address yet (status.ips is empty: its VM has not started on this cluster)`, 'start the VM on the source first, or move it without keeping an address');
  const addrs = ips.map((t) => (typeof t === 'string' && /^[^/]+\/\d{1,3}$/.test(t) ? parseAddr(t.split('/')[0]) : undefined));
  const bad = ips.filter((_, i) => !addrs[i]);
  if (bad.length) return fail(`IPAMClaim ${name} holds ${bad.map((b) => JSON.stringify(b)).join(', ')}, not address/prefix`, 'check the claim on the source cluster; OVN-K writes address/prefix strings');
  const sorted = addrs.map((a) => a!).sort((a, b) => a.family - b.family);
  return { addresses: sorted.map((a) => formatAddr(a)), problems };
}

/**
 * The JSON merge patch that pins `annotation` (checkKeepAddressMove's) on a VirtualMachine's template:
 * `spec.template.metadata.annotations` only, which KubeVirt does not count as a restart-requiring change.
 */
export function pinAddressesPatch(annotation: { readonly key: string; readonly value: string }): Record<string, unknown> {
  return { spec: { template: { metadata: { annotations: { [annotation.key]: annotation.value } } } } };
}
