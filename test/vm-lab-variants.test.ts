/**
 * The VM lab runs each layout's example in every datapath variant (test/support/vm-lab-sites.ts fleetForDatapath):
 * twice a variant failed at the lab's setup only, in the QEMU suites, because validate refused what the example
 * gained (the bandwidth budgets with payload tls, then toward clusters without gateways with a direct datapath).
 * Here every variant of every layout is synthesized without QEMU, and what the adaptation removes is only what
 * that variant refuses.
 */
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { topologyFromFiles } from './support/netns';
import { GATEWAY_MODES, LAYOUT_FLEET, fleetForDatapath, routedDirectVariant, type GatewayMode } from './support/vm-lab-sites';

const budgets = (cfg: any): unknown[] => [cfg.bandwidth, ...(cfg.peers ?? []).map((p: any) => p.bandwidth)].filter((b) => b !== undefined);

describe.each(Object.entries(LAYOUT_FLEET))('%s (%s)', (layout, file) => {
  const base = loadFleetFile(file) as any;
  const ledger = loadLedgerFile(ledgerPathFor(file));
  const hasBudgets = base.spec.gateway?.bandwidth !== undefined;

  test.each(Object.keys(GATEWAY_MODES) as GatewayMode[])('%s: synthesizes, each gateway in that mode, budgets only where a gateway can hold them', (m) => {
    const topos = topologyFromFiles(synthesizeFleet(fleetForDatapath(base, m), { ledger }).files);
    expect(topos.length).toBeGreaterThan(1);
    for (const t of topos) {
      expect(t.gatewayConfig.tls.mode).toBe(m);
      expect(budgets(t.gatewayConfig).length > 0).toBe(hasBudgets && m !== 'mtls');
    }
  });

  if (layout === 'routed-sites') {
    test('direct: synthesizes, a whereabouts migration attachment per cluster routed via its site router', () => {
      const clusters = ['ams-1', 'fra-1'];
      const att = routedDirectVariant(base, clusters);
      expect(Object.keys(att).sort()).toEqual(clusters);
      for (const c of clusters) expect(att[c].address).toMatch(/^\d+\.\d+\.\d+\.1\d\d\/24$/); // the pool .100-.199
    });
  }

  test('the example itself is left as it was', () => {
    const before = JSON.stringify(base);
    for (const v of [...Object.keys(GATEWAY_MODES), 'direct'] as const) fleetForDatapath(base, v as GatewayMode | 'direct');
    expect(JSON.stringify(base)).toBe(before);
  });
});
