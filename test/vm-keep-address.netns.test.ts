/**
 * A VM keeps its address, and its TCP connection, across clusters (issue 40 item 6, "the VM test" of Done when).
 *
 * The plan: examples/vm-networks.fleet.yaml (with its ledger when there is one) through the planner
 * (src/vmnet: resolveVmNetworks), and the example's move (tenant-blue/web-1 from fra-1 to ams-1, the primary
 * Layer2 network `blue`, dual stack, reach EVPN) through the pre-flight check (checkKeepAddressMove). The
 * addresses the check pins (web-1's mobile addresses, one per family) are the guest's; the network's MTU,
 * gateway and VNI, each cluster's VTEP address (the first of its VTEP CIDRs) and the client's addresses (of
 * fra-1's own slices) come from the same plan. The lab realizes the network's data plane only (no OVN, no API server for it): see
 * test/support/vm-l2-lab.ts: each cluster's VM switch, the two joined by VXLAN (the plan's VNI) between the
 * VTEPs across the routed sites' router, the guest's virtio NIC on the switch of the cluster it runs in.
 * The mesh itself is the VM lab's (test/support/vm-lab.ts, layout `routed-sites`: ams-1 and fra-1 of the
 * two-sites example, gateways in mtls-splice, the trust exchange), so the VM network's fleet and the mesh's
 * fleet are two example files whose cluster names agree.
 *
 * Checks, in order: at fra-1 the client holds a TCP connection to each of the guest's two addresses (an echo
 * of numbered lines, one full segment at the network's MTU each, every 50 ms), fra-1's switch has the guest's
 * MAC behind the handler's port and not one line crosses the VXLAN; a live migration through the mesh to
 * ams-1 completes while the echoes go on (5 on each connection while QEMU reports the migration active), and
 * afterwards the same connections flow on: ams-1's switch has the MAC behind its handler's port, fra-1's
 * behind the VXLAN port (the target QEMU announced itself), the client's ARP and ND entries are unchanged
 * (the same addresses and MAC), and every request now crosses the VXLAN; new connections to the same addresses
 * are answered from ams-1; with the VXLAN join cut the connections stall (the client's kernel retransmits,
 * nothing comes back), rejoined they resume, the same connections; at the end every line sent came back, once,
 * whole and in order (no gap, no reset), with the bytes before, during and after counted. The pre-flight
 * refusal: the same move over the network planned with reach none is refused (vmnet-move-no-reach), by the
 * check and by synthesis of that fleet (the Forklift plan), in a describe that needs no namespace.
 *
 * Needs what test/vm-migration.netns.test.ts needs (root, the netns tools, the CNI plugins, QEMU 10, busybox-static,
 * cpio, apt: the guest kernel and its virtio-net modules are `apt-get download`ed once and cached); skips the
 * lab part with a message otherwise. Run it under `flock /tmp/mm-net.lock` beside other network tests.
 */
import * as fs from 'fs';
import * as path from 'path';
import { loadFleetFile, loadLedgerFile, ledgerPathFor } from '../src/fleet/load';
import { synthesizeFleet } from '../cli/synthesize-fleet';
import { FleetValidationError } from '../src/base/errors';
import { resolveVmNetworks } from '../src/vmnet/plan';
import { checkKeepAddressMove, KeepAddressMove } from '../src/vmnet/moves';
import { parseInfoMigrate } from './support/qemu-guest';
import { cidr4, fmt4, inCidr4 } from './support/netns';
import { vmLabSupport } from './support/vm-lab';
import { EchoClient, Family, L2Plan, PORT, VmL2Lab, cidr6First, fmt6 } from './support/vm-l2-lab';

const FLEET = path.join(__dirname, '..', 'examples', 'vm-networks.fleet.yaml');
const doc = loadFleetFile(FLEET) as any;
const ledger = fs.existsSync(ledgerPathFor(FLEET)) ? loadLedgerFile(ledgerPathFor(FLEET)) : undefined;
const planned = resolveVmNetworks(doc, ledger);
// the example's move: the one the Forklift plan runs
const MOVE: KeepAddressMove = (({ vm, namespace, from, to }) => ({ vm, namespace, from, to }))(doc.spec.forklift.moves[0]);

