/**
 * A fleet whose VM networks are misshapen still reports every problem at once (src/fleet/salvage.ts runs
 * the later stages over what parses): never a TypeError from the VM-network stages.
 */
import { planFleetDocument } from '../src/addressing/planner';
import { FleetValidationError } from '../src/base/errors';
import { FleetDocument } from '../src/fleet/schema';
import { RawFleet, rawVmFleet } from './support/vmnet-fleet';

function problemsOf(patch: (f: RawFleet) => void): string[] {
  const f = rawVmFleet();
  patch(f);
  try { planFleetDocument(f as unknown as FleetDocument); } catch (e) { // deliberately misshapen: the salvage path reads it
    if (e instanceof FleetValidationError) return e.problems.map((p) => `${p.code} ${p.path}`);
    throw e;
  }
  return [];
}

test.each<[string, (f: RawFleet) => void, string[]]>([
  ['a network with an unreadable required value is left out; the rest of the fleet is still checked', (f) => {
    f.spec.vmNetworks[0].mtu = 'big';
    f.spec.clusters[0].migrationNetwork = { cidr: '10.60.0.7/24' };
  }, ['schema-invalid spec.vmNetworks[0].mtu', 'cidr-host-bits spec.clusters[0].migrationNetwork.cidr']],
  ['reach without its VNI', (f) => { delete f.spec.vmNetworks[0].reach.vni; }, ['schema-invalid spec.vmNetworks[0].reach.vni']],
  ['vmNetworks not a list', (f) => { f.spec.vmNetworks = { blue: {} }; }, ['schema-invalid spec.vmNetworks']],
  ['a network that is not an object', (f) => { f.spec.vmNetworks[1] = 'vlan100'; }, ['schema-invalid spec.vmNetworks[1]']],
])('%s', (_what, patch, want) => {
  const got = problemsOf(patch);
  for (const w of want) expect(got).toContain(w);
});
