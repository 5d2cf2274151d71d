/**
 * The five readiness checks of a move (src/report/readiness.ts), each passed once and refused once, from plain
 * facts; and the virt-launcher overhead against KubeVirt v1.8.4's formula worked by hand.
 */
import { launcherContainers } from '../src/report/launcher-limits';
import { judgeReadiness, memoryOverhead, nodesWithRoom, versionCard } from '../src/report/readiness';
import { LimitItemFacts, LimitRangeFacts, NodeFacts, ReadinessFacts, VmNeeds } from '../src/report/readiness-facts';
import { judgeMoves } from '../src/report/status-moves';

const Mi = 1024 * 1024;
const Gi = 1024 * Mi;
const labels = { 'kubevirt.io/schedulable': 'true', 'cpu-model.node.kubevirt.io/Cascadelake-Server': 'true',
  'cpu-feature.node.kubevirt.io/avx512f': 'true', 'machine-type.node.kubevirt.io/pc-q35-rhel9.6.0': 'true', zone: 'a' };
const node = (o: Partial<NodeFacts> = {}): NodeFacts => ({ name: 'n1', labels, taints: [], unschedulable: false,
  allocatable: { cpuMilli: 8000, memoryBytes: 32 * Gi }, requested: { cpuMilli: 1000, memoryBytes: 2 * Gi }, ...o });
const vm = (o: Partial<VmNeeds> = {}): VmNeeds => ({ cpuModel: 'Cascadelake-Server', features: [{ name: 'avx512f', policy: 'require' }],
  machineType: 'pc-q35-rhel9.6.0', nodeSelector: { zone: 'a' }, tolerations: [], vcpus: 4, requests: { cpuMilli: 4000, memoryBytes: 8 * Gi },
  cpuLimited: false, limits: {}, graphics: true, volumes: [{ name: 'root', storageClass: 'ceph-rbd', sizeBytes: 50 * Gi, accessModes: ['ReadWriteMany'], volumeMode: 'Block' }], ...o });
const kv = { found: true, version: 'v1.8.4', featureGates: ['DecentralizedLiveMigration'], migrationNetwork: 'lm' };
const tunnel = { read: 2, publicationsOk: 2, publicationsFailed: 0, tunnelsOpen: 0, probed: 0, probesOk: 0, probeErrors: [] };
const facts = (o: Partial<ReadinessFacts> = {}): ReadinessFacts => ({ vm: vm(), tunnel: { source: tunnel, target: tunnel },
  storageClasses: { 'ceph-rbd': { exists: true } }, capacities: [], nodes: [node()], quotas: [], limits: [], source: kv, target: kv, ...o });
const move = { from: 'q', to: 'p', vm: 'vms/db1', targetNamespace: 'vms' };
const item = (type: string, o: Partial<LimitItemFacts> = {}): LimitItemFacts => ({
  type, max: {}, min: {}, default: {}, defaultRequest: {}, maxLimitRequestRatio: {}, ...o,
});
const lr = (...items: LimitItemFacts[]): LimitRangeFacts => ({ name: 'lr', items });
const codes = (f: ReadinessFacts) => judgeReadiness(move, f).map((p) => `${p.severity} ${p.code}`);

test('every check passes on a node labelled as the node labeller labels it, with room', () => {
  expect(codes(facts())).toEqual([]);
});

