/**
 * cli/yaml-text.ts against the `yaml` package on random JSON data (seeded, so a failure replays): maps,
 * sequences, nested sequences, numbers of every kind, and strings drawn from YAML's awkward characters
 * (indicators, spaces at either end, line breaks, tabs, quotes, unicode) as well as long multi-line
 * printable strings (the block-literal fast path). The example-based cases are in yaml-text.test.ts.
 */
import fc from 'fast-check';
import { yamlPackageText, yamlText } from '../src/base/yaml-text';

const awkwardChar = fc.constantFrom(
  'a', 'Z', '0', '9', ' ', '\n', '\t', '\r', ':', '#', '-', '?', '{', '}', '[', ']', ',', '&', '*', '!', '|', '>',
  "'", '"', '%', '@', '`', '~', '.', '\\', 'é', '\u2028', '\u0000', '\u00a0', 'ä', '😀',
);
const awkwardString = fc.array(awkwardChar, { maxLength: 12 }).map((cs) => cs.join(''));
const wordy = fc.constantFrom('yes', 'no', 'null', 'true', 'NULL', '~', '1e3', '0x1F', '0o7', '.inf', '-.nan', '1_000', '012', '+1', '2026-11-24', '1:2');
const line = fc.array(fc.constantFrom('a', 'b', ' ', ':', '#', '-', '1', '.', '/'), { minLength: 1, maxLength: 30 }).map((cs) => cs.join(''));
const longMultiLine = fc.tuple(fc.array(line, { minLength: 2, maxLength: 8 }), fc.constantFrom('', '\n', '\n\n'))
  .map(([lines, end]) => `x${lines.join('\n')}${end}`);
const scalar = fc.oneof(
  awkwardString, wordy, longMultiLine, fc.string(), fc.integer(), fc.double(), fc.boolean(), fc.constant(null),
);
const key = fc.oneof(awkwardString, wordy, fc.string({ maxLength: 8 }));

const { tree } = fc.letrec((tie) => ({
  tree: fc.oneof({ depthSize: 'small', withCrossShrink: true }, scalar, tie('arr'), tie('obj')),
  arr: fc.array(tie('tree'), { maxLength: 4 }),
  obj: fc.dictionary(key, tie('tree'), { maxKeys: 5 }),
}));

describe('yamlText on random data', () => {
  test('writes the yaml package\'s bytes for any JSON object (seeded, 800 cases)', () => {
    fc.assert(
      fc.property(fc.dictionary(key, tree, { minKeys: 1, maxKeys: 6 }), (o) => {
        expect(yamlText(o)).toBe(yamlPackageText(o));
      }),
      { seed: 20261124, numRuns: 800 },
    );
  });

  test('the comparison can fail: a text that differs from the package is caught', () => {
    const o = { a: 'true', b: '0x1F' };
    expect(yamlPackageText(o)).toBe('a: "true"\nb: "0x1F"\n');
    expect(yamlText(o)).toBe(yamlPackageText(o));
    expect(yamlText(o)).not.toBe('a: true\nb: 0x1F\n');
  });
});
