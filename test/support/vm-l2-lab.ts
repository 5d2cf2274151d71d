/**
 * A VM that keeps its address across clusters (issue 40 item 6), on top of the VM migration lab
 * (test/support/vm-lab.ts, layout `routed-sites`: ams-1 in site ams, fra-1 in site fra, the two sites' segments
 * joined only by a router namespace, the VM moved by a real QEMU live migration through the mesh's gateways).
 *
 * What this adds, per cluster, is the VM network's data plane as OVN-Kubernetes' EVPN transport builds it
 * (https://github.com/ovn-kubernetes/ovn-kubernetes/blob/8871cd9cec9c45d6da1baf9e3b06eb575f49039c/docs/features/bgp-integration/evpn.md: one MAC-VRF, an L2 segment per cluster joined by VXLAN
 * between the clusters' VTEPs over the routed fabric):
 *
 *   handler ns (the virt-launcher pod): tap0 (the guest's NIC, virtio-net) + bridge k6t-net0 + vmnet0
 *        | veth
 *   c<i>-vmn ns (the cluster's VM switch and VTEP): bridge br-vm, port to-handler; vxlan0 (VNI of the
 *        plan, nolearning, the other site's VTEP as the all-zeros flood entry: what an EVPN type-3 route
 *        installs; MACs are learned by the bridge from the data plane, no BGP); the plan's VTEP address on lo
 *        (a loopback VTEP, as on a fabric node); ul0, its address on its site's segment (the last usable one of the site's
 *        subnet), routing the other VTEP via its own site's router, which routes each VTEP address via ul0
 *        | veth into the site's fabric bridge (fab-<site> br-xc, the routed underlay of vm-lab-sites.ts)
 *
 * and a client namespace `cl` on the source cluster's VM switch (an ordinary workload of the source
 * cluster, with addresses of its slices), which holds TCP connections to the guest (EchoClient).
 *
 * The guest: the lab's Debian kernel with its virtio-net modules (virtio_ring, virtio, virtio_pci*, failover,
 * net_failover, virtio_net, read from the same kernel package, loaded by busybox insmod in dependency order)
 * and a busybox initramfs whose /init puts the planned addresses (`mm_ip=`, `mm_ip6=` on the kernel command line) on eth0
 * and runs `nc -ll -p <port> -e cat` (an echo server, one process per connection), then ticks as the lab's
 * guest does. The NIC's MAC is the one OVN-Kubernetes derives from the address (0a:58 + the IPv4 bytes,
 * https://github.com/ovn-kubernetes/ovn-kubernetes/blob/8871cd9cec9c45d6da1baf9e3b06eb575f49039c/go-controller/pkg/allocator/pod/pod_annotation.go#L529-L537), the same on source and target: the client's ARP and ND entries never change; what
 * changes is where the switches see the MAC, which the target QEMU announces (its RARP after the incoming
 * migration, and virtio-net's guest announce).
 */
import { ChildProcess, spawnSync } from 'child_process';
import * as fs from 'fs';
import * as path from 'path';
import { buildGuestImage, Guest, VmShape } from './qemu-guest';
import { cidr4, fmt4, inCidr4, ip4 } from './netns';
import { VmMigrationLab } from './vm-lab';

/** The VM network as the plan gives it: its IPv4 half, and optionally its IPv6 half. */
export interface L2Plan {
  /** The network's name (its ClusterUserDefinedNetwork). */
  network: string;
  /** The network's IPv4 subnet (CIDR). */
  subnet: string;
  /** The network's MTU: the guest's eth0 and every port of the VM switches. Must leave the VXLAN overhead (50 bytes) below the underlay's MTU. */
  mtu: number;
  /** The default gateway the guest gets (a route only: nothing answers it in the lab). @default - none */
  gateway?: string;
  /** EVPN MAC-VRF VNI: the VXLAN network identifier both sites use. */
  vni: number;
  /** The VM's address (bare), the one it must keep. */
  guest: string;
  /** The client's address (bare), on the source cluster's VM switch. */
  client: string;
  /**
   * The network's IPv6 half: its subnet, the VM's address (bare) and the client's. @default - IPv4 only (the
   * guest then runs with IPv6 off)
   */
  v6?: { subnet: string; guest: string; client: string };
  /** The cluster the VM boots in and the client sits in (ams-1 or fra-1). */
  source: string;
  /**
   * Each cluster's VTEP address (bare, by cluster name; from the VTEP's `spec.cidrs`): put on a dummy
   * interface of the cluster's VTEP namespace and routed by the sites' router via the VTEP's address on its
   * site's segment (static routes standing in for the underlay's BGP).
   * @default - each VTEP's address on its site's segment (the last usable address of the site's subnet)
   */
  vteps?: Record<string, string>;
}

