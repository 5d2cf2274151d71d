/**
 * Fleets across sites (issue #24): each site its own subnet and router; every shared-network attachment
 * carries routes to the other sites via its own site's router (on-link), addresses come from the site's
 * pool, and the validator refuses what the kernel or the network would.
 */
import { FleetProblem, FleetValidationError } from '../src/base/errors';
import { planFleet } from '../src/addressing/planner';
import { resolveFleet } from '../src/fleet/resolve';
import { parseFleetDocument } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { planReport } from '../src/report/plan-report';
import { renderFleetSvg } from '../src/report/fleet-svg';
import { baseFleet, mutate, problemsOf, runCli } from './support/fleets';
import { inCidr4 } from './support/netns';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import * as YAML from 'yaml';

/** Two sites: fra (2 gateway clusters, untagged br-xc) and ams (one direct, one native cluster, VLAN 20 on br-ams). */
function twoSites(): any {
  return mutate(baseFleet(), (d) => {
    d.spec.crossClusterNetwork = {
      attachment: { type: 'bridge', bridge: 'br-xc', mtu: 1500 },
      sites: [
        { name: 'fra', pool: ['10.10.1.10-10.10.1.40'], prefixLength: 24, router: '10.10.1.1' },
        { name: 'ams', pool: ['10.10.2.10-10.10.2.60'], prefixLength: 24, router: '10.10.2.1', attachment: { type: 'bridge', bridge: 'br-ams', vlan: 20 }, mtu: 1500 },
      ],
    };
    d.spec.clusters = [
      { name: 'fra-1', nodes: 3, site: 'fra' },
      { name: 'fra-2', nodes: 3, site: 'fra' },
      { name: 'ams-1', nodes: 3, site: 'ams', datapath: 'direct' },
      { name: 'ams-2', nodes: 3, site: 'ams', datapath: 'native', kubevirt: { version: '1.9.0+pr17922' } },
    ];
  });
}

const planOf = (doc: unknown) => planFleet(resolveFleet(parseFleetDocument(doc)));
const cluster = (plan: ReturnType<typeof planOf>, name: string) => plan.plan.clusters.find((c) => c.name === name)!;
const codes = (ps: FleetProblem[]) => ps.map((p) => `${p.code} ${p.path}`);

