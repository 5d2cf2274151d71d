/**
 * `migration-mesh pin-addresses FLEET.yaml`: the cluster side of a keep-the-address move (issue 40 item 4;
 * docs/vm-networks.md). For each listed move of a VM on a primary Layer2 VM network, through the kubeconfig
 * context of each cluster (as `status` reaches them):
 *  - before the move: reads the VM and its IPAMClaims on the source, the ledger's address, what the target holds
 *    (its IPAMClaims, its VMs' `network.kubevirt.io/addresses`), checks them with `checkKeepAddressMove`, and pins
 *    the address on the SOURCE VM's `spec.template.metadata.annotations` (JSON merge patch; Forklift's live path
 *    copies the template). Dry run by default (the diff); `--apply` writes; a pinned VM is left alone.
 *  - `--after`, once the move completed: the halted source VM cannot bring the address back. A mobile address:
 *    the source VM and its IPAMClaims are deleted (no cluster hands the mobile slice out, and no leaked claim is
 *    left for a move back). An address of the source's own slice: the halted VM and its claim stay (the claim is
 *    what keeps the source from giving the address to another VM) and the VM is labelled
 *    `migrationmesh.dev/moved-to: <target>`.
 * Every move is checked before anything is written: one refusal and nothing is written. Requests: exactly the
 * Role of src/vmnet/pin-role.ts.
 */
import * as k8s from '@kubernetes/client-node';
import { FleetProblem } from '../src/base/errors';
import { loadFleetFile, ledgerPathFor, loadLedgerFile } from '../src/fleet/load';
import { loadMovesFile, movesPathFor } from '../src/forklift/moves';
import { resolveVmNetworks, VmNetworksResult } from '../src/vmnet/plan';
import { checkKeepAddressMove } from '../src/vmnet/moves';
import { addressesFromIpamClaim, claimNetworkOf, pinAddressesPatch } from '../src/vmnet/claims';
import { ADDRESSES_ANNOTATION } from '../src/vmnet/resolved';
import { MOVED_TO_LABEL, PIN_ROLE_NAME } from '../src/vmnet/pin-role';
import { loadKubeconfig } from './kubeconfig';
import { why } from './status-runtime';

export interface PinOptions {
  readonly fleetFile: string;
  /** @default - the ledger beside the fleet file */
  readonly ledgerFile?: string;
  /** Cluster name -> kubeconfig context. @default - the context named as the cluster */
  readonly contexts?: Record<string, string>;
  /** @default - $KUBECONFIG or ~/.kube/config */
  readonly kubeconfig?: string;
  /** Only this move (`namespace/vm`). @default - every listed move */
  readonly move?: string;
  /** Write (else a dry run that shows the diff). @default false */
  readonly apply?: boolean;
  /** The after-move step instead of the pin. @default false */
  readonly after?: boolean;
  /** Longest wait for one request. @default 10000 */
  readonly timeoutMs?: number;
}

/** One write, shown as a diff in a dry run. */
export interface PinChange {
  readonly cluster: string;
  readonly verb: 'patch' | 'delete';
  /** `VirtualMachine tenant-blue/web-1`, `IPAMClaim tenant-blue/web-1.blue`. */
  readonly object: string;
  /** The field a patch sets. */
  readonly field?: string;
  readonly from?: string;
  readonly to?: string;
}

export interface PinMoveReport {
  readonly move: string;
  readonly from: string;
  readonly to: string;
  readonly network?: string;
  readonly addresses: readonly string[];
  /** Where the address comes from. */
  readonly source?: 'ipamclaim' | 'ledger';
  readonly afterMove?: 'delete-source' | 'keep-source-halted';
  readonly changes: PinChange[];
  readonly problems: FleetProblem[];
  readonly warnings: readonly FleetProblem[];
  /** Why nothing is to be done, when nothing is. */
  readonly note?: string;
}

