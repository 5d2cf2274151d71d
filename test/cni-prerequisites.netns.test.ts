/**
 * What the CNI plugins need from the node, shown with the real plugins (Debian containernetworking-plugins
 * 1.1.1 in /usr/lib/cni) in network namespaces: each is a line of `plan`'s node prerequisites and of
 * docs/node-prerequisites.md. Upstream rules: containernetworking/plugins @3d27709f
 * plugins/main/macvlan/macvlan.go (MTU <= master MTU), plugins/main/bridge/bridge.go (ensureBridge sets
 * vlan_filtering only when it creates the bridge; ports keep VLAN 1 unless preserveDefaultVlan is false,
 * the default only since v1.8.0), pkg/ipam/ipam_linux.go (addresses settled only with an IPv6 gateway).
 */
import * as path from 'path';
import { NetnsLab, netnsSupport } from './support/netns';
import { CniRunner, cniSupport, kernelHasBridgeVlanFiltering } from './support/netns-cni';

const support = netnsSupport();
const cniOk = cniSupport(['bridge', 'macvlan', 'static']);
const skip = !support.ok ? support.reason : !cniOk.ok ? cniOk.reason : undefined;
if (skip) console.warn(`[cni-prerequisites] SKIPPED: ${skip}`);
const d = skip ? describe.skip : describe;
const SETTLE = path.join(__dirname, '..', 'proxy', 'lib', 'settle-addresses.js');

