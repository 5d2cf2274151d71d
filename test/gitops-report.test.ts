/**
 * The operator's view: planReport numbers, the aligned table, the SVG picture, and the progress line
 * (silent unless a terminal outside CI).
 */
import { spawnSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { planFleet } from '../src/addressing/planner';
import { createProgress, progressEnabled } from '../cli/progress';
import { planReport, renderPlanTable } from '../src/report/plan-report';
import { resolveFleet } from '../src/fleet/resolve';
import { DETAILED_MAX, GRID_MAX, renderFleetSvg } from '../src/report/fleet-svg';
import { FleetDocument } from '../src/fleet/schema';

const EX = path.join(__dirname, '..', 'examples');
const planOf = (f: string) => {
  const file = path.join(EX, f);
  return planFleet(resolveFleet(loadFleetFile(file)), loadLedgerFile(ledgerPathFor(file))).plan;
};

function bigFleet(n: number): FleetDocument {
  return {
    apiVersion: 'migrationmesh.dev/v1alpha1', kind: 'Fleet', metadata: { name: 'big' },
    spec: {
      crossClusterNetwork: { attachment: { type: 'macvlan', master: 'eth2' }, addresses: { pool: ['10.50.0.0/21'], prefixLength: 21 } },
      migrationNetwork: { attachment: { type: 'bridge', bridge: 'br-mig' }, supernet: '10.128.0.0/12' },
      clusters: Array.from({ length: n }, (_, i) => ({ name: `site-${String(i + 1).padStart(4, '0')}`, nodes: 8 })),
    },
  };
}

describe('planReport', () => {
  test('vep example: 10 gateway clusters, 20 of 35 usable shared addresses, direct would need 140 (120 without surge)', () => {
    const r = planReport(planOf('vep-10-clusters.fleet.yaml'));
    expect(r.totals.sharedNetwork).toEqual({ name: 'lm-crosscluster', prefixLength: 24, pool: 36, excluded: 1, reserved: 0, usable: 35, needed: 20, free: 15 });
    expect(r.totals.wouldNeed).toEqual({ direct: 120, directWithSurge: 140, native: 40, gateway: 20 });
    expect(r.totals.savedVersusDirect).toBe(120);
    expect(r.clusters).toHaveLength(10);
    expect(r.clusters[0]).toEqual({
      cluster: 'c01', mode: 'gateway', delivery: 'kubevirt-cr', nodes: 10, syncControllers: 2,
      inClusterCidr: '10.200.0.0/24', inCluster: { needed: 17, usable: 254, free: 237 },
      gateways: [{ inCluster: '10.200.0.1/24', crossCluster: '192.168.50.10/24' }, { inCluster: '10.200.0.2/24', crossCluster: '192.168.50.11/24' }],
      gatewayVip: '10.200.0.3/24',
      sharedAddresses: 2, directWouldNeed: 14, peers: 9,
      trust: { keptBy: 'gateway', endpoints: ['192.168.50.10', '192.168.50.11'], rotation: 'emitted' },
      // issue #29: plain KubeVirt 1.8 (declared nothing else) reads only the 1.6 row of the capability table
      product: { name: 'kubevirt', version: '1.8.0', rows: [expect.objectContaining({ since: '1.6' })] },
    });
  });

  test('sites example: the pool loses its excluded address only (no network/broadcast inside it)', () => {
    const s = planReport(planOf('three-sites-vlan.fleet.yaml')).totals.sharedNetwork;
    expect(s).toMatchObject({ pool: 9, excluded: 1, reserved: 0, usable: 8, needed: 6, free: 2 });
    expect(s.pool - s.excluded - s.reserved).toBe(s.usable);
  });

  test('direct clusters show their slice and Harvester delivery', () => {
    const r = planReport(planOf('harvester.fleet.yaml'), { harvester: ['hv-a', 'hv-b'] });
    expect(r.clusters.map((c) => [c.cluster, c.delivery, c.sharedAddresses, c.sharedRange])).toEqual([
      // the slice plus 2 trust agent addresses each (issue #30)
      ['hv-a', 'harvester', 11, '172.20.40.10-172.20.40.18'],
      ['hv-b', 'harvester', 9, '172.20.40.19-172.20.40.25'],
      ['kv-c', 'kubevirt-cr', 10, '172.20.40.26-172.20.40.33'],
    ]);
    expect(r.totals.sharedNetwork).toMatchObject({ needed: 30, usable: 245, free: 215 });
  });

  test('the table is aligned: every column starts at the same offset on every row', () => {
    const text = renderPlanTable(planReport(planOf('three-sites-vlan.fleet.yaml')));
    const lines = text.split('\n');
    const head = lines.findIndex((l) => l.startsWith('CLUSTER'));
    const rows = lines.slice(head, head + 5);
    const starts = (l: string): number[] => [...l.matchAll(/(?<=^|  )\S/g)].map((m) => m.index!);
    const dashes = starts(rows[1]);
    expect(dashes).toHaveLength(11);
    for (const r of rows.slice(2)) expect(r.slice(0, 5).trim()).toMatch(/^(ams|fra|par)/);
    // right-aligned numbers end where the dashes end
    const nodesEnd = rows[1].indexOf('-----', dashes[3]) + 5;
    for (const r of rows.slice(2)) expect(r[nodesEnd - 1]).toMatch(/\d/);
    expect(text).toContain('usable 8');
    expect(text).toContain('all-direct would need 92');
  });
});

describe('fleet SVG', () => {
  const report = planReport(planOf('vep-10-clusters.fleet.yaml'));
  const svg = renderFleetSvg(report);

  test('self-contained and deterministic: no external fetches, same bytes twice', () => {
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.replace('http://www.w3.org/2000/svg', '')).not.toMatch(/https?:|@import|<image|xlink:href|url\(/);
    expect(renderFleetSvg(report)).toBe(svg);
  });

  test('shows every cluster, its CIDR and both addresses of every gateway, and the shared budget', () => {
    for (const c of report.clusters) {
      expect(svg).toContain(`>${c.cluster}<`);
      expect(svg).toContain(c.inClusterCidr!);
      for (const g of c.gateways) expect(svg).toContain(`${g.inCluster.split('/')[0]} ↔ ${g.crossCluster.split('/')[0]}`);
    }
    expect(svg).toContain('20 / 35 usable planned, 15 free');
  });

  test('large fleets: compact tile grid up to GRID_MAX, then a "+N more" summary', () => {
    const doc = bigFleet(GRID_MAX + 20);
    doc.spec.crossClusterNetwork.addresses!.pool = ['10.50.0.0/20'];
    doc.spec.crossClusterNetwork.addresses!.prefixLength = 20;
    const r = planReport(planFleet(resolveFleet(doc)).plan);
    const big = renderFleetSvg(r);
    expect(r.clusters.length).toBeGreaterThan(DETAILED_MAX);
    expect((big.match(/<rect /g) ?? []).length).toBeLessThan(GRID_MAX + 20);
    expect(big).toContain('+ 20 more clusters');
    expect(big).toContain('>site-0001<');
    expect(big).not.toContain('>site-0420<');
  });

  const rsvg = spawnSync('rsvg-convert', ['--version']).status === 0;
  (rsvg ? test : test.skip)('renders with rsvg-convert (well-formed SVG) for 3, 10 and 150 clusters', () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'mm-svg-'));
    const svgs = [renderFleetSvg(planReport(planOf('harvester.fleet.yaml'))), svg, renderFleetSvg(planReport(planFleet(resolveFleet(bigFleet(150))).plan))];
    svgs.forEach((s, i) => {
      fs.writeFileSync(path.join(dir, `f${i}.svg`), s);
      const r = spawnSync('rsvg-convert', [path.join(dir, `f${i}.svg`), '-o', path.join(dir, `f${i}.png`)], { encoding: 'utf8' });
      expect(r.stderr).toBe('');
      expect(r.status).toBe(0);
      expect(fs.statSync(path.join(dir, `f${i}.png`)).size).toBeGreaterThan(1000);
    });
    fs.rmSync(dir, { recursive: true, force: true });
  });
});

