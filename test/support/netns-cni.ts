/**
 * Pod attachments made by the real CNI plugins (Debian `containernetworking-plugins`, /usr/lib/cni), fed
 * the synthesized NAD configs the way Multus feeds its delegates: CNI_COMMAND, CNI_CONTAINERID,
 * CNI_NETNS, CNI_IFNAME, CNI_PATH and Multus' CNI_ARGS in the environment, the NAD config on stdin with
 * `runtimeConfig.ips` from the pod's selection when the config declares `capabilities.ips`
 * (k8snetworkplumbingwg/multus-cni pkg/k8sclient + pkg/types: the selection's `ips` become the
 * `ips` runtime config of a plugin that has that capability). Whereabouts is not packaged: its config is
 * replaced by the static IPAM plugin holding the address whereabouts would hand out, with the same routes.
 * Every ADD is recorded and undone with DEL (in reverse order).
 */
import * as fs from 'fs';
import { spawnSync } from 'child_process';

export const CNI_BIN = '/usr/lib/cni';

/** Which plugins are installed; the reason when the ones the fleet test needs are missing. */
export function cniSupport(plugins: string[] = ['bridge', 'static']): { ok: true } | { ok: false; reason: string } {
  const missing = plugins.filter((p) => !fs.existsSync(`${CNI_BIN}/${p}`));
  return missing.length ? { ok: false, reason: `CNI plugins ${missing.join(', ')} missing in ${CNI_BIN} (apt-get install containernetworking-plugins, or node scripts/ensure-system-deps.js as root)` } : { ok: true };
}

/** One pod attachment as Multus would make it. */
export interface CniAttachment {
  /** The node's network namespace (where the plugin runs, where the bridge or master lives). */
  readonly nodeNs: string;
  /** The pod's network namespace (name under /run/netns). */
  readonly podNs: string;
  readonly ifname: string;
  readonly containerId: string;
  /** The config on stdin. */
  readonly config: Record<string, unknown>;
  /** Pod identity, as Multus puts it into CNI_ARGS. */
  readonly pod: { namespace: string; name: string };
}

export interface CniOutcome { readonly status: number | null; readonly stdout: string; readonly stderr: string; readonly result?: any }

/** The delegate config Multus hands a plugin for one selection element: `runtimeConfig.ips` when the plugin declares the capability. */
export function multusDelegateConfig(nadConfig: Record<string, any>, selection: { ips?: string[] }): Record<string, unknown> {
  const cfg: Record<string, unknown> = { ...nadConfig };
  if (nadConfig.capabilities?.ips && selection.ips?.length) cfg.runtimeConfig = { ...(nadConfig.runtimeConfig ?? {}), ips: [...selection.ips] };
  return cfg;
}

/** A whereabouts NAD config with its IPAM replaced by static IPAM holding `address` (with whereabouts' routes). */
export function whereaboutsAsStatic(nadConfig: Record<string, any>, address: string): Record<string, unknown> {
  const routes = nadConfig.ipam?.routes ?? [];
  return { ...nadConfig, ipam: { type: 'static', addresses: [{ address }], ...(routes.length ? { routes } : {}) } };
}

/** The config without the VLAN key (for a kernel without bridge VLAN filtering). */
export function withoutVlan(cfg: Record<string, unknown>): Record<string, unknown> {
  const { vlan, ...rest } = cfg; // eslint-disable-line @typescript-eslint/no-unused-vars
  return rest;
}

export class CniRunner {
  private readonly added: CniAttachment[] = [];

  /** Run one CNI command for an attachment (no throw). */
  run(cmd: 'ADD' | 'DEL' | 'CHECK', a: CniAttachment, prevResult?: unknown): CniOutcome {
    const type = String(a.config.type);
    const stdin = JSON.stringify(prevResult ? { ...a.config, prevResult } : a.config);
    const env = {
      PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin',
      CNI_COMMAND: cmd,
      CNI_CONTAINERID: a.containerId,
      CNI_NETNS: `/run/netns/${a.podNs}`,
      CNI_IFNAME: a.ifname,
      CNI_PATH: CNI_BIN,
      CNI_ARGS: `IgnoreUnknown=true;K8S_POD_NAMESPACE=${a.pod.namespace};K8S_POD_NAME=${a.pod.name};K8S_POD_INFRA_CONTAINER_ID=${a.containerId}`,
    };
    const r = spawnSync('ip', ['netns', 'exec', a.nodeNs, `${CNI_BIN}/${type}`], { input: stdin, env, encoding: 'utf8', timeout: 20_000 });
    let result: any;
    try { result = r.stdout ? JSON.parse(r.stdout) : undefined; } catch { result = undefined; }
    return { status: r.status, stdout: r.stdout ?? '', stderr: r.stderr ?? '', result };
  }

  /** ADD and remember it for `delAll`; throws with the plugin's own error when ADD fails. */
  add(a: CniAttachment): any {
    const r = this.run('ADD', a);
    if (r.status !== 0) throw new Error(`CNI ADD ${a.config.type} ${a.podNs}/${a.ifname} failed: ${r.stdout || r.stderr}`);
    this.added.push(a);
    return r.result;
  }

  /** Every attachment added so far. */
  all(): CniAttachment[] { return [...this.added]; }

  /** DEL every added attachment, newest first; the failures (normally none). */
  delAll(): string[] {
    const failed: string[] = [];
    for (const a of this.added.reverse()) {
      const r = this.run('DEL', a);
      if (r.status !== 0) failed.push(`${a.podNs}/${a.ifname}: ${r.stdout || r.stderr}`);
    }
    this.added.length = 0;
    return failed;
  }
}

/** Whether this kernel has bridge VLAN filtering (CONFIG_BRIDGE_VLAN_FILTERING): a throwaway namespace tries one. */
export function kernelHasBridgeVlanFiltering(lab: { addNs(short: string): string; exec(ns: string, cmd: string[]): { status: number | null } }): boolean {
  const ns = lab.addNs('vlanprobe');
  return lab.exec(ns, ['ip', 'link', 'add', 'brprobe', 'type', 'bridge', 'vlan_filtering', '1']).status === 0;
}
