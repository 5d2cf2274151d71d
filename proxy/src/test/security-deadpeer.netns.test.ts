/**
 * Issue 14, item 6: a peer whose node is gone (no FIN, no RST: its packets just stop) must not hold its
 * tunnel slots until the idle timeout. Tunnel sockets carry TCP keepalive and TCP_USER_TIMEOUT
 * (`limits.keepalive*`, `limits.userTimeoutMs`), so the terminus frees them within seconds.
 *
 *   [o] 10.9.0.2 (stand-in peer "east", holds tunnels) --- [w] 10.9.0.1 gateway west | 10.77.0.1 --- [d] 10.77.0.5 sink
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { NetnsLab, netnsUnavailable } from '../testkit/netns';
import { HANG_GUARD_MS, makePki, sleep, tmpDir, type Pki } from '../testkit/helpers';

const CLI = path.join(__dirname, '..', 'cli.js');
const TOOL = path.join(__dirname, '..', 'testkit', 'tool.js');
const HOLDER = path.join(__dirname, '..', 'testkit', 'tunnel-holder.js');
const node = process.execPath;
const skip = netnsUnavailable();
const TUNNELS = 64;

describe('dead peers are detected in seconds (real CLI, network namespaces)', { timeout: 5 * HANG_GUARD_MS, skip }, () => {
  const lab = new NetnsLab();
  let pki: Pki;
  const ns = { o: '', w: '', d: '' };
  const active = async (): Promise<number> => {
    const script = "require('http').get('http://127.0.0.1:15090/metrics',r=>{let b='';r.on('data',d=>b+=d);r.on('end',()=>{const m=/mm_proxy_active_tunnels\\{[^}]*side=\"terminus\"[^}]*\\} (\\d+)/.exec(b);console.log(m?m[1]:0)})})";
    return Number((await lab.exec(ns.w, [node, '-e', script], HANG_GUARD_MS)).trim());
  };

  before(async () => {
    pki = makePki('fleet', ['east', 'west']);
    ns.o = lab.addNs('o'); ns.w = lab.addNs('w'); ns.d = lab.addNs('d');
    lab.link(ns.o, 'xc0', ['10.9.0.2/24'], ns.w, 'xc0', ['10.9.0.1/24']);
    lab.link(ns.w, 'mig0', ['10.77.0.1/24'], ns.d, 'mig0', ['10.77.0.5/24']);
    const cfgFile = path.join(tmpDir(), 'west.json');
    fs.writeFileSync(cfgFile, JSON.stringify({
      version: 1, fleet: 'fleet', cluster: 'west',
      listen: { intercept: { host: '127.0.0.1', port: 15001 }, tunnel: { host: '10.9.0.1', port: 15443 }, admin: { host: '127.0.0.1', port: 15090 } },
      localCidrs: ['10.77.0.0/24'], dialFrom: '10.77.0.1',
      peers: [{ cluster: 'east', cidrs: ['10.88.0.0/24'], gateways: [{ host: '10.9.0.2', port: 15443 }] }],
      tls: { mode: 'mtls', caFile: pki.ca, certFile: pki.certs.west.cert, keyFile: pki.certs.west.key },
      limits: { keepaliveIdleMs: 1000, keepaliveIntervalMs: 1000, keepaliveProbes: 2, userTimeoutMs: 3000 },
    }));
    await lab.start(ns.d, [node, TOOL, 'sink', '10.77.0.5', '9000'], 'listening');
    await lab.start(ns.w, [node, CLI, 'run', '--config', cfgFile], 'gateway listening');
  });
  after(async () => { await lab.cleanup(); });

  it(`${TUNNELS} tunnels of a vanished peer are freed within seconds, and the peer's slots are usable again`, async () => {
    const c = pki.certs.east;
    await lab.start(ns.o, [node, HOLDER, '10.9.0.1', '15443', '10.77.0.5', '9000', String(TUNNELS), pki.ca, c.cert, c.key, 'east'], `open ${TUNNELS}`, HANG_GUARD_MS);
    assert.equal(await active(), TUNNELS);
    // the peer's node vanishes: its packets stop, nothing says goodbye
    lab.run(['iptables', '-w', '-A', 'INPUT', '-j', 'DROP'], ns.o);
    lab.run(['iptables', '-w', '-A', 'OUTPUT', '-j', 'DROP'], ns.o);
    const t0 = Date.now();
    let n = TUNNELS;
    while (n > 0 && Date.now() - t0 < 40_000) { await sleep(500); n = await active(); }
    const ms = Date.now() - t0;
    console.log(`# vanished peer: ${TUNNELS} tunnels ${n === 0 ? `freed after ${ms} ms` : `NOT freed after ${ms} ms (${n} left)`}`);
    assert.equal(n, 0, `${n} tunnels still held ${ms} ms after the peer vanished`);
    assert.ok(ms < 20_000, `freed after ${ms} ms`);
    // the peer comes back: its new tunnels are accepted
    lab.run(['iptables', '-w', '-F'], ns.o);
    await lab.start(ns.o, [node, HOLDER, '10.9.0.1', '15443', '10.77.0.5', '9000', '8', pki.ca, c.cert, c.key, 'east'], 'open 8', HANG_GUARD_MS);
  });
});
