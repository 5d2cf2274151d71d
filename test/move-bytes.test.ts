/**
 * A running move's bytes from virt-handler's migration metrics and the gateways' tunnel counter
 * (src/forklift/move-bytes.ts): the newest of the up to 10 timestamped samples virt-handler keeps per series, remaining
 * from total - processed when its own series is missing, the rate from libvirt's or from processed's growth, a value
 * going backwards (a new migration job, a restarted exporter, a restarted gateway) never giving a negative rate.
 */
import { parsePromText } from '../src/base/prom-text';
import { TunnelReading, VIRT_HANDLER_MIGRATION_METRICS as M, migrationReading, moveBytes, tunnelBytes, tunnelCounters } from '../src/forklift/move-bytes';

const GiB = 1024 ** 3;
const MiB = 1024 ** 2;
const vmi = { namespace: 'vms', name: 'db1' };
const series = (name: string, v: string, ts: number, who = 'name="db1",namespace="vms"') => `${name}{${who},node="q-node-0"} ${v} ${ts}\n`;
const T0 = 1764750000000;

describe('migrationReading', () => {
  test('the newest sample of each series; other VMIs and other namespaces ignored', () => {
    const text = `# TYPE ${M.processed} gauge\n${series(M.processed, '1.073741824e+09', T0)}${series(M.processed, '2.147483648e+09', T0 + 5000)}`
      + `${series(M.processed, '9e+09', T0 + 9000, 'name="db1",namespace="other"')}${series(M.processed, '8e+09', T0 + 9000, 'name="web1",namespace="vms"')}`
      + `# TYPE ${M.remaining} gauge\n${series(M.remaining, '3.221225472e+09', T0)}${series(M.remaining, '2.147483648e+09', T0 + 5000)}`
      + `# TYPE ${M.rate} gauge\n${series(M.rate, '1.048576e+08', T0 + 5000)}`;
    expect(migrationReading(parsePromText(text), vmi, 1))
      .toEqual({ processed: 2 * GiB, remaining: 2 * GiB, rate: 100 * MiB, atMs: T0 + 5000, before: { processed: GiB, atMs: T0 } });
  });
  test('without libvirt\'s rate, a first scrape already has one: the growth between the two newest samples it holds', () => {
    const text = `${series(M.processed, '5.36870912e+08', T0 - 5000)}${series(M.processed, '2.147483648e+09', T0 + 5000)}${series(M.processed, '1.073741824e+09', T0)}`;
    const r = migrationReading(parsePromText(text), vmi, 1)!;
    expect(r.before).toEqual({ processed: GiB, atMs: T0 });
    expect(moveBytes(r)).toEqual({ processed: 2 * GiB, rateBytesPerSecond: Math.round(GiB / 5), source: 'virt-handler' });
  });
  test('a series the newest result lacks is not taken from an older result (a stale transfer rate)', () => {
    const text = `${series(M.processed, '1.073741824e+09', T0)}${series(M.rate, '1.048576e+08', T0)}${series(M.processed, '2.147483648e+09', T0 + 5000)}`;
    const r = migrationReading(parsePromText(text), vmi, 1)!;
    expect(r).toEqual({ processed: 2 * GiB, atMs: T0 + 5000, before: { processed: GiB, atMs: T0 } });
    expect(moveBytes(r).rateBytesPerSecond).toBe(Math.round(GiB / 5));
  });
  test('no series of the VMI (not started, or ended): undefined; NaN is no value', () => {
    expect(migrationReading(parsePromText(`# TYPE ${M.processed} gauge\n${series(M.processed, '1', T0, 'name="web1",namespace="vms"')}`), vmi, 1)).toBeUndefined();
    expect(migrationReading(parsePromText(series(M.processed, 'NaN', T0)), vmi, 1)).toBeUndefined();
  });
  test('without timestamps the reading is at the scrape time', () => {
    expect(migrationReading(parsePromText(`${M.processed}{name="db1",namespace="vms",node="n"} 5\n`), vmi, 42)).toEqual({ processed: 5, atMs: 42 });
  });
});

describe('moveBytes', () => {
  test('remaining from its series, else total - processed; libvirt\'s rate first', () => {
    expect(moveBytes({ processed: 3 * GiB, remaining: GiB, rate: 50 * MiB, atMs: T0 })).toEqual({ processed: 3 * GiB, remaining: GiB, rateBytesPerSecond: 50 * MiB, source: 'virt-handler' });
    expect(moveBytes({ processed: 3 * GiB, total: 4 * GiB, atMs: T0 })).toEqual({ processed: 3 * GiB, remaining: GiB, source: 'virt-handler' });
  });
  test('without libvirt\'s rate: processed\'s growth between readings, by their timestamps', () => {
    expect(moveBytes({ processed: 2 * GiB, atMs: T0 + 4000 }, { processed: GiB, atMs: T0 })).toMatchObject({ rateBytesPerSecond: GiB / 4 });
  });
  test('processed going backwards (virt-handler restarted, a new job): no rate for that step, never negative', () => {
    const b = moveBytes({ processed: 100 * MiB, remaining: 3 * GiB, atMs: T0 + 5000 }, { processed: 2 * GiB, atMs: T0 });
    expect(b).toEqual({ processed: 100 * MiB, remaining: 3 * GiB, source: 'virt-handler' });
  });
});

describe('tunnel bytes', () => {
  const gw = (lines: string) => parsePromText(`# HELP mm_proxy_tunnel_bytes_total Bytes.\n# TYPE mm_proxy_tunnel_bytes_total counter\n${lines}`);
  test('a pod\'s counters towards the peer; the family without samples is 0 (nothing carried yet); no family: unknown', () => {
    expect(tunnelCounters(gw('mm_proxy_tunnel_bytes_total{peer="p",direction="tx"} 2048\nmm_proxy_tunnel_bytes_total{peer="p",direction="rx"} 16\nmm_proxy_tunnel_bytes_total{peer="r",direction="tx"} 9\n'), 'p')).toEqual({ tx: 2048, rx: 16 });
    expect(tunnelCounters(gw(''), 'p')).toEqual({ tx: 0, rx: 0 });
    expect(tunnelCounters(parsePromText('mm_proxy_active_tunnels 1\n'), 'p')).toBeUndefined();
  });
  test('summed over pods as served; the rate from each pod\'s growth, a pod whose counter went down counting from zero', () => {
    const before: TunnelReading = { pods: { a: { tx: 10 * MiB, rx: 1 }, b: { tx: 50 * MiB, rx: 1 } }, atMs: T0 };
    const after: TunnelReading = { pods: { a: { tx: 30 * MiB, rx: 2 }, b: { tx: 5 * MiB, rx: 0 } }, atMs: T0 + 5000 };
    expect(tunnelBytes('p', before)).toEqual({ peer: 'p', txBytes: 60 * MiB, rxBytes: 2, gateways: 2, source: 'gateway' });
    // a: +20 MiB; b restarted: 5 MiB since; 25 MiB in 5 s
    expect(tunnelBytes('p', after, before)).toEqual({ peer: 'p', txBytes: 35 * MiB, rxBytes: 2, rateBytesPerSecond: 5 * MiB, gateways: 2, source: 'gateway' });
  });
});