export interface PinReport {
  readonly mode: 'pin' | 'after';
  /** Whether the changes were written (`--apply` and no problem anywhere). */
  readonly applied: boolean;
  readonly ok: boolean;
  readonly moves: PinMoveReport[];
}

const ADDRESSES_FIELD = `spec.template.metadata.annotations["${ADDRESSES_ANNOTATION}"]`;

/** The fields read of a VirtualMachine, VirtualMachineInstance or IPAMClaim. */
interface Obj {
  metadata?: { name?: string; namespace?: string; labels?: Record<string, string>; resourceVersion?: string; uid?: string; deletionTimestamp?: string };
  spec?: { network?: string; runStrategy?: string; running?: boolean; template?: { metadata?: { annotations?: Record<string, string> } } };
  status?: { ips?: unknown; phase?: string };
}
const VM = { group: 'kubevirt.io', version: 'v1', plural: 'virtualmachines' };
const VMI = { ...VM, plural: 'virtualmachineinstances' };
const CLAIM = { group: 'k8s.cni.cncf.io', version: 'v1alpha1', plural: 'ipamclaims' };

/** One cluster, through its context: the requests of the Role, each bounded in time. */
class Side {
  private readonly api: k8s.CustomObjectsApi;
  constructor(readonly cluster: string, readonly context: string, kc: k8s.KubeConfig, private readonly timeoutMs: number) {
    this.api = kc.makeApiClient(k8s.CustomObjectsApi);
  }

