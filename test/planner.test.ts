import * as fc from 'fast-check';
import * as fs from 'fs';
import * as path from 'path';
import * as YAML from 'yaml';
import { FleetDocument } from '../src/fleet/schema';
import { Ledger, diffLedgers, parseLedger, reclaimReleased, serializeLedger } from '../src/addressing/ledger';
import { planFleet, PlanResult } from '../src/addressing/planner';
import { resolveFleet } from '../src/fleet/resolve';
import { parseFleetDocument } from '../src/fleet/load';
import { parseAddr, parseCidr, containsAddr, parsePoolItem } from '../src/base/ip';
import { baseFleet, mutate } from './support/fleets';

const plan = (doc: FleetDocument | any, ledger?: Ledger): PlanResult => planFleet(resolveFleet(parseFleetDocument(doc)), ledger);
const bare = (s: string): string => s.replace(/\/\d+$/, '');

describe('planner', () => {
  test('VEP 191 capacity: 10 clusters x (10 handlers + 2 sync controllers) = 120 in direct mode vs 20 in gateway mode', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.clusters = Array.from({ length: 10 }, (_, i) => ({ name: `c${i + 1}`, nodes: 10 }));
    });
    const { plan: p } = plan(doc);
    expect(p.capacity.byMode.direct).toBe(120);
    expect(p.capacity.byMode.gateway).toBe(20);
    expect(p.capacity.byMode.directWithSurge).toBe(140);
    expect(p.capacity.needed).toBe(20);
    expect(p.capacity.usable).toBe('254');
    expect(p.capacity.free).toBe('234');
  });

  test('carves per-cluster CIDRs, gives gateways the lowest free addresses and excludes them from whereabouts', () => {
    const { plan: p } = plan(baseFleet());
    const [a, b] = p.clusters;
    expect(a.migrationNetwork.cidr).toBe('10.200.0.0/24');
    expect(b.migrationNetwork.cidr).toBe('10.200.1.0/24');
    expect(a.gateways.map((g) => g.crossCluster)).toEqual(['192.168.50.1/24', '192.168.50.2/24']);
    expect(b.gateways.map((g) => g.crossCluster)).toEqual(['192.168.50.3/24', '192.168.50.4/24']);
    expect(a.gateways.map((g) => g.inCluster)).toEqual(['10.200.0.1/24', '10.200.0.2/24']);
    expect(a.migrationNetwork.ipam).toEqual({
      range: '10.200.0.0/24',
      exclude: ['10.200.0.1/32', '10.200.0.2/32', '10.200.0.3/32'],
      // the supernet aggregates every remote CIDR into one route, via the replicas' VIP (the next free address)
      routes: [{ dst: '10.200.0.0/16', gw: '10.200.0.3' }],
    });
    expect(a.gatewayVip).toBe('10.200.0.3/24');
    expect(a.peers).toEqual([{ cluster: 'b', cidrs: ['10.200.1.0/24'], gateways: [{ host: '192.168.50.3', port: 15443 }, { host: '192.168.50.4', port: 15443 }] }]);
  });

  test('routes each remote CIDR when they are not all inside the supernet, aggregating siblings', () => {
    const doc = mutate(baseFleet(), (d) => {
      delete d.spec.migrationNetwork.supernet;
      d.spec.clusters = [
        { name: 'a', nodes: 3, migrationNetwork: { cidr: '10.1.0.0/24' } },
        { name: 'b', nodes: 3, migrationNetwork: { cidr: '10.2.0.0/25' } },
        { name: 'c', nodes: 3, migrationNetwork: { cidr: '10.2.0.128/25' } },
        { name: 'd', nodes: 3, migrationNetwork: { cidr: '172.20.0.0/24' } },
      ];
    });
    const a = plan(doc).plan.clusters.find((c) => c.name === 'a')!;
    expect(a.migrationNetwork.ipam.routes.map((r) => r.dst)).toEqual(['10.2.0.0/24', '172.20.0.0/24']);
    expect(new Set(a.migrationNetwork.ipam.routes.map((r) => r.gw))).toEqual(new Set(['10.1.0.3']));
  });

  test('direct mode gives each cluster a disjoint slice of the shared pool as one whereabouts range with holes excluded', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.datapath = 'direct';
      d.spec.crossClusterNetwork.addresses = { pool: ['192.168.50.10-192.168.50.29', '192.168.50.64/28'], exclude: ['192.168.50.13'], prefixLength: 24 };
      d.spec.clusters = [{ name: 'a', nodes: 10 }, { name: 'b', nodes: 10 }];
    });
    const { plan: p, ledger } = plan(doc);
    const [a, b] = p.clusters;
    expect(a.migrationNetwork.nadName).toBe('lm-crosscluster');
    // a: 14 addresses = .10-.12, .14-.24; b: .25-.29 and .64-.72
    expect(a.migrationNetwork.ipam).toEqual({ range: '192.168.50.0/24', rangeStart: '192.168.50.10', rangeEnd: '192.168.50.24', exclude: ['192.168.50.13/32'], routes: [] });
    expect(b.migrationNetwork.ipam.rangeStart).toBe('192.168.50.25');
    expect(b.migrationNetwork.ipam.rangeEnd).toBe('192.168.50.72');
    expect(b.migrationNetwork.ipam.exclude).toEqual(['192.168.50.30/31', '192.168.50.32/27', '192.168.50.64/32'].filter((x) => x !== '192.168.50.64/32'));
    expect(ledger.clusters.b.crossClusterAddresses).toEqual(['192.168.50.25-192.168.50.29', '192.168.50.64-192.168.50.72']);
  });

  test('IPv6: carves /64s from a /56 and assigns gateway addresses from an IPv6 range', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.crossClusterNetwork.addresses = { pool: ['fd00:5::100-fd00:5::1ff'], exclude: ['fd00:5::100/126'], prefixLength: 64 };
      d.spec.migrationNetwork.supernet = 'fd00:200:0:100::/56';
    });
    const { plan: p } = plan(doc);
    expect(p.clusters[0].migrationNetwork.cidr).toBe('fd00:200:0:100::/64');
    expect(p.clusters[1].migrationNetwork.cidr).toBe('fd00:200:0:101::/64');
    expect(p.clusters[0].gateways[0]).toEqual({ replica: 0, inCluster: 'fd00:200:0:100::1/64', crossCluster: 'fd00:5::104/64' });
    expect(p.clusters[0].migrationNetwork.ipam.routes).toEqual([{ dst: 'fd00:200:0:100::/56', gw: 'fd00:200:0:100::3' }]);
  });

  test('a cluster that outgrows its ledger CIDR is refused, not renumbered silently', () => {
    const doc = mutate(baseFleet(), (d) => { d.spec.migrationNetwork.clusterPrefixLength = 28; });
    const first = plan(doc);
    const grown = mutate(doc, (d) => { d.spec.clusters[0].nodes = 20; });
    expect(() => plan(grown, first.ledger)).toThrow(/cluster a needs 27 in-cluster addresses but its ledger CIDR 10.200.0.0\/28 holds 14; it will not be renumbered silently/);
  });

  test('every committed example ledger re-serializes to its own bytes, which are the yaml package\'s text of it', () => {
    const dir = path.join(__dirname, '..', 'examples');
    const ledgers = fs.readdirSync(dir).filter((f) => f.endsWith('.ledger.yaml'));
    expect(ledgers.length).toBeGreaterThanOrEqual(10);
    for (const f of ledgers) {
      const text = fs.readFileSync(path.join(dir, f), 'utf8');
      const out = serializeLedger(parseLedger(text, f));
      expect({ f, out }).toEqual({ f, out: text });
      // the serializer's own block layout against the package's (what it used before), header aside
      const body = out.replace(/^(#.*\n)+/, '');
      expect({ f, body }).toEqual({ f, body: YAML.stringify(YAML.parse(body), { lineWidth: 0, flow: false }) });
    }
  });

  test('ledger round-trips through YAML and the diff names what moved', () => {
    const first = plan(baseFleet());
    const text = serializeLedger(first.ledger);
    expect(parseLedger(text)).toEqual(first.ledger);
    const second = plan(mutate(baseFleet(), (d) => { d.spec.clusters.push({ name: 'c', nodes: 2 }); }), parseLedger(text));
    expect(second.changes.map((c) => `${c.cluster}.${c.field}`)).toEqual([
      'c.migrationCidr', 'c.gateways[0].inCluster', 'c.gateways[0].crossCluster', 'c.gateways[1].inCluster', 'c.gateways[1].crossCluster', 'c.gatewayVip',
    ]);
    expect(diffLedgers(first.ledger, second.ledger).every((c) => c.from === undefined)).toBe(true);
  });

  test('removing a cluster quarantines its addresses; a new member reuses them only after reclaim (issue #12)', () => {
    const three = mutate(baseFleet(), (d) => { d.spec.clusters = [{ name: 'a', nodes: 1 }, { name: 'b', nodes: 1 }, { name: 'c', nodes: 1 }]; });
    const l1 = plan(three).ledger;
    expect(l1.clusters.b.gateways!.map((g) => g.crossCluster)).toEqual(['192.168.50.3', '192.168.50.4']);
    const withoutB = mutate(three, (d) => { d.spec.clusters = d.spec.clusters.filter((c: any) => c.name !== 'b'); });
    const l2 = plan(withoutB, l1).ledger;
    expect(l2.clusters.b).toBeUndefined();
    expect(l2.clusters.c).toEqual(l1.clusters.c);
    const withD = mutate(withoutB, (d) => { d.spec.clusters.push({ name: 'd', nodes: 1 }); });
    const l3 = plan(withD, l2).ledger;
    expect(l3.clusters.d.gateways!.map((g) => g.crossCluster)).toEqual(['192.168.50.7', '192.168.50.8']);
    expect(l3.clusters.d.migrationCidr).toBe('10.200.3.0/24');
    expect(l3.clusters.a).toEqual(l1.clusters.a);
    expect(l3.clusters.c).toEqual(l1.clusters.c);
    const l3r = plan(withD, reclaimReleased(l2, { clusters: ['b'] }).ledger).ledger;
    expect(l3r.clusters.d.gateways!.map((g) => g.crossCluster)).toEqual(['192.168.50.3', '192.168.50.4']);
    expect(l3r.clusters.d.migrationCidr).toBe('10.200.1.0/24');
  });

  test('adding cluster 11 does not renumber clusters 1-10, even when its name sorts first', () => {
    const ten = mutate(baseFleet(), (d) => { d.spec.clusters = Array.from({ length: 10 }, (_, i) => ({ name: `m${i}`, nodes: 4 })); });
    const l1 = plan(ten).ledger;
    const eleven = mutate(ten, (d) => { d.spec.clusters.push({ name: 'a0', nodes: 4 }); });
    const r = plan(eleven, l1);
    for (const [name, entry] of Object.entries(l1.clusters)) expect(r.ledger.clusters[name]).toEqual(entry);
    expect(r.changes.every((c) => c.cluster === 'a0' && c.from === undefined)).toBe(true);
  });
});

