/**
 * Issue #29 item 5: Forklift dropped its MAC-conflict check for KubeVirt-to-KubeVirt moves (Forklift PR
 * #8293). Where the moves declare the VMs' MACs, a move whose MAC another move into the same target
 * cluster uses is refused.
 */
import { FleetDocument } from '../src/fleet/schema';
import { movesFleet, synthProblemsOf } from './support/fleets';

const fleet = (moves: unknown[]): FleetDocument => movesFleet(moves);
const problems = synthProblemsOf;

const mv = (vm: string, from: string, to: string, batch: string, macAddresses?: string[], extra: Record<string, unknown> = {}) =>
  ({ vm, namespace: 'vms', from, to, batch, ...(macAddresses ? { macAddresses } : {}), ...extra });

describe('MAC conflicts among moves into one target cluster', () => {
  test('two VMs with one MAC into one cluster: refused at the second, whatever the batch and the case', () => {
    const p = problems(fleet([mv('db1', 'b', 'a', 'w1', ['02:03:04:05:06:07']), mv('web1', 'c', 'a', 'w2', ['02:aa:00:00:00:01', '02:03:04:05:06:07'.toUpperCase()])]));
    expect(p.map((x) => `${x.code} ${x.path}`)).toEqual(['forklift/mac-conflict spec.forklift.moves[1].macAddresses[1]']);
    expect(p[0].message).toContain('02:03:04:05:06:07 of vms/web1 is also the MAC of vms/db1, moved to a by spec.forklift.moves[0]');
    expect(p[0].message).toContain('PR #8293');
    expect(p[0].fix).toContain('macAddress');
  });

  test('the same MAC into different clusters, distinct MACs, or moves without MACs pass', () => {
    expect(problems(fleet([mv('db1', 'b', 'a', 'w1', ['02:03:04:05:06:07']), mv('web1', 'a', 'c', 'w1', ['02:03:04:05:06:07'])]))).toEqual([]);
    expect(problems(fleet([mv('db1', 'b', 'a', 'w1', ['02:03:04:05:06:07']), mv('web1', 'c', 'a', 'w1', ['02:03:04:05:06:08'])]))).toEqual([]);
    expect(problems(fleet([mv('db1', 'b', 'a', 'w1'), mv('web1', 'c', 'a', 'w1')]))).toEqual([]);
  });

  test('one VM landing again on a cluster it left keeps its MAC: not a conflict', () => {
    const moves = [mv('db1', 'b', 'a', 'w1', ['02:03:04:05:06:07']), mv('db1', 'a', 'c', 'w2', ['02:03:04:05:06:07']), mv('db1', 'c', 'a', 'w3', ['02:03:04:05:06:07'])];
    expect(problems(fleet(moves))).toEqual([]);
  });

  test('a value that is not a MAC is refused by the schema, at its path', () => {
    const p = problems(fleet([mv('db1', 'b', 'a', 'w1', ['02:03:04:05:06'])]));
    expect(p.map((x) => x.path)).toEqual(['spec.forklift.moves[0].macAddresses[0]']);
    expect(p[0].message).toContain('must be a MAC address');
  });
});