  private bounded<T>(what: string, p: Promise<T>): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${this.timeoutMs / 1000} s`)), this.timeoutMs); });
    return Promise.race([p, late]).catch((e) => { throw Object.assign(new Error(`${what} on ${this.cluster} (context ${this.context}): ${why(e)}`), { code: (e as { code?: number }).code }); })
      .finally(() => clearTimeout(timer));
  }

  async get(r: typeof VM, namespace: string, name: string): Promise<Obj | undefined> {
    try {
      return await this.bounded(`get ${r.plural} ${namespace}/${name}`, this.api.getNamespacedCustomObject({ ...r, namespace, name })) as Obj;
    } catch (e) {
      if ((e as { code?: number }).code === 404) return undefined;
      throw e;
    }
  }

  async list(r: typeof VM, namespace: string): Promise<Obj[]> {
    return ((await this.bounded(`list ${r.plural} in ${namespace}`, this.api.listNamespacedCustomObject({ ...r, namespace }))) as { items?: Obj[] }).items ?? [];
  }

  async patch(r: typeof VM, namespace: string, name: string, body: object): Promise<void> {
    await this.bounded(`patch ${r.plural} ${namespace}/${name}`, this.api.patchNamespacedCustomObject({ ...r, namespace, name, body },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch)));
  }

  async delete(r: typeof VM, namespace: string, name: string, uid?: string): Promise<void> {
    try {
      await this.bounded(`delete ${r.plural} ${namespace}/${name}`, this.api.deleteNamespacedCustomObject({ ...r, namespace, name, propagationPolicy: 'Background',
        body: uid ? { preconditions: { uid } } : {} }));
    } catch (e) {
      if ((e as { code?: number }).code !== 404) throw e;
    }
  }
}

const bare = (ip: string) => ip.replace(/\/\d+$/, '');
const vmAnnotation = (vm: Obj | undefined): string | undefined => vm?.spec?.template?.metadata?.annotations?.[ADDRESSES_ANNOTATION];

/** The claims of one VM on one network: labelled `kubevirt.io/vm: <vm>` or named `<vm>.<...>` (ipam-extensions), of the network's NAD. */
const claimsOf = (claims: Obj[], vm: string, network: string) => claims.filter((c) => c.spec?.network === claimNetworkOf(network)
  && (c.metadata?.labels?.['kubevirt.io/vm'] === vm || (c.metadata?.name ?? '').startsWith(`${vm}.`)));

/** The addresses the VM's claims hold (the first claim with `status.ips`), or the problem reading them. */
function claimAddresses(claims: Obj[], network: string, path: string): { addresses?: string[]; claim?: string; problems: FleetProblem[] } {
  const held = claims.find((c) => Array.isArray(c.status?.ips) && c.status.ips.length > 0);
  if (!held) return { problems: [] };
  const r = addressesFromIpamClaim(held, network, path);
  return { addresses: r.problems.length ? undefined : r.addresses, claim: held.metadata?.name, problems: r.problems };
}

/** Which object on the target holds each address of the network in the namespace: its IPAMClaims and its VMs' pins. */
async function targetHolders(dst: Side, namespace: string, network: string): Promise<Map<string, { object: string; owner: string }>> {
  const out = new Map<string, { object: string; owner: string }>();
  for (const c of await dst.list(CLAIM, namespace)) {
    if (c.spec?.network !== claimNetworkOf(network)) continue;
    const owner = c.metadata?.labels?.['kubevirt.io/vm'] ?? (c.metadata?.name ?? '').split('.')[0];
    for (const ip of Array.isArray(c.status?.ips) ? c.status.ips : []) out.set(bare(String(ip)), { object: `IPAMClaim ${namespace}/${c.metadata?.name}`, owner });
  }
  for (const v of await dst.list(VM, namespace)) {
    let pin: unknown;
    try { pin = JSON.parse(vmAnnotation(v) ?? 'null'); } catch { continue; }
    const ips = pin && typeof pin === 'object' ? Object.values(pin as Record<string, unknown>).flat() : [];
    for (const ip of ips) if (typeof ip === 'string') out.set(bare(ip), { object: `VirtualMachine ${namespace}/${v.metadata?.name} (${ADDRESSES_ANNOTATION})`, owner: v.metadata?.name ?? '?' });
  }
  return out;
}

interface Move { readonly vm: string; readonly namespace: string; readonly from: string; readonly to: string; readonly targetNamespace?: string }

/** What both modes read and check first: the network, the source VM and claims, the address and its origin. */
interface Context {
  readonly m: Move;
  readonly path: string;
  readonly network: string;
  readonly vm?: Obj;
  readonly claims: Obj[];
  readonly addresses: string[];
  readonly source?: 'ipamclaim' | 'ledger';
  readonly afterMove?: 'delete-source' | 'keep-source-halted';
  readonly annotation?: { key: string; value: string };
  readonly warnings: readonly FleetProblem[];
}

type Started = { ok: true; c: Context } | { ok: false; report: PinMoveReport };

async function startMove(
  nets: VmNetworksResult, m: Move, path: string, sides: Map<string, Side>, after: boolean, contexts?: Record<string, string>,
): Promise<Started> {
  const base = { move: `${m.namespace}/${m.vm}`, from: m.from, to: m.to, addresses: [], changes: [] };
  const pre = checkKeepAddressMove(nets, { ...m, requireAddress: false }, path);
  const stop = (problems: readonly FleetProblem[], extra: Partial<PinMoveReport> = {}): Started => ({ ok: false, report: { ...base, network: pre.network, problems: [...problems], warnings: pre.warnings.filter((w) => w.code !== 'vmnet-ip-not-kept'), ...extra } });
  if (!pre.network) return stop([], { warnings: pre.warnings, note: `${m.namespace} has no primary Layer2 VM network on ${m.from}: nothing to pin` });
  if (pre.problems.length) return stop(pre.problems);
  const missing = [m.from, m.to].filter((c) => !sides.has(c));
  if (missing.length) {
    return stop(missing.map((c) => ({ code: 'vmnet-pin-api', path, message: `no context '${contexts?.[c] ?? c}' for cluster ${c} in the kubeconfig`,
      fix: 'name the context in --context-map FILE (cluster: context), or add it to the kubeconfig' })));
  }
  const src = sides.get(m.from)!;
  const vm = await src.get(VM, m.namespace, m.vm);
  const claims = claimsOf(await src.list(CLAIM, m.namespace), m.vm, pre.network);
  const ledger = nets.networks.find((n) => n.name === pre.network)?.mobileVms.find((v) => v.vm === m.vm && v.namespace === m.namespace)?.addresses;
  if (!vm && !after) {
    return stop([{ code: 'vmnet-pin-vm-missing', path, message: `${m.from} has no VirtualMachine ${m.namespace}/${m.vm}: nothing to pin`,
      fix: `check the move (namespace, name, source cluster) against ${m.from}, or drop it from the moves list` }]);
  }
  const read = claimAddresses(claims, pre.network, `${m.from}: IPAMClaim`);
  if (read.problems.length) return stop(read.problems);
  if (read.addresses && ledger && read.addresses.join(',') !== ledger.join(',')) return stop([disagree(m, path, pre.network, read.claim!, read.addresses, ledger)]);
  const v = checkKeepAddressMove(nets, { ...m, ...(read.addresses ? { addresses: read.addresses } : {}) }, path);
  if (!v.ok) return stop(v.problems, { addresses: v.addresses });
  return { ok: true, c: { m, path, network: pre.network, vm, claims, addresses: [...v.addresses], source: read.addresses ? 'ipamclaim' : 'ledger',
    afterMove: v.afterMove, annotation: v.annotation, warnings: v.warnings } };
}

/** The claim and the ledger disagree: the claim is what the running VM answers on; say how to keep it, or move to the ledger's. */
function disagree(m: Move, path: string, network: string, claim: string, held: string[], ledger: readonly string[]): FleetProblem {
  return {
    code: 'vmnet-pin-disagree', path,
    message: `IPAMClaim ${m.namespace}/${claim} on ${m.from} holds ${held.join(', ')}, but the ledger gives ${m.namespace}/${m.vm} ${ledger.join(', ')} (vmNetworks.${network}.vms): pinning either one now would break something`,
    fix: `trust the claim: it is the address the running VM answers on (its connections and its DHCP lease); the ledger's is only reserved for it. `
      + `To move with it, remove ${m.namespace}/${m.vm} from mobileVms and its line under vmNetworks.${network}.vms in the ledger, synth, and run again `
      + `(an address of ${m.from}'s own slice moves, and the halted source stays as its tombstone). To give the VM the ledger's address instead, `
      + `stop it, delete IPAMClaim ${m.namespace}/${claim} on ${m.from}, run pin-addresses --apply and start it (OVN-Kubernetes accepts a pinned address only among a claim's own IPs)`,
  };
}

