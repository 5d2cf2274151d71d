/**
 * NetworkMaps and StorageMaps per ordered cluster pair: the pod network to the pod network, each VM
 * network to its counterpart (the same network on the destination, or the user's override), storage
 * classes as the user maps them. Every network named must exist (declared, or created by the fleet),
 * and the fleet's own live-migration networks are never a VM's. Pure, no cdk8s import.
 */
import { ForkliftSpec } from './schema';
import { ClusterFacts, NetworkDestination, NetworkPair, StoragePair } from './model';
import { ForkliftProblems } from './checks';
import { EmittedObject } from './gates';

const F = 'spec.forklift';

type CudnSpec = { namespaceSelector?: { matchExpressions?: { key: string; operator: string; values?: string[] }[] }; network?: { topology?: string } };

/**
 * `namespace/name` of the NADs the emitted Localnet ClusterUserDefinedNetworks create: OVN-Kubernetes writes one
 * NAD named like the network into each namespace its `namespaceSelector` selects (we select by
 * `kubernetes.io/metadata.name In [...]`).
 */
export function vmNetworkNadsOf(objects: readonly EmittedObject[]): string[] {
  const out: string[] = [];
  for (const o of objects) {
    const spec = o.spec as CudnSpec | undefined;
    if (o.kind !== 'ClusterUserDefinedNetwork' || spec?.network?.topology !== 'Localnet') continue;
    for (const e of spec.namespaceSelector?.matchExpressions ?? []) {
      if (e.key === 'kubernetes.io/metadata.name' && e.operator === 'In') for (const ns of e.values ?? []) out.push(`${ns}/${o.metadata?.name ?? ''}`);
    }
  }
  return [...new Set(out)].sort();
}

/** Declared VM networks (`namespace/name`) per cluster: the fleet's VM networks there, and those `spec.forklift.networks` declares. */
export function declaredNetworks(p: ForkliftProblems, spec: ForkliftSpec, clusters: ReadonlyMap<string, ClusterFacts>): Map<string, Set<string>> {
  const out = new Map([...clusters].map(([c, f]) => [c, new Set<string>(f.vmNetworkNads ?? [])]));
  (spec.networks ?? []).forEach((n, i) => {
    const key = `${n.namespace}/${n.name}`;
    for (const [j, c] of (n.clusters ?? []).entries()) {
      if (!clusters.has(c)) p.error('unknown-cluster', `${F}.networks[${i}].clusters[${j}]`, `'${c}' is not a cluster of the fleet`, `use one of ${[...clusters.keys()].join(', ')}`);
    }
    for (const c of n.clusters ?? [...clusters.keys()]) {
      const mesh = clusters.get(c)?.meshNads.includes(key);
      if (mesh) p.error('mesh-network', `${F}.networks[${i}]`, `${key} is the fleet's live-migration network on ${c}, not a VM network`, 'declare the VM networks only; the migration networks carry KubeVirt\'s migration traffic');
      out.get(c)?.add(key);
    }
  });
  return out;
}

/** Where a network reference points, checked against the cluster's declared and fleet networks. */
function known(
  p: ForkliftProblems, path: string, ref: string, cluster: string, nets: ReadonlyMap<string, Set<string>>, facts: ClusterFacts | undefined,
): void {
  if (facts?.meshNads.includes(ref)) {
    p.error('mesh-network', path, `${ref} is the fleet's live-migration network on ${cluster}, not a VM network`, 'map the VM network the VM attaches to instead');
  } else if (facts && !nets.get(cluster)?.has(ref)) {
    p.error('network-unknown', path, `${ref} is neither declared for ${cluster} nor created by the fleet there`, `declare it in spec.forklift.networks (name, namespace, clusters including ${cluster}), or fix the reference`);
  }
}

