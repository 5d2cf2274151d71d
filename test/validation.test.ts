import { FleetValidationError, FleetProblem } from '../src/base/errors';
import { parseFleetText } from '../src/fleet/load';
import { resolveFleet } from '../src/fleet/resolve';
import { parseFleetDocument } from '../src/fleet/load';
import { baseFleet, mutate, problemsOf } from './support/fleets';


function expectProblem(doc: unknown, path: string, message: RegExp): FleetProblem {
  const ps = problemsOf(doc);
  const hit = ps.find((p) => p.path === path && message.test(p.message));
  if (!hit) throw new Error(`expected a problem at ${path} matching ${message}, got:\n${ps.map((p) => `${p.path}: ${p.message}`).join('\n') || '(none)'}`);
  return hit;
}

describe('fleet validation', () => {
  test('the base fleet is valid', () => {
    expect(problemsOf(baseFleet())).toEqual([]);
  });

  test('fails on an unmasked CIDR and suggests the masked form', () => {
    const p = expectProblem(mutate(baseFleet(), (d) => { d.spec.migrationNetwork.supernet = '10.200.3.0/16'; }),
      'spec.migrationNetwork.supernet', /host bits set/);
    expect(p.fix).toContain("'10.200.0.0/16'");
    const q = expectProblem(mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses.pool = ['192.168.50.7/29']; }),
      'spec.crossClusterNetwork.addresses.pool[0]', /host bits set/);
    expect(q.fix).toContain('192.168.50.0/29');
  });

  describe('a CIDR with host bits, in every CIDR field: the fix names the masked CIDR, and in a field that takes ranges the range from the given address (issue #39)', () => {
    const v6 = (d: any) => {
      d.spec.crossClusterNetwork.addresses = { pool: ['fd00:5:0:400::100-fd00:5:0:400::1ff'], prefixLength: 64 };
      d.spec.migrationNetwork.supernet = 'fd00:200:0:100::/56';
    };
    const range = (given: string, masked: string, whole: string, rest: string) =>
      `write '${masked}' (the whole ${masked.slice(masked.indexOf('/'))}: ${whole}), or '${rest}' (from ${given} to the end of that block)`;
    const cidrOnly = (masked: string, whole: string) => `use the masked network address '${masked}' (${whole})`;
    const cases: [string, (d: any) => void, string, string, string][] = [
      ['IPv4 pool', (d) => { d.spec.crossClusterNetwork.addresses.pool = ['192.168.60.20/28']; }, 'spec.crossClusterNetwork.addresses.pool[0]', 'address-syntax',
        range('192.168.60.20', '192.168.60.16/28', '192.168.60.16-192.168.60.31', '192.168.60.20-192.168.60.31')],
      ['IPv4 pool, the last address of its block', (d) => { d.spec.crossClusterNetwork.addresses.pool = ['192.168.50.0/25', '192.168.60.31/28']; }, 'spec.crossClusterNetwork.addresses.pool[1]', 'address-syntax',
        range('192.168.60.31', '192.168.60.16/28', '192.168.60.16-192.168.60.31', '192.168.60.31')],
      ['IPv4 exclusion', (d) => { d.spec.crossClusterNetwork.addresses.exclude = ['192.168.50.5/30']; }, 'spec.crossClusterNetwork.addresses.exclude[0]', 'address-syntax',
        range('192.168.50.5', '192.168.50.4/30', '192.168.50.4-192.168.50.7', '192.168.50.5-192.168.50.7')],
      ['IPv4 site pool', (d) => {
        d.spec.crossClusterNetwork.addresses = undefined;
        d.spec.crossClusterNetwork.sites = [{ name: 'x', pool: ['192.168.60.20/28'], prefixLength: 24 }];
      }, 'spec.crossClusterNetwork.sites[0].pool[0]', 'address-syntax', range('192.168.60.20', '192.168.60.16/28', '192.168.60.16-192.168.60.31', '192.168.60.20-192.168.60.31')],
      ['IPv4 cluster exclusion', (d) => { d.spec.clusters[0].migrationNetwork = { cidr: '10.200.9.0/24', exclude: ['10.200.9.9/29'] }; }, 'spec.clusters[0].migrationNetwork.exclude[0]', 'address-syntax',
        range('10.200.9.9', '10.200.9.8/29', '10.200.9.8-10.200.9.15', '10.200.9.9-10.200.9.15')],
      ['IPv6 pool', (d) => { v6(d); d.spec.crossClusterNetwork.addresses.pool = ['fd00:5:0:400::120/120']; }, 'spec.crossClusterNetwork.addresses.pool[0]', 'address-syntax',
        range('fd00:5:0:400::120', 'fd00:5:0:400::100/120', 'fd00:5:0:400::100-fd00:5:0:400::1ff', 'fd00:5:0:400::120-fd00:5:0:400::1ff')],
      ['IPv6 exclusion', (d) => { v6(d); d.spec.crossClusterNetwork.addresses.exclude = ['fd00:5:0:400::101/126']; }, 'spec.crossClusterNetwork.addresses.exclude[0]', 'address-syntax',
        range('fd00:5:0:400::101', 'fd00:5:0:400::100/126', 'fd00:5:0:400::100-fd00:5:0:400::103', 'fd00:5:0:400::101-fd00:5:0:400::103')],
      ['IPv4 supernet', (d) => { d.spec.migrationNetwork.supernet = '10.200.3.0/16'; }, 'spec.migrationNetwork.supernet', 'cidr-host-bits', cidrOnly('10.200.0.0/16', '10.200.0.0-10.200.255.255')],
      ['IPv6 supernet', (d) => { v6(d); d.spec.migrationNetwork.supernet = 'fd00:200:0:101::/56'; }, 'spec.migrationNetwork.supernet', 'cidr-host-bits',
        cidrOnly('fd00:200:0:100::/56', 'fd00:200:0:100::-fd00:200:0:1ff:ffff:ffff:ffff:ffff')],
      ['IPv4 cluster CIDR', (d) => { d.spec.clusters[0].migrationNetwork = { cidr: '10.200.9.1/24' }; }, 'spec.clusters[0].migrationNetwork.cidr', 'cidr-host-bits', cidrOnly('10.200.9.0/24', '10.200.9.0-10.200.9.255')],
      ['IPv4 pod CIDR', (d) => { d.spec.clusters[0].podCidrs = ['10.128.1.0/14']; }, 'spec.clusters[0].podCidrs[0]', 'cidr-host-bits', cidrOnly('10.128.0.0/14', '10.128.0.0-10.131.255.255')],
      ['IPv4 service CIDR', (d) => { d.spec.clusters[0].serviceCidrs = ['172.30.0.1/16']; }, 'spec.clusters[0].serviceCidrs[0]', 'cidr-host-bits', cidrOnly('172.30.0.0/16', '172.30.0.0-172.30.255.255')],
      ['IPv4 API server CIDR', (d) => { d.spec.networkPolicies = { installed: 'kubevirt', apiServerCidrs: ['10.0.0.1/24'] }; }, 'spec.networkPolicies.apiServerCidrs[0]', 'cidr-host-bits', cidrOnly('10.0.0.0/24', '10.0.0.0-10.0.0.255')],
      ['IPv4 route destination', (d) => { d.spec.crossClusterNetwork.addresses.routes = [{ dst: '172.31.2.9/24', gw: '192.168.50.1' }]; }, 'spec.crossClusterNetwork.addresses.routes[0].dst', 'cidr-host-bits', cidrOnly('172.31.2.0/24', '172.31.2.0-172.31.2.255')],
    ];

    test.each(cases)('%s', (_name, change, path, code, fix) => {
      const ps = problemsOf(mutate(baseFleet(), change));
      expect(ps.filter((p) => p.path === path)).toEqual([{ code, path, message: expect.stringMatching(/has host bits set$/), fix }]);
      // the entry's family is still known: no problem follows from reading it as IPv4 (an IPv6 pool's prefixLength 64 "longer than an IPv4 address")
      expect(ps.map((p) => `${p.code} ${p.path}: ${p.fix}`).join('\n')).not.toMatch(/prefix-too-long|family-mismatch/);
    });
  });

  test('fails on a malformed CIDR and a reversed range', () => {
    expectProblem(mutate(baseFleet(), (d) => { d.spec.clusters[0].migrationNetwork = { cidr: '10.300.0.0/24' }; }),
      'spec.clusters[0].migrationNetwork.cidr', /not a CIDR/);
    const p = expectProblem(mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses.pool = ['192.168.50.20-192.168.50.10']; }),
      'spec.crossClusterNetwork.addresses.pool[0]', /starts after it ends/);
    expect(p.fix).toContain('192.168.50.10-192.168.50.20');
  });

  test.each([0, 4095, 5000])('fails on VLAN %i outside 1-4094', (vlan) => {
    expectProblem(mutate(baseFleet(), (d) => { d.spec.migrationNetwork.attachment.vlan = vlan; }),
      'spec.migrationNetwork.attachment.vlan', /1-4094/);
  });

  test('fails on exclusions outside the pool', () => {
    expectProblem(mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses.exclude = ['192.168.51.1']; }),
      'spec.crossClusterNetwork.addresses.exclude[0]', /not inside the pool/);
  });

  test('finds overlapping exclusions in every pair, not only neighbours', () => {
    // [0] and [2] overlap; [1] sits between them and overlaps neither
    const doc = mutate(baseFleet(), (d) => {
      d.spec.crossClusterNetwork.addresses.exclude = ['192.168.50.10-192.168.50.20', '192.168.50.100', '192.168.50.16/30'];
    });
    const p = expectProblem(doc, 'spec.crossClusterNetwork.addresses.exclude[2]', /overlaps spec.crossClusterNetwork.addresses.exclude\[0\]/);
    expect(p.fix).toMatch(/merge/);
    expect(problemsOf(doc).filter((x) => /exclude\[1\]/.test(x.path))).toEqual([]);
  });

  test('fails when the pool is too small, with the numbers of the formula', () => {
    // 3 clusters x 2 replicas = 6 needed; pool of 8 addresses (/29) minus network+broadcast of the /24 does not apply
    // here (pool inside the /24 but not at its edges), minus 3 excluded = 5 usable
    const doc = mutate(baseFleet(), (d) => {
      d.spec.crossClusterNetwork.addresses = { pool: ['192.168.50.8/29'], exclude: ['192.168.50.9', '192.168.50.10', '192.168.50.11'], prefixLength: 24 };
      d.spec.clusters.push({ name: 'c', nodes: 2 });
    });
    const p = expectProblem(doc, 'spec.crossClusterNetwork.addresses.pool', /pool too small: needed 6 \(gateway: 3 clusters x replicas = 6\), usable 5 = 8 in pool - 3 excluded - 0 network\/broadcast/);
    expect(p.fix).toMatch(/add 1 more address/);
  });

  test('counts network, broadcast and the router against the pool', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.crossClusterNetwork.addresses = { pool: ['10.9.0.0/29'], prefixLength: 29, gateway: '10.9.0.1' };
      d.spec.clusters = [{ name: 'a', nodes: 1 }, { name: 'b', nodes: 1 }, { name: 'c', nodes: 1 }];
    });
    // 8 - network - broadcast - router = 5 usable, 6 needed
    expectProblem(doc, 'spec.crossClusterNetwork.addresses.pool', /needed 6 .* usable 5 = 8 in pool - 0 excluded - 3 network\/broadcast\/router/);
  });

  test('direct mode needs (nodes + sync controllers + surge) per cluster and suggests gateway mode', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.datapath = 'direct';
      d.spec.crossClusterNetwork.addresses = { pool: ['192.168.50.0/27'], prefixLength: 24 };
      d.spec.clusters = [{ name: 'a', nodes: 10 }, { name: 'b', nodes: 10 }];
      d.spec.trust = { enabled: false }; // the handlers' formula alone (trust agents: test/trust-agent.test.ts)
    });
    expect(problemsOf(doc)).toEqual([]);
    // 32 addresses, .0 is the /24 network address -> 31 usable, 2 x (10 + 2 + 2) = 28 fits: so make it smaller
    const small = mutate(doc, (d) => { d.spec.crossClusterNetwork.addresses.pool = ['192.168.50.0/28']; });
    const q = expectProblem(small, 'spec.crossClusterNetwork.addresses.pool', /needed 28 \(direct: .* = 28\), usable 15/);
    expect(q.fix).toMatch(/datapath: gateway/);
  });

  test('fails on per-cluster CIDRs overlapping each other, the pool, pod and service CIDRs', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.clusters = [
        { name: 'a', nodes: 3, migrationNetwork: { cidr: '10.1.0.0/24' } },
        { name: 'b', nodes: 3, migrationNetwork: { cidr: '10.1.0.128/25' } },
        { name: 'c', nodes: 3, migrationNetwork: { cidr: '192.168.50.0/25' } },
        { name: 'd', nodes: 3, migrationNetwork: { cidr: '10.2.0.0/24' }, podCidrs: ['10.2.0.0/16'] },
        { name: 'e', nodes: 3, migrationNetwork: { cidr: '10.3.0.0/24' }, serviceCidrs: ['10.3.0.0/23'] },
      ];
    });
    const ps = problemsOf(doc);
    expect(ps.some((p) => p.path === 'spec.clusters[1].migrationNetwork.cidr' && /overlaps cluster a migration CIDR 10.1.0.0\/24/.test(p.message))).toBe(true);
    expect(ps.some((p) => p.path === 'spec.clusters[2].migrationNetwork.cidr' && /overlaps the cross-cluster pool/.test(p.message))).toBe(true);
    expect(ps.some((p) => p.path === 'spec.clusters[3].migrationNetwork.cidr' && /pod CIDR 10.2.0.0\/16/.test(p.message))).toBe(true);
    expect(ps.some((p) => p.path === 'spec.clusters[4].migrationNetwork.cidr' && /service CIDR 10.3.0.0\/23/.test(p.message))).toBe(true);
  });

  test('fails when an in-cluster CIDR cannot hold nodes + sync controllers + gateways + VIP + surge', () => {
    const doc = mutate(baseFleet(), (d) => { d.spec.clusters[0] = { name: 'a', nodes: 8, migrationNetwork: { cidr: '10.7.0.0/28' } }; });
    // /28 = 14 usable hosts; needed 8 + 2 + 2 + 1 + 2 = 15
    const p = expectProblem(doc, 'spec.clusters[0].migrationNetwork.cidr', /too small for cluster a: needed 15 = 8 nodes \+ 2 sync controllers \+ 2 gateways \+ 1 gateway VIP \+ 2 rollout surge, usable 14/);
    expect(p.fix).toMatch(/\/27/);
    // without failover the same cluster fits: the VIP is the one address that tipped it
    expect(problemsOf(mutate(doc, (d) => { d.spec.gateway = { failover: { mode: 'none' } }; }))).toEqual([]);
  });

  test('fails on duplicate and non-DNS-1123 cluster names', () => {
    const ps = problemsOf(mutate(baseFleet(), (d) => { d.spec.clusters = [{ name: 'a', nodes: 1 }, { name: 'a', nodes: 1 }, { name: 'Bad_Name', nodes: 1 }]; }));
    expect(ps.some((p) => p.path === 'spec.clusters[2].name' && /DNS-1123/.test(p.message))).toBe(true);
    const dup = problemsOf(mutate(baseFleet(), (d) => { d.spec.clusters = [{ name: 'a', nodes: 1 }, { name: 'a', nodes: 1 }]; }));
    expect(dup.some((p) => p.path === 'spec.clusters[1].name' && /also the name of spec.clusters\[0\]/.test(p.message))).toBe(true);
  });

  test('fails on NAD names and interface names over their length limits', () => {
    const ps = problemsOf(mutate(baseFleet(), (d) => {
      d.spec.crossClusterNetwork.name = 'x'.repeat(64);
      d.spec.migrationNetwork.attachment.bridge = 'br-migration-net0';
    }));
    expect(ps.some((p) => p.path === 'spec.crossClusterNetwork.name' && /63 characters/.test(p.message))).toBe(true);
    expect(ps.some((p) => p.path === 'spec.migrationNetwork.attachment.bridge' && /15 characters/.test(p.message))).toBe(true);
  });

  test('fails on an MTU out of range, and under 1280 on IPv6', () => {
    expectProblem(mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.attachment.mtu = 10000; }), 'spec.crossClusterNetwork.attachment.mtu', /at most 9216/);
    expectProblem(mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.attachment.mtu = 500; }), 'spec.crossClusterNetwork.attachment.mtu', /at least 576/);
    const v6 = mutate(baseFleet(), (d) => {
      d.spec.crossClusterNetwork.addresses = { pool: ['fd00::/120'], prefixLength: 64 };
      d.spec.crossClusterNetwork.attachment.mtu = 1000;
      d.spec.migrationNetwork.supernet = 'fd00:1::/48';
    });
    expectProblem(v6, 'spec.crossClusterNetwork.attachment.mtu', /IPv6 minimum MTU of 1280/);
  });

  test('fails on native mode for a KubeVirt version without the cross-cluster proxy fields', () => {
    const doc = mutate(baseFleet(), (d) => { d.spec.datapath = 'native'; d.spec.kubevirt = { version: '1.9.0' }; });
    const p = expectProblem(doc, 'spec.datapath', /native datapath needs .* KubeVirt 1.9.0 \(cluster a\) does not have: they exist only in the open kubevirt\/kubevirt PR #17922/);
    expect(p.fix).toMatch(/1.9.0\+pr17922/);
    expect(problemsOf(mutate(doc, (d) => { d.spec.kubevirt.version = '1.9.0+pr17922'; }))).toEqual([]);
    // per-cluster override names the cluster's own field
    const per = mutate(baseFleet(), (d) => { d.spec.clusters[1].datapath = 'native'; });
    expectProblem(per, 'spec.clusters[1].datapath', /cluster b/);
  });

  test('fails on a KubeVirt version without decentralized migration, and on fields the version lacks', () => {
    expectProblem(mutate(baseFleet(), (d) => { d.spec.kubevirt = { version: '1.5' }; }), 'spec.kubevirt.version', /no decentralized live migration/);
    expectProblem(mutate(baseFleet(), (d) => { d.spec.kubevirt = { version: '1.8' }; d.spec.migrationPolicy = { maxDowntimeMs: 300 }; }),
      'spec.migrationPolicy.maxDowntimeMs', /KubeVirt 1.8 .* has no migrations.maxDowntimeMs \(added in v1.9\)/);
  });

  test('reports unknown fields with their path', () => {
    expectProblem(mutate(baseFleet(), (d) => { d.spec.clusters[1].nodez = 3; }), 'spec.clusters[1]', /unknown field 'nodez'/);
  });

  test('reports every problem at once, not only the first', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.migrationNetwork.supernet = '10.200.1.0/16';
      d.spec.crossClusterNetwork.addresses.exclude = ['10.0.0.1'];
      d.spec.clusters.push({ name: 'a', nodes: 1 });
    });
    const ps = problemsOf(doc);
    expect(ps.map((p) => p.path).sort()).toEqual([
      'spec.clusters[2].name', 'spec.crossClusterNetwork.addresses.exclude[0]', 'spec.migrationNetwork.supernet',
    ]);
  });

  test('a YAML file that does not parse names line and column', () => {
    const text = 'apiVersion: migrationmesh.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: x\nspec:\n  clusters: [ {name: a, nodes: 1}\n  datapath: gateway\n';
    try {
      parseFleetText(text, 'bad.yaml');
      throw new Error('should have failed');
    } catch (e) {
      expect(e).toBeInstanceOf(FleetValidationError);
      expect((e as Error).message).toMatch(/^bad.yaml: fleet is invalid/);
      expect((e as FleetValidationError).problems[0].path).toMatch(/^line \d+, column \d+$/);
    }
  });

  test('error messages carry path, problem and fix in the rendered text', () => {
    try {
      resolveFleet(parseFleetDocument(mutate(baseFleet(), (d) => { d.spec.migrationNetwork.supernet = '10.200.3.0/16'; })));
      throw new Error('should have failed');
    } catch (e) {
      expect((e as Error).message).toContain("spec.migrationNetwork.supernet: '10.200.3.0/16' has host bits set\n    fix: use the masked network address '10.200.0.0/16'");
    }
  });
});
