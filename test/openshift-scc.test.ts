/**
 * OpenShift (issue #12): the gateway pod (NET_ADMIN init container, uid 0 keepalived sidecar, fixed
 * uid runtime) is refused by OpenShift's default `restricted-v2` SCC. Clusters that declare OpenShift
 * (hco delivery implies it) get an SCC allowing exactly what the pod asks for, usable only by the
 * gateway ServiceAccount. The SCC is checked against the vendored openshift/api CRD and against every
 * synthesized gateway pod with a model of SCC admission for the fields involved.
 */
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { baseFleet, mutate } from './support/fleets';
import { describeSchema, validateObject } from './support/schemas';

/**
 * SCC admission, for the fields our pods and SCC use (OpenShift docs "Managing security context
 * constraints"; openshift/apiserver-library-go pkg/securitycontextconstraints): host namespaces/ports,
 * privileged, privilege escalation, added capabilities within allowedCapabilities, runAsUser and fsGroup
 * strategies, seccomp profiles, volume types, read-only root filesystem. Not modelled: SELinux levels,
 * supplemental groups, sysctls, flex volumes, the priority ordering between several SCCs.
 */
function sccRefusals(scc: any, pod: any): string[] {
  const out: string[] = [];
  const inRanges = (v: number, ranges: { min: number; max: number }[]) => ranges.some((r) => v >= r.min && v <= r.max);
  for (const f of ['hostNetwork', 'hostPID', 'hostIPC']) if (pod[f] && !scc[`allow${f[0].toUpperCase()}${f.slice(1)}`]) out.push(f);
  const psc = pod.securityContext ?? {};
  if (scc.fsGroup?.type === 'MustRunAs' && (psc.fsGroup === undefined || !inRanges(psc.fsGroup, scc.fsGroup.ranges))) out.push(`fsGroup ${psc.fsGroup}`);
  const seccomp = (t?: string) => (t === 'RuntimeDefault' ? 'runtime/default' : t);
  for (const v of pod.volumes ?? []) {
    const type = Object.keys(v).find((k) => k !== 'name')!;
    if (!scc.volumes.includes('*') && !scc.volumes.includes(type)) out.push(`volume ${type}`);
  }
  for (const c of [...(pod.initContainers ?? []), ...pod.containers]) {
    const sc = c.securityContext ?? {};
    if (sc.privileged && !scc.allowPrivilegedContainer) out.push(`${c.name}: privileged`);
    if (sc.allowPrivilegeEscalation !== false && scc.allowPrivilegeEscalation === false) out.push(`${c.name}: allowPrivilegeEscalation`);
    for (const cap of sc.capabilities?.add ?? []) if (!(scc.allowedCapabilities ?? []).includes(cap)) out.push(`${c.name}: capability ${cap}`);
    const uid = sc.runAsUser ?? psc.runAsUser;
    if (scc.runAsUser.type === 'MustRunAsRange' && (uid === undefined || uid < scc.runAsUser.uidRangeMin || uid > scc.runAsUser.uidRangeMax)) out.push(`${c.name}: runAsUser ${uid}`);
    if (scc.runAsUser.type === 'MustRunAsNonRoot' && !uid) out.push(`${c.name}: runAsUser ${uid}`);
    const profile = seccomp(sc.seccompProfile?.type ?? psc.seccompProfile?.type);
    if (!(scc.seccompProfiles ?? []).includes('*') && !(scc.seccompProfiles ?? []).includes(profile)) out.push(`${c.name}: seccomp ${profile}`);
    if (scc.readOnlyRootFilesystem && sc.readOnlyRootFilesystem === false) out.push(`${c.name}: writable root filesystem`);
  }
  return out;
}

/** OpenShift's default SCC for authenticated users (4.11+), its admission-relevant fields; the uid range is the namespace's. */
const RESTRICTED_V2 = {
  allowHostNetwork: false, allowHostPID: false, allowHostIPC: false, allowPrivilegedContainer: false, allowPrivilegeEscalation: false,
  allowedCapabilities: ['NET_BIND_SERVICE'], requiredDropCapabilities: ['ALL'],
  runAsUser: { type: 'MustRunAsRange', uidRangeMin: 1000680000, uidRangeMax: 1000689999 },
  fsGroup: { type: 'MustRunAs', ranges: [{ min: 1000680000, max: 1000689999 }] },
  seccompProfiles: ['runtime/default'], readOnlyRootFilesystem: false,
  volumes: ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'persistentVolumeClaim', 'projected', 'secret'],
};

const hcoFleet = () => mutate(baseFleet(), (d) => { d.spec.kubevirt = { configDelivery: 'hco' }; d.spec.gateway = { replicas: 2 }; });