describe('network', () => {
  test('refused when neither side\'s gateways carried a connection to the other', () => {
    const down = { ...tunnel, publicationsOk: 0, publicationsFailed: 3 };
    expect(codes(facts({ tunnel: { source: { ...down, publicationsFailed: 0 }, target: tunnel } }))).toEqual(['warning status/ready-tunnel-unknown']);
    const r = judgeReadiness(move, facts({ tunnel: { source: down, target: tunnel } }));
    expect(r.map((p) => p.code)).toEqual(['status/ready-tunnel-down']);
    expect(r[0].message).toBe('no gateway of q has carried a connection to p: no tunnel open and its last 3 trust publication(s) to p\'s gateways failed');
  });
  test('the probe decides where a gateway answered it: failed, refused even with publications accepted and a tunnel open; passed, passes', () => {
    const failed = { ...tunnel, tunnelsOpen: 1, probed: 2, probesOk: 0, probeErrors: ['gw-a: 192.168.50.3:15443: connect ECONNREFUSED 192.168.50.3:15443', 'gw-b: 192.168.50.4:15443: no answer within 3000 ms'] };
    const r = judgeReadiness(move, facts({ tunnel: { source: failed, target: tunnel } }));
    expect(r.map((p) => `${p.severity} ${p.code}`)).toEqual(['error status/ready-tunnel-down']);
    expect(r[0].message).toBe('no gateway of q can open a tunnel to p now: their probe of p\'s gateways (a tunnel\'s TLS handshake and identity check) failed '
      + '(gw-a: 192.168.50.3:15443: connect ECONNREFUSED 192.168.50.3:15443; gw-b: 192.168.50.4:15443: no answer within 3000 ms)');
    // one pod of two reached the peer: a tunnel opens (the origin tries the next gateway, the VIP moves)
    expect(codes(facts({ tunnel: { source: { ...failed, probesOk: 1 }, target: tunnel } }))).toEqual([]);
    // a passing probe outweighs failed publications (an older, stale record)
    const stale = { ...tunnel, publicationsOk: 0, publicationsFailed: 2, probed: 1, probesOk: 1 };
    expect(codes(facts({ tunnel: { source: stale, target: stale } }))).toEqual([]);
    // the other side unreadable (its gateway is gone), this side's probe of it failed: refused
    expect(codes(facts({ tunnel: { source: { ...tunnel, read: 0 }, target: { ...failed, tunnelsOpen: 0 } } }))).toEqual(['error status/ready-tunnel-down']);
  });
  test('an open tunnel passes; nothing read is a warning only', () => {
    expect(codes(facts({ tunnel: { source: { ...tunnel, publicationsOk: 0, tunnelsOpen: 1 }, target: tunnel } }))).toEqual([]);
    expect(codes(facts({ tunnel: {} }))).toEqual(['warning status/ready-tunnel-unknown']);
  });
});

describe('storage', () => {
  test('RWO refused, a StorageProfile without RWX Block refused, CSIStorageCapacity without room refused', () => {
    expect(codes(facts({ vm: vm({ volumes: [{ name: 'root', storageClass: 'ceph-rbd', sizeBytes: Gi, accessModes: ['ReadWriteOnce'], volumeMode: 'Block' }] }) })))
      .toEqual(['error status/ready-access-mode']);
    expect(codes(facts({ storageClasses: { 'ceph-rbd': { exists: true, claimPropertySets: [{ accessModes: ['ReadWriteMany'], volumeMode: 'Filesystem' }] } } })))
      .toEqual(['error status/ready-access-mode']);
    const r = judgeReadiness(move, facts({ capacities: [{ storageClassName: 'ceph-rbd', capacity: 100 * Gi, maximumVolumeSize: 40 * Gi }] }));
    expect(r.map((p) => p.message)).toEqual(['no topology segment of storage class ceph-rbd on p has room for volume root of vms/db1 (51200Mi; largest CSIStorageCapacity 40960Mi)']);
  });
  test('passes with RWX Block in the profile and a segment with room; other classes\' capacities do not count', () => {
    expect(codes(facts({ storageClasses: { 'ceph-rbd': { exists: true, claimPropertySets: [{ accessModes: ['ReadWriteMany'], volumeMode: 'Block' }] } },
      capacities: [{ storageClassName: 'ceph-rbd', capacity: 10 * Gi }, { storageClassName: 'ceph-rbd', capacity: 60 * Gi }, { storageClassName: 'other', capacity: 0 }] }))).toEqual([]);
  });
});

