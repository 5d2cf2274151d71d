/**
 * What validation passes must work at runtime and in the API server (issue #23, class 4): networks in
 * ranges the gateway refuses to dial (its own list, proxy/src/config.ts, through the one door), zone ids,
 * a tunnel port on a fixed port of the gateway pod, Argo CD / Flux names that become label values.
 * Each case validated on the old code.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as YAML from 'yaml';
import { FORBIDDEN_CIDRS } from '../src/gateway/runtime-config';
import { FleetValidationError } from '../src/base/errors';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { baseFleet, mutate, problemsOf, runCli } from './support/fleets';

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

describe('what the API server refuses of an object, found at validate time (issue #39)', () => {
  // k8s.io/apimachinery/pkg/api/validation/objectmeta.go: TotalAnnotationSizeLimitB, the sum over annotations of len(key) + len(value)
  const LIMIT = 256 * 1024;
  const patch = (bytes: number) => ({ resourceType: 'Deployment', resourceName: 'virt-handler', type: 'json', patch: JSON.stringify([{ op: 'add', path: '/metadata/annotations/example.org~1x', value: 'x'.repeat(bytes) }]) });
  const hcoFleet = (bytes: number) => baseFleet({ kubevirt: { configDelivery: 'hco' }, clusters: [
    { name: 'a', nodes: 3, kubevirt: { existing: { customizeComponentsPatches: [patch(bytes)] } } }, { name: 'b', nodes: 3 },
  ] } as any);
  const validateJson = (doc: unknown) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-limits-'));
    try {
      const f = path.join(dir, 'hco.fleet.yaml');
      fs.writeFileSync(f, YAML.stringify(doc));
      const r = runCli(['validate', f, '--output', 'json']);
      return { code: r.code, entry: JSON.parse(r.out)[0] };
    } finally { fs.rmSync(dir, { recursive: true, force: true }); }
  };

  test('an HCO cluster whose jsonpatch annotation comes to 300 KiB (its customizeComponents patches ride in it): refused with code, path and fix', () => {
    // on the old code validate said valid: only kubevirtJsonPatch was counted, not the patches HCO's annotation also carries
    const { code, entry } = validateJson(hcoFleet(300 * 1024));
    expect(code).toBe(1);
    expect(entry.problems).toEqual([{
      code: 'existing-kubevirt-invalid', path: 'spec.clusters[0].kubevirt.existing.customizeComponentsPatches',
      message: expect.stringMatching(/^cluster a is delivered through HCO, whose kubevirt\.kubevirt\.io\/jsonpatch annotation carries its declared customizeComponentsPatches \(30\d{4} bytes\) and kubevirtJsonPatch \(0 bytes\) beside ours: past the API server's 256 KiB annotation limit \(262144 bytes for all of an object's annotations; room for declared ones: 229376\)$/),
      fix: 'keep only the patches and operations the cluster really has (copied from its KubeVirt spec.customizeComponents.patches and its kubevirt.kubevirt.io/jsonpatch annotation), or deliver this cluster as kubevirt-cr or kustomize-patch, which carry them in the spec',
    }]);
    expect(validateJson(hcoFleet(1024)).code).toBe(0);
  });

  describe('every object the library emits, checked as synthesized (a customize hook adds these): validate and synth alike', () => {
    const kplus = require('cdk8s-plus-28');
    const { synthesizeFleet } = require('../cli/synthesize-fleet');
    const refusals = (hook: (chart: any) => void) => ([false, true] as const).map((render) => {
      try { synthesizeFleet(baseFleet(), { render, customizeCluster: (chart: any) => { if (chart.cluster.name === 'a') hook(chart); } }); } catch (e) {
        if (e instanceof FleetValidationError) return e.problems.map((p) => ({ code: p.code, path: p.path, message: p.message, fix: p.fix }));
        throw e;
      }
      return [];
    });
    const configMap = (chart: any, name: string, metadata: object = {}) => new kplus.ConfigMap(chart, `Extra-${name.length}`, { metadata: { name, namespace: 'migration-mesh', ...metadata } });

    test('annotations over 256 KiB in total (key and value bytes): object-annotations-too-large; exactly 256 KiB passes', () => {
      const key = 'example.org/notes';
      const [judged, rendered] = refusals((chart) => configMap(chart, 'big', { annotations: { [key]: 'é'.repeat(LIMIT / 2) } }));
      expect(judged).toEqual(rendered);
      expect(judged).toEqual([{
        code: 'object-annotations-too-large', path: '(output) test/a/ConfigMap.migration-mesh.big.yaml metadata.annotations',
        message: `the annotations of ConfigMap migration-mesh/big total ${LIMIT + key.length} bytes (the largest, ${key}, ${LIMIT + key.length}); the API server refuses an object whose annotations total more than 262144 bytes (256 KiB)`,
        fix: 'make the annotations smaller: keep large data in a ConfigMap\'s data, not in annotations',
      }]);
      expect(refusals((chart) => configMap(chart, 'edge', { annotations: { [key]: 'x'.repeat(LIMIT - key.length) } }))).toEqual([[], []]);
      // the streaming writer (synth's): the same refusal, and nothing written
      const { synthesizeFleetToDirectory } = require('../cli/fleet-directory');
      const out = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-limits-out-'));
      try {
        let thrown: unknown;
        try {
          synthesizeFleetToDirectory({ fleet: baseFleet(), outdir: out, customizeCluster: (chart: any) => { if (chart.cluster.name === 'a') configMap(chart, 'big', { annotations: { [key]: 'é'.repeat(LIMIT / 2) } }); } });
        } catch (e) { thrown = e; }
        expect(thrown).toBeInstanceOf(FleetValidationError);
        expect((thrown as FleetValidationError).problems.map((p) => ({ code: p.code, path: p.path, message: p.message, fix: p.fix }))).toEqual(judged);
        expect(fs.readdirSync(out)).toEqual([]);
      } finally { fs.rmSync(out, { recursive: true, force: true }); }
    });

    test('the pod template of a workload too (the API server validates it as object metadata)', () => {
      const [judged, rendered] = refusals((chart) => {
        const d = new kplus.Deployment(chart, 'Noisy', { metadata: { name: 'noisy', namespace: 'migration-mesh' }, containers: [{ image: 'busybox', securityContext: { ensureNonRoot: false } }] });
        d.podMetadata.addAnnotation('example.org/notes', 'x'.repeat(LIMIT));
      });
      expect(judged).toEqual(rendered);
      expect(judged.map((p) => `${p.code} ${p.path}`)).toEqual(['object-annotations-too-large (output) test/a/Deployment.migration-mesh.noisy.yaml spec.template.metadata.annotations']);
    });

    test('names past 253 characters (any object) or 63 (a Service, a Namespace: DNS labels), label values past 63: refused with the limit', () => {
      const [judged, rendered] = refusals((chart) => {
        configMap(chart, 'c'.repeat(254));
        new kplus.Service(chart, 'LongService', { metadata: { name: 's'.repeat(64), namespace: 'migration-mesh' }, ports: [{ port: 80 }] });
        configMap(chart, 'labelled', { labels: { 'example.org/team': 'v'.repeat(64) } });
      });
      expect(judged).toEqual(rendered);
      expect(judged.map((p) => `${p.code} ${p.path}`)).toEqual([
        `object-name-too-long (output) test/a/ConfigMap.migration-mesh.${'c'.repeat(254)}.yaml metadata.name`,
        'object-label-too-long (output) test/a/ConfigMap.migration-mesh.labelled.yaml metadata.labels',
        `object-name-too-long (output) test/a/Service.migration-mesh.${'s'.repeat(64)}.yaml metadata.name`,
      ]);
      expect(judged[2].message).toBe(`the Service name '${'s'.repeat(64)}' has 64 characters; a Service name is a DNS label of at most 63`);
      expect(judged[1].message).toBe(`the ConfigMap migration-mesh/labelled has the label example.org/team with a value of 64 characters; a label value is at most 63`);
    });
  });
});
