/**
 * VM networks in their second week (issue 50): what the ledger assigned to a network (its split, slots and
 * mobile addresses) outlives the network's declaration, exactly as cluster addresses do; a network or a
 * cluster removed and restored comes back on the same slices, every ClusterUserDefinedNetwork byte for byte.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse, stringify } from 'yaml';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { parseFleetDocument, ledgerPathFor } from '../src/fleet/load';
import { Ledger, parseLedger, serializeLedger } from '../src/addressing/ledger';
import { runCli } from './support/fleets';
import { suiteTmpDir } from './support/tmp';

const FLEET = path.resolve(__dirname, '..', 'examples', 'vm-networks.fleet.yaml');
const rawFleet = (): any => parse(fs.readFileSync(FLEET, 'utf8'));

/** The example on five clusters (the trial's fleet). */
function fiveClusters(): any {
  const f = rawFleet();
  f.spec.vmNetworks[1].allocation.slots = 8;
  ['par-1', 'lon-1', 'mad-1'].forEach((c, i) => {
    f.spec.clusters.push({ name: c, nodes: 3, ovnKubernetes: { version: 'v1.3.0', ipamExtensions: true } });
    f.spec.vmNetworks[0].clusters[c] = { vtepCidrs: [`203.0.113.${i * 64}/26`] };
  });
  return f;
}

/** Synth against `ledger` (as committed: serialized and read back); the CUDNs' YAML per cluster, and the next ledger. */
function synth(raw: any, ledger?: Ledger): { cudns: Map<string, string>; ledger: Ledger; changes: string[] } {
  const r = synthesizeFleet(parseFleetDocument(raw), { ledger: ledger ? parseLedger(serializeLedger(ledger)) : undefined });
  const cudns = new Map<string, string>();
  for (const [c, objs] of r.objects) {
    for (const o of objs as any[]) if (o.kind === 'ClusterUserDefinedNetwork') cudns.set(`${c}/${o.metadata.name}`, stringify(o));
  }
  return { cudns, ledger: r.ledger, changes: r.changes.map((x) => `${x.cluster}.${x.field}`) };
}

describe('remove and restore (issue 50 item 1)', () => {
  const first = synth(fiveClusters());

  test('a network removed keeps its split, slots and mobile addresses in the ledger; restored, every CUDN is byte-identical', () => {
    const removed = fiveClusters();
    removed.spec.vmNetworks = removed.spec.vmNetworks.filter((n: any) => n.name !== 'blue');
    removed.spec.forklift.moves = [];
    removed.spec.vmNetworkDeletions = [{ network: 'blue' }];
    const mid = synth(removed, first.ledger);
    expect(mid.ledger.vmNetworks!.blue).toEqual(first.ledger.vmNetworks!.blue);
    expect([...mid.cudns.keys()].filter((k) => k.endsWith('/blue'))).toEqual([]);
    // a cluster added while the network is gone does not take a slot the ledger still holds for it
    const back = synth(fiveClusters(), mid.ledger);
    expect(back.cudns).toEqual(first.cudns);
    expect(back.ledger.vmNetworks).toEqual(first.ledger.vmNetworks);
  });

  test('a cluster removed and restored: every CUDN of every cluster byte-identical', () => {
    const removed = fiveClusters();
    removed.spec.clusters = removed.spec.clusters.filter((c: any) => c.name !== 'par-1');
    delete removed.spec.vmNetworks[0].clusters['par-1'];
    const mid = synth(removed, first.ledger);
    expect(mid.ledger.vmNetworks!.blue.clusters!['par-1']).toEqual(first.ledger.vmNetworks!.blue.clusters!['par-1']);
    const back = synth(fiveClusters(), mid.ledger);
    expect(back.cudns).toEqual(first.cudns);
  });
});