describe('progress', () => {
  const sink = (isTTY: boolean) => { const out: string[] = []; return { out, stream: { isTTY, write: (s: string) => out.push(s) } }; };

  test('silent when stderr is not a terminal', () => {
    const { out, stream } = sink(false);
    const p = createProgress('synth', { stream, env: {}, minTotal: 1 });
    for (let i = 1; i <= 1000; i++) p.update(i, 1000);
    p.done();
    expect(p.active).toBe(false);
    expect(out).toEqual([]);
  });

  test('silent in CI even on a terminal', () => {
    const { out, stream } = sink(true);
    const p = createProgress('synth', { stream, env: { CI: 'true' }, minTotal: 1 });
    p.update(1, 10);
    expect(out).toEqual([]);
    expect(progressEnabled(stream, { CI: 'false' })).toBe(true);
    expect(progressEnabled(stream, { TERM: 'dumb' })).toBe(false);
  });

  test('on a terminal: one updating line (carriage return), throttled, cleared at the end; small runs stay quiet', () => {
    const { out, stream } = sink(true);
    let t = 0;
    const p = createProgress('synth big', { stream, env: {}, minTotal: 50, intervalMs: 100, now: () => t });
    for (let i = 1; i <= 1000; i++) { t += 1; p.update(i, 1000); }
    p.done();
    expect(out.length).toBeGreaterThan(5);
    expect(out.length).toBeLessThan(20);
    expect(out.every((s) => s.startsWith('\r'))).toBe(true);
    expect(out[out.length - 2]).toContain('synth big 1000/1000 (100%)');
    expect(out[out.length - 1]).toBe('\r\x1b[2K');
    const small = sink(true);
    const q = createProgress('x', { stream: small.stream, env: {} });
    q.update(3, 3);
    expect(small.out).toEqual([]);
  });
});