d('node prerequisites of the CNI plugins (real plugins, network namespaces)', () => {
  let lab: NetnsLab;
  let cni: CniRunner;
  let node: string;
  let pod: string;
  let seq = 0;
  const att = (config: Record<string, unknown>, ifname = 'net1') => ({ nodeNs: node, podNs: pod, ifname, containerId: `mmp-${process.pid}-${++seq}`, config, pod: { namespace: 'ns', name: 'p' } });

  beforeAll(() => {
    NetnsLab.reapStale();
    lab = new NetnsLab(`mm${process.pid}p`);
    cni = new CniRunner();
    node = lab.addNs('node');
    pod = lab.addNs('pod');
  });
  afterAll(() => { cni?.delAll(); lab?.cleanup(); });

  test('macvlan: an attachment MTU above the master\'s fails ADD with the plugin\'s message; a master with that MTU works', () => {
    lab.run(['ip', '-n', node, 'link', 'add', 'eth2', 'type', 'veth', 'peer', 'name', 'eth2p']);
    lab.run(['ip', '-n', node, 'link', 'set', 'eth2', 'up']);
    lab.run(['ip', '-n', node, 'link', 'set', 'eth2p', 'up']); // carrier: DAD runs only on a link that has one
    const cfg = { cniVersion: '0.3.1', name: 'lm-crosscluster', type: 'macvlan', master: 'eth2', mode: 'bridge', mtu: 9000, capabilities: { ips: true }, ipam: { type: 'static' }, runtimeConfig: { ips: ['192.168.50.10/24'] } };
    const r = cni.run('ADD', att(cfg));
    expect(r.status).not.toBe(0);
    expect(JSON.parse(r.stdout).msg).toBe('invalid MTU 9000, must be [0, master MTU(1500)]');
    for (const dev of ['eth2', 'eth2p']) lab.run(['ip', '-n', node, 'link', 'set', dev, 'mtu', '9000']);
    cni.add(att(cfg));
    expect(lab.exec(pod, ['ip', '-o', 'link', 'show', 'net1']).stdout).toMatch(/mtu 9000/);
  });

  test('bridge + vlan: on this kernel the plugin cannot create a VLAN-filtering bridge (ADD fails); with one, an existing bridge keeps vlan_filtering 0', () => {
    const cfg = { cniVersion: '0.3.1', name: 'lm-migration', type: 'bridge', bridge: 'br-mig', vlan: 120, ipam: { type: 'static', addresses: [{ address: '10.80.1.4/25' }] } };
    if (!kernelHasBridgeVlanFiltering(lab)) {
      const r = cni.run('ADD', att(cfg, 'net2'));
      expect(r.status).not.toBe(0);
      expect(JSON.parse(r.stdout).msg).toMatch(/could not add "br-mig": operation not supported/);
      console.warn('[cni-prerequisites] this kernel has no bridge VLAN filtering: VLAN enforcement (vlan_filtering 1, VLAN 1 membership) cannot be exercised here');
      return;
    }
    // a bridge made beforehand without vlan_filtering: ADD succeeds and nothing is enforced
    lab.run(['ip', '-n', node, 'link', 'add', 'br-mig', 'type', 'bridge']);
    cni.add(att(cfg, 'net2'));
    expect(lab.exec(node, ['ip', '-d', 'link', 'show', 'br-mig']).stdout).toMatch(/vlan_filtering 0/);
  });

  test('IPv6 on macvlan (ipvlan, host-device alike): the address is tentative right after ADD, binding to it fails; settleAddresses waits it out', async () => {
    // DAD runs only once the link has a carrier: with the master's peer down the address stays tentative for as
    // long as the test needs (on a carrier, DAD's 1 s ran out during the checks below on a loaded CI machine, and
    // settleAddresses found nothing left to wait for); the carrier comes back once settleAddresses is waiting
    lab.run(['ip', '-n', node, 'link', 'set', 'eth2p', 'down']);
    const cfg = { cniVersion: '0.3.1', name: 'lm-v6', type: 'macvlan', master: 'eth2', mode: 'bridge', capabilities: { ips: true }, ipam: { type: 'static' }, runtimeConfig: { ips: ['fd00:50::a1/64'] } };
    cni.add(att(cfg, 'xc0'));
    const tentative = lab.exec(pod, ['ip', '-6', '-o', 'addr', 'show', 'dev', 'xc0', 'tentative']).stdout;
    const bind = (addr: string) => lab.exec(pod, [process.execPath, '-e', `require('net').createServer().on('error',e=>{console.log(e.code);process.exit(0)}).listen({host:'${addr}',port:15443},function(){console.log('bound');this.close()})`]).stdout.trim();
    expect(tentative).toContain('fd00:50::a1');
    expect(bind('fd00:50::a1')).toBe('EADDRNOTAVAIL');
    expect(bind('::')).toBe('bound'); // the wildcard the gateway listens on is not affected
    const settle = lab.spawn(pod, [process.execPath, '-e', `console.log('waiting'); require(${JSON.stringify(SETTLE)}).settleAddresses(20000).then(r=>console.log(JSON.stringify(r)))`]);
    const result = lab.waitForLine(settle, /^\{/, 30_000, 'settleAddresses\' result');
    await lab.waitForLine(settle, /^waiting$/, 30_000, 'settleAddresses started');
    expect(lab.exec(pod, ['ip', '-6', '-o', 'addr', 'show', 'dev', 'xc0', 'tentative']).stdout).toContain('fd00:50::a1'); // still, without a carrier
    lab.run(['ip', '-n', node, 'link', 'set', 'eth2p', 'up']);
    const r = JSON.parse(await result);
    expect({ tentative: r.tentative, dadFailed: r.dadFailed }).toEqual({ tentative: [], dadFailed: [] });
    expect(r.waitedMs).toBeGreaterThan(0);
    expect(bind('fd00:50::a1')).toBe('bound');

    console.log(`[cni-prerequisites] macvlan IPv6 address tentative after ADD; usable after settleAddresses waited ${r.waitedMs} ms (DAD from the carrier's return)`);
  }, 60_000);

  test('IPv6 on bridge: the plugin turns DAD off on the pod interface (accept_dad 0 unless enableDad), so the address is usable at once', () => {
    const cfg = { cniVersion: '0.3.1', name: 'lm-v6b', type: 'bridge', bridge: 'br-v6', capabilities: { ips: true }, ipam: { type: 'static' }, runtimeConfig: { ips: ['fd00:51::a1/64'] } };
    cni.add(att(cfg, 'xc1'));
    expect(lab.exec(pod, ['ip', '-6', '-o', 'addr', 'show', 'dev', 'xc1', 'tentative']).stdout).toBe('');
    expect(lab.exec(pod, ['sysctl', '-n', 'net.ipv6.conf.xc1.accept_dad']).stdout.trim()).toBe('0');
  });

  test('DEL removes what ADD made', () => {
    expect(cni.delAll()).toEqual([]);
    const links = JSON.parse(lab.exec(pod, ['ip', '-j', 'link', 'show']).stdout).map((l: any) => l.ifname);
    expect(links).toEqual(['lo']);
  });
});
