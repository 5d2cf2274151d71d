/**
 * Issue 40 items 2 and 5 on a real kube-apiserver: a served namespace of a primary VM network that already exists
 * without `k8s.ovn.org/primary-user-defined-network` is refused, never patched (the label only counts at creation).
 *  1. the cluster refuses it, whoever applies: synth's ExistingNamespaceGuard (ValidatingAdmissionPolicy + binding,
 *     rollout wave 6, before the Namespaces at 7) makes the server refuse a server-side apply of our Namespace over
 *     the existing unlabelled one, with our words (namespace, problem, fix), and the namespace stays unlabelled; a
 *     new served namespace is created with the label, keeps taking our apply, and may lose the label (not this
 *     policy's business) but not get it back; an unrelated namespace gains the label freely. How long after its
 *     creation the policy starts refusing is measured and printed (docs/vm-networks.md, "A served namespace that
 *     already exists"); and one `kubectl apply -k` of the flat tree cannot use it (kustomize puts Namespaces first).
 *  2. `migration-mesh status` reads the served namespaces, as a user bound to the generated ClusterRole
 *     `migration-mesh-status`, and names the problem with code, path and fix; with that ClusterRole minus its
 *     namespaces rule, the cluster's line says the server's 403 on namespaces.
 * One API server (fra-1 of examples/vm-networks.fleet.yaml, its blue network also serving tenant-green and tenant-gray); the
 * other cluster has no kubeconfig context. The status half runs the built CLI (`npm run build` first).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { KubeObject, serverSideApply } from './support/real-apply';
import { runCli } from './support/fleets';
import { RealCluster, RealFleet } from './support/real-kube';
import { runStatus } from './support/status-clusters';
import { existingNamespaceWords } from '../src/vmnet/namespaces';
import { rolloutWave } from '../src/delivery/rollout';

const EXAMPLES = path.resolve(__dirname, '..', 'examples');
const LABEL = 'k8s.ovn.org/primary-user-defined-network';
const GUARD = 'migration-mesh-served-namespace-label';

let real: RealFleet;
let fra: RealCluster;
let dir: string;
let fleetFile: string;
const started = Date.now();
let activeAfterMs = -1;

const tree = () => path.join(dir, 'dist', 'vmnet', 'fra-1');
/** One synthesized object of fra-1 by its file name (flat layout). */
const file = (name: string): KubeObject => parse(fs.readFileSync(path.join(tree(), name), 'utf8'));
const ours = (ns: string) => file(`Namespace.${ns}.yaml`);
const labelsOf = async (ns: string) => (await fra.request('GET', `/api/v1/namespaces/${ns}`)).json.metadata.labels;

/** A server-side apply as `migration-mesh` (what Argo CD, Flux or kubectl would send), dry-run or not: status and message. */
async function apply(o: KubeObject, dryRun = false): Promise<{ status: number; message?: string }> {
  const q = `?fieldManager=migration-mesh&fieldValidation=Strict${dryRun ? '&dryRun=All' : ''}`;
  const r = await fra.request('PATCH', `/api/v1/namespaces/${o.metadata.name}${q}`, o, { contentType: 'application/apply-patch+yaml' });
  return { status: r.status, message: r.json?.message };
}

beforeAll(async () => {
  real = await RealFleet.start(['fra-1']);
  fra = real.cluster('fra-1');
  dir = fs.mkdtempSync(path.join(real.dir, 'nsguard-'));
  const raw = parse(fs.readFileSync(path.join(EXAMPLES, 'vm-networks.fleet.yaml'), 'utf8'));
  raw.spec.vmNetworks[0].namespaces = ['tenant-blue', 'tenant-green', 'tenant-gray'];
  raw.spec.operatorView = { statusClusterRole: true };
  delete raw.spec.gitops;
  fleetFile = path.join(dir, 'vm-networks.fleet.yaml');
  fs.writeFileSync(fleetFile, stringify(raw));
  fs.copyFileSync(path.join(EXAMPLES, 'vm-networks.ledger.yaml'), path.join(dir, 'vm-networks.ledger.yaml'));
  const r = runCli(['synth', fleetFile, '--out', path.join(dir, 'dist'), '--no-svg']);
  expect(r.err).toBe('');
  expect(r.code).toBe(0);
  // the platform made tenant-blue (and an unrelated team-x) before the fleet came, without the label
  for (const name of ['tenant-blue', 'team-x']) await serverSideApply(fra, { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { team: name } } }, 'platform-installer');
  // the guard, as the rollout's wave 6 writes it; then how long until the server enforces it (dry-run probes write nothing)
  const policy = file(`ValidatingAdmissionPolicy.${GUARD}.yaml`);
  const binding = file(`ValidatingAdmissionPolicyBinding.${GUARD}.yaml`);
  expect([rolloutWave(policy, new Set()), rolloutWave(binding, new Set()), rolloutWave(ours('tenant-blue'), new Set())]).toEqual([6, 6, 7]);
  await serverSideApply(fra, policy);
  await serverSideApply(fra, binding);
  const t0 = Date.now();
  for (;;) {
    const r2 = await apply(ours('tenant-blue'), true);
    if (r2.status === 403 && r2.message?.includes(GUARD)) { activeAfterMs = Date.now() - t0; break; }
    expect(r2.status).toBe(200); // a dry run the policy does not refuse yet: it would have patched the label
    if (Date.now() - t0 > 20_000) throw new Error('the served-namespace guard is not enforced 20 s after its creation');
    await new Promise((res) => setTimeout(res, 20));
  }
  process.stdout.write(`[vmnet-namespace-guard-real] guard enforced ${activeAfterMs} ms after policy and binding were created\n`);
}, 120_000);