export type Family = 4 | 6;

/** An IPv6 address as a number (`::` and embedded IPv4 forms not needed here: hex groups only). */
export function ip6(a: string): bigint {
  const [head, tail] = a.includes('::') ? a.split('::') : [a, undefined];
  const h = head ? head.split(':') : [];
  const t = tail ? tail.split(':') : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  if (groups.length !== 8 || groups.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) throw new Error(`not an IPv6 address: ${a}`);
  return groups.reduce((v, g) => (v << 16n) | BigInt(parseInt(g, 16)), 0n);
}
/** An IPv6 number in full form (eight groups). */
export const fmt6 = (v: bigint): string => Array.from({ length: 8 }, (_, i) => ((v >> BigInt(16 * (7 - i))) & 0xffffn).toString(16)).join(':');
/** The first address of an IPv6 CIDR, as a number. */
export const cidr6First = (c: string): bigint => { const [a, l] = c.split('/'); const host = 128n - BigInt(l); return (ip6(a) >> host) << host; };
export const inCidr6 = (a: string, c: string): boolean => { const l = BigInt(c.split('/')[1]); return ip6(a) >> (128n - l) === cidr6First(c) >> (128n - l); };

/** The guest's echo server port. */
export const ECHO_PORT = 7000;
const VXLAN_OVERHEAD = 50;

/** The MAC OVN-Kubernetes derives from an IPv4 address (`0a:58:` + its four bytes), as for a primary-UDN pod without a requested MAC. */
export function ovnMac(ip: string): string {
  const n = ip4(ip);
  return ['0a', '58', ...[24, 16, 8, 0].map((s) => ((n >>> s) & 255).toString(16).padStart(2, '0'))].join(':');
}

/** Modules of the kernel package the guest's NIC needs, loaded in this order after their `depends=` are sorted in. */
const NET_MODULES = ['virtio_pci', 'virtio_net'];

const INIT = `#!/bin/busybox sh
/bin/busybox mkdir -p /proc /sys /dev /tmp /bin /sbin /usr/bin /usr/sbin
/bin/busybox --install -s
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
fill=8; dirty=1; ip=; ip6=; gw=; mtu=1500; port=${ECHO_PORT}
for a in $(cat /proc/cmdline); do case "$a" in
  mm_fill=*) fill=\${a#mm_fill=};; mm_dirty=*) dirty=\${a#mm_dirty=};; mm_ip=*) ip=\${a#mm_ip=};; mm_ip6=*) ip6=\${a#mm_ip6=};;
  mm_gw=*) gw=\${a#mm_gw=};; mm_mtu=*) mtu=\${a#mm_mtu=};; mm_port=*) port=\${a#mm_port=};;
esac; done
# IPv6 (when on): no router solicitations and no duplicate address detection (nothing answers either)
for k in accept_ra accept_dad; do [ -e /proc/sys/net/ipv6/conf/default/$k ] && echo 0 > /proc/sys/net/ipv6/conf/default/$k; done
for m in $(cat /lib/net-modules); do insmod /lib/modules/$m.ko || echo "mm-guest insmod $m failed"; done
n=0; while [ ! -e /sys/class/net/eth0 ] && [ $n -lt 100 ]; do usleep 100000; n=$((n + 1)); done
ip link set eth0 mtu $mtu
ip addr add $ip dev eth0
[ -n "$ip6" ] && ip -6 addr add $ip6 dev eth0
ip link set eth0 up
[ -n "$gw" ] && ip route add default via $gw
echo "mm-guest net eth0 $(ip -4 -o addr show dev eth0 | awk '{print $4}') $(cat /sys/class/net/eth0/address) mtu $(cat /sys/class/net/eth0/mtu)"
[ -n "$ip6" ] && echo "mm-guest net6 eth0 $(ip -6 -o addr show dev eth0 scope global | awk '{print $4}')"
nc -ll -p $port -e cat &
echo "mm-guest echo server on $port"
mount -t tmpfs -o size=$((fill + dirty + 8))m tmp /tmp
dd if=/dev/urandom of=/tmp/fill bs=1M count=$fill 2>/dev/null
echo "mm-guest ready"
i=0
while true; do
  i=$((i + 1))
  dd if=/dev/urandom of=/tmp/dirty bs=1M count=$dirty conv=notrunc 2>/dev/null
  echo "tick $i"
  sleep 1
done
`;