describe('reclaim --vm-network: the only way the ledger gives up a network, a slot or a mobile address', () => {
  const dir = suiteTmpDir('mm-vmnet-reclaim-');
  const fleetFile = path.join(dir, 'vmnet.fleet.yaml');
  const ledgerFile = ledgerPathFor(fleetFile);
  const first = synth(fiveClusters());
  const write = (raw: any, l: Ledger) => { fs.writeFileSync(fleetFile, stringify(raw)); fs.writeFileSync(ledgerFile, serializeLedger(l)); };
  const without = (): any => {
    const f = fiveClusters();
    f.spec.vmNetworks = f.spec.vmNetworks.filter((n: any) => n.name !== 'blue');
    f.spec.forklift.moves = [];
    f.spec.vmNetworkDeletions = [{ network: 'blue' }];
    return f;
  };

  test('a declared network, cluster or mobile VM is refused (reclaim/still-declared), the ledger untouched', () => {
    write(fiveClusters(), first.ledger);
    const before = fs.readFileSync(ledgerFile, 'utf8');
    for (const extra of [[], ['--cluster', 'par-1'], ['--vm', 'tenant-blue/web-1']]) {
      const r = runCli(['reclaim', fleetFile, '--vm-network', 'blue', ...extra]);
      expect([r.code, r.err]).toEqual([1, expect.stringMatching(/reclaim\/still-declared|still in spec/)]);
    }
    expect(fs.readFileSync(ledgerFile, 'utf8')).toBe(before);
    expect(runCli(['reclaim', fleetFile, '--vm-network', 'nope']).err).toMatch(/keeps no VM network nope \(it keeps blue, vlan100\)/);
  });

  test('a removed network is released whole; declared again afterwards, it is planned anew', () => {
    write(without(), first.ledger);
    const r = runCli(['reclaim', fleetFile, '--vm-network', 'blue']);
    expect([r.code, r.err]).toEqual([0, '']);
    expect(r.out).toMatch(/released[^]*vmNetworks\.blue: topology=Layer2/);
    expect(Object.keys(parseLedger(fs.readFileSync(ledgerFile, 'utf8')).vmNetworks!)).toEqual(['vlan100']);
  });

  test('a mobile VM that left mobileVms: its address is released alone', () => {
    const f = fiveClusters();
    f.spec.vmNetworks[0].mobileVms = ['tenant-blue/web-1'];
    write(f, first.ledger);
    expect(runCli(['reclaim', fleetFile, '--vm-network', 'blue', '--vm', 'tenant-blue/db-1']).code).toBe(0);
    const l = parseLedger(fs.readFileSync(ledgerFile, 'utf8')).vmNetworks!.blue;
    expect(Object.keys(l.vms!)).toEqual(['tenant-blue/web-1']);
    expect(l.clusters).toEqual(first.ledger.vmNetworks!.blue.clusters);
  });
});

