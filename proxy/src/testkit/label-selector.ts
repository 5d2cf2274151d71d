/**
 * Test support: equality-based Kubernetes label selectors, as the fake API servers (fake-kube.ts,
 * fake-kube-cluster.ts) filter lists and watches with them. Set-based requirements (`in`, `notin`) are
 * not understood: the parser answers undefined and the servers answer 400.
 */

export type Requirement = { key: string; op: 'exists' | '!exists' | '=' | '!='; value?: string };

/** Parse an equality-based label selector (`a=b`, `a==b`, `a!=b`, `a`, `!a`, comma-separated); undefined if set-based or malformed. */
export function parseLabelSelector(sel: string): Requirement[] | undefined {
  const out: Requirement[] = [];
  for (const raw of sel.split(',')) {
    const t = raw.trim();
    if (!t) continue;
    if (/\s(in|notin)\s/.test(t)) return undefined;
    let m: RegExpMatchArray | null;
    if ((m = t.match(/^!\s*([\w./-]+)$/))) out.push({ key: m[1], op: '!exists' });
    else if ((m = t.match(/^([\w./-]+)\s*!=\s*([\w.-]*)$/))) out.push({ key: m[1], op: '!=', value: m[2] });
    else if ((m = t.match(/^([\w./-]+)\s*==?\s*([\w.-]*)$/))) out.push({ key: m[1], op: '=', value: m[2] });
    else if ((m = t.match(/^([\w./-]+)$/))) out.push({ key: m[1], op: 'exists' });
    else return undefined;
  }
  return out;
}

/** Does an object with `labels` match the parsed selector (Kubernetes semantics: `a!=b` also matches objects without `a`)? */
export function matchesLabels(labels: Record<string, string> | undefined, sel: Requirement[]): boolean {
  const l = labels ?? {};
  return sel.every((r) => {
    const has = Object.prototype.hasOwnProperty.call(l, r.key);
    if (r.op === 'exists') return has;
    if (r.op === '!exists') return !has;
    if (r.op === '=') return has && l[r.key] === r.value;
    return !has || l[r.key] !== r.value;
  });
}
