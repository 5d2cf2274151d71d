/**
 * The one declaration of which ClusterUserDefinedNetwork fields are immutable upstream (src/vmnet/cudn-spec.ts,
 * issue 53): every field we render has its rule (the compiler demands one for a new field, and every rendered
 * key is found in the tables), the rules are the CRD's CEL `self == oldSelf` ones, and the ledger's `created`
 * line is derived from it without changing a committed ledger.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { parse } from 'yaml';
import {
  CUDN_EVPN_FIELDS, CUDN_LAYER2_FIELDS, CUDN_LOCALNET_FIELDS, CUDN_MACVRF_FIELDS, CUDN_NETWORK_FIELDS, CudnLayer2, FieldTable,
  createdLineOf, immutableFingerprint, layer2NetworkSpec,
} from '../src/vmnet/cudn-spec';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { parseFleetDocument, ledgerPathFor, loadLedgerFile } from '../src/fleet/load';

const FLEET = path.resolve(__dirname, '..', 'examples', 'vm-networks.fleet.yaml');

const tables: Record<string, Record<string, { upstream: string }>> = {
  network: { ...CUDN_NETWORK_FIELDS, layer2: { upstream: 'immutable' }, localnet: { upstream: 'immutable' }, evpn: { upstream: 'mutable' } },
  layer2: CUDN_LAYER2_FIELDS, localnet: CUDN_LOCALNET_FIELDS, evpn: CUDN_EVPN_FIELDS, macVRF: CUDN_MACVRF_FIELDS,
};

test('a field added to the rendered CUDN does not compile until CUDN_FIELDS gives it a rule', () => {
  // @ts-expect-error: `uplinks` has no rule (immutable upstream, or not; recorded in the ledger, or not)
  const widened: FieldTable<CudnLayer2 & { uplinks?: string[] }> = CUDN_LAYER2_FIELDS;
  expect(widened).toBe(CUDN_LAYER2_FIELDS);
});

test('every key of every CUDN the example renders has its rule', () => {
  const r = synthesizeFleet(parseFleetDocument(parse(fs.readFileSync(FLEET, 'utf8'))), { ledger: loadLedgerFile(ledgerPathFor(FLEET)) });
  const seen = new Set<string>();
  const walk = (o: Record<string, unknown>, table: string) => {
    for (const [k, v] of Object.entries(o)) {
      expect([table, k, tables[table]?.[k]?.upstream]).toEqual([table, k, expect.stringMatching(/^(im)?mutable$/)]);
      seen.add(`${table}.${k}`);
      if (tables[k] && v && typeof v === 'object' && !Array.isArray(v)) walk(v as Record<string, unknown>, k);
    }
  };
  for (const objs of r.objects.values()) for (const o of objs as any[]) if (o.kind === 'ClusterUserDefinedNetwork') walk(o.spec.network, 'network');
  expect(seen.size).toBeGreaterThan(15);
});

test('the rules are the CRD\'s CEL ones: topology, transport, the layer2 and localnet blocks immutable; evpn not', () => {
  const immutable = Object.entries(tables).flatMap(([t, f]) => Object.entries(f).filter(([, r]) => r.upstream === 'immutable').map(([k]) => `${t}.${k}`));
  expect(immutable.filter((k) => k.startsWith('network.')).sort()).toEqual(['network.layer2', 'network.localnet', 'network.topology', 'network.transport']);
  expect(Object.values(CUDN_LAYER2_FIELDS).every((r) => r.upstream === 'immutable')).toBe(true); // "Layer2 is immutable"
  expect(Object.values(CUDN_LOCALNET_FIELDS).every((r) => r.upstream === 'immutable')).toBe(true); // "Localnet is immutable"
  expect([...Object.values(CUDN_EVPN_FIELDS), ...Object.values(CUDN_MACVRF_FIELDS)].every((r) => r.upstream === 'mutable')).toBe(true);
});

test('the created line is the committed ledger\'s, and an optional field not rendered writes no token', () => {
  const l = loadLedgerFile(ledgerPathFor(FLEET))!;
  const spec = { subnets: ['10.50.0.0/16', 'fd50::/64'], mtu: 1400, defaultGatewayIPs: ['10.50.0.1', 'fd50::1'], infrastructureSubnets: ['10.50.0.0/20', 'fd50::/68'] };
  expect(createdLineOf(layer2NetworkSpec({ ...spec, evpn: { vtep: 'fleet-vtep', vni: 5001, routeTarget: '65000:5001' } }))).toBe(l.vmNetworks!.blue.created);
  expect(createdLineOf(layer2NetworkSpec({ subnets: ['10.1.0.0/16'], mtu: 1400 }))).toBe('topology=Layer2 mtu=1400 ipam=Persistent subnets=10.1.0.0/16');
});

test('the fingerprint sees what is immutable and nothing else', () => {
  const base = { subnets: ['10.50.0.0/16'], mtu: 1400, reservedSubnets: ['10.50.128.0/17'], evpn: { vtep: 'v', vni: 1 } };
  const fp = (o: Partial<typeof base>) => immutableFingerprint(layer2NetworkSpec({ ...base, ...o }));
  expect(fp({ evpn: { vtep: 'w', vni: 2 } })).toBe(fp({}));
  expect(fp({ reservedSubnets: ['10.50.0.0/17'] })).not.toBe(fp({}));
  expect(fp({ mtu: 1300 })).not.toBe(fp({}));
});
