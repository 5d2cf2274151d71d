/**
 * The bytes of a running move, from two Prometheus endpoints (issue 51 item 4): virt-handler on the source VMI's
 * node and the source cluster's gateways. Pure: cli/move-metrics.ts scrapes, this reads the parsed text.
 *
 * virt-handler (kubevirt.io/kubevirt v1.8.4, pinned in real/kubevirt-bins/go.mod):
 * https://github.com/kubevirt/kubevirt/blob/v1.8.4/pkg/monitoring/metrics/virt-handler/migrationdomainstats/migrationstats_collector.go
 * declares the metrics below with the labels `namespace`, `name` (the VMI) and `node` (the VMI's node), each
 * sample with its timestamp; queue.go in the same directory polls libvirt's job info every 5 s while the VMI's
 * migrationState is set and not completed, and keeps the last 10 results, so one scrape can hold up to 10 samples of
 * a series, each with its own timestamp: the newest counts. A series appears only once libvirt reported the value,
 * and vanishes when the migration ends.
 *
 * The gateway (proxy/src/metrics.ts): `mm_proxy_tunnel_bytes_total{peer, direction}`, a counter per gateway pod,
 * `direction="tx"` towards the peer. It counts every tunnel to that peer, not one migration's.
 */
import { PromSample, PromText, samplesOf } from '../base/prom-text';

/** virt-handler's migration metrics (migrationstats_collector.go above), with their declared types. */
export const VIRT_HANDLER_MIGRATION_METRICS = {
  /** gauge: guest data processed and migrated so far */
  processed: 'kubevirt_vmi_migration_data_processed_bytes',
  /** gauge: guest data still to migrate */
  remaining: 'kubevirt_vmi_migration_data_remaining_bytes',
  /** counter (declared so; libvirt's dataTotal): the guest data to migrate */
  total: 'kubevirt_vmi_migration_data_bytes_total',
  /** gauge: libvirt's memory transfer rate, bytes per second */
  rate: 'kubevirt_vmi_migration_memory_transfer_rate_bytes',
} as const;

export const TUNNEL_BYTES_METRIC = 'mm_proxy_tunnel_bytes_total';

/** What virt-handler says of one VMI's migration at `atMs` (the newest sample's timestamp, else the scrape's time). */
export interface MigrationReading {
  readonly processed?: number; readonly remaining?: number; readonly total?: number; readonly rate?: number; readonly atMs: number;
  /** The processed sample before the newest in the same scrape (virt-handler keeps the last 10), the rate's base. */
  readonly before?: { readonly processed: number; readonly atMs: number };
}

/** A move's bytes as the watch shows them; `unknown` says why they are not known (then no numbers). */
export interface MoveBytes {
  readonly processed?: number;
  readonly remaining?: number;
  readonly rateBytesPerSecond?: number;
  readonly source: 'virt-handler';
  readonly unknown?: string;
}

/** The tunnel carrying a move: what the source cluster's gateways sent to the peer (`tx`) and received (`rx`). */
export interface TunnelBytes {
  readonly peer: string;
  readonly txBytes?: number;
  readonly rxBytes?: number;
  readonly rateBytesPerSecond?: number;
  /** Gateway pods whose /metrics were read. */
  readonly gateways?: number;
  readonly source: 'gateway';
  readonly unknown?: string;
}

const newest = (ss: PromSample[]): PromSample | undefined =>
  ss.reduce<PromSample | undefined>((a, s) => (!a || (s.timestampMs ?? Infinity) >= (a.timestampMs ?? Infinity) ? s : a), undefined);

/**
 * The VMI's migration reading in one virt-handler scrape: the values of its newest result (the newest timestamp;
 * a series that result lacks is not taken from an older one), and processed of the result before; undefined when
 * the scrape has none of the series.
 */