afterAll(async () => {
  await real?.stop();
  console.log(`vmnet-namespace-guard-real: ${((Date.now() - started) / 1000).toFixed(1)} s (guard enforced after ${activeAfterMs} ms)`);
});

describe('the cluster refuses the primary-network label on an existing served namespace, whoever applies', () => {
  test('our Namespace over the existing unlabelled tenant-blue: refused with our words, the namespace stays as the platform made it', async () => {
    const words = existingNamespaceWords('tenant-blue', 'fra-1', 'blue');
    const r = await apply(ours('tenant-blue'));
    expect(r.status).toBe(403);
    expect(r.message).toContain(`ValidatingAdmissionPolicy '${GUARD}'`);
    expect(r.message).toContain(`${words.message}: ${words.fix}`);
    expect(await labelsOf('tenant-blue')).toEqual({ 'kubernetes.io/metadata.name': 'tenant-blue', team: 'tenant-blue' });
    // the same through kubectl, the way a person would try it
    const yaml = stringify(ours('tenant-blue'));
    expect(() => fra.kubectl(['apply', '--server-side', '--field-manager', 'someone', '-f', '-'], { input: yaml })).toThrow(/namespace tenant-blue already exists on cluster fra-1 without the label/);
    expect(await labelsOf('tenant-blue')).not.toHaveProperty([LABEL]);
  }, 60_000);

  test('a new served namespace is created with the label and takes our apply again; losing the label is allowed, getting it back is not', async () => {
    expect((await apply(ours('tenant-green'))).status).toBe(201);
    expect(await labelsOf('tenant-green')).toMatchObject({ [LABEL]: '' });
    expect((await apply(ours('tenant-green'))).status).toBe(200);
    expect((await apply(ours('tenant-gray'))).status).toBe(201);
    const removed = await fra.request('PATCH', '/api/v1/namespaces/tenant-gray', { metadata: { labels: { [LABEL]: null } } }, { contentType: 'application/merge-patch+json' });
    expect(removed.status).toBe(200); // not this guard's business (OpenShift's own policy refuses it; test/vmnet.real.test.ts)
    // the label was not there at the namespace's creation as OVN-Kubernetes saw it: putting it back would change nothing
    const again = await apply(ours('tenant-gray'));
    expect([again.status, again.message]).toEqual([403, expect.stringContaining(existingNamespaceWords('tenant-gray', 'fra-1', 'blue').message)]);
    expect(await labelsOf('tenant-gray')).not.toHaveProperty([LABEL]);
  }, 60_000);

  test('one `kubectl apply -k` of the flat tree cannot use the guard: kustomize puts every Namespace before it', () => {
    // kustomize's default (legacy) order, whatever our kustomization lists: why docs/vm-networks.md says to apply stage by stage
    const built = fra.kubectl(['kustomize', tree()]).split(/^---$/m).map((d) => parse(d) as KubeObject).filter(Boolean);
    const at = (kind: string, name: string) => built.findIndex((o) => o.kind === kind && o.metadata.name === name);
    expect(at('Namespace', 'tenant-blue')).toBeGreaterThanOrEqual(0);
    expect(at('Namespace', 'tenant-blue')).toBeLessThan(at('ValidatingAdmissionPolicy', GUARD));
    const listed: string[] = parse(fs.readFileSync(path.join(tree(), 'kustomization.yaml'), 'utf8')).resources;
    expect(listed.indexOf(`ValidatingAdmissionPolicy.${GUARD}.yaml`)).toBeLessThan(listed.indexOf('Namespace.tenant-blue.yaml')); // ours says otherwise
  });

  test('a namespace the fleet does not serve gains the label freely', async () => {
    const r = await fra.request('PATCH', '/api/v1/namespaces/team-x', { metadata: { labels: { [LABEL]: '' } } }, { contentType: 'application/merge-patch+json' });
    expect(r.status).toBe(200);
    expect(await labelsOf('team-x')).toMatchObject({ [LABEL]: '' });
  }, 60_000);
});

