/**
 * `migration-mesh status` against the contract fake API server (proxy/src/testkit/fake-kube.ts, one per
 * cluster, real client-node requests): a fleet of five gateway clusters where a and b are healthy, c has
 * one drifted object, d lacks b's current CA in its kubevirt-ca, and e does not answer. The report says
 * exactly that, per cluster and per ordered pair, and the exit code is 1; a fleet of one healthy pair
 * exits 0.
 */
import * as crypto from 'crypto';
import * as fs from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import * as yaml from 'yaml';
import { spawn, spawnSync, execFileSync } from 'child_process';
import { generatedObjects } from '../cli/generated-objects';
import { makeCert } from '../proxy/src/testkit/ca-certs';
import { ownedDifference } from '../src/report/status';
import { baseFleet, runCli } from './support/fleets';
import { hasCommand } from './support/netns';
import { FakeCluster, closedPort, kubeconfig, runStatus, startCluster, withTestTimeout } from './support/status-clusters';

const H = 3600_000;
const sha = (c: { der: Buffer }) => crypto.createHash('sha256').update(c.der).digest('hex');

const ROOT = path.join(__dirname, '..');
const BIN = path.join(ROOT, 'lib', 'cli', 'cli.js');

/**
 * The built binary in a child process (client-node is an ES module: Node 20.19+ requires it, jest's
 * module loader cannot), asynchronously so the fake API servers in this process keep answering.
 */