const run = (cmd: string, args: string[], cwd?: string): string => {
  const r = spawnSync(cmd, args, { cwd, encoding: 'utf8', timeout: 300_000, maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${cmd} ${args.join(' ')} failed (${r.status ?? r.signal}): ${(r.stderr || r.error?.message || '').trim()}`);
  return r.stdout;
};

/** The `depends=` of a kernel module file (its .modinfo section), as names. */
function moduleDepends(file: string): string[] {
  const m = /\0depends=([^\0]*)\0/.exec(fs.readFileSync(file).toString('latin1'));
  return m?.[1] ? m[1].split(',').filter(Boolean) : [];
}

/** `wanted` and everything it depends on, dependencies first, from the extracted package's module tree. */
function moduleOrder(tree: string, wanted: string[]): { name: string; file: string }[] {
  const files = new Map<string, string>();
  for (const e of fs.readdirSync(tree, { recursive: true, withFileTypes: true })) {
    const m = /^(.+)\.ko(\.xz)?$/.exec(e.name);
    if (e.isFile() && m) files.set(m[1].replace(/-/g, '_'), path.join(e.parentPath ?? (e as any).path, e.name));
  }
  const out: { name: string; file: string }[] = [];
  const visit = (name: string, chain: string[]) => {
    if (out.some((o) => o.name === name)) return;
    if (chain.includes(name)) throw new Error(`module dependency cycle: ${[...chain, name].join(' -> ')}`);
    let file = files.get(name);
    if (!file) throw new Error(`kernel module ${name} is not in the kernel package (needed by ${chain.join(' -> ') || 'the guest NIC'})`);
    if (file.endsWith('.xz')) { run('xz', ['-dkf', file]); file = file.slice(0, -3); }
    for (const d of moduleDepends(file)) visit(d, [...chain, name]);
    out.push({ name, file });
  };
  for (const w of wanted) visit(w, []);
  return out;
}

/**
 * The lab's guest kernel (the package linux-image-amd64 depends on) with a NIC: its virtio-net modules and
 * the echo-server /init above in a busybox initramfs. Built once, cached under
 * node_modules/.cache/mm-vm-l2-guest/<key> (the key: the kernel package's version, busybox, the init).
 */
export function buildL2Guest(cacheRoot = path.join(__dirname, '..', '..', 'node_modules', '.cache', 'mm-vm-l2-guest')): Guest {
  return buildGuestImage({
    cacheRoot, init: INIT, keyParts: NET_MODULES.join(','),
    extras: (root, unpacked) => {
      const [kver] = fs.readdirSync(path.join(unpacked, 'lib', 'modules'));
      const mods = moduleOrder(path.join(unpacked, 'lib', 'modules', kver, 'kernel'), NET_MODULES);
      fs.mkdirSync(path.join(root, 'lib', 'modules'), { recursive: true });
      for (const m of mods) fs.copyFileSync(m.file, path.join(root, 'lib', 'modules', `${m.name}.ko`));
      fs.writeFileSync(path.join(root, 'lib', 'net-modules'), `${mods.map((m) => m.name).join('\n')}\n`);
      return ['lib', 'lib/net-modules', 'lib/modules', ...mods.map((m) => `lib/modules/${m.name}.ko`)];
    },
  });
}

/** One cluster's VM switch and VTEP. */
export interface L2Site {
  cluster: string;
  /** The plan's site of the cluster. */
  site: string;
  /** Its site's router (the VTEP's next hop to the other VTEP). */
  via: string;
  /** Namespace of the VM switch (bridge br-vm) and the VTEP (vxlan0, ul0). */
  ns: string;
  /** The VTEP's address on its site's segment. */
  vtep: string;
}

/** Counters of a link (`ip -s link`). */
export interface LinkCounters { txPackets: number; rxPackets: number; txBytes: number; rxBytes: number }

/** The lab's VM switch port names: what `fdbPort` answers. */
export const PORT = { handler: 'to-handler', vxlan: 'vxlan0', client: 'to-client' } as const;

export class VmL2Lab {
  readonly mig: VmMigrationLab;
  readonly mac: string;
  readonly sites: L2Site[] = [];
  clientNs = '';
  private readonly prefix: number;
  /** Index of the source cluster in `mig.clusters` (known after setup). */
  src = -1;

  constructor(readonly plan: L2Plan, shape: Omit<VmShape, 'append'>, readonly log: (s: string) => void = console.log) {
    for (const a of [plan.guest, plan.client, ...(plan.gateway ? [plan.gateway] : [])]) {
      if (!inCidr4(a, plan.subnet)) throw new Error(`${a} is not in the network's subnet ${plan.subnet}`);
    }
    this.prefix = cidr4(plan.subnet).prefix;
    if (plan.v6) {
      for (const a of [plan.v6.guest, plan.v6.client]) if (!inCidr6(a, plan.v6.subnet)) throw new Error(`${a} is not in the network's subnet ${plan.v6.subnet}`);
    }
    this.mac = ovnMac(plan.guest);
    const append = [`mm_ip=${plan.guest}/${this.prefix}`, ...(plan.v6 ? [`mm_ip6=${plan.v6.guest}/${plan.v6.subnet.split('/')[1]}`] : ['ipv6.disable=1']),
      `mm_mtu=${plan.mtu}`, `mm_port=${ECHO_PORT}`, ...(plan.gateway ? [`mm_gw=${plan.gateway}`] : [])].join(' ');
    this.mig = new VmMigrationLab({ ...shape, append }, 4, log, 'routed-sites');
    // the same NIC on every QEMU (a migration needs identical devices); only the tap it opens is its handler namespace's
    this.mig.qemuArgs = () => ['-netdev', 'tap,id=net0,ifname=tap0,script=no,downscript=no',
      '-device', `virtio-net-pci,netdev=net0,id=nic0,mac=${this.mac},romfile=`];
  }

  private get netns() { return this.mig.lab; }

  private sh(ns: string, ...cmds: string[][]): void {
    for (const c of cmds) {
      const r = this.netns.exec(ns, c);
      if (r.status !== 0) throw new Error(`${c.join(' ')} in ${ns}: ${(r.stderr || r.error?.message || '').trim()}`);
    }
  }

  /** The migration lab, then the guest with a NIC, then each cluster's VM switch and VTEP and the client's namespace. */
  async setup(): Promise<void> {
    await this.mig.setup();
    this.mig.guest = buildL2Guest();
    const routed = this.mig.routed!;
    const { mtu } = this.plan;
    this.mig.clusters.forEach((c, i) => {
      const leg = routed.siteOf(c.name);
      if (leg.mtu !== undefined && mtu + VXLAN_OVERHEAD > leg.mtu) throw new Error(`the network's MTU ${mtu} + VXLAN's ${VXLAN_OVERHEAD} exceeds site ${leg.name}'s underlay MTU ${leg.mtu}`);
      const ns = this.netns.addNs(`c${i}-vmn`);
      // no IPv6 on the VM network's links: its router solicitations and MLD reports would cross the VXLAN and blur the counts
      this.sh(ns, ['sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1'], ['sysctl', '-qw', 'net.ipv6.conf.default.disable_ipv6=1']);
      this.sh(c.handler.ns, ['sysctl', '-qw', 'net.ipv6.conf.default.disable_ipv6=1']);
      this.netns.addBridge(ns, 'br-vm', mtu);
      // the launcher pod's side: the tap QEMU opens, bridged to the pod's interface, which is a port of the VM switch
      this.netns.addBridge(c.handler.ns, 'k6t-net0', mtu);
      this.netns.addVeth({ hostNs: c.handler.ns, ifname: 'vmnet0', addrs: [], fabricNs: ns, portName: PORT.handler, bridge: 'br-vm', mtu });
      this.sh(c.handler.ns, ['ip', 'tuntap', 'add', 'dev', 'tap0', 'mode', 'tap'], ['ip', 'link', 'set', 'tap0', 'mtu', String(mtu)],
        ['ip', 'link', 'set', 'tap0', 'master', 'k6t-net0'], ['ip', 'link', 'set', 'vmnet0', 'master', 'k6t-net0'], ['ip', 'link', 'set', 'tap0', 'up']);
      // on the site's segment: the last usable address of the site's subnet (the lab's pools and routers are below it)
      const sub = cidr4(leg.subnet);
      const onSegment = fmt4(sub.last - 1);
      if (onSegment === leg.router) throw new Error(`site ${leg.name}: the VTEP's segment address ${onSegment} is its router's`);
      this.netns.addVeth({ hostNs: ns, ifname: 'ul0', addrs: [`${onSegment}/${sub.prefix}`], fabricNs: leg.fab, portName: `vtep${i}`, bridge: 'br-xc', mtu: leg.mtu });
      const vtep = this.plan.vteps?.[c.name] ?? onSegment;
      if (vtep !== onSegment) {
        this.sh(ns, ['ip', 'addr', 'add', `${vtep}/32`, 'dev', 'lo']);
        this.sh(routed.rtr, ['ip', 'route', 'add', `${vtep}/32`, 'via', onSegment]);
      }
      this.sites.push({ cluster: c.name, site: leg.name, ns, vtep, via: leg.router });
    });
    this.src = this.mig.clusters.findIndex((c) => c.name === this.plan.source);
    if (this.src < 0) throw new Error(`source ${this.plan.source} is not a cluster of the lab (${this.mig.clusters.map((c) => c.name).join(', ')})`);
    for (const [i, s] of this.sites.entries()) {
      const remote = this.sites[1 - i].vtep;
      this.sh(s.ns, ['ip', 'route', 'add', `${remote}/32`, 'via', s.via]);
      this.sh(s.ns, ['ip', 'link', 'add', PORT.vxlan, 'type', 'vxlan', 'id', String(this.plan.vni), 'local', s.vtep, 'dstport', '4789', 'nolearning'],
        ['ip', 'link', 'set', PORT.vxlan, 'mtu', String(mtu)], ['ip', 'link', 'set', PORT.vxlan, 'master', 'br-vm'], ['ip', 'link', 'set', PORT.vxlan, 'up'],
        // ingress replication to the other VTEP: the flood entry an EVPN type-3 (inclusive multicast) route installs
        ['bridge', 'fdb', 'append', '00:00:00:00:00:00', 'dev', PORT.vxlan, 'dst', remote]);
    }
    // the underlay carries VXLAN between the VTEPs across the router before anything else is tried
    const ping = this.netns.exec(this.sites[0].ns, ['/bin/busybox', 'ping', '-c', '1', '-W', '5', '-I', this.sites[0].vtep, this.sites[1].vtep]);
    if (ping.status !== 0) throw new Error(`VTEP ${this.sites[0].vtep} cannot reach VTEP ${this.sites[1].vtep} across the router: ${ping.stdout}${ping.stderr}`);
    this.clientNs = this.netns.addNs('cl');
    const v6 = this.plan.v6;
    this.sh(this.clientNs, ...(v6
      ? [['sysctl', '-qw', 'net.ipv6.conf.default.accept_dad=0'], ['sysctl', '-qw', 'net.ipv6.conf.default.accept_ra=0']]
      : [['sysctl', '-qw', 'net.ipv6.conf.all.disable_ipv6=1'], ['sysctl', '-qw', 'net.ipv6.conf.default.disable_ipv6=1']]));
    this.netns.addVeth({
      hostNs: this.clientNs, ifname: 'eth0', addrs: [`${this.plan.client}/${this.prefix}`, ...(v6 ? [`${v6.client}/${v6.subnet.split('/')[1]}`] : [])],
      fabricNs: this.sites[this.src].ns, portName: PORT.client, bridge: 'br-vm', mtu,
    });
    this.log(`[vm-l2-lab] network ${this.plan.network}: ${this.plan.subnet} MTU ${mtu} VNI ${this.plan.vni}; guest ${this.plan.guest}${v6 ? ` ${v6.guest}` : ''} (${this.mac}), client ${this.plan.client}${v6 ? ` ${v6.client}` : ''}; ` +
      `VTEPs ${this.sites.map((s) => `${s.cluster}@${s.site} ${s.vtep}`).join(', ')}`);
  }

  /** Boot the guest in the source cluster's handler namespace; resolves once it ticks (its echo server is started before its first tick). */
  async boot(): Promise<number> {
    const ms = await this.mig.boot(this.src);
    const serial = fs.readFileSync(this.mig.vm!.serial, 'latin1');
    const net = /mm-guest net eth0 (\S+) (\S+) mtu (\d+)/.exec(serial);
    if (!net) throw new Error(`the guest did not configure eth0: ${serial.slice(-1500)}`);
    const want = [`${this.plan.guest}/${this.prefix}`, this.mac, String(this.plan.mtu)];
    if (net.slice(1).join() !== want.join()) throw new Error(`the guest's eth0 is ${net.slice(1).join(' ')}, the plan gives ${want.join(' ')}`);
    if (this.plan.v6) {
      const got = /mm-guest net6 eth0 (\S+)\/(\d+)/.exec(serial);
      const [addr6, len6] = this.plan.v6.subnet.split('/');
      if (!got || ip6(got[1]) !== ip6(this.plan.v6.guest) || got[2] !== len6) throw new Error(`the guest's eth0 has IPv6 ${got?.[1] ?? 'none'}, the plan gives ${this.plan.v6.guest}/${len6} (in ${addr6}/${len6})`);
    }
    return ms;
  }

  /** The L2 join on (both VTEPs' vxlan0 up, with the flood entry to the other VTEP) or off (down: the sites' segments are apart). */
  setJoin(on: boolean): void {
    for (const [i, s] of this.sites.entries()) {
      this.sh(s.ns, ['ip', 'link', 'set', PORT.vxlan, on ? 'up' : 'down']);
      const dst = this.sites[1 - i].vtep;
      const flood = (JSON.parse(this.netns.exec(s.ns, ['bridge', '-j', 'fdb', 'show', 'dev', PORT.vxlan]).stdout || '[]') as { mac: string; dst?: string }[])
        .some((e) => e.mac === '00:00:00:00:00:00' && e.dst === dst);
      if (on && !flood) this.sh(s.ns, ['bridge', 'fdb', 'append', '00:00:00:00:00:00', 'dev', PORT.vxlan, 'dst', dst]);
    }
  }

  /**
   * The client's TCP connection to the guest as its kernel sees it (`ss -ti`): the state, bytes sent but not
   * yet acknowledged (segments), and retransmissions so far (undefined fields: none shown).
   */
  /**
   * The client's connection to the guest as its kernel has it (`ss -ti`): state, unacknowledged segments,
   * retransmissions, and the bytes it has received (what arrived, whether or not the client process has read it yet).
   */
  /**
   * The kernel's view of `client`'s own connection (`ss -tin`, selected by the client's local port from its
   * `connected` event): state, bytes sent and not acknowledged, retransmissions, bytes received. Only that
   * socket: a connection of another client to the guest (one killed a test earlier, still in FIN-WAIT-1 while
   * a slow guest had not acknowledged its FIN) was once read in its place (a CI run).
   */
  clientSocket(client: EchoClient, family: Family = 4): { state?: string; unacked: number; retrans: number; bytesReceived: number; line: string } {
    const local = client.localPort();
    if (local === undefined) throw new Error(`clientSocket: the IPv${family} client has not connected`);
    const dst = family === 4 ? this.guestAddr(4) : `[${this.guestAddr(6)}]`;
    const r = this.netns.exec(this.clientNs, ['ss', '-tinH', 'dst', dst, 'sport', `= :${local}`]);
    const lines = (r.stdout || '').split(/\n(?=\S)/).filter((l) => l.trim());
    if (lines.length > 1) throw new Error(`clientSocket: ${lines.length} sockets from port ${local} to ${dst}:\n${r.stdout}`);
    const line = (lines[0] ?? '').replace(/\s+/g, ' ').trim();
    return {
      state: line.split(' ')[0] || undefined, line,
      unacked: Number(/unacked:(\d+)/.exec(line)?.[1] ?? 0),
      retrans: Number(/retrans:\d+\/(\d+)/.exec(line)?.[1] ?? 0),
      bytesReceived: Number(/bytes_received:(\d+)/.exec(line)?.[1] ?? 0),
    };
  }

  /** The port of cluster `ci`'s VM switch behind which it has learned the guest's MAC (undefined: not learned). */
  fdbPort(ci: number): string | undefined {
    const r = this.netns.exec(this.sites[ci].ns, ['bridge', '-j', 'fdb', 'show', 'br', 'br-vm']);
    const entries = JSON.parse(r.stdout || '[]') as { mac: string; ifname: string; flags?: string[]; state?: string }[];
    return entries.find((e) => e.mac === this.mac && e.state !== 'permanent')?.ifname;
  }

  /** Wait (bounded) until cluster `ci`'s VM switch has the guest's MAC behind `port`. */
  async waitFdb(ci: number, port: string, timeoutMs = 10_000): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (this.fdbPort(ci) !== port) {
      if (Date.now() > end) throw new Error(`${this.sites[ci].cluster}'s VM switch has ${this.mac} behind ${this.fdbPort(ci) ?? 'no port'} after ${timeoutMs} ms, expected ${port}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Counters of cluster `ci`'s vxlan0 (what crossed between the sites at this VTEP). */
  vxlan(ci: number): LinkCounters {
    const r = this.netns.exec(this.sites[ci].ns, ['ip', '-s', '-j', 'link', 'show', PORT.vxlan]);
    const s = (JSON.parse(r.stdout) as any[])[0].stats64;
    return { txPackets: s.tx.packets, rxPackets: s.rx.packets, txBytes: s.tx.bytes, rxBytes: s.rx.bytes };
  }

  /** The client's neighbour entry for the guest's address: `lladdr` and state. */
  clientNeighbour(family: Family = 4): { lladdr?: string; state?: string[] } {
    const r = this.netns.exec(this.clientNs, ['ip', '-j', `-${family}`, 'neigh', 'show', this.guestAddr(family)]);
    const [e] = JSON.parse(r.stdout || '[]') as { lladdr?: string; state?: string[] }[];
    return e ?? {};
  }

  /**
   * An echo client in the client's namespace: one TCP connection to the guest's address of `family`, a
   * numbered line every `everyMs`, each line `segmentBytes(family)` long: one full segment, which crosses the
   * VXLAN only if the planned MTU leaves room for it.
   */
  startClient(everyMs = 50, family: Family = 4): EchoClient {
    const p = this.netns.spawn(this.clientNs, [process.execPath, '-e', CLIENT, this.guestAddr(family), String(ECHO_PORT), String(everyMs), String(this.segmentBytes(family))]);
    return new EchoClient(p, (sig) => this.netns.kill(p, sig));
  }

  /** TCP payload bytes of one full segment at the network's MTU: less IPv4 (20) or IPv6 (40), TCP (20) and its timestamp option (12). */
  segmentBytes(family: Family = 4): number { return this.plan.mtu - (family === 4 ? 20 : 40) - 32; }

  /** The guest's address of `family`. */
  guestAddr(family: Family): string {
    if (family === 4) return this.plan.guest;
    if (!this.plan.v6) throw new Error('the plan gives the lab no IPv6 half');
    return this.plan.v6.guest;
  }

  async cleanup(): Promise<void> { await this.mig.cleanup(); }
}

/**
 * The client (node, in the client's namespace): connects to HOST:PORT (connection refused retried for 20 s:
 * the guest's echo server may still be starting), then writes line n every EVERY_MS ms (n = 1, 2, ...: `<n> `
 * padded with `x` to SIZE bytes with the newline; Nagle off, so each line is its own segment), and reads the
 * echo. One JSON line per event, each with the time `t`: `connected`, `sent` {n} for each line written, `echo` {n, bytes} for each line back
 * whole and in order, `gap` {expected, got (its first 40 characters)} for one missing, out of order or altered,
 * `stopped` {sent} after SIGUSR1 (it sends no more), `error` and `closed`.
 */
const CLIENT = `
const net = require('net');
const [host, port, every, size] = [process.argv[1], Number(process.argv[2]), Number(process.argv[3]), Number(process.argv[4])];
const lineOf = (n) => { const head = n + ' '; return head + 'x'.repeat(Math.max(0, size - head.length - 1)) + '\\n'; };
const out = (o) => process.stdout.write(JSON.stringify({ t: Date.now(), ...o }) + '\\n');
let sent = 0, expect = 1, buf = '', timer, sending = true;
const t0 = Date.now();
const connect = () => {
  const s = net.connect({ host, port });
  s.setNoDelay(true);
  s.on('connect', () => {
    out({ event: 'connected', local: s.localAddress + ':' + s.localPort });
    timer = setInterval(() => { if (sending) { sent++; s.write(lineOf(sent)); out({ event: 'sent', n: sent }); } }, every);
    process.on('SIGUSR1', () => { sending = false; clearInterval(timer); out({ event: 'stopped', sent }); });
  });
  s.on('data', (d) => {
    buf += d.toString('latin1');
    for (let i = buf.indexOf('\\n'); i >= 0; i = buf.indexOf('\\n')) {
      const line = buf.slice(0, i + 1); buf = buf.slice(i + 1);
      const n = Number(line.split(' ')[0]);
      out(line === lineOf(expect) ? { event: 'echo', n, bytes: line.length } : { event: 'gap', expected: expect, got: line.slice(0, 40) });
      expect = (Number.isInteger(n) ? n : expect) + 1;
    }
  });
  s.on('error', (e) => {
    if (!timer && e.code === 'ECONNREFUSED' && Date.now() - t0 < 20000) { setTimeout(connect, 200); return; }
    out({ event: 'error', error: e.code || e.message });
  });
  s.on('close', () => { if (timer) { clearInterval(timer); out({ event: 'closed' }); process.exit(0); } });
};
connect();
`;

export type ClientEvent = { t: number; event: 'connected'; local: string } | { t: number; event: 'sent'; n: number } | { t: number; event: 'echo'; n: number; bytes: number }
  | { t: number; event: 'gap'; expected: number; got: string }
  | { t: number; event: 'stopped'; sent: number } | { t: number; event: 'error'; error: string } | { t: number; event: 'closed' };

/** The echo client's events as they come, and bounded waits on them. */
export class EchoClient {
  readonly events: ClientEvent[] = [];
  private buf = '';
  private stderr = '';

  constructor(readonly proc: ChildProcess, private readonly signal: (s: NodeJS.Signals) => void) {
    proc.stdout!.on('data', (d: Buffer) => {
      this.buf += d.toString();
      for (let i = this.buf.indexOf('\n'); i >= 0; i = this.buf.indexOf('\n')) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        if (line.trim()) this.events.push(JSON.parse(line));
      }
    });
    proc.stderr!.on('data', (d: Buffer) => { this.stderr += d.toString(); });
  }

  /** The local port of its connection (from its `connected` event), undefined before it connected. */
  localPort(): number | undefined {
    const c = this.events.find((e): e is Extract<ClientEvent, { event: 'connected' }> => e.event === 'connected');
    return c ? Number(/:(\d+)$/.exec(c.local)?.[1]) : undefined;
  }

  echoes(since = 0): Extract<ClientEvent, { event: 'echo' }>[] {
    return this.events.filter((e): e is Extract<ClientEvent, { event: 'echo' }> => e.event === 'echo' && e.t >= since);
  }

  /**
   * Lines written at or after `from` whose echo came back by `to`: each crossed the path to the guest and back within
   * [from, to], whatever was in flight at either end (the client writes on a timer, not after each echo, so a count of
   * echoes in a window also counts lines written before it).
   */
  crossed(from: number, to: number): number {
    const sentAt = new Map(this.events.filter((e): e is Extract<ClientEvent, { event: 'sent' }> => e.event === 'sent').map((e) => [e.n, e.t]));
    return this.echoes(from).filter((e) => e.t <= to && (sentAt.get(e.n) ?? -Infinity) >= from).length;
  }

  /** Events that end or break the stream: a gap, an error, the connection closed. */
  trouble(): ClientEvent[] { return this.events.filter((e) => e.event === 'gap' || e.event === 'error' || e.event === 'closed'); }

  /** Wait (bounded) until `pred` holds; fails at once on trouble. */
  async until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
    const end = Date.now() + timeoutMs;
    while (!pred()) {
      const bad = this.trouble();
      if (bad.length) throw new Error(`${what}: the client saw ${JSON.stringify(bad)}`);
      if (Date.now() > end) throw new Error(`${what}: not after ${timeoutMs} ms (last events ${JSON.stringify(this.events.slice(-3))}; stderr ${this.stderr.slice(-300)})`);
      await new Promise((r) => setTimeout(r, 20));
    }
  }

  /** Wait until `n` echoes arrived at or after `since`. */
  waitEchoes(n: number, since: number, timeoutMs: number, what: string): Promise<void> {
    return this.until(() => this.echoes(since).length >= n, timeoutMs, what);
  }

  /** Stop sending; resolves with how many lines were sent once every one of them came back (bounded). */
  async stop(timeoutMs = 15_000): Promise<number> {
    this.signal('SIGUSR1');
    await this.until(() => this.events.some((e) => e.event === 'stopped'), 5000, 'the client to stop');
    const sent = (this.events.find((e) => e.event === 'stopped') as { sent: number }).sent;
    await this.until(() => this.echoes().length >= sent, timeoutMs, `all ${sent} lines back`);
    return sent;
  }

  kill(): void { this.signal('SIGKILL'); }
}
