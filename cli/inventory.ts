/**
 * `migration-mesh inventory FLEET.yaml [--cluster NAME] [--context-map FILE] [--kubeconfig FILE] [--out FILE]`:
 * read what runs where from every cluster of the fleet (read-only, through `@kubernetes/client-node`, each
 * cluster in parallel and bounded by --timeout) and write it as the Inventory document `evacuate` plans from
 * (src/forklift/inventory-read.ts says how objects become entries). With --cluster, only that cluster's VMs are
 * listed (the cluster to drain); every cluster's nodes always are. Nothing is written unless every cluster
 * answered: a half-read fleet would plan moves onto clusters it did not see. The document is written atomically
 * (`FLEET.inventory.yaml` beside the fleet file, or --out FILE; `--out -` prints it): it is a snapshot, and a
 * second run replaces it.
 */
import * as path from 'path';
import * as k8s from '@kubernetes/client-node';
import * as yaml from 'yaml';
import { FleetProblem, FleetValidationError } from '../src/base/errors';
import { readFleetFile } from '../src/fleet/load';
import { Inventory, inventorySchema } from '../src/forklift/inventory';
import { ClusterObjects, inventoryFromObjects, SkippedVm } from '../src/forklift/inventory-read';
import { loadKubeconfig } from './kubeconfig';
import { writeOutputs } from './write-tree';

export interface InventoryOptions {
  readonly fleetFile: string;
  /** List the VMs of this cluster only. @default - every cluster's */
  readonly cluster?: string;
  /** Cluster name -> kubeconfig context. @default - the context named as the cluster */
  readonly contexts?: Record<string, string>;
  /** A kubeconfig file. @default - $KUBECONFIG or ~/.kube/config */
  readonly kubeconfig?: string;
  /** Where to write: a file, or `-` for the returned text only. @default FLEET.inventory.yaml beside the fleet file */
  readonly out?: string;
  /** Longest wait for one cluster. @default 30000 */
  readonly timeoutMs?: number;
}

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const PAGE = 500;

const inventoryPathFor = (fleetFile: string): string =>
  path.join(path.dirname(fleetFile), `${path.basename(fleetFile).replace(/(\.fleet)?\.(ya?ml|json)$/, '')}.inventory.yaml`);

/** Every page of a list, as plain JSON (the server's own field names). */
type Page = { items?: unknown[]; metadata?: { _continue?: string; continue?: string } };
async function listAll(page: (cont: string | undefined) => Promise<Page>): Promise<Json[]> {
  const items: Json[] = [];
  let cont: string | undefined;
  for (let pages = 0; pages < 10_000; pages++) {
    const r = JSON.parse(JSON.stringify(await page(cont))) as { items?: Json[]; metadata?: { continue?: string; _continue?: string } };
    items.push(...(r.items ?? []));
    cont = r.metadata?.continue ?? r.metadata?._continue;
    if (!cont) return items;
  }
  throw new Error('more than 10,000 pages in one list');
}

async function readCluster(kc: k8s.KubeConfig, wantVms: boolean): Promise<ClusterObjects> {
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const custom = kc.makeApiClient(k8s.CustomObjectsApi);
  const kubevirt = (plural: string) => listAll((c) => custom.listClusterCustomObject({ group: 'kubevirt.io', version: 'v1', plural, limit: PAGE, _continue: c }));
  const [nodes, pods, pvcs, vms, vmis, kvs] = await Promise.all([
    listAll((c) => core.listNode({ limit: PAGE, _continue: c })),
    listAll((c) => core.listPodForAllNamespaces({ limit: PAGE, _continue: c, fieldSelector: 'status.phase!=Succeeded,status.phase!=Failed' })),
    wantVms ? listAll((c) => core.listPersistentVolumeClaimForAllNamespaces({ limit: PAGE, _continue: c })) : [],
    wantVms ? kubevirt('virtualmachines') : [],
    wantVms ? kubevirt('virtualmachineinstances') : [],
    wantVms ? kubevirt('kubevirts') : [],
  ]);
  return { nodes, pods, pvcs, vms, vmis, kubevirt: kvs[0] };
}

