/**
 * Issue 14, item 2: destinations are parsed once and compared as addresses (IPv4-mapped forms included);
 * the gateway's own interface addresses, subnet network/broadcast addresses and special-purpose ranges that
 * translate elsewhere are refused whatever `localCidrs` says.
 */
import assert from 'node:assert/strict';
import * as crypto from 'node:crypto';
import * as http from 'node:http';
import type * as os from 'node:os';
import { after, before, describe, it } from 'node:test';
import { parseProxyConfig, type ProxyConfigInput } from '../config';
import { startGateway, type GatewayHandle } from '../gateway';
import { AddressPolicy } from '../policy';
import { RefusalCode, decodeOpenBody, encodeOpen, FrameReader, FRAME_OPEN } from '../protocol';
import { configFor } from '../testkit/gateways';
import { HANG_GUARD_MS, freePort, makePki, silent, type Pki } from '../testkit/helpers';
import { probe } from '../testkit/probe';

const base = (over: Partial<ProxyConfigInput> = {}) => parseProxyConfig({
  version: 1, fleet: 'fleet', cluster: 'west', localCidrs: ['10.50.0.0/16', 'fd50::/64'], ownAddresses: ['10.50.0.1'],
  peers: [{ cluster: 'east', cidrs: ['10.40.0.0/16'], gateways: [{ host: '192.168.50.10', port: 15443 }] }],
  tls: { mode: 'plaintext' }, ...over,
});

/** An os.networkInterfaces() result: the pod's own addresses as the kernel reports them. */
const ifaces = (list: [string, string, number][]): NodeJS.Dict<os.NetworkInterfaceInfo[]> => ({
  net1: list.map(([address, netmask, prefix]) => ({
    address, netmask, family: address.includes(':') ? 'IPv6' : 'IPv4', mac: '00:00:00:00:00:00', internal: false,
    cidr: `${address}/${prefix}`, ...(address.includes(':') ? { scopeid: 0 } : {}),
  }) as os.NetworkInterfaceInfo),
});

/** The destination text as the terminus sees it: through the OPEN encoder and decoder. */
const wire = (host: string) => {
  const f = new FrameReader(4096, FRAME_OPEN).push(encodeOpen({ connectionId: Buffer.alloc(16), dstHost: host, dstPort: 1, sourceCluster: 'east' }));
  assert.equal(f.kind, 'frame');
  return decodeOpenBody((f as { body: Buffer }).body).dstHost;
};