// ---------------- property test ----------------

type Op = { kind: 'add'; nodes: number; replicas: number } | { kind: 'remove'; pick: number } | { kind: 'resize'; pick: number; nodes: number; replicas: number };

const opArb: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('add' as const), nodes: fc.integer({ min: 1, max: 40 }), replicas: fc.integer({ min: 1, max: 3 }) }),
  fc.record({ kind: fc.constant('remove' as const), pick: fc.nat() }),
  fc.record({ kind: fc.constant('resize' as const), pick: fc.nat(), nodes: fc.integer({ min: 1, max: 40 }), replicas: fc.integer({ min: 1, max: 3 }) }),
);

interface Member { name: string; nodes: number; replicas: number; datapath: 'gateway' | 'direct' }

function fleetOf(members: Member[], v6: boolean): FleetDocument {
  return mutate(baseFleet(), (d) => {
    d.spec.crossClusterNetwork.addresses = v6
      ? { pool: ['fd00:9::/120', 'fd00:9::1:0-fd00:9::1:ff'], exclude: ['fd00:9::10/124'], prefixLength: 64 }
      : { pool: ['192.168.0.0/22'], exclude: ['192.168.1.0/26'], prefixLength: 22 };
    d.spec.migrationNetwork.supernet = v6 ? 'fd00:300::/56' : '10.64.0.0/14';
    d.spec.clusters = members.map((m) => ({ name: m.name, nodes: m.nodes, datapath: m.datapath, gateway: { replicas: m.replicas } }));
  });
}