/** The lab's inputs from the plan and the pre-flight verdict of the example's move. */
function labPlan(): L2Plan {
  if (planned.problems.length) throw new Error(`the example's plan has problems: ${JSON.stringify(planned.problems)}`);
  const verdict = checkKeepAddressMove(planned, MOVE);
  if (!verdict.ok) throw new Error(`the example's move is refused: ${JSON.stringify(verdict.problems)}`);
  const at = (c: string) => planned.perCluster.get(c)!.networks.find((n) => n.name === verdict.network)!;
  const src = at(MOVE.from);
  if (src.reach.type !== 'evpn') throw new Error(`${src.name} reaches the other clusters by ${src.reach.type}, the lab builds EVPN's data plane`);
  const v4 = (list: readonly string[]) => list.find((x) => !x.includes(':'))!;
  const v6 = (list: readonly string[]) => list.find((x) => x.includes(':'))!;
  return {
    network: src.name, subnet: v4(src.subnets), mtu: src.mtu, gateway: v4(src.defaultGatewayIPs), vni: src.reach.vni,
    guest: v4(verdict.addresses), client: fmt4(cidr4(v4(src.slice!.cidrs)).first + 1), source: MOVE.from,
    v6: { subnet: v6(src.subnets), guest: v6(verdict.addresses), client: fmt6(cidr6First(v6(src.slice!.cidrs)) + 1n) },
    vteps: Object.fromEntries([MOVE.from, MOVE.to].map((c) => {
      const r = at(c).reach;
      return [c, fmt4(cidr4(v4((r as { vtepCidrs: readonly string[] }).vtepCidrs)).first + 1)];
    })),
  };
}

describe('the pre-flight check of a keep-the-address move (the example\'s plan)', () => {
  test('the example\'s move keeps web-1\'s mobile address: allowed, the annotation pins what the ledger holds', () => {
    expect(planned.problems).toEqual([]);
    const v = checkKeepAddressMove(planned, MOVE);
    const blue = planned.networks.find((n) => n.name === v.network)!;
    const mobile = blue.mobileVms.find((m) => m.vm === MOVE.vm && m.namespace === MOVE.namespace)!;
    expect(v).toMatchObject({ ok: true, origin: 'mobile', problems: [] });
    expect(v.addresses).toEqual(mobile.addresses);
    expect(v.annotation).toEqual({ key: 'network.kubevirt.io/addresses', value: mobile.annotation });
    // an address no cluster hands out: inside the mobile slice, outside every cluster's slice
    const [split] = blue.splits;
    expect(inCidr4(v.addresses[0], split.mobile)).toBe(true);
    expect(split.slices.some((s) => inCidr4(v.addresses[0], s))).toBe(false);
  });

  test('the same move with the sites\' L2 not joined (the network planned with reach none) is refused before anything moves', () => {
    const apart = JSON.parse(JSON.stringify(doc));
    for (const n of apart.spec.vmNetworks) {
      if (n.reach?.type !== 'evpn') continue;
      n.reach = { type: 'none' };
      for (const o of Object.values(n.clusters ?? {}) as Record<string, unknown>[]) delete o.vtepCidrs;
    }
    const r = resolveVmNetworks(apart);
    expect(r.problems).toEqual([]);
    const v = checkKeepAddressMove(r, MOVE);
    expect(v.ok).toBe(false);
    expect(v.annotation).toBeUndefined();
    expect(v.problems).toEqual([expect.objectContaining({ code: 'vmnet-move-no-reach', path: `moves.${MOVE.namespace}/${MOVE.vm}` })]);
    expect(v.problems[0].message).toContain(MOVE.to);
    expect(v.problems[0].fix).toMatch(/evpn/);
    // and synthesis, which plans the move for Forklift, refuses the fleet: nothing is written
    let refused: unknown;
    try { synthesizeFleet(apart, {}); } catch (e) { refused = e; }
    expect(refused).toBeInstanceOf(FleetValidationError);
    expect((refused as FleetValidationError).problems).toEqual([expect.objectContaining({ code: 'vmnet-move-no-reach', path: 'spec.forklift.moves[0]' })]);
  });
});