describe('address policy', () => {
  const p = new AddressPolicy(base(), [], false, ifaces([['10.50.0.7', '255.255.0.0', 16], ['192.168.50.21', '255.255.255.0', 24]]));

  it('accepts ordinary in-cluster destinations, in every textual form', () => {
    for (const a of ['10.50.3.4', '::ffff:10.50.3.4', '::ffff:a32:304', wire('10.50.3.4'), 'fd50::9']) {
      assert.deepEqual(p.checkDestination(a, 9185), { ok: true }, a);
    }
  });

  it("refuses the gateway's own addresses, also IPv4-mapped and as the decoder renders them", () => {
    for (const a of ['10.50.0.1', '::ffff:10.50.0.1', '::ffff:a32:1', '0:0:0:0:0:ffff:0a32:0001', wire('::ffff:10.50.0.1')]) {
      const v = p.checkDestination(a, 15090);
      assert.equal(v.ok, false, a);
      assert.equal(!v.ok && v.code, 'forbidden', a);
    }
  });

  it('refuses addresses learned from the pod interfaces at start, though ownAddresses does not list them', () => {
    for (const a of ['10.50.0.7', '::ffff:10.50.0.7', '192.168.50.21']) assert.equal(p.checkDestination(a, 15090).ok, false, a);
  });

  it('refuses a non-loopback address on lo (an internal interface), and one added to any interface after start', () => {
    let now: NodeJS.Dict<os.NetworkInterfaceInfo[]> = {
      ...ifaces([['10.50.0.7', '255.255.0.0', 16]]),
      lo: [{ address: '127.0.0.1', netmask: '255.0.0.0', family: 'IPv4', mac: '00:00:00:00:00:00', internal: true, cidr: '127.0.0.1/8' },
        { address: '10.50.9.9', netmask: '255.255.255.255', family: 'IPv4', mac: '00:00:00:00:00:00', internal: true, cidr: '10.50.9.9/32' }],
    };
    const q = new AddressPolicy(base(), [], false, () => now);
    for (const a of ['10.50.9.9', '::ffff:10.50.9.9']) assert.equal(q.checkDestination(a, 15090).ok, false, `on lo: ${a}`);
    assert.deepEqual(q.checkDestination('10.50.8.8', 15090), { ok: true }, 'not yet ours');
    now = { ...now, net2: ifaces([['10.50.8.8', '255.255.0.0', 16]]).net1 };
    const v = q.checkDestination('10.50.8.8', 15090);
    assert.equal(!v.ok && v.code, 'forbidden', 'added after start: refused at the next dial');
  });

  it('refuses the network and broadcast addresses of the local subnets', () => {
    for (const a of ['10.50.0.0', '10.50.255.255', '::ffff:10.50.255.255', 'fd50::']) {
      const v = p.checkDestination(a, 80);
      assert.equal(!v.ok && v.code, 'forbidden', a);
    }
  });

  it('refuses special-purpose ranges that translate elsewhere, whatever localCidrs says', () => {
    const open = new AddressPolicy(base({ localCidrs: ['0.0.0.0/0', '::/0'], ownAddresses: [] }), [], false, {});
    const special = [
      '64:ff9b::a32:5', '64:ff9b::10.50.0.5', '64:ff9b:1::1', // NAT64 (well-known, local-use)
      '2002:a32:5::1', // 6to4
      '2001::1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', // Teredo
      '::10.50.0.5', '::a32:5', // IPv4-compatible
      '::ffff:0:a32:5', // IPv4-translated (SIIT)
      '100::1', // discard-only
      '192.0.0.1', '192.0.0.170', // IETF protocol assignments, NAT64 discovery
      '192.88.99.1', // 6to4 relay anycast
      '169.254.169.254', 'fd00:ec2::254', '100.100.100.200', '168.63.129.16', // cloud metadata
      '127.0.0.1', '::ffff:127.0.0.1', '0.0.0.0', '::', '::1', '224.0.0.1', 'ff02::1', 'fe80::1', '255.255.255.255', '240.0.0.1',
    ];
    for (const a of special) {
      const v = open.checkDestination(a, 80);
      assert.equal(!v.ok && v.code, 'forbidden', `${a} must be forbidden`);
    }
    assert.deepEqual(open.checkDestination('10.50.0.5', 80), { ok: true });
  });

  it('refuses what is not an address and port 0', () => {
    for (const a of ['', 'localhost', '10.50.0', '10.50.0.5.1', '010.50.0.5']) assert.equal(p.checkDestination(a, 80).ok, false, a);
    assert.equal(p.checkDestination('10.50.3.4', 0).ok, false);
  });

  it('routes an IPv4-mapped destination on the origin side like the dotted form', () => {
    assert.equal(p.peerFor('::ffff:10.40.1.1')?.cluster, 'east');
    assert.equal(p.peerFor('10.40.1.1')?.cluster, 'east');
    assert.equal(p.peerFor('10.41.1.1'), undefined);
  });
});

describe("a valid peer cannot reach the gateway's own ports through an IPv4-mapped address", { timeout: 5 * HANG_GUARD_MS }, () => {
  let pki: Pki;
  let west: GatewayHandle;
  let metricsPort: number;
  before(async () => {
    pki = makePki('fleet', ['east', 'west']);
    metricsPort = await freePort('127.0.0.5');
    const cfg = await configFor('west', 'east', 1, 'mtls', pki, {
      ownAddresses: ['127.0.0.5'], localCidrs: ['127.0.0.0/8'],
    });
    cfg.listen!.admin = { host: '127.0.0.5', port: metricsPort };
    west = await startGateway(cfg, { logger: silent, unsafeAllowLoopbackDestinations: true });
  });
  after(async () => { await west?.close(); });

  it('the admin port answers locally (control)', async () => {
    const code = await new Promise<number>((resolve, reject) => {
      http.get({ host: '127.0.0.5', port: metricsPort, path: '/healthz' }, (res) => { res.resume(); resolve(res.statusCode!); }).on('error', reject);
    });
    assert.equal(code, 200);
  });

  for (const dst of ['127.0.0.5', '::ffff:127.0.0.5']) {
    it(`OPEN to ${dst}:<admin port> is DESTINATION_FORBIDDEN`, async () => {
      const r = await probe(west.addresses().tunnel.port, encodeOpen({ connectionId: crypto.randomBytes(16), dstHost: dst, dstPort: metricsPort, sourceCluster: 'east' }),
        { ...pki.certs.east, ca: pki.ca });
      assert.equal(r.reply?.status, RefusalCode.DESTINATION_FORBIDDEN);
    });
  }
});
