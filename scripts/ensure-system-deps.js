#!/usr/bin/env node
// Installs the C toolchain the build needs (node-gyp compiles the gateway's native addon: cc, g++, make from
// build-essential, and python3), and the system tools that the network tests and benchmarks use (iproute2, iptables, openssl,
// haproxy, iperf3, rsvg-convert for the SVG check, keepalived + curl for gateway failover, and for the gateway
// image (`npm run image`, test/image.test.ts): podman + runc to build and run it, debootstrap to make the base
// stand-ins where no image registry is reachable, skopeo to push the OCI archive, uidmap for rootless podman,
// faketime for the trust test in simulated time, qemu-system-x86 + busybox-static + cpio for the VM migration test,
// promtool (Debian package prometheus) for the alerting rules, libgnutls28-dev + pkg-config for the GnuTLS interop
// test's peer and libssl-dev for the addon unit checks, both compiled at test time)
// when they are missing and we are root on a Debian machine. Needs only Node (no npm packages): on a fresh
// machine run it before `npm ci` / `npm run build`. Never fails: a test that needs a missing tool says so
// and skips; a missing toolchain is named again by the build (proxy/scripts/build-addon.js).
'use strict';
const { execSync, spawnSync } = require('child_process');
const wanted = {
  // the build: node-gyp runs make, which compiles with cc and links with g++, and node-gyp itself needs python3
  cc: 'build-essential', 'g++': 'build-essential', make: 'build-essential', python3: 'python3',
  ip: 'iproute2', iptables: 'iptables', openssl: 'openssl', haproxy: 'haproxy', iperf3: 'iperf3', setpriv: 'util-linux', 'rsvg-convert': 'librsvg2-bin', keepalived: 'keepalived', curl: 'curl', '/usr/lib/cni/bridge': 'containernetworking-plugins',
  podman: 'podman', runc: 'runc', debootstrap: 'debootstrap', skopeo: 'skopeo', newuidmap: 'uidmap',
  // `kubectl kustomize` for the kustomize proofs (gitops, field ownership); Debian's own package is kubernetes-client
  kubectl: 'kubectl|kubernetes-client',
  // libfaketime: the fleet trust netns test runs the gateway processes in simulated time
  faketime: 'faketime',
  // the VM migration test and bench (test/vm-migration-netns.test.ts): QEMU under TCG, a busybox initramfs packed with cpio;
  // the guest kernel is Debian's linux-image-amd64, fetched with `apt-get download` by test/support/qemu-guest.ts
  'qemu-system-x86_64': 'qemu-system-x86', '/bin/busybox': 'busybox-static', cpio: 'cpio',
  // promtool checks and unit-tests the gateway's alerting rules (test/gateway-alerts.test.ts)
  promtool: 'prometheus',
  // the proxy's GnuTLS interop test (proxy/src/test/tls-gnutls-interop.test.ts) compiles its peer against libgnutls
  '/usr/include/gnutls/gnutls.h': 'libgnutls28-dev', 'pkg-config': 'pkg-config|pkgconf',
  // the proxy's addon unit checks (proxy/src/test/native-units.test.ts) compile native/tls13rec.c against OpenSSL
  '/usr/include/openssl/evp.h': 'libssl-dev' };
const have = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const missing = [...new Set(Object.entries(wanted).filter(([cmd]) => !have(cmd)).map(([, pkg]) => pkg))];
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
