/**
 * What validation passes must work at runtime and in the API server (issue #23, class 4): networks in
 * ranges the gateway refuses to dial (its own list, proxy/src/config.ts, through the one door), zone ids,
 * a tunnel port on a fixed port of the gateway pod, Argo CD / Flux names that become label values.
 * Each case validated on the old code.
 */
import { FORBIDDEN_CIDRS } from '../src/gateway/runtime-config';
import { FleetValidationError } from '../src/base/errors';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { baseFleet, mutate, problemsOf } from './support/fleets';

/** Every problem synth finds (delivery checks included). */
const synthProblems = (doc: any) => {
  try { synthesizeFleet(doc); return []; } catch (e) { if (e instanceof FleetValidationError) return [...e.problems]; throw e; }
};

const codes = (doc: unknown) => problemsOf(doc).map((p) => `${p.code} ${p.path}`);

describe('networks the gateway would refuse to dial', () => {
  test.each<[string, (d: any) => void, string]>([
    ['IPv4 link-local pool', (d) => { d.spec.crossClusterNetwork.addresses.pool = ['169.254.10.0/24']; }, 'network-not-dialable spec.crossClusterNetwork.addresses.pool[0]'],
    ['IPv6 link-local pool', (d) => {
      d.spec.crossClusterNetwork.addresses = { pool: ['fe80::100-fe80::1ff'], prefixLength: 64 };
      d.spec.migrationNetwork.supernet = 'fd00:200::/56';
    }, 'network-not-dialable spec.crossClusterNetwork.addresses.pool[0]'],
    ['loopback supernet', (d) => { d.spec.migrationNetwork.supernet = '127.16.0.0/16'; }, 'network-not-dialable spec.migrationNetwork.supernet'],
    ['multicast migration CIDR', (d) => { d.spec.clusters[1].migrationNetwork = { cidr: '239.1.1.0/24' }; }, 'network-not-dialable spec.clusters[1].migrationNetwork.cidr'],
    ['"this network" pool', (d) => { d.spec.crossClusterNetwork.addresses.pool = ['0.0.1.0/24']; }, 'network-not-dialable spec.crossClusterNetwork.addresses.pool[0]'],
  ])('%s is refused', (_, fn, expected) => {
    expect(codes(mutate(baseFleet(), fn))).toContain(expected);
  });

  test('the check reads the gateway\'s own list (one source): every forbidden IPv4 range is refused as a pool', () => {
    for (const cidr of FORBIDDEN_CIDRS.filter((c) => !c.includes(':') && !c.endsWith('/32'))) {
      const [a] = cidr.split('/');
      const doc = mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses.pool = [`${a}/28`.replace(/\.0\/28$/, '.0/28')]; });
      expect(codes(doc)).toContain('network-not-dialable spec.crossClusterNetwork.addresses.pool[0]');
    }
  });

  test('ordinary private space still validates', () => {
    expect(codes(baseFleet())).toEqual([]);
  });
});

test('a zone id is refused, not dropped (fe80::1%eth0)', () => {
  const doc = mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses.gateway = '192.168.50.1%eth0'; });
  expect(codes(doc)).toEqual([expect.stringMatching(/^address-syntax spec\.crossClusterNetwork\.addresses\.gateway$/)]);
});

test.each([15001, 15090])('gateway.tunnelPort %i (a fixed port of the gateway pod) is refused', (port) => {
  expect(codes(baseFleet({ gateway: { tunnelPort: port } }))).toEqual(['gateway-port-conflict spec.gateway.tunnelPort']);
});

test('Argo CD Application and Flux Kustomization names over 63 characters are refused', () => {
  const long = 'x'.repeat(40);
  const doc = mutate(baseFleet({}, long), (d) => {
    d.spec.clusters[1].name = 'y'.repeat(30);
    d.spec.gitops = { repoURL: 'https://git.example.com/infra.git', argocd: {} };
  });
  const ps = synthProblems(doc);
  expect(ps.map((p) => `${p.code} ${p.path}`)).toEqual(['gitops-name-too-long spec.clusters[1].name']);
  expect(ps[0].message).toMatch(/Argo CD Application '.{71}' has 71 characters/);
  const flux = mutate(doc, (d) => { d.spec.gitops = { flux: { sourceRef: { name: 'infra' } } }; });
  expect(synthProblems(flux).map((p) => p.message).join('\n')).toMatch(/Flux Kustomization .* kustomize\.toolkit\.fluxcd\.io\/name/);
});

test('reserved label keys in spec.labels are refused (they would lose to ours or break a selector); app.kubernetes.io/part-of is fine', () => {
  for (const key of ['migrationmesh.dev/fleet', 'app.kubernetes.io/name', 'kubernetes.io/hostname', 'node.kubernetes.io/x', 'k8s.io/y']) {
    const ps = problemsOf(baseFleet({ labels: { [key]: 'v' } }));
    expect(ps.map((p) => p.code)).toEqual(['schema-invalid']);
    expect(ps[0].message).toMatch(/reserved label key/);
  }
  expect(problemsOf(baseFleet({ labels: { 'app.kubernetes.io/part-of': 'mesh', 'example.org/team': 'net' } }))).toEqual([]);
});

test('HCO jsonpatch operations past the API server\'s 256 KiB annotation limit are refused', () => {
  const big = [{ op: 'add', path: '/spec/configuration/x', value: 'v'.repeat(240 * 1024) }];
  const doc = baseFleet({ kubevirt: { configDelivery: 'hco', existing: { kubevirtJsonPatch: big } } } as any);
  const ps = synthProblems(doc).filter((p) => p.code === 'existing-kubevirt-invalid');
  expect(ps.map((p) => p.path)).toEqual(['spec.clusters[0].kubevirt.existing.kubevirtJsonPatch', 'spec.clusters[1].kubevirt.existing.kubevirtJsonPatch']);
  expect(ps[0].message).toMatch(/256 KiB annotation limit/);
  const small = baseFleet({ kubevirt: { configDelivery: 'hco', existing: { kubevirtJsonPatch: [{ op: 'add', path: '/spec/x', value: 1 }] } } } as any);
  expect(synthProblems(small).filter((p) => p.code === 'existing-kubevirt-invalid')).toEqual([]);
});
