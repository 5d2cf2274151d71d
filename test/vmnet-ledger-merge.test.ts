/**
 * The VM networks' ledger under a real Git merge (issue 40 item 3, "merge-safe"): two branches that each
 * add a cluster from the same ledger both take the lowest free slot; `git merge-file` merges the two
 * ledgers without a textual conflict, and the plan refuses the result (vmnet-ledger-conflict) instead of
 * giving two clusters one dynamic range. The same for two branches that each add a mobile VM.
 */
import { execFileSync } from 'child_process';
import * as fs from 'fs';
import * as os from 'os';
import * as path from 'path';
import { resolveVmNetworks } from '../src/vmnet/plan';
import { Ledger, emptyLedger, parseLedger, serializeLedger } from '../src/addressing/ledger';
import { OVN, RawFleet, vmFleet } from './support/vmnet-fleet';

const ledgerText = (r: ReturnType<typeof resolveVmNetworks>): string => serializeLedger({ ...emptyLedger('vmn'), vmNetworks: r.ledger });

/** `git merge-file` of two branches' ledgers over their base: the merged text, or undefined on a textual conflict. */
function gitMerge(base: string, ours: string, theirs: string): string | undefined {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vmnet-merge-'));
  try {
    const f = (n: string, t: string) => { const p = path.join(dir, n); fs.writeFileSync(p, t); return p; };
    const [o, b, t] = [f('ours', ours), f('base', base), f('theirs', theirs)];
    try { return execFileSync('git', ['merge-file', '-p', o, b, t], { encoding: 'utf8' }); } catch { return undefined; }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const withCluster = (...names: string[]) => (f: RawFleet) => { for (const name of names) f.spec.clusters.push({ name, nodes: 3, ovnKubernetes: { ...OVN } }); };
const plan = (patch: (f: RawFleet) => void, l?: Ledger) => resolveVmNetworks(vmFleet(patch), l);

test('two branches each adding a cluster merge cleanly in Git, and the plan refuses the merged ledger', () => {
  const base = plan(() => undefined);
  const ours = plan(withCluster('bru-1'), parseLedger(ledgerText(base)));
  const theirs = plan(withCluster('par-1'), parseLedger(ledgerText(base)));
  expect(ours.networks[0].slots['bru-1']).toBe(2);
  expect(theirs.networks[0].slots['par-1']).toBe(2);
  const merged = gitMerge(ledgerText(base), ledgerText(ours), ledgerText(theirs));
  expect(merged).toBeDefined();
  const r = plan(withCluster('bru-1', 'par-1'), parseLedger(merged!));
  expect(r.problems.map((p) => [p.code, p.path])).toEqual([
    ['vmnet-ledger-conflict', '(ledger) vmNetworks.blue.clusters.par-1.slot'],
    ['vmnet-ledger-conflict', '(ledger) vmNetworks.vlan100.clusters.par-1.slot'],
  ]);
  expect(r.perCluster.size).toBe(0);
  // the fix works: drop one side's entries and plan again; par-1 moves to a free slot, bru-1 keeps its
  const l = parseLedger(merged!);
  for (const n of Object.values(l.vmNetworks!)) delete n.clusters!['par-1'];
  const fixed = plan(withCluster('bru-1', 'par-1'), l);
  expect(fixed.problems).toEqual([]);
  expect(fixed.networks[0].slots).toEqual({ 'fra-1': 0, 'ams-1': 1, 'bru-1': 2, 'par-1': 3 });
});

test('two branches each adding a mobile VM: the merged ledger gives one address twice, refused', () => {
  const base = plan(() => undefined);
  const add = (vm: string) => (f: RawFleet) => { f.spec.vmNetworks[0].mobileVms.push(vm); };
  const ours = plan(add('tenant-blue/app-a'), parseLedger(ledgerText(base)));
  const theirs = plan(add('tenant-blue/zed-z'), parseLedger(ledgerText(base)));
  const merged = gitMerge(ledgerText(base), ledgerText(ours), ledgerText(theirs));
  expect(merged).toBeDefined();
  const r = plan((f) => { add('tenant-blue/app-a')(f); add('tenant-blue/zed-z')(f); }, parseLedger(merged!));
  expect(r.problems.map((p) => p.code)).toEqual(['vmnet-ledger-conflict', 'vmnet-ledger-conflict']);
  expect(r.problems[0].message).toMatch(/10\.50\.240\.2 is given to both tenant-blue\/app-a and tenant-blue\/zed-z/);
});
