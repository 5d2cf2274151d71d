/**
 * What `migration-mesh inventory` makes of a cluster's objects (src/forklift/inventory-read.ts): the scheduler's
 * pod-request rule, which nodes take VMs, which VMs move live, KubeVirt's CPU request default, storage classes
 * from claims or templates, and one document for one cluster state whatever order the API lists it in.
 * test/inventory.real.test.ts reads the same kinds of objects from a real API server.
 */
import { inventoryFromObjects, podRequests, ClusterObjects, cpuQuantity, memoryQuantity } from '../src/forklift/inventory-read';
import { inventorySchema } from '../src/forklift/inventory';

const GI = 2 ** 30;
const node = (name: string, extra: Record<string, unknown> = {}) => ({
  metadata: { name, labels: { 'kubernetes.io/hostname': name, 'kubevirt.io/schedulable': 'true', 'cpu-model.node.kubevirt.io/Skylake-Server': 'true' } },
  spec: {},
  status: { allocatable: { cpu: '16', memory: '64Gi' }, conditions: [{ type: 'Ready', status: 'True' }] },
  ...extra,
});
const pod = (nodeName: string, cpu: string, memory: string, extra: Record<string, unknown> = {}) => ({
  metadata: { name: `p-${Math.random()}`, namespace: 'default' },
  spec: { nodeName, containers: [{ name: 'c', resources: { requests: { cpu, memory } } }] },
  status: { phase: 'Running' }, ...extra,
});
const vm = (name: string, spec: Record<string, unknown> = {}) => ({
  metadata: { name, namespace: 'vms' },
  spec: {
    template: {
      metadata: { labels: { app: name } },
      spec: { domain: { devices: {} }, networks: [{ name: 'default', pod: {} }, { name: 'n', multus: { networkName: 'vlan100' } }, { name: 'm', multus: { networkName: 'other/db-net' } }],
        volumes: [{ name: 'root', dataVolume: { name: `${name}-root` } }] },
    },
    dataVolumeTemplates: [{ metadata: { name: `${name}-root` }, spec: { storage: { storageClassName: 'template-class' } } }],
    ...spec,
  },
});
const vmi = (name: string, nodeName: string, domain: Record<string, unknown>, status: Record<string, unknown> = {}) => ({
  metadata: { name, namespace: 'vms' }, spec: { domain }, status: { phase: 'Running', nodeName, ...status },
});

function cluster(o: Partial<ClusterObjects>): ClusterObjects {
  return { nodes: [node('n1')], pods: [], vms: [], vmis: [], pvcs: [], ...o };
}

describe('pod requests as the scheduler counts them', () => {
  it('takes the larger of the containers\' sum and the largest init container, plus the overhead', () => {
    const p = {
      spec: {
        containers: [{ resources: { requests: { cpu: '500m', memory: '1Gi' } } }, { resources: { requests: { cpu: '250m' } } }],
        initContainers: [{ resources: { requests: { cpu: '2', memory: '512Mi' } } }],
        overhead: { cpu: '100m', memory: '64Mi' },
      },
    };
    expect(podRequests(p)).toEqual({ cpu: 2.1, memory: GI + 64 * 2 ** 20 });
  });
});

