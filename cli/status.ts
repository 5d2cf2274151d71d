/**
 * `migration-mesh status FLEET.yaml`: asks every cluster of the fleet (one kubeconfig context each)
 * through `@kubernetes/client-node`, read-only, and judges with src/report/status.ts. Each cluster is
 * asked in parallel and given at most `timeoutMs`; an unreachable cluster becomes one line.
 */
import * as crypto from 'crypto';
import * as path from 'path';
import * as k8s from '@kubernetes/client-node';
import { ledgerPathFor, loadFleetFile, loadLedgerFile } from '../src/fleet/load';
import { readInputText } from '../src/base/input-file';
import { quantityValue } from '../src/base/quantity';
import { parseYamlInput } from '../src/base/yaml-input';
import { FleetValidationError } from '../src/base/errors';
import { resolveFleet } from '../src/fleet/resolve';
import { hcoKubevirtOf } from '../src/kubevirt/config';
import { FleetStatus, judgeFleet, ownedDifference } from '../src/report/status';
import { servedNamespaceProblems } from '../src/vmnet/namespaces';
import { resolveVmNetworks } from '../src/vmnet/plan';
import { ClusterVmNetworks } from '../src/vmnet/resolved';
import { CaCert, ClusterFacts, DriftEntry, GatewayFacts } from '../src/report/status-facts';
import { GeneratedObject as Obj, generatedObjects } from './generated-objects';
import { loadKubeconfig } from './kubeconfig';
import { createProgress } from './progress';
import { moveFacts, plannedMoves } from './status-moves';
import { GATEWAY_DEPLOYMENT, attachments, gatewayPods, vipOf, why } from './status-runtime';
import { DATAPATH_NAMES } from '../src/fleet/datapath-modes';
import { DELIVERY_KINDS } from '../src/kubevirt/delivery-forms';

export interface StatusOptions {
  readonly fleetFile: string;
  /** Root of the synthesized tree: objects are read from `<outDir>/<fleet>/<cluster>/`. */
  readonly outDir: string;
  /** Cluster name -> kubeconfig context (default: the context named as the cluster). */
  readonly contexts?: Record<string, string>;
  /** A kubeconfig file (default: $KUBECONFIG or ~/.kube/config). */
  readonly kubeconfig?: string;
  /** Longest wait for one cluster. @default 10000 */
  readonly timeoutMs?: number;
  /** Pre-flight every VM of the generated Forklift Plans (`--moves`). @default false */
  readonly moves?: boolean;
}



function caCerts(bundle: string | undefined): CaCert[] {
  const pems = (bundle ?? '').match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? [];
  return pems.flatMap((p) => {
    try {
      const x = new crypto.X509Certificate(p);
      return [{ sha256: crypto.createHash('sha256').update(x.raw).digest('hex'), subject: x.subject.replace(/\n/g, ', '), notAfter: new Date(x.validTo).toISOString() }];
    } catch { return []; }
  });
}

const codeOf = (e: unknown): number | undefined => (e as { code?: unknown })?.code as number | undefined;

type KubevirtFacts = NonNullable<Extract<ClusterFacts, { reachable: true }>['kubevirt']>;
type Reader = (o: { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } }) => Promise<Record<string, unknown> | undefined>;
type Quantities = { cpu?: string | number; memory?: string | number };
type KvConfig = {
  migrations?: { network?: string }; developerConfiguration?: { featureGates?: string[] };
  virtualMachineOptions?: { disableSerialConsoleLog?: object };
  supportContainerResources?: { type?: string; resources?: { requests?: Quantities; limits?: Quantities } }[];
};
const kvConfig = (o: unknown) => (o as { spec?: { configuration?: KvConfig } } | undefined)?.spec?.configuration;

/**
 * The live KubeVirt CR against what we want in it. KubeVirt delivery: the generated object itself. HCO
 * delivery: the KubeVirt CR HCO writes from our HyperConverged CR (src/kubevirt/config.ts `hcoKubevirtOf`:
 * its name, namespace and what our form puts there), since HCO, not we, writes it.
 */
