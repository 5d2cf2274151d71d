/**
 * The checks Forklift makes late (at run time, after the go button) or never, made before anything is
 * written: each cluster pair can reach each other, both list `DecentralizedLiveMigration`, trust is
 * exchanged, every cluster has a provider, every mapped network exists, no VM moves twice in a batch.
 * Every problem has a path, a message, a fix and a stable code. Pure, no cdk8s import.
 */
import { FleetProblem } from '../base/errors';
import { ForkliftCode } from '../base/problem-codes';
import { ForkliftSpec, Move } from './schema';
import { ClusterFacts } from './model';
import { FEATURE_GATE_DLM } from '../kubevirt/config';
import { trustBetween } from './trust';

export interface MovesInput {
  readonly moves: readonly Move[];
  /** Path of the list in error messages: `spec.forklift.moves`, or `<file>: moves`. */
  readonly path: string;
}

export class ForkliftProblems {
  readonly problems: FleetProblem[] = [];
  readonly warnings: FleetProblem[] = [];
  error(code: ForkliftCode, path: string, message: string, fix: string): void {
    this.problems.push({ code: `forklift/${code}`, path, message, fix });
  }
  warn(code: ForkliftCode, path: string, message: string, fix: string): void {
    this.warnings.push({ code: `forklift/${code}`, path, message, fix });
  }
}

const F = 'spec.forklift';
const list = (xs: Iterable<string>): string => [...xs].join(', ');

/** Moves name fleet clusters, two different ones, and never the same VM twice in one batch. */
export function checkMoves(p: ForkliftProblems, input: MovesInput, clusters: ReadonlyMap<string, ClusterFacts>): void {
  const seenSource = new Map<string, number>();
  const seenTarget = new Map<string, number>();
  input.moves.forEach((m, i) => {
    const at = `${input.path}[${i}]`;
    for (const side of ['from', 'to'] as const) {
      if (!clusters.has(m[side])) p.error('unknown-cluster', `${at}.${side}`, `'${m[side]}' is not a cluster of the fleet`, `use one of ${list(clusters.keys())}`);
    }
    if (m.from === m.to) {
      p.error('same-cluster', `${at}.to`, `moves ${m.namespace}/${m.vm} from ${m.from} to the same cluster`, 'name another cluster: these are cross-cluster live migrations');
    }
    const src = `${m.batch}|${m.from}|${m.namespace}/${m.vm}`;
    const first = seenSource.get(src);
    if (first !== undefined) {
      p.error('moved-twice', at, `moves ${m.namespace}/${m.vm} from ${m.from} a second time in batch ${m.batch} (first at ${input.path}[${first}])`, 'keep one entry, or put the second move in a later batch');
    } else {seenSource.set(src, i);}
    const dst = `${m.batch}|${m.to}|${m.targetNamespace ?? m.namespace}/${m.vm}`;
    const other = seenTarget.get(dst);
    if (other !== undefined && first === undefined) {
      p.error('target-collision', at, `lands a second VM as ${m.targetNamespace ?? m.namespace}/${m.vm} on ${m.to} in batch ${m.batch} (also ${input.path}[${other}])`, 'give one of them another targetNamespace, or move it in another batch');
    } else if (other === undefined) {seenTarget.set(dst, i);}
  });
  checkAcrossMoves(p, input);
  checkMacConflicts(p, input);
  checkLibvirtHooks(p, input, clusters);
}

/**
 * KubeVirt v1.9 turns LibvirtHooksServerAndClient on by default (Beta); a decentralized migration whose
 * target namespace (or name) differs from the source then fails until kubevirt PR #18526 (open) lands
 * (kubevirt PR #18526, open: https://github.com/kubevirt/kubevirt/pull/18526). Warned for moves into another namespace of a 1.9 target where the gate
 * is still on (not in the fleet's `kubevirt.disabledFeatureGates`, not disabled by HCO).
 */
