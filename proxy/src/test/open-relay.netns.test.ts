/**
 * Issue 49, item 1: never an open relay. The outside review's scenario, in network namespaces this test makes:
 *
 *   [h] 10.1.0.10, fd01::10 --mig0-- [ga] 10.1.0.1, fd01::1 | xc0 192.168.50.1, fd50::1 --+
 *                                                                                          [sw] bridge (the shared network)
 *   [x] attacker 192.168.50.66, fd50::66 --xc0-----------------------------------------+  |
 *   [s] 10.2.0.10, fd02::10 --mig0-- [gb] 10.2.0.1, fd02::1 | xc0 192.168.50.2, fd50::2 ---+
 *
 *   routes: h: 10.2.0.0/24, fd02::/64 via ga (the handlers' NAD route); s: 10.1.0.0/24, fd01::/64 via gb;
 *           x: 10.2.0.0/24 via 192.168.50.1, fd02::/64 via fd50::1 (our gateway's shared address)
 *
 * The real CLI (`setup-rules`, then `run`) in ga and gb, with configs shaped as src/gateway/config.ts writes
 * them. The attacker holds no certificate. In every tunnel mode and both families: the attacker's connection
 * to the peer's handler fails closed (nothing accepted at the handler, no tunnel at either gateway), and the
 * legitimate handler's connection through the same gateways carries bytes both ways.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NetnsLab, netnsUnavailable } from '../testkit/netns';
import { HANG_GUARD_MS, makePki, type Pki } from '../testkit/helpers';
import type { TlsMode } from '../testkit/gateways';

const CLI = path.join(__dirname, '..', 'cli.js');
const TOOL = path.join(__dirname, '..', 'testkit', 'tool.js');
const node = process.execPath;
const skip = netnsUnavailable();
const SINK_PORT = 9185;
const MODES: TlsMode[] = ['plaintext', 'mtls', 'mtls-splice'];
const FAMILIES = [
  { family: 4, peerHandler: '10.2.0.10', ourShared: '192.168.50.1', outsider: '10.9.0.10' },
  { family: 6, peerHandler: 'fd02::10', ourShared: 'fd50::1', outsider: 'fd09::10' },
] as const;

type Probe = { connected: boolean; sent: string; reply: string; ms: number; error?: string };

describe('never an open relay: a host on the shared network gets no tunnel (issue 49)', { timeout: 5 * HANG_GUARD_MS, skip }, () => {
  const lab = new NetnsLab();
  let pki: Pki;
  const ns = { h: '', ga: '', sw: '', gb: '', s: '', x: '' };
  const cfgFile = { east: '', west: '' };
  const gw: Partial<Record<'east' | 'west', { child: ChildProcess; out: () => string }>> = {};
  let sink: { out: () => string };

  /** The config as src/gateway/config.ts writes it (listeners, localCidrs, ownAddresses), for the lab's addresses. */
  const config = (me: 'east' | 'west', mode: TlsMode) => {
    const east = me === 'east';
    return {
      version: 1, fleet: 'fleet', cluster: me,
      listen: {
        intercept: { host: '::', interface: 'mig0', port: 15001 },
        tunnel: { host: '::', interface: 'xc0', port: 15443 },
        admin: { interface: 'eth0', port: 15090 }, // no eth0 in the lab: loopback only
      },
      localCidrs: east ? ['10.1.0.0/24', 'fd01::/64'] : ['10.2.0.0/24', 'fd02::/64'],
      ownAddresses: east ? ['10.1.0.1', 'fd01::1', '192.168.50.1', 'fd50::1'] : ['10.2.0.1', 'fd02::1', '192.168.50.2', 'fd50::2'],
      peers: [{
        cluster: east ? 'west' : 'east',
        cidrs: east ? ['10.2.0.0/24', 'fd02::/64'] : ['10.1.0.0/24', 'fd01::/64'],
        gateways: [{ host: east ? '192.168.50.2' : '192.168.50.1', port: 15443 }],
      }],
      tls: mode === 'plaintext' ? { mode } : { mode, caFile: pki.ca, certFile: pki.certs[me].cert, keyFile: pki.certs[me].key },
      limits: { handshakeTimeoutMs: 3000, dialTimeoutMs: 2000, drainTimeoutMs: 1000 },
    };
  };

  const metrics = (where: string) => lab.exec(where, [node, '-e',
    "require('http').get('http://127.0.0.1:15090/metrics', r => { let b=''; r.on('data', d => b += d); r.on('end', () => console.log(b)); })"], 10_000);
  const counter = (text: string, name: string, labels: string): number =>
    Number(new RegExp(`${name}\\{${labels}\\} (\\d+)`).exec(text)?.[1] ?? 0);
  const probe = async (from: string, host: string, port: number, localAddress?: string): Promise<Probe> =>
    JSON.parse(await lab.exec(from, [node, TOOL, 'probe', host, String(port), '65536', '4000', ...(localAddress ? [localAddress] : [])], HANG_GUARD_MS)) as Probe;
  const accepted = () => (sink.out().match(/^accepted /gm) ?? []).length;
  const logs = () => `--- east:\n${gw.east?.out().split('\n').slice(-6).join('\n')}\n--- west:\n${gw.west?.out().split('\n').slice(-6).join('\n')}`;

  /** What the gateways and the handler saw, to compare before and after a connection. */
  const seen = async () => {
    const [e, w] = [await metrics(ns.ga), await metrics(ns.gb)];
    return {
      sinkAccepted: accepted(),
      originTunnels: counter(e, 'mm_proxy_tunnels_total', 'peer="west",side="origin"'),
      terminusTunnels: counter(w, 'mm_proxy_tunnels_total', 'peer="east",side="terminus"'),
      clientNotLocal: counter(e, 'mm_proxy_refusals_total', 'reason="client_not_local",side="origin"'),
    };
  };

  const startGateways = async (mode: TlsMode) => {
    for (const [me, where] of [['east', ns.ga], ['west', ns.gb]] as const) {
      cfgFile[me] = path.join(pki.dir, `${me}-${mode}.json`);
      fs.writeFileSync(cfgFile[me], JSON.stringify(config(me, mode)));
      gw[me] = await lab.start(where, [node, CLI, 'run', '--config', cfgFile[me]], 'gateway listening');
    }
  };
  const stopGateways = async () => {
    for (const me of ['east', 'west'] as const) {
      const g = gw[me];
      if (!g || g.child.exitCode !== null) continue;
      const exited = new Promise((r) => g.child.once('exit', r));
      g.child.kill('SIGKILL');
      await exited;
    }
  };

  before(async () => {
    pki = makePki('fleet', ['east', 'west']);
    for (const k of Object.keys(ns) as (keyof typeof ns)[]) ns[k] = lab.addNs(k);
    lab.link(ns.h, 'mig0', ['10.1.0.10/24', 'fd01::10/64'], ns.ga, 'mig0', ['10.1.0.1/24', 'fd01::1/64']);
    lab.link(ns.gb, 'mig0', ['10.2.0.1/24', 'fd02::1/64'], ns.s, 'mig0', ['10.2.0.10/24', 'fd02::10/64']);
    // the shared network: one L2 segment (a bridge in its own namespace) holding both gateways and the attacker
    lab.link(ns.ga, 'xc0', ['192.168.50.1/24', 'fd50::1/64'], ns.sw, 'ga', []);
    lab.link(ns.gb, 'xc0', ['192.168.50.2/24', 'fd50::2/64'], ns.sw, 'gb', []);
    lab.link(ns.x, 'xc0', ['192.168.50.66/24', 'fd50::66/64'], ns.sw, 'x', []);
    lab.run(['ip', 'link', 'add', 'br0', 'type', 'bridge'], ns.sw);
    for (const port of ['ga', 'gb', 'x']) lab.run(['ip', 'link', 'set', port, 'master', 'br0'], ns.sw);
    lab.run(['ip', 'link', 'set', 'br0', 'up'], ns.sw);
    lab.run(['ip', 'route', 'add', '10.2.0.0/24', 'via', '10.1.0.1'], ns.h);
    lab.run(['ip', '-6', 'route', 'add', 'fd02::/64', 'via', 'fd01::1'], ns.h);
    lab.run(['ip', 'route', 'add', '10.1.0.0/24', 'via', '10.2.0.1'], ns.s);
    lab.run(['ip', '-6', 'route', 'add', 'fd01::/64', 'via', 'fd02::1'], ns.s);
    // the attack: a route to the peer's migration CIDR via our gateway's shared-network address
    lab.run(['ip', 'route', 'add', '10.2.0.0/24', 'via', '192.168.50.1'], ns.x);
    lab.run(['ip', '-6', 'route', 'add', 'fd02::/64', 'via', 'fd50::1'], ns.x);
    // a client on the migration interface whose source is outside our migration CIDRs (defence in depth)
    lab.run(['ip', 'addr', 'add', '10.9.0.10/32', 'dev', 'mig0'], ns.h);
    lab.run(['ip', 'addr', 'add', 'fd09::10/128', 'dev', 'mig0', 'nodad'], ns.h);
    lab.run(['ip', 'route', 'add', '10.9.0.10/32', 'dev', 'mig0'], ns.ga);
    lab.run(['ip', '-6', 'route', 'add', 'fd09::10/128', 'dev', 'mig0'], ns.ga);
    for (const [me, where] of [['east', ns.ga], ['west', ns.gb]] as const) {
      const f = path.join(pki.dir, `${me}-rules.json`);
      fs.writeFileSync(f, JSON.stringify(config(me, 'mtls')));
      await lab.exec(where, [node, CLI, 'setup-rules', '--config', f]);
    }
    sink = await lab.start(ns.s, [node, TOOL, 'sink', '::', String(SINK_PORT), 'log'], 'listening');
  });
  after(async () => { await lab.cleanup(); if (pki) fs.rmSync(pki.dir, { recursive: true, force: true }); });

  it('setup-rules names the migration interface on the jump and on every REDIRECT, per family', () => {
    for (const bin of ['iptables', 'ip6tables']) {
      const rules = lab.run([bin, '-t', 'nat', '-S'], ns.ga);
      assert.match(rules, /^-A PREROUTING -i mig0 -j MIGRATION_MESH$/m, rules);
      assert.doesNotMatch(rules, /^-A PREROUTING (?!-i mig0 ).*-j MIGRATION_MESH$/m, rules);
      const redirects = rules.split('\n').filter((l) => /REDIRECT/.test(l));
      assert.ok(redirects.length >= 1, rules);
      for (const r of redirects) assert.match(r, /-i mig0 /, r);
    }
  });

  for (const mode of MODES) {
    describe(`tls.mode ${mode}`, () => {
      before(() => startGateways(mode));
      after(() => stopGateways());

      for (const f of FAMILIES) {
        it(`IPv${f.family}: the attacker's connection to the peer's handler fails closed; nothing reaches it`, async () => {
          const before0 = await seen();
          const r = await probe(ns.x, f.peerHandler, SINK_PORT);
          const after0 = await seen();
          assert.equal(r.reply, '', `the attacker got an answer from the peer's handler: ${JSON.stringify(r)}\n${logs()}`);
          assert.ok(r.error, `the attacker's connection did not fail: ${JSON.stringify(r)}`);
          assert.equal(after0.sinkAccepted, before0.sinkAccepted, `the peer's handler accepted the attacker's connection\n${sink.out()}`);
          assert.equal(after0.originTunnels, before0.originTunnels, 'our gateway opened a tunnel for the attacker');
          assert.equal(after0.terminusTunnels, before0.terminusTunnels, 'the peer gateway accepted a tunnel for the attacker');
        });

        it(`IPv${f.family}: the intercept port on our shared address refuses the attacker (bound to the migration interface)`, async () => {
          const before0 = await seen();
          const r = await probe(ns.x, f.ourShared, 15001);
          const after0 = await seen();
          assert.equal(r.connected, false, `the intercept listener accepted a connection from the shared network: ${JSON.stringify(r)}`);
          assert.equal(r.error, 'ECONNREFUSED', JSON.stringify(r));
          assert.equal(after0.sinkAccepted, before0.sinkAccepted);
        });

        it(`IPv${f.family}: the legitimate handler's connection through the same gateways carries bytes both ways`, async () => {
          const before0 = await seen();
          const r = await probe(ns.h, f.peerHandler, SINK_PORT);
          const after0 = await seen();
          assert.equal(r.error, undefined, `${JSON.stringify(r)}\n${logs()}`);
          assert.equal(r.reply, r.sent, 'the handler saw exactly what was sent, and its answer came back');
          assert.equal(after0.sinkAccepted, before0.sinkAccepted + 1);
          assert.equal(after0.terminusTunnels, before0.terminusTunnels + 1);
        });

        it(`IPv${f.family}: a client on the migration interface from outside our migration CIDRs is refused client_not_local, counted`, async () => {
          const before0 = await seen();
          const r = await probe(ns.h, f.peerHandler, SINK_PORT, f.outsider);
          const after0 = await seen();
          assert.equal(r.reply, '', JSON.stringify(r));
          assert.ok(r.error, JSON.stringify(r));
          assert.equal(after0.sinkAccepted, before0.sinkAccepted, 'nothing reached the peer handler');
          assert.equal(after0.originTunnels, before0.originTunnels);
          assert.equal(after0.clientNotLocal, before0.clientNotLocal + 1, `refusal not counted\n${logs()}`);
          assert.match(gw.east!.out(), new RegExp(`"reason":"client_not_local"[^\\n]*"client":"${f.outsider}"|"client":"${f.outsider}"[^\\n]*"reason":"client_not_local"`), 'logged with the client address');
        });
      }

      it('defence in depth: with an unrestricted jump added by hand, the listener still refuses the shared network', async () => {
        for (const bin of ['iptables', 'ip6tables']) lab.run([bin, '-t', 'nat', '-I', 'PREROUTING', '-j', 'MIGRATION_MESH'], ns.ga);
        try {
          for (const f of FAMILIES) {
            const before0 = await seen();
            const r = await probe(ns.x, f.peerHandler, SINK_PORT);
            const after0 = await seen();
            assert.equal(r.reply, '', JSON.stringify(r));
            assert.ok(r.error, JSON.stringify(r));
            assert.equal(after0.sinkAccepted, before0.sinkAccepted, `IPv${f.family}: the peer handler accepted`);
            assert.equal(after0.originTunnels, before0.originTunnels, `IPv${f.family}: a tunnel was opened`);
          }
        } finally {
          for (const bin of ['iptables', 'ip6tables']) lab.run([bin, '-t', 'nat', '-D', 'PREROUTING', '-j', 'MIGRATION_MESH'], ns.ga);
        }
      });
    });
  }
});
