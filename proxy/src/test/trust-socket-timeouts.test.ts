/**
 * A call of the trust container that times out must close its socket (issue 38 item 4, the open defect): an
 * API server that accepts TCP and never answers made the trust container hold 61 descriptors after 180 s against
 * 20 before, one more per timed-out call, until the process runs out of them.
 *
 * The server here is a plain net.Server that accepts every connection and never writes a byte (plain TCP and, for
 * an https:// kubeconfig, a TLS handshake that never completes). Measured on both ends: the connections the server
 * still holds (each one the client's socket left open) and the descriptors of the process (/proc/PID/fd).
 *   - in process, every call of kube.ts with short deadlines: GET, PUT, LIST (rejected with code 0) and WATCH
 *     (ended as stalled), 10 of each;
 *   - the real trust container (`migration-mesh-proxy trust`, product defaults: 5 s call deadline, 8 s + 2 s watch
 *     bound) for 20 s with a peer CA to write, so its watch loop and its write loop both keep timing out.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import * as k8s from '@kubernetes/client-node';
import { makeCert } from '../testkit/ca-certs';
import { HANG_GUARD_MS, openFds, sleep, tmpDir, waitUntil } from '../testkit/helpers';
import { ApiError, kubeConfigMaps, WatchEnd } from '../trust/kube';

const figures: string[] = [];

/** Accepts TCP, reads and drops what it gets, never answers. `open` is how many client sockets are still connected. */
async function silentServer() {
  const conns = new Set<net.Socket>();
  const server = net.createServer((s) => {
    conns.add(s);
    s.on('data', () => undefined);
    s.on('error', () => s.destroy());
    s.on('close', () => conns.delete(s));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  return {
    port: (server.address() as net.AddressInfo).port,
    get open() { return conns.size; },
    async close() { for (const s of conns) s.destroy(); await new Promise<void>((r) => server.close(() => r())); },
  };
}

function kubeConfig(scheme: 'http' | 'https', port: number): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: `${scheme}://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: 'u', token: 't' }], contexts: [{ name: 'c', cluster: 'c', user: 'u' }], currentContext: 'c',
  });
  return kc;
}

const cm = { metadata: { name: 'kubevirt-external-ca', namespace: 'kubevirt', resourceVersion: '1' }, data: { 'ca-bundle': '' } };

describe('calls that time out close their sockets', { timeout: 3 * HANG_GUARD_MS }, () => {
  for (const scheme of ['http', 'https'] as const) {
    it(`GET, PUT, LIST and WATCH against a server that never answers (${scheme}): no socket left open`, async () => {
      const srv = await silentServer();
      const api = kubeConfigMaps(kubeConfig(scheme, srv.port), 'kubevirt', { requestTimeoutMs: 100, watchTimeoutMs: 1000, watchGraceMs: 200 });
      const fds0 = openFds();
      const left: Record<string, number> = {};
      try {
        const code0 = (e: unknown) => e instanceof ApiError && e.code === 0;
        const calls: Record<string, () => Promise<unknown>> = {
          get: () => api.get('kubevirt-external-ca'),
          put: () => api.replace(cm),
          list: () => api.list('kubevirt-ca'),
          watch: () => new Promise<WatchEnd>((resolve) => api.watch('kubevirt-ca', '1', () => undefined, resolve))
            .then((end) => { if (end.reason !== 'stalled') throw new Error(`watch ended ${end.reason}`); throw new ApiError(0, 'stalled'); }),
        };
        for (const [name, call] of Object.entries(calls)) {
          for (let i = 0; i < 10; i++) await assert.rejects(call(), code0);
          // the client's close reaches the server at once, but the server is this loaded process: a hang guard (a leak never closes)
          const held = Object.values(left).reduce((a, b) => a + b, 0);
          await waitUntil(() => srv.open === held, HANG_GUARD_MS);
          left[name] = srv.open - held;
        }
        const grew = openFds() - fds0;
        figures.push(`${scheme}: 10 timed-out calls each; sockets the server still held after GET ${left.get}, PUT ${left.put}, LIST ${left.list}, WATCH ${left.watch}; this process's descriptors ${grew >= 0 ? '+' : ''}${grew}`);
        assert.deepEqual(left, { get: 0, put: 0, list: 0, watch: 0 }, 'every timed-out call closed its socket');
        assert.ok(grew <= 2, `${grew} descriptors more after 40 timed-out calls`);
      } finally {
        api.abortAll();
        await srv.close();
      }
    });
  }

  it('the trust container against an API server that accepts TCP and never answers for 20 s: its descriptors stay bounded', async () => {
    const dir = tmpDir('mm-trust-fds-');
    const srv = await silentServer();
    // a stand-in runtime hands the trust container a peer CA, so its write loop calls the API too
    const peer = makeCert('kubevirt.io@west', Date.now() - 3600_000, Date.now() + 100 * 3600_000);
    const socket = path.join(dir, 'trust.sock');
    const channel = new Set<net.Socket>();
    const runtime = net.createServer((s) => {
      channel.add(s);
      s.on('close', () => channel.delete(s));
      s.on('error', () => s.destroy());
      s.resume();
      s.write(`${JSON.stringify({ type: 'peer', cluster: 'west', certs: [peer.pem], sequence: 1, receivedAt: Date.now() })}\n`);
    });
    await new Promise<void>((r) => runtime.listen(socket, () => r()));
    // the trust container reads only `cluster` and `trust`; nothing listens on these ports
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({
      version: 1, fleet: 'fleet', cluster: 'east',
      listen: { intercept: { host: '127.0.0.1', port: 15001 }, tunnel: { host: '127.0.0.1', port: 15002 }, admin: { host: '127.0.0.1', port: 15090 } },
      localCidrs: ['10.99.0.0/24'], peers: [{ cluster: 'west', cidrs: ['10.100.0.0/24'], gateways: [{ host: '127.0.0.1', port: 15003 }] }],
      tls: { mode: 'mtls', caFile: '/nonexistent/ca.pem', certFile: '/nonexistent/c.pem', keyFile: '/nonexistent/k.pem' },
      trust: { socket, repushIntervalMs: 300_000, retryMs: 200 },
    }));
    fs.writeFileSync(path.join(dir, 'kubeconfig'), `apiVersion: v1\nkind: Config\nclusters: [{name: f, cluster: {server: "https://127.0.0.1:${srv.port}", insecure-skip-tls-verify: true}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: f, context: {cluster: f, user: u}}]\ncurrent-context: f\n`);
    const child = spawn(process.execPath, [path.join(__dirname, '..', 'cli.js'), 'trust', '--config', path.join(dir, 'config.json'), '--namespace', 'kubevirt',
      '--kubeconfig', path.join(dir, 'kubeconfig')], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c) => { out += c; });
    child.stderr.on('data', (c) => { out += c; });
    const fds = () => fs.readdirSync(`/proc/${child.pid}/fd`).length;
    try {
      // both loops have a call in flight: the LIST of kubevirt-ca and the GET of kubevirt-external-ca
      // the child's start (Node, client-node) is CPU work: wait for its two calls or its end, under a hang guard
      await waitUntil(() => srv.open >= 2 || child.exitCode !== null, HANG_GUARD_MS);
      assert.ok(srv.open >= 2, `the trust container reached the server (exit code ${child.exitCode})\n${out}`);
      await sleep(500);
      const before = fds();
      const samples: Array<{ fds: number; open: number }> = [];
      for (let s = 0; s < 20; s++) {
        await sleep(1000);
        samples.push({ fds: fds(), open: srv.open });
      }
      const timeouts = (out.match(/no answer within|still open|stalled/g) ?? []).length;
      const last = samples[samples.length - 1];
      const maxOpen = Math.max(...samples.map((x) => x.open));
      figures.push(`trust container, 20 s against a server that never answers (${timeouts} timeouts logged): descriptors ${before} -> ${last.fds} `
        + `(max ${Math.max(...samples.map((x) => x.fds))}); connections the server held at most ${maxOpen}, at the end ${last.open}`);
      assert.ok(timeouts >= 4, `calls timed out (${timeouts})\n${out.slice(-2000)}`);
      // two loops, one call each at a time: never more than 2 connections; a leak adds one per timed-out call
      assert.ok(maxOpen <= 2, `the server held up to ${maxOpen} connections of the trust container (2 calls at most in flight)`);
      assert.ok(last.fds - before <= 2, `descriptors ${before} -> ${last.fds}`);
    } finally {
      child.kill('SIGKILL');
      for (const s of channel) s.destroy();
      await new Promise<void>((r) => runtime.close(() => r()));
      await srv.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  after(() => { console.log(figures.map((f) => `[trust-socket-timeouts] ${f}`).join('\n')); });
});