function checkLibvirtHooks(p: ForkliftProblems, input: MovesInput, clusters: ReadonlyMap<string, ClusterFacts>): void {
  input.moves.forEach((m, i) => {
    const to = clusters.get(m.to);
    if (!to?.libvirtHooksRisk || m.targetNamespace === undefined || m.targetNamespace === m.namespace) return;
    p.warn('libvirt-hooks', `${input.path}[${i}].targetNamespace`,
      `moves ${m.namespace}/${m.vm} into namespace ${m.targetNamespace} on ${m.to}, whose KubeVirt 1.9 has the LibvirtHooksServerAndClient gate on by default: decentralized migrations whose target namespace differs from the source fail until kubevirt PR #18526 lands`,
      `keep the namespace, or set spec.clusters[${to.index}].kubevirt.disabledFeatureGates: [LibvirtHooksServerAndClient] (or fleet-wide spec.kubevirt.disabledFeatureGates): the documented mitigation, emitted as ${m.to}'s KubeVirt developerConfiguration.disabledFeatureGates`);
  });
}

/**
 * Two VMs with one MAC on one target cluster: Forklift made this check for KubeVirt-to-KubeVirt moves and
 * dropped it (Forklift PR #8293), and a live move keeps the VM's MAC. Only MACs the moves declare are
 * known; the same VM landing again on a cluster it left (same target name) is not a conflict.
 */
function checkMacConflicts(p: ForkliftProblems, input: MovesInput): void {
  const seen = new Map<string, { index: number; vm: string }>();
  input.moves.forEach((m, i) => {
    const vm = `${m.targetNamespace ?? m.namespace}/${m.vm}`;
    (m.macAddresses ?? []).forEach((mac, k) => {
      const key = `${m.to}|${mac.toLowerCase()}`;
      const first = seen.get(key);
      if (!first) { seen.set(key, { index: i, vm }); return; }
      if (first.vm === vm) return;
      p.error('mac-conflict', `${input.path}[${i}].macAddresses[${k}]`,
        `${mac.toLowerCase()} of ${m.namespace}/${m.vm} is also the MAC of ${first.vm}, moved to ${m.to} by ${input.path}[${first.index}]; two VMs with one MAC on one network lose traffic, and Forklift no longer checks this (PR #8293)`,
        `give one of the VMs another MAC before moving it (spec.template.spec.domain.devices.interfaces[].macAddress), or move it to another cluster`);
    });
  });
}

/**
 * What Forklift and KubeVirt would fail at run time, across moves: a swap of same-named VMs in one batch
 * (each lands where the other one still runs: KubeVirt refuses a VM whose name exists), and one VM
 * moved by two started batches (two migrations of one VMI at once, or a move from a cluster the VM has
 * not reached yet).
 */
function checkAcrossMoves(p: ForkliftProblems, input: MovesInput): void {
  const source = (m: Move) => `${m.from}|${m.namespace}/${m.vm}`;
  const target = (m: Move) => `${m.to}|${m.targetNamespace ?? m.namespace}/${m.vm}`;
  const ms = input.moves;
  ms.forEach((m, i) => {
    const at = `${input.path}[${i}]`;
    for (let j = 0; j < ms.length; j++) {
      const o = ms[j];
      if (j === i) continue;
      if (o.batch === m.batch && j < i && target(m) === source(o) && target(o) === source(m)) {
        p.error('swap', at, `swaps ${m.namespace}/${m.vm} between ${m.from} and ${m.to} with ${input.path}[${j}] in batch ${m.batch}: each VM lands under a name the other one still holds, and KubeVirt refuses the second VM of one name`,
          'move one of them in an earlier batch (and the other once it is gone), or give one a targetNamespace');
      }
      if (o.batch === m.batch || !m.start || !o.start) continue;
      if (j < i && source(m) === source(o)) {
        p.error('started-twice', at, `moves ${m.namespace}/${m.vm} from ${m.from} in batch ${m.batch}, and ${input.path}[${j}] moves it too in batch ${o.batch}; both are started, so two migrations of one VM would run at once`,
          `keep one move, or set start: false on batch ${m.batch} and start it after batch ${o.batch} completes`);
      } else if (source(m) === target(o)) {
        p.error('started-twice', at, `moves ${m.namespace}/${m.vm} from ${m.from} in batch ${m.batch}, where ${input.path}[${j}] (batch ${o.batch}) is only bringing it; both are started at once, so this move starts before the VM is there`,
          `set start: false on batch ${m.batch} and start it after batch ${o.batch} completes`);
      }
    }
  });
}