/** Non-zero cpu (millicores) and memory (bytes) of a resource list, as KubeVirt's GetSupportContainerRequest reads them. */
const nonZero = (r: Quantities | undefined) => {
  const q = (v: string | number | undefined, milli: boolean) => {
    const n = v === undefined ? undefined : quantityValue(String(v));
    return n ? Math.round(milli ? n * 1000 : n) : undefined;
  };
  const [cpuMilli, memoryBytes] = [q(r?.cpu, true), q(r?.memory, false)];
  return { ...(cpuMilli ? { cpuMilli } : {}), ...(memoryBytes ? { memoryBytes } : {}) };
};
/** What the LimitRange check needs of the live CR: is the console log container off, and its resources. */
const consoleLogFacts = (got: unknown) => {
  const c = kvConfig(got);
  const entry = c?.supportContainerResources?.find((e) => e.type === 'guest-console-log');
  return {
    ...(c?.virtualMachineOptions?.disableSerialConsoleLog ? { serialConsoleLogDisabled: true } : {}),
    ...(entry ? { guestConsoleLog: { requests: nonZero(entry.resources?.requests), limits: nonZero(entry.resources?.limits) } } : {}),
  };
};

const observedVersion = (got: unknown) => {
  const v = (got as { status?: { observedKubeVirtVersion?: string } } | undefined)?.status?.observedKubeVirtVersion;
  return v ? { version: v } : {};
};

async function kubevirtFacts(
  kvObj: Obj, live: Record<string, unknown> | undefined, read: Reader, declaredGates: readonly string[],
): Promise<KubevirtFacts | undefined> {
  const facts = (got: unknown, wantNetwork: string | undefined, wantGates: string[]) => ({
    found: got !== undefined, migrationNetwork: kvConfig(got)?.migrations?.network, featureGates: kvConfig(got)?.developerConfiguration?.featureGates ?? [],
    wantNetwork, wantGates, ...observedVersion(got), ...consoleLogFacts(got),
  });
  if (kvObj.kind === 'KubeVirt') return facts(live, kvConfig(kvObj)?.migrations?.network, kvConfig(kvObj)?.developerConfiguration?.featureGates ?? []);
  if (kvObj.kind !== 'HyperConverged') return undefined;
  const want = hcoKubevirtOf(kvObj, declaredGates);
  const got = await read({ apiVersion: 'kubevirt.io/v1', kind: 'KubeVirt', metadata: { name: want.name, namespace: want.namespace } });
  return { ...facts(got, want.network, want.gates), object: `${want.namespace}/${want.name}` };
}

/**
 * Pre-flight of issue 40 item 2, read-only: each served namespace of the cluster's primary VM networks as the
 * cluster has it (`get`, a missing one is fine: the fleet creates it with the label), judged by servedNamespaceProblems.
 */
