/**
 * Issue #23, what the last session left: image references the kubelet refuses (InvalidImageName), Flux
 * durations Flux or Go refuse, Flux names checked against the Kustomizations really generated, the HCO
 * feature gates added once, a symlink reported once (not once per file below it), `plan` and `diff`
 * failures as JSON with `--output json`, and `diff` naming the file a problem belongs to. Each failed
 * on the code before its fix.
 */
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as YAML from 'yaml';
import { testApp, testChart } from './support/tmp';
import { FleetProblem, FleetValidationError, InvalidPropsError } from '../src/base/errors';
import { CrossClusterMigrationMesh } from '../constructs/fleet/mesh';
import { MigrationProxy } from '../constructs/gateway/migration-proxy';
import { TrustAgent } from '../constructs/trust/agent';
import { FleetDocument } from '../src/fleet/schema';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { baseFleet, mutate, problemsOf, runCli } from './support/fleets';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-promises-'));
afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Every problem synth finds (delivery checks included), as `code path`. */
function synthProblems(doc: unknown): FleetProblem[] {
  try { synthesizeFleet(doc as FleetDocument); return []; } catch (e) { if (e instanceof FleetValidationError) return [...e.problems]; throw e; }
}
const at = (ps: readonly FleetProblem[]) => ps.map((p) => `${p.code} ${p.path}`);
const DIGEST = `sha256:${'0123456789abcdef'.repeat(4)}`;

describe('gateway image references (the kubelet parses them with distribution/reference; a failure is InvalidImageName)', () => {
  test.each([
    ['uppercase in the repository path', 'ghcr.io/Migration-Mesh/proxy:0.1.0', /repository path .*lowercase/],
    ['an empty tag', 'ghcr.io/migration-mesh/proxy:', /tag/],
    ['a tag with a character tags cannot have', 'ghcr.io/migration-mesh/proxy:v1+build', /tag/],
    ['a tag longer than 128 characters', `proxy:${'a'.repeat(129)}`, /tag/],
    ['a scheme', 'https://ghcr.io/migration-mesh/proxy:0.1.0', /scheme|reference/],
    ['leading or trailing space', ' ghcr.io/migration-mesh/proxy:0.1.0', /space/],
    ['a short digest', 'ghcr.io/migration-mesh/proxy@sha256:abc123', /digest/],
    ['an uppercase digest', `ghcr.io/migration-mesh/proxy@${DIGEST.toUpperCase().replace('SHA256', 'sha256')}`, /digest/],
    ['an unknown digest algorithm', `ghcr.io/migration-mesh/proxy@md5:${'a'.repeat(32)}`, /digest/],
    ['a port that is not a number', 'registry.example.com:https/mm/proxy:1', /registry/],
    ['a 64-hex name (an image id)', 'a'.repeat(64), /image id|64/],
    ['a double slash', 'ghcr.io//proxy:1', /reference/],
    ['a name over 255 characters', `registry.example.com/${'a/'.repeat(120)}proxy`, /255/],
  ])('%s is refused with image-invalid and a fix', (_, image, why) => {
    const ps = problemsOf(baseFleet({ gateway: { image } }));
    expect(at(ps)).toEqual(['image-invalid spec.gateway.image']);
    expect(ps[0].message).toMatch(why);
    expect(ps[0].fix).toMatch(/ghcr\.io\/migration-mesh\/proxy:0\.1\.0/);
  });

  test.each([
    'ghcr.io/migration-mesh/proxy:0.1.0', 'proxy', 'mm/proxy:v1.2_3-rc.1', 'localhost:5000/migration-mesh/proxy:0.1.0',
    `Registry.Example.COM:443/mm/proxy@${DIGEST}`, `ghcr.io/mm/proxy:1.0@${DIGEST}`, '[2001:db8::1]:5000/mm/proxy:1',
    'registry.example.com/team__x/proxy.v2/a-b--c:latest', `${'a'.repeat(63)}/proxy`,
  ])('%s is accepted', (image) => {
    expect(problemsOf(baseFleet({ gateway: { image } }))).toEqual([]);
  });
});