/** Providers name fleet clusters; every cluster a move uses (other than a member hub) has one. */
export function checkProviders(p: ForkliftProblems, spec: ForkliftSpec, input: MovesInput, clusters: ReadonlyMap<string, ClusterFacts>): void {
  const providers = spec.providers ?? {};
  const hubMember = clusters.has(spec.hub.cluster);
  for (const name of Object.keys(providers)) {
    if (!clusters.has(name)) {p.error('unknown-cluster', `${F}.providers.${name}`, `'${name}' is not a cluster of the fleet`, `remove it, or use one of ${list(clusters.keys())}`);}
    else if (hubMember && name === spec.hub.cluster) {
      p.error('hub-provider', `${F}.providers.${name}`, `${name} is the hub: Forklift reaches it through its own 'host' provider`, `remove providers.${name}`);
    }
  }
  const used = new Set(input.moves.flatMap((m) => [m.from, m.to]).filter((c) => clusters.has(c)));
  const missing = [...used].filter((c) => !(c in providers) && !(hubMember && c === spec.hub.cluster)).sort();
  for (const c of missing) {
    p.error('no-provider', `${F}.providers`, `has no entry for ${c}, which moves use`, `add providers.${c}: {url: https://api.${c}.example:6443, secret: ${c}-provider} and create that Secret (keys token, ca.crt) in ${spec.hub.namespace} on ${spec.hub.cluster}`);
  }
}

/** Each pair that moves happen between: same migration group, the gate on both, trust exchanged. */
export function checkPairs(
  p: ForkliftProblems, spec: ForkliftSpec, fleetSpec: unknown, pairs: readonly [string, string][], clusters: ReadonlyMap<string, ClusterFacts>,
): void {
  const groups = new Map<string, string[]>();
  for (const c of clusters.values()) groups.set(c.datapath, [...(groups.get(c.datapath) ?? []), c.name]);
  const gateChecked = new Set<string>();
  for (const [from, to] of pairs) {
    const a = clusters.get(from)!;
    const b = clusters.get(to)!;
    if (a.datapath !== b.datapath) {
      p.error('not-reachable', `spec.clusters[${b.index}].datapath`,
        `${from} (${a.datapath}) and ${to} (${b.datapath}) are in different migration groups, so ${to} cannot receive from ${from}: a gateway cluster reaches only gateway clusters, a direct cluster only clusters whose handlers sit on the shared network, a native cluster only native clusters`,
        `give both one datapath (spec.datapath, or clusters[].datapath), or move between clusters of one group: ${[...groups].map(([m, cs]) => `${m}: ${cs.join(', ')}`).join('; ')}`);
    }
    for (const c of [a, b]) {
      if (gateChecked.has(c.name)) continue;
      gateChecked.add(c.name);
      if (c.featureGates.includes(FEATURE_GATE_DLM) || spec.providers?.[c.name]?.externalFeatureGates) continue;
      p.error('feature-gate', `spec.clusters[${c.index}]`,
        `the KubeVirt configuration generated for ${c.name} does not list ${FEATURE_GATE_DLM} (its delivery writes no KubeVirt featureGates, e.g. Harvester); Forklift runs a live Plan only when both clusters list the gate explicitly, and reads nothing else`,
        `list ${FEATURE_GATE_DLM} in ${c.name}'s KubeVirt featureGates yourself, then set spec.forklift.providers.${c.name}.externalFeatureGates: true`);
    }
    if (trustBetween(fleetSpec, from, to) === 'disabled') {
      p.error('trust-disabled', 'spec.trust', `trust exchange is turned off for ${from} or ${to}: the migration's TLS handshake fails once a KubeVirt CA rotates`, `enable the trust exchange for both clusters, or drop the moves between ${from} and ${to}`);
    }
  }
}

/** `liveMigration: false` makes Forklift run live Plans as cold ones. */
export function checkController(p: ForkliftProblems, spec: ForkliftSpec, input: MovesInput): void {
  if (spec.controller && !spec.controller.liveMigration && input.moves.length) {
    p.error('live-disabled', `${F}.controller.liveMigration`, 'is false while moves are listed: Forklift then runs a live Plan as a cold migration (the VM is shut down)', 'set it to true, or remove the moves');
  }
}
