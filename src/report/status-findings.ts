/**
 * The findings of `migration-mesh status` about one cluster, each with a stable code, in the order the
 * pair verdict uses them (the first error is the reason a pair with the cluster is not ready).
 */
import { ClusterFacts, GatewayFacts, StatusCode, StatusFinding } from './status-facts';

type Reachable = Extract<ClusterFacts, { reachable: true }>;

function gatewayFindings(c: string, g: GatewayFacts, add: (code: StatusCode, sev: 'error' | 'warning', m: string) => void): void {
  if (g.ready === 0) { add('status/gateway-not-ready', 'error', `${c}: no gateway replica ready (0/${g.replicas})`); return; }
  if (g.ready < g.replicas) add('status/gateway-not-ready', 'warning', `${c}: ${g.ready}/${g.replicas} gateway replicas ready`);
  if (g.podsError) add('status/pods-unreadable', 'warning', `${c}: gateway pods not listed: ${g.podsError}`);
  if (!g.pods) return;
  const read = g.pods.filter((p) => p.runtime);
  if (g.vip && read.length > 0) {
    const holders = read.filter((p) => p.runtime!.held.includes(g.vip!)).map((p) => p.pod);
    if (holders.length === 0) add('status/vip-unheld', 'error', `${c}: no gateway pod holds the VIP ${g.vip}`);
    if (holders.length > 1) add('status/vip-held-twice', 'error', `${c}: the VIP ${g.vip} is held by ${holders.join(' and ')} at once`);
  }
  for (const p of g.pods.filter((x) => x.ready && !x.runtime)) {
    add('status/gateway-admin-unreachable', 'warning', `${c}: gateway pod ${p.pod} admin /status not readable through the pod proxy: ${p.error ?? 'no answer'}`);
  }
  const peers = [...new Set(read.flatMap((p) => Object.keys(p.runtime!.peers)))].sort();
  for (const peer of peers) {
    const pubs = read.flatMap((p) => p.runtime!.peers[peer]?.publications ?? []);
    if (pubs.length > 0 && !pubs.some((x) => x.status === 'accepted')) {
      add('status/peer-gateway-unreachable', 'warning', `${c}: no gateway of ${peer} accepted the last trust publication (${[...new Set(pubs.map((x) => x.status))].join(', ')})`);
    }
  }
}

/** Every finding about cluster `c`, errors in verdict order. */
export function clusterFindings(c: ClusterFacts): StatusFinding[] {
  const out: StatusFinding[] = [];
  const add = (code: StatusCode, severity: 'error' | 'warning', message: string) => { out.push({ code, severity, cluster: c.cluster, message }); };
  if (!c.reachable) { add('status/unreachable', 'error', `${c.cluster} unreachable`); return out; }
  for (const d of c.drift) {
    if (d.state === 'missing') add('status/object-missing', 'error', `${c.cluster}: ${d.object} missing`);
    else add('status/object-different', 'error', `${c.cluster}: ${d.object} differs at ${d.field}`);
  }
  kubevirtFindings(c, add);
  for (const p of c.servedNamespaces ?? []) out.push({ code: 'vmnet-namespace-label', severity: 'error', cluster: c.cluster, message: p.message, path: p.path, fix: p.fix });
  if (c.gateway) gatewayFindings(c.cluster, c.gateway, add);
  if (c.attachments?.error) add('status/pods-unreadable', 'warning', `${c.cluster}: virt-handler and sync controller pods not listed: ${c.attachments.error}`);
  for (const p of c.attachments?.pods ?? []) {
    if (!p.attached) add('status/not-attached', 'error', `${c.cluster}: ${p.role} ${p.pod} is not on the migration network ${c.attachments!.network}`);
  }
  if (c.ca && c.ca.length === 0) add('status/kubevirt-ca-missing', 'error', `${c.cluster}: kubevirt-ca not found or empty`);
  return out;
}

function kubevirtFindings(c: Reachable, add: (code: StatusCode, sev: 'error' | 'warning', m: string) => void): void {
  const kv = c.kubevirt;
  if (!kv) return;
  const which = kv.object ? ` ${kv.object} (written by HCO)` : '';
  if (!kv.found) { add('status/kubevirt-missing', 'error', `${c.cluster}: KubeVirt CR${which} not found`); return; }
  if (kv.wantNetwork && kv.migrationNetwork !== kv.wantNetwork) {
    add('status/kubevirt-network', 'error', `${c.cluster}: KubeVirt${which} migration network is ${kv.migrationNetwork ?? 'unset'}, want ${kv.wantNetwork}`);
  }
  for (const gate of kv.wantGates.filter((g) => !kv.featureGates.includes(g))) add('status/feature-gate-off', 'error', `${c.cluster}: KubeVirt${which} feature gate ${gate} off`);
}
