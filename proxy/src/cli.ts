#!/usr/bin/env node
/** migration-mesh-proxy: the gateway binary. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadConfigFile } from './config-file';
// Each command loads only its own modules (below, where it runs): `setup-rules` runs as an init container on
// every gateway start, and loading the gateway (pino, prom-client) and the trust agent's Kubernetes client
// with it took 1.5 s of CPU instead of 0.24 s; the runtime (`run`), which accepts connections from the shared
// network, never loads the Kubernetes client at all. test/ops.test.ts checks what setup-rules and run load.

const USAGE = `usage: migration-mesh-proxy <command> [options]

commands:
  run --config FILE            run the gateway (FILE: JSON or YAML matching the gateway config schema;
                               reloaded on change; SIGTERM drains then exits 0)
  setup-rules --config FILE [--dry-run]
                               install the nat REDIRECT rules (chain MIGRATION_MESH, idempotent) that send
                               TCP for every peer CIDR to the intercept port; needs NET_ADMIN
  check-config --config FILE   validate FILE and print the effective config (defaults filled in)
  trust --config FILE --namespace NS [--kubeconfig FILE]
                               the trust container: watch kubevirt-ca in NS, hand the own CA to the
                               runtime over the config's trust.socket, write peers' CAs into
                               kubevirt-external-ca (in-cluster credentials unless --kubeconfig)
  trust-status [--admin URL]   print the runtime's trust table (default http://127.0.0.1:15090)
  version                      print the version
`;

function arg(argv: string[], name: string): string | undefined {
  const i = argv.indexOf(name);
  if (i >= 0) return argv[i + 1];
  const eq = argv.find((a) => a.startsWith(`${name}=`));
  return eq ? eq.slice(name.length + 1) : undefined;
}

function die(msg: string, code = 2): never {
  process.stderr.write(`migration-mesh-proxy: ${msg}\n`);
  process.exit(code);
}

async function main(argv: string[]): Promise<void> {
  const cmd = argv[0];
  if (!cmd || cmd === '-h' || cmd === '--help' || cmd === 'help') { process.stdout.write(USAGE); return; }
  if (cmd === 'version' || cmd === '--version') {
    const pkg = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8'));
    process.stdout.write(`${pkg.version}\n`);
    return;
  }
  if (cmd === 'trust-status') {
    const { fetchTrustTable, formatTrustTable } = await import('./trust/table-client');
    const t = await fetchTrustTable(arg(argv, '--admin') ?? 'http://127.0.0.1:15090').catch((e: Error) => die(e.message, 1));
    process.stdout.write(argv.includes('--json') ? `${JSON.stringify(t, null, 2)}\n` : formatTrustTable(t));
    return;
  }
  const file = arg(argv, '--config') ?? process.env.MM_PROXY_CONFIG;
  if (!file) die(`${cmd}: --config FILE is required\n\n${USAGE}`);
  let cfg;
  try { cfg = loadConfigFile(file); } catch (e) { die((e as Error).message); }

  if (cmd === 'check-config') { process.stdout.write(JSON.stringify(cfg, null, 2) + '\n'); return; }
  if (cmd === 'setup-rules') {
    const { applyRules, planRules, renderRules } = await import('./rules');
    const { settleAddresses } = await import('./settle-addresses');
    const plan = planRules(cfg);
    if (argv.includes('--dry-run')) { process.stdout.write(renderRules(plan)); return; }
    const dad = await settleAddresses(); // IPv6 DAD: runtime and keepalived start on settled addresses
    if (dad.dadFailed.length || dad.tentative.length) die(`IPv6 addresses not usable: ${JSON.stringify(dad)}`, 1);
    try { applyRules(plan); } catch (e) { die((e as Error).message, 1); }
    process.stdout.write(`installed ${plan.filter((c) => c.args.includes('REDIRECT')).length} REDIRECT rule(s) in chain MIGRATION_MESH\n`);
    return;
  }
  if (cmd === 'trust') {
    const ns = arg(argv, '--namespace') ?? process.env.MM_KUBEVIRT_NAMESPACE;
    if (!ns) die('trust: --namespace NS (the KubeVirt namespace) is required');
    const { pino } = await import('pino');
    const { runTrustAgent } = await import('./trust/cli');
    const tlog = pino({ level: arg(argv, '--log-level') ?? process.env.LOG_LEVEL ?? 'info', base: { cluster: cfg.cluster, container: 'trust' } });
    await runTrustAgent(cfg, ns, tlog, arg(argv, '--kubeconfig'), file).catch((e: Error) => die(e.message, 1));
    process.exit(0); // stopped on a signal: exit now, whatever the API left open

  }
  if (cmd !== 'run') die(`unknown command '${cmd}'\n\n${USAGE}`);

  const { tryLoadNative, nativeLoadError } = await import('./native');
  const { startGateway } = await import('./gateway');
  const { pino } = await import('pino');
  // REDIRECT interception needs SO_ORIGINAL_DST from the addon: refuse to start half-working
  if (!tryLoadNative() && process.env.MM_PROXY_ALLOW_NO_ADDON !== '1') {
    die(`${nativeLoadError()!.message}\n(set MM_PROXY_ALLOW_NO_ADDON=1 to run without it: TPROXY-only interception, stream data path)`, 1);
  }
  const log = pino({ level: arg(argv, '--log-level') ?? process.env.LOG_LEVEL ?? 'info', base: { cluster: cfg.cluster } });
  let gw;
  try {
    gw = await startGateway(cfg, { logger: log, configPath: file });
  } catch (e) { die((e as Error).message, 1); }
  let stopping = false;
  const onSignal = (sig: string) => {
    if (stopping) { log.warn({ sig }, 'second signal: closing now'); gw.close().finally(() => process.exit(0)); return; }
    stopping = true;
    log.info({ sig }, 'draining');
    gw.drain().then(() => process.exit(0), (e) => { log.error({ err: String(e) }, 'drain failed'); process.exit(1); });
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
}

main(process.argv.slice(2)).catch((e) => die(String(e?.stack ?? e), 1));
