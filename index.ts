/**
 * The package entry (`migration-mesh`): the public API, layer by layer. The folders are the layers and
 * each imports only the ones above it in this list (test/layers.test.ts enforces it):
 *
 *   src/         pure planning: fleet schema, validation, address plan, ledger, report; no cdk8s
 *   constructs/  cdk8s constructs that translate a plan into API objects
 *   cli/         the `migration-mesh` CLI and the writer (synthesis to files, diff of two fleets)
 *
 * Helpers the layers share among themselves (formatting, waves, fragments) are not exported here.
 */

// ---- planning (src/) ----------------------------------------------------------------------------
export { FleetValidationError, formatProblem } from './src/base/errors';
export type { FleetProblem } from './src/base/errors';
export { FLEET_API_VERSION, FLEET_KIND, fleetDocumentSchema, fleetSpecSchema } from './src/fleet/schema';
export type {
  Attachment, ClusterSpec, ConfigDelivery, Datapath, FleetDocument, FleetSpec, GatewayBandwidthPair, GatewayBandwidthSpec, GitopsSpec, HarvesterSpec,
  Placement, SyncPlacement,
} from './src/fleet/schema';
export { resolveFleet } from './src/fleet/resolve';
export * from './src/gateway/fleet-pod';
export type { ResolvedCluster, ResolvedCrossCluster, ResolvedFleet, ResolvedGateway, ResolvedKubevirt } from './src/fleet/resolved';
export { budgetBetween } from './src/gateway/bandwidth-budget';
export type { BandwidthPair, ResolvedBandwidth } from './src/gateway/bandwidth-budget';
export type { KubevirtVersion } from './src/kubevirt/versions';
export { planFleet, planFleetDocument } from './src/addressing/planner';
export type {
  CapacityReport, ClusterPlan, FleetInput, FleetPlan, GatewayReplicaPlan, PeerPlan, PlanOptions, PlanResult, RoutePlan, WhereaboutsPlan,
} from './src/addressing/planner';
export { diffLedgers, emptyLedger, formatLedgerChange, parseLedger, serializeLedger } from './src/addressing/ledger';
export type { Ledger, LedgerChange, LedgerCluster } from './src/addressing/ledger';
export { ledgerPathFor, loadFleetFile, loadLedgerFile, parseFleetDocument, parseFleetText } from './src/fleet/load';
export { planReport, renderPlanTable } from './src/report/plan-report';
export type { PlanReport, PlanReportOptions, PlanRow, PlanTotals } from './src/report/plan-report';
export { renderFleetSvg } from './src/report/fleet-svg';
export { diffTrees, renderDiff } from './src/report/tree-diff';
export type { ClusterDiff, FleetDiff, TreeSnapshot } from './src/report/tree-diff';
export { checkHarvesterValue, harvesterSettingFor, harvesterValueJson } from './src/delivery/harvester';
export type { HarvesterContext, HarvesterMigrationNetworkValue, HarvesterResult } from './src/delivery/harvester';
export { kubevirtSpecFor } from './src/kubevirt/config';
export type { JsonObject } from './src/kubevirt/config';
export * from './src/forklift/schema';
export * from './src/forklift/model';
export { planForklift } from './src/forklift/plan';
export { loadMovesFile, movesPathFor, parseMovesText } from './src/forklift/moves';
export { resolveVmNetworks } from './src/vmnet/plan';
export type { VmNetworksResult } from './src/vmnet/plan';
export { checkKeepAddressMove } from './src/vmnet/moves';
export type { KeepAddressMove, KeepAddressVerdict, VmNetworksView } from './src/vmnet/moves';
export { addressesFromIpamClaim, pinAddressesPatch } from './src/vmnet/claims';
export { servedNamespaceProblems } from './src/vmnet/namespaces';
export { PIN_ROLE_NAME, pinAddressesRoleRules, MOVED_TO_LABEL } from './src/vmnet/pin-role';
export type { PinSubject } from './src/vmnet/pin-role';
export { PinAddressesRole } from './constructs/vmnet/pin-addresses-role';
export type { PinAddressesRoleProps } from './constructs/vmnet/pin-addresses-role';
export { MovedVmGuard } from './constructs/vmnet/moved-vm-guard';
export type { MovedVmGuardProps } from './constructs/vmnet/moved-vm-guard';
export { ExistingNamespaceGuard } from './constructs/vmnet/existing-namespace-guard';
export type { ExistingNamespaceGuardProps } from './constructs/vmnet/existing-namespace-guard';
export type { ExistingNamespace } from './src/vmnet/namespaces';
export type {
  ClusterVmNetwork, ClusterVmNetworks, MobileVmAddress, VmNetworkEvpn, VmNetworkIpam, VmNetworkLocalnet, VmNetworkPlan, VmNetworkReach, VmSubnetSplit,
} from './src/vmnet/resolved';
export type { VmNetworkSpec } from './src/vmnet/schema';

// ---- constructs (constructs/) -------------------------------------------------------------------
export { CrossClusterMigrationMesh } from './constructs/fleet/mesh';
export type { CrossClusterMigrationMeshProps } from './constructs/fleet/mesh';
export * from './constructs/fleet/mesh-cluster';
export * from './constructs/delivery/harvester-cluster';
export * from './constructs/delivery/harvester-migration-network';
export * from './constructs/addressing/network-attachment';
export * from './constructs/kubevirt/configuration';
export * from './constructs/addressing/migration-network';
export * from './constructs/kubevirt/sync-controller-placement';
export * from './constructs/gateway/migration-proxy';
export * from './constructs/trust/agent';
export * from './constructs/trust/agent-deployment';
export * from './constructs/gateway/deployment';
export * from './constructs/gateway/tls';
export * from './constructs/gateway/policy';
export * from './constructs/kubevirt/allow-network-policy';
export * from './constructs/kubevirt/allow-multi-network-policy';
export * from './constructs/kubevirt/migration-compression-policy';
export * from './constructs/gateway/metrics';
export * from './constructs/base/projected-volume';
export * from './constructs/gateway/pod-options';
export * from './constructs/forklift/provider';
export * from './constructs/forklift/network-map';
export * from './constructs/forklift/storage-map';
export * from './constructs/forklift/plan';
export * from './constructs/forklift/migration';
export * from './constructs/forklift/controller';
export * from './constructs/forklift/hub';
export * from './constructs/vmnet/cluster-user-defined-network';
export * from './constructs/vmnet/primary-network-namespace';
export * from './constructs/vmnet/bridge-mapping-policy';
export * from './constructs/vmnet/vtep';
export * from './constructs/vmnet/route-advertisements';
export * from './constructs/vmnet/vm-networks';

// ---- CLI and writer (cli/) ----------------------------------------------------------------------
export { synthesizeFleet } from './cli/synthesize-fleet';
export type { NotAPromise, SynthOptions, SynthResult } from './cli/synthesize-fleet';
export { FLEET_SVG, renderFleetDirectory, synthesizeFleetToDirectory, writeFleetDirectories } from './cli/fleet-directory';
export type { FleetDirectoryOptions, FleetDirectoryResult, PendingFleetDirectory } from './cli/fleet-directory';
export type { WriteHooks } from './cli/write-tree';
export { MANIFEST_FILE, OutputWriteError } from './cli/write-tree';
export type { TreeWriteReport } from './cli/write-tree';
export { diffFleets } from './cli/diff-fleets';
export type { DiffFleetsOptions, DiffFleetsResult } from './cli/diff-fleets';
export { main } from './cli/cli';