describe('migration-mesh status', () => {
  let dir: string;
  const fakes: FakeCluster[] = [];
  beforeAll(() => {
    if (!fs.existsSync(path.join(ROOT, 'lib', 'cli', 'status.js'))) execFileSync('npx', ['tsc', '-p', '.'], { cwd: ROOT, stdio: 'inherit' });
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-status-'));
  });
  afterAll(async () => {
    for (const f of fakes) await f.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const synth = (name: string, clusters: string[]) => {
    const file = path.join(dir, `${name}.fleet.yaml`);
    fs.writeFileSync(file, yaml.stringify(baseFleet({ clusters: clusters.map((c) => ({ name: c, nodes: 3 })) }, name)));
    const r = runCli(['synth', file, '--out', path.join(dir, 'dist'), '--no-svg']);
    expect(r.code).toBe(0);
    return file;
  };

  test('healthy pair, drifted object, missing peer CA, unreachable cluster: said exactly, exit 1', async () => {
    const names = ['a', 'b', 'c', 'd', 'e'];
    const file = synth('five', names);
    const cas = Object.fromEntries(names.map((n) => [n, makeCert(`kubevirt.io@${n}`, Date.now() - H, Date.now() + 100 * H)]));
    const objs = (n: string) => generatedObjects(path.join(dir, 'dist', 'five', n));
    const servers: Record<string, string> = {};
    for (const n of ['a', 'b', 'c', 'd']) {
      const peers = names.filter((p) => p !== n && !(n === 'd' && p === 'b')).map((p) => cas[p]);
      const f = await startCluster(objs(n), cas[n], peers, n === 'c' ? { edit: (o) => {
        if (o.kind === 'Deployment' && o.metadata.name === 'migration-mesh-gateway-1') o.spec.template.spec.containers[0].image = 'example.org/other:1';
      } } : {});
      fakes.push(f);
      servers[n] = `http://127.0.0.1:${f.api.port}`;
    }
    servers.e = `http://127.0.0.1:${await closedPort()}`;
    const kc = path.join(dir, 'kubeconfig');
    kubeconfig(kc, servers);
    const map = path.join(dir, 'contexts.yaml');
    fs.writeFileSync(map, yaml.stringify(Object.fromEntries(names.map((n) => [n, `ctx-${n}`]))));

    // --timeout bounds a whole cluster's answers (about 25 requests to fake servers in this busy jest process); e is
    // refused at once, so a generous bound costs nothing here and 5 s was a race beside a loaded CI run
    const r = await runStatus([file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc, '--context-map', map, '--timeout', '30']);
    expect(r.err).toBe('');
    expect(r.code).toBe(1);
    const lines = r.out.split('\n');
    const n = objs('a').length;
    // a: everything in order, down to the gateway pods' own view (through the pod proxy) and the handlers' attachment
    expect(lines).toContain(`a (context ctx-a): ${n}/${n} objects in sync; gateway 2/2 ready, VIP 10.200.0.3 on migration-mesh-gateway-0-7d9f8-q0; `
      + 'KubeVirt migration network lm-migration, gates DecentralizedLiveMigration; on kubevirt/lm-migration: virt-handler 2/2, sync controller 1/1; '
      + `CA ${sha(cas.a).slice(0, 12)} until ${new Date(cas.a.notAfter).toISOString()}`);
    expect(lines).toContain('  gateway migration-mesh-gateway-1-7d9f8-q1: ready; tunnels open: b 0, c 0, d 0, e 0; no errors');
    // nothing else is found: no warning, no error line besides the drift
    expect(lines.filter((l) => /^ {2}(error|warning) \[/.test(l))).toEqual([]);
    expect(lines.find((l) => l.startsWith('c (context'))).toMatch(new RegExp(`^c \\(context ctx-c\\): ${n - 1}/${n} objects in sync`));
    expect(lines).toContain('  drift: Deployment/migration-mesh/migration-mesh-gateway-1 .spec.template.spec.containers[0].image: want "ghcr.io/migration-mesh/proxy:0.1.0", live "example.org/other:1"');
    expect(lines.filter((l) => l.includes('drift:'))).toHaveLength(1);
    expect(lines.find((l) => l.startsWith('e (context'))).toMatch(/^e \(context ctx-e\): unreachable: .*ECONNREFUSED/);
    // the trust matrix: only d -> b is missing
    const row = (x: string) => lines.find((l) => l.startsWith(`  ${x}  `))!.trim().split(/\s+/);
    expect(row('d')).toEqual(['d', 'yes', 'NO', 'yes', '-']);
    expect(row('a')).toEqual(['a', '-', 'yes', 'yes', 'yes']);
    const pairs = Object.fromEntries(lines.filter((l) => / -> /.test(l)).map((l) => l.trim().split(': ')).map(([p, ...v]) => [p, v.join(': ')]));
    expect(pairs).toMatchObject({
      'a -> b': 'ready', 'b -> a': 'ready', 'a -> d': 'ready', 'd -> a': 'ready',
      'b -> d': "[status/peer-ca-untrusted] d does not trust b's current CA", 'd -> b': "[status/peer-ca-untrusted] d does not trust b's current CA",
      'a -> c': '[status/object-different] c: Deployment/migration-mesh/migration-mesh-gateway-1 differs at .spec.template.spec.containers[0].image',
      'c -> d': '[status/object-different] c: Deployment/migration-mesh/migration-mesh-gateway-1 differs at .spec.template.spec.containers[0].image',
      'a -> e': '[status/unreachable] e unreachable', 'e -> b': '[status/unreachable] e unreachable', 'd -> e': '[status/unreachable] e unreachable',
    });
    expect(Object.keys(pairs)).toHaveLength(20);
    expect(lines).toContain('4/20 pairs ready to migrate');

    const j = await runStatus([file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc, '--context-map', map, '--output', 'json']);
    const s = JSON.parse(j.out);
    expect(j.code).toBe(1);
    expect(s.ready).toBe(false);
    expect(s.trust.d.b).toMatchObject({ trusted: false, peerCa: { sha256: sha(cas.b) } });
    expect(s.trust.b.d).toMatchObject({ trusted: true });
    expect(s.clusters.find((c: any) => c.cluster === 'e')).toMatchObject({ reachable: false });
    expect(s.pairs.filter((p: any) => p.ready).map((p: any) => `${p.from}>${p.to}`).sort()).toEqual(['a>b', 'a>d', 'b>a', 'd>a']);
    expect(s.pairs.find((p: any) => p.from === 'b' && p.to === 'd')).toMatchObject({ ready: false, code: 'status/peer-ca-untrusted' });
    // the findings, with their codes: exactly the three faults
    expect(s.findings.map((f: any) => `${f.severity} ${f.code} ${f.cluster}`)).toEqual([
      'error status/object-different c', 'error status/unreachable e', 'error status/peer-ca-untrusted d',
    ]);
    expect(s.clusters.find((c: any) => c.cluster === 'a').gateway.pods[0].runtime).toMatchObject({ readiness: 'ready', held: ['10.200.0.3'], lastErrors: [] });
  }, 120_000);

  test('one healthy pair: every pair ready, exit 0; a cluster with no context is one line', async () => {
    const file = synth('pair', ['x', 'y']);
    const ca = { x: makeCert('kubevirt.io@x', Date.now() - H, Date.now() + 100 * H), y: makeCert('kubevirt.io@y', Date.now() - H, Date.now() + 100 * H) };
    const fx = await startCluster(generatedObjects(path.join(dir, 'dist', 'pair', 'x')), ca.x, [ca.y]);
    const fy = await startCluster(generatedObjects(path.join(dir, 'dist', 'pair', 'y')), ca.y, [ca.x]);
    fakes.push(fx, fy);
    const kc = path.join(dir, 'kubeconfig-pair');
    // contexts named as the clusters (no map)
    fs.writeFileSync(kc, yaml.stringify({
      apiVersion: 'v1', kind: 'Config', users: [{ name: 'u', user: { token: 't' } }], 'current-context': 'x',
      clusters: [{ name: 'x', cluster: { server: `http://127.0.0.1:${fx.api.port}`, 'insecure-skip-tls-verify': true } }, { name: 'y', cluster: { server: `http://127.0.0.1:${fy.api.port}`, 'insecure-skip-tls-verify': true } }],
      contexts: [{ name: 'x', context: { cluster: 'x', user: 'u' } }, { name: 'y', context: { cluster: 'y', user: 'u' } }],
    }));
    const r = await runStatus([file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc]);
    expect(r.out).toContain('  x -> y: ready\n  y -> x: ready\n');
    expect(r.out).toContain('2/2 pairs ready to migrate');
    expect(r.code).toBe(0);
    // on a terminal (util-linux `script` gives it one), a progress line counts the clusters that answered
    if (hasCommand('script')) {
      const env: NodeJS.ProcessEnv = { ...process.env, TERM: 'xterm' };
      delete env.CI;
      const cmd = [process.execPath, BIN, 'status', ...withTestTimeout([file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc])].map((a) => `'${a}'`).join(' ');
      const tty = await new Promise<string>((resolve) => {
        const p = spawn('script', ['-qfec', cmd, '/dev/null'], { env });
        let out = '';
        p.stdout.on('data', (c) => { out += c; });
        p.on('close', () => resolve(out));
      });
      expect(tty).toContain('status: clusters answered 2/2 (100%)');
      expect(tty).toContain('2/2 pairs ready to migrate');
    }
    const noCtx = path.join(dir, 'kubeconfig-one');
    fs.writeFileSync(noCtx, fs.readFileSync(kc, 'utf8').replace(/- name: y\n {4}context:[^\n]*\n(?: {6}[^\n]*\n)*/, ''));
    const r2 = await runStatus([file, '--out', path.join(dir, 'dist'), '--kubeconfig', noCtx]);
    expect(r2.code).toBe(1);
    expect(r2.out).toContain("y (context y): unreachable: no context 'y' in the kubeconfig");
  }, 120_000); // four CLI processes (a synth, two status runs, one under script): beside two CPU hogs and a CI run, over 60 s

  test('a cluster that accepts connections and never answers is given --timeout, then one line', async () => {
    const file = path.join(dir, 'pair.fleet.yaml'); // synthesized by the test before
    const hang = net.createServer(() => { /* never answers */ });
    await new Promise<void>((r) => hang.listen(0, '127.0.0.1', () => r()));
    const kc = path.join(dir, 'kubeconfig-hang');
    fs.writeFileSync(kc, fs.readFileSync(path.join(dir, 'kubeconfig-pair'), 'utf8').replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${(hang.address() as net.AddressInfo).port}`));
    const t0 = Date.now();
    // the bound is the whole wait for x, so it is also this test's length; y shares it, so nothing here asks that y
    // be ready (on a loaded machine its ~25 requests may take longer): x -> y names x first, whatever y answered
    const r = await runStatus([file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc, '--timeout', '10']);
    const took = Date.now() - t0;
    hang.close();
    expect(r.code).toBe(1);
    expect(r.out).toContain('x (context x): unreachable: no answer within 10 s\n');
    expect(r.out).toContain('  x -> y: [status/unreachable] x unreachable');
    expect(took).toBeLessThan(40_000); // 10 s for the cluster, the rest is node starting on a busy machine: not forever
  }, 90_000);

  // a cluster that answers, then stalls on one request: the line says how far it got and what to do, not "no answer"
  test.each([
    ['one generated object', /^GET \/apis\/apps\/v1\/namespaces\/[^/]+\/deployments\/migration-mesh-gateway-1$/, (n: number) => `${n - 1} of ${n} generated objects read, the rest still pending`],
    ['the gateway pods', /^GET \/api\/v1\/namespaces\/[^/]+\/pods\?labelSelector=/, (n: number) => `all ${n} generated objects read, gateway pods still pending`],
  ])('a cluster that answers and then holds %s: said how far it got, and the fix', async (_what, hold, where) => {
    const file = path.join(dir, 'pair.fleet.yaml'); // synthesized by the test before
    const objects = generatedObjects(path.join(dir, 'dist', 'pair', 'x'));
    const slow = await startCluster(objects, makeCert('kubevirt.io@x', Date.now() - H, Date.now() + 100 * H), []);
    fakes.push(slow);
    slow.api.hold = hold;
    const kc = path.join(dir, 'kubeconfig-slow');
    fs.writeFileSync(kc, fs.readFileSync(path.join(dir, 'kubeconfig-pair'), 'utf8').replace(/127\.0\.0\.1:\d+/, `127.0.0.1:${slow.api.port}`));
    const r = await runStatus([file, '--out', path.join(dir, 'dist'), '--kubeconfig', kc, '--timeout', '4']);
    expect(r.code).toBe(1);
    expect(r.out).toContain(`x (context x): unreachable: not every answer came within 4 s (${where(objects.length)}): a slow or stalled API server or link; give it longer with --timeout SECONDS\n`);
    expect(r.out).toContain('  x -> y: [status/unreachable] x unreachable');
    expect(slow.api.counts.held).toBeGreaterThan(0);
  }, 90_000);

  test('a kubeconfig it cannot read: status and pin-addresses say so with its code and the fix', async () => {
    const missing = path.join(dir, 'no-such-kubeconfig');
    const status = await runStatus([path.join(dir, 'pair.fleet.yaml'), '--out', path.join(dir, 'dist'), '--kubeconfig', missing]);
    const pin = spawnSync(process.execPath, [BIN, 'pin-addresses', path.join(ROOT, 'examples', 'vm-networks.fleet.yaml'), '--kubeconfig', missing], { encoding: 'utf8' });
    for (const r of [{ code: status.code, err: status.err }, { code: pin.status, err: pin.stderr }]) {
      expect(r.code).toBe(1);
      expect(r.err).toBe(`error: cannot read kubeconfig ${missing}: ENOENT: no such file or directory, stat '${missing}' [file-unreadable]\n  fix: check the path and its permissions\n`);
    }
  });

  test('a context map or kubeconfig that cannot be used is named as what it is, not as an invalid fleet', async () => {
    const badMap = path.join(dir, 'bad-map.yaml');
    fs.writeFileSync(badMap, 'x: [\n');
    const bigConfig = path.join(dir, 'big-kubeconfig');
    fs.writeFileSync(bigConfig, Buffer.alloc(5 * 1024 * 1024, 'a'));
    const status = await runStatus([path.join(dir, 'pair.fleet.yaml'), '--out', path.join(dir, 'dist'), '--context-map', badMap]);
    expect(status.code).toBe(1);
    expect(status.err).toMatch(new RegExp(`^${badMap}: the context map is invalid \\(1 problem\\); nothing was written\n  - \\[yaml-syntax\\] ${badMap} line \\d+, column \\d+: not valid YAML`));
    const pin = spawnSync(process.execPath, [BIN, 'pin-addresses', path.join(ROOT, 'examples', 'vm-networks.fleet.yaml'), '--kubeconfig', bigConfig], { encoding: 'utf8' });
    expect(pin.status).toBe(1);
    expect(pin.stderr).toMatch(new RegExp(`^${bigConfig}: the kubeconfig is invalid \\(1 problem\\); nothing was written\n  - \\[file-too-large\\] ${bigConfig}: the file has 5242880 bytes`));
    expect(`${status.err}${pin.stderr}`).not.toMatch(/fleet is invalid/);
    // YAML, but not a map of cluster to context name: its own code and an example of the right form
    const listMap = path.join(dir, 'list-map.yaml');
    fs.writeFileSync(listMap, '- x\n- y\n');
    const nested = path.join(dir, 'nested-map.yaml');
    fs.writeFileSync(nested, 'x: {context: a}\ny: b\n');
    const fix = '    fix: write one line per cluster, its name and its kubeconfig context name: east-1: prod-east\n';
    for (const [file, why] of [[listMap, 'it is a list, not a mapping'], [nested, 'the contexts of x are not names (text)']]) {
      const r = await runStatus([path.join(dir, 'pair.fleet.yaml'), '--out', path.join(dir, 'dist'), '--context-map', file]);
      expect(r).toMatchObject({ code: 1, err: `${file}: the context map is invalid (1 problem); nothing was written\n  - [status/context-map-invalid] ${file}: ${why}\n${fix}` });
    }
  });

  test('usage: one fleet file, --timeout a positive number', async () => {
    expect((await runStatus([])).code).toBe(2);
    expect((await runStatus(['f.yaml', '--timeout', 'soon'])).code).toBe(2);
  });
});

describe('ownedDifference: the fields we write, not the server\'s', () => {
  // found by test/kubevirt.real.test.ts on real API servers: a zero value we write (minReadySeconds: 0,
  // externalIPs: []) is held by the server and omitted from its JSON (Go omitempty); the fake kept it
  test('a zero value the server does not write back is not drift; a container quantity in another form is not either', () => {
    const want = { spec: { minReadySeconds: 0, paused: false, externalIPs: [], selector: {}, name: '' } };
    expect(ownedDifference(want, { spec: {} })).toBeUndefined();
    expect(ownedDifference(want, { spec: { minReadySeconds: 5 } })).toEqual({ field: '.spec.minReadySeconds', want: 0, got: 5 });
    expect(ownedDifference({ spec: { n: 1 } }, { spec: {} })).toEqual({ field: '.spec.n', want: 1, got: undefined });
    const res = (memory: string) => ({ spec: { containers: [{ resources: { limits: { memory } } }] } });
    expect(ownedDifference(res('1024Mi'), res('1Gi'))).toBeUndefined();
    expect(ownedDifference(res('1024Mi'), res('2Gi'))?.field).toBe('.spec.containers[0].resources.limits.memory');
    expect(ownedDifference({ metadata: { labels: { v: '1.0' } } }, { metadata: { labels: { v: '1' } } })?.field).toBe('.metadata.labels.v');
  });

  test('defaults and other writers beside ours are not drift; a changed or shortened list is', () => {
    const want = { apiVersion: 'v1', kind: 'X', metadata: { name: 'n', labels: { a: '1' } }, spec: { list: [{ name: 'c', image: 'i' }], n: 1 } };
    const live = { ...want, metadata: { name: 'n', labels: { a: '1', other: 'x' }, uid: 'u', resourceVersion: '9' }, spec: { list: [{ name: 'c', image: 'i', imagePullPolicy: 'IfNotPresent' }], n: 1, extra: true }, status: {} };
    expect(ownedDifference(want, live)).toBeUndefined();
    expect(ownedDifference(want, { ...live, spec: { ...live.spec, n: 2 } })).toEqual({ field: '.spec.n', want: 1, got: 2 });
    expect(ownedDifference(want, { ...live, spec: { ...live.spec, list: [] } })?.field).toBe('.spec.list');
    expect(ownedDifference(want, { ...live, metadata: { name: 'n', labels: {} } })).toEqual({ field: '.metadata.labels.a', want: '1', got: undefined });
  });
});
