/**
 * From the fleet's `spec.forklift`, the list of moves and the facts of the generated cluster output to
 * a Forklift plan: providers, one pair of maps per ordered cluster pair that moves happen between, one
 * live Plan per batch, pair and target namespace, a Migration where the moves ask for one. Every check
 * runs; nothing is planned when one fails. Pure, no cdk8s import.
 */
import { FleetDocument } from '../fleet/schema';
import { Move } from './schema';
import {
  ClusterFacts, DEFAULT_CONTROLLER_NAME, ForkliftHubPlan, ForkliftPlanResult, HOST_PROVIDER, LivePlan, MovePlanVm, ObjectRef, PairPlan, ProviderPlan,
} from './model';
import { ForkliftProblems, MovesInput, checkController, checkMoves, checkPairs, checkProviders } from './checks';
import { checkStorage, declaredNetworks, networkOverrides, networkPairs, storagePairs } from './maps';
import { migrationName, pairName, planName } from './names';
import { MovePolicyContext, checkMoveCompression, movePolicyOf, warnUncompressedMoves } from './compression';
import { crossClusterPolicy, warnMoveSettings } from './move-policy';
import { compressionPolicyName } from '../kubevirt/compression';
import { fleetMoveProblems } from '../vmnet/moves';

const byKey = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

/** Plan the Forklift objects of a fleet. `moves` come from the fleet itself or from the moves file. */
export function planForklift(doc: FleetDocument, facts: readonly ClusterFacts[], movesFile?: MovesInput): ForkliftPlanResult {
  const spec = doc.spec.forklift;
  const p = new ForkliftProblems();
  if (!spec) {
    if (movesFile?.moves.length) {
      p.error('no-hub', 'spec.forklift', `is missing, but ${movesFile.path} lists ${movesFile.moves.length} moves`, 'add spec.forklift with the hub (cluster, namespace) and a provider per cluster');
    }
    return { problems: p.problems, warnings: p.warnings };
  }
  if (spec.moves && movesFile) {
    p.error('moves-twice', 'spec.forklift.moves', `moves are listed both here and in ${movesFile.path}`, 'keep them in one place');
  }
  const input: MovesInput = movesFile ?? { moves: spec.moves ?? [], path: 'spec.forklift.moves' };
  const clusters = new Map(facts.map((f) => [f.name, f]));
  checkMoves(p, input, clusters);
  const policyCtx = movePolicyContext(doc, clusters);
  checkMoveCompression(p, input, clusters, policyCtx); // issue #29: compression per move
  warnUncompressedMoves(p, input, clusters, doc.spec.migrationPolicy?.compression);
  warnMoveSettings(p, input, clusters, doc); // issue 51: moves that cannot finish, multifd off
  checkProviders(p, spec, input, clusters);
  checkController(p, spec, input);
  const vmMoves = fleetMoveProblems(doc, input.moves, input.path); // issue 40: moves that keep their address (src/vmnet/moves.ts)
  p.problems.push(...vmMoves.problems);
  p.warnings.push(...vmMoves.warnings);
  checkStorage(p, spec, clusters);
  const valid = input.moves.filter((m) => clusters.has(m.from) && clusters.has(m.to) && m.from !== m.to);
  const pairKeys = [...new Set(valid.map((m) => `${m.from}|${m.to}`))].sort(byKey);
  const pairList = pairKeys.map((k) => k.split('|') as [string, string]);
  checkPairs(p, spec, doc.spec, pairList, clusters);
  const nets = declaredNetworks(p, spec, clusters);
  const overrides = networkOverrides(p, spec, nets, clusters);

  const ns = spec.hub.namespace;
  const hubMember = clusters.has(spec.hub.cluster);
  const providerRef = (c: string): ObjectRef => ({ name: hubMember && c === spec.hub.cluster ? HOST_PROVIDER : c, namespace: ns });
  const pairs: PairPlan[] = pairList.map(([from, to]) => {
    const first = input.moves.findIndex((m) => m.from === from && m.to === to);
    return {
      from, to, name: pairName(from, to), source: providerRef(from), destination: providerRef(to),
      networks: networkPairs(p, from, to, nets, overrides),
      storage: storagePairs(p, spec, from, to, `${input.path}[${first}]`),
    };
  });
  const plans = livePlans(p, input, valid, pairs, compressionOf(doc, clusters, policyCtx));
  const providers: ProviderPlan[] = Object.entries(spec.providers ?? {})
    .filter(([c]) => clusters.has(c) && !(hubMember && c === spec.hub.cluster))
    .map(([c, v]) => ({ cluster: c, name: c, url: v.url, secret: v.secret }))
    .sort((a, b) => byKey(a.name, b.name));
  if (p.problems.length) return { problems: p.problems, warnings: p.warnings };
  const plan: ForkliftHubPlan = {
    fleet: doc.metadata.name,
    hub: { cluster: spec.hub.cluster, namespace: ns, member: hubMember },
    providers,
    ...(spec.controller ? { controller: { name: spec.controller.name ?? DEFAULT_CONTROLLER_NAME, liveMigration: spec.controller.liveMigration } } : {}),
    pairs,
    plans,
  };
  return { plan, problems: [], warnings: p.warnings };
}