describe('compute', () => {
  const refusedBy = (n: NodeFacts, v = vm()) => judgeReadiness(move, facts({ nodes: [n], vm: v })).map((p) => p.message);
  test('each predicate refuses with the node\'s reason', () => {
    const without = (k: string) => Object.fromEntries(Object.entries(labels).filter(([l]) => l !== k));
    expect(refusedBy(node({ labels: without('cpu-model.node.kubevirt.io/Cascadelake-Server') }))[0]).toContain('n1: no label cpu-model.node.kubevirt.io/Cascadelake-Server=true');
    expect(refusedBy(node({ labels: without('cpu-feature.node.kubevirt.io/avx512f') }))[0]).toContain('n1: no label cpu-feature.node.kubevirt.io/avx512f=true');
    expect(refusedBy(node({ labels: without('machine-type.node.kubevirt.io/pc-q35-rhel9.6.0') }))[0]).toContain('no label machine-type.node.kubevirt.io/pc-q35-rhel9.6.0=true');
    expect(refusedBy(node({ unschedulable: true }))[0]).toContain('n1: cordoned');
    expect(refusedBy(node({ taints: [{ key: 'maint', value: 'x', effect: 'NoSchedule' }] }))[0]).toContain('taint maint=x:NoSchedule not tolerated');
    expect(refusedBy(node({ labels: { ...labels, zone: 'b' } }))[0]).toContain('nodeSelector zone=a not matched');
    expect(refusedBy(node(), vm({ requiredTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['c'] }] }] }))[0]).toContain('required node affinity not matched');
    expect(refusedBy(node(), vm({ features: [{ name: 'avx512f', policy: 'forbid' }] }))[0]).toContain('labelled cpu-feature.node.kubevirt.io/avx512f');
    expect(refusedBy(node(), vm({ cpuModel: 'host-model', hostModel: { model: 'Skylake-Server', requiredFeatures: [] } }))[0])
      .toContain('no label cpu-model-migration.node.kubevirt.io/Skylake-Server=true');
  });
  test('a tolerated taint, a matching affinity and a host-model migration label pass', () => {
    const n = node({ taints: [{ key: 'maint', value: 'x', effect: 'NoSchedule' }], labels: { ...labels, 'cpu-model-migration.node.kubevirt.io/Skylake-Server': 'true', 'cpu-feature.node.kubevirt.io/mpx': 'true' } });
    expect(refusedBy(n, vm({ cpuModel: 'host-model', hostModel: { model: 'Skylake-Server', requiredFeatures: ['mpx'] }, features: [],
      tolerations: [{ key: 'maint', operator: 'Exists' }], requiredTerms: [{ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] }] }))).toEqual([]);
  });
});

describe('version', () => {
  test('an older target, a gate off, one side without a migration network: each refused, the card names the side', () => {
    const f = facts({ target: { ...kv, version: 'v1.7.2', featureGates: [], migrationNetwork: undefined } });
    expect(codes(f)).toEqual(['error status/ready-kubevirt-older', 'error status/ready-gate-off', 'error status/ready-migration-network']);
    expect(versionCard('q', 'p', f)).toEqual({ from: 'q', to: 'p', source: { version: 'v1.8.4', gate: true, migrationNetwork: 'lm' }, target: { version: 'v1.7.2', gate: false }, update: ['p'] });
    expect(versionCard('q', 'p', facts({ source: { ...kv, featureGates: [] } })).update).toEqual(['q']);
  });
  test('a newer target passes', () => {
    expect(codes(facts({ target: { ...kv, version: 'v1.9.0' } }))).toEqual([]);
    expect(versionCard('q', 'p', facts()).update).toEqual([]);
  });
});

describe('capacity', () => {
  test('KubeVirt v1.8.4 overhead for 8 GiB and 4 vCPUs with graphics: pagetables ceil(8Gi / 1000) * 1000 / 512 = 16777216 B, 220+32+8+32 Mi', () => {
    expect(memoryOverhead(vm())).toBe(16_777_216 + (220 + 32 + 8 + 32) * Mi);
    expect(memoryOverhead(vm({ graphics: false, vcpus: 1 }))).toBe(16_777_216 + (220 + 8 + 8) * Mi);
  });
  test('a node with room for the requests but not the overhead is refused; the quota and LimitRange refuse', () => {
    const tight = node({ allocatable: { cpuMilli: 8000, memoryBytes: 10 * Gi + 100 * Mi }, requested: { cpuMilli: 0, memoryBytes: 2 * Gi } });
    expect(codes(facts({ nodes: [tight] }))).toEqual(['error status/ready-no-room']);
    expect(nodesWithRoom(vm(), [tight, node({ name: 'n2' })]).map((n) => n.name)).toEqual(['n2']);
    const q = judgeReadiness(move, facts({ quotas: [{ name: 'rq', hard: { 'requests.memory': 16 * Gi, pods: 10 }, used: { 'requests.memory': 8 * Gi, pods: 3 } }] }));
    expect(q.map((p) => p.message)).toEqual([`ResourceQuota vms/rq on p has requests.memory ${8 * Gi} left, the virt-launcher pod of vms/db1 needs ${8 * Gi + memoryOverhead(vm())}`]);
    expect(codes(facts({ limits: [lr(item('Container', { max: { cpuMilli: 2000 } }))] }))).toEqual(['error status/ready-limit-range', 'error status/ready-limit-range']);
  });
  test('room, quota and LimitRange that admit the pod pass', () => {
    expect(codes(facts({ quotas: [{ name: 'rq', hard: { 'requests.memory': 20 * Gi, 'requests.cpu': 8000 }, used: { 'requests.memory': 8 * Gi } }],
      limits: [lr(item('Container', { max: { cpuMilli: 8000, memoryBytes: 16 * Gi }, min: { cpuMilli: 5 } }))] }))).toEqual([]);
  });
});