describe('nodes', () => {
  it('sums the requests of the pods bound to each node that have not ended', () => {
    const { inventory } = inventoryFromObjects('f', new Map([['a', cluster({
      nodes: [node('n2'), node('n1')],
      pods: [pod('n1', '1500m', '2Gi'), pod('n1', '500m', '2Gi'), pod('n2', '3', '1Gi'), pod('n1', '8', '8Gi', { status: { phase: 'Succeeded' } }), pod('', '4', '4Gi')],
    })]]));
    expect(inventory.clusters.a.nodes.map((n) => [n.name, n.requested])).toEqual([
      ['n1', { cpu: '2', memory: '4Gi' }],
      ['n2', { cpu: '3', memory: '1Gi' }],
    ]);
  });

  it('marks cordoned, not-Ready and nodes virt-handler has not labelled schedulable as taking no VM, and carries taints as they are', () => {
    const { inventory } = inventoryFromObjects('f', new Map([['a', cluster({
      nodes: [
        node('cordoned', { spec: { unschedulable: true } }),
        node('notready', { status: { allocatable: { cpu: '4', memory: '8Gi' }, conditions: [{ type: 'Ready', status: 'Unknown' }] } }),
        node('no-handler', { metadata: { name: 'no-handler', labels: { 'kubevirt.io/schedulable': 'false' } } }),
        node('tainted', { spec: { taints: [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule', timeAdded: 'x' }] } }),
        node('plain'),
      ],
    })]]));
    expect(Object.fromEntries(inventory.clusters.a.nodes.map((n) => [n.name, [n.schedulable ?? true, n.taints]]))).toEqual({
      cordoned: [false, undefined], 'no-handler': [false, undefined], notready: [false, undefined], plain: [true, undefined],
      tainted: [true, [{ key: 'node-role.kubernetes.io/control-plane', effect: 'NoSchedule' }]],
    });
  });

  it('writes the allocatable in canonical quantities', () => {
    expect([cpuQuantity(7.91), cpuQuantity(16), cpuQuantity(0.1), memoryQuantity(32827084 * 1024), memoryQuantity(16 * GI), memoryQuantity(1000)])
      .toEqual(['7910m', '16', '100m', '32827084Ki', '16Gi', '1k']);
  });
});

describe('VMs', () => {
  it('lists a running VM with its node, size, CPU limit, vCPUs, claims\' storage classes, networks and labels', () => {
    const { inventory, skipped } = inventoryFromObjects('f', new Map([['a', cluster({
      vms: [vm('db1', { template: { metadata: { labels: { app: 'db' } }, spec: {
        domain: {}, nodeSelector: { 'cpu-model.node.kubevirt.io/Skylake-Server': 'true' }, tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoSchedule' }],
        networks: [{ name: 'n', multus: { networkName: 'vlan100' } }],
        volumes: [{ name: 'root', dataVolume: { name: 'db1-root' } }, { name: 'data', persistentVolumeClaim: { claimName: 'db1-data' } }, { name: 'ci', cloudInitNoCloud: {} }],
      } } })],
      vmis: [vmi('db1', 'n1', { cpu: { sockets: 2, cores: 2, threads: 1, model: 'Skylake-Server', features: [{ name: 'avx512f', policy: 'require' }] }, machine: { type: 'pc-q35-rhel9.4.0' }, memory: { guest: '16Gi' }, resources: { requests: { cpu: '3' }, limits: { cpu: '4' } } })],
      pvcs: [{ metadata: { name: 'db1-root', namespace: 'vms' }, spec: { storageClassName: 'ceph-rbd' } }, { metadata: { name: 'db1-data', namespace: 'vms' }, spec: { storageClassName: 'local-lvm' } }],
    })]]));
    expect(skipped).toEqual([]);
    expect(inventory.clusters.a.vms).toEqual([{
      name: 'db1', namespace: 'vms', node: 'n1', cpu: '3', memory: '16Gi', cpuLimit: '4', vcpus: 4,
      storageClasses: ['ceph-rbd', 'local-lvm'], networks: ['vms/vlan100'], vmiLabels: { app: 'db' },
      nodeSelector: { 'cpu-model.node.kubevirt.io/Skylake-Server': 'true' }, cpuModel: 'Skylake-Server', cpuFeatures: [{ name: 'avx512f', policy: 'require' }],
      machineType: 'pc-q35-rhel9.4.0', tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoSchedule' }],
    }]);
  });

  it('gives a VMI without a CPU request what KubeVirt gives its pod: vCPUs x 1000m / cpuAllocationRatio (10, or the CR\'s)', () => {
    const objects = (kubevirt?: Record<string, unknown>) => cluster({
      vms: [vm('w')], vmis: [vmi('w', 'n1', { cpu: { cores: 4 }, resources: { requests: { memory: '2Gi' } } })], kubevirt,
    });
    expect(inventoryFromObjects('f', new Map([['a', objects()]])).inventory.clusters.a.vms?.[0]).toMatchObject({ cpu: '400m', memory: '2Gi', vcpus: 4 });
    const ratio4 = objects({ spec: { configuration: { developerConfiguration: { cpuAllocationRatio: 4 } } } });
    expect(inventoryFromObjects('f', new Map([['a', ratio4]])).inventory.clusters.a.vms?.[0]).toMatchObject({ cpu: '1' });
  });

  it('takes a not-yet-made claim\'s class from the VM\'s DataVolume template, and namespaces bare network names', () => {
    const { inventory } = inventoryFromObjects('f', new Map([['a', cluster({ vms: [vm('w')], vmis: [vmi('w', 'n1', { memory: { guest: '1Gi' } })] })]]));
    expect(inventory.clusters.a.vms?.[0]).toMatchObject({ storageClasses: ['template-class'], networks: ['other/db-net', 'vms/vlan100'] });
  });

  it('leaves out, with the reason, a stopped VM, a pending VMI and one migrating now; lists one whose last migration ended', () => {
    const { inventory, skipped } = inventoryFromObjects('f', new Map([['a', cluster({
      vms: [vm('stopped'), vm('pending'), vm('moving'), vm('moved')],
      vmis: [
        { ...vmi('pending', '', {}), status: { phase: 'Scheduling' } },
        vmi('moving', 'n1', { memory: { guest: '1Gi' } }, { migrationState: { startTimestamp: 'x' } }),
        vmi('moved', 'n1', { memory: { guest: '1Gi' } }, { migrationState: { completed: true } }),
      ],
    })]]));
    expect(inventory.clusters.a.vms?.map((v) => v.name)).toEqual(['moved']);
    expect(skipped.map((s) => [s.vm, s.reason.split(' ').slice(0, 4).join(' ')])).toEqual([
      ['vms/moving', 'it is migrating now'],
      ['vms/pending', 'its VirtualMachineInstance is Scheduling,'],
      ['vms/stopped', 'it is not running'],
    ]);
  });
});

describe('the document', () => {
  it('is the same for the same cluster state whatever order the API lists it in, and is an Inventory evacuate reads', () => {
    const vms = [vm('b'), vm('a'), vm('c')];
    const vmis = [vmi('c', 'n2', { memory: { guest: '2Gi' } }), vmi('a', 'n1', { memory: { guest: '1Gi' } }), vmi('b', 'n1', { memory: { guest: '4Gi' } })];
    const nodes = [node('n2'), node('n1')];
    const pods = [pod('n1', '1', '1Gi'), pod('n2', '2', '2Gi')];
    const one = inventoryFromObjects('f', new Map([['a', cluster({ nodes, pods, vms, vmis })]])).inventory;
    const two = inventoryFromObjects('f', new Map([['a', cluster({ nodes: [...nodes].reverse(), pods: [...pods].reverse(), vms: [...vms].reverse(), vmis: [...vmis].reverse() })]])).inventory;
    expect(JSON.stringify(two)).toBe(JSON.stringify(one));
    expect(one.clusters.a.vms?.map((v) => `${v.name}@${v.node}`)).toEqual(['a@n1', 'b@n1', 'c@n2']);
    expect(inventorySchema.safeParse(one).success).toBe(true);
  });
});