async function pinMove(c: Context, sides: Map<string, Side>): Promise<PinMoveReport> {
  const { m, path } = c;
  const report = { move: `${m.namespace}/${m.vm}`, from: m.from, to: m.to, network: c.network, addresses: c.addresses, source: c.source, afterMove: c.afterMove, warnings: c.warnings };
  const holders = await targetHolders(sides.get(m.to)!, m.namespace, c.network);
  const problems: FleetProblem[] = c.addresses.flatMap((a) => {
    const h = holders.get(a);
    if (!h) return [];
    const same = h.owner === m.vm;
    return [{ code: 'vmnet-pin-target-holds' as const, path, message: `${m.to} already holds ${a} on ${c.network}: ${h.object}${same ? `: the move of ${m.namespace}/${m.vm} has run (or is running) already` : ''}; a VM started there with it would fail (IPsAllocated=False)`,
      fix: same ? `after the move, run pin-addresses --after; to move again, first finish the earlier move` : `find what ${h.object} belongs to on ${m.to} (a stale claim of an earlier move?) and remove it, or move ${m.namespace}/${m.vm} to another cluster` }];
  });
  const current = vmAnnotation(c.vm);
  const changes: PinChange[] = problems.length || current === c.annotation!.value ? []
    : [{ cluster: m.from, verb: 'patch', object: `VirtualMachine ${m.namespace}/${m.vm}`, field: ADDRESSES_FIELD, ...(current === undefined ? {} : { from: current }), to: c.annotation!.value }];
  return { ...report, changes, problems, ...(problems.length || changes.length ? {} : { note: `already pinned on ${m.from}` }) };
}

