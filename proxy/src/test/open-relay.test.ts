/**
 * Issue 49, item 1 (never an open relay), on loopback: the origin's client check (`client_not_local`), the
 * listeners' interface binding, and the config rules that keep every listener on the one network it serves.
 * The attack itself, across namespaces with the real rules, is open-relay.netns.test.ts.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { parseProxyConfig, isWildcard, listenProblems, type ProxyConfigInput } from '../config';
import { startGateway, type GatewayHandle } from '../gateway';
import { AddressPolicy } from '../policy';
import { configFor, startPair, type TlsMode } from '../testkit/gateways';
import { HANG_GUARD_MS, makePki, sendAndVerify, silent, startSink, withTimeout, type Pki } from '../testkit/helpers';

async function counter(g: GatewayHandle, name: string, labels: Record<string, string>): Promise<number> {
  const m = await g.registry.getSingleMetric(name)!.get();
  return m.values.filter((v) => Object.entries(labels).every(([k, x]) => v.labels[k] === x)).reduce((s, v) => s + v.value, 0);
}

const base: ProxyConfigInput = {
  version: 1, fleet: 'fleet', cluster: 'east', localCidrs: ['10.1.0.0/24'],
  peers: [{ cluster: 'west', cidrs: ['10.2.0.0/24'], gateways: [{ host: '192.168.50.2', port: 15443 }] }],
  tls: { mode: 'plaintext' },
};
const withListen = (listen: Record<string, unknown>) => ({ ...base, listen: { ...parseProxyConfig(base).listen, ...listen } });

describe('origin: only clients in the local migration CIDRs are tunnelled (client_not_local)', () => {
  let pki: Pki;
  let sink: Awaited<ReturnType<typeof startSink>>;
  before(async () => { pki = makePki('fleet', ['east', 'west']); sink = await startSink(); });
  after(async () => { await sink.close(); });

  for (const mode of ['plaintext', 'mtls', 'mtls-splice'] as TlsMode[]) {
    it(`${mode}: a client outside localCidrs is reset before any tunnel; counted, logged; one inside is carried`, async () => {
      const lines: string[] = [];
      const { pino } = await import('pino');
      const logger = pino({ level: 'info' }, { write: (l: string) => { lines.push(l); } });
      // east's handlers' network is 10.99.0.0/24: the loopback client (127.0.0.1) is not in it
      const pair = await startPair(mode, pki, () => ({ host: '127.0.0.1', port: sink.port }), { logger }, {}, {}, { localCidrs: ['10.99.0.0/24'] });
      try {
        const res = await withTimeout(sendAndVerify(pair.a.addresses().intercept.port, '127.0.0.1', 1000).then(() => 'carried', (e) => String(e.code ?? e)), HANG_GUARD_MS, 'client');
        assert.match(res, /ECONNRESET|EPIPE/);
        assert.equal(await counter(pair.a, 'mm_proxy_refusals_total', { reason: 'client_not_local', side: 'origin' }), 1);
        assert.equal(await counter(pair.a, 'mm_proxy_tunnels_total', { side: 'origin' }), 0);
        assert.equal(await counter(pair.b, 'mm_proxy_tunnels_total', { side: 'terminus' }), 0, 'the peer never saw a tunnel');
        const line = lines.map((l) => JSON.parse(l)).find((l) => l.reason === 'client_not_local');
        assert.equal(line?.client, '127.0.0.1', 'logged with the client address');
        assert.equal(line?.level, 40, 'at warn');
        // the same gateway with its handlers' network holding the client carries it
        assert.ok(pair.a.reload({ ...pair.cfgA, localCidrs: ['127.0.0.0/8'] }));
        const ok = await sendAndVerify(pair.a.addresses().intercept.port, '127.0.0.1', 100_000);
        assert.equal(ok.reply, ok.sent);
      } finally { await pair.close(); }
    });
  }

  it('isLocalClient: addresses compared as addresses (IPv4-mapped is IPv4); a trust agent admits no client', () => {
    const p = new AddressPolicy(parseProxyConfig({ ...base, localCidrs: ['10.1.0.0/24', 'fd01::/64'] }), [], false, {});
    for (const a of ['10.1.0.10', '::ffff:10.1.0.10', '::ffff:a01:a', 'fd01::10', 'fd01:0:0:0::10%mig0']) assert.equal(p.isLocalClient(a), true, a);
    for (const a of ['10.2.0.10', '192.168.50.66', '127.0.0.1', '::1', 'fd02::10', '', 'not-an-ip', '10.1.0']) assert.equal(p.isLocalClient(a), false, a);
    const agent = new AddressPolicy(parseProxyConfig({ ...base, localCidrs: [] }), [], false, {});
    assert.equal(agent.isLocalClient('10.1.0.10'), false);
  });
});

describe('listeners: bound to the one interface or address that serves them', () => {
  it('a listener with an interface is bound to it (SO_BINDTODEVICE), and says which interface it could not bind', async () => {
    const cfg = await configFor('east', 'west', 1, 'plaintext', undefined);
    const onLo = { ...cfg, listen: { ...cfg.listen, intercept: { ...cfg.listen!.intercept!, host: '0.0.0.0', interface: 'lo' } } };
    const g = await startGateway(onLo, { logger: silent });
    try {
      assert.equal(g.addresses().intercept.port, cfg.listen!.intercept!.port);
      assert.equal(g.addresses().intercept.address, '0.0.0.0');
    } finally { await g.close(); }
    const missing = { ...cfg, listen: { ...cfg.listen, tunnel: { ...cfg.listen!.tunnel!, interface: 'nosuch49' } } };
    await assert.rejects(startGateway(missing, { logger: silent }), /listen\.tunnel: cannot bind 127\.0\.0\.1:\d+ on interface nosuch49: .*No such device.*no such interface/);
    await assert.rejects(startGateway(onLo, { logger: silent, dataPath: 'js' }), /listen\.intercept\.interface 'lo': .*needs the native addon/);
  });

  it('defaults: intercept on mig0, tunnel on xc0, admin on eth0 (+ loopback); nothing on every interface', () => {
    const l = parseProxyConfig(base).listen;
    assert.deepEqual(l, {
      intercept: { host: '0.0.0.0', interface: 'mig0', port: 15001 },
      tunnel: { host: '0.0.0.0', interface: 'xc0', port: 15443 },
      admin: { interface: 'eth0', port: 15090 },
    });
    assert.deepEqual(listenProblems(l), []);
  });

  it('a wildcard without interface is refused for every listener, naming the field, the risk and the fix', () => {
    for (const host of ['0.0.0.0', '::', '0:0:0:0:0:0:0:0', '::ffff:0.0.0.0', '::0']) {
      assert.ok(isWildcard(host), host);
      // a pre-issue-49 ConfigMap: {host: '0.0.0.0', port} without interface
      assert.throws(() => parseProxyConfig(withListen({ intercept: { host, port: 15001 } })),
        /listen\.intercept: host '.*' without interface binds every interface of the pod \(an open relay: issue 49\); set listen\.intercept\.interface to the migration network's interface/);
      assert.throws(() => parseProxyConfig(withListen({ tunnel: { host, port: 15443 } })), /listen\.tunnel: host .* without interface .* set listen\.tunnel\.interface to the shared cross-cluster network's interface/);
      assert.throws(() => parseProxyConfig(withListen({ admin: { host, port: 15090 } })), /listen\.admin: host .* binds every interface.*use \{interface: 'eth0', port: 15090\}/);
    }
    for (const host of ['10.1.0.1', '127.0.0.1', '::1', 'fd01::1', '192.168.50.1']) assert.equal(isWildcard(host), false, host);
    // exact addresses need no interface
    parseProxyConfig(withListen({ intercept: { host: '10.1.0.1', port: 15001 }, tunnel: { host: '192.168.50.1', port: 15443 }, admin: { host: '127.0.0.1', port: 15090 } }));
  });

  it('the three networks stay apart: tunnel and intercept on different interfaces, admin on neither', () => {
    assert.throws(() => parseProxyConfig(withListen({ tunnel: { host: '::', interface: 'mig0', port: 15443 } })), /listen\.tunnel\.interface: 'mig0' is also listen\.intercept\.interface/);
    assert.throws(() => parseProxyConfig(withListen({ admin: { interface: 'mig0', port: 15090 } })), /listen\.admin\.interface: 'mig0' is the migration network's interface/);
    assert.throws(() => parseProxyConfig(withListen({ admin: { interface: 'xc0', port: 15090 } })), /listen\.admin\.interface: 'xc0' is the shared network's interface/);
    assert.throws(() => parseProxyConfig(withListen({ intercept: { host: '::', interface: '..', port: 15001 } })), /interface/);
    assert.throws(() => parseProxyConfig(withListen({ intercept: { host: '::', interface: 'sixteen-chars-ab', port: 15001 } })), /interface/);
  });

  it('the trust channel is a unix socket path only, never a TCP port', () => {
    for (const socket of ['15000', 'trust.sock', '', '/run/x/']) {
      assert.throws(() => parseProxyConfig({ ...base, trust: { socket } }), /absolute path of a unix socket[\s\S]*trust\.socket/, socket);
    }
    assert.equal(parseProxyConfig({ ...base, trust: {} }).trust!.socket, '/run/migration-mesh/trust.sock');
  });
});
