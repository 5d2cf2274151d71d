/**
 * The GitOps engines' own prune guards (issue 50 item 2), on every object VMs may be running on: the
 * ClusterUserDefinedNetwork, the localnet NodeNetworkConfigurationPolicy and the four admission objects
 * that guard a moved VM's address and the served namespaces. A synth that drops one (a network removed,
 * `served: false`) does not make Argo CD or Flux delete it from the cluster: deleting it is the
 * operator's step, once every VM is off it. Written always, not only with `spec.gitops`: the output
 * directory may be applied by an engine the fleet does not configure. Pure, no cdk8s import.
 */

/** Argo CD: `Prune=false` keeps it when it leaves Git, `Delete=false` when its Application is deleted
 * (https://argo-cd.readthedocs.io/en/stable/user-guide/sync-options/). */
const ARGOCD_SYNC_OPTIONS = { key: 'argocd.argoproj.io/sync-options', value: 'Prune=false,Delete=false' } as const;

/** Flux kustomize-controller: `disabled` keeps it when it leaves the Kustomization
 * (https://fluxcd.io/flux/components/kustomize/kustomizations/#prune). */
const FLUX_PRUNE = { key: 'kustomize.toolkit.fluxcd.io/prune', value: 'disabled' } as const;

/** The annotations, for `metadata.annotations`. */
export const vmPruneGuardAnnotations = (): Record<string, string> => ({
  [ARGOCD_SYNC_OPTIONS.key]: ARGOCD_SYNC_OPTIONS.value, [FLUX_PRUNE.key]: FLUX_PRUNE.value,
});
