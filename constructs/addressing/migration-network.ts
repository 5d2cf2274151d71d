import { Construct } from 'constructs';
import { InvalidPropsError } from '../../src/base/errors';
import { Attachment } from '../../src/fleet/schema';
import { whereaboutsIpam } from '../../src/addressing/cni';
import { WhereaboutsPlan } from '../../src/addressing/planner';
import { FEATURE_GATE_DLM, featureGatesFragment } from '../../src/kubevirt/gates';
import { mergeSpec } from '../../src/kubevirt/config';
import { NETWORK_LABEL } from '../../src/base/names';
import { KubevirtConfiguration } from '../kubevirt/configuration';
import { NetworkAttachment } from './network-attachment';

/**
 * Properties for `MigrationNetwork`.
 */
export interface MigrationNetworkProps {
  /** NAD name; KubeVirt attaches it as `migration0` to virt-handler and sync-controller pods. */
  readonly name: string;
  /** The KubeVirt install namespace: KubeVirt references the NAD by bare name, so it must live there. */
  readonly namespace: string;
  /** How pods attach to the migration network. */
  readonly attachment: Attachment;
  /**
   * Whereabouts IPAM: range, reserved addresses (`exclude`, e.g. the gateways' static addresses) and,
   * in gateway mode, `routes` to the other clusters' CIDRs via the local gateway.
   */
  readonly ipam: WhereaboutsPlan;
  /**
   * Where to set `spec.configuration.migrations.network` (and the feature gates below).
   *
   * @default - only the NAD is emitted
   */
  readonly kubevirt?: KubevirtConfiguration;
  /**
   * The feature gates the KubeVirt configuration lists with the network. `MeshClusterChart` passes every
   * gate of the cluster, decided in one place (`featureGatesFor`, src/kubevirt/gates.ts).
   *
   * @default ['DecentralizedLiveMigration']
   */
  readonly featureGates?: readonly string[];
}

/**
 * The migration network: the NAD KubeVirt names in `migrations.network` (whereabouts IPAM, because
 * KubeVirt's fixed `<nad>@migration0` annotation leaves no way to give pods per-pod static addresses),
 * and the KubeVirt setting that selects it.
 */
export class MigrationNetwork extends Construct {
  public readonly nad: NetworkAttachment;

  constructor(scope: Construct, id: string, props: MigrationNetworkProps) {
    super(scope, id);
    if (!props.ipam.range) {
      throw new InvalidPropsError({ code: 'prop-invalid', path: 'ipam.range', message: `migration network ${props.name}: ipam.range is empty`, fix: 'plan the fleet first' });
    }
    this.nad = new NetworkAttachment(this, 'Nad', {
      name: props.name,
      namespace: props.namespace,
      attachment: props.attachment,
      ipam: whereaboutsIpam(props.ipam),
      labels: { [NETWORK_LABEL]: 'migration' },
    });
    props.kubevirt?.addSpec(mergeSpec(
      featureGatesFragment(props.featureGates ?? [FEATURE_GATE_DLM]),
      { configuration: { migrations: { network: props.name } } },
    ));
  }
}
