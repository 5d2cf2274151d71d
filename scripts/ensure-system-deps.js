#!/usr/bin/env node
// Installs the C toolchain the build needs (node-gyp compiles the gateway's native addon: cc, g++, make from
// build-essential, and python3), and the system tools that the network tests and benchmarks use (iproute2, iptables, openssl,
// haproxy, iperf3, rsvg-convert for the SVG check, keepalived + curl for gateway failover, and for the gateway
// image (`npm run image`, test/gateway-image.image.test.ts): podman + runc to build and run it, debootstrap to make the base
// stand-ins where no image registry is reachable, skopeo to push the OCI archive, uidmap for rootless podman,
// faketime for the trust test in simulated time, qemu-system-x86 (QEMU 10 or later: on Debian bookworm from
// bookworm-backports, see qemuFromBackports) + busybox-static + cpio for the VM migration test,
// promtool (Debian package prometheus) for the alerting rules, libgnutls28-dev + pkg-config for the GnuTLS interop
// test's peer and libssl-dev for the addon unit checks, both compiled at test time)
// when they are missing and we are root on a Debian machine. Needs only Node (no npm packages): on a fresh
// machine run it before `npm ci` / `npm run build`. Never fails: a test that needs a missing tool says so
// and skips; a missing toolchain is named again by the build (proxy/scripts/build-addon.js).
'use strict';
const { execSync, spawnSync } = require('child_process');
const fs = require('fs');
const path = require('path');
const wanted = {
  // the build: node-gyp runs make, which compiles with cc and links with g++, and node-gyp itself needs python3
  cc: 'build-essential', 'g++': 'build-essential', make: 'build-essential', python3: 'python3',
  ip: 'iproute2', iptables: 'iptables', openssl: 'openssl', haproxy: 'haproxy', iperf3: 'iperf3', setpriv: 'util-linux', 'rsvg-convert': 'librsvg2-bin', keepalived: 'keepalived', curl: 'curl', '/usr/lib/cni/bridge': 'containernetworking-plugins',
  podman: 'podman', runc: 'runc', debootstrap: 'debootstrap', skopeo: 'skopeo', newuidmap: 'uidmap',
  // `kubectl kustomize` for the kustomize proofs (gitops, field ownership); Debian's own package is kubernetes-client
  kubectl: 'kubectl|kubernetes-client',
  // libfaketime: the fleet trust netns test runs the gateway processes in simulated time
  faketime: 'faketime',
  // the VM migration test and bench (test/vm-migration.netns.test.ts): QEMU under TCG, a busybox initramfs packed with cpio;
  // the guest kernel is Debian's linux-image-amd64, fetched with `apt-get download` by test/support/qemu-guest.ts
  'qemu-system-x86_64': 'qemu-system-x86', '/bin/busybox': 'busybox-static', cpio: 'cpio',
  // the VM-network lab's guest loads the kernel package's virtio-net modules, shipped xz-compressed (test/support/vm-l2-lab.ts)
  xz: 'xz-utils',
  // gdb: when a source QEMU stops answering, the VM lab names what its threads are in (qemuStacks in test/support/qemu-guest.ts)
  gdb: 'gdb',
  // promtool checks and unit-tests the gateway's alerting rules (test/gateway-alerts.test.ts)
  promtool: 'prometheus',
  // the proxy's GnuTLS interop test (proxy/src/test/tls-gnutls-interop.test.ts) compiles its peer against libgnutls
  '/usr/include/gnutls/gnutls.h': 'libgnutls28-dev', 'pkg-config': 'pkg-config|pkgconf',
  // the proxy's addon unit checks (proxy/src/test/native-units.test.ts) compile native/tls13rec.c against OpenSSL
  '/usr/include/openssl/evp.h': 'libssl-dev' };
const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const missing = [...new Set(Object.entries(wanted).filter(([cmd]) => !have(cmd)).map(([, pkg]) => pkg))];

// The VM lab is written against QEMU 10's migration (KubeVirt's virt-launcher ships a recent QEMU; bookworm's
// 7.2 leaves a failed migration's yank instance behind now and then). Checked by version, not by presence:
// a machine with bookworm's 7.2 gets it upgraded.
const QEMU_MIN_MAJOR = 10;
/** The installed qemu-system-x86_64's major version, or 0 when there is none. */
const qemuMajor = () => Number(/version (\d+)\./.exec(spawnSync('qemu-system-x86_64', ['--version'], { encoding: 'utf8' }).stdout ?? '')?.[1] ?? 0);
const qemuTooOld = qemuMajor() < QEMU_MIN_MAJOR;
if (qemuTooOld && !missing.includes('qemu-system-x86')) missing.push('qemu-system-x86');
/** The first of the `a|b` alternatives apt knows (a package only some sources carry falls back to Debian's). */
const pick = (pkgs) => pkgs.split('|').find((p) => spawnSync('apt-cache', ['show', p], { stdio: 'ignore' }).status === 0);
if (missing.length === 0) process.exit(0);
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
if (!isRoot || !have('apt-get')) {
  console.warn(`[ensure-system-deps] missing ${missing.join(', ')}; not root or no apt-get: tests that need them will skip`);
  const toolchain = missing.filter((p) => p === 'build-essential' || p === 'python3');
  if (toolchain.length) console.warn(`[ensure-system-deps] the build needs ${toolchain.join(' and ')} (the gateway's native addon): apt-get install build-essential python3, or your system's C compiler, g++, make and python3`);
  process.exit(0);
}
console.log(`[ensure-system-deps] installing ${missing.join(' ')}`);
if (qemuTooOld) {
  if (qemuMajor()) console.log(`[ensure-system-deps] QEMU ${qemuMajor()} is installed, the VM lab needs ${QEMU_MIN_MAJOR} or later: upgrading qemu-system-x86`);
  try { qemuFromBackports(); } catch (e) { console.warn(`[ensure-system-deps] adding bookworm-backports for QEMU failed (${e.message})`); }
}
try {
  execSync('apt-get update -qq', { stdio: 'inherit', timeout: 300000 });
} catch (e) {
  console.warn(`[ensure-system-deps] apt-get update failed (${e.message})`);
}
// one package at a time: a package apt cannot install must not keep the others from being installed
for (const alternatives of missing) {
  const pkg = pick(alternatives);
  if (!pkg) { console.warn(`[ensure-system-deps] no package ${alternatives} in apt's sources; tests that need it will skip`); continue; }
  try {
    execSync(`DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${pkg}`, { stdio: 'inherit', timeout: 600000 });
  } catch (e) {
    console.warn(`[ensure-system-deps] installing ${pkg} failed (${e.message}); tests that need it will skip`);
  }
}
if (qemuTooOld) {
  const major = qemuMajor();
  if (major < QEMU_MIN_MAJOR) console.warn(`[ensure-system-deps] QEMU ${major || 'not installed'}, the VM lab needs ${QEMU_MIN_MAJOR} or later: its tests will skip`);
}