describe('sites: planning', () => {
  test('every member takes its shared address from its own site\'s pool, with its site\'s prefix', () => {
    const r = planOf(twoSites());
    for (const c of ['fra-1', 'fra-2']) for (const g of cluster(r, c).gateways) expect(inCidr4(g.crossCluster.split('/')[0], '10.10.1.0/24')).toBe(true);
    const direct = cluster(r, 'ams-1').migrationNetwork.ipam;
    expect({ range: direct.range, start: direct.rangeStart }).toEqual({ range: '10.10.2.0/24', start: '10.10.2.10' });
    expect(cluster(r, 'ams-2').crossClusterSync!.ipam.range).toBe('10.10.2.0/24');
    expect(r.ledger.clusters['ams-1'].crossClusterAddresses).toEqual(['10.10.2.10-10.10.2.16']);
  });

  test('routes to the other sites go via the own site\'s router, which is on-link; gateway mode routes only on the gateways, direct and native on the handlers\' / sync controllers\' NAD', () => {
    const r = planOf(twoSites());
    expect(cluster(r, 'fra-1').site.routes).toEqual([{ dst: '10.10.2.0/24', gw: '10.10.1.1' }]);
    expect(cluster(r, 'ams-1').site.routes).toEqual([{ dst: '10.10.1.0/24', gw: '10.10.2.1' }]);
    // direct: virt-handler's migration NAD is on the shared network and carries the route
    expect(cluster(r, 'ams-1').migrationNetwork.ipam.routes).toEqual([{ dst: '10.10.1.0/24', gw: '10.10.2.1' }]);
    // native: the sync controllers' shared NAD carries it; the in-cluster NAD has none
    expect(cluster(r, 'ams-2').crossClusterSync!.ipam.routes).toEqual([{ dst: '10.10.1.0/24', gw: '10.10.2.1' }]);
    expect(cluster(r, 'ams-2').migrationNetwork.ipam.routes).toEqual([]);
    // gateway mode: the handlers' routes are to the other gateway clusters' CIDRs via the local gateway, never to the other site
    for (const rt of cluster(r, 'fra-1').migrationNetwork.ipam.routes) expect(inCidr4(rt.gw, cluster(r, 'fra-1').migrationNetwork.cidr!)).toBe(true);
  });

  test('the synthesized NADs: the gateway\'s static IPAM carries the site route; the ams site\'s attachment (own bridge, VLAN) and MTU', () => {
    const res = synthesizeFleet(twoSites());
    const nads = (c: string) => [...res.files].filter(([f]) => f.startsWith(`${c}/`)).flatMap(([, t]) => YAML.parseAllDocuments(t).map((x) => x.toJS()))
      .filter((o) => o?.kind === 'NetworkAttachmentDefinition').map((o) => ({ ns: o.metadata.namespace, name: o.metadata.name, cfg: JSON.parse(o.spec.config) }));
    const gw = nads('fra-1').find((n) => n.name === 'lm-crosscluster')!;
    expect(gw.cfg).toMatchObject({ type: 'bridge', bridge: 'br-xc', mtu: 1500, ipam: { type: 'static', routes: [{ dst: '10.10.2.0/24', gw: '10.10.1.1' }] } });
    const direct = nads('ams-1').find((n) => n.name === 'lm-crosscluster' && n.ns === 'kubevirt')!;
    expect(direct.cfg).toMatchObject({ type: 'bridge', bridge: 'br-ams', vlan: 20, mtu: 1500, ipam: { type: 'whereabouts', range: '10.10.2.0/24', routes: [{ dst: '10.10.1.0/24', gw: '10.10.2.1' }] } });
    // ams-1 exchanges CAs through a trust agent: its static NAD is on ams's network with ams's route
    const agent = nads('ams-1').find((n) => n.name === 'lm-crosscluster' && n.ns !== 'kubevirt')!;
    expect(agent.cfg).toMatchObject({ bridge: 'br-ams', vlan: 20, ipam: { type: 'static', routes: [{ dst: '10.10.1.0/24', gw: '10.10.2.1' }] } });
    // fra-1's gateway dials ams-1's trust agent at an ams address (reached through the routers)
    const amsPeer = res.plan.clusters.find((c) => c.name === 'fra-1')!.peers.find((x) => x.cluster === 'ams-1')!;
    for (const g of amsPeer.gateways) expect(inCidr4(g.host, '10.10.2.0/24')).toBe(true);
  });

  test('a fleet without sites plans exactly as before: one site, default, with the fleet-wide attachment and routes', () => {
    const doc = mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses.gateway = '192.168.50.1'; d.spec.crossClusterNetwork.addresses.routes = [{ dst: '10.99.0.0/16', gw: '192.168.50.1' }]; });
    const r = planOf(doc);
    expect(r.plan.sites.map((s) => s.name)).toEqual(['default']);
    expect(cluster(r, 'a').site.routes).toEqual([{ dst: '10.99.0.0/16', gw: '192.168.50.1' }]);
    expect(cluster(r, 'a').site.attachment).toEqual(doc.spec.crossClusterNetwork.attachment);
  });

  test('plan prints per site what the network team provides: subnet, router, VLAN, MTU, routes', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-sites-'));
    const file = path.join(dir, 'two.fleet.yaml');
    fs.writeFileSync(file, YAML.stringify(twoSites()));
    const r = runCli(['plan', file, '--ledger', path.join(dir, 'none.ledger.yaml')]);
    fs.rmSync(dir, { recursive: true, force: true });
    expect(r.err).toBe('');
    expect(r.out).toContain('  ams (ams-1, ams-2): subnet 10.10.2.0/24 on bridge br-ams, VLAN 20 tagged on the uplinks');
    expect(r.out).toContain('    - router 10.10.1.1 on 10.10.1.0/24, forwarding to ams 10.10.2.0/24 (via its router 10.10.2.1)');
    expect(r.out).toContain('    - MTU 1500 on the site\'s network');
    expect(r.out).toContain('    - our attachments there carry: 10.10.1.0/24 via 10.10.2.1');
  });
});

describe('sites: the fleet picture', () => {
  test('one bus segment per site with its subnet, VLAN and MTU, each cluster wired to its own site\'s segment, the routers between', () => {
    const r = planReport(planOf(twoSites()).plan);
    expect(r.sites?.map((x) => x.name)).toEqual(['fra', 'ams']);
    const svg = renderFleetSvg(r);
    expect(svg).toContain('site fra: 10.10.1.0/24, MTU 1500');
    expect(svg).toContain('site ams: 10.10.2.0/24, VLAN 20, MTU 1500');
    expect(svg).toMatch(/>10\.10\.1\.1<[\s\S]*>10\.10\.2\.1</);
    // two segments: the wires of fra's clusters end on the first, ams's on the second
    const segs = [...svg.matchAll(/<rect x="(\d+)" y="\d+" width="(\d+)" height="14" rx="7"/g)].map((m) => [Number(m[1]), Number(m[1]) + Number(m[2])]);
    expect(segs).toHaveLength(2);
    const box = (name: string) => Number(svg.match(new RegExp(`<rect x="(\\d+)"[^>]*/>\\n<text x="\\d+" y="\\d+" [^>]*>${name}<`))![1]);
    for (const name of ['fra-1', 'fra-2']) expect(box(name)).toBeGreaterThanOrEqual(segs[0][0]);
    for (const name of ['fra-1', 'fra-2']) expect(box(name)).toBeLessThan(segs[0][1]);
    for (const name of ['ams-1', 'ams-2']) expect(box(name)).toBeGreaterThanOrEqual(segs[1][0]);
    // a fleet without sites: no site labels, one bus
    const plain = renderFleetSvg(planReport(planOf(baseFleet()).plan));
    expect(plain).not.toContain('site ');
    expect(planReport(planOf(baseFleet()).plan).sites).toBeUndefined();
  });
});

