/**
 * What watch-moves and cleanup-move share: the fleet's planned moves (from the generated Plans), its
 * hub, its output directory, and a KubeConfig per cluster (the context named as the cluster, or as --context-map says).
 */
import * as path from 'path';
import * as k8s from '@kubernetes/client-node';
import { readFleetFile } from '../src/fleet/load';
import { loadKubeconfig } from './kubeconfig';
import { plannedMoves } from './status-moves';

export interface MoveClientOptions {
  readonly fleetFile: string;
  /** @default 'dist' */
  readonly outDir?: string;
  /** Cluster name -> kubeconfig context. @default - the context named as the cluster */
  readonly contexts?: Readonly<Record<string, string>>;
  /** @default - $KUBECONFIG or ~/.kube/config */
  readonly kubeconfig?: string;
}

export type PlannedMove = ReturnType<typeof plannedMoves>[number];

/** The fleet's moves, its hub cluster and a KubeConfig for a cluster (an error naming a missing context). */
export function moveClients(o: MoveClientOptions): { moves: PlannedMove[]; hub: string; fleetDir: string; kcOf: (cluster: string) => k8s.KubeConfig } {
  const doc = readFleetFile(o.fleetFile);
  const hub = doc.spec.forklift?.hub.cluster;
  if (!hub) throw new Error(`${o.fleetFile}: the fleet has no spec.forklift.hub: no moves to watch`);
  const fleetDir = path.join(o.outDir ?? 'dist', doc.metadata.name);
  const moves = plannedMoves(fleetDir);
  const base = loadKubeconfig(o.kubeconfig);
  const kcOf = (cluster: string): k8s.KubeConfig => {
    const context = o.contexts?.[cluster] ?? cluster;
    if (!base.getContextObject(context)) throw new Error(`no context '${context}' for cluster ${cluster} in the kubeconfig`);
    const kc = new k8s.KubeConfig();
    kc.loadFromString(base.exportConfig());
    kc.setCurrentContext(context);
    return kc;
  };
  return { moves, hub, fleetDir, kcOf };
}
