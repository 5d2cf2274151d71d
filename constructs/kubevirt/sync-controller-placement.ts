import { Construct } from 'constructs';
import { Datapath, SyncPlacement } from '../../src/fleet/schema';
import { syncPlacementFragment } from '../../src/kubevirt/config';
import { KubevirtConfiguration } from './configuration';
import { DEFAULT_DATAPATH } from '../../src/fleet/datapath-modes';

/**
 * Properties for `SyncControllerPlacement`.
 */
export interface SyncControllerPlacementProps {
  /** The cluster's KubeVirt configuration to write placement into. */
  readonly kubevirt: KubevirtConfiguration;
  /**
   * `controlPlane` (KubeVirt's default: nothing is emitted), `workers` (required affinity away from
   * control-plane nodes), or an explicit `{nodeSelector, affinity, tolerations}`.
   *
   * @default controlPlane
   */
  readonly placement?: SyncPlacement;
  /**
   * Sync-controller replicas: a customizeComponents patch on `virt-synchronization-controller` only
   * (`spec.infra.replicas` would scale every infra component and stop virt-api's auto-scaling).
   *
   * @default 2
   */
  readonly replicas?: number;
  /**
   * Datapath mode; `native` also writes `spec.synchronizationPlacement` (kubevirt/kubevirt PR #17922).
   *
   * @default gateway
   */
  readonly datapath?: Datapath;
}

/**
 * Where the virt-synchronization-controller runs. Today's mechanism: `spec.infra.nodePlacement` (set,
 * even to `{}`, so virt-operator stops injecting its control-plane affinity after the patches) plus a
 * strategic `customizeComponents` patch that pins only the sync controller. A patch alone cannot move
 * it: virt-operator injects the placement after applying patches. In native mode the proposed
 * `spec.synchronizationPlacement.nodePlacement` is written as well.
 */
export class SyncControllerPlacement extends Construct {
  constructor(scope: Construct, id: string, props: SyncControllerPlacementProps) {
    super(scope, id);
    props.kubevirt.addSpec(syncPlacementFragment({
      syncPlacement: props.placement ?? 'controlPlane',
      syncReplicas: props.replicas ?? 2,
      datapath: props.datapath ?? DEFAULT_DATAPATH,
    }));
  }
}