const support = vmLabSupport();
if (!support.ok) console.warn(`[vm-keep-address-netns] SKIPPED: ${support.reason}`);
const d = support.ok ? describe : describe.skip;
const log = (s: string) => console.log(`[vm-keep-address-netns] ${s}`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

d('a VM keeps its address and its TCP connections across clusters (real QEMU live migration through the mesh, VM switches joined by VXLAN)', () => {
  let l2: VmL2Lab;
  const S = () => l2.src;
  const T = () => 1 - l2.src;
  const FAMILIES: Family[] = [4, 6];
  const clients = new Map<Family, EchoClient>();
  const c = (f: Family) => clients.get(f)!;
  const t = { start: 0, migrate: 0, migrated: 0, moved: 0 };
  /** Both connections' echoes since `since` (each at least `n`), bounded. */
  const bothEcho = (n: number, since: number, timeoutMs: number, what: string) => Promise.all(FAMILIES.map((f) => c(f).waitEchoes(n, since, timeoutMs, `IPv${f}: ${what}`)));

  beforeAll(async () => {
    // 128 MiB with 8 MiB random: about 75 MiB migrated in 2-3 s at the 32 MiB/s limit below
    l2 = new VmL2Lab(labPlan(), { memMiB: 128, fillMiB: 8, dirtyMiB: 1, cpu: 'qemu64' }, console.log);
    try {
      const t0 = Date.now();
      await l2.setup();
      log(`lab up in ${Date.now() - t0} ms; guest booted at ${MOVE.from} in ${await l2.boot()} ms`);
    } catch (e) {
      await l2.cleanup();
      throw e;
    }
  }, 240_000);

  afterAll(async () => {
    for (const cl of clients.values()) cl.kill();
    await l2?.cleanup();
  }, 60_000);

  test(`at ${MOVE.from} the client holds a connection to each of the guest's planned addresses; unicast stays on the site`, async () => {
    t.start = Date.now();
    for (const f of FAMILIES) clients.set(f, l2.startClient(50, f));
    await bothEcho(10, 0, 30_000, 'the first 10 echoes');
    expect(l2.fdbPort(S())).toBe(PORT.handler);
    for (const f of FAMILIES) expect(l2.clientNeighbour(f).lladdr).toBe(l2.mac);
    const v0 = l2.vxlan(S());
    await bothEcho(20, Date.now(), 10_000, 'a window of 20 echoes');
    const v1 = l2.vxlan(S());
    log(`${MOVE.from}, the VM there: 20 echoes per connection, ${v1.txPackets - v0.txPackets} packets (${v1.txBytes - v0.txBytes} bytes) into the VXLAN`);
    // the 40 lines stayed on the site: not one line's bytes went into the VXLAN (a multicast or two may flood)
    expect(v1.txBytes - v0.txBytes).toBeLessThan(l2.segmentBytes(6));
  }, 60_000);

  test(`a live migration to ${MOVE.to} through the mesh: both connections keep flowing, the guest answers from ${MOVE.to}`, async () => {
    t.migrate = Date.now();
    const during = { 4: 0, 6: 0 };
    const mig = await l2.mig.migrate('mtls-splice', {
      maxBandwidth: 32 * 1024 * 1024,
      whileRunning: async (src) => {
        // the guest keeps answering while its memory crosses: 5 echoes on each connection while QEMU reports the migration active
        for (const end = Date.now() + 30_000; Date.now() < end;) {
          const info = parseInfoMigrate(await src.cmd('info migrate'));
          if (info.status !== 'active' && info.status !== 'setup') return;
          if (info.status === 'active') for (const f of FAMILIES) during[f] = c(f).echoes(t.migrate).length;
          if (during[4] >= 5 && during[6] >= 5) return;
          await sleep(50);
        }
      },
    });
    t.migrated = Date.now();
    log(`${mig.from} -> ${mig.to}: ${mig.info.status}, total ${mig.info.totalMs} ms, downtime ${mig.info.downtimeMs} ms, ` +
      `${((mig.info.transferredKiB ?? 0) / 1024).toFixed(1)} MiB, RAM equal ${mig.ramEqual}, resumed ${mig.resumed}, wall ${mig.wallMs} ms; echoes while active: ${JSON.stringify(during)}`);
    expect(mig.info.status).toBe('completed');
    expect([mig.from, mig.to]).toEqual([MOVE.from, MOVE.to]);
    expect(l2.mig.vm!.at).toBe(T());
    expect(during).toEqual({ 4: expect.any(Number), 6: expect.any(Number) });
    expect(Math.min(during[4], during[6])).toBeGreaterThanOrEqual(5);
    await bothEcho(20, t.migrated, 30_000, 'echoes after the migration');
    // the target QEMU announced the MAC: each switch has moved it (no ARP or ND change: same addresses, same MAC)
    await l2.waitFdb(T(), PORT.handler);
    await l2.waitFdb(S(), PORT.vxlan);
    for (const f of FAMILIES) expect(l2.clientNeighbour(f).lladdr).toBe(l2.mac);
    const v0 = l2.vxlan(S());
    const from = Date.now();
    // lines written after the first read and echoed before the second: each crossed to the VM at the other site in
    // between, one full segment each (Nagle off). Not "20 echoes": lines in flight at the first read are echoed in the
    // window without crossing in it (a CI run under load counted 31 crossings for 40 echoes)
    for (const f of FAMILIES) await c(f).until(() => c(f).crossed(from, Date.now()) >= 20, 10_000, `IPv${f}: 20 lines written and echoed after the first read`);
    const to = Date.now();
    const v1 = l2.vxlan(S());
    const crossed = Object.fromEntries(FAMILIES.map((f) => [f, c(f).crossed(from, to)])) as Record<Family, number>;
    log(`${MOVE.from}, the VM at ${MOVE.to}: ${crossed[4]} + ${crossed[6]} lines written and echoed, ${v1.txPackets - v0.txPackets} packets (${v1.txBytes - v0.txBytes} bytes) into the VXLAN`);
    expect(v1.txPackets - v0.txPackets).toBeGreaterThanOrEqual(crossed[4] + crossed[6]);
    expect(v1.txBytes - v0.txBytes).toBeGreaterThanOrEqual(FAMILIES.reduce((sum, f) => sum + crossed[f] * l2.segmentBytes(f), 0));
    t.moved = Date.now();
  }, 240_000);

  test(`new connections to the same addresses are answered from ${MOVE.to}`, async () => {
    for (const f of FAMILIES) {
      const fresh = l2.startClient(20, f);
      try {
        await fresh.waitEchoes(5, 0, 20_000, `a new IPv${f} connection`);
        await fresh.stop();
      } finally { fresh.kill(); }
      expect(fresh.trouble()).toEqual([]);
    }
    expect(l2.fdbPort(T())).toBe(PORT.handler);
  }, 60_000);

  test('the VXLAN join carries the connections: cut, they stall (retransmitting, nothing back); rejoined, the same connections resume', async () => {
    const base = l2.clientSocket(c(4), 4).retrans; // the move's pause may have cost retransmissions already
    l2.setJoin(false);
    let stalled: { echoes: number[]; received: number[]; retrans: number } | undefined;
    const counts = () => FAMILIES.map((f) => c(f).echoes().length);
    // what the client's kernel has received, not what the client process has read and reported: on a loaded machine
    // the process reports echoes that arrived before the cut some time later (seen in CI: 4-5 per connection)
    const received = () => FAMILIES.map((f) => l2.clientSocket(c(f), f).bytesReceived);
    try {
      // bounded wait on what the client's kernel shows: two more retransmissions of unacknowledged lines
      for (const end = Date.now() + 15_000; Date.now() < end;) {
        const sock = l2.clientSocket(c(4), 4);
        if (sock.retrans >= base + 2 && sock.unacked > 0) { stalled = { echoes: counts(), received: received(), retrans: sock.retrans }; break; }
        await sleep(50);
      }
      expect(stalled).toBeDefined();
      // nothing comes back while apart: wait for one more retransmission, the bytes received stand still
      for (const end = Date.now() + 15_000; Date.now() < end && l2.clientSocket(c(4), 4).retrans <= stalled!.retrans;) await sleep(50);
      expect(l2.clientSocket(c(4), 4).retrans).toBeGreaterThan(stalled!.retrans);
      expect(received()).toEqual(stalled!.received);
      expect(stalled!.received.every((b) => b > 0)).toBe(true);
      for (const f of FAMILIES) expect(l2.clientSocket(c(f), f).state).toBe('ESTAB');
    } finally {
      l2.setJoin(true);
    }
    const back = Date.now();
    await bothEcho(10, back, 30_000, 'echoes after the rejoin');
    log(`join cut: stalled after ${stalled!.echoes.join(' + ')} echoes, IPv4 retransmissions ${base} -> ${stalled!.retrans}; rejoined, echoes again after ` +
      `${FAMILIES.map((f) => `${c(f).echoes(back)[0].t - back} ms (IPv${f})`).join(', ')}`);
    for (const f of FAMILIES) expect(c(f).trouble()).toEqual([]);
  }, 90_000);

  test.each(FAMILIES)('IPv%s: every line came back once, in order, before, during and after the move: no gap, no reset', async (f) => {
    const sent = await c(f).stop();
    const echoes = c(f).echoes();
    expect(echoes.map((e) => e.n)).toEqual(Array.from({ length: sent }, (_, i) => i + 1));
    expect(c(f).trouble()).toEqual([]);
    const bytes = (from: number, to: number) => echoes.filter((e) => e.t >= from && e.t < to).reduce((sum, e) => sum + e.bytes, 0);
    const phases = { before: bytes(t.start, t.migrate), during: bytes(t.migrate, t.migrated), after: bytes(t.migrated, Infinity) };
    let gap = 0; // the client's longest wait for an echo from the migration's start to the end of its test
    for (let i = 1; i < echoes.length; i++) if (echoes[i].t >= t.migrate && echoes[i].t <= t.moved) gap = Math.max(gap, echoes[i].t - echoes[i - 1].t);
    log(`IPv${f}: ${sent} lines of ${l2.segmentBytes(f)} bytes sent and echoed; bytes echoed before ${phases.before}, during ${phases.during}, after ${phases.after}; ` +
      `the longest pause around the move ${gap} ms`);
    expect(phases.before).toBeGreaterThan(0);
    expect(phases.during).toBeGreaterThan(0);
    expect(phases.after).toBeGreaterThan(0);
  }, 60_000);
});