/** `--after`: the move completed (source halted, no VMI; the target has the VM, its claim on the pinned address), then what frees or keeps the address. */
async function finishMove(c: Context, sides: Map<string, Side>): Promise<PinMoveReport> {
  const { m, path } = c;
  const report = { move: `${m.namespace}/${m.vm}`, from: m.from, to: m.to, network: c.network, addresses: c.addresses, source: c.source, afterMove: c.afterMove, warnings: c.warnings };
  const src = sides.get(m.from)!;
  const dst = sides.get(m.to)!;
  const notMoved = (message: string, fix: string): PinMoveReport => ({ ...report, changes: [], problems: [{ code: 'vmnet-pin-not-moved', path, message, fix }] });
  const wait = 'wait for the Forklift Plan to complete (KubeVirt halts the source VM when the decentralized migration completes), then run --after again';
  const dstVm = await dst.get(VM, m.namespace, m.vm);
  if (!dstVm) return notMoved(`${m.to} has no VirtualMachine ${m.namespace}/${m.vm}: the move has not run`, wait);
  const got = claimAddresses(claimsOf(await dst.list(CLAIM, m.namespace), m.vm, c.network), c.network, `${m.to}: IPAMClaim`);
  if (got.addresses && got.addresses.join(',') !== c.addresses.join(',')) {
    return notMoved(`the moved VM holds ${got.addresses.join(', ')} on ${m.to} (IPAMClaim ${got.claim}), not the pinned ${c.addresses.join(', ')}: the pin did not hold`,
      `check that ${m.to}'s VM template carries ${ADDRESSES_ANNOTATION} and that ipam-extensions runs there; keep the source VM until the addresses agree`);
  }
  const changes: PinChange[] = [];
  if (c.vm) {
    const strategy = c.vm.spec?.runStrategy ?? (c.vm.spec?.running === true ? 'Always' : c.vm.spec?.running === false ? 'Halted' : undefined);
    if (strategy !== 'Halted') return notMoved(`${m.from}'s VirtualMachine ${m.namespace}/${m.vm} has runStrategy ${strategy ?? '(none)'}, not Halted: the move has not completed`, wait);
    const vmi = await src.get(VMI, m.namespace, m.vm);
    if (vmi) return notMoved(`${m.from} still runs ${m.namespace}/${m.vm} (VirtualMachineInstance phase ${vmi.status?.phase ?? '?'})`, wait);
  }
  if (c.afterMove === 'delete-source') {
    if (c.vm) changes.push({ cluster: m.from, verb: 'delete', object: `VirtualMachine ${m.namespace}/${m.vm}` });
    for (const cl of c.claims.filter((x) => !x.metadata?.deletionTimestamp)) changes.push({ cluster: m.from, verb: 'delete', object: `IPAMClaim ${m.namespace}/${cl.metadata?.name}` });
  } else if (!c.vm) {
    return { ...report, changes, problems: [{ code: 'vmnet-pin-vm-missing', path, message: `the halted ${m.namespace}/${m.vm} is gone from ${m.from}: ${c.addresses.join(', ')} is of ${m.from}'s own slice and nothing there keeps it from another VM while ${m.vm} runs on ${m.to}`,
      fix: `check no VM on ${m.from} holds ${c.addresses.join(', ')} (its IPAMClaims); give VMs that move a mobile address (mobileVms) so no tombstone is needed` }] };
  } else if (c.vm.metadata?.labels?.[MOVED_TO_LABEL] !== m.to) {
    changes.push({ cluster: m.from, verb: 'patch', object: `VirtualMachine ${m.namespace}/${m.vm}`, field: `metadata.labels["${MOVED_TO_LABEL}"]`, ...(c.vm.metadata?.labels?.[MOVED_TO_LABEL] ? { from: c.vm.metadata.labels[MOVED_TO_LABEL] } : {}), to: m.to });
  }
  const note = changes.length ? undefined : c.afterMove === 'delete-source' ? `nothing left on ${m.from}` : `the halted VM on ${m.from} is the tombstone already`;
  return { ...report, changes, problems: [], ...(note ? { note } : {}) };
}

