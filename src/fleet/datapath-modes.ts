/**
 * The datapath modes (`datapath`: how a cluster's migrations cross to other clusters), as one registry: each
 * mode's name (the fleet schema's enums are derived from the keys), what planning and the constructs read of
 * it, and its docs. Adding a mode is adding one entry here; every property is required, so the entry
 * decides each, and the compiler then names the places that must handle the mode by name (each
 * `Record<Datapath, ...>` and exhaustive `switch`: the address counts, the plan report). No code compares
 * a mode's name: it reads a property of the mode's entry. docs/dev/architecture.md shows the steps and the
 * compiler's errors. Pure, no import (planning, the KubeVirt gate table and the constructs all read it).
 */

/** One datapath mode. */
export interface DatapathModeSpec {
  /** What the mode is, in one sentence (the docs' words). */
  readonly summary: string;
  /**
   * The cluster runs gateway pods (and their VIP): its migration network is its own CIDR, routed to the
   * other gateway clusters through the gateways; they hold the shared network's addresses.
   */
  readonly gateways: boolean;
  /**
   * The cluster's migration network is its slice of the site's shared network (virt-handler and the sync
   * controller migrate on it directly): no CIDR of its own is carved or declared.
   */
  readonly sharedMigrationNetwork: boolean;
  /**
   * KubeVirt's own cross-cluster proxy (kubevirt/kubevirt PR #17922): `decentralizedLiveMigrationDatapath:
   * Proxy`, the `CrossClusterMigrationProxy` gate, the sync controller on a cross-cluster NAD and
   * `spec.synchronizationPlacement`; refused on a KubeVirt without the fields.
   */
  readonly kubevirtProxy: boolean;
}

/** The registry. The order is the schema enums' (and their error messages'). */
export const DATAPATH_MODES = {
  gateway: {
    summary: 'gateway pods carry each migration between the clusters\' own migration networks (works with every released KubeVirt)',
    gateways: true,
    sharedMigrationNetwork: false,
    kubevirtProxy: false,
  },
  native: {
    summary: 'KubeVirt\'s own cross-cluster proxy (PR #17922): the sync controllers meet on the shared network, the migration stays on the cluster\'s own network',
    gateways: false,
    sharedMigrationNetwork: false,
    kubevirtProxy: true,
  },
  direct: {
    summary: 'the clusters\' migration networks are slices of one shared L2 network: virt-handlers migrate to each other directly',
    gateways: false,
    sharedMigrationNetwork: true,
    kubevirtProxy: false,
  },
} as const satisfies Record<string, DatapathModeSpec>;

/** A datapath mode's name: a key of the registry. */
export type Datapath = keyof typeof DATAPATH_MODES;

/** Every mode's name, in the registry's order (the fleet schema's `z.enum`). */
export const DATAPATH_NAMES = Object.keys(DATAPATH_MODES) as [Datapath, ...Datapath[]];

/** The mode of a cluster that declares none. */
export const DEFAULT_DATAPATH: Datapath = 'gateway';

/** A mode's entry, typed as the interface (each property reads as `boolean`, not one entry's literal). */
export const datapathMode = (name: Datapath): DatapathModeSpec => DATAPATH_MODES[name];
