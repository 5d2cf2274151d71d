/**
 * The model's float format (test/support/virt-handler-metrics.ts goFloat) against what Go's own
 * strconv.FormatFloat(v, 'g', -1, 64) printed for these values (go1.26, 2026-12-03), which is how client_golang's
 * expfmt writes a sample value; and those texts parse back to the same numbers (src/base/prom-text.ts).
 */
import { parsePromText } from '../src/base/prom-text';
import { goFloat } from './support/virt-handler-metrics';

const GO: Array<[number, string]> = [
  [0, '0'], [1, '1'], [12.5, '12.5'], [123456, '123456'], [1234567, '1.234567e+06'], [1073741824, '1.073741824e+09'],
  [3328599654.4, '3.3285996544e+09'], [104857600, '1.048576e+08'], [0.0001, '0.0001'], [0.00001, '1e-05'],
  [-2147483648, '-2.147483648e+09'], [1e21, '1e+21'], [214748364.8, '2.147483648e+08'],
];

test('goFloat writes what Go writes, and the parser reads it back', () => {
  expect(GO.map(([v]) => goFloat(v))).toEqual(GO.map(([, s]) => s));
  for (const [v, s] of GO) expect(parsePromText(`x ${s}\n`).samples[0].value).toBe(v);
});