describe('OpenShift: an SCC for the gateway pods', () => {
  test('hco delivery implies OpenShift: SCC, Role (use, this SCC only) and RoleBinding (gateway ServiceAccount only), schema-valid', () => {
    const objs = synthesizeFleet(hcoFleet()).objects.get('a')!;
    const scc = objs.find((o) => o.kind === 'SecurityContextConstraints');
    expect(scc).toBeDefined();
    expect(describeSchema('security.openshift.io/v1', 'SecurityContextConstraints')?.origin).toMatch(/security\.openshift\.io_securitycontextconstraints\.crd\.yaml$/);
    expect(scc.metadata.namespace).toBeUndefined();
    expect(scc.allowPrivilegedContainer).toBe(false);
    expect(scc.users).toEqual([]);
    expect(scc.groups).toEqual([]);
    const role = objs.find((o) => o.kind === 'Role' && o.metadata.name === 'migration-mesh-gateway-scc');
    expect(role.rules).toEqual([{ apiGroups: ['security.openshift.io'], resources: ['securitycontextconstraints'], resourceNames: [scc.metadata.name], verbs: ['use'] }]);
    const binding = objs.find((o) => o.kind === 'RoleBinding' && o.roleRef.name === role.metadata.name);
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'migration-mesh-gateway', namespace: 'migration-mesh' }]);
    for (const o of [scc, role, binding]) expect(validateObject(o)).toEqual([]);
    // rollout: the SCC and its binding before the Deployments that need them
    const idx = (k: string) => objs.findIndex((o) => o.kind === k);
    expect(idx('SecurityContextConstraints')).toBeLessThan(idx('Deployment'));
    expect(idx('RoleBinding')).toBeLessThan(idx('Deployment'));
  });

  test('every gateway pod is admitted by our SCC and refused by restricted-v2 (why the SCC is needed)', () => {
    for (const failover of ['vip', 'none']) {
      const doc = mutate(hcoFleet(), (d) => { d.spec.gateway.failover = { mode: failover }; });
      const objs = synthesizeFleet(doc).objects.get('a')!;
      const scc = objs.find((o) => o.kind === 'SecurityContextConstraints');
      const pods = objs.filter((o) => o.kind === 'Deployment').map((d) => d.spec.template.spec);
      expect(pods.length).toBe(2);
      for (const pod of pods) {
        expect(sccRefusals(scc, pod)).toEqual([]);
        expect(sccRefusals(RESTRICTED_V2, pod).length).toBeGreaterThan(0);
      }
      // least privilege: the SCC allows no capability the pods do not add
      const containers = pods.flatMap((p) => [...(p.initContainers ?? []), ...p.containers]);
      const added = new Set(containers.flatMap((c: any) => c.securityContext?.capabilities?.add ?? []));
      if (failover === 'vip') expect([...added].sort()).toEqual([...scc.allowedCapabilities].sort());
    }
  });

  test('the SCC model refuses what it should: a privileged container, an extra capability, a hostPath volume', () => {
    const scc = synthesizeFleet(hcoFleet()).objects.get('a')!.find((o) => o.kind === 'SecurityContextConstraints');
    const pod = synthesizeFleet(hcoFleet()).objects.get('a')!.find((o) => o.kind === 'Deployment').spec.template.spec;
    const bad = JSON.parse(JSON.stringify(pod));
    bad.containers[0].securityContext = { ...bad.containers[0].securityContext, privileged: true, capabilities: { add: ['SYS_ADMIN'] } };
    bad.volumes.push({ name: 'h', hostPath: { path: '/' } });
    expect(sccRefusals(scc, bad)).toEqual(expect.arrayContaining([expect.stringMatching(/privileged/), expect.stringMatching(/SYS_ADMIN/), 'volume hostPath']));
  });

  test('a trust agent on OpenShift (direct cluster): its own SCC with no capability admits its pods, which restricted-v2 refuses (fixed uid)', () => {
    const doc = baseFleet({ gateway: { replicas: 1 }, clusters: [{ name: 'a', nodes: 2 }, { name: 'd', nodes: 2, datapath: 'direct', openshift: true }] }, 'mix');
    const objs = synthesizeFleet(doc).objects.get('d')!;
    for (const o of objs) expect(validateObject(o)).toEqual([]);
    const scc = objs.find((o) => o.kind === 'SecurityContextConstraints');
    expect(scc.metadata.name).toBe('migration-mesh-trust');
    expect(scc.allowedCapabilities).toEqual([]);
    const role = objs.find((o) => o.kind === 'Role' && o.rules?.[0]?.resources?.includes('securitycontextconstraints'));
    expect(role.rules).toEqual([{ apiGroups: ['security.openshift.io'], resources: ['securitycontextconstraints'], resourceNames: ['migration-mesh-trust'], verbs: ['use'] }]);
    const binding = objs.find((o) => o.kind === 'RoleBinding' && o.roleRef.name === role.metadata.name);
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'migration-mesh-trust', namespace: 'migration-mesh' }]);
    const pods = objs.filter((o) => o.kind === 'Deployment').map((d) => d.spec.template.spec);
    expect(pods.length).toBe(1);
    expect(pods[0].serviceAccountName).toBe('migration-mesh-trust');
    for (const pod of pods) {
      expect(sccRefusals(scc, pod)).toEqual([]);
      expect(sccRefusals(RESTRICTED_V2, pod)).toEqual(expect.arrayContaining([expect.stringMatching(/runAsUser 65532/), 'fsGroup 65532']));
    }
    // a gateway cluster of the same fleet without openshift gets none
    expect(synthesizeFleet(doc).objects.get('a')!.some((o) => o.kind === 'SecurityContextConstraints')).toBe(false);
  });

  test('declared per cluster: openshift: true on a kubevirt-cr cluster emits it, openshift: false on an hco cluster does not, others never', () => {
    const doc = mutate(baseFleet(), (d) => { d.spec.clusters[0].openshift = true; });
    const r = synthesizeFleet(doc);
    expect(r.objects.get('a')!.some((o) => o.kind === 'SecurityContextConstraints')).toBe(true);
    // (b's only Role is the trust container's, on by default)
    expect(r.objects.get('b')!.filter((o) => o.kind === 'SecurityContextConstraints' || o.kind === 'Role').map((o) => o.metadata.name)).toEqual(['migration-mesh-gateway-trust']);
    const off = mutate(hcoFleet(), (d) => { d.spec.clusters[0].openshift = false; });
    expect(synthesizeFleet(off).objects.get('a')!.some((o) => o.kind === 'SecurityContextConstraints')).toBe(false);
  });
});