/** A failed read as a problem of its cluster, with the fix for what failed. */
function readProblem(cluster: string, context: string, e: unknown): FleetProblem {
  const code = (e as { code?: number }).code;
  const message = `cluster ${cluster} (context ${context}): ${(e as Error).message.split('\n')[0]}`;
  const fix = code === 403
    ? 'give the identity of the context get and list on nodes, pods, persistentvolumeclaims and kubevirt.io virtualmachines, virtualmachineinstances and kubevirts (the ClusterRole in docs/migrations.md)'
    : code === 404 ? 'install KubeVirt on the cluster (its VirtualMachine CRD is missing), or check the server URL of the context'
      : 'check that the cluster answers (migration-mesh status) or give it longer with --timeout SECONDS';
  return { code: 'forklift/inventory-read', path: `--context-map: ${cluster}`, message, fix };
}

function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<T>((_, reject) => { timer = setTimeout(() => reject(new Error(`no full answer within ${ms / 1000} s (${what})`)), ms); })])
    .finally(() => clearTimeout(timer));
}

/** What `readInventory` read, and where it wrote it (nothing for `--out -`). */
export interface InventoryRead { readonly text: string; readonly inventory: Inventory; readonly skipped: SkippedVm[]; readonly written?: string }

/** Read the fleet's clusters; the document's text, what was skipped, and where it was written. */
export async function readInventory(o: InventoryOptions): Promise<InventoryRead> {
  const doc = readFleetFile(o.fleetFile);
  const names = doc.spec.clusters.map((c) => c.name);
  if (o.cluster !== undefined && !names.includes(o.cluster)) {
    throw new FleetValidationError([{ code: 'forklift/inventory-read', path: '--cluster', message: `'${o.cluster}' is not a cluster of the fleet (${names.join(', ')})`,
      fix: `name one of spec.clusters, e.g. --cluster ${names[0]}` }], o.fleetFile, 'fleet');
  }
  const base = loadKubeconfig(o.kubeconfig);
  const timeoutMs = o.timeoutMs ?? 30_000;
  const problems: FleetProblem[] = [];
  const got = await Promise.all(names.map(async (name): Promise<[string, ClusterObjects] | undefined> => {
    const context = o.contexts?.[name] ?? name;
    if (!base.getContextObject(context)) {
      problems.push({ code: 'forklift/inventory-read', path: `--context-map: ${name}`, message: `no context '${context}' for cluster ${name} in the kubeconfig`,
        fix: 'name the context in --context-map FILE (cluster: context), or add it to the kubeconfig' });
      return undefined;
    }
    const kc = new k8s.KubeConfig();
    kc.loadFromString(base.exportConfig());
    kc.setCurrentContext(context);
    try {
      const objects = await withTimeout(readCluster(kc, o.cluster === undefined || o.cluster === name), timeoutMs, `cluster ${name}`);
      if (!objects.nodes.length) throw new Error('the API server lists no nodes');
      return [name, objects];
    } catch (e) { problems.push(readProblem(name, context, e)); return undefined; }
  }));
  if (problems.length) throw new FleetValidationError(problems, o.fleetFile, 'fleet');
  const { inventory, skipped } = inventoryFromObjects(doc.metadata.name, new Map(got.filter((g) => g !== undefined)));
  inventorySchema.parse(inventory); // what evacuate will read back: a reader defect fails here, not there
  const text = inventoryText(inventory, skipped);
  const target = o.out ?? inventoryPathFor(o.fleetFile);
  if (target === '-') return { text, inventory, skipped };
  writeOutputs([], [{ file: target, content: text }]); // atomic, locked
  return { text, inventory, skipped, written: target };
}

function inventoryText(inventory: unknown, skipped: readonly SkippedVm[]): string {
  const d = new yaml.Document(inventory);
  d.commentBefore = ' Written by migration-mesh inventory: what runs where, read from each cluster\'s API; evacuate plans from it.'
    + (skipped.length ? `\n Not listed (not movable live now):\n${skipped.map((s) => `   ${s.cluster} ${s.vm}: ${s.reason}`).join('\n')}` : '');
  return d.toString({ lineWidth: 0 });
}

/** The one-screen summary of a read inventory. */
export function renderInventory(r: InventoryRead): string {
  const lines = Object.entries(r.inventory.clusters).map(([c, v]) => `  ${c}: ${v.nodes.length} nodes, ${v.vms?.length ?? 0} VMs`);
  for (const s of r.skipped) lines.push(`  skipped ${s.cluster} ${s.vm}: ${s.reason}`);
  if (r.written) lines.push(`wrote ${r.written}`);
  return `inventory:\n${lines.join('\n')}\n`;
}