describe('capacity: LimitRange per container (compute: 4000m, 8Gi + 308Mi overhead = 8500Mi; guest-console-log: 5m/35M, limits 15m/60M)', () => {
  const refusals = (limits: LimitRangeFacts[], v = vm(), target = kv) => judgeReadiness(move, facts({ vm: v, limits, target })).map((p) => p.message);
  const lrp = (i: number, t: string) => `LimitRange vms/lr on p (spec.limits[${i}], type ${t}) refuses the virt-launcher pod of vms/db1: `;
  test('KubeVirt\'s containers: compute with the VM\'s limits plus the overhead, the console sidecar unless off', () => {
    const [compute, log] = launcherContainers(vm({ limits: { memoryBytes: 8 * Gi } }), kv, { cpuMilli: 4000, memoryBytes: 8500 * Mi }, 308 * Mi);
    expect(compute).toEqual({ name: 'compute', sidecar: false, requests: { cpuMilli: 4000, memoryBytes: 8500 * Mi }, limits: { memoryBytes: 8500 * Mi } });
    expect(log).toEqual({ name: 'guest-console-log', sidecar: true, requests: { cpuMilli: 5, memoryBytes: 35_000_000 }, limits: { cpuMilli: 15, memoryBytes: 60_000_000 } });
    expect(launcherContainers(vm({ serialConsoleLog: false }), kv, { cpuMilli: 1, memoryBytes: 1 }, 0).map((c) => c.name)).toEqual(['compute']);
    expect(launcherContainers(vm(), { ...kv, serialConsoleLogDisabled: true }, { cpuMilli: 1, memoryBytes: 1 }, 0).map((c) => c.name)).toEqual(['compute']);
    const overridden = { ...kv, serialConsoleLogDisabled: true, guestConsoleLog: { requests: { cpuMilli: 50 }, limits: {} } };
    const [, consoleLog] = launcherContainers(vm({ serialConsoleLog: true }), overridden, { cpuMilli: 1, memoryBytes: 1 }, 0);
    expect(consoleLog.requests).toEqual({ cpuMilli: 50, memoryBytes: 35_000_000 });
  });
  test('container max exceeded: the compute container\'s limit (the VM\'s 8Gi plus the overhead)', () => {
    expect(refusals([lr(item('Container', { max: { memoryBytes: 8 * Gi } }))], vm({ limits: { memoryBytes: 8 * Gi } })))
      .toEqual([`${lrp(0, 'Container')}container compute: maximum memory usage per Container is 8192Mi, but limit is 8500Mi`]);
  });
  test('pod max exceeded by the sum: the console sidecar\'s 35M on top of compute\'s 8500Mi; without the sidecar it passes', () => {
    const limits = [lr(item('Container'), item('Pod', { max: { memoryBytes: 8500 * Mi } }))];
    expect(refusals(limits)).toEqual([`${lrp(1, 'Pod')}the pod: maximum memory usage per Pod is 8500Mi, but request is ${8500 * Mi + 35_000_000}`]);
    expect(refusals(limits, vm({ serialConsoleLog: false }))).toEqual([`${lrp(1, 'Pod')}the pod: maximum memory usage per Pod is 8500Mi. No limit is specified`]);
    expect(refusals(limits, vm({ serialConsoleLog: false, limits: { memoryBytes: 8192 * Mi } }))).toEqual([]);
  });
  test('ratio exceeded: compute\'s memory limit 16Gi + 308Mi over its request 8500Mi is above 1.9 (the console\'s 60M/35M is not)', () => {
    const r = refusals([lr(item('Container', { maxLimitRequestRatio: { memoryBytes: 1.9 } }))], vm({ limits: { memoryBytes: 16 * Gi } }));
    expect(r).toEqual([`${lrp(0, 'Container')}container compute: memory max limit to request ratio per Container is 1.9, but provided ratio is ${(16692 / 8500).toFixed(6)}`]);
  });
  test('min not met: KubeVirt\'s console container requests 5m CPU, the whole pod far more', () => {
    expect(refusals([lr(item('Container', { min: { cpuMilli: 100 } }))]))
      .toEqual([`${lrp(0, 'Container')}container guest-console-log: minimum cpu usage per Container is 100m, but request is 5m`]);
    expect(refusals([lr(item('Container', { min: { cpuMilli: 100 } }))], vm({ serialConsoleLog: false }))).toEqual([]);
  });
  test('a default limit below the request fails; a default where compute sets none passes max and ratio', () => {
    expect(refusals([lr(item('Container', { default: { memoryBytes: 4 * Gi } }))]))
      .toEqual([`${lrp(0, 'Container')}container compute: its memory request 8500Mi is above the limit 4096Mi the LimitRange's default gives it (the pod is invalid)`]);
    // max alone: the API server defaults the limit to it (SetDefaults_LimitRangeItem), so compute has one
    expect(refusals([lr(item('Container', { max: { memoryBytes: 16 * Gi } }))])).toEqual([]);
    const ratio = item('Container', { maxLimitRequestRatio: { cpuMilli: 4 } });
    expect(refusals([lr(ratio)])).toEqual([`${lrp(0, 'Container')}container compute: cpu max limit to request ratio per Container is 4, but no limit is specified or limit is 0`]);
    expect(refusals([lr({ ...ratio, default: { cpuMilli: 8000 } })])).toEqual([]);
  });
  test('a PersistentVolumeClaim item judges the target PVCs, not the pod', () => {
    const r = judgeReadiness(move, facts({ limits: [lr(item('PersistentVolumeClaim', { storage: { max: 40 * Gi } }))] }));
    expect(r.map((p) => p.message)).toEqual(['LimitRange vms/lr on p (spec.limits[0], type PersistentVolumeClaim) refuses the target PVC of volume root of vms/db1: maximum storage usage per PersistentVolumeClaim is 40960Mi, but request is 51200Mi']);
    expect(r[0].fix).toBe('change the LimitRange\'s spec.limits[0].max.storage, or the volume\'s size');
  });
  test('the fix names the field', () => {
    const [p] = judgeReadiness(move, facts({ vm: vm({ limits: { memoryBytes: 8 * Gi } }), limits: [lr(item('Container', { max: { memoryBytes: 8 * Gi } }))] }));
    expect(p).toMatchObject({ code: 'status/ready-limit-range', check: 'capacity', fix: 'change the LimitRange\'s spec.limits[0].max.memory, or the VM\'s requests or limits (domain.resources)' });
  });
});

test('CPU limits: multifd off is a warning, the move stays ready; an error makes it not ready', () => {
  const base = { plan: 'mtv/p', from: 'q', to: 'p', vm: { namespace: 'vms', name: 'db1' }, targetNamespace: 'vms', source: { macs: [] },
    target: { namespacePresent: true, nameTaken: false, missingNetworks: [], missingStorageClasses: [], macs: {} } };
  const [warned] = judgeMoves([{ ...base, readiness: facts({ vm: vm({ cpuLimited: true }) }) }], () => undefined);
  expect(warned.ready).toBe(true);
  expect(warned.problems.map((p) => [p.code, p.severity])).toEqual([['status/move-multifd-off', 'warning']]);
  expect(codes(facts({ nodes: undefined }))).toEqual([]);
  const [refused] = judgeMoves([{ ...base, readiness: facts({ nodes: [] }) }], () => undefined);
  expect(refused.ready).toBe(false);
  expect(refused.problems[0]).toMatchObject({ code: 'status/ready-no-node', check: 'compute', message: 'no schedulable node of p can run vms/db1 (no nodes)' });
});
