/**
 * Benchmark-only gateway launcher: one gateway process on loopback whose intercepted connections all "go
 * to" 127.0.0.1:DST (loopback stands in for SO_ORIGINAL_DST and an in-cluster address; both test hooks are
 * programmatic only, not reachable from the CLI).  usage: gw-runner CONFIG.json DST_PORT
 */
import * as fs from 'node:fs';
import { pino } from 'pino';
import { startGateway } from '../gateway';

async function main() {
  const [file, dst] = process.argv.slice(2);
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
