/**
 * Kubernetes resource quantities in the API server's canonical form (k8s.io/apimachinery
 * pkg/api/resource Quantity.String: CanonicalizeBytes, AsCanonicalBytes, AsCanonicalBase1024Bytes).
 *
 * The API server stores the quantities of built-in objects (container resources) canonically: `1024Mi` is read
 * back as `1Gi`, `1000m` as `1`, `0.5` as `500m`. A manifest that writes another form is rewritten on apply,
 * and GitOps engines that compare text show the object out of sync for ever. cdk8s-plus-28 writes every memory
 * size in `Mi`, so what we emit goes through `canonicalQuantity` (test/apply.real.test.ts checks the whole
 * output against a real API server; test/quantity.real.test.ts checks this function against it case by case).
 *
 * Forms: binary suffixes (Ki..Ei) stay binary when the value is a whole number of bytes of at least 1024,
 * else they turn decimal; decimal suffixes (n, u, m, '', k, M, G, T, P, E) give the smallest whole mantissa
 * at an exponent that is a multiple of 3; exponent forms (`1e3`) keep an `e`.
 */
const BINARY: Record<string, number> = { Ki: 1, Mi: 2, Gi: 3, Ti: 4, Pi: 5, Ei: 6 };
const DECIMAL: Record<string, number> = { n: -9, u: -6, m: -3, '': 0, k: 3, M: 6, G: 9, T: 12, P: 15, E: 18 };
const DECIMAL_SUFFIX = new Map(Object.entries(DECIMAL).map(([s, e]) => [e, s]));
const BINARY_SUFFIX = ['', 'Ki', 'Mi', 'Gi', 'Ti', 'Pi', 'Ei'];
const QUANTITY = /^([+-]?)(\d+(?:\.\d*)?|\.\d+)(?:(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)|[eE]([+-]?\d+))?$/;

/** A value as integer × 10^scale (exact), with the form its suffix asks for. */
interface Parsed { value: bigint; scale: number; format: 'binary' | 'decimal' | 'exponent' }

function parse(text: string, minScale: number): Parsed | undefined {
  const m = QUANTITY.exec(text.trim());
  if (!m) return undefined;
  const [, sign, num, suffix, exp] = m;
  const [whole, frac = ''] = num.split('.');
  let value = BigInt(`${sign === '-' ? '-' : ''}${whole || '0'}${frac}`);
  let scale = -frac.length;
  if (suffix && suffix in BINARY) {
    value *= 1024n ** BigInt(BINARY[suffix]);
    return { value, scale, format: 'binary' };
  }
  scale += exp !== undefined ? Number(exp) : DECIMAL[suffix ?? ''];
  // the API server keeps nano precision at most, container resources milli precision (rounding up)
  if (scale < minScale) {
    const div = 10n ** BigInt(minScale - scale);
    value = value / div + (value % div !== 0n && value > 0n ? 1n : 0n);
    scale = minScale;
  }
  return { value, scale, format: exp !== undefined ? 'exponent' : 'decimal' };
}

/** Mantissa and an exponent that is a multiple of 3, the mantissa as small as stays whole (AsCanonicalBytes). */
function canonicalDecimal(value: bigint, scale: number): [bigint, number] {
  let v = value;
  let e = scale;
  while (v !== 0n && v % 10n === 0n) { v /= 10n; e += 1; }
  const extra = ((e % 3) + 3) % 3;
  return [v * 10n ** BigInt(extra), e - extra];
}

/**
 * `text` as the API server writes it back; text that is not a quantity is returned unchanged. `minScale` is the
 * finest precision kept, rounding up: -9 (nano) for any quantity, -3 (milli) for container resources, which the
 * API server rounds up to 1m (a Pod's `1n` CPU request reads back as `1m`).
 */
export function canonicalQuantity(text: string, minScale = -9): string {
  const q = parse(text, minScale);
  if (!q) return text;
  if (q.value === 0n) return '0';
  let format = q.format;
  const bytes = q.scale >= 0 ? q.value * 10n ** BigInt(q.scale) : undefined;
  const whole = q.scale >= 0 || q.value % 10n ** BigInt(-q.scale) === 0n;
  if (format === 'binary') {
    const abs = q.value < 0n ? -q.value : q.value;
    const lessThan1024 = q.scale >= 0 ? abs * 10n ** BigInt(q.scale) < 1024n : abs < 1024n * 10n ** BigInt(-q.scale);
    if (lessThan1024 || !whole) format = 'decimal';
  }
  if (format === 'binary') {
    let v = bytes ?? q.value / 10n ** BigInt(-q.scale);
    let i = 0;
    while (i < 6 && v % 1024n === 0n) { v /= 1024n; i += 1; }
    return `${v}${BINARY_SUFFIX[i]}`;
  }
  const [mantissa, exponent] = canonicalDecimal(q.value, q.scale);
  if (format === 'exponent') return exponent === 0 ? `${mantissa}` : `${mantissa}e${exponent}`;
  const suffix = DECIMAL_SUFFIX.get(exponent);
  return suffix === undefined ? `${mantissa}e${exponent}` : `${mantissa}${suffix}`;
}

/**
 * The value of a quantity as a number (bytes for a memory size or a bandwidth), or undefined when the text is
 * not a quantity. Exact for whole values up to 2^53; a fraction of a unit is kept (`0.5Gi` is 536870912).
 */
export function quantityValue(text: string): number | undefined {
  const q = parse(text, -9);
  if (!q) return undefined;
  return q.scale >= 0 ? Number(q.value * 10n ** BigInt(q.scale)) : Number(q.value) / 10 ** -q.scale;
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };
const isObj = (x: unknown): x is { [k: string]: Json } => typeof x === 'object' && x !== null && !Array.isArray(x);

/** Container resources of a workload or pod (`spec.template.spec` or `spec`), canonical; the object is changed in place. */
export function canonicalizeWorkloadQuantities<T>(obj: T): T {
  const spec = isObj(obj) && isObj(obj.spec) ? obj.spec : undefined;
  const podSpec = spec && isObj(spec.template) && isObj(spec.template.spec) ? spec.template.spec : spec;
  if (!podSpec) return obj;
  for (const list of [podSpec.containers, podSpec.initContainers]) {
    for (const c of Array.isArray(list) ? list : []) {
      if (!isObj(c) || !isObj(c.resources)) continue;
      for (const kind of ['requests', 'limits']) {
        const r = c.resources[kind];
        if (isObj(r)) for (const [k, v] of Object.entries(r)) if (typeof v === 'string') r[k] = canonicalQuantity(v, -3);
      }
    }
  }
  return obj;
}
