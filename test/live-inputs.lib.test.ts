/**
 * The live commands' inputs (issue 50 item 7), through the built CLI: the context map's keys must be the
 * fleet's clusters (a typo used to leave its cluster on a context of its own name, where
 * `pin-addresses --apply` would write), and a kubeconfig that is not YAML, or not a kubeconfig, is named with
 * its file, code and fix. Nothing is asked of any cluster: each input is refused before.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { spawnSync } from 'node:child_process';
import { suiteTmpDir } from './support/tmp';

const CLI = path.resolve(__dirname, '..', 'lib', 'cli', 'cli.js');
const FLEET = path.resolve(__dirname, '..', 'examples', 'vm-networks.fleet.yaml');
const dir = suiteTmpDir('mm-live-inputs-');
const file = (name: string, text: string) => { const f = path.join(dir, name); fs.writeFileSync(f, text); return f; };
const run = (...args: string[]) => { const r = spawnSync(process.execPath, [CLI, ...args], { encoding: 'utf8', timeout: 60_000 }); return { code: r.status, err: r.stderr }; };

test.each(['status', 'pin-addresses'])('%s: a context map key that names no cluster of the fleet is refused, naming the key and the clusters', (cmd) => {
  const f = file('contexts.yaml', 'fra-1: prod-fra\nams1: prod-ams\n');
  const r = run(cmd, FLEET, '--context-map', f, '--timeout', '1');
  expect(r.code).toBe(1);
  expect(r.err).toContain(`[status/context-map-invalid] ${f}: ams1: 'ams1' is not a cluster of the fleet (fra-1, ams-1)`);
  expect(r.err).toMatch(/fix: name each cluster as spec\.clusters does, e\.g\. fra-1: <its kubeconfig context>/);
});

test('a kubeconfig that is not YAML, or YAML but no kubeconfig: its file, a code and the fix', () => {
  const notYaml = file('kc-broken', 'apiVersion: v1\nclusters: [\n  - name: a\n');
  const a = run('status', FLEET, '--kubeconfig', notYaml, '--timeout', '1');
  expect([a.code, a.err]).toEqual([1, expect.stringMatching(new RegExp(`\\[yaml-syntax\\] ${notYaml}[^]*fix: `))]);
  const notKc = file('kc-list', '- a\n- b\n');
  const b = run('status', FLEET, '--kubeconfig', notKc, '--timeout', '1');
  expect([b.code, b.err]).toEqual([1, expect.stringMatching(/\[status\/kubeconfig-invalid\] [^\n]*kc-list is not a kubeconfig: it is a list, not a mapping\n\s*fix: point --kubeconfig at a kubeconfig file/)]);
});

test('a URL that answers 404 to everything is named as no API server, not reported as an empty cluster', async () => {
  const http = await import('node:http');
  const server = http.createServer((_req, res) => { res.writeHead(404, { 'content-type': 'text/plain' }); res.end('404 page not found\n'); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const port = (server.address() as { port: number }).port;
    const kc = file('kc-404', `apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster: {server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true}\n`
      + 'users:\n- name: u\n  user: {token: t}\ncontexts:\n- name: fra-1\n  context: {cluster: c, user: u}\n- name: ams-1\n  context: {cluster: c, user: u}\ncurrent-context: fra-1\n');
    const { spawn } = await import('node:child_process');
    const r = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const p = spawn(process.execPath, [CLI, 'status', FLEET, '--kubeconfig', kc, '--timeout', '20', '--out', path.resolve(__dirname, '..', 'dist')]);
      let out = '';
      p.stdout.on('data', (d) => { out += d; });
      p.stderr.on('data', (d) => { out += d; });
      p.on('close', (code) => resolve({ code, out }));
    });
    expect(r.code).toBe(1);
    expect(r.out).toMatch(new RegExp(`127\\.0\\.0\\.1:${port} answers, but is not a Kubernetes API server \\(404 for /api/v1`));
    expect(r.out).not.toMatch(/missing/);
  } finally {
    server.close();
  }
});