describe('immutability judged on what the upstream object would become (issue 50 item 4, issue 53)', () => {
  const first = synth(fiveClusters());
  const withSlots = (slots: number, slicePrefix?: number) => {
    const f = fiveClusters();
    f.spec.vmNetworks[0].allocation = { slots, ...(slicePrefix ? { slicePrefix: { ipv4: slicePrefix, ipv6: 68 } } : {}) };
    return f;
  };

  test('growing slots 8 -> 12 on a /16 keeps the /20 slices: accepted, every CUDN byte-identical, the split grows in the ledger', () => {
    const r = synth(withSlots(12), first.ledger);
    expect(r.cudns).toEqual(first.cudns);
    expect(r.ledger.vmNetworks!.blue.subnets![0].slices).toHaveLength(12);
    expect(r.ledger.vmNetworks!.blue.subnets![0].slices.slice(0, 8)).toEqual(first.ledger.vmNetworks!.blue.subnets![0].slices);
    expect(r.changes).toContain('vmNetworks.blue.subnets');
  });

  test('slots that change the slices (8 -> 16: /21) are refused, naming each cluster\'s reservedSubnets before and after', () => {
    expect(() => synth(withSlots(16), first.ledger)).toThrow(/vmnet-immutable-change\] spec\.vmNetworks\[0\]\.allocation: [^\n]*5 clusters \(reservedSubnets: ams-1: \["10\.50\.16\.0\/20"[^\n]*; and 3 more\)/);
  });

  test('shrinking below a held slot is refused on the slot', () => {
    expect(() => synth(withSlots(4, 20), first.ledger)).toThrow(/allocation\.slots: cluster mad-1 holds slot 4 of blue; the fleet's allocation now has 4 slots/);
  });

  test('the EVPN VNI has no CEL immutability upstream: a change goes, and the ledger records the new value', () => {
    const f = fiveClusters();
    f.spec.vmNetworks[0].reach.vni = 5002;
    const r = synth(f, first.ledger);
    expect(r.ledger.vmNetworks!.blue.created).toMatch(/ vni=5002 /);
    expect(r.changes).toContain('vmNetworks.blue.created');
  });
});

describe('an edit that would delete what VMs run on is refused unless the fleet says so (issue 50 item 2)', () => {
  const first = synth(fiveClusters());

  test('removing a network: vmnet-would-delete naming the clusters and the way out; with vmNetworkDeletions it goes', () => {
    const f = fiveClusters();
    f.spec.vmNetworks = f.spec.vmNetworks.filter((n: any) => n.name !== 'vlan100');
    expect(() => synth(f, first.ledger)).toThrow(/\[vmnet-would-delete\] spec\.vmNetworks: VM network vlan100 is gone from spec\.vmNetworks, but ams-1, fra-1, lon-1, mad-1, par-1 serve it[^]*fix: declare it again[^]*spec\.vmNetworkDeletions/);
    f.spec.vmNetworkDeletions = [{ network: 'vlan100' }];
    expect([...synth(f, first.ledger).cudns.keys()].filter((k) => k.endsWith('/vlan100'))).toEqual([]);
  });

  test('served: false on a cluster that serves: refused on that cluster; allowed for it by a deletion naming it; the slot stays', () => {
    const f = fiveClusters();
    f.spec.vmNetworks[1].clusters = { 'lon-1': { served: false } };
    expect(() => synth(f, first.ledger)).toThrow(/\[vmnet-would-delete\] spec\.vmNetworks\[1\]\.clusters\.lon-1\.served: cluster lon-1 serves VM network vlan100/);
    f.spec.vmNetworkDeletions = [{ network: 'vlan100', clusters: ['par-1'] }];
    expect(() => synth(f, first.ledger)).toThrow(/vmnet-would-delete/);
    f.spec.vmNetworkDeletions = [{ network: 'vlan100', clusters: ['lon-1'] }];
    const r = synth(f, first.ledger);
    expect(r.cudns.has('lon-1/vlan100')).toBe(false);
    expect(r.ledger.vmNetworks!.vlan100.clusters!['lon-1']).toEqual({ slot: first.ledger.vmNetworks!.vlan100.clusters!['lon-1'].slot, vlan: 100, served: false });
    // planned again against its own ledger: nothing more to allow, nothing refused
    delete f.spec.vmNetworkDeletions;
    expect(synth(f, r.ledger).changes).toEqual([]);
  });

  test('a cluster that never served (served: false from the start) is never refused', () => {
    const f = fiveClusters();
    f.spec.vmNetworks[1].clusters = { 'mad-1': { served: false } };
    const a = synth(f);
    expect(synth(f, a.ledger).changes).toEqual([]);
  });
});

test('every object VMs may run on carries both engines\' prune guards, and every VM-network object our managed-by label', () => {
  const r = synthesizeFleet(parseFleetDocument(fiveClusters()), {});
  const runOn = new Set(['ClusterUserDefinedNetwork', 'NodeNetworkConfigurationPolicy', 'ValidatingAdmissionPolicy', 'ValidatingAdmissionPolicyBinding']);
  let guarded = 0;
  for (const objs of r.objects.values()) {
    for (const o of objs as any[]) {
      const vmnet = runOn.has(o.kind) && /^(mm-|migration-mesh-(moved|served)|blue$|vlan100$)/.test(o.metadata.name);
      if (vmnet) {
        guarded++;
        expect([o.kind, o.metadata.annotations]).toEqual([o.kind, expect.objectContaining({ 'argocd.argoproj.io/sync-options': 'Prune=false,Delete=false', 'kustomize.toolkit.fluxcd.io/prune': 'disabled' })]);
      }
      if (vmnet || o.metadata.name === 'migration-mesh-pin-addresses') expect([o.kind, o.metadata.labels?.['app.kubernetes.io/managed-by']]).toEqual([o.kind, 'migration-mesh']);
    }
  }
  expect(guarded).toBe(5 * 7); // per cluster: 2 CUDNs, 1 NNCP, the moved-VM and served-namespace policies and bindings
});

describe('diff sees every ledger change synth would make, VM networks included (issue 50 item 3)', () => {
  const dir = suiteTmpDir('mm-vmnet-diff-');
  const first = synth(fiveClusters());
  const files = (after: any): [string, string] => {
    const a = path.join(dir, 'old', 'vmnet.fleet.yaml');
    const b = path.join(dir, 'new', 'vmnet.fleet.yaml');
    for (const [f, raw] of [[a, fiveClusters()], [b, after]] as const) {
      fs.mkdirSync(path.dirname(f), { recursive: true });
      fs.writeFileSync(f, stringify(raw));
    }
    fs.writeFileSync(ledgerPathFor(a), serializeLedger(first.ledger));
    fs.writeFileSync(ledgerPathFor(b), serializeLedger(first.ledger));
    return [a, b];
  };

  test('adding a mobile VM: the new address in the text and the JSON, exit 1 (validate --frozen refuses the same change)', () => {
    const f = fiveClusters();
    f.spec.vmNetworks[0].mobileVms.push('tenant-blue/api-1');
    const [a, b] = files(f);
    const t = runCli(['diff', a, b]);
    expect([t.code, t.out]).toEqual([1, expect.stringMatching(/vmNetworks\.blue\.vms\.tenant-blue\/api-1: \+ 10\.50\.240\.2,fd50::f000:0:0:2/)]);
    const j = runCli(['diff', a, b, '--output', 'json']);
    expect(j.code).toBe(1);
    expect(JSON.stringify(JSON.parse(j.out))).toMatch(/"field":"vms\.tenant-blue\/api-1"[^}]*"to":"10\.50\.240\.2,fd50::f000:0:0:2"/);
    expect(runCli(['validate', b, '--frozen']).code).toBe(1);
  });

  test('adding a cluster: its slot and slice of each network under the cluster', () => {
    const f = fiveClusters();
    f.spec.clusters.push({ name: 'waw-1', nodes: 3, ovnKubernetes: { version: 'v1.3.0', ipamExtensions: true } });
    f.spec.vmNetworks[0].clusters['waw-1'] = { vtepCidrs: ['203.0.113.192/26'] };
    const [a, b] = files(f);
    const t = runCli(['diff', a, b]);
    expect(t.code).toBe(1);
    expect(t.out).toMatch(/waw-1[^]*vmNetworks\.blue: \+ slot 5 \(slice 10\.50\.96\.0\/20, fd50::6000:0:0:0\/68\)/);
    expect(t.out).toMatch(/vmNetworks\.vlan100: \+ slot 5 \(slice 192\.168\.100\.\d+\/\d+\), vlan 100/);
  });
});

