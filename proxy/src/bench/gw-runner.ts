/**
 * Benchmark-only gateway launcher: one gateway process on loopback whose intercepted connections all "go
 * to" 127.0.0.1:DST (loopback stands in for SO_ORIGINAL_DST and an in-cluster address; both test hooks are
 * programmatic only, not reachable from the CLI).  usage: gw-runner CONFIG.json DST_PORT [RELAY]
 * RELAY (bench only): `thread` relays spliced tunnels in a thread per tunnel (the relay before the event pool) for
 * the concurrency bench's before/after rows; `pool:N` the event pool with N threads; omitted: the gateway's default.
 */
import * as fs from 'node:fs';
import { pino } from 'pino';
import { startGateway } from '../gateway';
import { loadNative } from '../native';

async function main() {
  const [file, dst, relay] = process.argv.slice(2);
  if (relay) {
    const [mode, threads] = relay.split(':');
    if (mode !== 'pool' && mode !== 'thread') throw new Error(`gw-runner: RELAY is thread or pool[:N], not ${relay}`);
    loadNative().relayMode(mode, Number(threads ?? 0));
  }
  const cfg = JSON.parse(fs.readFileSync(file, 'utf8'));
  const gw = await startGateway(cfg, {
    logger: pino({ level: process.env.LOG_LEVEL ?? 'warn' }),
    originalDestination: () => ({ host: '127.0.0.1', port: Number(dst) }),
    unsafeAllowLoopbackDestinations: true,
  });
  process.stdout.write('ready\n');
  process.on('SIGTERM', () => { gw.close().finally(() => process.exit(0)); });
}
main().catch((e) => { process.stderr.write(String(e) + '\n'); process.exit(1); });