async function servedNamespaceFacts(read: Reader, served: ClusterVmNetworks, declared: readonly { namespaces: string[] }[]) {
  const names = [...new Set(served.networks.filter((n) => n.primaryNamespaces).flatMap((n) => n.namespaces))];
  const existing = [];
  for (const name of names) {
    const got = await read({ apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
    if (got) existing.push({ name, labels: (got.metadata as { labels?: Record<string, string> } | undefined)?.labels });
  }
  return servedNamespaceProblems(served, existing, declared);
}

/** Where one cluster's questions stand: what a timeout says about a cluster that answered, but slowly. */
interface AskProgress { step: string; read: number; readonly of: number }

const READS_IN_FLIGHT = 8;

/** `fn` over `items` with at most `limit` calls in flight; results in the items' order; the first failure rejects. */
async function mapLimited<T, R>(items: readonly T[], limit: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const worker = async () => { while (next < items.length) { const i = next++; out[i] = await fn(items[i]); } };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** The line for a cluster whose answers did not all come within the bound, with what did come and the fix. */
function lateAnswer(at: AskProgress, timeoutMs: number): string {
  const s = `${timeoutMs / 1000} s`;
  if (at.step === 'kubevirt-ca') return `no answer within ${s}`;
  const where = at.step === 'objects' ? `${at.read} of ${at.of} generated objects read, the rest still pending` : `all ${at.of} generated objects read, ${at.step} still pending`;
  return `not every answer came within ${s} (${where}): a slow or stalled API server or link; give it longer with --timeout SECONDS`;
}

async function askCluster(
  kc: k8s.KubeConfig, cluster: string, context: string, objects: Obj[], declaredGates: readonly string[],
  served: { networks: ClusterVmNetworks; declared: readonly { namespaces: string[] }[] } | undefined, at: AskProgress, probe: boolean,
): Promise<ClusterFacts> {
  const api = k8s.KubernetesObjectApi.makeApiClient(kc);
  type Ref = { apiVersion: string; kind: string; metadata: { name: string; namespace?: string } };
  const read: Reader = async (o: Ref) => {
    try {
      const got = await api.read({ apiVersion: o.apiVersion, kind: o.kind, metadata: { name: o.metadata.name, namespace: o.metadata.namespace } });
      return JSON.parse(JSON.stringify(got));
    } catch (e) {
      // a 404 for core v1's own discovery (/api/v1) is no missing object: the server is not an API server
      if (codeOf(e) === 404 && o.apiVersion === 'v1' && /^Failed to fetch resource metadata for /.test((e as Error).message)) {
        throw new Error(`${kc.getCluster(kc.getContextObject(context)?.cluster ?? '')?.server ?? 'the server'} answers, but is not a Kubernetes API server `
          + `(404 for /api/v1, which every API server serves): check the server URL of kubeconfig context ${context}`);
      }
      if (codeOf(e) === 404 || /Unrecognized API version and kind/.test((e as Error).message)) return undefined;
      throw e;
    }
  };
  const kvObj = objects.find((o) => DELIVERY_KINDS.has(o.kind));
  const kubevirtNs = kvObj?.metadata.namespace ?? 'kubevirt';
  // the first call says whether the cluster answers at all
  let ca: CaCert[];
  try {
    const cm = await read({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'kubevirt-ca', namespace: kubevirtNs } });
    ca = caCerts((cm?.data as Record<string, string> | undefined)?.['ca-bundle']);
  } catch (e) {
    return { cluster, context, reachable: false, error: why(e) };
  }
  at.step = 'objects';
  const drift: DriftEntry[] = [];
  const live = new Map<Obj, Record<string, unknown> | undefined>();
  // several reads in flight: a far or loaded API server costs a few round trips, not one per object
  const got = await mapLimited(objects, READS_IN_FLIGHT, async (o) => { const r = await read(o); at.read++; return r; });
  objects.forEach((o, i) => {
    live.set(o, got[i]);
    const id = `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
    if (!got[i]) { drift.push({ object: id, state: 'missing' }); return; }
    const d = ownedDifference(o, got[i]);
    if (d) drift.push({ object: id, state: 'different', ...d });
  });
  at.step = 'gateway pods';
  const deployments = objects.filter((o) => o.kind === 'Deployment' && GATEWAY_DEPLOYMENT.test(o.metadata.name));
  const gateway: GatewayFacts | undefined = deployments.length
    ? {
      replicas: deployments.length,
      ready: deployments.filter((d) => Number((live.get(d)?.status as { readyReplicas?: number } | undefined)?.readyReplicas ?? 0) > 0).length,
      vip: vipOf(objects),
      ...await gatewayPods(kc, deployments.filter((d) => live.get(d)), probe).then((pods) => ({ pods }), (e) => ({ podsError: why(e) })),
    }
    : undefined;
  at.step = 'the KubeVirt CR';
  const kubevirt = kvObj && await kubevirtFacts(kvObj, live.get(kvObj), read, declaredGates);
  const network = kubevirt?.wantNetwork;
  at.step = 'virt-handler and sync controller pods';
  const attached = network
    ? { attachments: await attachments(kc, kubevirtNs, network).catch((e) => ({ network: `${kubevirtNs}/${network}`, error: why(e), pods: [] })) }
    : {};
  at.step = 'served namespaces';
  const servedNamespaces = served?.networks.networks.some((n) => n.primaryNamespaces)
    ? { servedNamespaces: await servedNamespaceFacts(read, served.networks, served.declared) } : {};
  return { cluster, context, reachable: true, checked: objects.length, drift, kubevirt, gateway, ...attached, ca, ...servedNamespaces };
}

function withTimeout<T>(p: Promise<T>, ms: number, onTimeout: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((r) => { timer = setTimeout(() => r(onTimeout()), ms); })]).finally(() => clearTimeout(timer));
}

/** Ask every cluster and judge the fleet. */
export async function fleetStatus(o: StatusOptions): Promise<FleetStatus> {
  const doc = loadFleetFile(o.fleetFile);
  const fleet = resolveFleet(doc, o.fleetFile);
  // the served namespaces of each cluster's VM networks (a fleet whose VM networks do not plan gets none: synth refuses it)
  const vmNetworks = doc.spec.vmNetworks?.length ? resolveVmNetworks(doc, loadLedgerFile(ledgerPathFor(o.fleetFile))).perCluster : undefined;
  const base = loadKubeconfig(o.kubeconfig);
  const timeoutMs = o.timeoutMs ?? 10_000;
  const progress = createProgress('status: clusters answered', { minTotal: 2 });
  let done = 0;
  const kcs = new Map<string, k8s.KubeConfig>();
  const clusters = await Promise.all(fleet.clusters.map(async (c): Promise<ClusterFacts> => {
    const context = o.contexts?.[c.name] ?? c.name;
    const objects = generatedObjects(path.join(o.outDir, fleet.name, c.name));
    let facts: ClusterFacts;
    if (!base.getContextObject(context)) {
      facts = { cluster: c.name, context, reachable: false, error: `no context '${context}' in the kubeconfig` };
    } else {
      const kc = new k8s.KubeConfig();
      kc.loadFromString(base.exportConfig());
      kc.setCurrentContext(context);
      kcs.set(c.name, kc);
      const served = vmNetworks?.get(c.name);
      const vm = served && { networks: served, declared: doc.spec.vmNetworks ?? [] };
      const at: AskProgress = { step: 'kubevirt-ca', read: 0, of: objects.length };
      const asked = askCluster(kc, c.name, context, objects, c.kubevirt.existing.featureGates, vm, at, !!o.moves);
      facts = await withTimeout(asked.catch((e) => ({ cluster: c.name, context, reachable: false as const, error: why(e) })),
        timeoutMs, () => ({ cluster: c.name, context, reachable: false, error: lateAnswer(at, timeoutMs) }));
    }
    progress.update(++done, fleet.clusters.length);
    return facts;
  }));
  progress.done();
  const groups = DATAPATH_NAMES.map((m) => fleet.clusters.filter((c) => c.datapath === m).map((c) => c.name)).filter((g) => g.length);
  const answered = (name: string) => (clusters.find((c) => c.cluster === name)?.reachable ? kcs.get(name) : undefined);
  const planned = o.moves ? plannedMoves(path.join(o.outDir, fleet.name)) : undefined;
  const moves = planned && await withTimeout(moveFacts(planned, answered, clusters), timeoutMs, () => planned.map((m) => ({
    plan: m.plan, from: m.from, to: m.to, vm: m.vm, targetNamespace: m.targetNamespace, sourceError: 'no answer', target: { error: `no answer within ${timeoutMs / 1000} s` },
  })));
  return judgeFleet(fleet.name, clusters, groups, moves);
}

/**
 * `--context-map FILE`: a YAML/JSON mapping of cluster name to kubeconfig context. With `clusters` (the
 * fleet's), a key that names no cluster is refused (a typo would leave its cluster on a context of its own
 * name, which may be another cluster's, and `pin-addresses --apply` would write there).
 */
export function loadContextMap(file: string, clusters?: readonly string[]): Record<string, string> {
  const m = parseYamlInput(readInputText(file, 'context map'), file, 'yaml-syntax', 'context map', file);
  const notText = typeof m === 'object' && m !== null && !Array.isArray(m) ? Object.keys(m).filter((k) => typeof (m as Record<string, unknown>)[k] !== 'string') : undefined;
  if (!notText || notText.length) {
    const message = notText ? `the contexts of ${notText.join(', ')} are not names (text)` : `it is ${Array.isArray(m) ? 'a list' : `the ${typeof m} ${JSON.stringify(m)}`}, not a mapping`;
    throw new FleetValidationError([{ code: 'status/context-map-invalid', path: file, message,
      fix: 'write one line per cluster, its name and its kubeconfig context name: east-1: prod-east' }], file, 'context map');
  }
  const unknown = clusters ? Object.keys(m as object).filter((k) => !clusters.includes(k)) : [];
  if (unknown.length) {
    throw new FleetValidationError([{ code: 'status/context-map-invalid', path: `${file}: ${unknown[0]}`,
      message: `${unknown.map((k) => `'${k}'`).join(', ')} ${unknown.length === 1 ? 'is' : 'are'} not a cluster of the fleet (${clusters!.join(', ')}): a typo leaves its cluster on the context of its own name`,
      fix: `name each cluster as spec.clusters does, e.g. ${clusters![0]}: <its kubeconfig context>` }], file, 'context map');
  }
  return m as Record<string, string>;
}
