/**
 * The Prometheus text parser (src/base/prom-text.ts) on the two shapes watch-moves reads: client_golang's (virt-handler:
 * sorted labels, Go's shortest 'g' floats such as 3.221225472e+09, a millisecond timestamp on each migration sample)
 * and prom-client's (the gateway: labels in declaration order, HELP/TYPE without samples until a first increment);
 * and what it refuses, with the line.
 */
import { parsePromText, samplesOf } from '../src/base/prom-text';

const VIRT_HANDLER = `# HELP kubevirt_vmi_migration_data_processed_bytes The total Guest OS data processed and migrated to the new VM.
# TYPE kubevirt_vmi_migration_data_processed_bytes gauge
kubevirt_vmi_migration_data_processed_bytes{name="db1",namespace="vms",node="q-node-0"} 3.221225472e+09 1764750000000
kubevirt_vmi_migration_data_processed_bytes{name="db1",namespace="vms",node="q-node-0"} 3.3285996544e+09 1764750005000
# HELP kubevirt_vmi_migration_data_bytes_total The total Guest OS data to be migrated to the new VM.
# TYPE kubevirt_vmi_migration_data_bytes_total counter
kubevirt_vmi_migration_data_bytes_total{name="db1",namespace="vms",node="q-node-0"} 4.294967296e+09 1764750005000
# HELP kubevirt_virt_handler_uptime_seconds x
# TYPE kubevirt_virt_handler_uptime_seconds gauge
kubevirt_virt_handler_uptime_seconds 12.5
go_gc_duration_seconds{quantile="0.5"} NaN
process_max_fds +Inf
`;

describe('parsePromText', () => {
  test('client_golang\'s shape: types, sorted labels, e-notation floats, timestamps, one series twice at two times', () => {
    const t = parsePromText(VIRT_HANDLER);
    expect(t.types.get('kubevirt_vmi_migration_data_processed_bytes')).toBe('gauge');
    expect(t.types.get('kubevirt_vmi_migration_data_bytes_total')).toBe('counter');
    const processed = samplesOf(t, 'kubevirt_vmi_migration_data_processed_bytes', { namespace: 'vms', name: 'db1' });
    expect(processed).toEqual([
      { name: 'kubevirt_vmi_migration_data_processed_bytes', labels: { name: 'db1', namespace: 'vms', node: 'q-node-0' }, value: 3221225472, timestampMs: 1764750000000 },
      { name: 'kubevirt_vmi_migration_data_processed_bytes', labels: { name: 'db1', namespace: 'vms', node: 'q-node-0' }, value: 3328599654.4, timestampMs: 1764750005000 },
    ]);
    expect(samplesOf(t, 'kubevirt_virt_handler_uptime_seconds')).toEqual([{ name: 'kubevirt_virt_handler_uptime_seconds', labels: {}, value: 12.5 }]);
    expect(Number.isNaN(samplesOf(t, 'go_gc_duration_seconds')[0].value)).toBe(true);
    expect(samplesOf(t, 'process_max_fds')[0].value).toBe(Infinity);
    expect(samplesOf(t, 'kubevirt_vmi_migration_data_processed_bytes', { name: 'web1' })).toEqual([]);
  });

  test('prom-client\'s shape: a label value with a quote, a backslash and a newline; a family with no samples', () => {
    const t = parsePromText('# HELP mm_proxy_tunnel_bytes_total Bytes.\n# TYPE mm_proxy_tunnel_bytes_total counter\n'
      + 'mm_proxy_tunnel_bytes_total{peer="a\\"b\\\\c\\nd",direction="tx"} 5\n# HELP mm_proxy_active_tunnels x\n# TYPE mm_proxy_active_tunnels gauge\n');
    expect(t.samples).toEqual([{ name: 'mm_proxy_tunnel_bytes_total', labels: { peer: 'a"b\\c\nd', direction: 'tx' }, value: 5 }]);
    expect(t.types.get('mm_proxy_active_tunnels')).toBe('gauge');
    expect(parsePromText('x{a="1",} 2\r\n').samples).toEqual([{ name: 'x', labels: { a: '1' }, value: 2 }]);
    // what the real gateway runtime served before its first event-loop measurement (prom-client writes NaN so)
    expect(Number.isNaN(parsePromText('mm_proxy_nodejs_eventloop_lag_mean_seconds Nan\n').samples[0].value)).toBe(true);
    expect(parsePromText('a -inf\nb Infinity\n').samples.map((x) => x.value)).toEqual([-Infinity, Infinity]);
  });

  test('refuses what is not the format, naming the line', () => {
    const refused: Array<[string, RegExp]> = [
      ['<html><body>502 Bad Gateway</body></html>', /^line 1: a metric name expected/],
      ['# TYPE x gauge\nx{a="1} 2', /^line 2: label a: the value is not closed/],
      ['x{a="\\t"} 1', /^line 1: label a: unknown escape \\t/],
      ['x{a="1",a="2"} 1', /^line 1: label a given twice/],
      ['x{a="1"} one', /^line 1: x: 'one' is not a number/],
      ['x 1 2 3', /^line 1: x: 'value \[timestamp\]' expected/],
      ['x 1 1.5', /^line 1: x: timestamp '1.5' is not integer milliseconds/],
      ['x{a="1"}2', /^line 1: x: 'value \[timestamp\]' expected/],
      ['# TYPE x gauge\n# TYPE x counter\nx 1', /^line 2: TYPE x given twice/],
      ['# TYPE x widget\n', /^line 1: TYPE x: unknown type 'widget'/],
      ['x{1a="1"} 1', /^line 1: a label name expected at column 2/],
    ];
    for (const [text, why] of refused) expect(() => parsePromText(text)).toThrow(why);
  });
});
