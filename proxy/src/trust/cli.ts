/** The `trust` subcommand (the trust container) of migration-mesh-proxy; `trust-status` is ./table-client. */
import * as k8s from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { ProxyConfig } from '../config';
import { loadConfigFile, watchConfig } from '../config-file';
import { TrustAgent } from './agent';
import { kubeConfigMaps } from './kube';

/**
 * Run the trust container until SIGTERM/SIGINT. In the pod the token comes from the projected volume
 * (in-cluster config). Shutdown is bounded: a write in flight gets `stopTimeoutMs` (2 s), then every
 * call is cut; the process then exits 0, well inside the pod's termination grace period (30 s).
 */
export async function runTrustAgent(cfg: ProxyConfig, namespace: string, log: Logger, kubeconfig?: string, configFile?: string): Promise<void> {
  if (!cfg.trust) throw new Error('the gateway config has no trust section: nothing to do');
  const kc = new k8s.KubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig); else kc.loadFromCluster();
  // the peer table the re-check holds bundles to: reloaded when the mounted ConfigMap changes
  let peers = cfg.peers.map((p) => p.cluster);
  const stopWatch = configFile ? watchConfig(configFile, 5000, () => {
    try { peers = loadConfigFile(configFile).peers.map((p) => p.cluster); } catch (e) { log.warn({ err: (e as Error).message }, 'config reload failed; keeping the peer table'); }
  }) : undefined;
  const agent = new TrustAgent({ api: kubeConfigMaps(kc, namespace), socket: cfg.trust.socket, log, resyncMs: cfg.trust.repushIntervalMs, peers: () => peers });
  await agent.start();
  log.info({ namespace, socket: cfg.trust.socket }, 'trust container running');
  await new Promise<void>((resolve) => {
    const stop = (sig: string) => {
      log.info({ sig }, 'stopping');
      stopWatch?.();
      void agent.stop().then(resolve, resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
}