type CompressionOf = (m: Move) => MovePlanVm['compression'];

/** What decides a move's own MigrationPolicy (src/forklift/compression.ts `movePolicyOf`). */
export function movePolicyContext(doc: FleetDocument, clusters: ReadonlyMap<string, { readonly harvester?: boolean }>): MovePolicyContext {
  return { crossCluster: crossClusterPolicy(doc), fleetCompression: doc.spec.migrationPolicy?.compression, harvester: (c) => !!clusters.get(c)?.harvester };
}

/**
 * What compression a move's migration gets: its own policy's (the move's compression, else the fleet's), else the
 * fleet's, which every cluster but a Harvester one has as a policy (src/kubevirt/compression.ts).
 */
function compressionOf(doc: FleetDocument, clusters: ReadonlyMap<string, ClusterFacts>, ctx: MovePolicyContext): CompressionOf {
  const fleet = doc.spec.migrationPolicy?.compression;
  return (m) => {
    const own = movePolicyOf(doc.metadata.name, m, ctx);
    if (own) return own.compression ? { value: own.compression, policy: own.name } : undefined;
    return fleet && !clusters.get(m.to)?.harvester ? { value: fleet, policy: compressionPolicyName(doc.metadata.name) } : undefined;
  };
}

/** Group moves into Plans (batch, pair, target namespace); moves of one Plan must agree on start/run. */
function livePlans(p: ForkliftProblems, input: MovesInput, valid: readonly Move[], pairs: readonly PairPlan[], compression: CompressionOf): LivePlan[] {
  const groups = new Map<string, Move[]>();
  for (const m of valid) {
    const key = `${m.batch}|${m.from}|${m.to}|${m.targetNamespace ?? m.namespace}`;
    groups.set(key, [...(groups.get(key) ?? []), m]);
  }
  // a batch and pair moving into several target namespaces needs one Plan per namespace: name them apart
  const namespacesOf = new Map<string, Set<string>>();
  for (const key of groups.keys()) {
    const [batch, from, to, tns] = key.split('|');
    const k = `${batch}|${from}|${to}`;
    namespacesOf.set(k, new Set([...(namespacesOf.get(k) ?? []), tns]));
  }
  const plans: LivePlan[] = [];
  for (const [key, moves] of groups) {
    const [batch, from, to, targetNamespace] = key.split('|');
    const split = namespacesOf.get(`${batch}|${from}|${to}`)!.size > 1;
    const name = planName(batch, from, to, split ? targetNamespace : undefined);
    const pair = pairs.find((x) => x.from === from && x.to === to)!;
    const starts = new Set(moves.map((m) => `${m.start ?? false}|${m.run ?? 1}`));
    if (starts.size > 1) {
      const i = input.moves.indexOf(moves[moves.length - 1]);
      p.error('start-mismatch', `${input.path}[${i}]`, `the moves of Plan ${name} (batch ${batch}, ${from} -> ${to}) disagree on start/run: one Migration starts them all`, 'give every move of the batch between these clusters the same start and run');
    }
    const m0 = moves[0];
    plans.push({
      name, batch, from, to, targetNamespace, maps: pair.name, source: pair.source, destination: pair.destination,
      vms: moves.map((m): MovePlanVm => {
        const c = compression(m);
        return { name: m.vm, namespace: m.namespace, ...(c ? { compression: c } : {}) };
      }).sort((a, b) => byKey(`${a.namespace}/${a.name}`, `${b.namespace}/${b.name}`)),
      ...(m0.start ? { migration: { name: migrationName(name, m0.run ?? 1), run: m0.run ?? 1 } } : {}),
    });
  }
  return plans.sort((a, b) => byKey(a.batch, b.batch) || byKey(a.name, b.name));
}