describe('migration-mesh status reads the served namespaces and reports the refusal before anything is written', () => {
  /** A kubeconfig for fra-1 as `user` bound to `role` (a ClusterRole); ams-1 has no context. */
  async function kubeconfigAs(user: string, role: KubeObject): Promise<string> {
    await serverSideApply(fra, role, 'platform-installer');
    await serverSideApply(fra, { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRoleBinding', metadata: { name: user },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role.metadata.name },
      subjects: [{ apiGroup: 'rbac.authorization.k8s.io', kind: 'User', name: user }] } as KubeObject, 'platform-installer');
    const id = fra.identity(user) as { cert: string; key: string };
    const kc = path.join(dir, `kubeconfig-${user}`);
    fs.writeFileSync(kc, JSON.stringify({
      apiVersion: 'v1', kind: 'Config', 'current-context': 'fra-1',
      clusters: [{ name: 'fra-1', cluster: { server: fra.url, 'certificate-authority': fra.caFile } }],
      users: [{ name: user, user: { 'client-certificate': id.cert, 'client-key': id.key } }],
      contexts: [{ name: 'fra-1', context: { cluster: 'fra-1', user } }],
    }));
    return kc;
  }
  const status = async (kc: string, output = 'json') => runStatus([fleetFile, '--out', path.join(dir, 'dist'), '--kubeconfig', kc, '--output', output, '--timeout', '20']);

  test('as the generated ClusterRole\'s user: vmnet-namespace-label for tenant-blue and tenant-gray with path and fix; the labelled tenant-green is fine', async () => {
    const role = file('ClusterRole.migration-mesh-status.yaml');
    const kc = await kubeconfigAs('status-reader', role);
    expect(await labelsOf('tenant-green')).toMatchObject({ [LABEL]: '' });
    const r = await status(kc);
    expect(r.err).toBe('');
    const j = JSON.parse(r.out);
    const fraFacts = j.clusters.find((c: { cluster: string }) => c.cluster === 'fra-1');
    expect(fraFacts.reachable).toBe(true);
    const words = existingNamespaceWords('tenant-blue', 'fra-1', 'blue');
    expect(j.findings.filter((f: { code: string }) => f.code === 'vmnet-namespace-label')).toEqual([
      { code: 'vmnet-namespace-label', severity: 'error', cluster: 'fra-1', path: 'spec.vmNetworks[0].namespaces[0]', ...words },
      { code: 'vmnet-namespace-label', severity: 'error', cluster: 'fra-1', path: 'spec.vmNetworks[0].namespaces[2]', ...existingNamespaceWords('tenant-gray', 'fra-1', 'blue') },
    ]);
    const text = await status(kc, 'text');
    expect(text.out).toContain(`error [vmnet-namespace-label] spec.vmNetworks[0].namespaces[0]: ${words.message}; fix: ${words.fix}`);
  }, 90_000);

  test('without the ClusterRole\'s namespaces rule the server\'s 403 on namespaces is the cluster\'s line', async () => {
    const role = file('ClusterRole.migration-mesh-status.yaml');
    const rules = (role as unknown as { rules: { apiGroups: string[]; resources: string[] }[] }).rules;
    const cut = { ...role, metadata: { name: 'status-without-namespaces' },
      rules: rules.map((x) => ({ ...x, resources: x.resources.filter((res) => !(x.apiGroups[0] === '' && res === 'namespaces')) })).filter((x) => x.resources.length) };
    expect(JSON.stringify(cut.rules)).not.toContain('"namespaces"');
    const kc = await kubeconfigAs('status-cut', cut as KubeObject);
    const j = JSON.parse((await status(kc)).out);
    const fraFacts = j.clusters.find((c: { cluster: string }) => c.cluster === 'fra-1');
    expect(fraFacts.reachable).toBe(false);
    // the first Namespace status reads (drift of a generated one, or a served one) is refused: the server's words
    expect(fraFacts.error).toMatch(/^namespaces "[a-z0-9-]+" is forbidden: User "status-cut" cannot get resource "namespaces"/);
  }, 90_000);
});
