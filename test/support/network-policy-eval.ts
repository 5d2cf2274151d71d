/**
 * A small evaluator of Kubernetes NetworkPolicy semantics (and of MultiNetworkPolicy, which has the same
 * spec, filtered per network by `k8s.v1.cni.cncf.io/policy-for`), to test what emitted policies MEAN:
 * is this packet allowed? Written from the API reference (networking.k8s.io/v1 NetworkPolicySpec), not
 * from the code under test:
 *  - a pod is isolated for ingress (egress) when any policy in its namespace selects it and lists
 *    Ingress (Egress) in policyTypes; policyTypes defaults to Ingress, plus Egress when `egress` is set;
 *  - an isolated pod admits a packet when any rule of any selecting policy matches it (rules only add);
 *  - a rule with no `from`/`to` matches every peer, with no `ports` every port; a `ports` entry with no
 *    `port` matches every port of its protocol (default TCP); `endPort` makes a range;
 *  - a peer is an ipBlock (cidr minus `except`), or pods by podSelector within the policy's namespace, or
 *    by namespaceSelector (+ optional podSelector); a peer that is not a pod of this cluster only
 *    matches ipBlocks;
 *  - a packet passes when the source side's egress AND the destination side's ingress admit it.
 * Not modelled: named ports (refused loudly), SCTP specifics, CNI-specific ipBlock handling of pod IPs
 * (here ipBlocks match any address, pods included).
 */
import { containsAddr, parseAddr, parseCidr } from '../../src/base/ip';

type Labels = Record<string, string>;

export interface Endpoint {
  readonly ip: string;
  /** Undefined for an address that is not a pod of this cluster (another cluster, a node, the internet). */
  readonly pod?: {
    readonly namespace: string;
    readonly labels: Labels;
    /** The NAD (`namespace/name`) of the interface the packet uses, for MultiNetworkPolicy. */
    readonly nad?: string;
  };
}

export interface Packet {
  readonly src: Endpoint;
  readonly dst: Endpoint;
  readonly port: number;
  /** @default TCP */
  readonly protocol?: 'TCP' | 'UDP' | 'SCTP';
}

export interface Verdict {
  readonly allowed: boolean;
  readonly reason: string;
}

interface Selector { matchLabels?: Labels; matchExpressions?: { key: string; operator: string; values?: string[] }[] }

export interface EvalContext {
  /** Labels of every namespace of the cluster (for namespaceSelector). */
  readonly namespaces: Record<string, Labels>;
  /** Which policies apply: `NetworkPolicy`, or `MultiNetworkPolicy` (those whose policy-for names the pod's `nad`). */
  readonly kind: 'NetworkPolicy' | 'MultiNetworkPolicy';
}

export function selectorMatches(sel: Selector | undefined, labels: Labels): boolean {
  if (!sel) return true;
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const has = Object.prototype.hasOwnProperty.call(labels, e.key);
    const ok = e.operator === 'In' ? has && (e.values ?? []).includes(labels[e.key])
      : e.operator === 'NotIn' ? !has || !(e.values ?? []).includes(labels[e.key])
        : e.operator === 'Exists' ? has
          : e.operator === 'DoesNotExist' ? !has
            : (() => { throw new Error(`evaluator: unknown selector operator ${e.operator}`); })();
    if (!ok) return false;
  }
  return true;
}

function inCidr(ip: string, cidr: string): boolean {
  const a = parseAddr(ip);
  const c = parseCidr(cidr);
  if (!c.ok) throw new Error(`evaluator: '${cidr}' is not a CIDR`);
  return !!a && a.family === c.cidr.family && containsAddr(c.cidr, a);
}

function peerMatches(peer: any, other: Endpoint, policyNs: string, ctx: EvalContext): boolean {
  if (peer.ipBlock) {
    return inCidr(other.ip, peer.ipBlock.cidr) && !(peer.ipBlock.except ?? []).some((x: string) => inCidr(other.ip, x));
  }
  if (!peer.podSelector && !peer.namespaceSelector) throw new Error('evaluator: a peer with neither ipBlock nor selectors is invalid');
  if (!other.pod) return false;
  const nsOk = peer.namespaceSelector
    ? selectorMatches(peer.namespaceSelector, ctx.namespaces[other.pod.namespace] ?? {})
    : other.pod.namespace === policyNs;
  return nsOk && selectorMatches(peer.podSelector, other.pod.labels);
}

function portMatches(ports: any[] | undefined, port: number, protocol: string): boolean {
  if (!ports || ports.length === 0) return true;
  return ports.some((p) => {
    if ((p.protocol ?? 'TCP') !== protocol) return false;
    if (p.port === undefined) return true;
    if (typeof p.port !== 'number') throw new Error(`evaluator: named port '${p.port}' is not modelled`);
    return p.endPort !== undefined ? port >= p.port && port <= p.endPort : port === p.port;
  });
}

const policyTypes = (spec: any): string[] => spec.policyTypes ?? ['Ingress', ...(spec.egress ? ['Egress'] : [])];

function applies(policy: any, ctx: EvalContext, self: Endpoint): boolean {
  if (policy.kind !== ctx.kind) return false;
  if (ctx.kind === 'NetworkPolicy') return true;
  if (!self.pod?.nad) throw new Error(`evaluator: MultiNetworkPolicy needs the NAD of ${self.ip}`);
  const ns = policy.metadata.namespace;
  const nets = String(policy.metadata.annotations?.['k8s.v1.cni.cncf.io/policy-for'] ?? '').split(',').map((s) => s.trim()).filter(Boolean)
    .map((n) => (n.includes('/') ? n : `${ns}/${n}`));
  return nets.includes(self.pod.nad);
}

/** One side: does `self` (a pod) admit the packet in `direction` from/to `other`? */
function sideAdmits(policies: any[], self: Endpoint, other: Endpoint, direction: 'Ingress' | 'Egress', port: number, protocol: string, ctx: EvalContext): Verdict {
  if (!self.pod) return { allowed: true, reason: `${self.ip} is not a pod of this cluster` };
  const selecting = policies.filter((p) => applies(p, ctx, self) && p.metadata.namespace === self.pod!.namespace
    && selectorMatches(p.spec.podSelector, self.pod!.labels) && policyTypes(p.spec).includes(direction));
  if (selecting.length === 0) return { allowed: true, reason: `${self.ip} is not isolated for ${direction}` };
  for (const p of selecting) {
    const rules: any[] = (direction === 'Ingress' ? p.spec.ingress : p.spec.egress) ?? [];
    for (const r of rules) {
      const peers: any[] | undefined = direction === 'Ingress' ? r.from : r.to;
      const peerOk = !peers || peers.length === 0 || peers.some((x) => peerMatches(x, other, p.metadata.namespace, ctx));
      if (peerOk && portMatches(r.ports, port, protocol)) return { allowed: true, reason: `${direction} allowed by ${p.metadata.name}` };
    }
  }
  return { allowed: false, reason: `${direction} of ${self.ip} denied: selected by ${selecting.map((p) => p.metadata.name).join(', ')}, no rule matches` };
}

/** Whether the packet passes both sides' policies. */
export function evaluate(policies: readonly any[], packet: Packet, ctx: EvalContext): Verdict {
  const protocol = packet.protocol ?? 'TCP';
  const out = sideAdmits([...policies], packet.src, packet.dst, 'Egress', packet.port, protocol, ctx);
  if (!out.allowed) return out;
  const inn = sideAdmits([...policies], packet.dst, packet.src, 'Ingress', packet.port, protocol, ctx);
  return inn.allowed ? { allowed: true, reason: `${out.reason}; ${inn.reason}` } : inn;
}
