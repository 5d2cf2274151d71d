/**
 * What the watch-moves suites share (test/move-watch.real.test.ts, test/move-bytes.netns.test.ts): the VMIM CRD from
 * KubeVirt's schema (test/fixtures/upstream/kubevirt), writing a status as Forklift's and KubeVirt's controllers do
 * (none runs), and the built CLI run as a child whose output the test reads as it comes.
 */
import { ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { KubeObject, createNamespaces, installCrds, serverSideApply } from './real-apply';
import { Crd, kubevirtWorkloadCrds, upstreamCrds } from './real-crds';
import { RealCluster, RealFleet } from './real-kube';

const ROOT = path.resolve(__dirname, '..', '..');

export function vmimCrd(): Crd {
  const schema = (parseAllDocuments(fs.readFileSync(path.join(ROOT, 'test/fixtures/upstream/kubevirt/virtualmachineinstancemigration.schema.yaml'), 'utf8'))[0].toJS() as { openAPIV3Schema: unknown }).openAPIV3Schema;
  return { apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', metadata: { name: 'virtualmachineinstancemigrations.kubevirt.io' },
    spec: { group: 'kubevirt.io', scope: 'Namespaced', names: { kind: 'VirtualMachineInstanceMigration', plural: 'virtualmachineinstancemigrations', singular: 'virtualmachineinstancemigration', listKind: 'VirtualMachineInstanceMigrationList' },
      versions: [{ name: 'v1', served: true, storage: true, subresources: { status: {} }, schema: { openAPIV3Schema: schema } }] } };
}

/**
 * Two real API servers for a move q -> p with p the hub: Forklift's Plan and Migration CRDs on p, KubeVirt's VMIM and
 * (unless `workloads` is false) VM and VMI (as virt-operator v1.8.4 generates them: real/kubevirt-bins) on both, and
 * these namespaces on each.
 */
export async function moveClusters(namespaces: { p: string[]; q: string[] }, workloads = true): Promise<{ real: RealFleet; p: RealCluster; q: RealCluster }> {
  const real = await RealFleet.start(['p', 'q']);
  const [p, q] = [real.cluster('p'), real.cluster('q')];
  const forklift = upstreamCrds().filter((c) => /^(plans|migrations)\.forklift/.test(c.crd.metadata.name)).map((c) => c.crd);
  const kv = [...(workloads ? kubevirtWorkloadCrds() : []), vmimCrd()];
  await Promise.all([installCrds(p, [...forklift, ...kv]), installCrds(q, kv)]);
  await Promise.all([createNamespaces(p, namespaces.p), createNamespaces(q, namespaces.q)]);
  return { real, p, q };
}

export type CliChild = ChildProcess & { out: () => string; result: Promise<{ code: number; out: string; err: string }> };

/** The built CLI (lib/cli/cli.js) with `args`, then `--kubeconfig KC --out OUT`; CI set (plain lines, no bars). */
export function cliChild(args: string[], kc: string, out: string): CliChild {
  const c = spawn(process.execPath, [path.join(ROOT, 'lib', 'cli', 'cli.js'), ...args, '--kubeconfig', kc, '--out', out], { env: { ...process.env, CI: '1' } });
  let stdout = '';
  let err = '';
  c.stdout!.on('data', (x) => { stdout += x; });
  c.stderr!.on('data', (x) => { err += x; });
  return Object.assign(c, { out: () => stdout, result: new Promise<{ code: number; out: string; err: string }>((r) => c.on('close', (code) => r({ code: code ?? -1, out: stdout, err }))) });
}

export async function setStatus(c: RealCluster, o: KubeObject, status: Record<string, unknown>): Promise<void> {
  const plural = ({ Migration: 'migrations', Plan: 'plans', VirtualMachineInstanceMigration: 'virtualmachineinstancemigrations', VirtualMachine: 'virtualmachines' } as Record<string, string>)[o.kind];
  const r = await c.request('PATCH', `/apis/${o.apiVersion}/namespaces/${o.metadata.namespace}/${plural}/${o.metadata.name}/status`, { status }, { contentType: 'application/merge-patch+json' });
  if (r.status !== 200) throw new Error(`status of ${o.kind} ${o.metadata.name}: HTTP ${r.status} ${r.text.slice(0, 300)}`);
}

/** Server-side apply `o`, then write its status when given. */
export async function create(c: RealCluster, o: KubeObject, status?: Record<string, unknown>): Promise<KubeObject> {
  const live = await serverSideApply(c, o, 'test');
  if (status) await setStatus(c, live, status);
  return live;
}

export const vmim = (name: string, vmi: string, ns: string): KubeObject => ({ apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachineInstanceMigration', metadata: { name, namespace: ns }, spec: { vmiName: vmi } } as KubeObject);

/** Polls `ok` every 100 ms; throws naming `what` after `ms`. */
export async function until(what: string, ok: () => boolean, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) { if (Date.now() > end) throw new Error(`timed out waiting for ${what}`); await new Promise((r) => setTimeout(r, 100)); }
}