test('the constructs with an image prop (gateway replica, its trust container, the trust agent) refuse one the kubelet cannot parse', () => {
  const mesh = new CrossClusterMigrationMesh(testApp(), 'm', { fleet: baseFleet() });
  const plan = { ...mesh.plan, gateway: { ...mesh.plan.gateway, image: 'ghcr.io/Mesh/proxy:1' } };
  let err: unknown;
  try { new MigrationProxy(testChart(), 'p', { plan, cluster: plan.clusters[0] }); } catch (e) { err = e; }
  expect(err).toBeInstanceOf(InvalidPropsError);
  expect((err as InvalidPropsError).problems[0]).toMatchObject({ code: 'prop-invalid', path: 'image' });
  expect((err as Error).message).toMatch(/ghcr\.io\/Mesh\/proxy:1' has the repository path 'Mesh\/proxy'; it must be lowercase/);
  const direct = new CrossClusterMigrationMesh(testApp(), 'd', { fleet: baseFleet({ datapath: 'direct', trust: { enabled: true } } as any) });
  const dplan = { ...direct.plan, gateway: { ...direct.plan.gateway, image: 'proxy:' } };
  expect(() => new TrustAgent(testChart(), 't', { plan: dplan, cluster: dplan.clusters[0] })).toThrow(/image 'proxy:' has the tag ''/);
});

describe('Flux interval, timeout and retryInterval: the Flux CRD pattern and Go\'s time.Duration range', () => {
  const withFlux = (flux: Record<string, unknown>) => mutate(baseFleet(), (d) => { d.spec.gitops = { flux: { sourceRef: { name: 'infra' }, ...flux } }; });

  test.each([
    ['interval', '1d', /Go duration/],
    ['interval', '90us', /Flux/],
    ['timeout', '-5m', /Go duration|Flux/],
    ['timeout', '3000000h', /time\.Duration/],
    ['interval', '0s', /positive|zero/],
    ['timeout', '10 m', /Go duration/],
    ['retryInterval', '2d', /Go duration/],
    ['retryInterval', '0m', /positive|zero/],
  ])('%s: %s is refused with gitops-duration', (field, value, why) => {
    const ps = synthProblems(withFlux({ [field]: value }));
    expect(at(ps)).toEqual([`gitops-duration spec.gitops.flux.${field}`]);
    expect(ps[0].message).toMatch(why);
    expect(ps[0].fix).toMatch(/10m|5m|1m/);
  });

  test('every Kustomization is retried 1m after a failure unless told otherwise (Flux alone waits a whole interval)', () => {
    const kustomizations = (flux: Record<string, unknown>) => [...synthesizeFleet(withFlux(flux)).files.entries()]
      .filter(([f]) => f.startsWith('_gitops/flux/Kustomization.')).map(([, text]) => YAML.parse(text).spec);
    const byDefault = kustomizations({});
    expect(byDefault.length).toBeGreaterThan(0);
    expect(new Set(byDefault.map((k) => `${k.interval} ${k.timeout} ${k.retryInterval}`))).toEqual(new Set(['10m 5m 1m']));
    expect(new Set(kustomizations({ retryInterval: '30s' }).map((k) => k.retryInterval))).toEqual(new Set(['30s']));
  });

  test.each([['interval', '1h30m'], ['timeout', '1.5h'], ['interval', '250ms'], ['timeout', '2562047h'], ['retryInterval', '45s']])('%s: %s is accepted', (field, value) => {
    expect(synthProblems(withFlux({ [field]: value }))).toEqual([]);
  });
});

describe('Flux Kustomization names are checked as generated', () => {
  /** A fleet name that makes `<fleet>-<cluster>-<stage>` exactly `len(stage) + pad` characters long. */
  const named = (total: number, stage: string): string => 'f'.repeat(total - '-a-'.length - stage.length);

  test('a cluster without a kubevirt stage (kustomize-patch: the KubeVirt patch is a Component) is not refused for the name that stage would have', () => {
    const doc = mutate(baseFleet({ kubevirt: { configDelivery: 'kustomize-patch' } }, named(63, 'network')), (d) => {
      d.spec.gitops = { flux: { sourceRef: { name: 'infra' } } };
    });
    const r = synthesizeFleet(doc);
    const names = [...r.files.keys()].filter((f) => f.startsWith('_gitops/flux/Kustomization.')).map((f) => YAML.parse(r.files.get(f)!).metadata.name as string);
    expect(names.length).toBeGreaterThan(0);
    expect(names.every((n) => n.length <= 63)).toBe(true);
    expect(names.some((n) => n.length === 63)).toBe(true);
  });

  test('a name one over, in a stage that is generated, is refused with the real name', () => {
    const doc = mutate(baseFleet({}, named(64, 'kubevirt')), (d) => { d.spec.gitops = { flux: { sourceRef: { name: 'infra' } } }; });
    const ps = synthProblems(doc);
    expect(at(ps)).toEqual(['gitops-name-too-long spec.clusters[0].name', 'gitops-name-too-long spec.clusters[1].name']);
    expect(ps[0].message).toContain(`'${named(64, 'kubevirt')}-a-kubevirt' has 64 characters`);
  });

  test('the Forklift hub\'s Kustomizations (<fleet>-forklift-<stage>) are checked too, the stages generated only', () => {
    const withHub = (fleet: string) => mutate(baseFleet({}, fleet), (d) => {
      d.spec.gitops = { flux: { sourceRef: { name: 'infra' } } };
      d.spec.forklift = {
        hub: { cluster: 'a', namespace: 'openshift-mtv' },
        providers: { b: { url: 'https://api.b.example:6443', secret: 'b-provider' } },
        storage: [{ source: 'ceph-rbd', storageClass: 'ceph-rbd' }],
        moves: [{ vm: 'db1', namespace: 'vms', from: 'b', to: 'a', batch: 'w1' }],
      };
    });
    const fleet = 'f'.repeat(49); // 49 + '-forklift-providers' = 68, '-forklift-maps' = 63, '-forklift-plans' = 64
    const ps = synthProblems(withHub(fleet));
    expect(ps.map((p) => `${p.code} ${p.path} ${p.message.split(';')[0]}`)).toEqual([
      `gitops-name-too-long metadata.name the Flux Kustomization '${fleet}-forklift-providers' has 68 characters`,
      `gitops-name-too-long metadata.name the Flux Kustomization '${fleet}-forklift-plans' has 64 characters`,
    ]);
    expect(ps[0].fix).toBe(`shorten metadata.name '${fleet}' by 5 characters`);
    // a batch not started has no Migration: '<fleet>-forklift-migrations' (64 here) is not generated, so not refused
    expect(synthProblems(withHub('f'.repeat(44)))).toEqual([]);
  });
});

describe('HCO: the jsonpatch annotation adds each feature gate once', () => {
  /** RFC 6902 `add` as HCO applies it (the paths our annotation and these tests use). */
  function applyAdd(doc: any, op: { op: string; path: string; value: unknown }): void {
    expect(op.op).toBe('add');
    const keys = op.path.split('/').slice(1).map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = keys.pop()!;
    let o = doc;
    for (const k of keys) o = o[k];
    if (!Array.isArray(o)) o[last] = op.value;
    else if (last === '-') o.push(op.value);
    else o.splice(Number(last), 0, op.value);
  }

  test('declared gates (fleet-wide and per cluster, or added by the declared operations) are not appended again; ours once', () => {
    const gate = (value: string) => ({ op: 'add', path: '/spec/configuration/developerConfiguration/featureGates/-', value });
    const doc = mutate(baseFleet({ kubevirt: { configDelivery: 'hco', existing: { featureGates: ['Snapshot', 'HotplugVolumes'], kubevirtJsonPatch: [gate('DecentralizedLiveMigration')] } } } as any), (d) => {
      d.spec.clusters[0].kubevirt = { existing: { featureGates: ['ExpandDisks'] } };
    });
    const r = synthesizeFleet(doc);
    const hco = r.objects.get('a')!.find((o) => o.kind === 'HyperConverged')!;
    const ops = JSON.parse(hco.metadata!.annotations!['kubevirt.kubevirt.io/jsonpatch']);
    // the KubeVirt HCO builds holds the gates the cluster has (HCO's own among them); then the annotation is applied
    const kv = { spec: { configuration: { developerConfiguration: { featureGates: ['CPUManager', 'Snapshot', 'HotplugVolumes', 'ExpandDisks'] } } } };
    for (const op of ops) applyAdd(kv, op);
    const gates = kv.spec.configuration.developerConfiguration.featureGates;
    expect(gates.filter((g, i) => gates.indexOf(g) !== i)).toEqual([]);
    expect(new Set(gates)).toEqual(new Set(['CPUManager', 'Snapshot', 'HotplugVolumes', 'ExpandDisks', 'DecentralizedLiveMigration']));
    // and cluster b, which declares no gates of its own: the fleet-wide ones are not appended either
    const opsB = JSON.parse(r.objects.get('b')!.find((o) => o.kind === 'HyperConverged')!.metadata!.annotations!['kubevirt.kubevirt.io/jsonpatch']);
    expect(opsB.filter((o: any) => o.path.includes('featureGates')).map((o: any) => o.value)).toEqual(['DecentralizedLiveMigration']);
  });

  test('a cluster that declares DecentralizedLiveMigration (newer HCO writes it itself) gets no gate operation at all', () => {
    const doc = baseFleet({ kubevirt: { configDelivery: 'hco', existing: { featureGates: ['DecentralizedLiveMigration'] } } } as any);
    const hco = synthesizeFleet(doc).objects.get('a')!.find((o) => o.kind === 'HyperConverged')!;
    const ops = JSON.parse(hco.metadata?.annotations?.['kubevirt.kubevirt.io/jsonpatch'] ?? '[]');
    expect(ops.filter((o: any) => o.path.includes('featureGates'))).toEqual([]);
  });
});

test('a symbolic link inside the output tree is reported once, not once per file below it', () => {
  const f = path.join(dir, 'link.fleet.yaml');
  const out = path.join(dir, 'link-out');
  fs.writeFileSync(f, YAML.stringify(baseFleet({}, 'link')));
  expect(runCli(['synth', f, '--out', out, '--no-svg']).code).toBe(0);
  const elsewhere = path.join(dir, 'elsewhere');
  fs.mkdirSync(elsewhere);
  fs.rmSync(path.join(out, 'link', 'a'), { recursive: true });
  fs.symlinkSync(elsewhere, path.join(out, 'link', 'a'));
  const r = runCli(['synth', f, '--out', out, '--no-svg']);
  expect(r.code).toBe(1);
  expect(r.err.match(/\[write\/symlink\]/g)).toHaveLength(1);
  expect(r.err).toMatch(new RegExp(`${path.join(out, 'link', 'a')}: is a symbolic link inside the output tree \\(\\d+ files below it\\)`));
  expect(fs.readdirSync(elsewhere)).toEqual([]);
});

describe('plan and diff failures with --output json are JSON, naming the file, each problem with its code', () => {
  const bad = path.join(dir, 'bad.fleet.yaml');
  const good = path.join(dir, 'good.fleet.yaml');
  beforeAll(() => {
    fs.writeFileSync(bad, YAML.stringify(mutate(baseFleet({}, 'p'), (d) => { d.spec.crossClusterNetwork.addresses.pool = ['192.168.50.0/30']; })));
    fs.writeFileSync(good, YAML.stringify(baseFleet({}, 'p')));
  });

  test('plan: a fleet with problems', () => {
    const r = runCli(['plan', bad, '--output', 'json']);
    expect(r.code).toBe(1);
    const j = JSON.parse(r.out);
    expect(j).toMatchObject({ file: bad, ok: false });
    expect(j.problems.map((p: FleetProblem) => p.code)).toContain('pool-too-small');
    expect(j.problems.every((p: FleetProblem) => p.path && p.message)).toBe(true);
  });

  test('plan: a file that cannot be read, and --svg onto the fleet file', () => {
    const missing = runCli(['plan', path.join(dir, 'nope.fleet.yaml'), '--output', 'json']);
    expect(missing.code).toBe(1);
    expect(JSON.parse(missing.out).problems[0].code).toBe('file-unreadable');
    const svg = runCli(['plan', good, '--svg', good, '--output', 'json']);
    expect(svg.code).toBe(1);
    expect(JSON.parse(svg.out).problems[0]).toMatchObject({ code: 'write/input', path: good });
  });

  test('diff: two files, OLD or NEW with problems: exit 2, the JSON and the text name the file that has them', () => {
    for (const [a, b] of [[bad, good], [good, bad]]) {
      const r = runCli(['diff', a, b, '--output', 'json']);
      expect(r.code).toBe(2);
      const j = JSON.parse(r.out);
      expect(j).toMatchObject({ file: bad, ok: false });
      expect(j.problems.map((p: FleetProblem) => p.code)).toContain('pool-too-small');
      const t = runCli(['diff', a, b]);
      expect(t.code).toBe(2);
      expect(t.err.startsWith(`${bad}: `)).toBe(true);
    }
  });

  test('diff: a file that cannot be read is named too (OLD or NEW)', () => {
    const missing = path.join(dir, 'gone.fleet.yaml');
    for (const [a, b] of [[missing, good], [good, missing]]) {
      const r = runCli(['diff', a, b, '--output', 'json']);
      expect(r.code).toBe(2);
      expect(JSON.parse(r.out)).toMatchObject({ file: missing, problems: [{ code: 'file-unreadable', path: missing }] });
    }
  });

  test('diff: the one-file form', () => {
    const r = runCli(['diff', bad, '--out', path.join(dir, 'diff-out'), '--output', 'json']);
    expect(r.code).toBe(2);
    expect(JSON.parse(r.out)).toMatchObject({ file: bad, ok: false });
  });
});

test('synth refuses two fleet files of one name with the code validate gives (duplicate-fleet-name), naming the file', () => {
  const one = path.join(dir, 'one.fleet.yaml');
  const two = path.join(dir, 'two.fleet.yaml');
  for (const f of [one, two]) fs.writeFileSync(f, YAML.stringify(baseFleet({}, 'same')));
  const r = runCli(['synth', one, two, '--out', path.join(dir, 'dup-out'), '--no-svg']);
  expect(r.code).toBe(1);
  expect(r.err).toMatch(new RegExp(`^${two}: fleet is invalid \\(1 problem\\); nothing was written\n  - \\[duplicate-fleet-name\\] metadata\\.name: another fleet file \\(${one}\\) is also named 'same'`));
  expect(fs.existsSync(path.join(dir, 'dup-out'))).toBe(false);
});