export function migrationReading(t: PromText, vmi: { namespace: string; name: string }, scrapedAtMs: number): MigrationReading | undefined {
  const match = { namespace: vmi.namespace, name: vmi.name };
  const all = Object.values(VIRT_HANDLER_MIGRATION_METRICS).flatMap((name) => samplesOf(t, name, match)).filter((s) => Number.isFinite(s.value));
  if (all.length === 0) return undefined;
  const stamps = all.map((s) => s.timestampMs).filter((x): x is number => x !== undefined);
  const at = stamps.length ? Math.max(...stamps) : undefined;
  const current = (ss: PromSample[]) => newest(ss.filter((s) => s.timestampMs === undefined || s.timestampMs === at));
  const value = (k: keyof typeof VIRT_HANDLER_MIGRATION_METRICS) => {
    const s = current(all.filter((x) => x.name === VIRT_HANDLER_MIGRATION_METRICS[k]));
    return s ? { [k]: s.value } : {};
  };
  const older = all.filter((s) => s.name === VIRT_HANDLER_MIGRATION_METRICS.processed && at !== undefined && s.timestampMs !== undefined && s.timestampMs < at);
  const before = older.length ? newest(older)! : undefined;
  return {
    ...value('processed'), ...value('remaining'), ...value('total'), ...value('rate'), atMs: at ?? scrapedAtMs,
    ...(before ? { before: { processed: before.value, atMs: before.timestampMs! } } : {}),
  };
}

/**
 * The move's bytes from this reading: remaining from the metric, else total - processed; the rate from libvirt's
 * transfer rate, else processed's growth since the sample before it (in the same scrape, else the previous reading).
 * processed going down (a new migration job after a retry, or a restarted exporter) gives no rate for that step,
 * never a negative one.
 */
export function moveBytes(r: MigrationReading, prev?: MigrationReading): MoveBytes {
  const remaining = r.remaining ?? (r.total !== undefined && r.processed !== undefined ? Math.max(0, r.total - r.processed) : undefined);
  const base = r.before ?? prev;
  const dt = base ? (r.atMs - base.atMs) / 1000 : 0;
  const grew = base?.processed !== undefined && r.processed !== undefined && r.processed >= base.processed && dt > 0;
  const rate = r.rate ?? (grew ? (r.processed! - base!.processed!) / dt : undefined);
  return {
    ...(r.processed !== undefined ? { processed: r.processed } : {}), ...(remaining !== undefined ? { remaining } : {}),
    ...(rate !== undefined ? { rateBytesPerSecond: Math.round(rate) } : {}), source: 'virt-handler',
  };
}

/** One gateway pod's counters towards `peer` in one scrape; undefined when the pod exports no tunnel counter at all. */
export function tunnelCounters(t: PromText, peer: string): { tx: number; rx: number } | undefined {
  if (!t.types.has(TUNNEL_BYTES_METRIC) && samplesOf(t, TUNNEL_BYTES_METRIC).length === 0) return undefined;
  // a prom-client counter with labels has no series until its first increment: no tunnel to the peer has carried a byte
  const sum = (direction: string) => samplesOf(t, TUNNEL_BYTES_METRIC, { peer, direction }).reduce((a, s) => a + s.value, 0);
  return { tx: sum('tx'), rx: sum('rx') };
}

/** A reading of the source cluster's gateways: counters per pod (by name) at `atMs`. */
export interface TunnelReading { readonly pods: Readonly<Record<string, { tx: number; rx: number }>>; readonly atMs: number }

/**
 * The tunnel's bytes: the pods' counters summed as served; the rate from each pod's tx growth since the previous
 * reading, a counter that went down (the pod restarted) counting from zero, as Prometheus' rate() does.
 */
export function tunnelBytes(peer: string, r: TunnelReading, prev?: TunnelReading): TunnelBytes {
  const pods = Object.entries(r.pods);
  const dt = prev ? (r.atMs - prev.atMs) / 1000 : 0;
  const grown = pods.reduce((a, [pod, c]) => {
    const before = prev?.pods[pod]?.tx;
    return a + (before === undefined ? 0 : c.tx >= before ? c.tx - before : c.tx);
  }, 0);
  const rate = prev && dt > 0 && pods.some(([pod]) => prev.pods[pod]) ? Math.round(grown / dt) : undefined;
  return {
    peer, txBytes: pods.reduce((a, [, c]) => a + c.tx, 0), rxBytes: pods.reduce((a, [, c]) => a + c.rx, 0),
    ...(rate !== undefined ? { rateBytesPerSecond: rate } : {}), gateways: pods.length, source: 'gateway',
  };
}