/** Every planned address of every member, by a stable key. */
function addressesOf(l: Ledger): Map<string, string> {
  const out = new Map<string, string>();
  for (const [name, c] of Object.entries(l.clusters)) {
    if (c.migrationCidr) out.set(`${name}/cidr`, c.migrationCidr);
    (c.gateways ?? []).forEach((g, i) => { out.set(`${name}/gw${i}/in`, g.inCluster); out.set(`${name}/gw${i}/cross`, g.crossCluster); });
    (c.crossClusterAddresses ?? []).forEach((r, i) => out.set(`${name}/slice${i}`, r));
    if (c.gatewayVip) out.set(`${name}/vip`, c.gatewayVip);
  }
  return out;
}

test.each([false, true])('property: for random add/remove/resize sequences no surviving member moves and no address is given twice (IPv6: %s)', (v6) => {
  fc.assert(fc.property(
    fc.array(opArb, { minLength: 1, maxLength: 40 }),
    fc.array(fc.boolean(), { minLength: 40, maxLength: 40 }),
    (ops, directFlags) => {
      let members: Member[] = [];
      let ledger: Ledger | undefined;
      let counter = 0;
      for (const op of ops) {
        const before = members.map((m) => ({ ...m }));
        if (op.kind === 'add') members.push({ name: `k${counter++}`, nodes: op.nodes, replicas: op.replicas, datapath: directFlags[counter % 40] ? 'direct' : 'gateway' });
        else if (members.length && op.kind === 'remove') members.splice(op.pick % members.length, 1);
        else if (members.length && op.kind === 'resize') Object.assign(members[op.pick % members.length], { nodes: op.nodes, replicas: op.replicas });
        if (members.length === 0) { ledger = undefined; continue; }
        let r: PlanResult;
        try {
          r = plan(fleetOf(members, v6), ledger);
        } catch (e) {
          // a change the pool cannot hold is refused as a whole; the fleet and ledger stay as they were
          expect((e as Error).message).toMatch(/pool too small|no free|needs \d+ in-cluster addresses/);
          members = before;
          continue;
        }
        const prev = ledger ? addressesOf(ledger) : new Map<string, string>();
        const next = addressesOf(r.ledger);
        // 1. survivors keep every address they still need
        for (const m of members) {
          const old = before.find((b) => b.name === m.name);
          if (!old || !ledger) continue;
          if (ledger.clusters[m.name]?.migrationCidr) expect(next.get(`${m.name}/cidr`)).toBe(ledger.clusters[m.name].migrationCidr);
          if (m.datapath === 'direct' && old.datapath === 'direct') {
            const was = new Set(expandSlice(ledger.clusters[m.name]?.crossClusterAddresses ?? []));
            const now = new Set(expandSlice(r.ledger.clusters[m.name].crossClusterAddresses ?? []));
            const [small, big] = now.size >= was.size ? [was, now] : [now, was];
            for (const a of small) expect(big.has(a)).toBe(true);
          }
          // the VIP stays while the member keeps 2+ replicas (and a CIDR to hold it)
          if (m.datapath === 'gateway' && old.datapath === 'gateway' && m.replicas > 1 && prev.has(`${m.name}/vip`)) expect(next.get(`${m.name}/vip`)).toBe(prev.get(`${m.name}/vip`));
          for (let i = 0; i < Math.min(old.replicas, m.replicas); i++) {
            if (m.datapath === 'gateway' && prev.has(`${m.name}/gw${i}/cross`)) {
              expect(next.get(`${m.name}/gw${i}/cross`)).toBe(prev.get(`${m.name}/gw${i}/cross`));
              expect(next.get(`${m.name}/gw${i}/in`)).toBe(prev.get(`${m.name}/gw${i}/in`));
            }
          }
        }
        // 2. nothing is given twice: cross-cluster addresses unique fleet-wide, CIDRs disjoint
        const crossSeen = new Set<string>();
        for (const c of r.plan.clusters) {
          const addrs = c.datapath === 'gateway'
            ? c.gateways.map((g) => bare(g.crossCluster))
            : expandSlice(r.ledger.clusters[c.name].crossClusterAddresses ?? []);
          for (const a of addrs) { expect(crossSeen.has(a)).toBe(false); crossSeen.add(a); }
          if (c.datapath === 'gateway') {
            const cidr = parseCidr(c.migrationNetwork.cidr!);
            if (!cidr.ok) throw new Error('bad cidr');
            for (const g of c.gateways) expect(containsAddr(cidr.cidr, parseAddr(bare(g.inCluster))!)).toBe(true);
            // replicas and the VIP: distinct in-cluster addresses, the VIP exactly when 2+ replicas
            const inAddrs = [...c.gateways.map((g) => bare(g.inCluster)), ...(c.gatewayVip ? [bare(c.gatewayVip)] : [])];
            expect(new Set(inAddrs).size).toBe(inAddrs.length);
            expect(c.gatewayVip !== undefined).toBe(c.gateways.length > 1);
            if (c.gatewayVip) {
              expect(containsAddr(cidr.cidr, parseAddr(bare(c.gatewayVip))!)).toBe(true);
              const gws = c.migrationNetwork.ipam.routes.map((rt) => rt.gw);
              expect(new Set(gws)).toEqual(new Set(gws.length ? [bare(c.gatewayVip)] : []));
            }
          }
        }
        const cidrs = r.plan.clusters.filter((c) => c.migrationNetwork.cidr).map((c) => c.migrationNetwork.cidr!);
        expect(new Set(cidrs).size).toBe(cidrs.length);
        ledger = r.ledger;
      }
    },
  ), { numRuns: 60, seed: v6 ? 4242 : 1717 });
});

function expandSlice(items: string[]): string[] {
  const out: string[] = [];
  for (const it of items) {
    const r = parsePoolItem(it);
    if (!r.ok) throw new Error(`ledger slice item ${it} does not parse`);
    for (let v = r.interval.start; v <= r.interval.end; v++) out.push(`${r.interval.family}:${v}`);
  }
  return out;
}