test('a first synth lists every slot and mobile address it planned (issue 50 item 8)', () => {
  const r = synth(fiveClusters());
  expect(r.changes).toEqual(expect.arrayContaining(['vmNetworks.blue.created', 'fra-1.vmNetworks.blue', 'mad-1.vmNetworks.vlan100', 'vmNetworks.blue.vms.tenant-blue/web-1']));
});

describe('across networks and derived names (issue 50 items 5 and 6)', () => {
  const second = (patch: (n: any) => void) => {
    const f = fiveClusters();
    const n = { ...structuredClone(f.spec.vmNetworks[1]), name: 'vlan200', vlan: 200, namespaces: ['tenant-red'], subnets: ['192.168.200.0/24'], reserved: ['192.168.200.1'] };
    patch(n);
    f.spec.vmNetworks.push(n);
    return f;
  };
  const nncps = (raw: any, cluster: string) => [...synthesizeFleet(parseFleetDocument(raw), {}).objects.get(cluster)!].filter((o: any) => o.kind === 'NodeNetworkConfigurationPolicy') as any[];

  test('one physicalNetworkName mapped to two bridges is refused on the second network\'s field', () => {
    expect(() => synth(second((n) => { n.bridge = { existing: 'br-ex' }; })))
      .toThrow(/\[vmnet-bridge-conflict\] spec\.vmNetworks\[2\]\.bridge: networks vlan100 and vlan200 both use physical network physnet-vms on cluster fra-1/);
    expect(() => synth(second((n) => { n.clusters = { 'ams-1': { bridge: { name: 'br-x', port: 'bond2' } } }; })))
      .toThrow(/\[vmnet-bridge-conflict\] spec\.vmNetworks\[2\]\.clusters\.ams-1\.bridge:[^\n]*on cluster ams-1/);
  });

  test('two networks on one physical network and bridge: one NNCP (the README\'s "once"), named after the first', () => {
    const list = nncps(second(() => undefined), 'fra-1');
    expect(list.map((o) => o.metadata.name)).toEqual(['mm-vlan100-bridge-mapping']);
  });

  test('a localnet name whose NNCP name would not fit the nmstate.io/policy label (63) is refused; 45 characters fit', () => {
    const long = (len: number) => { const f = fiveClusters(); f.spec.vmNetworks[1].name = `v${'x'.repeat(len - 1)}`; f.spec.forklift.moves = []; return f; };
    expect(() => synth(long(50))).toThrow(/\[vmnet-name-too-long\] spec\.vmNetworks\[1\]\.name: [^\n]*would have 68[^\n]*nmstate\.io\/policy label/);
    expect(nncps(long(45), 'fra-1').map((o) => o.metadata.name.length)).toEqual([63]);
  });
});