/** Writes one move's changes, in order; a VM patch carries the resourceVersion read (409 if it changed since). */
async function write(c: Context, changes: readonly PinChange[], sides: Map<string, Side>): Promise<void> {
  const src = sides.get(c.m.from)!;
  for (const ch of changes) {
    const [kind, ref] = ch.object.split(' ');
    const name = ref.split('/')[1];
    if (ch.verb === 'delete') {
      const uid = kind === 'VirtualMachine' ? c.vm?.metadata?.uid : c.claims.find((x) => x.metadata?.name === name)?.metadata?.uid;
      await src.delete(kind === 'VirtualMachine' ? VM : CLAIM, c.m.namespace, name, uid);
    } else if (ch.field === ADDRESSES_FIELD) {
      const patch = pinAddressesPatch(c.annotation!);
      await src.patch(VM, c.m.namespace, name, { ...patch, metadata: { resourceVersion: c.vm?.metadata?.resourceVersion } });
    } else {
      await src.patch(VM, c.m.namespace, name, { metadata: { resourceVersion: c.vm?.metadata?.resourceVersion, labels: { [MOVED_TO_LABEL]: ch.to } } });
    }
  }
}

/** A failed request as a problem: which cluster and request, and the fix (a 403: bind the generated Role). */
function apiProblem(e: unknown, m: Move, path: string): FleetProblem {
  const forbidden = (e as { code?: number }).code === 403;
  return { code: 'vmnet-pin-api', path, message: (e as Error).message,
    fix: forbidden ? `bind the Role ${PIN_ROLE_NAME} (emitted by synth for the network's namespaces) in ${m.namespace} to the identity of the context, on ${m.from} and ${m.to}: name it in the network's pinAddressesBy and synth again, or add a RoleBinding of your own`
      : 'check the context-map and that the cluster answers (migration-mesh status)' };
}

function loadSides(o: PinOptions, clusters: readonly string[]): Map<string, Side> {
  const base = loadKubeconfig(o.kubeconfig);
  const sides = new Map<string, Side>();
  for (const cluster of clusters) {
    const context = o.contexts?.[cluster] ?? cluster;
    if (!base.getContextObject(context)) continue;
    const kc = new k8s.KubeConfig();
    kc.loadFromString(base.exportConfig());
    kc.setCurrentContext(context);
    sides.set(cluster, new Side(cluster, context, kc, o.timeoutMs ?? 10_000));
  }
  return sides;
}

/** The listed moves (`spec.forklift.moves` and the moves file), or the one `--move` names. */
function listedMoves(o: PinOptions, doc: ReturnType<typeof loadFleetFile>): Array<{ m: Move; path: string }> {
  const inFleet = (doc.spec.forklift?.moves ?? []).map((m, i) => ({ m: m as Move, path: `spec.forklift.moves[${i}]` }));
  const file = loadMovesFile(movesPathFor(o.fleetFile), doc.metadata.name);
  const all = [...inFleet, ...(file?.moves ?? []).map((m, i) => ({ m: m as Move, path: `${file!.path}[${i}]` }))];
  if (!o.move) return all;
  const picked = all.filter(({ m }) => `${m.namespace}/${m.vm}` === o.move);
  if (!picked.length) throw new Error(`--move ${o.move}: no listed move of that VM (spec.forklift.moves and ${movesPathFor(o.fleetFile)} list ${all.map(({ m }) => `${m.namespace}/${m.vm}`).join(', ') || 'none'})`);
  return picked;
}