describe('sites: validation, every problem at once', () => {
  test('the issue\'s repro: a pool over two subnets with a fleet-wide route is refused, pointing to sites; the route\'s off-link next hop is named', () => {
    const doc = mutate(baseFleet(), (d) => {
      d.spec.crossClusterNetwork.addresses = { pool: ['10.10.1.10-10.10.1.20', '10.10.2.10-10.10.2.20'], prefixLength: 24, routes: [{ dst: '10.10.2.0/24', gw: '10.10.1.1' }, { dst: '10.10.1.0/24', gw: '10.10.3.1' }] };
    });
    const ps = problemsOf(doc);
    const spans = ps.find((p) => p.code === 'pool-spans-subnets')!;
    expect(spans.fix).toContain('spec.crossClusterNetwork.sites');
    expect(codes(ps)).toContain('route-off-link spec.crossClusterNetwork.addresses.routes[1].gw');
    expect(codes(ps)).not.toContain('route-off-link spec.crossClusterNetwork.addresses.routes[0].gw');
  });

  test('an off-link next hop in today\'s single-subnet fleet is refused with the kernel\'s reason', () => {
    const ps = problemsOf(mutate(baseFleet(), (d) => { d.spec.crossClusterNetwork.addresses.routes = [{ dst: '10.99.0.0/16', gw: '192.168.51.1' }]; }));
    expect(ps).toEqual([expect.objectContaining({ code: 'route-off-link', path: 'spec.crossClusterNetwork.addresses.routes[0].gw', message: expect.stringMatching(/Nexthop has invalid gateway/) })]);
  });

  test('router outside its subnet, router in a pool, overlapping sites, a missing router, unknown and empty sites, MTU mismatch: all at once, at each site\'s path', () => {
    const doc = mutate(twoSites(), (d) => {
      const s = d.spec.crossClusterNetwork.sites;
      s[0].router = '10.10.9.1'; // outside fra's /24
      s[1].router = '10.10.1.20'; // inside fra's pool (and outside ams's subnet)
      s[1].mtu = 9000; s[1].attachment.mtu = 9000;
      s.push({ name: 'par', pool: ['10.10.1.200-10.10.1.210'], prefixLength: 24 }); // overlaps fra, no router, no cluster
      d.spec.clusters[3].site = 'lon';
    });
    const ps = problemsOf(doc);
    expect(codes(ps)).toEqual(expect.arrayContaining([
      'router-outside-subnet spec.crossClusterNetwork.sites[0].router',
      'router-outside-subnet spec.crossClusterNetwork.sites[1].router',
      'router-in-pool spec.crossClusterNetwork.sites[1].router',
      'site-overlap spec.crossClusterNetwork.sites[2].pool',
      'site-router-missing spec.crossClusterNetwork.sites[2].router',
      'site-unknown spec.clusters[3].site',
      'site-empty spec.crossClusterNetwork.sites[2]',
      'site-mtu-mismatch spec.crossClusterNetwork.sites[1].mtu',
    ]));
    const mtu = ps.find((p) => p.code === 'site-mtu-mismatch')!;
    expect(mtu.message).toMatch(/the smallest MTU \(1500\) bounds the tunnel/);
    expect(mtu.fix).toContain('spec.crossClusterNetwork.sites[1].mtu: 1500');
  });

  test('a Harvester cluster in a fleet across sites is refused: its setting cannot carry the site routes', () => {
    const doc = mutate(twoSites(), (d) => { d.spec.clusters[2].harvester = { clusterNetwork: 'mig' }; });
    let problems: FleetProblem[] = [];
    try { synthesizeFleet(doc); } catch (e) { problems = [...(e as FleetValidationError).problems]; }
    expect(codes(problems)).toEqual(['harvester-routes-unsupported spec.clusters[2].harvester']);
    expect(problems[0].message).toContain('10.10.1.0/24 via 10.10.2.1');
  });

  test('a site\'s own capacity is checked against its own clusters; a cluster without a site among several, and a site with a fleet that declares none, are refused', () => {
    const small = mutate(twoSites(), (d) => { d.spec.crossClusterNetwork.sites[1].pool = ['10.10.2.10-10.10.2.14']; });
    expect(codes(problemsOf(small))).toEqual(['pool-too-small spec.crossClusterNetwork.sites[1].pool']);
    const noSite = mutate(twoSites(), (d) => { delete d.spec.clusters[0].site; });
    expect(problemsOf(noSite).find((p) => p.code === 'site-unknown')?.message).toMatch(/names no site, and the fleet has 2: fra, ams/);
    const undeclared = mutate(baseFleet(), (d) => { d.spec.clusters[0].site = 'fra'; });
    expect(codes(problemsOf(undeclared))).toEqual(['site-unknown spec.clusters[0].site']);
    const both = mutate(twoSites(), (d) => { d.spec.crossClusterNetwork.addresses = { pool: ['10.10.5.0/24'], prefixLength: 24 }; });
    expect(codes(problemsOf(both))).toContain('shared-network-missing spec.crossClusterNetwork.addresses');
  });
});