describe('smaller promises (issue 50 item 8)', () => {
  const refused = (patch: (f: any) => void) => { const f = fiveClusters(); patch(f); try { synth(f); } catch (e) { return (e as Error).message; } return 'accepted'; };

  test('mobileVms: [web-1] (no namespace) is the schema\'s refusal, not a TypeError', () => {
    const m = refused((f) => { f.spec.vmNetworks[0].mobileVms = ['web-1']; });
    expect(m).toMatch(/spec\.vmNetworks\[0\]\.mobileVms\[0\][^\n]*namespace\/name/);
    expect(m).not.toMatch(/Cannot read properties|TypeError/);
  });

  test('a mobile VM in a namespace the network does not serve is refused', () => {
    expect(refused((f) => { f.spec.vmNetworks[0].mobileVms = ['tenant-red/web-9']; }))
      .toMatch(/\[vmnet-mobile-namespace\] spec\.vmNetworks\[0\]\.mobileVms\[0\]: tenant-red\/web-9 is in namespace tenant-red, which network blue does not serve/);
  });

  test('a /29 localnet with 4 slots would make /32 slices of the network and broadcast addresses: refused', () => {
    expect(refused((f) => {
      const v = f.spec.vmNetworks[1];
      v.subnets = ['192.168.100.0/29']; v.reserved = ['192.168.100.3']; v.allocation = { slots: 4 };
      f.spec.clusters = f.spec.clusters.slice(0, 2);
      for (const c of ['par-1', 'lon-1', 'mad-1']) delete f.spec.vmNetworks[0].clusters[c];
    })).toMatch(/\[vmnet-slice-prefix\] spec\.vmNetworks\[1\]\.allocation: slot \d's slice 192\.168\.100\.\d\/32 of 192\.168\.100\.0\/29 holds no address a VM can have/);
  });

  test('the npm pack tarball is git-ignored', () => {
    expect(fs.readFileSync(path.join(__dirname, '..', '.gitignore'), 'utf8').split('\n')).toContain('*.tgz');
  });
});

test('synth --frozen leaves a CRLF ledger byte for byte (issue 50 item 8)', () => {
  const dir = suiteTmpDir('mm-vmnet-crlf-');
  const fleetFile = path.join(dir, 'vmnet.fleet.yaml');
  fs.copyFileSync(FLEET, fleetFile);
  const crlf = fs.readFileSync(ledgerPathFor(FLEET), 'utf8').replace(/\n/g, '\r\n');
  fs.writeFileSync(ledgerPathFor(fleetFile), crlf);
  const r = runCli(['synth', fleetFile, '--frozen', '--out', path.join(dir, 'dist'), '--no-svg']);
  expect([r.code, r.err]).toEqual([0, '']);
  expect(fs.readFileSync(ledgerPathFor(fleetFile), 'utf8')).toBe(crlf);
});

test('plan says how full each mobile slice is, kept addresses included (issue 50 item 8)', () => {
  const r = runCli(['plan', FLEET]);
  expect(r.code).toBe(0);
  expect(r.out).toContain('mobile slice 10.50.240.0/20: 2 of 4095 addresses given');
  expect(r.out).toContain('mobile slice fd50::f000:0:0:0/68: 2 of 1152921504606846976 addresses given');
});