/** Check every move, then (with `apply`, and no problem in any move) write. */
export async function pinAddresses(o: PinOptions): Promise<PinReport> {
  const doc = loadFleetFile(o.fleetFile);
  const nets = resolveVmNetworks(doc, loadLedgerFile(o.ledgerFile ?? ledgerPathFor(o.fleetFile)));
  const moves = listedMoves(o, doc);
  const sides = loadSides(o, [...new Set(moves.flatMap(({ m }) => [m.from, m.to]))]);
  const planned: Array<{ c?: Context; report: PinMoveReport }> = [];
  for (const { m, path } of moves) {
    try {
      const s = await startMove(nets, m, path, sides, !!o.after, o.contexts);
      if (!s.ok) { planned.push({ report: s.report }); continue; }
      planned.push({ c: s.c, report: await (o.after ? finishMove(s.c, sides) : pinMove(s.c, sides)) });
    } catch (e) {
      planned.push({ report: { move: `${m.namespace}/${m.vm}`, from: m.from, to: m.to, addresses: [], changes: [], warnings: [], problems: [apiProblem(e, m, path)] } });
    }
  }
  const ok = planned.every((p) => !p.report.problems.length);
  const apply = !!o.apply && ok;
  if (apply) {
    const written: string[] = [];
    for (const p of planned.filter((x) => x.c && x.report.changes.length)) {
      try {
        await write(p.c!, p.report.changes, sides);
        written.push(p.report.move);
      } catch (e) {
        const problem = apiProblem(e, p.c!.m, p.c!.path);
        // a write refused midway (a VM changed since it was read: 409): say what was written before it
        p.report.problems.push({ ...problem, message: `${problem.message}${written.length ? ` (written before it: ${written.join(', ')}; run again)` : ''}` });
        return { mode: o.after ? 'after' : 'pin', applied: false, ok: false, moves: planned.map((x) => x.report) };
      }
    }
  }
  return { mode: o.after ? 'after' : 'pin', applied: apply, ok, moves: planned.map((p) => p.report) };
}

/** The report as text: per move the address and its origin, each change as a diff, each problem with its fix. */
export function renderPin(r: PinReport): string {
  const lines: string[] = [];
  const what = r.mode === 'pin' ? 'pin-addresses' : 'pin-addresses --after';
  lines.push(r.applied ? `${what}: written` : r.ok ? `${what}: dry run, nothing written (--apply writes)` : `${what}: refused, nothing written`);
  for (const m of r.moves) {
    const addr = m.addresses.length ? `: ${m.addresses.join(', ')} (${m.source === 'ipamclaim' ? 'from the source IPAMClaim, the ledger agrees or has none' : 'from the ledger'}${m.afterMove ? `; after the move: ${m.afterMove}` : ''})` : '';
    lines.push(`${m.move} ${m.from} -> ${m.to}${m.network ? ` on ${m.network}` : ''}${addr}`);
    for (const ch of m.changes) {
      lines.push(`  ${ch.verb} ${ch.cluster} ${ch.object}${ch.field ? ` ${ch.field}` : ''}`);
      if (ch.verb === 'patch') lines.push(`    - ${ch.from ?? '(none)'}`, `    + ${ch.to}`);
    }
    if (m.note) lines.push(`  ${m.note}`);
    for (const p of m.problems) lines.push(`  error [${p.code}] ${p.path}: ${p.message}`, ...(p.fix ? [`    fix: ${p.fix}`] : []));
    for (const w of m.warnings) lines.push(`  warning [${w.code}] ${w.path}: ${w.message}`);
  }
  if (!r.moves.length) lines.push('no listed moves');
  return `${lines.join('\n')}\n`;
}