/**
 * On Debian bookworm (QEMU 7.2): add the bookworm-backports suite from the Debian mirror the machine already
 * uses, and pin QEMU's system packages (and seabios, its BIOS, which QEMU 10 needs newer than bookworm's) to it
 * at bookworm's priority, so that `apt-get install qemu-system-x86` takes QEMU 10 from backports and every
 * other package, QEMU's libraries included, stays on bookworm (`apt-get install -t bookworm-backports` would
 * also take any backported library it pulls, e.g. libbrlapi0.8). The pin also keeps later upgrades on the
 * backported QEMU. Writes each file only when it differs: idempotent.
 */
function qemuFromBackports() {
  const codename = /^VERSION_CODENAME=(.*)$/m.exec(readOr('/etc/os-release'))?.[1]?.replace(/"/g, '');
  if (codename !== 'bookworm') return; // later Debian releases carry QEMU 10 or later themselves
  const sources = aptSources();
  // the mirror bookworm itself comes from (an archive URI ending in /debian first: not debian-security's)
  const bookworm = sources.filter((s) => s.suites.includes('bookworm'));
  const debian = bookworm.find((s) => /\/debian\/?$/.test(s.uri)) ?? bookworm[0] ?? { uri: 'http://deb.debian.org/debian', signedBy: undefined };
  const writeIfChanged = (file, text) => {
    if (readOr(file) === text) return;
    fs.writeFileSync(file, text);
    console.log(`[ensure-system-deps] wrote ${file}`);
  };
  if (!sources.some((s) => s.suites.includes('bookworm-backports'))) {
    writeIfChanged('/etc/apt/sources.list.d/bookworm-backports.list',
      `deb ${debian.signedBy ? `[signed-by=${debian.signedBy}] ` : ''}${debian.uri} bookworm-backports main\n`);
  }
  writeIfChanged('/etc/apt/preferences.d/qemu-from-bookworm-backports', [
    '# written by migration-mesh scripts/ensure-system-deps.js: QEMU 10 from bookworm-backports, everything else from bookworm',
    'Package: qemu-system-* seabios', 'Pin: release n=bookworm-backports', 'Pin-Priority: 500', ''].join('\n'));
}

/** The enabled `deb` sources in /etc/apt/sources.list and sources.list.d (one-line .list and deb822 .sources). */
function aptSources() {
  const dir = '/etc/apt/sources.list.d';
  const files = ['/etc/apt/sources.list', ...(fs.existsSync(dir) ? fs.readdirSync(dir).map((f) => path.join(dir, f)) : [])];
  const out = [];
  for (const file of files) {
    const text = readOr(file);
    if (file.endsWith('.list')) {
      for (const line of text.split('\n')) {
        const m = /^\s*deb\s+(?:\[([^\]]*)\]\s+)?(\S+)\s+(\S+)/.exec(line);
        if (m) out.push({ uri: m[2], suites: [m[3]], signedBy: keyringPath(/signed-by=(\S+)/.exec(m[1] ?? '')?.[1]) });
      }
    } else if (file.endsWith('.sources')) {
      for (const stanza of text.split(/\n\s*\n/)) {
        const field = (name) => new RegExp(`^${name}:\\s*(.*)$`, 'mi').exec(stanza)?.[1]?.trim();
        if (!(field('Types') ?? '').split(/\s+/).includes('deb') || /^no$/i.test(field('Enabled') ?? '')) continue;
        for (const uri of (field('URIs') ?? '').split(/\s+/).filter(Boolean)) out.push({ uri, suites: (field('Suites') ?? '').split(/\s+/), signedBy: keyringPath(field('Signed-By')) });
      }
    }
  }
  return out;
}

/** A Signed-By that names a keyring file (deb822 may also hold the key itself inline: not usable in a .list line). */
function keyringPath(v) {
  return v && v.startsWith('/') ? v : undefined;
}

function readOr(file) {
  try { return fs.readFileSync(file, 'utf8'); } catch { return ''; }
}