/** Validated overrides, by `from|to` and source. */
export function networkOverrides(
  p: ForkliftProblems, spec: ForkliftSpec, nets: ReadonlyMap<string, Set<string>>, clusters: ReadonlyMap<string, ClusterFacts>,
): Map<string, Map<string, NetworkDestination>> {
  const out = new Map<string, Map<string, NetworkDestination>>();
  (spec.networkMaps ?? []).forEach((m, i) => {
    const at = `${F}.networkMaps[${i}]`;
    for (const side of ['from', 'to'] as const) {
      if (!clusters.has(m[side])) p.error('unknown-cluster', `${at}.${side}`, `'${m[side]}' is not a cluster of the fleet`, `use one of ${[...clusters.keys()].join(', ')}`);
    }
    known(p, `${at}.source`, m.source, m.from, nets, clusters.get(m.from));
    let dest: NetworkDestination;
    if (m.destination === 'pod' || m.destination === 'ignored') {dest = { type: m.destination };}
    else {
      known(p, `${at}.destination`, m.destination, m.to, nets, clusters.get(m.to));
      const [namespace, name] = m.destination.split('/');
      dest = { type: 'multus', name, namespace };
    }
    const key = `${m.from}|${m.to}`;
    const byPair = out.get(key) ?? new Map<string, NetworkDestination>();
    if (byPair.has(m.source)) p.error('network-duplicate', at, `maps ${m.source} from ${m.from} to ${m.to} a second time`, 'keep one entry per source network and pair');
    byPair.set(m.source, dest);
    out.set(key, byPair);
  });
  return out;
}

/** The NetworkMap entries of one pair; unmapped source networks become warnings. */
export function networkPairs(
  p: ForkliftProblems, from: string, to: string, nets: ReadonlyMap<string, Set<string>>,
  overrides: ReadonlyMap<string, ReadonlyMap<string, NetworkDestination>>,
): NetworkPair[] {
  const out: NetworkPair[] = [{ source: { type: 'pod' }, destination: { type: 'pod' } }];
  const over = overrides.get(`${from}|${to}`);
  for (const ref of [...(nets.get(from) ?? [])].sort()) {
    const [namespace, name] = ref.split('/');
    const dest: NetworkDestination | undefined = over?.get(ref) ?? (nets.get(to)?.has(ref) ? { type: 'multus', name, namespace } : undefined);
    if (dest) {out.push({ source: { name, namespace }, destination: dest });}
    else {
      p.warn('network-unmapped', `${F}.networkMaps`, `${ref} exists on ${from} but not on ${to} and has no counterpart: Forklift refuses a VM of ${from} -> ${to} attached to it`,
        `declare ${ref} for ${to}, or add {from: ${from}, to: ${to}, source: ${ref}, destination: <namespace/name> | pod | ignored}`);
    }
  }
  return out;
}

/** The StorageMap entries of one pair: pair-specific entries win over general ones for the same source class. */
export function storagePairs(p: ForkliftProblems, spec: ForkliftSpec, from: string, to: string, usedBy: string): StoragePair[] {
  const bySource = new Map<string, { specific: boolean; entry: StoragePair }>();
  (spec.storage ?? []).forEach((s) => {
    if ((s.from && s.from !== from) || (s.to && s.to !== to)) return;
    const specific = !!(s.from || s.to);
    const cur = bySource.get(s.source);
    if (cur && cur.specific && !specific) return;
    const entry: StoragePair = {
      source: s.source, storageClass: s.storageClass,
      ...(s.accessMode ? { accessMode: s.accessMode } : {}), ...(s.volumeMode ? { volumeMode: s.volumeMode } : {}),
    };
    bySource.set(s.source, { specific, entry });
  });
  if (bySource.size === 0) {
    p.error('storage-missing', `${F}.storage`, `has no storage class mapping for ${from} -> ${to}, which ${usedBy} uses; Forklift creates the blank target disks from it`,
      `add {source: <class on ${from}>, storageClass: <class on ${to}>} (without from/to it applies to every pair)`);
  }
  return [...bySource.keys()].sort().map((k) => bySource.get(k)!.entry);
}

/** Storage entries naming unknown clusters, and the same source class twice in one scope. */
export function checkStorage(p: ForkliftProblems, spec: ForkliftSpec, clusters: ReadonlyMap<string, ClusterFacts>): void {
  const seen = new Map<string, number>();
  (spec.storage ?? []).forEach((s, i) => {
    for (const side of ['from', 'to'] as const) {
      const c = s[side];
      if (c && !clusters.has(c)) p.error('unknown-cluster', `${F}.storage[${i}].${side}`, `'${c}' is not a cluster of the fleet`, `use one of ${[...clusters.keys()].join(', ')}`);
    }
    const key = `${s.from ?? '*'}|${s.to ?? '*'}|${s.source}`;
    if (seen.has(key)) p.error('storage-duplicate', `${F}.storage[${i}]`, `maps storage class ${s.source} again for the same clusters (first at storage[${seen.get(key)}])`, 'keep one entry per source class and pair');
    else seen.set(key, i);
  });
}
