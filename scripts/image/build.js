#!/usr/bin/env node
// `npm run image [-- --tag REGISTRY/NAME:TAG ...] [--no-cache] [--no-archive]`
// Builds the gateway image from proxy/Dockerfile (repository root as context) with podman, or docker where an
// engine runs; bases: official where a registry answers, local stand-ins (scripts/image/make-bases.sh) where
// not. Writes .image/migration-mesh-proxy.oci.tar (push it: skopeo copy oci-archive:... docker://...), and
// prints the build time, the image size, what it adds over its base, its layers and the archive size.
'use strict';
const fs = require('fs');
const path = require('path');
const img = require('./lib');

function parseArgs(argv) {
  const opts = { tags: [], noCache: false, archive: true };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--tag' || a === '-t') opts.tags.push(argv[++i]);
    else if (a === '--no-cache') opts.noCache = true;
    else if (a === '--no-archive') opts.archive = false;
    else if (a === '--help' || a === '-h') opts.help = true;
    else throw new Error(`unknown option ${a} (--tag NAME, --no-cache, --no-archive)`);
  }
  if (opts.tags.length === 0) opts.tags.push(img.DEFAULT_TAG);
  return opts;
}

const mb = (bytes) => `${(bytes / 1e6).toFixed(1)} MB`;
const mib = (bytes) => `${(bytes / img.MiB).toFixed(1)} MiB`;

function report(engine, opts, bases, built) {
  const name = opts.tags[0];
  const info = img.imageInspect(engine, name);
  const runtimeBase = bases.find((b) => b.role === 'runtime');
  const layers = img.imageLayers(engine, name);
  const baseLayers = img.imageLayers(engine, runtimeBase.name).length;
  const own = layers.slice(0, layers.length - baseLayers);
  const added = info.size - runtimeBase.size;
  console.log('');
  console.log(`image     ${opts.tags.join(', ')}  (${info.id.slice(0, 12)})`);
  console.log(`engine    ${engine.name}${engine.runtime ? ` (runtime ${engine.runtime})` : ''}${engine.conf ? `, CONTAINERS_CONF=${path.relative(process.cwd(), engine.conf)}` : ''}`);
  for (const b of bases) {
    const what = b.standIn ? 'LOCAL STAND-IN (make-bases.sh; no registry digest: not for production)' : b.pinned ? 'official, pinned by digest' : 'official, by tag (no registry digest known)';
    console.log(`base      ${b.role.padEnd(7)} ${b.ref}  ${mb(b.size)}  ${what} [${b.source}]`);
  }
  const v = JSON.parse(img.engineRun(engine, ['run', '--rm', '--network', 'none', name, 'version', '--json']).trim());
  console.log(`runtime   Node ${v.node}, OpenSSL ${v.openssl}`);
  console.log(`built in  ${built.seconds.toFixed(1)} s${opts.noCache ? ' (no cache)' : ''}`);
  console.log(`size      ${mb(info.size)} = base ${mb(runtimeBase.size)} + added ${mb(added)}`);
  for (const l of own.filter((x) => x.size > 0)) console.log(`  layer   ${mb(l.size).padStart(9)}  ${l.createdBy.slice(0, 110)}`);
  if (opts.archive) {
    const size = img.saveArchive(engine, name);
    console.log(`archive   ${path.relative(process.cwd(), img.ARCHIVE)}  ${mib(size)} (OCI, layers compressed)`);
    console.log('');
    console.log('push it:  skopeo copy oci-archive:.image/migration-mesh-proxy.oci.tar docker://REGISTRY/migration-mesh/proxy:TAG');
    console.log(`      or  ${engine.name} push ${name} REGISTRY/migration-mesh/proxy:TAG`);
    console.log('then set spec.gateway.image: REGISTRY/migration-mesh/proxy:TAG@sha256:DIGEST in the fleet and synth');
    console.log('  (the digest the registry gave it: skopeo inspect --format \'{{.Digest}}\' docker://REGISTRY/migration-mesh/proxy:TAG)');
  }
  return { added, size: info.size };
}

function main() {
  const opts = parseArgs(process.argv.slice(2));
  if (opts.help) {
    console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(1, 7).map((l) => l.replace(/^\/\/ ?/, '')).join('\n'));
    return;
  }
  const engine = img.findEngine();
  if (engine.skip) {
    console.error(`[image] no container engine here: ${engine.skip}.`);
    console.error('[image] On Debian as root, `node scripts/ensure-system-deps.js` installs podman, runc, debootstrap and skopeo.');
    process.exitCode = 1;
    return;
  }
  console.log(`[image] engine ${engine.name}${engine.conf ? ` with CONTAINERS_CONF=${engine.conf}${engine.ownConf ? ' (ours)' : ' (yours)'}` : ''}`);
  const bases = img.ensureBases(engine, (m) => console.log(`[image] ${m}`));
  console.log(`[image] building ${opts.tags.join(', ')} from proxy/Dockerfile`);
  const built = img.buildImage(engine, { tags: opts.tags, noCache: opts.noCache, bases });
  report(engine, opts, bases, built);
}

try {
  main();
} catch (e) {
  console.error(`[image] ${e.message}`);
  process.exitCode = 1;
}
